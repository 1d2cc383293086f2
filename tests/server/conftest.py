from __future__ import annotations

import textwrap

import pytest

from tests.conftest import PYTHON, child_env

STRAY_SCRIPT = textwrap.dedent(
    """
    import os, signal, subprocess, sys
    sys.stdin.buffer.read()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(sys.argv[1], "w") as fh:
        fh.write(str(child.pid))
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.fixture
def test_env() -> dict[str, str]:
    """Worker environment with the test-only job kinds enabled."""
    return child_env(CAIRN_TEST_JOBS="1")


__all__ = ["PYTHON", "STRAY_SCRIPT", "child_env"]
