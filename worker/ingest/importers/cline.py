"""Cline task histories (``.../globalStorage/saoudrizwan.claude-dev/tasks/<id>/api_conversation_history.json``
and Cline 4's ``~/.cline/data/sessions/<id>/<id>.messages.json``); see :mod:`._cline`."""

from __future__ import annotations

from cairn.protocol.transcript import Session

from ._cline import parse_task

FORMAT = "cline"


def parse(text: str, *, source_name: str) -> list[Session]:
    return parse_task(text, FORMAT)
