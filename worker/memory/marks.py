"""The staleness marks of the last verification (``.cairn/state/memory/verify.json``), read cheaply.

Beside them, the stale lines it found in the instruction files agents load
(``instruction-lines.json``): the editor marks them on the file's lines.

Written by :mod:`worker.memory.verify`; read here without the topic model
(no YAML) so that the status counts start without it. Private state: a
mark is an observation, never a change to a topic.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from cairn.worker.memory.store import M

MARKS = "verify.json"  # in .cairn/state/memory
#: ``Proposal.premise`` of a proposal made because a verification marked its topic stale; a verification's
#: own proposals add ``:KEY`` (:func:`premise_of`), the key its mark records while that proposal is the one
#: answering the topic
STALE_PREMISE = "stale-citations"
#: ``Proposal.premise`` (with ``:KEY``) of a "revalidate or retire" proposal: the topic is due for revalidation
AGED_PREMISE = "unconfirmed"


def premise_of(kind: str, fingerprint: str) -> str:
    """The premise of a verification's proposal of ``kind`` (:data:`STALE_PREMISE`, :data:`AGED_PREMISE`) whose
    fingerprint is ``fingerprint``; its key is what the topic's mark records as ``proposal``."""
    return f"{kind}:{proposal_key(fingerprint)}"


def proposal_key(fingerprint: str) -> str:
    """What a mark records (``proposal``) of the proposal that answers its topic as the verification found it."""
    return fingerprint[:16]


def load_marks(workspace: str) -> dict[str, Any]:
    """The marks of the last verification, by topic file (workspace-relative); {} when none or unreadable."""
    try:
        with open(os.path.join(workspace, M, MARKS), "rb") as fh:
            data = json.loads(fh.read(4 << 20))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


#: in .cairn/state/memory: the instruction files' stale lines the last verification found (:func:`stale_lines`)
LINES = "instruction-lines.json"


def line_key(text: str) -> str:
    """What identifies a line's text in :data:`LINES` (the line itself is the user's: only its hash is kept)."""
    return hashlib.sha256(text.rstrip("\r\n").encode("utf-8", "surrogatepass")).hexdigest()[:16]


def stale_lines(workspace: str) -> dict[str, list[dict[str, Any]]]:
    """The instruction files the last verification read, each with its stale lines ``{line, key, why}``
    (``line`` 1-based, ``key`` :func:`line_key` of its text then, ``why`` the reasons); {} when none or
    unreadable. A file read with no stale line maps to []: an editor clears what it showed."""
    try:
        with open(os.path.join(workspace, M, LINES), "rb") as fh:
            data = json.loads(fh.read(4 << 20))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for rel, rows in files.items():
        if not isinstance(rows, list):
            continue
        out[str(rel)] = [{"line": r["line"], "key": str(r["key"]), "why": [str(w) for w in r["why"]]}
                         for r in rows if isinstance(r, dict) and isinstance(r.get("line"), int)
                         and r["line"] > 0 and isinstance(r.get("why"), list) and "key" in r]
    return out


def mark_of(marks: dict[str, Any], file: str) -> dict[str, Any]:
    mark = marks.get(file)
    return mark if isinstance(mark, dict) else {}


def stale_count(workspace: str) -> int:
    """Topic files the last verification marked stale (for the status counts)."""
    return sum(1 for m in load_marks(workspace).values() if isinstance(m, dict) and m.get("stale"))


def premise_gone(workspace: str, premise: str | None, target: str) -> str:
    """Why a proposal's premise no longer holds ("" while it holds, or cannot be judged).

    A proposal made because ``target`` was marked stale answers that mark; once a later verification
    found the topic true again (the code was switched back, a branch checked out again), accepting it
    would rewrite or retire a memory that holds. One made with a key (:func:`premise_of`) answers the topic
    only while the topic's mark names that key as its ``proposal``: a later verification that found it
    stale in another way (a file gone, then moved) or no longer due for revalidation made another one, or
    none, and this one is no longer live. A topic with no mark (never verified, the marks file gone) is not
    judged: only a verification says the premise is gone.
    """
    kind, _, key = (premise or "").partition(":")
    if kind not in (STALE_PREMISE, AGED_PREMISE) or (kind == AGED_PREMISE and not key):
        return ""
    mark = mark_of(load_marks(workspace), target)
    if "checked" not in mark:
        return ""
    if kind == STALE_PREMISE and not mark.get("stale"):
        return f"what {target} cites holds again (verified {mark.get('verified') or mark['checked']})"
    if not key or mark.get("proposal") == key:
        return ""
    if kind == AGED_PREMISE and not mark.get("stale") and not mark.get("proposal"):
        return f"{target} is no longer due for revalidation (checked {mark['checked']})"
    if "proposal" not in mark:
        return ""  # a mark written before marks named their proposal: not judged
    return f"a later verification of {target} (checked {mark['checked']}) made another proposal for it"
