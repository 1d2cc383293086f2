"""The staleness marks of the last verification (``.cairn/state/memory/verify.json``), read cheaply.

Written by :mod:`worker.memory.verify`; read here without the topic model
(no YAML) so that the status counts start without it. Private state: a
mark is an observation, never a change to a topic.
"""

from __future__ import annotations

import json
import os
from typing import Any

from cairn.worker.memory.store import M

MARKS = "verify.json"  # in .cairn/state/memory


def load_marks(workspace: str) -> dict[str, Any]:
    """The marks of the last verification, by topic file (workspace-relative); {} when none or unreadable."""
    try:
        with open(os.path.join(workspace, M, MARKS), "rb") as fh:
            data = json.loads(fh.read(4 << 20))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def mark_of(marks: dict[str, Any], file: str) -> dict[str, Any]:
    mark = marks.get(file)
    return mark if isinstance(mark, dict) else {}


def stale_count(workspace: str) -> int:
    """Topic files the last verification marked stale (for the status counts)."""
    return sum(1 for m in load_marks(workspace).values() if isinstance(m, dict) and m.get("stale"))
