"""``workspace/executeCommand``: one table, name → (argument record, handler).

:data:`COMMANDS` is the single list of commands: :mod:`server.lsp.server` registers
exactly its keys (so the editor's capabilities name them) and
:meth:`server.lsp.service.CairnService.execute` dispatches through it. Each
command takes at most one argument, an object structured into the record
named here; see ``docs/lsp.md`` for what each does.

Two kinds of work:

- maintenance jobs (drain, review, cleanup; retry/discard/dismiss by
  ``jobId``) go through the coordinator and answer at once;
- decisions (accept, reject, unreject, undo, remember, wireAgents, verify, retireTopic, confirmTopic;
  retry/discard of a ``capture``) run one
  worker now (:func:`foreground`), one at a time per workspace, and answer
  with its result or its error code. Views are refreshed before the answer.

A drain reports work-done progress under a fresh token: ``begin``, a
``report`` after every batch, ``end`` once its jobs are done or one waits
for a retry (named in the end message).
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.jobs import HELD_STATES, JobState
from cairn.protocol.lsp import (
    CMD_ACCEPT,
    CMD_ACCEPT_EDITED,
    CMD_CLEANUP,
    CMD_CONFIRM_TOPIC,
    CMD_DIAGNOSTIC_REPORT,
    CMD_DISCARD,
    CMD_DISMISS,
    CMD_DRAIN,
    CMD_REJECT,
    CMD_REMEMBER,
    CMD_RETIRE_TOPIC,
    CMD_RETRY,
    CMD_REVIEW,
    CMD_SHOW_PROPOSAL,
    CMD_UNDO,
    CMD_UNREJECT,
    CMD_VERIFY,
    CMD_WIRE_AGENTS,
    AcceptEditedParams,
    DecisionParams,
    JobActionParams,
    NoParams,
    ProposalParams,
    RememberParams,
    TopicParams,
    WireAgentsParams,
    WorkspaceParams,
)
from cairn.protocol.results import (
    RESULTS,
    AcceptEditedArgs,
    AgentsWireArgs,
    CaptureArgs,
    DecideArgs,
    DrainResult,
    ProcessResult,
    ProposalArgs,
    RememberArgs,
    TopicArgs,
    read,
)
from cairn.protocol.worker import WorkerRequest, WorkerStatus
from cairn.server.lsp.features.context import DrainRun, Route, finished
from cairn.server.scheduler.events import (
    ClearHistory,
    Discard,
    Dismiss,
    Drain,
    Enqueue,
    Notify,
    Retry,
    StartWorker,
)
from cairn.server.scheduler.runner import RunResult, run_worker

if TYPE_CHECKING:
    from cairn.server.lsp.service import CairnService

FOREGROUND_BUDGET = 60.0  # seconds for accept/reject/undo/retry/discard workers
DRAIN_KINDS = ("process", "drain")
PROPOSAL_KINDS = ("review", "drain", "accept", "reject", "unreject", "undo", "accept-edited", "remember",
                  "agents-wire", "verify", "memory-retire")
_KNOWN_CODES = frozenset(str(c) for c in ErrorCode)


# ---------------------------------------------------------------- maintenance jobs


async def drain(svc: CairnService, p: WorkspaceParams) -> dict[str, Any]:
    """Process every sealed capture, then drain the review backlog, with work-done progress."""
    ws = svc.workspace(p.workspace)
    state = svc.workspaces[ws]
    if state.drain is None:
        state.drain = DrainRun(token=None)
        svc.submit(Enqueue(ws, "process"))
        svc.submit(Drain(ws))
        state.drain.token = await svc.client.progress_begin("cairn: draining backlog",
                                                            f"{state.journal.get('pending', 0)} pending")
        check_drain_done(svc, ws)
    adapter = svc.need_adapter()
    jobs = [j.id for k in DRAIN_KINDS if (j := adapter.coordinator.lookup(ws, k)) is not None]
    return {"workspace": ws, "jobIds": jobs, "progress": state.drain.token if state.drain else None}


async def _enqueue(svc: CairnService, ws: str, kind: str, args: dict[str, str]) -> dict[str, Any]:
    svc.submit(Enqueue(ws, kind, args))
    job = svc.need_adapter().coordinator.lookup(ws, kind, args)
    return {"workspace": ws, "jobId": job.id if job else None}


async def review(svc: CairnService, p: WorkspaceParams) -> dict[str, Any]:
    return await _enqueue(svc, svc.workspace(p.workspace), "review", {"explicit": "1"})


async def cleanup(svc: CairnService, p: WorkspaceParams) -> dict[str, Any]:
    return await _enqueue(svc, svc.workspace(p.workspace), "cleanup", {})


async def diagnostic_report(svc: CairnService, p: NoParams) -> dict[str, Any]:
    return svc.need_adapter().coordinator.diagnostic_report(svc.clock.now())


def _job_action(svc: CairnService, event: Retry | Discard | Dismiss, job_id: str) -> dict[str, Any]:
    job = svc.need_adapter().coordinator.job(job_id)
    svc.submit(event)
    if isinstance(event, Discard) and job is not None:
        svc.turns.discarded(job)
    if job is not None:
        svc.status.refresh(job.workspace)
    return {"jobId": job_id, "done": True}


# ---------------------------------------------------------------- decisions


async def foreground(svc: CairnService, ws: str, kind: str, args: Any) -> dict[str, Any]:
    """An editor decision: one worker now (serialised per workspace), then fresh views.

    ``args`` is the job's argument record; the answer's ``result`` is the body of its result record
    (:data:`protocol.results.RESULTS`), structured first: a result that does not decode is its codec error.
    """
    state = svc.workspaces[ws]
    request = WorkerRequest(job=kind, workspace=ws, args=codec.to_body(args),
                            deadline=time.time() + FOREGROUND_BUDGET, job_id=f"fg-{uuid.uuid4().hex[:12]}", config=svc.worker_config(ws))
    async with state.foreground:
        result = await run_worker(request, timeout=FOREGROUND_BUDGET + 5.0, env=svc.worker_env(kind))
    svc.log_result(request.job_id, kind, result)
    await svc.status.refresh_now(ws)
    if kind in PROPOSAL_KINDS:
        await svc.documents.republish(ws)
    if result.status is not WorkerStatus.OK:
        code = result.error if result.error in _KNOWN_CODES else ErrorCode.WORKER_BAD_RESPONSE
        # bounded, but long enough for a refusal's advice (a stale proposal's hints) to reach the editor whole
        raise CairnError(ErrorCode(code or ErrorCode.INTERNAL), f"{kind} {result.status}: {result.message}"[:400])
    if kind not in RESULTS:  # a job that still answers a plain object (``verify``): protocol.results docstring
        return {"workspace": ws, "status": str(result.status), "result": result.result}
    record: Any = read(RESULTS[kind], result.result, job=kind)
    return {"workspace": ws, "status": str(result.status), "result": codec.to_body(record)}


def _proposal_ids(name: str, p: DecisionParams) -> tuple[str, ...]:
    ids = p.proposal_ids
    if not ids:
        raise CairnError(ErrorCode.USAGE, f"{name}: ids (a list of proposal ids) is required")
    return ids


async def accept(svc: CairnService, p: DecisionParams) -> dict[str, Any]:
    ws, ids = svc.workspace(p.workspace), _proposal_ids(CMD_ACCEPT, p)
    await svc.documents.check_live_buffers(ws, ids)
    return await foreground(svc, ws, "accept", DecideArgs(ids=ids, keepBoth=True if p.keepBoth else None))


async def reject(svc: CairnService, p: DecisionParams) -> dict[str, Any]:
    ws, ids = svc.workspace(p.workspace), _proposal_ids(CMD_REJECT, p)
    return await foreground(svc, ws, "reject", DecideArgs(ids=ids))


async def unreject(svc: CairnService, p: DecisionParams) -> dict[str, Any]:
    """Rejections taken back: each proposal pending again, proposable again by later reviews."""
    ws, ids = svc.workspace(p.workspace), _proposal_ids(CMD_UNREJECT, p)
    return await foreground(svc, ws, "unreject", DecideArgs(ids=ids))


async def accept_edited(svc: CairnService, p: AcceptEditedParams) -> dict[str, Any]:
    """Edit before accept: a new proposal from the edited text (the reviewed before-state), accepted."""
    ws = svc.workspace(p.workspace)
    await svc.documents.check_live_buffers(ws, (p.id,))
    return await foreground(svc, ws, "accept-edited", AcceptEditedArgs(id=p.id, text=p.text))


async def undo(svc: CairnService, p: ProposalParams) -> dict[str, Any]:
    ws = svc.workspace(p.workspace)
    await svc.documents.check_live_buffers(ws, (p.id,), "undo")  # an undo writes files back: live buffers win
    return await foreground(svc, ws, "undo", ProposalArgs(id=p.id))


async def remember(svc: CairnService, p: RememberParams) -> dict[str, Any]:
    """Remember a text now: checked here (a bad one never starts a worker), captured and reviewed by one."""
    from cairn.worker.memory.remember import check_request  # server start: features/status.py docstring

    ws = svc.workspace(p.workspace)
    text, note_type, source = check_request(p.text, p.type, p.source or "lsp")
    return await foreground(svc, ws, "remember", RememberArgs(text=text, type=note_type, source=source))


async def wire_agents(svc: CairnService, p: WireAgentsParams) -> dict[str, Any]:
    """The code action on an instruction file: ``agents wire`` for the agents named (proposals, nothing applied)."""
    return await foreground(svc, svc.workspace(p.workspace), "agents-wire", AgentsWireArgs(agents=p.agents))


async def verify(svc: CairnService, p: WorkspaceParams) -> dict[str, Any]:
    """``cairn verify``: citations rechecked, stale topics marked, their update or retirement proposed.

    The answer keeps the counts and proposal ids (the per-topic detail is the Memories view's)."""
    answer = await foreground(svc, svc.workspace(p.workspace), "verify", {"dryRun": False})
    r = answer["result"] if isinstance(answer["result"], dict) else {}
    answer["result"] = {k: r.get(k) for k in ("checked", "stale", "unverifiable", "broken", "proposals", "review",
                                                "overBudget")}
    if r:  # the instruction files' stale lines: counted here, listed by `cairn verify`
        answer["result"]["staleInstructionLines"] = len(r.get("instructions") or [])
    return answer


async def retire_topic(svc: CairnService, p: TopicParams) -> dict[str, Any]:
    """The Memories view's retire key: a retirement proposal for one topic (decided like any other)."""
    return await foreground(svc, svc.workspace(p.workspace), "memory-retire", TopicArgs(file=p.file))


async def confirm_topic(svc: CairnService, p: TopicParams) -> dict[str, Any]:
    """The Memories view's confirm key: the topic is still true; ``E_TOPIC_STALE`` when it is marked stale."""
    return await foreground(svc, svc.workspace(p.workspace), "memory-confirm", TopicArgs(file=p.file))


async def show_proposal(svc: CairnService, p: ProposalParams) -> dict[str, Any]:
    return await svc.status.proposal(p)


async def _capture_action(svc: CairnService, name: str, kind: str, p: JobActionParams) -> dict[str, Any]:
    if p.capture is None:
        raise CairnError(ErrorCode.USAGE, f"{name}: jobId or capture is required")
    ws = svc.workspace(p.workspace)
    result = await foreground(svc, ws, kind, CaptureArgs(capture=p.capture))
    svc.turns.reported.discard(p.capture)
    if kind == "retry":
        svc.submit(Notify(ws, ("process",)))
    return result


async def retry(svc: CairnService, p: JobActionParams) -> dict[str, Any]:
    if p.jobId is not None:
        return _job_action(svc, Retry(p.jobId), p.jobId)
    return await _capture_action(svc, CMD_RETRY, "retry", p)


async def discard(svc: CairnService, p: JobActionParams) -> dict[str, Any]:
    if p.jobId is not None:
        return _job_action(svc, Discard(p.jobId), p.jobId)
    return await _capture_action(svc, CMD_DISCARD, "discard", p)


async def dismiss(svc: CairnService, p: JobActionParams) -> dict[str, Any]:
    if p.clearHistory:
        svc.submit(ClearHistory())
        return {"cleared": True}
    if p.jobId is None:
        raise CairnError(ErrorCode.USAGE, f"{CMD_DISMISS}: jobId or clearHistory is required")
    return _job_action(svc, Dismiss(p.jobId), p.jobId)


COMMANDS: dict[str, Route] = {
    CMD_DRAIN: Route(WorkspaceParams, drain),
    CMD_REVIEW: Route(WorkspaceParams, review),
    CMD_CLEANUP: Route(WorkspaceParams, cleanup),
    CMD_ACCEPT: Route(DecisionParams, accept),
    CMD_REJECT: Route(DecisionParams, reject),
    CMD_UNDO: Route(ProposalParams, undo),
    CMD_UNREJECT: Route(DecisionParams, unreject),
    CMD_ACCEPT_EDITED: Route(AcceptEditedParams, accept_edited),
    CMD_REMEMBER: Route(RememberParams, remember),
    CMD_RETRY: Route(JobActionParams, retry),
    CMD_DISCARD: Route(JobActionParams, discard),
    CMD_DISMISS: Route(JobActionParams, dismiss),
    CMD_DIAGNOSTIC_REPORT: Route(NoParams, diagnostic_report),
    CMD_SHOW_PROPOSAL: Route(ProposalParams, show_proposal),
    CMD_WIRE_AGENTS: Route(WireAgentsParams, wire_agents),
    CMD_VERIFY: Route(WorkspaceParams, verify),
    CMD_RETIRE_TOPIC: Route(TopicParams, retire_topic),
    CMD_CONFIRM_TOPIC: Route(TopicParams, confirm_topic),
}


# ---------------------------------------------------------------- drain progress


def drain_worker_finished(svc: CairnService, start: StartWorker, result: RunResult) -> None:
    """Count what a drain's batch did (before the snapshot refresh that follows it)."""
    state = svc.workspaces.get(start.workspace)
    if state is None or state.drain is None or start.kind not in DRAIN_KINDS:
        return
    run = state.drain
    run.jobs += 1
    if start.kind == "process" and (counts := finished(svc.client, start, result, ProcessResult)) is not None:
        run.published += counts.published
    if start.kind == "drain" and (drained := finished(svc.client, start, result, DrainResult)) is not None:
        run.proposals += drained.proposals


def drain_progress(svc: CairnService, start: StartWorker, result: RunResult) -> None:
    """After a batch's snapshot refresh: report progress, end the drain when it is done."""
    ws = start.workspace
    state = svc.workspaces[ws]
    if state.drain is not None and start.kind in DRAIN_KINDS and state.drain.token:
        counts = finished(svc.client, start, result, ProcessResult) if start.kind == "process" else None
        pending = state.journal.get("pending", 0)
        msg = f"{start.kind}: published {state.drain.published}, {pending} pending"
        pct = None
        if counts is not None and state.drain.published + counts.remaining > 0:
            pct = int(100 * state.drain.published / (state.drain.published + counts.remaining))
        svc.client.progress_report(state.drain.token, msg, pct)
    check_drain_done(svc, ws)


def check_drain_done(svc: CairnService, ws: str) -> None:
    state = svc.workspaces[ws]
    run = state.drain
    if run is None or svc.adapter is None:
        return
    live = [j for k in DRAIN_KINDS if (j := svc.adapter.coordinator.lookup(ws, k)) is not None]
    failed = [j for j in live if j.state in (JobState.RETRY_WAITING, *HELD_STATES)]
    if not failed and any(j.state in (JobState.IDLE, JobState.RUNNING) for j in live):
        return
    # done, or a part failed (its retry runs later, without this progress): say which job waits
    state.drain = None
    message = f"published {run.published}, proposals {run.proposals}"
    if failed:
        message += "; not finished: " + ", ".join(f"{j.id} {j.kind} {j.state} {j.last_error or ''}".rstrip()
                                                    for j in failed)
    if run.token:
        svc.client.progress_end(run.token, message)
