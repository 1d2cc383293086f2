"""``cairn/evidence``: a proposal's evidence for its user's own editor: digest notes and the cited turns' text.

The public journal holds each digest's notes and turn ids; the turns' text is
private evidence (``.cairn/state``, already redacted at capture). This
request gives the editor both, for one proposal: every digest it cites, with
its notes, and the user and assistant text of each turn those digests
cover, so the person deciding can read why it was proposed. The answer goes
to the editor only: nothing of it is logged or written anywhere.

Bounds: at most :data:`TURN_BYTES` of text per turn (the user's and the
assistant's share it; a cut ends with :data:`CUT_MARK` and the bytes left
out), at most :data:`MAX_TURNS` turns per answer (``more`` counts the ones
left out). Control characters other than newline and tab are removed from
the text and from every other string read from stored data (digest, turn
and proposal ids, titles, dates), so the answer can reach a terminal or a
buffer as it is. A turn that cannot be read (cleaned up after retention,
never captured, its record invalid) comes back with ``missing`` (a fixed
code), never as a failed request.

Imports inside functions: the journal's and memory's readers load with the
first request, as in ``features/status.py``, so the server starts without
them (measured there with ``python -X importtime`` over ``build_server()``).
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import Settings

TURN_BYTES = 20 * 1024  # UTF-8 bytes of text per turn, user and assistant together
MAX_TURNS = 40  # turns per answer
CUT_MARK = "\n[… {n} more bytes not shown]"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """``text`` without control characters (newlines and tabs kept; CR LF as LF)."""
    return _CONTROL.sub("", text.replace("\r\n", "\n"))


def _stored(value: object) -> object:
    """A value read from stored data as the editor gets it: a string :func:`clean`, anything else as it is."""
    return clean(value) if isinstance(value, str) else value


def _cut(text: str, limit: int) -> str:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")  # never half a character
    return kept + CUT_MARK.format(n=len(data) - len(kept.encode("utf-8", "surrogatepass")))


def bounded(user: str, assistant: str, limit: int = TURN_BYTES) -> tuple[str, str, bool]:
    """(user, assistant, cut): both cleaned, together within ``limit`` bytes (each gets at least half)."""
    user, assistant = clean(user), clean(assistant)
    ub, ab = len(user.encode("utf-8", "surrogatepass")), len(assistant.encode("utf-8", "surrogatepass"))
    if ub + ab <= limit:
        return user, assistant, False
    u_limit = max(limit // 2, limit - ab)
    a_limit = limit - min(ub, u_limit)
    return _cut(user, u_limit), _cut(assistant, a_limit), True


def _turn(j: Any, session_id: str, turn_id: str) -> dict[str, Any]:
    from cairn.worker.journal.batches import find_turn, turn_evidence  # server start: module docstring

    out: dict[str, Any] = {"id": clean(turn_id)}
    try:
        found = find_turn(j, session_id, turn_id)
        if found is None or not found[1]:
            out["missing"] = str(ErrorCode.BUNDLE_MISSING)  # never captured, or cleaned up after retention
            return out
        ev = turn_evidence(j, found[1], turn_id)
    except CairnError as exc:
        out["missing"] = str(exc.code)
        return out
    if ev.oversized:  # the reply left out whole; the user's words kept when they alone fit
        user, _, _ = bounded(ev.user, "")
        out.update(user=user, assistant="", cut=True, oversized=True, completedAt=_stored(ev.completed_at))
        return out
    user, assistant, cut = bounded(ev.user, ev.assistant)
    out.update(user=user, assistant=assistant, cut=cut, completedAt=_stored(ev.completed_at))
    return out


def _remembered(ms: Any, did: str) -> Any:
    """The digest a focused review read for the remember request ``did`` (``cairn remember``: its proposals
    cite the request, whose digest the journal publishes only once it is processed), or None."""
    if not did.startswith("m"):
        return None
    from cairn.worker.memory.focused import _requests, as_digest  # server start: module docstring

    req = next((r for r in _requests(ms) if r.id == did), None)
    return as_digest(ms, req) if req is not None else None


def evidence(workspace: str, proposal_id: str, settings: Settings | None = None) -> dict[str, Any]:
    """The answer of ``cairn/evidence`` for ``proposal_id`` (see the module docstring)."""
    from cairn.worker.journal.views import public_digests  # server start: module docstring
    from cairn.worker.memory.apply import load_proposal
    from cairn.worker.memory.store import MemoryStore

    digests, _bad = public_digests(workspace)
    by_id = {d.id: d for d in digests}
    left = MAX_TURNS
    more = 0
    out: list[dict[str, Any]] = []
    with MemoryStore(workspace, settings) as ms:
        p = load_proposal(ms, proposal_id)
        for did in p.evidence:
            d = by_id.get(did) or _remembered(ms, did)
            if d is None:
                out.append({"id": clean(did), "missing": str(ErrorCode.BUNDLE_MISSING)})  # expired from the journal
                continue
            turns = []
            for tid in d.turn_ids:
                if left <= 0:
                    more += 1
                    continue
                turns.append(_turn(ms, d.session_id, tid))
                left -= 1
            out.append(
                {
                    "id": clean(d.id),
                    "session": clean(d.session_id),
                    "trigger": clean(str(d.trigger)),
                    "created": d.created,
                    "title": clean(d.title or ""),
                    "notes": [
                        {
                            "title": clean(n.title),
                            "type": clean(str(n.type)),
                            "body": clean(n.body),
                            "turnIds": [clean(t) for t in n.turn_ids],
                        }
                        for n in d.notes
                    ],
                    "turns": turns,
                }
            )
    return {"id": clean(p.id), "title": clean(p.title), "digests": out, "more": more}
