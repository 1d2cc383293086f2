"""Real public files of the newer readers' shapes: Cursor agent transcripts and Cline task folders that keep
only ``ui_messages.json``.

The files are listed in ``tests/corpus/importers.json``. Their repositories have no licence, so they are not
committed: ``python tests/corpus/fetch.py`` restores them into ``tests/corpus/cache/`` (SHA-256 checked), and
each test skips while its file is absent. For each file, what the user wrote is taken from the raw JSON here,
independently of the reader, and must reach the user's side of a captured turn whole; Cursor's and Cline's
wrappers and notices, and the assistant's words, must not.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.transcript import Turn
from cairn.worker.ingest.importers import load

from tests.journal.helpers import J, cairn, ready_evidence
from tests.support import REPO

CORPUS = REPO / "tests" / "corpus"
ENTRIES = {e["id"]: e for e in json.loads((CORPUS / "importers.json").read_text(encoding="utf-8"))["files"]}
CURSOR = sorted(i for i, e in ENTRIES.items() if e["format"] == "cursor-transcript")
CLINE = sorted(i for i, e in ENTRIES.items() if e["format"] == "cline")
#: what Cursor itself writes into ``<user_query>`` when a subagent or a background task finishes: it speaks of
#: "the user" in the third person, to the model
CURSOR_NOTICES = ("The above subagent result is already visible to the user.",
                  "Briefly inform the user about the task result")
WRAPPERS = ("<user_query>", "</user_query>", "<timestamp>", "<image_files>", "<plugin_info", "<user_info>",
            "<attached_files>", "<task>", "<feedback>", "<environment_details>")


def restored(fid: str) -> Path:
    entry = ENTRIES[fid]
    path = CORPUS / "cache" / entry["file"]
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
        pytest.skip(f"{fid} is not restored (python tests/corpus/fetch.py)")
    return path


def placed(fid: str, home: Path, ws: Path) -> Path:
    """A copy of the file where its tool keeps it under ``home``, a Cursor transcript in the project folder
    Cursor names after ``ws``."""
    src = restored(fid)
    if ENTRIES[fid]["format"] == "cursor-transcript":
        name = uuid.uuid5(uuid.NAMESPACE_URL, ENTRIES[fid]["path"])  # the committed name keeps 8 digits of the id
        folder = "-".join(part for part in re.split(r"[^A-Za-z0-9]+", str(ws)) if part)
        dest = home / ".cursor" / "projects" / folder / "agent-transcripts" / f"{name}.jsonl"
    else:
        dest = (home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
                / "1770000000000" / "ui_messages.json")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


# ---------------------------------------------------------------- the file's own words, read here

def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content if b.get("type") == "text" and isinstance(b.get("text"), str))


def cursor_words(raw: str) -> tuple[list[str], list[str]]:
    """(each prompt the user wrote, each text the assistant wrote) of a Cursor agent transcript."""
    prompts: list[str] = []
    said: list[str] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        text = _text(rec.get("message", {}).get("content", ""))
        if rec.get("role") == "assistant":
            said += [t for t in (text.replace("[REDACTED]", "").strip(),) if t]
            continue
        if rec.get("role") != "user":
            continue
        queries = re.findall(r"<user_query>(.*?)</user_query>", text, re.S)
        if not queries:  # the commit button's prompt, "Your previous response was interrupted…"
            assert "<" not in text, text[:200]
            prompts.append(text.strip())
        for q in queries:  # a query nested in a query comes with its own <timestamp>
            q = re.sub(r"^\s*(?:<user_query>|<timestamp>[^<]*</timestamp>|\s)*", "", q).strip()
            if q and not q.startswith(CURSOR_NOTICES):
                prompts.append(q)
    return prompts, said


def cline_words(raw: str) -> tuple[list[str], list[str]]:
    """(the task and each message the user sent, what the assistant said) of a Cline ``ui_messages.json``."""
    prompts: list[str] = []
    said: list[str] = []
    for m in json.loads(raw):
        text = (m.get("text") or "").strip()
        if m.get("type") == "say" and m.get("say") in ("task", "user_feedback") and text:
            prompts.append(text)
        elif m.get("type") == "say" and m.get("say") in ("text", "completion_result") and text:
            said.append(text)
        elif m.get("type") == "ask" and m.get("ask") in ("followup", "plan_mode_respond") and text:
            said.append(text)  # the assistant's question; the user's answer is the next user_feedback
    return prompts, said


def turns_of(path: Path) -> list[Turn]:
    return [t for s in load(path) for t in (*s.turns, *((s.tail,) if s.tail else ()))]


def lost_in_order(prompts: list[str], users: list[str]) -> list[str]:
    """The prompts not found whole in the users' sides, each after the one before it (the same canned words,
    "Implement the plan as specified…", come back in several prompts: each must be found in its own place)."""
    lost: list[str] = []
    turn, offset = 0, 0
    for p in prompts:
        t, at = turn, offset
        while t < len(users) and (k := users[t].find(p, at)) < 0:
            t, at = t + 1, 0
        if t == len(users):
            lost.append(p[:80])
        else:
            turn, offset = t, k + len(p)
    return lost


def assert_users_words_and_nothing_else(turns: list[Turn], prompts: list[str], said: list[str], fid: str) -> None:
    users = [t.user for t in turns]
    assert prompts and turns, fid
    assert not lost_in_order(prompts, users), (fid, lost_in_order(prompts, users))
    for u in users:
        # a wrapper tag stays only where the user typed it (one pasted a ui_messages.json record)
        assert not [w for w in WRAPPERS if w in u and not any(w in p for p in prompts)], (fid, u[:200])
        assert not u.startswith(CURSOR_NOTICES) and "The above subagent result" not in u, (fid, u[:200])
        # a text the assistant wrote is never the user's (short ones, "Done.", may be quoted by the user)
        assert not [s[:80] for s in said if len(s) >= 40 and s in u], (fid, u[:200])
    assert all(t.assistant.strip() for t in turns), fid


# ---------------------------------------------------------------- the reader

@pytest.mark.parametrize("fid", CURSOR)
def test_real_cursor_transcripts_keep_every_prompt_and_nothing_else(fid: str) -> None:
    path = restored(fid)
    prompts, said = cursor_words(path.read_text(encoding="utf-8"))
    assert_users_words_and_nothing_else(turns_of(path), prompts, said, fid)


@pytest.mark.parametrize("fid", CLINE)
def test_real_cline_ui_messages_keep_every_prompt_and_nothing_else(fid: str, tmp_path: Path) -> None:
    path = placed(fid, tmp_path / "home", tmp_path)
    prompts, said = cline_words(path.read_text(encoding="utf-8"))
    turns = turns_of(path)
    assert {s.source_format for s in load(path)} == {"cline"}
    assert_users_words_and_nothing_else(turns, prompts, said, fid)
    assert len(turns) == len(prompts), fid  # each prompt its own turn: every one of them was answered


# ---------------------------------------------------------------- through `cairn import` and `cairn discover`

@pytest.mark.parametrize("fid", [*CURSOR, *CLINE])
def test_cairn_import_names_the_format_and_captures_every_turn_the_reader_gives(
        fid: str, workspace: Path, tmp_path: Path) -> None:
    path = placed(fid, tmp_path / "home", workspace)
    fmt = ENTRIES[fid]["format"]
    expected = turns_of(path)
    r = cairn(workspace, "import", "--ended", str(path))  # the session is over: its last turn counts too
    assert r.stdout.splitlines()[0] == (f"imported 1 file(s) ({fmt}), 1 session(s): {len(expected)} new turn(s), "
                                        "0 already captured"), r.stdout
    captured = [ev for cap in sorted((workspace / J / "captures").iterdir()) for _, ev in ready_evidence(workspace, cap)]
    assert [(e.turn_id, e.source) for e in captured] == [(t.turn_id, f"import:{fmt}") for t in expected]
    # what the journal keeps of the user's side is the reader's, whole (no turn of these is oversized)
    assert [e.user for e in captured] == [t.user for t in expected]


def test_cairn_discover_finds_a_real_cursor_transcript_and_import_all_reads_it(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = placed(CURSOR[0], home, workspace)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share")}
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_DB", "CLINE_DIR", "COPILOT_HOME",
                "GOOSE_PATH_ROOT", "CONTINUE_GLOBAL_DIR", "APPDATA"):
        env[var] = ""
    out = json.loads(cairn(workspace, "discover", "--json", "--sessions", env=env).stdout)
    (store,) = [st for st in out["stores"] if st["format"] == "cursor-transcript"]
    assert store["path"] == str(home / ".cursor" / "projects")
    assert [(i["path"], i["workspace"]) for i in store["items"]] == [(str(path), str(workspace))]
    r = cairn(workspace, "import", "--all", "--ended", env=env)
    assert r.stdout.splitlines()[0] == (f"imported 1 session(s) from 1 source(s) (cursor-transcript): "
                                        f"{len(turns_of(path))} new turn(s), 0 already captured"), r.stdout
