"""Worker programs for the runner's tests."""

from __future__ import annotations

import textwrap

#: a worker that starts a long-lived child in its process group, then dies: the runner must reap the stray
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
