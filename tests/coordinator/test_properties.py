"""Random event sequences against a model adapter: the invariants always hold."""

from __future__ import annotations

from collections.abc import Callable

from cairn.protocol.codec import decode, encode
from cairn.protocol.errors import CairnError
from cairn.protocol.jobs import JobStore
from cairn.server.scheduler import events as ev
from cairn.server.scheduler.coordinator import Coordinator
from hypothesis import given
from hypothesis import strategies as st

WORKSPACES = ("/a", "/b", "/c")
KINDS = ("recover", "process", "review", "drain", "cleanup")
CODES = ("E_PROVIDER_FAILED", "E_RECORD_MALFORMED", None, "free text")

op = st.one_of(
    st.tuples(st.just("notify"), st.sampled_from(WORKSPACES), st.lists(st.sampled_from(KINDS), max_size=3)),
    st.tuples(st.just("enqueue"), st.sampled_from(WORKSPACES), st.sampled_from(KINDS)),
    st.tuples(st.just("drain"), st.sampled_from(WORKSPACES)),
    st.tuples(st.just("idle")),
    st.tuples(st.just("turn"), st.sampled_from(WORKSPACES), st.booleans()),
    st.tuples(st.just("tick"), st.sampled_from((0.0, 0.3, 1.0, 29.0, 31.0, 125.0, 4000.0))),
    st.tuples(st.just("finish"), st.integers(0, 3), st.sampled_from(("ok", "failed", "cancelled", "busy")),
              st.sampled_from(CODES), st.booleans()),
    st.tuples(st.just("manage"), st.sampled_from(("retry", "dismiss", "discard")), st.integers(0, 20)),
    st.tuples(st.just("clear")),
    st.tuples(st.just("restart")),
    st.tuples(st.just("shutdown"), st.sampled_from((None, 0.0, 10.0))),
)


@given(st.lists(op, max_size=80), st.integers(1, 3))
def test_random_sequences_keep_every_invariant(ops: list[tuple], cap: int) -> None:
    c = Coordinator(ev.CoordinatorConfig(max_workers=cap))
    now = 0.0
    running: dict[str, str] = {}  # the adapter's view: job id -> workspace
    shut = False
    reported: set[str] = set()
    timer: float | None = None
    for item in ops:
        name = item[0]
        if name == "tick":
            now += item[1]
            event: ev.Event = ev.Tick()
        elif name == "notify":
            event = ev.Notify(item[1], tuple(item[2]))
        elif name == "enqueue":
            event = ev.Enqueue(item[1], item[2])
        elif name == "drain":
            event = ev.Drain(item[1])
        elif name == "idle":
            event = ev.Idle(60.0)
        elif name == "turn":
            event = ev.TurnActive(item[1], item[2])
        elif name == "finish":
            if not running:
                continue
            job_id = sorted(running)[item[1] % len(running)]
            event = ev.WorkerFinished(job_id, item[2], item[3], item[4])
            del running[job_id]
        elif name == "manage":
            ids = [j.id for j in c.store.jobs]
            if not ids:
                continue
            job_id = ids[item[2] % len(ids)]
            manage: dict[str, Callable[[str], ev.Event]] = {
                "retry": ev.Retry, "dismiss": ev.Dismiss, "discard": ev.Discard,
            }
            event = manage[item[1]](job_id)
            if item[1] == "retry":
                reported.discard(job_id)
        elif name == "clear":
            event = ev.ClearHistory()
        elif name == "restart":
            if running:
                continue  # a restart means the old workers died with the old server
            c = Coordinator(ev.CoordinatorConfig(max_workers=cap), decode(encode(c.store), JobStore))
            shut, reported, timer = False, set(), None
            event = ev.Restart(c.store)
        else:
            event = ev.Shutdown(item[1])
            shut = True

        before = c.store
        try:
            actions = c.handle(event, now)
        except CairnError:
            assert c.store == before  # a refused command changes nothing
            continue

        for action in actions:
            if isinstance(action, ev.StartWorker):
                assert not shut, "no start after shutdown"
                prior = {j.id: j.state for j in before.jobs}.get(action.job_id, "idle")
                if isinstance(event, (ev.WorkerFinished, ev.Retry)) and event.job_id == action.job_id:
                    prior = "idle"  # a next batch (more=True) or an explicit retry starts at once
                assert prior in ("idle", "retry-waiting"), "started a held or dismissed job"
                assert action.job_id not in running, "double start"
                assert action.workspace not in running.values(), "two workers in one workspace"
                running[action.job_id] = action.workspace
                assert len(running) <= cap, "global cap exceeded"
                assert action.deadline > now
            elif isinstance(action, ev.Report):
                assert action.job_id not in reported, "reported twice in one session"
                reported.add(action.job_id)
            elif isinstance(action, ev.SetTimer):
                timer = action.at
            elif isinstance(action, ev.CancelWorker):
                assert action.job_id in running
        assert timer is None or timer > now
        assert timer == c.next_wakeup()
        store = c.store
        assert decode(encode(store), JobStore) == store  # the store always round-trips strictly
        assert {j.id for j in store.jobs if j.state == "running"} == set(running)
        for job in store.jobs:
            assert job.last_error is None or job.last_error.startswith("E_")
            assert (job.not_before is not None) == (job.state == "retry-waiting")
        counts = c.snapshot(now)["counts"]
        assert counts["running"] == len(running)
