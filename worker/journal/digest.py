"""Digest work: discovery, admission, inference, acceptance, publication, recovery.

* **Discovery** lists captures and reads their markers in batched programs of
  16: a capture is *runnable* when sealed, not retired and not exhausted.
* **Recovery comes before replacement**: a capture whose newest digest
  generation has a ``completed`` outcome is published from that accepted
  bundle; no new inference is ever admitted for it.
* **Admission** elects ``digest/<capture>``; a generation that was taken over
  (``expired``) or ``failed`` counts as an attempt (a ``fail-<gen>`` marker
  written under the new claim), so a capture that kills its worker cannot
  loop forever. A failed capture is ``retry-waiting``: runnable again at the
  next pass (there is no per-capture delay). After three attempts (since the
  last explicit retry) the capture is ``exhausted`` and waits for ``retry``
  or ``discard``. :func:`process` reports each failed attempt (capture, code,
  message, attempt n of 3, exhausted) so callers can say what failed and
  what follows.
* **Inference** reads pinned evidence (hash-verified), runs the frozen policy's
  provider with no tools, and is cancelled at the claim's deadline. The
  settings of the request decide whether that policy may still run and
  which key goes with it (:mod:`worker.providers.access`, shared with
  reviews): a remote policy the settings no longer name is digested by the
  embedded engine, and the key is the one of the configured ``apiKeyEnv``
  (the ``command`` provider's program and the context window come from the
  settings too). Evidence longer than the context window is digested in
  several requests; the claim's lease allows the policy timeout for each.
  Whatever escapes the provider call leaves it with a fixed code
  (:func:`worker.providers.route.provider_error`, never ``E_INTERNAL``), so
  it is a counted failed attempt, not a crash retried (and paid) every pass.
  A Ctrl-C while the provider runs is the user's stop, not a failure: the
  claim is settled ``cancelled`` and no attempt is spent (three stops of a
  slow model would otherwise leave the capture exhausted).
* **Kept windows** (a model digest in several requests, docs/adr/0018):
  each window's validated reply is kept at once as
  ``captures/<cid>/w-<key>`` (:class:`KeptWindows`), linked exclusively in a
  program that proves the digest claim, so a writer whose claim was taken
  over is refused and a kept reply is never replaced. The next attempt reads
  them and sends only the windows still unanswered. An attempt that kept at
  least one new window made progress: it fails without a ``fail-<gen>``
  marker (reported with ``kept``), and a generation taken over after keeping
  one is not counted either. A capture has finitely many windows, so this
  still ends. Publication removes the kept replies with the pins.
* **Acceptance** puts the :class:`DigestResult` bundle and elects
  ``completed`` naming its hash, both fenced by the claim.
* **Publication** (idempotent, any process may finish it): public digest
  entry (skipped for all-none; passed through the redaction gate, session
  title included) → coverage per turn → release pins → retired
  marker. Nothing is retired before its coverage exists.
* **Groups**: captures of the embedded engine are digested several per claim
  generation with batched durability (:mod:`digest_group`); this module's
  per-capture path serves remote providers and what a group leaves.
"""

from __future__ import annotations

import time
from typing import Any

from cairn.protocol import codec
from cairn.protocol.claims import OutcomeRecord
from cairn.protocol.digest import DigestInput, ModelPolicy, WindowReply
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import (
    PUBLIC_ENTRY_LIMIT,
    Coverage,
    DigestResult,
    Failure,
    PublicDigest,
    Retired,
    Seal,
    TurnEvidence,
    session_fields,
)
from cairn.protocol.results import (
    CaptureArgs,
    CaptureDecision,
    DigestFailure,
    ProcessArgs,
    ProcessResult,
    RecoverResult,
    read,
)
from cairn.protocol.settings import Settings
from cairn.protocol.text import clean_text
from cairn.protocol.transcript import Turn
from cairn.protocol.vocab import OpStatus, OutcomeKind
from cairn.protocol.worker import WorkerRequest
from cairn.state import program as P
from cairn.state.claims import Claim
from cairn.worker.journal.batches import MAX_ATTEMPTS, CaptureState, capture_evidence, capture_states
from cairn.worker.journal.digest_group import GROUP, elect_group, process_group, recover_group
from cairn.worker.journal.store import CAPTURES, COVERAGE, PUBLIC, Journal, h
from cairn.worker.providers import embedded_digest, run_digest
from cairn.worker.providers.access import effective_policy, route
from cairn.worker.providers.route import provider_error
from cairn.worker.redaction.redact import redact_record
from cairn.worker.settings import config

DIGEST_TTL_MARGIN = 30.0
#: a kept window reply of a capture: ``w-<key>`` (:class:`KeptWindows`)
WINDOW_PREFIX = "w-"
REMOTE = ("openai", "command")


def _cleaned(e: TurnEvidence) -> TurnEvidence:
    """Evidence captured before capture cleaned its text: cleaned as it is read (:mod:`protocol.text`)."""
    title = None if e.title is None else clean_text(e.title)
    user, assistant = clean_text(e.user), clean_text(e.assistant)
    if (user, assistant, title) == (e.user, e.assistant, e.title):
        return e
    return codec.evolve(e, user=user, assistant=assistant, title=title)


def load_evidence(j: Journal, cid: str) -> tuple[list[TurnEvidence], Seal]:
    names = j.names(f"{CAPTURES}/{cid}")
    seal_raw = j.read_many([f"{CAPTURES}/{cid}/seal"])[f"{CAPTURES}/{cid}/seal"] if "seal" in names else None
    if seal_raw is None:
        raise CairnError(ErrorCode.CAPTURE_STATE, f"capture {cid} is not sealed")
    return [_cleaned(e) for e in capture_evidence(j, cid, names)], codec.decode(seal_raw, Seal)


def _policy(evidence: list[TurnEvidence], settings: Settings | None = None) -> ModelPolicy:
    """The frozen policy, when the settings still allow it; else the embedded engine's."""
    frozen = evidence[0].policy if evidence else ModelPolicy(provider="extractive")
    return effective_policy(frozen, settings or Settings())


def tool_name(source: str) -> str:
    """The tool a session was held in, from its evidence's source: ``import:codex`` is ``codex``, ``lsp`` ``editor``."""
    if source.startswith("import:"):
        return source[len("import:"):]
    return "editor" if source == "lsp" else source


def _input(evidence: list[TurnEvidence]) -> DigestInput:
    usable = tuple(
        Turn(turn_id=e.turn_id, parent_turn_id=e.parent_turn_id, user=e.user, assistant=e.assistant,
             completed_at=e.completed_at)
        for e in evidence if not e.oversized or e.user  # an oversized turn's words, when they were kept
    )
    return DigestInput(session_id=evidence[0].session_id, title=evidence[0].title, turns=usable,
                       source=tool_name(evidence[0].source))


class KeptWindows:
    """The answered windows of one capture's model digest: read once, each new one kept under the digest claim.

    Implements :class:`protocol.digest.WindowMemo` (module docstring: "Kept
    windows"). ``added`` counts the replies this attempt kept.
    """

    def __init__(self, j: Journal, cid: str, claim: Claim) -> None:
        self.j, self.cid, self.claim = j, cid, claim
        self.added = 0
        self.replies: dict[str, WindowReply] = {}
        names = [n for n in j.names(f"{CAPTURES}/{cid}") if n.startswith(WINDOW_PREFIX)]
        for path, raw in j.read_many(f"{CAPTURES}/{cid}/{n}" for n in names).items():
            if raw is None:
                continue
            try:
                reply = codec.decode(raw, WindowReply, where=path)
            except CairnError:
                continue  # unreadable: that window is asked again (its reply cannot replace the file)
            if path.endswith(f"/{WINDOW_PREFIX}{reply.key}"):
                self.replies[reply.key] = reply

    def kept(self, key: str) -> WindowReply | None:
        return self.replies.get(key)

    def keep(self, reply: WindowReply) -> None:
        """Link the reply as ``w-<key>`` in a program that proves the claim (a late writer is refused)."""
        reply = codec.evolve(reply, generation=self.claim.generation)
        res = self.j.claims.guarded_all(self.claim, [
            P.Link(f"{CAPTURES}/{self.cid}/{WINDOW_PREFIX}{reply.key}", codec.encode(reply), optional=True)])
        if res[1].status is OpStatus.OK:
            self.added += 1
        self.replies.setdefault(reply.key, reply)

    def kept_by(self, generation: int) -> int:
        """Replies kept by claim generation ``generation``."""
        return sum(1 for r in self.replies.values() if r.generation == generation)


def _lease(evidence: list[TurnEvidence], policy: ModelPolicy, settings: Settings | None) -> float:
    """Seconds the digest may take: the policy timeout for each request its context windows need."""
    if policy.provider == "extractive" or not evidence:
        return 60.0
    from cairn.worker.providers.openai_compat import request_count  # the HTTP stack: remote providers only

    try:
        requests = request_count(_input(evidence), route(policy, settings or Settings()))
    except CairnError:
        requests = 1  # the digest itself reports the bad setting
    return policy.timeout_seconds * max(1, requests)


def infer(evidence: list[TurnEvidence], *, deadline: float, env: dict[str, str] | None = None,
          settings: Settings | None = None, memo: KeptWindows | None = None) -> Any:
    """Run the allowed policy's provider over the usable turns (sessionless, no tools).

    An embedded engine (extractive, remember) is a plain function of its
    input: it runs directly, with no event loop to start per capture.
    ``memo``: the capture's kept windows (a remote provider's digest).
    """
    inp = _input(evidence)
    settings = settings or Settings()
    r = route(_policy(evidence, settings), settings, env)
    local = embedded_digest(inp, r.policy)
    if local is not None:
        return local
    import trio  # the event loop only for a remote provider (the embedded engines run without one)

    async def go() -> Any:
        with trio.fail_after(max(0.1, deadline - time.time())):
            return await run_digest(inp, r.policy, api_key=r.api_key, command=r.command,
                                    context_tokens=r.context_tokens, concurrency=r.concurrency, memo=memo)

    try:
        return trio.run(go)
    except trio.TooSlowError:
        raise CairnError(ErrorCode.PROVIDER_TIMEOUT, "digest inference passed the claim deadline") from None
    except Exception as exc:  # a fixed code, so the attempt is counted (never E_INTERNAL: a retry loop that pays)
        raise provider_error(exc) from None
    except BaseExceptionGroup as group:  # Ctrl-C inside a task of the provider's nursery: the user's stop, no failure
        if group.subgroup(KeyboardInterrupt) is not None:
            raise KeyboardInterrupt from None
        raise


def digest_id(cid: str, bundle: str) -> str:
    return h(f"{cid}\0{bundle}", 20)


def publish(j: Journal, cid: str, bundle_sha: str, decided: float) -> dict[str, Any]:
    """Publish an accepted result; idempotent and safe to repeat after any crash."""
    result = codec.decode(j.bundles.get(bundle_sha), DigestResult, where=f"accepted result of {cid}")
    if result.capture != cid:
        raise CairnError(ErrorCode.CLAIM_CORRUPT, f"accepted result names capture {result.capture[:60]}, not {cid}")
    did = digest_id(cid, bundle_sha) if result.notes else None
    ops: list[P.Op] = []
    if did is not None:
        entry = redact_record(PublicDigest(id=did, capture=cid, session_id=result.session_id, title=result.title,
                                           trigger=result.trigger, created=decided, provider=result.provider,
                                           turn_ids=result.turn_ids, notes=result.notes,
                                           session_started=result.session_started, session_ended=result.session_ended))
        data = codec.encode(entry)
        if len(data) > PUBLIC_ENTRY_LIMIT:
            raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"digest of {cid} exceeds the public entry bound")
        ops += [P.EnsureDir(PUBLIC), P.Link(f"{PUBLIC}/{did}.json", data, mode=0o644, optional=True)]
    ops.append(P.EnsureDir(COVERAGE))
    for t in result.turn_ids:
        cov = Coverage(turn_id=t, session_id=result.session_id, capture=cid, digest=did)
        ops.append(P.Link(f"{COVERAGE}/{h(result.session_id + chr(0) + t)}", codec.encode(cov), optional=True))
    res = j.run(ops)
    res.raise_failed()
    if did is not None:
        link = res[1]
        if link.status is OpStatus.CONFLICT:
            # present already: it must be exactly what this acceptance publishes
            check = j.run([P.Verify(f"{PUBLIC}/{did}.json", data=data)])
            if check[0].status is not OpStatus.OK:
                raise CairnError(ErrorCode.TARGET_CHANGED, f"public digest {did} differs from its accepted result")
    # pins (and kept window replies) are released only after coverage exists; then retire
    pins = [n for n in j.names(f"{CAPTURES}/{cid}") if n.startswith(("pin-", WINDOW_PREFIX))]
    reason = "discarded" if result.discarded else ("published" if did else "all-none")
    retired = Retired(capture=cid, at=decided, digest=did, reason=reason)
    res = j.run([*(P.Remove(f"{CAPTURES}/{cid}/{n}", optional=True, sync=False) for n in pins),
                 P.Link(f"{CAPTURES}/{cid}/retired", codec.encode(retired), optional=True)])
    res.raise_failed()
    return {"digest": did, "notes": len(result.notes), "reason": reason}



def recover_capture(j: Journal, cid: str) -> dict[str, Any] | None:
    """Publish an accepted-but-unpublished result of ``cid``; None when there is none."""
    newest = j.claims.newest(f"digest/{cid}")
    if newest.outcome is not None and newest.outcome.kind is OutcomeKind.COMPLETED and newest.outcome.bundle:
        return publish(j, cid, newest.outcome.bundle, newest.outcome.decided)
    return None


def _admit(j: Journal, cid: str, deadline_ttl: float) -> Claim:
    claim = j.claims.elect(f"digest/{cid}", purpose="digest", ttl=deadline_ttl, authority=j.authority)
    return claim


def _record_failure(j: Journal, claim: Claim, cid: str, gen: int, code: str) -> None:
    fail = Failure(capture=cid, generation=gen, error=code, at=claim.record.created)
    j.claims.guarded(claim, [P.Link(f"{CAPTURES}/{cid}/fail-{gen}", codec.encode(fail), optional=True)])


def failure_report(st: CaptureState, exc: CairnError, *, kept: int = 0) -> DigestFailure:
    """A failed attempt as callers report it: ids, code, message (never content), attempt n of N.

    ``kept``: windows the attempt kept (then it was not counted).
    """
    return DigestFailure(capture=st.cid, code=str(exc.code), message=exc.message,
                         attempt=min(MAX_ATTEMPTS, MAX_ATTEMPTS - st.attempts_left), of=MAX_ATTEMPTS,
                         exhausted=st.exhausted, kept=kept or None)


def process_capture(j: Journal, st: CaptureState, *, env: dict[str, str] | None = None,
                    settings: Settings | None = None, failures: list[DigestFailure] | None = None,
                    tally: dict[str, int] | None = None) -> str:
    """Digest one runnable capture. Returns published | all-none | failed | partial | exhausted | busy | recovered.

    A failed inference appends its :func:`failure_report` to ``failures``;
    ``partial`` is one that kept new windows (not counted as an attempt).
    ``tally["notes_dropped"]`` adds the notes the model's replies lost to validation.
    """
    if recover_capture(j, st.cid) is not None:
        return "recovered"
    evidence, seal = load_evidence(j, st.cid)
    policy = _policy(evidence, settings)
    ttl = _lease(evidence, policy, settings) + DIGEST_TTL_MARGIN
    try:
        claim = _admit(j, st.cid, ttl)
    except CairnError as exc:
        if exc.code is ErrorCode.CLAIM_BUSY:
            return "busy"
        raise
    gen = claim.generation
    try:
        memo = KeptWindows(j, st.cid, claim) if policy.provider in REMOTE else None
        # a predecessor that was taken over or failed is an attempt (unless it kept windows: progress)
        if gen > 1:
            prev = j.claims.run([P.Read(f"{claim.scope_dir}/{gen - 1}.outcome", optional=True)])[0]
            if prev.status is OpStatus.OK:
                po = codec.decode(prev.value, OutcomeRecord)
                if po.kind is OutcomeKind.COMPLETED and po.bundle:
                    # accepted meanwhile by someone else: publish, never re-infer
                    j.claims.settle(claim, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
                    publish(j, st.cid, po.bundle, po.decided)
                    return "recovered"
                if po.kind is OutcomeKind.EXPIRED and not (memo is not None and memo.kept_by(gen - 1)):
                    _record_failure(j, claim, st.cid, gen - 1, str(ErrorCode.WORKER_CRASHED))
        fresh = capture_states(j, [st.cid])[0]
        if fresh.retired:
            j.claims.settle(claim, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
            return "recovered"
        if fresh.exhausted:
            j.claims.settle(claim, OutcomeKind.CANCELLED, error=str(ErrorCode.CAPTURE_EXHAUSTED))
            return "exhausted"
        try:
            out = infer(evidence, deadline=claim.deadline - DIGEST_TTL_MARGIN / 2 + (time.time() - j.now()), env=env,
                        settings=settings, memo=memo)
        except CairnError as exc:
            kept = memo.added if memo is not None else 0
            if not kept:  # an attempt that kept a window made progress: not counted
                _record_failure(j, claim, st.cid, gen, str(exc.code))
            j.claims.settle(claim, OutcomeKind.FAILED, error=str(exc.code))
            again = capture_states(j, [st.cid])[0]
            if failures is not None:
                failures.append(failure_report(again, exc, kept=kept))
            return "partial" if kept else "exhausted" if again.exhausted else "failed"
        if tally is not None:
            tally["notes_dropped"] = tally.get("notes_dropped", 0) + out.dropped_notes
        result = DigestResult(capture=st.cid, session_id=seal.session_id, title=evidence[0].title if evidence else None,
                              trigger=seal.trigger, turn_ids=tuple(e.turn_id for e in evidence), notes=out.notes,
                              provider=policy.provider, **session_fields(evidence))
        sha, put = j.bundles.put_ops(codec.encode(result))
        outcome = j.claims.settle(claim, OutcomeKind.COMPLETED, bundle=sha, extra_ops=put)
    except BaseException as exc:
        try:
            o = j.claims.outcome(claim)
            if o is None and isinstance(exc, KeyboardInterrupt):  # the user stopped it: no attempt was spent
                j.claims.settle(claim, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
            elif o is None:
                j.claims.settle(claim, OutcomeKind.FAILED, error=str(ErrorCode.INTERNAL))
        except CairnError:
            pass
        raise
    publish(j, st.cid, sha, outcome.decided)
    return "published" if out.notes else "all-none"


def _extractive(j: Journal, cid: str, settings: Settings | None) -> bool:
    """The capture is digested by the embedded engine (its frozen policy, as the settings allow it)."""
    evidence, _ = load_evidence(j, cid)
    return _policy(evidence, settings).provider == "extractive"


def recover_all(j: Journal) -> int:
    n = recover_group(j)
    for st in capture_states(j):
        if st.sealed and not st.retired and recover_capture(j, st.cid) is not None:
            n += 1
    return n


def process(j: Journal, *, limit: int | None = None, deadline: float | None = None, progress: Any = None,
            env: dict[str, str] | None = None, settings: Settings | None = None) -> tuple[ProcessResult, bool]:
    """Recovery, then digest work over runnable captures (oldest seal first)."""
    exhausted: list[str] = []
    failures: list[DigestFailure] = []
    counts = {"recovered": 0, "published": 0, "all_none": 0, "failed": 0, "busy": 0}
    # recovery first: accepted-unpublished results are published before any new inference
    counts["recovered"] += recover_group(j)
    states = capture_states(j)
    for st in states:
        if st.sealed and not st.retired and recover_capture(j, st.cid) is not None:
            counts["recovered"] += 1
    states = [s for s in capture_states(j) if s.sealed and not s.retired and not s.exhausted]
    # fairness: a pass takes captures in seal order from a list frozen at its start
    runnable = sorted(states, key=lambda s: (s.sealed_at, s.cid))
    done = 0
    more = False

    tally: dict[str, int] = {}

    def count(cid: str, outcome: str) -> None:
        if outcome == "exhausted":
            exhausted.append(cid)
        else:  # published | all-none | failed | partial (a failure that kept windows) | busy | recovered
            counts["failed" if outcome == "partial" else outcome.replace("-", "_")] += 1

    i = 0
    while i < len(runnable):
        if (limit is not None and done >= limit) or (deadline is not None and time.time() >= deadline):
            more = True
            break
        if progress:
            progress(i, len(runnable), runnable[i].cid)
        size = min(GROUP, len(runnable) - i, (limit - done) if limit is not None else GROUP)
        group, i = runnable[i : i + size], i + size
        single = group
        if GROUP > 1:
            r = process_group(j, [st.cid for st in group], env=env, settings=settings, failures=failures)
            for cid, outcome in r["outcomes"].items():
                count(cid, outcome)
            counts["busy"] += r["busy"]
            deferred = set(r["deferred"])
            single = [st for st in group if st.cid in deferred and not _extractive(j, st.cid, settings)]
            done += len(group) - len(deferred)
            more = more or len(single) < len(deferred)  # left for a later group
        for st in single:  # a remote provider's capture
            count(st.cid, process_capture(j, st, env=env, settings=settings, failures=failures, tally=tally))
            done += 1
    if progress:
        progress(len(runnable), len(runnable), "")
    remaining = len([s for s in capture_states(j) if s.sealed and not s.retired and not s.exhausted])
    return ProcessResult(**counts, exhausted=tuple(exhausted), failures=tuple(failures), remaining=remaining,
                         notes_dropped=tally.get("notes_dropped") or None), (more and remaining > 0)


# -- explicit decisions -----------------------------------------------------

def retry(j: Journal, cid: str) -> CaptureDecision:
    states = {s.cid: s for s in capture_states(j, [cid])}
    st = states[cid]
    if st.turns == 0 and not st.sealed:
        raise CairnError(ErrorCode.NOT_FOUND, f"no capture {cid}")
    if not st.exhausted:
        return CaptureDecision(capture=cid, state=st.state, changed=False)
    res = j.run([P.Create(f"{CAPTURES}/{cid}/retry-{st.retries + 1}", optional=True)])
    res.raise_failed()
    return CaptureDecision(capture=cid, state=capture_states(j, [cid])[0].state, changed=True)


def discard(j: Journal, cid: str) -> CaptureDecision:
    """Accept an omission for a capture (coverage + retirement, nothing public).

    An already accepted digest takes precedence: it is published instead.
    """
    # under the group scope: never racing a group that digests this capture
    group = elect_group(j, "discard", [cid])
    try:
        return _discard(j, cid)
    finally:
        if j.claims.outcome(group) is None:
            j.claims.settle(group, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))


def _discard(j: Journal, cid: str) -> CaptureDecision:
    st = capture_states(j, [cid])[0]
    if not st.sealed:
        raise CairnError(ErrorCode.CAPTURE_STATE, f"capture {cid} is not sealed; seal it first")
    if st.retired:
        return CaptureDecision(capture=cid, state="retired", changed=False)
    rec = recover_capture(j, cid)
    if rec is not None:  # an accepted result: published instead (an all-none one names no digest)
        return CaptureDecision(capture=cid, state="retired", changed=False, published=rec["digest"])
    evidence, seal = load_evidence(j, cid)
    claim = _admit(j, cid, 60.0)
    result = DigestResult(capture=cid, session_id=seal.session_id, title=None, trigger=seal.trigger,
                          turn_ids=tuple(e.turn_id for e in evidence), notes=(), provider="discard", discarded=True)
    sha, put = j.bundles.put_ops(codec.encode(result))
    outcome = j.claims.settle(claim, OutcomeKind.COMPLETED, bundle=sha, extra_ops=put)
    publish(j, cid, sha, outcome.decided)
    return CaptureDecision(capture=cid, state="retired", changed=True)


# -- jobs -------------------------------------------------------------------

def job_recover(req: WorkerRequest) -> RecoverResult:
    with Journal(req.workspace) as j:
        return RecoverResult(recovered=recover_all(j))


def job_process(req: WorkerRequest) -> tuple[ProcessResult, bool]:
    limit = read(ProcessArgs, req.args, job=req.job).max
    with Journal(req.workspace) as j:
        return process(j, limit=limit,
                       deadline=(req.deadline - 5.0) if req.deadline else None,
                       settings=config.from_request(req.config))


def job_retry(req: WorkerRequest) -> CaptureDecision:
    capture = read(CaptureArgs, req.args, job=req.job).capture
    with Journal(req.workspace) as j:
        return retry(j, _cid(j, capture))


def job_discard(req: WorkerRequest) -> CaptureDecision:
    capture = read(CaptureArgs, req.args, job=req.job).capture
    with Journal(req.workspace) as j:
        return discard(j, _cid(j, capture))


def _cid(j: Journal, prefix: str) -> str:
    """Resolve a capture id or an unambiguous prefix of one."""
    if not prefix:
        raise CairnError(ErrorCode.USAGE, "a capture id is required")
    cids = [c for c in j.names(CAPTURES) if c.startswith(prefix)]
    if prefix in cids:
        return prefix
    if len(cids) != 1:
        raise CairnError(ErrorCode.NOT_FOUND, f"{len(cids)} captures match {prefix[:60]!r}")
    return cids[0]

