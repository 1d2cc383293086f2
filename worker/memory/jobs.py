"""Worker jobs of memory consolidation (see :mod:`worker.entry`)."""

from __future__ import annotations

from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import Settings
from cairn.protocol.worker import WorkerRequest
from cairn.worker.memory.store import MemoryStore


def _settings(req: WorkerRequest) -> Settings:
    from cairn.worker.settings import config

    return config.from_request(req.config)


def _store(req: WorkerRequest) -> MemoryStore:
    return MemoryStore(req.workspace, _settings(req))


def _ids(req: WorkerRequest) -> list[str]:
    ids = req.args.get("ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise CairnError(ErrorCode.USAGE, "ids: a non-empty list of proposal ids is required")
    return ids


def job_review(req: WorkerRequest) -> tuple[dict[str, Any], bool]:
    from cairn.worker.memory.apply import recover
    from cairn.worker.memory.focused import pending, recover_focused, run_focused
    from cairn.worker.memory.review import general_review

    with _store(req) as ms:
        recovered = recover(ms)
        result, more = general_review(ms, automatic=bool(req.args.get("automatic", False)))
        # a remembered text whose focused review was interrupted is reviewed here (never capped)
        recover_focused(ms)
        focused = run_focused(ms)["reviews"] if pending(ms) else 0
        return dict(result, writes=recovered, focused=focused), more


def job_drain(req: WorkerRequest) -> tuple[dict[str, Any], bool]:
    """One bounded review per call: the caller repeats while ``more`` (yielding between batches)."""
    from cairn.worker.memory.apply import recover
    from cairn.worker.memory.review import general_review

    with _store(req) as ms:
        recover(ms)  # like every review: a killed one's promised applications are kept first
        result, more = general_review(ms, automatic=False)
        return {"reviews": 1 if result.get("review") else 0, "proposals": result.get("proposals", 0)}, more


def _decide(req: WorkerRequest, fn_name: str) -> dict[str, Any]:
    from cairn.worker.memory import apply

    fn = getattr(apply, fn_name)
    out = []
    with _store(req) as ms:
        ids = _ids(req)
        apply.recover(ms, deciding=ids)
        for pid in ids:
            out.append(fn(ms, pid))
    return {"decisions": out}


def job_accept(req: WorkerRequest) -> dict[str, Any]:
    return _decide(req, "accept")


def job_reject(req: WorkerRequest) -> dict[str, Any]:
    return _decide(req, "reject")


def job_undo(req: WorkerRequest) -> dict[str, Any]:
    from cairn.worker.memory import apply

    pid = req.args.get("id")
    if not isinstance(pid, str) or not pid:
        raise CairnError(ErrorCode.USAGE, "id: a proposal id is required")
    with _store(req) as ms:
        apply.recover(ms, deciding=[pid])
        return apply.undo(ms, pid)


def job_accept_edited(req: WorkerRequest) -> dict[str, Any]:
    from cairn.worker.memory import apply, edited

    pid, text = req.args.get("id"), req.args.get("text")
    if not isinstance(pid, str) or not pid or not isinstance(text, str):
        raise CairnError(ErrorCode.USAGE, "id and text: a proposal id and its edited text are required")
    with _store(req) as ms:
        apply.recover(ms, deciding=[pid])
        return edited.accept_edited(ms, pid, text)


def job_proposals(req: WorkerRequest) -> dict[str, Any]:
    from cairn.worker.memory.views import proposal_rows

    return {"proposals": proposal_rows(req.workspace, _settings(req))}


def job_proposal(req: WorkerRequest) -> dict[str, Any]:
    from cairn.worker.memory.views import proposal

    return proposal(req.workspace, str(req.args.get("id", "")), _settings(req))


def job_memory(req: WorkerRequest) -> dict[str, Any]:
    from cairn.worker.memory.views import memory_rows

    return {"topics": memory_rows(req.workspace, _settings(req))}


def job_cockpit(req: WorkerRequest) -> dict[str, Any]:
    from cairn.worker.memory.views import cockpit

    return {"rows": cockpit(req.workspace, str(req.args.get("view", "candidates")), _settings(req))}
