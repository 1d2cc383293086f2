"""Roo Code task histories (``.../globalStorage/rooveterinaryinc.roo-cline/tasks/<id>/api_conversation_history.json``).

Roo Code forked Cline and keeps its file shape (see :mod:`._cline`); it adds a
``ts`` per message, ``<user_message>`` around what the user typed, a
``<slug>`` mode line in the injected environment details, reasoning items
(``type: "reasoning"``) and condense summaries (``isSummary``), which are left out.
"""

from __future__ import annotations

from cairn.protocol.transcript import Session

from ._cline import parse_task

FORMAT = "roo-code"


def parse(text: str, *, source_name: str) -> list[Session]:
    return parse_task(text, FORMAT)
