"""``bench/quality.py`` scores the assistant the user already has (the ``command`` provider) on the corpus.

Run as a real process, as an operator would, against the fake assistant CLI
of the provider tests, on a committed dev file (present on a fresh clone).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from tests.providers.fake_command import STDERR_SECRET

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "providers" / "fake_command.py"
FILE = "specstory-twat-mp-untitled"  # dev, committed; its one turn says "never", so the fake answers a note


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "quality.py"), "--split", "dev", "--only", FILE, *args],
                          capture_output=True, text=True, timeout=120, check=False)


def fake(mode: str, where: Path) -> str:
    return shlex.join([sys.executable, str(FAKE), mode, str(where)])


def test_the_command_provider_is_scored_with_the_prompt_on_stdin(tmp_path: Path) -> None:
    done = bench("--provider", "command", "--command", fake("answer", tmp_path), "--unmatched")
    assert done.returncode == 0, done.stderr
    assert "### dev: 1 files scored, 0 missing" in done.stdout
    assert "| dev | 0 | 0 | – | 1 | 0 | 0.00 |" in done.stdout  # the fake's one note matches nothing here
    assert "unmatched specstory-twat-mp-untitled" in done.stdout
    prompts = sorted(tmp_path.glob("prompt-*.txt"))
    assert len(prompts) == 1 and '"turns"' in prompts[0].read_text(encoding="utf-8")


def test_a_failing_command_is_counted_by_code_without_its_stderr(tmp_path: Path) -> None:
    done = bench("--provider", "command", "--command", fake("fail", tmp_path))
    assert done.returncode == 1
    assert "### dev: 1 files scored" in done.stdout  # the table still comes out
    assert "sessions whose digest failed (no notes scored for them): E_PROVIDER_FAILED x1" in done.stdout
    assert STDERR_SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_the_command_provider_needs_a_command_and_only_it_takes_one(tmp_path: Path) -> None:
    assert bench("--provider", "command").returncode == 2
    assert bench("--command", fake("answer", tmp_path)).returncode == 2
    assert not list(tmp_path.iterdir())
