"""The built wheel installs one top-level package, ``cairn``, and runs outside the checkout.

The wheel is built from a copy of the tracked files (what a fresh clone has),
without build isolation so the test needs no network: the dev extra pins a
setuptools that understands the project's metadata. A fresh virtual
environment gets the wheel with ``--no-deps``; its third-party dependencies
come from this interpreter's site-packages through a ``.pth`` line, which
adds a path but runs none of that directory's own ``.pth`` hooks, so the
editable install of the checkout stays invisible to it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.support import REPO

LAYERS = ("protocol", "state", "worker", "server")


def _tracked_copy(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    src = _tracked_copy(root / "src")
    out = root / "dist"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(out), str(src)], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = out.glob("*.whl")
    return whl


def test_pyproject_lists_every_package_folder() -> None:
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"cairn." + str(p.parent.relative_to(REPO)).replace("/", ".")
             for layer in LAYERS for p in (REPO / layer).rglob("__init__.py")}
    assert listed == found


def test_wheel_installs_only_the_cairn_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (top,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert z.read(top).decode().split() == ["cairn"]
    roots = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert roots == {"cairn"}
    assert "cairn/server/examples/demo-session.jsonl" in names
    assert not any(n.startswith("cairn/__init__") for n in names)  # an implicit namespace


def test_cairn_run_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run([str(py), "-c", "import cairn.server, cairn.worker; print(cairn.server.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(site), where.stdout
    ws = tmp_path / "ws"
    ws.mkdir()
    run = subprocess.run([str(venv / "bin" / "cairn"), "run", "-w", str(ws)], cwd=elsewhere, env=env,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert "turn" in run.stdout.lower() and run.stdout.strip(), run.stdout
