"""gptel chat files saved as Org: bounds in the top ``:PROPERTIES:`` drawer (see ``_gptel``)."""

from __future__ import annotations

from cairn.protocol.transcript import Session

from . import _gptel

FORMAT = "gptel-org"


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse an Org gptel chat into at most one session of completed turns."""
    return _gptel.parse(text, flavour="org", fmt=FORMAT)
