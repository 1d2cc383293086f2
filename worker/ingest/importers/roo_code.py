"""Roo Code task histories (``.../globalStorage/rooveterinaryinc.roo-cline/tasks/<id>/api_conversation_history.json``).

Roo Code forked Cline and keeps its file shape (see :mod:`._cline`); it adds a
``ts`` per message, ``<user_message>`` around what the user typed, a
``<slug>`` mode line in the injected environment details, reasoning items
(``type: "reasoning"``) and condense summaries (``isSummary``), which are left out.
"""

from __future__ import annotations

from cairn.protocol.transcript import Session

from ._cline import ROO_MARKERS, TASK_ARRAY, parse_task
from ._format import Format, PathHint

NAME = "roo-code"


def parse(text: str, *, source_name: str) -> list[Session]:
    return parse_task(text, NAME)


FORMAT = Format(
    name=NAME, parse=parse, stores="home",
    sniff_array=lambda head: TASK_ARRAY.match(head) is not None and ROO_MARKERS.search(head) is not None,
    # Cline writes the same shape: the extension's folder in the path decides
    path_hint=PathHint(folders=("rooveterinaryinc.roo-cline",), over=("cline",)),
)
