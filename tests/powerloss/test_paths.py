"""Power loss at every barrier of the other write paths: auto-apply, working-note disposition,
cleanup/retention, and a digest by a loopback model with its usage records.

Each test records one real run (:mod:`tests.powerloss.recorder`), then for
each crash state a power loss may leave (ADR 0021) checks: no visible file is
a half write (every memory, note, record and usage file is one of the
contents the run fsynced, or its content before the run); the state after
the run's last operation is what the run reported, before anything else
runs; the next command converges on the uninterrupted end state, with no
marker or temp left and ``cairn doctor`` clean. Sampled by default (every
third to sixteenth barrier, by test); ``CAIRN_POWERLOSS=full`` checks every state.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cairn.worker.memory.notes import QUIET_SECONDS

from tests.journal.test_crash_sweep import _check_evidence_until_coverage, _public
from tests.memory.converge import assert_rerun_converges, digested_template
from tests.memory.test_auto_crash_sweep import _applied_once
from tests.memory.test_auto_crash_sweep import _files as _auto_files
from tests.memory.test_notes_crash_sweep import NOTE, NOTE_PATH
from tests.memory.test_notes_crash_sweep import _files as _note_files
from tests.powerloss import harness, model
from tests.providers.endpoint import Endpoint
from tests.providers.endpoint import endpoint as endpoint  # the loopback server fixture
from tests.providers.test_context_windows import notes_per_window
from tests.support import REPO, child_env
from tests.support.warm import run_python

pytestmark = [pytest.mark.slow, pytest.mark.timeout(7200 if harness.FULL else 300)]  # a crash sweep: sampled by default, CAIRN_POWERLOSS=full checks every state

Files = dict[str, bytes | None]
Run = Callable[..., subprocess.CompletedProcess[str]]


def _cli(*argv: str) -> Run:
    def run(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
        return run_python([*argv, str(ws)], env=child_env(**env), timeout=120)
    return run


def _doctor(ws: Path) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())


def _record(template: Path, tmp: Path, run: Run, argv: list[str], **env: str) -> tuple[Path, dict[str, str], list[dict]]:
    ws = tmp / "ws"
    shutil.copytree(template, ws)
    before = model.inodes_of(ws)
    log = tmp / "ops.jsonl"
    r = harness.record(ws, log, [*argv, str(ws)], **env)
    assert r.returncode == 0, r.stderr[-800:]
    ops = model.load(log)
    harness.check_replay_is_faithful(template, before, ops, ws, tmp)
    return ws, before, ops


def _whole(files: Files, versions: set[bytes], where: str) -> None:
    for name, data in files.items():
        assert data is None or data in versions, (where, name, "a half write is visible")


def test_power_loss_during_auto_apply(tmp_path: Path) -> None:
    template = digested_template(tmp_path / "template", auto=True)
    review = _cli("-m", "cairn.server", "review", "-w")
    ws, before, ops = _record(template, tmp_path, review, ["-m", "cairn.server", "review", "-w"])
    final = _auto_files(ws)
    _applied_once(ws)
    assert final != _auto_files(template)
    versions = model.synced_versions(template, before, ops)

    def check(where: str, at_end: bool, crashed: Path) -> None:
        now = _auto_files(crashed)
        if at_end:
            assert now == final, where  # reported applied: durable as reported
        _whole(now, versions, where)
        assert_rerun_converges(crashed, review, _auto_files, final, 0, where, also=_applied_once)

    assert harness.sweep(template, before, ops, tmp_path, check, stride=16) > 5


def test_power_loss_during_working_note_disposition(tmp_path: Path) -> None:
    template = tmp_path / "template"
    (template / ".agents/notes").mkdir(parents=True)
    note = template / NOTE_PATH
    note.write_bytes(NOTE)
    quiet = note.stat().st_mtime - QUIET_SECONDS - 60
    os.utime(note, (quiet, quiet))
    actor = _cli("-m", "tests.memory.notes_actor")
    ws, before, ops = _record(template, tmp_path, actor, ["-m", "tests.memory.notes_actor"])
    final = _note_files(ws)
    assert final[NOTE_PATH] == NOTE and len(final) == 4  # two topics and their index; the note restored by undo
    versions = model.synced_versions(template, before, ops)

    def check(where: str, at_end: bool, crashed: Path) -> None:
        now = _note_files(crashed)
        if at_end:
            assert now == final, where
        _whole(now, versions, where)  # the note too: its bytes whole, or absent, never torn
        assert_rerun_converges(crashed, actor, _note_files, final, 0, where)

    assert harness.sweep(template, before, ops, tmp_path, check, stride=12) > 5


def _shown(ws: Path) -> dict[str, str]:
    """Each proposal and what ``cairn show`` prints of it (its evidence is read to show it)."""
    listed = run_python(["-m", "cairn.server", "proposals", "--json", "-w", str(ws)], env=child_env())
    assert listed.returncode == 0, listed.stderr[-400:]
    out = {}
    for p in json.loads(listed.stdout):
        r = run_python(["-m", "cairn.server", "show", p["id"], "-w", str(ws)], env=child_env())
        assert r.returncode == 0, (p["id"], r.stderr[-400:])
        out[p["id"]] = f'{p["state"]}\n{r.stdout}'
    return out


def test_power_loss_during_cleanup_deletes_nothing_still_pinned(tmp_path: Path) -> None:
    """Cleanup past every retention period, with proposals pending: whatever a crash leaves, the journal,
    every capture's evidence until its coverage, and every pending proposal (and the evidence it cites)
    stay readable; the next cleanup finishes the work."""
    template = digested_template(tmp_path / "template")
    assert run_python(["-m", "cairn.server", "review", "-w", str(template)], env=child_env()).returncode == 0
    late = {"CAIRN_TEST_CLOCK_OFFSET": str(400 * 86400)}
    shown = _shown(template)
    assert shown
    cleanup = _cli("-m", "cairn.server", "cleanup", "-w")
    ws, before, ops = _record(template, tmp_path, cleanup, ["-m", "cairn.server", "cleanup", "-w"], **late)
    assert any(op["op"] == "unlink" for op in ops)  # it deleted something
    journal = [g.id for g in _public(ws)]
    assert journal and _shown(ws) == shown

    def check(where: str, at_end: bool, crashed: Path) -> None:
        assert [g.id for g in _public(crashed)] == journal, where
        _check_evidence_until_coverage(crashed, where)
        assert _shown(crashed) == shown, where  # nothing a pending proposal pins was deleted
        again = cleanup(crashed, CAIRN_TEST_CLOCK_OFFSET=str(400 * 86400 + 1000))  # past the crashed claim
        assert again.returncode == 0, (where, again.stderr[-400:])
        assert _doctor(crashed).returncode == 0, where
        assert [g.id for g in _public(crashed)] == journal and _shown(crashed) == shown, where

    assert harness.sweep(template, before, ops, tmp_path, check, stride=3) > 3


def _usage(ws: Path) -> list[dict]:
    d = ws / ".cairn/state/usage"
    return [json.loads(p.read_bytes()) for p in sorted(d.rglob("*")) if p.is_file() and not p.name.startswith(".")] \
        if d.exists() else []


def test_power_loss_during_a_loopback_model_digest_and_its_usage_records(
        tmp_path: Path, endpoint: Endpoint, user_config_home: Path) -> None:
    endpoint.respond = notes_per_window
    endpoint.count_usage = True
    (user_config_home / "cairn").mkdir(exist_ok=True)
    (user_config_home / "cairn/config.toml").write_text("\n".join([
        'provider = "openai"', 'model = "m"', f'endpoint = "{endpoint.base_url}"', 'mode = "manual"', ""]))
    src = REPO / "tests" / "fixtures" / "sweep" / ".aider.chat.history.md"
    template = tmp_path / "template"
    template.mkdir()
    run = ["-m", "cairn.server", "run", str(src), "-w"]
    ws, before, ops = _record(template, tmp_path, _cli(*run), run, CAIRN_CAPTURE_BATCH_TURNS="2")
    (expected,) = _public(ws)
    records = _usage(ws)
    assert records and endpoint.requests  # the model was asked, and each request counted
    versions = model.synced_versions(template, before, ops)

    def check(where: str, at_end: bool, crashed: Path) -> None:
        usage = crashed / ".cairn/state/usage"
        # a temp the loss tore is no record: readers skip dot-names and the stray-temp sweep removes it
        _whole({str(p): p.read_bytes() for p in usage.rglob("*") if p.is_file() and not p.name.startswith(".tmp-")}
               if usage.exists() else {}, versions, where)
        if at_end:
            assert [g.id for g in _public(crashed)] == [expected.id], where
            assert _usage(crashed) == records, where  # every request reported is counted, durably
        again = run_python([*run, str(crashed)], env=child_env(CAIRN_CAPTURE_BATCH_TURNS="2",
                                                                CAIRN_TEST_CLOCK_OFFSET="1000"), timeout=120)
        assert again.returncode == 0, (where, again.stderr[-800:])
        doctor = _doctor(crashed)
        assert doctor.returncode == 0, (where, doctor.stdout[-800:])
        got = _public(crashed)
        assert [(g.id, g.turn_ids) for g in got] == [(expected.id, expected.turn_ids)], where
        _check_evidence_until_coverage(crashed, where)
        report = run_python(["-m", "cairn.server", "usage", "--json", "-w", str(crashed)], env=child_env())
        assert report.returncode == 0 and "Traceback" not in report.stderr, (where, report.stderr[-400:])

    assert harness.sweep(template, before, ops, tmp_path, check, stride=12) > 5


SOURCES = [REPO / "tests" / "fixtures" / "sweep" / ".aider.chat.history.md",
           REPO / "tests" / "fixtures" / "transcripts" / "aider" / ".aider.chat.history.md"]


def _import(src: Path) -> list[str]:
    return ["-m", "cairn.server", "import", str(src), "-w"]


def _finish(ws: Path) -> list[tuple[str, tuple[str, ...]]]:
    """Both imports again (recovery), then seal and digest: the public digests."""
    env = child_env(CAIRN_CAPTURE_BATCH_TURNS="2", CAIRN_TEST_CLOCK_OFFSET="1000", CAIRN_IMPORT_PROCESSES="1")
    for argv in ([*_import(s), str(ws)] for s in SOURCES):
        r = run_python(argv, env=env, timeout=120)
        assert r.returncode == 0, r.stderr[-800:]
    for cmd in ("seal", "process"):
        r = run_python(["-m", "cairn.server", cmd, "-w", str(ws)], env=env, timeout=120)
        assert r.returncode == 0, r.stderr[-800:]
    return [(g.id, g.turn_ids) for g in _public(ws)]


def _jobs(ws: Path) -> str:
    r = run_python(["-m", "cairn.server", "jobs", "--json", "-w", str(ws)], env=child_env())
    assert r.returncode == 0, r.stderr[-400:]
    return r.stdout


def test_power_loss_during_two_imports_in_flight(tmp_path: Path) -> None:
    """Two ``cairn import`` processes capture two sessions into one workspace at the same time (as the
    second import process of ADR 0013, or an editor's capture during an import, does); their calls are
    recorded into one log in the order they ran."""
    template = tmp_path / "template"
    template.mkdir()
    ws = tmp_path / "ws"
    shutil.copytree(template, ws)
    before = model.inodes_of(ws)
    log = tmp_path / "ops.jsonl"
    env = child_env(CAIRN_CAPTURE_BATCH_TURNS="2", CAIRN_IMPORT_PROCESSES="1")
    procs = [subprocess.Popen([str(REPO / ".venv/bin/python"), "-m", "tests.powerloss.recorder", str(log), str(ws),
                               "--", *_import(s), str(ws)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for s in SOURCES]
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], [o[1][-400:] for o in outs]
    ops = model.load(log)
    assert len({o["ino"].split(".")[1] for o in ops if o["op"] == "creat"}) == 2  # both processes wrote
    harness.check_replay_is_faithful(template, before, ops, ws, tmp_path)
    reported = _jobs(ws)
    ref = tmp_path / "ref"
    shutil.copytree(ws, ref)
    expected = _finish(ref)
    assert len(expected) >= 2  # a digest of each session

    def check(where: str, at_end: bool, crashed: Path) -> None:
        if at_end:  # both imports reported their turns captured: durable before any recovery
            assert _jobs(crashed) == reported, where
        _check_evidence_until_coverage(crashed, where)
        assert _finish(crashed) == expected, where  # each turn captured once, each digest published once
        doctor = _doctor(crashed)
        assert doctor.returncode == 0, (where, doctor.stdout[-800:])

    assert harness.sweep(template, before, ops, tmp_path, check, stride=12) > 5


def _edit_files(ws: Path) -> Files:
    from tests.memory.test_crash_sweep import _files
    return _files(ws)


def test_power_loss_during_edit_accept(tmp_path: Path) -> None:
    """Accept-edited: the user's version is applied once, byte for byte, and the original never."""
    from tests.powerloss.edit_actor import MINE

    template = digested_template(tmp_path / "template")
    actor = _cli("-m", "tests.powerloss.edit_actor")
    ws, before, ops = _record(template, tmp_path, actor, ["-m", "tests.powerloss.edit_actor"])
    final = _edit_files(ws)
    agents = final["AGENTS.md"]
    assert agents is not None and agents.endswith(MINE.encode())
    initial = _edit_files(template)["AGENTS.md"]
    versions = model.synced_versions(template, before, ops)

    def check(where: str, at_end: bool, crashed: Path) -> None:
        now = _edit_files(crashed)
        if at_end:
            assert now == final, where
        _whole(now, versions, where)
        assert now["AGENTS.md"] in (initial, agents), (where, "AGENTS.md is neither before nor the user's version")
        assert_rerun_converges(crashed, actor, _edit_files, final, 0, where)

    assert harness.sweep(template, before, ops, tmp_path, check, stride=8) > 5


def test_power_loss_during_a_grouped_import(tmp_path: Path) -> None:
    """Four small new sessions captured as one group (ADR 0023): their claims elected in one program, their
    batches written in one, their claims completed in one."""
    from tests.journal.test_import_group import _files, _state

    paths = _files(tmp_path, 4, 2)
    template = tmp_path / "template"
    template.mkdir()
    env = {"CAIRN_IMPORT_PROCESSES": "1", "CAIRN_IMPORT_WORKERS": "1"}
    argv = ["-m", "cairn.server", "import", *paths, "-w"]
    ws, before, ops = _record(template, tmp_path, _cli(*argv), argv, **env)
    final = _state(ws)["captures"]
    assert len(final) == 4
    reported = _jobs(ws)

    def turns(ws: Path) -> dict[str, list[tuple[str, ...]]]:
        return {k: [t for t, _, _ in v] for k, v in _state(ws)["captures"].items()} \
            if (ws / ".cairn/state/journal/captures").exists() else {}

    def check(where: str, at_end: bool, crashed: Path) -> None:
        if at_end:  # the import reported its turns captured: durable before any recovery
            assert turns(crashed) == turns(ws) and _jobs(crashed) == reported, where
        _check_evidence_until_coverage(crashed, where)
        r = run_python([*argv, str(crashed)], env=child_env(CAIRN_TEST_CLOCK_OFFSET="1000", **env), timeout=120)
        assert r.returncode == 0, (where, r.stderr[-800:])
        assert turns(crashed) == turns(ws), where  # each turn captured once, in its own capture
        got = _state(crashed)
        assert set(got["segments"]) <= {p[4:] for p in got["pins"]}, where  # no segment left unpinned
        doctor = _doctor(crashed)
        assert doctor.returncode == 0, (where, doctor.stdout[-800:])

    assert harness.sweep(template, before, ops, tmp_path, check, stride=8) > 5
