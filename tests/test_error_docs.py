"""docs/errors.md lists every fixed error code, and nothing that is not one."""

from __future__ import annotations

import re

from cairn.protocol.errors import ErrorCode

from tests.support import REPO


def test_every_error_code_is_documented_once() -> None:
    text = (REPO / "docs/errors.md").read_text()
    rows = re.findall(r"^\| `(E_[A-Z_]+)` \|", text, flags=re.M)
    assert sorted(rows) == sorted(str(c) for c in ErrorCode), "docs/errors.md and protocol/errors.py differ"
    assert len(rows) == len(set(rows))
