"""The installed package, tests and benchmarks type-check cleanly.

mypy checks ``cairn`` under the name the tests import it by: the four layer
folders are mounted as ``cairn/{protocol,state,worker,server}`` in a
throw-away view of symlinks (the same files the editable install serves), and
``-p cairn -p tests -p bench`` runs with the settings of ``[tool.mypy]`` in
pyproject.toml. Why a view and not the installed wheel: see
docs/adr/0007-one-installed-namespace.md. A failure shows mypy's own report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support import REPO

LAYERS = ("protocol", "state", "worker", "server")


def mypy_view(root: Path) -> Path:
    """A directory holding ``cairn/<layer>`` symlinks to the repository's layers."""
    pkg = root / "cairn"
    pkg.mkdir(parents=True)
    for layer in LAYERS:
        (pkg / layer).symlink_to(REPO / layer, target_is_directory=True)
    return root


def test_mypy_finds_no_type_errors(tmp_path: Path) -> None:
    view = mypy_view(tmp_path / "view")
    env = dict(os.environ, MYPYPATH=str(view))
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
                        "-p", "cairn", "-p", "tests", "-p", "bench"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"mypy exited {r.returncode}:\n{r.stdout}{r.stderr}"
    assert r.stdout.startswith("Success: no issues found"), r.stdout
    checked = int(r.stdout.split(" in ")[1].split()[0])
    layer_files = sum(1 for layer in LAYERS for _ in (REPO / layer).rglob("*.py"))
    assert checked >= layer_files, f"mypy checked {checked} files, the layers alone hold {layer_files}"
