"""Edit before accept: the user's version of a proposal, through the same checked path.

An editor shows a pending proposal's proposed text (:func:`editable`), the
user edits it, and :func:`accept_edited` makes a *new* proposal from the
edited text whose before-state is the one the user reviewed (the original's
recorded before bytes, not whatever the file holds now), accepts it with
:func:`cairn.worker.memory.apply.accept` (so freshness, intent, marker and
the locked write are exactly those of any accept, and undo works the same),
then rejects the original as superseded. Only proposals that write one file
(plus index entries) can be edited.

Every step is idempotent, so a worker that dies between them loses nothing
and repeats nothing when run again: the new proposal's id is a hash of the
original's id and the edited bytes (publishing it again is a no-op), an
applied proposal accepts as "already applied", a rejected one rejects as
"already rejected". Dying after the new proposal is published and before it
is applied leaves it pending in the candidates, where the user sees it (in
``auto`` mode, a promise of the original's review then never applies the
original as proposed: see :mod:`cairn.worker.memory.autoapply`).
"""

from __future__ import annotations

import hashlib
import time

from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import FileEdit, Proposal, ProposalKind, ProposalState
from cairn.protocol.results import Decision
from cairn.state import program as P
from cairn.worker.memory import apply
from cairn.worker.memory.autoapply import taken_over_ops
from cairn.worker.memory.store import PROPOSALS, MemoryStore
from cairn.worker.redaction.redact import redact_bytes

MAX_TEXT = 1_000_000  # bytes of edited text


def _the_file(p: Proposal) -> FileEdit:
    """The one file a proposal writes, or ``E_USAGE``."""
    writes = [f for f in p.files if f.after is not None]
    if p.kind is ProposalKind.DISPOSITION or len(writes) != 1:
        raise CairnError(ErrorCode.USAGE, f"proposal {p.id} does not write exactly one file; it cannot be edited")
    return writes[0]


def editable(ms: MemoryStore, p: Proposal) -> dict[str, str] | None:
    """``{"path", "text"}``: the proposed text of a one-file proposal, else None."""
    try:
        f = _the_file(p)
    except CairnError:
        return None
    if not f.after_bundle:
        return None
    return {"path": f.path, "text": ms.mbundles.get(f.after_bundle).decode("utf-8", "replace")}


def _check_topic(ms: MemoryStore, pid: str, f: FileEdit, data: bytes) -> None:
    """A proposed topic file stays one: edited front matter that does not parse is ``E_TOPIC_FRONT_MATTER``.

    Nothing is written then; the message says what is wrong (and on which
    line), never the edited text.
    """
    from cairn.worker.memory.model import parse_topic  # yaml loads only to check or write files: apply.py

    if not f.after_bundle:
        return
    try:
        parse_topic(ms.mbundles.get(f.after_bundle))
    except CairnError:
        return  # not a topic file (an index or instruction file): no front matter to keep
    try:
        parse_topic(data)
    except CairnError as exc:
        line = exc.detail.get("line")
        where = f" (line {line})" if line else ""
        raise CairnError(ErrorCode.TOPIC_FRONT_MATTER,
                         f"{pid}: {exc.message}{where}; nothing was written",
                         **({"line": line} if line else {})) from None


def propose_edited(ms: MemoryStore, pid: str, text: str) -> Proposal:
    """Publish the edited version of pending proposal ``pid`` as a new proposal; return it."""
    p = apply.load_proposal(ms, pid)
    state, why = apply.state_of(ms, p)
    if state is not ProposalState.PENDING:
        code = ErrorCode.PROPOSAL_STALE if state is ProposalState.STALE else ErrorCode.PROPOSAL_STATE
        raise CairnError(code, f"proposal {pid} is {state}{': ' + why if why else ''}; it cannot be edited")
    data = text.encode("utf-8")
    if len(data) > MAX_TEXT:
        raise CairnError(ErrorCode.USAGE, f"edited text of {pid} is over {MAX_TEXT} bytes")
    f = _the_file(p)
    _check_topic(ms, pid, f, data)
    before = ms.mbundles.get(f.before_bundle) if f.before_bundle else None
    edit, ops = ms.edit_ops(f.path, before, redact_bytes(data))
    if f.before is not None and edit.before != f.before:
        raise CairnError(ErrorCode.BUNDLE_HASH_MISMATCH, f"proposal {pid}: before-state of {f.path} is corrupt")
    new_id = "p" + hashlib.sha256(f"{p.id}\0edited\0{edit.after}".encode()).hexdigest()[:12]
    edited = Proposal(id=new_id, review=p.review, kind=p.kind,
                      title=p.title if p.title.startswith("Edited: ") else f"Edited: {p.title}",
                      summary=p.summary, target=p.target, files=tuple(edit if x is f else x for x in p.files),
                      index=p.index, evidence=p.evidence, fingerprint=p.fingerprint, created=time.time())
    # an ``auto``-mode promise of the review must not apply the original once the edit exists (autoapply)
    res = ms.run([*taken_over_ops(p.review, p.id), *ops, P.EnsureDir(PROPOSALS),
                  P.Link(f"{PROPOSALS}/{new_id}", codec.encode(edited), optional=True)])
    for r in res.results:
        if r.status.value == "failed":
            raise CairnError(r.code or ErrorCode.IO_FAILED, r.message)
    return edited


def accept_edited(ms: MemoryStore, pid: str, text: str) -> Decision:
    """The edited version of ``pid`` applied through the checked path; ``pid`` rejected as superseded."""
    edited = propose_edited(ms, pid, text)
    result = apply.accept(ms, edited.id)
    apply.reject(ms, pid)
    return codec.evolve(result, supersedes=pid)
