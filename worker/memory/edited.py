"""Edit before accept: the user's version of a proposal, through the same checked path.

An editor shows a pending proposal's proposed text (:func:`editable`), the
user edits it, and :func:`accept_edited` makes a *new* proposal from the
edited text whose before-state is the one the user reviewed (the original's
recorded before bytes, not whatever the file holds now), accepts it with
:func:`cairn.worker.memory.apply.accept` (so freshness, intent, marker and
the locked write are exactly those of any accept, and undo works the same),
then rejects the original as superseded. Only proposals that write one file
(plus index entries) can be edited. The index entry of an edited topic
follows its edited name and description (:func:`followed_index`), and
:func:`preview` says what the edited text would do (front matter problems,
the index lines) without writing anything.

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
from typing import Any

from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import FileEdit, IndexEdit, Proposal, ProposalKind, ProposalState
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


def followed_index(ms: MemoryStore, p: Proposal, data: bytes) -> tuple[IndexEdit, ...]:
    """``p``'s index edits with the entry of its topic following the edited name and description.

    The entry the proposal writes for its topic file keeps what the user did not change: a title that
    was the topic's name becomes the edited name, a hook that was its description (or empty because it
    repeated the name) becomes the edited description. Edits of other entries, and of a proposal that
    writes no topic, are unchanged; text whose front matter does not parse changes nothing here (it is
    refused by :func:`_check_topic`).
    """
    # yaml (the topic model) loads only to check or write files: apply.py's module docstring
    from cairn.worker.memory.model import parse_topic
    from cairn.worker.memory.model.index import format_entry, parse_index  # the same model: yaml
    from cairn.worker.memory.similarity import normalise  # imports the memory model too

    try:
        f = _the_file(p)
        if not f.after_bundle:
            return p.index
        old, new = parse_topic(ms.mbundles.get(f.after_bundle)), parse_topic(data)
    except CairnError:
        return p.index
    file = f.path.rsplit("/", 1)[-1]
    out = []
    for e in p.index:
        entry = parse_index(e.after.encode()).entry(file) if e.after is not None and e.file == file else None
        if entry is None:
            out.append(e)
            continue
        title = new.name if entry.title == old.name else entry.title
        was_hook = entry.hook == old.description or (not entry.hook and normalise(old.description) == normalise(old.name))
        hook = new.description if was_hook else entry.hook
        if normalise(hook) == normalise(title):
            hook = ""
        try:
            after = format_entry(title, file, hook) if (title, hook) != (entry.title, entry.hook) else e.after
        except CairnError:
            after = e.after
        out.append(IndexEdit(index=e.index, file=e.file, before=e.before, after=after))
    return tuple(out)


def edited_title(ms: MemoryStore, p: Proposal, data: bytes) -> str:
    """The edited proposal's title: the original's, with the topic's edited name, marked ``(edited)``.

    ``New project memory: Release steps`` edited to the name ``Release checklist`` is
    ``New project memory: Release checklist (edited)``.
    """
    from cairn.worker.memory.model import parse_topic  # yaml: apply.py

    title = p.title.removesuffix(" (edited)")
    try:
        f = _the_file(p)
        if f.after_bundle:
            old, new = parse_topic(ms.mbundles.get(f.after_bundle)), parse_topic(data)
            if old.name and old.name in title:
                title = title.replace(old.name, new.name)
    except CairnError:
        pass
    return f"{title} (edited)"


def preview(ms: MemoryStore, pid: str, text: str) -> dict[str, Any]:
    """What accepting ``text`` as ``pid``'s edited version would do, nothing written.

    ``problems``: ``[{code, message, line?}]`` (the refusal :func:`accept_edited` would give:
    ``E_TOPIC_FRONT_MATTER`` for a topic whose front matter does not parse, ``E_USAGE`` for a text
    too large); ``index``: the index lines it would write, ``[{index, file, before, after}]``.
    """
    p = apply.load_proposal(ms, pid)
    data = text.encode("utf-8")
    problems: list[dict[str, Any]] = []
    index = p.index
    try:
        if len(data) > MAX_TEXT:
            raise CairnError(ErrorCode.USAGE, f"edited text of {pid} is over {MAX_TEXT} bytes")
        f = _the_file(p)
        _check_topic(ms, pid, f, data)
        index = followed_index(ms, p, data)
    except CairnError as exc:
        problems.append({"code": str(exc.code), "message": exc.message,
                         **({"line": exc.detail["line"]} if exc.detail.get("line") else {})})
    return {"id": pid, "problems": problems,
            "index": [{"index": e.index, "file": e.file, "before": e.before, "after": e.after} for e in index]}


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
                      title=edited_title(ms, p, data),
                      summary=p.summary, target=p.target, files=tuple(edit if x is f else x for x in p.files),
                      index=followed_index(ms, p, data), evidence=p.evidence, fingerprint=p.fingerprint,
                      created=time.time())
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
    apply.reject(ms, pid, action="supersede")
    return codec.evolve(result, supersedes=pid)
