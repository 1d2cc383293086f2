"""Cline task histories (``.../globalStorage/saoudrizwan.claude-dev/tasks/<id>/api_conversation_history.json``
and Cline 4's ``~/.cline/data/sessions/<id>/<id>.messages.json``); see :mod:`._cline`."""

from __future__ import annotations

from cairn.protocol.transcript import Session

from ._cline import ROO_MARKERS, TASK_ARRAY, is_session_document, parse_task
from ._format import Format, PathHint

NAME = "cline"


def parse(text: str, *, source_name: str) -> list[Session]:
    return parse_task(text, NAME)


FORMAT = Format(
    name=NAME, parse=parse, stores="home",
    sniff_array=lambda head: TASK_ARRAY.match(head) is not None and ROO_MARKERS.search(head) is None,
    sniff_json=is_session_document,
    # Roo Code writes the same shape: the extension's folder in the path decides
    path_hint=PathHint(folders=("saoudrizwan.claude-dev",), over=("roo-code",)),
)
