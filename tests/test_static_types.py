"""The source packages, tests and benchmarks type-check cleanly.

mypy runs exactly as configured in pyproject.toml (``[tool.mypy]``: which
directories, how strict, which third-party modules have no types), from the
repository root, so the error count stays at zero. A failure shows mypy's
own report: file, line, message and error code.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_mypy_finds_no_type_errors() -> None:
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"mypy exited {r.returncode}:\n{r.stdout}{r.stderr}"
    assert r.stdout.startswith("Success: no issues found"), r.stdout
