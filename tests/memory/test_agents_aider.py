"""``cairn agents`` and aider: a row when aider is used here, and ``wire`` adding ``AGENTS.md`` to its ``read:``.

aider reads no instruction file by default; it opens read-only, in every
chat, the files its ``.aider.conf.yml`` lists under ``read:`` (a YAML list,
block or flow, or one file name: aider.chat/docs/config/aider_conf.html).
aider parses the file with PyYAML's safe loader (through ConfigArgParse), so
the oracle below reads it the same way, written out independently of cairn's
code: ``read`` as a list or a single name, each entry a path from the folder
aider starts in (the workspace). Everything runs the real CLI on real files,
with a synthetic home; aider is in use by its chat history (a real transcript
fixture, which discovery finds) or by its config.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.journal.helpers import cairn
from tests.memory.agents_home import env_for, make_home, memory
from tests.support.transcripts import FIXTURES

INDEX = ".agents/memory/MEMORY.md"
CONF = ".aider.conf.yml"
POINTER = "# Rules\n\nAt the start of a task read `.agents/memory/MEMORY.md`.\n"


def _run(ws: Path, home: Path, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
    r = cairn(ws, *argv, env={**env_for(home), **extra}, check=False)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def _json(ws: Path, home: Path, *argv: str) -> Any:
    r = _run(ws, home, *argv, "--json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def _rows(ws: Path, home: Path, **extra: str) -> dict[str, dict[str, Any]]:
    r = _run(ws, home, "agents", "--json", **extra)
    assert r.returncode == 0, r.stderr
    return {row["agent"]: row for row in json.loads(r.stdout)}


def _visible(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*"))
            if p.is_file() and not str(p.relative_to(ws)).startswith(".cairn/")}


def _history(ws: Path) -> None:
    """aider's chat history in the git root, as aider leaves it (a real transcript)."""
    (ws / ".aider.chat.history.md").write_bytes((FIXTURES / "aider" / "afi-core-refusals.md").read_bytes())


def _aider_reads(ws: Path, home: Path | None = None) -> list[str]:
    """What aider opens read-only (Aider-AI/aider main.py; ConfigArgParse YAMLConfigFileParser): the `read` of
    the workspace's .aider.conf.yml, else of the home's (the first that sets it wins whole); a list's items or
    one name; each a path from the workspace, where aider is started."""
    for conf in (ws / CONF, *([home / CONF] if home else [])):
        if not conf.is_file():
            continue
        value = yaml.safe_load(conf.read_text())
        read = value.get("read") if isinstance(value, dict) else None
        if read:  # None and [] set nothing
            return [str(x) for x in (read if isinstance(read, list) else [read])]
    return []


def _aider_reads_index(ws: Path, home: Path | None = None) -> bool:
    """Whether a file aider opens names the memory index (aider reads its files as text)."""
    return any((ws / f).is_file() and INDEX in (ws / f).read_text() for f in _aider_reads(ws, home))


# -- the tests --------------------------------------------------------------------------------------

def test_aider_gets_a_row_and_wire_makes_it_read_agents_md_and_undo_removes_the_config_again(
        tmp_path: Path, workspace: Path) -> None:
    """aider was a session source but no `cairn agents` row, and `agents wire aider` was E_USAGE."""
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    _history(workspace)
    before = _visible(workspace)

    row = _rows(workspace, home)["aider"]
    assert row["wired"] is False and row["via"] is None and row["hooks"] is False, row
    assert row["sessions"] >= 1 and row["files"] == [".aider.chat.history.md"], row
    assert row["targets"] == [CONF, "AGENTS.md"] and row["target"] == CONF, row
    listing = _run(workspace, home, "agents").stdout
    assert "would edit .aider.conf.yml, AGENTS.md" in listing, listing

    wired = _json(workspace, home, "agents", "wire", "aider")
    assert wired["refused"] == [] and wired["wired"] == []
    assert sorted((p["target"], p["agents"], p["mechanism"]) for p in wired["proposals"]) == [
        (CONF, ["aider"], "read"), ("AGENTS.md", ["aider"], "pointer")]
    assert _visible(workspace) == before  # proposing writes nothing
    ids = [p["id"] for p in wired["proposals"]]
    assert _run(workspace, home, "accept", *ids).returncode == 0

    assert (workspace / CONF).read_text() == "read:\n  - AGENTS.md\n"
    assert _aider_reads(workspace) == ["AGENTS.md"] and _aider_reads_index(workspace)
    rows = _rows(workspace, home)
    assert rows["aider"]["via"] == {"file": CONF, "mechanism": "pointer", "through": ["AGENTS.md"], "link": None}
    assert rows["codex"]["wired"] is True  # AGENTS.md, created for aider, is Codex's too
    again = _json(workspace, home, "agents", "wire")
    assert again["proposals"] == [] and sorted(again["wired"]) == ["aider", "codex"]

    for pid in ids:
        assert _run(workspace, home, "undo", pid).returncode == 0
    assert _visible(workspace) == before  # the config and AGENTS.md removed again
    assert _rows(workspace, home)["aider"]["wired"] is False


CASES = {
    # a block list among other keys and comments: the entry goes after its last item
    "block": (b"# aider settings\nmodel: sonnet  # the main model\nread:\n  - CONVENTIONS.md   # style\n"
              b"  - docs/api.md\n\n# colours\ndark-mode: true\n",
              b"# aider settings\nmodel: sonnet  # the main model\nread:\n  - CONVENTIONS.md   # style\n"
              b"  - docs/api.md\n  - AGENTS.md\n\n# colours\ndark-mode: true\n"),
    # items at the key's own column, CRLF, no final newline
    "block-crlf": (b"read:\r\n- CONVENTIONS.md\r\nauto-commits: false",
                   b"read:\r\n- CONVENTIONS.md\r\n- AGENTS.md\r\nauto-commits: false"),
    "block-last": (b"model: sonnet\nread:\n- a.md\n- b.md", b"model: sonnet\nread:\n- a.md\n- b.md\n- AGENTS.md"),
    "flow": (b"read: [CONVENTIONS.md, 'notes/a b.md']  # two files\nmodel: sonnet\n",
             b"read: [CONVENTIONS.md, 'notes/a b.md', AGENTS.md]  # two files\nmodel: sonnet\n"),
    "flow-lines": (b"read: [\n  CONVENTIONS.md,\n  docs/api.md  # api\n]\n",
                   b"read: [\n  CONVENTIONS.md,\n  docs/api.md, AGENTS.md  # api\n]\n"),
    "flow-empty": (b"read: []\n", b"read: [AGENTS.md]\n"),
    "scalar": (b"read: CONVENTIONS.md  # house style\n", b"read: [CONVENTIONS.md, AGENTS.md]  # house style\n"),
    "scalar-comma": (b"read: notes,old.md\n", b"read: [\"notes,old.md\", AGENTS.md]\n"),
    "quoted": (b"model: sonnet\nread: \"CONVENTIONS.md\"\n",
               b"model: sonnet\nread: [\"CONVENTIONS.md\", AGENTS.md]\n"),
    "null": (b"read:  # none yet\nmodel: sonnet\n", b"read:  # none yet\n  - AGENTS.md\nmodel: sonnet\n"),
    "tilde": (b"read: ~\n", b"read: [AGENTS.md]\n"),
    "absent": (b"# my settings\nmodel: sonnet\n", b"# my settings\nmodel: sonnet\nread:\n  - AGENTS.md\n"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_read_key_gets_the_entry_in_place_and_every_other_byte_is_kept(
        tmp_path: Path, workspace: Path, case: str) -> None:
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)  # already points to the memory: only the config changes
    conf, expected = CASES[case]
    (workspace / CONF).write_bytes(conf)
    (workspace / CONF).chmod(0o640)
    had = _aider_reads(workspace)

    assert _rows(workspace, home)["aider"]["targets"] == [CONF]
    (p,) = _json(workspace, home, "agents", "wire", "aider")["proposals"]
    assert (p["target"], p["mechanism"]) == (CONF, "read")
    assert _run(workspace, home, "accept", p["id"]).returncode == 0
    assert (workspace / CONF).read_bytes() == expected
    assert _aider_reads(workspace) == [*had, "AGENTS.md"] and _aider_reads_index(workspace)
    assert oct((workspace / CONF).stat().st_mode & 0o777) == "0o640"
    assert _rows(workspace, home)["aider"]["wired"] is True
    assert _run(workspace, home, "undo", p["id"]).returncode == 0
    assert (workspace / CONF).read_bytes() == conf


@pytest.mark.parametrize("entry", ["AGENTS.md", "./AGENTS.md", "{ws}/AGENTS.md"])
def test_an_entry_already_there_is_never_added_again(tmp_path: Path, workspace: Path, entry: str) -> None:
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    conf = f"read:\n  - CONVENTIONS.md\n  - {entry.format(ws=workspace)}\n".encode()
    (workspace / CONF).write_bytes(conf)
    (workspace / "AGENTS.md").write_text("# Rules\n\nSmall commits.\n")
    row = _rows(workspace, home)["aider"]
    assert row["wired"] is False and row["targets"] == ["AGENTS.md"], row  # aider reads it; it lacks the pointer
    wired = _json(workspace, home, "agents", "wire", "aider")
    assert [(p["target"], p["agents"]) for p in wired["proposals"]] == [("AGENTS.md", ["aider"])]
    assert _run(workspace, home, "accept", wired["proposals"][0]["id"]).returncode == 0
    assert (workspace / CONF).read_bytes() == conf
    assert _aider_reads_index(workspace)
    out = _json(workspace, home, "agents", "wire", "aider")
    assert out["proposals"] == [] and out["wired"] == ["aider"]


@pytest.mark.parametrize("conf", [
    b"read: [CONVENTIONS.md\nmodel: sonnet\n",  # not YAML: aider refuses to start with it too
    b"- read\n- AGENTS.md\n",  # not a mapping
    b"{model: sonnet, read: [a.md]}\n",  # a flow mapping
    b"files: &f [a.md]\nread: *f\n",  # an alias
    b"read: |\n  CONVENTIONS.md\n",  # a block scalar
    b"read: a.md\nmodel: sonnet\nread: b.md\n",  # the key twice
    b"read: [1, {a: b}]\n",  # not file names
    # no mapping at all: aider exits ("doesn't appear to contain 'key: value' pairs ... returned type 'NoneType'")
    b"", b"# only a comment\n", b"---\n", b"null\n",
])
def test_a_config_the_edit_cannot_place_safely_is_refused_with_a_code_and_left_alone(
        tmp_path: Path, workspace: Path, conf: bytes) -> None:
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)
    (workspace / CONF).write_bytes(conf)
    before = _visible(workspace)
    r = _run(workspace, home, "agents", "wire", "aider", "--json")
    assert r.returncode == 1, r.stderr
    assert f"cairn: E_CONFIG_INVALID: {CONF}: " in r.stderr, r.stderr
    assert ("by hand" if conf.startswith((b"{", b"files", b"read: |", b"read: a", b"read: [1")) else "fix it") \
        in r.stderr, r.stderr
    out = json.loads(r.stdout)
    assert out["proposals"] == [] and [(f["target"], f["code"]) for f in out["refused"]] == [
        (CONF, "E_CONFIG_INVALID")]
    assert _visible(workspace) == before
    if conf.startswith(b"read: [CONVENTIONS") or not conf.strip(b"-\n") or conf.startswith((b"#", b"null")):
        # aider would not start: the row says why
        assert [p["code"] for p in _rows(workspace, home)["aider"]["problems"]] == ["E_CONFIG_INVALID"]


def test_the_users_own_config_counts_when_the_workspace_sets_no_read(tmp_path: Path, workspace: Path) -> None:
    """~/.aider.conf.yml's `read:` is aider's when the workspace's config sets none; a workspace `read:`
    replaces it whole, so the wiring keeps the user's entries in the one it writes."""
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    _history(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)
    (home / CONF).write_text("read: AGENTS.md\n")
    row = _rows(workspace, home)["aider"]
    assert row["wired"] is True and row["via"] == {"file": str(home / CONF), "mechanism": "pointer",
                                                   "through": ["AGENTS.md"], "link": None}, row
    assert _aider_reads_index(workspace, home)

    (home / CONF).write_text("read: [~/conventions/python.md]\n")
    (workspace / CONF).write_text("model: sonnet\nread: []\n")  # sets nothing: the home's read still counts
    assert _aider_reads(workspace, home) == ["~/conventions/python.md"]
    (p,) = _json(workspace, home, "agents", "wire", "aider")["proposals"]
    assert _run(workspace, home, "accept", p["id"]).returncode == 0
    assert (workspace / CONF).read_text() == "model: sonnet\nread: [~/conventions/python.md, AGENTS.md]\n"
    assert _aider_reads(workspace, home) == ["~/conventions/python.md", "AGENTS.md"]
    assert _rows(workspace, home)["aider"]["wired"] is True


def test_aider_on_the_path_alone_is_no_use_of_this_workspace(tmp_path: Path, workspace: Path) -> None:
    """An installed aider says nothing about this project: no row, and `wire` creates no config here."""
    home = make_home(tmp_path, workspace, ())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "aider").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "aider").chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    assert "aider" not in _rows(workspace, home, PATH=path)
    r = _run(workspace, home, "agents", "wire", "aider", PATH=path)
    assert r.returncode == 2 and "cairn: E_AGENT_NOT_IN_USE: aider" in r.stderr, r.stderr
    (workspace / CONF).write_text("model: sonnet\n")  # its config is a use of it
    assert _rows(workspace, home)["aider"]["files"] == [CONF]


def test_a_read_entry_naming_the_memory_folder_wires_aider_and_a_folder_is_no_problem(
        tmp_path: Path, workspace: Path) -> None:
    """aider opens every file of a folder listed under `read:`: `.agents/memory` brings the index itself."""
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / "docs").mkdir()
    (workspace / "docs" / "spec.md").write_bytes(b"x" * (2 << 20))  # larger than cairn reads: not aider's concern
    (workspace / CONF).write_text("read: [docs, docs/spec.md, .agents/memory]\n")
    row = _rows(workspace, home)["aider"]
    assert row["wired"] is True and row["problems"] == [], row
    assert row["via"] == {"file": CONF, "mechanism": "import", "through": [], "link": None}
    assert _json(workspace, home, "agents", "wire", "aider")["proposals"] == []
