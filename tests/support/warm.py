"""The test side of :mod:`tests.support.zygote`: ``python ARGS`` as a process forked from a warm interpreter.

:func:`run_python` is :func:`subprocess.run` for ``[PYTHON, *args]`` with
the output captured as text; ``CAIRN_TEST_COLD_CLI=1`` makes it start a new
interpreter instead (to compare, or to rule the zygote out).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support import PYTHON, REPO, child_env


class WarmCli:
    """One zygote per test process, started on first use and ended when the process exits."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.buf = b""

    def _start(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([PYTHON, "-m", "tests.support.zygote"], cwd=REPO, env=child_env(),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self.buf = b""
            atexit.register(self.close)
        return self.proc

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _line(self, deadline: float) -> dict | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("the warm cairn process ended")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def run(self, argv: list[str], env: dict[str, str], cwd: Path, *, timeout: float) -> subprocess.CompletedProcess[str]:
        """``python ARGV`` (``-m MODULE ...`` or ``-c CODE ...``) forked from the zygote."""
        proc = self._start()
        assert proc.stdin is not None
        with tempfile.TemporaryDirectory(prefix="cairn-warm-") as tmp:
            out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
            proc.stdin.write((json.dumps({"argv": argv, "env": env, "cwd": str(cwd), "out": out, "err": err}) + "\n").encode())
            proc.stdin.flush()
            deadline = time.monotonic() + timeout
            started = self._line(time.monotonic() + 30)
            if started is None:
                raise RuntimeError("the warm cairn process did not answer")
            done = self._line(deadline)
            if done is None:  # as subprocess.run's timeout: end the command (and its workers), then say so
                try:
                    os.killpg(started["pid"], signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._line(time.monotonic() + 30)
                raise subprocess.TimeoutExpired([PYTHON, *argv], timeout)
            return subprocess.CompletedProcess([PYTHON, *argv], done["rc"], Path(out).read_text(encoding="utf-8"),
                                               Path(err).read_text(encoding="utf-8"))


_WARM = WarmCli()


def run_python(args: list[str], *, env: dict[str, str], cwd: Path = REPO,
               timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([PYTHON, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)``."""
    if os.environ.get("CAIRN_TEST_COLD_CLI") == "1":
        return subprocess.run([PYTHON, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return _WARM.run(args, env, cwd, timeout=timeout)
