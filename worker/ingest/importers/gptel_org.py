"""gptel chat files saved as Org: bounds in the top ``:PROPERTIES:`` drawer (see ``_gptel``)."""

from __future__ import annotations

from cairn.protocol.transcript import Session

from . import _gptel
from ._format import Format

NAME = "gptel-org"


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse an Org gptel chat into at most one session of completed turns."""
    return _gptel.parse(text, flavour="org", fmt=NAME)


FORMAT = Format(name=NAME, parse=parse, sniff_mark=lambda head, name: _gptel.ORG_PROPERTY.search(head) is not None)
