"""``cairn agents`` and aider configs aider itself refuses, or that would make the listing, the wiring or the
editor's status counts fail or hang.

aider parses ``.aider.conf.yml`` with PyYAML's safe loader through
ConfigArgParse (bw2/ConfigArgParse ``YAMLConfigFileParser.parse``): any
exception of the load is "Couldn't parse config file", and a document that is
no mapping, an empty one too (``None``), is "doesn't appear to contain 'key:
value' pairs"; either way aider exits before its first chat (measured on
aider-chat 0.86.2: an empty and a comment-only file exit 2). cairn must then
show the aider row with ``E_CONFIG_INVALID`` and nothing else change: every
other agent listed and wired as before, the status counts given. Real CLI,
real files, a synthetic home.
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
from tests.support import child_env
from tests.support.warm import run_python

CONF = ".aider.conf.yml"
POINTER = "# Rules\n\nAt the start of a task read `.agents/memory/MEMORY.md`.\n"


def _run(ws: Path, home: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    if timeout == 300:
        r = cairn(ws, *argv, env=env_for(home), check=False)
    else:  # a bound of its own: a hang fails in that time, not after the helper's five minutes
        r = run_python(["-m", "cairn.server", *argv, "-w", str(ws)], env=child_env(**env_for(home)), timeout=timeout)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def _rows(ws: Path, home: Path, timeout: float = 300) -> dict[str, dict[str, Any]]:
    r = _run(ws, home, "agents", "--json", timeout=timeout)
    assert r.returncode == 0, r.stderr
    return {row["agent"]: row for row in json.loads(r.stdout)}


def _visible(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*"))
            if p.is_file() and not str(p.relative_to(ws)).startswith(".cairn/")}


def _status(ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The editor's ``cairn/status`` counts, as the language server reads them (in its own process)."""
    from cairn.worker.jobs.status import read_status

    for name, value in env_for(home).items():
        monkeypatch.setenv(name, value)
    return read_status(str(ws))


#: configs PyYAML raises on with something else than a YAMLError; aider refuses every one of them
UNCONSTRUCTIBLE = {
    "month-13": b"since: 2024-13-45\n",  # ValueError
    "feb-30": b"model: sonnet\nx: 2024-02-30\nread: AGENTS.md\n",  # ValueError, the read fine
    "bad-int": b"map-tokens: !!int many\n",  # ValueError
    "bad-bool": b"dark-mode: !!bool maybe\n",  # KeyError
    "bad-timestamp": b"x: !!timestamp 'soon'\n",  # AttributeError
    "deep": b"read: " + b"[" * 20000 + b"]" * 20000 + b"\n",  # RecursionError
}


@pytest.mark.parametrize("case", sorted(UNCONSTRUCTIBLE))
def test_a_config_pyyaml_cannot_construct_is_a_problem_of_the_aider_row_and_nothing_else_fails(
        tmp_path: Path, workspace: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cairn agents` was E_INTERNAL (exit 3) with no agent listed, `wire` of any agent and the status counts
    raised: only yaml.YAMLError was caught."""
    home = make_home(tmp_path, workspace, ("claude-code",))
    memory(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)
    (workspace / CONF).write_bytes(UNCONSTRUCTIBLE[case])

    rows = _rows(workspace, home)
    assert sorted(rows) == ["aider", "claude-code", "codex"], rows
    assert [(p["file"], p["code"]) for p in rows["aider"]["problems"]] == [(CONF, "E_CONFIG_INVALID")], rows
    assert "aider refuses to start with it too; fix it" in rows["aider"]["problems"][0]["message"]
    assert rows["aider"]["wired"] is False and rows["codex"]["wired"] is True
    listing = _run(workspace, home, "agents")
    assert listing.returncode == 0 and f"{CONF} refused (E_CONFIG_INVALID, not edited)" in listing.stdout, listing

    assert _status(workspace, home, monkeypatch)["unwiredAgents"] == 2  # claude-code and aider

    before = _visible(workspace)
    r = _run(workspace, home, "agents", "wire", "claude-code", "--json")
    assert r.returncode == 0, r.stderr
    assert [(p["target"], p["agents"]) for p in json.loads(r.stdout)["proposals"]] == [("CLAUDE.md", ["claude-code"])]
    r = _run(workspace, home, "agents", "wire", "aider", "--json")
    assert r.returncode == 1 and f"cairn: E_CONFIG_INVALID: {CONF}: " in r.stderr and "fix it" in r.stderr, r.stderr
    assert json.loads(r.stdout)["proposals"] == []
    assert _visible(workspace) == before


def test_the_users_aider_config_is_read_only_when_aider_is_in_use(
        tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`agents wire` read ~/.aider.conf.yml for every wiring, aider in use or not, so a broken one there broke
    `agents wire claude-code` in a workspace aider never saw; the listing reads it only when aider is in use."""
    from cairn.protocol.worker import WorkerRequest
    from cairn.worker.jobs import agents as jobs

    home = make_home(tmp_path, workspace, ("claude-code",))
    memory(workspace)
    (home / CONF).write_bytes(b"since: 2024-13-45\n")
    for name, value in env_for(home).items():
        monkeypatch.setenv(name, value)
    read: list[str] = []
    real = jobs._read
    def recorded(path: str) -> object:
        read.append(path)
        return real(path)

    monkeypatch.setattr(jobs, "_read", recorded)

    out = jobs.job_wire(WorkerRequest(job="agents-wire", workspace=str(workspace), args={"agents": ["claude-code"]}))
    assert [(p.target, p.agents) for p in out.proposals] == [("CLAUDE.md", ("claude-code",))] and not out.refused
    assert str(home / CONF) not in read, read

    (workspace / ".aider.chat.history.md").write_text("# aider chat started at 2025-01-01 10:00:00\n")
    rows = {r["agent"]: r for r in jobs.report(str(workspace), str(home), os.environ, scan=False)}
    assert str(home / CONF) in read  # aider is in use now: its user config decides what it reads
    assert [(p["file"], p["code"]) for p in rows["aider"]["problems"]] == [(str(home / CONF), "E_CONFIG_INVALID")]
    r = _run(workspace, home, "agents", "wire", "claude-code", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["refused"] == [], r.stderr  # the row's problem, no more


def _bomb(levels: int = 40) -> bytes:
    """Aliases doubling at each level: 2**40 names once turned into text (905 bytes as reported)."""
    lines = ["a0: &a0 [x, x]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, levels)]
    return ("\n".join(lines) + f"\nread: [*a{levels - 1}]\n").encode()


BOUNDED = {
    "bomb-list": _bomb(),
    "bomb-scalar": _bomb().replace(b"read: [*a39]", b"read: *a39"),
    "bomb-mapping": _bomb() + b"more: 1\n",  # read stays the bomb; another key after it
    "bomb-item-mapping": _bomb().replace(b"read: [*a39]", b"read: [{k: *a39}]"),
}


@pytest.mark.parametrize("case", sorted(BOUNDED))
def test_aliases_that_grow_exponentially_never_hang_the_listing_nor_the_status_counts(
        tmp_path: Path, workspace: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cairn agents` hung on a 905-byte config: every `read:` item was turned into text, aliases expanded."""
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / CONF).write_bytes(BOUNDED[case])
    assert len(BOUNDED[case]) < 1000
    row = _rows(workspace, home, timeout=60)["aider"]
    assert [(p["file"], p["code"]) for p in row["problems"]] == [(CONF, "E_CONFIG_INVALID")], row
    assert "not a file name" in row["problems"][0]["message"]
    assert _status(workspace, home, monkeypatch)["unwiredAgents"] == 1
    r = _run(workspace, home, "agents", "wire", "aider", "--json", timeout=60)
    assert r.returncode == 1 and f"cairn: E_CONFIG_INVALID: {CONF}: " in r.stderr, r.stderr


def test_an_alias_of_a_file_name_is_read_as_aider_reads_it_and_each_name_once(
        tmp_path: Path, workspace: Path) -> None:
    """A scalar alias is no expansion: the name itself, as aider takes it; repeated, it is looked at once."""
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)
    long = "docs/" + "x" * 20000 + ".md"
    (workspace / CONF).write_text(f"rules: &r AGENTS.md\nlong: &l {long}\nread: [{', '.join(['*l'] * 4000)}, *r]\n")
    conf = yaml.safe_load((workspace / CONF).read_text())
    assert conf["read"][-1] == "AGENTS.md" and len(conf["read"]) == 4001
    row = _rows(workspace, home, timeout=60)["aider"]
    assert row["wired"] is True and row["problems"] == [], row
    assert row["via"] == {"file": CONF, "mechanism": "pointer", "through": ["AGENTS.md"], "link": None}


def test_a_config_larger_than_any_aider_config_is_not_read(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / CONF).write_text("read:\n" + "".join(f"  - docs/file-{i}.md\n" for i in range(5000)))
    assert (workspace / CONF).stat().st_size > 64 * 1024
    row = _rows(workspace, home, timeout=60)["aider"]
    assert [(p["file"], p["code"]) for p in row["problems"]] == [(CONF, "E_RECORD_TOO_LARGE")], row


@pytest.mark.parametrize("conf", [b"", b"# aider settings, none yet\n", b"---\n", b"~\n"])
def test_an_empty_config_is_one_aider_refuses_and_the_users_read_does_not_count_through_it(
        tmp_path: Path, workspace: Path, conf: bytes) -> None:
    """It counted as "sets nothing": the user's `read:` was taken and aider shown wired, yet aider exits on it
    ("The config file doesn't appear to contain 'key: value' pairs ... returned type 'NoneType'")."""
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)
    (home / CONF).write_text("read: AGENTS.md\n")
    (workspace / CONF).write_bytes(conf)
    assert yaml.safe_load(conf) is None  # what ConfigArgParse refuses

    row = _rows(workspace, home)["aider"]
    assert row["wired"] is False and row["targets"] == [CONF], row
    assert [(p["file"], p["code"]) for p in row["problems"]] == [(CONF, "E_CONFIG_INVALID")], row
    assert "holds no options" in row["problems"][0]["message"]
    before = _visible(workspace)
    r = _run(workspace, home, "agents", "wire", "aider", "--json")
    assert r.returncode == 1 and "fix it" in r.stderr and json.loads(r.stdout)["proposals"] == [], r.stderr
    assert _visible(workspace) == before


def test_an_empty_user_config_is_a_problem_of_the_aider_row(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ())
    (workspace / ".aider.chat.history.md").write_text("# aider chat started at 2025-01-01 10:00:00\n")
    (home / CONF).write_bytes(b"# nothing yet\n")
    row = _rows(workspace, home)["aider"]
    assert [(p["file"], p["code"]) for p in row["problems"]] == [(str(home / CONF), "E_CONFIG_INVALID")], row


def test_a_wiring_that_redaction_would_rewrite_is_refused_and_the_config_kept(
        tmp_path: Path, workspace: Path) -> None:
    """Redaction ran over the line the entry joins: `read: [[REDACTED:aws_access_key_id].md, AGENTS.md]  #
    [REDACTED:github_token]`, which aider cannot parse, and the user's bytes rewritten."""
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / "AGENTS.md").write_text("# Rules\n\nSmall commits.\n")  # no pointer: a second proposal
    conf = b"model: x\nread: [AKIAIOSFODNN7EXAMPLE.md]  # ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"
    (workspace / CONF).write_bytes(conf)

    r = _run(workspace, home, "agents", "wire", "aider", "--json")
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert [(p["target"], p["agents"]) for p in out["proposals"]] == [("AGENTS.md", ["aider"])]
    assert [(f["target"], f["code"]) for f in out["refused"]] == [(CONF, "E_CONFIG_INVALID")]
    assert "looks like a secret" in r.stderr and "add AGENTS.md to its `read:` by hand" in r.stderr, r.stderr
    # the AGENTS.md proposal was made: the line says the config is what is missing, not that nothing was proposed
    assert "(nothing proposed for .aider.conf.yml; aider not wired by the other proposal alone)" in r.stderr, r.stderr
    assert "aider not wired; nothing proposed for it" not in r.stderr
    assert _run(workspace, home, "accept", out["proposals"][0]["id"]).returncode == 0
    assert (workspace / CONF).read_bytes() == conf
    assert yaml.safe_load(conf)["read"] == ["AKIAIOSFODNN7EXAMPLE.md"]


def test_the_users_entries_copied_to_the_workspace_are_never_redacted(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)
    (workspace / CONF).write_text("model: x\n")
    (home / CONF).write_text("read: [~/keys/AKIAIOSFODNN7EXAMPLE.md]\n")
    r = _run(workspace, home, "agents", "wire", "aider", "--json")
    assert r.returncode == 1 and "looks like a secret" in r.stderr, r.stderr
    assert json.loads(r.stdout)["proposals"] == []
    assert (workspace / CONF).read_text() == "model: x\n"
    assert "(nothing proposed for .aider.conf.yml; aider not wired)" in r.stderr, r.stderr


def test_a_user_entry_yaml_would_read_as_something_else_is_written_quoted(tmp_path: Path, workspace: Path) -> None:
    """`2024-13-45` looks plain but is no date PyYAML can build: quoting it was a crash (ValueError)."""
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)
    (workspace / CONF).write_text("model: x\n")
    (home / CONF).write_text('read: ["2024-13-45", "2024-01-01", "true"]\n')
    (p,) = json.loads(_run(workspace, home, "agents", "wire", "aider", "--json").stdout)["proposals"]
    assert _run(workspace, home, "accept", p["id"]).returncode == 0
    assert (workspace / CONF).read_text() == ('model: x\nread:\n  - "2024-13-45"\n  - "2024-01-01"\n  - "true"\n'
                                             "  - AGENTS.md\n")
    assert yaml.safe_load((workspace / CONF).read_text())["read"] == ["2024-13-45", "2024-01-01", "true", "AGENTS.md"]
