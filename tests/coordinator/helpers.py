"""A fake clock around the pure coordinator: time moves only when a test says so."""

from __future__ import annotations

from cairn.protocol.jobs import Job, JobStore
from cairn.server.scheduler.coordinator import Coordinator
from cairn.server.scheduler.events import (
    Action,
    CancelWorker,
    CoordinatorConfig,
    Event,
    Persist,
    Report,
    SetTimer,
    StartWorker,
    Tick,
    WorkerFinished,
    WorkerStatus,
)


class Clocked:
    """Drives a Coordinator with an explicit fake clock and records every action."""

    def __init__(self, config: CoordinatorConfig | None = None, store: JobStore | None = None, now: float = 0.0):
        self.c = Coordinator(config, store)
        self.now = now
        self.log: list[tuple[float, Action]] = []

    def at(self, now: float, event: Event) -> list[Action]:
        assert now >= self.now, "the fake clock never runs backwards"
        self.now = now
        actions = self.c.handle(event, now)
        self.log.extend((now, a) for a in actions)
        return actions

    def send(self, event: Event) -> list[Action]:
        return self.at(self.now, event)

    def tick(self, now: float) -> list[Action]:
        return self.at(now, Tick())

    def finish(self, now: float, job_id: str, status: str = "ok", code: str | None = None,
               more: bool = False, checkpoint: dict[str, str] | None = None) -> list[Action]:
        return self.at(now, WorkerFinished(job_id, WorkerStatus(status), code, more,
                                               checkpoint if checkpoint is not None else {}))

    def job(self, job_id: str) -> Job:
        """The job with this id; a test that asks for one expects it to exist."""
        job = self.c.job(job_id)
        assert job is not None, f"no job {job_id}"
        return job

    def running(self) -> list[str]:
        return [j.id for j in self.c.store.jobs if j.state == "running"]


def starts(actions: list[Action]) -> list[StartWorker]:
    return [a for a in actions if isinstance(a, StartWorker)]


def started(actions: list[Action]) -> list[tuple[str, str]]:
    """(workspace, kind) of every StartWorker, in order."""
    return [(a.workspace, a.kind) for a in starts(actions)]


def timers(actions: list[Action]) -> list[float | None]:
    return [a.at for a in actions if isinstance(a, SetTimer)]


def reports(actions: list[Action]) -> list[Report]:
    return [a for a in actions if isinstance(a, Report)]


def cancels(actions: list[Action]) -> list[CancelWorker]:
    return [a for a in actions if isinstance(a, CancelWorker)]


def persists(actions: list[Action]) -> list[Persist]:
    return [a for a in actions if isinstance(a, Persist)]


def only_start(actions: list[Action]) -> StartWorker:
    found = starts(actions)
    assert len(found) == 1, found
    return found[0]
