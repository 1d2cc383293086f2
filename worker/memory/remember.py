"""Remember this: a text the user asks to keep becomes evidence, then a proposal at once.

Contract of :func:`remember` (the ``remember`` job; CLI, language server and
MCP endpoint all call it):

1. **Checked input** (:func:`check_request`, also run by the callers before
   they start a worker): an empty text is ``E_USAGE``; a text over
   :data:`MAX_BYTES` UTF-8 bytes, or over :data:`MAX_CHARS` characters once
   its whitespace is folded, is ``E_RECORD_TOO_LARGE`` (a remembered text
   becomes one memory note, whose body holds at most 2000 characters:
   refusing is better than clipping what the user asked to keep); an unknown
   type is ``E_USAGE`` naming the types. The text returned, and remembered,
   is cleaned of control characters (:func:`protocol.text.clean_text`: a
   colour escape goes, its words stay); a text of nothing else is empty.
2. **Capture**: the text is the one turn of its own ``remember`` session
   (private evidence like any turn), sealed at once; its frozen policy is the
   ``remember`` provider's (:mod:`worker.providers.remember`), so the journal
   digest it later gets is the same note the focused review reads. The session and turn ids are a hash of
   (type, text), so remembering the same text again, or rerunning after a
   crash, captures nothing new.
3. **Request**: a private :class:`~protocol.memory.RememberRequest` naming
   the evidence is linked under ``.cairn/state/memory/remember/`` (written
   once; it is what the focused review looks for).
4. **Focused review** (:mod:`worker.memory.focused`) of every pending
   request, this one included. While another process holds the focused
   review, the caller waits for it (at most :data:`BUSY_WAIT` seconds: the
   holder covers this request too, or frees the scope for this caller to
   take); past that the report says ``busy`` and the proposal follows. The
   report names the proposals made for this text (applied at once in ``auto`` mode, through the checked path of a
   manual accept; one a killed run reviewed but did not apply is applied by
   the recovery any next command runs first, see :mod:`worker.memory.autoapply`).

Every step is idempotent, so a process killed at any point converges when
the same request runs again (or the next review pass picks the request up).

Imports inside functions: the language server, the CLI and the MCP endpoint
import this module for :func:`check_request` before a job runs, the server
in its event loop; the capture (the importers, sqlite3) and the review
machinery (yaml) load with the job. Measured with ``python -X importtime``
after the language server's own imports: 34 ms, 107 ms with them at the top.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import time
from collections import Counter

from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import RememberRequest
from cairn.protocol.results import ProposalRow, RememberArgs, RememberResult, read
from cairn.protocol.text import blank, clean_text
from cairn.protocol.transcript import Session, Turn
from cairn.protocol.vocab import NoteType, Trigger
from cairn.protocol.worker import WorkerRequest
from cairn.state import program as P
from cairn.worker.journal.batches import find_turn
from cairn.worker.memory.store import REMEMBERED, MemoryStore
from cairn.worker.settings import config

MAX_CHARS = 2000  # one note's body (worker.providers.notes.BODY_MAX)
MAX_BYTES = 16 * 1024  # raw text, before whitespace is folded: what a caller may send at all
TYPES = tuple(t.value for t in NoteType)
BUSY_WAIT = 20.0  # seconds a caller waits for the focused review another process holds (then: "busy")
BUSY_POLL = 0.05
_sleep = time.sleep  # the wait between looks (tests replace it with the holder's progress)
_SOURCE = re.compile(r"[a-z0-9][a-z0-9:._-]{0,39}")
_WS = re.compile(r"\s+")


def check_request(text: object, note_type: object = None, source: object = None) -> tuple[str, str, str]:
    """(text, type or "", source) of a valid request, else a fixed error; see the module docstring."""
    if not isinstance(text, str):
        raise CairnError(ErrorCode.USAGE, "remember: text must be a string")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"remember: the text is {size} bytes; at most {MAX_BYTES} "
                         f"are accepted (a remembered text becomes one note of at most {MAX_CHARS} characters)")
    text = clean_text(text)
    folded = _WS.sub(" ", text).strip()
    if blank(folded):  # also a text of zero width or filler characters only: it would make an invisible memory
        raise CairnError(ErrorCode.USAGE, "remember: the text is empty")
    if len(folded) > MAX_CHARS:
        raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"remember: the text is {len(folded)} characters; a remembered "
                         f"note holds at most {MAX_CHARS}: shorten it or remember it in parts")
    t = "" if note_type in (None, "") else note_type
    if t != "" and t not in TYPES:
        shown = str(t)[:40] if isinstance(t, str) else type(t).__name__
        raise CairnError(ErrorCode.USAGE, f"remember: unknown type {shown!r}; expected one of {', '.join(TYPES)}")
    src = "cli" if source in (None, "") else source
    if not isinstance(src, str) or not _SOURCE.fullmatch(src):
        raise CairnError(ErrorCode.USAGE, "remember: source must be a short lowercase name (letters, digits, :._-)")
    return text, str(t), src


def remember_id(text: str, note_type: str) -> str:
    return "m" + hashlib.sha256(f"{note_type}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:15]


def _evidence_bundle(ms: MemoryStore, session_id: str, turn_id: str) -> tuple[str, str]:
    """(capture, evidence segment or bundle) of a captured turn; "" once its evidence was cleaned up."""
    found = find_turn(ms, session_id, turn_id)
    if found is None:
        raise CairnError(ErrorCode.CAPTURE_STATE, "the remembered turn was not captured")
    return found


def record_request(ms: MemoryStore, text: str, note_type: str, source: str) -> RememberRequest:
    """Steps 2 and 3 of the module docstring: capture, seal, link the request (idempotent)."""
    from cairn.worker.journal.capture import capture_session, seal_session  # cold start: module docstring

    rid = remember_id(text, note_type)
    path = f"{REMEMBERED}/{rid}"
    raw = ms.read_many([path])[path]
    if raw is not None:
        return codec.decode(raw, RememberRequest, where=path)
    sid = f"remember-{rid}"
    now = ms.now()
    stamp = _dt.datetime.fromtimestamp(now, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    session = Session(session_id=sid, source_format="remember", title="remember",
                      turns=(Turn(turn_id=rid, parent_turn_id=None, user=text, assistant="", completed_at=stamp),))
    # the frozen policy: the journal's digest of this capture is the very note the focused review reads
    capture_session(ms, session, source=f"remember:{source}", policy=ModelPolicy(provider="remember", model=note_type))
    seal_session(ms, sid, Trigger.SESSION_END)
    cid, bundle = _evidence_bundle(ms, sid, rid)
    req = RememberRequest(id=rid, session_id=sid, turn_id=rid, capture=cid, bundle=bundle, type=note_type,
                          source=source, created=now)
    res = ms.run([P.EnsureDir(REMEMBERED), P.Link(path, codec.encode(req), optional=True)])
    for r in res.results:
        if r.status.value == "failed":
            raise CairnError(r.code or ErrorCode.IO_FAILED, r.message)
    # a concurrent twin may have linked first: its record is the request
    return codec.decode(ms.read_many([path])[path] or codec.encode(req), RememberRequest, where=path)


def remember(ms: MemoryStore, text: object, note_type: object = None, source: object = None) -> RememberResult:
    """Record the request and run the focused review; report this text's proposals."""
    from cairn.worker.memory.apply import recover  # cold start: module docstring
    from cairn.worker.memory.focused import (
        covered,
        focused_review,
        proposals_for,
        run_focused,
        stale_requests,
    )
    from cairn.worker.memory.review import skipped_report

    checked = check_request(text, note_type, source)
    recover(ms)  # an application a killed run left marked or only promised is completed first
    req = record_request(ms, *checked)
    review = run_focused(ms)
    applied = list(review["applied"])
    reviews = review["reviews"]
    skipped = Counter(review.get("skippedNotes", {}))
    deadline = time.monotonic() + BUSY_WAIT
    while review["busy"] and req.id not in covered(ms) and time.monotonic() < deadline:
        # another process holds the focused review: it covers this request too, or frees the scope for us
        _sleep(BUSY_POLL)
        review = run_focused(ms)
        applied += review["applied"]
        reviews += review["reviews"]
        skipped.update(review.get("skippedNotes", {}))
    again = stale_requests(ms, only=req.id).get(req.id, ())
    if again:  # remembered again after its proposals went stale: reviewed again against the files as they are now
        r, _ = focused_review(ms, again=(req.id,))
        if r.get("review"):
            reviews += 1
            applied += r["applied"]
            skipped.update(r.get("skippedNotes", {}))
        else:
            again = ()  # another process holds the focused review: the stale proposals are what there is
    mine = proposals_for(ms, req.id)
    return RememberResult(remember=req.id, capture=req.capture, reviews=reviews, busy=review["busy"],
                          reviewed=mine["reviewed"], proposals=tuple(ProposalRow(**p) for p in mine["proposals"]),
                          applied=tuple(applied), skippedNotes=skipped_report(skipped), again=again or None)


def job_remember(req: WorkerRequest) -> RememberResult:
    args = read(RememberArgs, req.args, job=req.job)
    with MemoryStore(req.workspace, config.from_request(req.config)) as ms:
        return remember(ms, args.text, args.type, args.source)
