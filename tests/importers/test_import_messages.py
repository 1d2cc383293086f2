"""What `cairn import` says: the format it read, why a file gave no turn, and what `--all` left out.

An import that captured nothing says whether nothing is complete yet or why nothing was understood (a
fixed code and a message naming what the file is); `--format X` on a file that is not X names what it
is; a log of prompts without replies (Gemini CLI's ``logs.json``) is said to be one; `import --all`
counts every session it found and did not import, by reason.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.journal.helpers import cairn
from tests.support.transcripts import FIXTURES

ROLLOUT_060 = FIXTURES / "codex" / "0.60" / "rollout-2025-11-23T11-12-40-019ab3e1-4c2d-7a80-b6f1-2d9e5c7a8b31.jsonl"
ROLLOUT_2025_08 = FIXTURES / "codex" / "2025-08" / "rollout-2025-08-12T11-30-05-5b1f7c2e-8d4a-4e6b-9c3f-1a2b3c4d5e6f.jsonl"
GEMINI_CHAT = FIXTURES / "gemini-cli" / "session-2025-09-14T08-02-a1b2c3d4.json"
PROMPT_LOG = FIXTURES / "gemini-cli" / "prompt-log" / "logs.json"


def test_the_import_line_names_the_format_read(workspace: Path, tmp_path: Path) -> None:
    # fresh copies: a file quiet for longer than the seal idle time is sealed, and its last turn then counts too
    rollout, chat = tmp_path / ROLLOUT_2025_08.name, tmp_path / GEMINI_CHAT.name
    rollout.write_bytes(ROLLOUT_2025_08.read_bytes())
    chat.write_bytes(GEMINI_CHAT.read_bytes())
    r = cairn(workspace, "import", str(rollout), str(chat))
    assert r.stdout.splitlines()[0].startswith("imported 2 file(s) (1 codex, 1 gemini-cli), 2 session(s): ")
    one = cairn(workspace, "import", str(rollout)).stdout
    assert one.startswith("imported 1 file(s) (codex), 1 session(s): 0 new turn(s), 1 already captured\n")


def test_a_file_with_no_answered_prompt_says_nothing_is_complete_yet(workspace: Path, tmp_path: Path) -> None:
    src = tmp_path / "rollout.jsonl"
    src.write_text("".join(ln for ln in ROLLOUT_060.read_text().splitlines(keepends=True)[:4]))  # meta, a prompt
    r = cairn(workspace, "import", str(src))
    # the prompt is the session's last turn: kept, captured once the file is sealed (its words are never lost)
    assert r.stdout == ("imported 1 file(s) (codex), 0 session(s): 0 new turn(s), 0 already captured\n"
                        "nothing complete yet: 1 last turn(s) not over yet (no end signal or next prompt after them); "
                        "captured once the file has been quiet 20 minute(s), or now with --ended if the session is "
                        "over\n")
    out = json.loads(cairn(workspace, "import", str(src), "--json").stdout)
    assert (out["pending"], out["formats"], out["captured"]) == (1, ["codex"], 0)


def test_format_given_for_a_whole_file_json_names_what_it_is(workspace: Path, tmp_path: Path) -> None:
    r = cairn(workspace, "import", "--format", "codex", str(GEMINI_CHAT), check=False)
    assert r.returncode == 2 and "not a JSON value" not in r.stderr and "Traceback" not in r.stderr
    assert r.stderr == (f"cairn: E_IMPORT_WRONG_FORMAT: {GEMINI_CHAT.name} is no codex transcript: "
                        "it reads as gemini-cli\n")
    doc = tmp_path / "notes.json"
    doc.write_text('{\n  "notes": [1, 2]\n}\n')
    r = cairn(workspace, "import", "--format", "claude-code", str(doc), check=False)
    assert r.stderr == ("cairn: E_IMPORT_WRONG_FORMAT: notes.json is no claude-code transcript: it is one JSON "
                        "document, not the JSON lines claude-code writes (one record per line)\n")


def test_format_given_for_a_file_nothing_of_which_it_reads_is_a_fixed_error(workspace: Path, tmp_path: Path) -> None:
    src = tmp_path / "records.jsonl"
    src.write_text('{"a": 1}\n{"b": 2}\n')
    r = cairn(workspace, "import", "--format", "goose", str(src), check=False)
    assert r.returncode == 2 and r.stderr == ("cairn: E_IMPORT_WRONG_FORMAT: records.jsonl is no goose transcript: "
                                              "nothing in it reads as that format, nor as another format cairn knows\n")


def test_a_prompt_log_is_said_to_hold_prompts_only(workspace: Path) -> None:
    """A real Gemini CLI ``logs.json``: the prompts typed, no replies."""
    for argv in ((), ("--format", "gemini-cli"), ("--format", "codex")):
        r = cairn(workspace, "import", *argv, str(PROMPT_LOG), check=False)
        assert r.returncode == 2 and r.stderr == (
            "cairn: E_IMPORT_PROMPTS_ONLY: logs.json: a Gemini CLI prompt log: it holds the prompts typed and no "
            "replies, so no turn can be made of it (the conversations are in the chats folder beside it)\n"), argv


def _home(tmp_path: Path, ws: str, other: str) -> dict[str, str]:
    home = tmp_path / "home"
    day = home / ".codex" / "sessions" / "2025" / "11" / "23"
    day.mkdir(parents=True)
    text = ROLLOUT_060.read_text()
    (day / ROLLOUT_060.name).write_text(text.replace("/home/dana/src/chess-clock", ws))
    (day / "rollout-2025-11-23T12-00-00-other.jsonl").write_text(
        text.replace("/home/dana/src/chess-clock", other).replace("019ab3e1-4c2d", "019ab3e1-0000"))
    old = home / ".codex" / "sessions" / "2025" / "08" / "12"
    old.mkdir(parents=True)
    shutil.copyfile(ROLLOUT_2025_08, old / ROLLOUT_2025_08.name)  # the older layout records no directory
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share")}
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_DB", "CLINE_DIR", "COPILOT_HOME",
                "GOOSE_PATH_ROOT", "CONTINUE_GLOBAL_DIR", "APPDATA"):
        env[var] = ""
    return env


def test_import_all_counts_what_it_left_out_and_what_waits(tmp_path: Path) -> None:
    ws, other = tmp_path / "work" / "clock", str(tmp_path / "work" / "other")
    ws.mkdir(parents=True)
    env = _home(tmp_path, str(ws), other)
    out = json.loads(cairn(ws, "import", "--all", "--json", env=env).stdout)
    assert (out["sources"], out["captured"], out["pending"], out["formats"]) == (1, 2, 1, ["codex"])
    assert out["left_out"] == {"other-workspace": 1, "no-workspace": 1}
    said = cairn(ws, "import", "--all", env=env).stdout.splitlines()
    assert said[0] == "imported 1 session(s) from 1 source(s) (codex): 0 new turn(s), 2 already captured"
    assert said[1] == ("1 last turn(s) not over yet (no end signal or next prompt after them); captured once the file "
                       "has been quiet 20 minute(s), or now with --all --ended if the session is over")
    assert said[2] == ("left out: 1 session(s) of other workspaces, 1 session(s) whose tool records no workspace; "
                       "--every-workspace takes every workspace's sessions")
    every = json.loads(cairn(ws, "import", "--all", "--every-workspace", "--ended", "--json", env=env).stdout)
    assert (every["sources"], every["captured"], every.get("left_out"), every.get("pending")) == (3, 6, None, None)
