"""Read-only views of the journal: public digests and capture jobs.

These are observations for people and editors, never authority. The public
digest index is cached per process and refreshed only when the journal
directory's attributes change: public entries are published by exclusive
link and removed by expiry, both of which change the directory, so a warm
listing reads no record at all. (An entry edited in place by hand keeps the
directory unchanged; ``cairn journal --fresh`` rereads everything.)
"""

from __future__ import annotations

import os
from typing import Any

from cairn.protocol import codec
from cairn.protocol.errors import CairnError
from cairn.protocol.journal import PublicDigest, Retired, by_session
from cairn.protocol.worker import WorkerRequest
from cairn.worker.journal.batches import capture_states
from cairn.worker.journal.store import CAPTURES, PUBLIC, Journal

_INDEX: dict[str, tuple[tuple[int, int, int, int], list[PublicDigest], list[str]]] = {}


def _dir_key(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink)


def public_digests(workspace: str, *, fresh: bool = False) -> tuple[list[PublicDigest], list[str]]:
    """All valid public digests, oldest session first (:func:`by_session`), and the names of invalid entries.

    An entry of an older version reads as the newest (:mod:`protocol.codec`):
    one written before session times were kept has none, and dates by ``created``.
    """
    path = os.path.join(workspace, PUBLIC)
    key = _dir_key(path)
    if key is None:
        return [], []
    cached = _INDEX.get(path)
    if cached is not None and cached[0] == key and not fresh:
        return cached[1], cached[2]
    digests: list[PublicDigest] = []
    bad: list[str] = []
    with Journal(workspace) as j:
        names = [n for n in j.names(PUBLIC) if n.endswith(".json")]
        raws = j.read_many(f"{PUBLIC}/{n}" for n in names)
    for n in names:
        raw = raws.get(f"{PUBLIC}/{n}")
        if raw is None:
            continue
        try:
            digests.append(codec.decode(raw, PublicDigest, where=n))
        except CairnError as exc:
            bad.append(f"{n}: {exc.code}")
    digests = by_session(digests)
    # a second observation: if the directory changed during the read, do not cache
    if _dir_key(path) == key:
        _INDEX[path] = (key, digests, bad)
    return digests, bad


def capture_rows(workspace: str) -> list[dict[str, Any]]:
    """One row per capture: open, pending, running (a live digest claim), retry-waiting,
    exhausted, or retired as published / all-none / discarded."""
    rows = []
    with Journal(workspace) as j:
        states = capture_states(j)
        retired = j.read_many(f"{CAPTURES}/{s.cid}/retired" for s in states if s.retired)
        for s in states:
            state = s.state
            if s.retired:
                raw = retired.get(f"{CAPTURES}/{s.cid}/retired")
                state = codec.decode(raw, Retired).reason if raw else "retired"
            elif s.sealed:
                newest = j.claims.newest(f"digest/{s.cid}")
                if newest.claim is not None and newest.outcome is None and newest.now < newest.claim.deadline:
                    state = "running"
            rows.append({"capture": s.cid, "state": state, "turns": s.turns,
                         "attempts": s.failures - 3 * s.retries, "sealed_at": s.sealed_at or None})
    return rows


def digest_json(d: PublicDigest) -> dict[str, Any]:
    obj = codec.to_obj(d)
    obj.pop("record", None)
    obj.pop("v", None)
    return obj


def job_journal(req: WorkerRequest) -> dict[str, Any]:
    digests, bad = public_digests(req.workspace, fresh=bool(req.args.get("fresh")))
    return {"digests": [digest_json(d) for d in digests], "invalid": bad}


def job_jobs(req: WorkerRequest) -> dict[str, Any]:
    return {"captures": capture_rows(req.workspace)}
