"""The Emacs client: byte-compiles cleanly and its ERT suite passes in batch Emacs against the real server.

Each ERT test (editors/emacs/test/cairn-test.el) runs in its own ``emacs
--batch`` process and starts the real ``cairn serve`` with this
interpreter (``CAIRN_TEST_PYTHON``); temporary workspaces live under
pytest's ``tmp_path`` (``TMPDIR``).  A missing Emacs is a failure, never a
skip: CI installs ``emacs-nox`` and ``elpa-eglot``.
"""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, child_env

EMACS_DIR = REPO / "editors" / "emacs"
ERT_FILE = EMACS_DIR / "test" / "cairn-test.el"
ERT_TIMEOUT = 600  # seconds for one ERT test, server start and shutdown included


def _emacs() -> str:
    emacs = shutil.which("emacs")
    if emacs is None:
        pytest.fail("Emacs is required for the editor tests: apt-get install emacs-nox elpa-eglot")
    return emacs


def _load_path() -> list[str]:
    """``-L`` for Debian's ELPA packages (eglot 1.9 on Emacs 28; none needed where eglot is built in)."""
    args: list[str] = []
    for d in sorted(glob.glob("/usr/share/emacs/site-lisp/elpa/*/")):
        args += ["-L", d]
    return [*args, "-L", str(EMACS_DIR)]


def _ert_tests() -> list[str]:
    return re.findall(r"^\(ert-deftest ([\w-]+)", ERT_FILE.read_text(encoding="utf-8"), re.M)


def _run(args: list[str], tmp_path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = child_env(CAIRN_TEST_PYTHON=sys.executable, TMPDIR=str(tmp_path))
    return subprocess.run([_emacs(), "-Q", "--batch", *_load_path(), *args], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_cairn_el_byte_compiles_without_warnings(tmp_path: Path) -> None:
    source = tmp_path / "cairn.el"
    shutil.copyfile(EMACS_DIR / "cairn.el", source)
    proc = _run(["--eval", "(setq byte-compile-error-on-warn t)", "-f", "batch-byte-compile", str(source)],
                tmp_path, 120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "cairn.elc").exists()


def test_the_ert_suite_is_complete() -> None:
    names = _ert_tests()
    assert len(names) == len(set(names)) >= 11, names


@pytest.mark.parametrize("name", _ert_tests())
def test_ert(name: str, tmp_path: Path) -> None:
    proc = _run(["-l", "ert", "-l", str(ERT_FILE), "--eval", f"(ert-run-tests-batch-and-exit '(member {name}))"],
                tmp_path, ERT_TIMEOUT)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-8000:]
    # a skipped test does not count as expected: it fails here
    assert re.search(r"Ran 1 tests?, 1 results? as expected, 0 unexpected", output), output[-8000:]
