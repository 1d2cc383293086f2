"""The Emacs client: byte-compiles, checkdoc and package-lint clean; its ERT suite passes in batch Emacs.

The package is three files (cairn.el, the main file; cairn-cockpit.el;
cairn-gptel.el).  Loading them must change nothing in Emacs until
``cairn-mode`` is turned on (editors/emacs/test/cairn-load-test.el, in a
fresh Emacs).  Each ERT test (editors/emacs/test/cairn-test.el) runs in its own ``emacs
--batch`` process and starts the real ``cairn serve`` with this
interpreter (``CAIRN_TEST_PYTHON``); temporary workspaces live under
pytest's ``tmp_path`` (``TMPDIR``).  A missing Emacs is a failure, never a
skip: CI installs ``emacs-nox``, ``elpa-eglot`` and ``elpa-package-lint``
(and ``elpa-transient``: the cairn menu's transient variant is tested when
transient is on the load path, its plain fallback always).
"""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, child_env

EMACS_DIR = REPO / "editors" / "emacs"
ERT_FILE = EMACS_DIR / "test" / "cairn-test.el"
LOAD_TEST_FILE = EMACS_DIR / "test" / "cairn-load-test.el"
LINT_FILE = EMACS_DIR / "test" / "cairn-lint.el"
PACKAGE_FILES = ["cairn.el", "cairn-cockpit.el", "cairn-menu.el", "cairn-gptel.el"]  # the main file first
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


@pytest.mark.parametrize("name", PACKAGE_FILES)
def test_package_file_byte_compiles_without_warnings(name: str, tmp_path: Path) -> None:
    for file in PACKAGE_FILES:
        shutil.copyfile(EMACS_DIR / file, tmp_path / file)
    proc = _run(["-L", str(tmp_path), "--eval", "(setq byte-compile-error-on-warn t)",
                 "-f", "batch-byte-compile", str(tmp_path / name)], tmp_path, 120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / name).with_suffix(".elc").exists()


def test_package_files_are_checkdoc_and_package_lint_clean(tmp_path: Path) -> None:
    """Any checkdoc or package-lint warning fails (cairn-lint.el prints each as FILE:LINE: ...)."""
    proc = _run(["-l", str(LINT_FILE), "-f", "cairn-lint-batch-and-exit",
                 *[str(EMACS_DIR / f) for f in PACKAGE_FILES]], tmp_path, 120)
    output = proc.stdout + proc.stderr
    if "package-lint" in output and "Cannot open load file" in output:
        pytest.fail("package-lint is required for the editor tests: apt-get install elpa-package-lint")
    assert proc.returncode == 0, output
    assert f"0 finding(s) in {len(PACKAGE_FILES)} file(s)" in output, output


BROKEN_DOCSTRING = """
(defun cairn-menu--lint-probe ()
  "Probe.
Executed (\\<cairn-cockpit-mode-map>\\[cairn-cockpit-execute]), shown as typed."
  (interactive))
"""


def test_lint_finds_a_docstring_whose_key_substitution_lost_its_backslash(tmp_path: Path) -> None:
    """``\\<map>\\[command]`` written with one backslash in a Lisp string shows literally in the docstring:
    checkdoc passes it, the lint's `documentation` check does not (fails before: 0 findings)."""
    for file in PACKAGE_FILES:
        shutil.copyfile(EMACS_DIR / file, tmp_path / file)
    menu = tmp_path / "cairn-menu.el"
    text = menu.read_text(encoding="utf-8")
    menu.write_text(text.replace("(provide 'cairn-menu)", BROKEN_DOCSTRING.lstrip() + "\n(provide 'cairn-menu)"),
                    encoding="utf-8")
    proc = _run(["-l", str(LINT_FILE), "-f", "cairn-lint-batch-and-exit",
                 *[str(tmp_path / f) for f in PACKAGE_FILES]], tmp_path, 120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert re.search(r"^cairn-menu\.el:\d+: docstring of `cairn-menu--lint-probe' shows "
                     r"<cairn-cockpit-mode-map> \[cairn-cockpit-execute\] literally", output, re.M), output
    assert "1 finding(s) in 4 file(s)" in output, output


def test_loading_changes_nothing_until_cairn_mode(tmp_path: Path) -> None:
    proc = _run(["-l", "ert", "-l", str(LOAD_TEST_FILE), "-f", "ert-run-tests-batch-and-exit"], tmp_path, 120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-8000:]
    assert re.search(r"Ran 1 tests?, 1 results? as expected, 0 unexpected", output), output[-8000:]


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


GLOBAL_COMMANDS = ["cairn-mode", "cairn-cockpit", "cairn-dispatch", "cairn-jobs", "cairn-journal", "cairn-review",
                   "cairn-accept-proposal", "cairn-show-proposal", "cairn-edit-proposal", "cairn-remember",
                   "cairn-drain-backlog"]


def test_global_commands_are_commands_after_require_and_from_generated_autoloads(tmp_path: Path) -> None:
    """`M-x cairn-jobs` (as the README says) works after `(require 'cairn)` and from the package's autoloads."""
    names = " ".join(GLOBAL_COMMANDS)
    check = f"(let ((missing (cl-remove-if #'commandp '({names})))) (when missing (error \"not commands: %S\" missing)))"
    proc = _run(["--eval", "(require 'cl-lib)", "--eval", "(require 'cairn)", "--eval", check], tmp_path, 120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    loaddefs = tmp_path / "cairn-autoloads.el"
    generate = "".join(f"(update-file-autoloads \"{EMACS_DIR / f}\" t \"{loaddefs}\")" for f in PACKAGE_FILES)
    proc = _run(["--eval", "(require 'autoload)", "--eval", f"(progn {generate})"], tmp_path, 120)
    assert proc.returncode == 0 and loaddefs.exists(), proc.stdout + proc.stderr
    # a fresh Emacs that only loads the generated autoloads (what package.el does at startup)
    proc = _run(["--eval", "(require 'cl-lib)", "-l", str(loaddefs), "--eval", check,
                 "--eval", "(when (featurep 'cairn) (error \"the autoloads loaded cairn\"))"], tmp_path, 120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
