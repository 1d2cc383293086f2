"""The suite's warm interpreter behaves as a new one would: environment, knobs, crash injection, exit status."""

from __future__ import annotations

import signal

from tests.support import child_env
from tests.support.warm import run_python


def test_a_tuning_knob_is_read_from_the_childs_own_environment() -> None:
    code = "from cairn.worker.journal import capture; print(capture.BATCH_TURNS)"
    assert run_python(["-c", code], env=child_env(CAIRN_CAPTURE_BATCH_TURNS="3")).stdout == "3\n"
    assert run_python(["-c", code], env=child_env()).stdout == "512\n"


def test_crash_injection_follows_the_childs_environment() -> None:
    code = "from cairn.state import crash; crash.point('first'); print('survived')"
    assert run_python(["-c", code], env=child_env(CAIRN_CRASH_AT="1")).returncode == -signal.SIGKILL
    assert run_python(["-c", code], env=child_env()).stdout == "survived\n"


def test_exit_status_output_and_traceback_are_the_interpreters() -> None:
    r = run_python(["-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(4)"], env=child_env())
    assert (r.returncode, r.stdout, r.stderr) == (4, "out\n", "err\n")
    r = run_python(["-c", "raise ValueError('boom')"], env=child_env())
    assert r.returncode == 1 and "ValueError: boom" in r.stderr
    r = run_python(["-m", "cairn.server", "--version"], env=child_env())
    assert r.returncode == 0 and r.stdout.startswith("cairn ")
