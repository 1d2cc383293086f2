"""gptel chat files saved as Markdown: bounds in the trailing local-variables block (see ``_gptel``)."""

from __future__ import annotations

from cairn.protocol.transcript import Session

from . import _gptel
from ._format import Format

NAME = "gptel-md"


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse a Markdown gptel chat into at most one session of completed turns."""
    return _gptel.parse(text, flavour="md", fmt=NAME)


FORMAT = Format(name=NAME, parse=parse, sniff_tail=lambda tail: _gptel.MD_VARIABLE.search(tail) is not None)
