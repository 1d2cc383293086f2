"""``cairn mcp``: every topic ``memory_list`` lists can be read, the user's own memory roots and the project's
rules included; the root and the home folder are never served; a boolean is no integer.

The SDK's own stdio client against the real server, a real workspace and a home with a user config.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.support import PYTHON, REPO, child_env

pytestmark = pytest.mark.asyncio

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _home(tmp_path: Path) -> Path:
    """A home whose cairn config names a personal memory root, ``~/.agents/memory``, holding one topic."""
    home = tmp_path / "home"
    (home / ".config" / "cairn").mkdir(parents=True)
    (home / ".config" / "cairn" / "config.toml").write_text('memory_roots = ["~/.agents/memory"]\n')
    mine = home / ".agents" / "memory"
    mine.mkdir(parents=True)
    (mine / "concise.md").write_text("---\nname: Concise answers\ndescription: no emojis\ntype: user\n---\n\n"
                                     "- I prefer concise answers without emojis\n")
    (mine / "MEMORY.md").write_text("# Memory\n\n- [Concise answers](concise.md) - no emojis\n")
    return home


def _params(ws: Path, home: Path) -> StdioServerParameters:
    env = {k: v for k, v in child_env(HOME=str(home)).items() if not k.startswith("XDG_")}
    return StdioServerParameters(command=PYTHON, args=["-m", "cairn.server", "mcp", "-w", str(ws)], cwd=str(REPO),
                                 env=env)


def _text(result: Any) -> str:
    return str(result.contents[0].text)


async def test_every_topic_memory_list_lists_can_be_read_the_users_own_too(workspace: Path, tmp_path: Path) -> None:
    home = _home(tmp_path)
    ws_root = workspace / ".agents" / "memory"
    ws_root.mkdir(parents=True)
    (ws_root / "money.md").write_text("---\nname: Money\ndescription: cents\ntype: project\n---\n\n- Integer cents\n")
    (ws_root / "MEMORY.md").write_text("# Memory\n\n- [Money](money.md) - cents\n")
    async with stdio_client(_params(workspace, home)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.call_tool("memory_list", {})
        assert not listed.is_error, listed.content
        topics = listed.structured_content["topics"]
        assert {Path(t["file"]).name for t in topics} == {"money.md", "concise.md"}
        for t in topics:  # the resource each row names, and the one a client builds from the file name
            for uri in (t["uri"], f"cairn://memory/topic/{Path(t['file']).name}"):
                body = _text(await session.read_resource(uri))
                assert body == Path(t["file"] if os.path.isabs(t["file"]) else workspace / t["file"]).read_text()
        index = _text(await session.read_resource("cairn://memory/index"))
        assert index.startswith("# Memory\n\n- [Money](money.md) - cents\n")  # the project's own, first
        assert "- [Concise answers](concise.md) - no emojis" in index and str(home / ".agents/memory") in index
        listed_json = json.loads(_text(await session.read_resource("cairn://memory/topics")))
        assert all(t["uri"] for t in listed_json)


async def test_a_topic_name_in_both_roots_is_read_from_each(workspace: Path, tmp_path: Path) -> None:
    home = _home(tmp_path)
    ws_root = workspace / ".agents" / "memory"
    ws_root.mkdir(parents=True)
    (ws_root / "concise.md").write_text("---\nname: Concise code\ndescription: d\ntype: project\n---\n\n- Short\n")
    async with stdio_client(_params(workspace, home)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        topics = (await session.call_tool("memory_list", {})).structured_content["topics"]
        bodies = {_text(await session.read_resource(t["uri"])) for t in topics}
        assert len(topics) == 2 and len(bodies) == 2
        assert "Concise code" in _text(await session.read_resource("cairn://memory/topic/concise.md"))


async def test_the_rules_of_agents_md_are_served_read_only_never_through_a_link_out(workspace: Path,
                                                                                   tmp_path: Path) -> None:
    home = _home(tmp_path)
    agents = workspace / "AGENTS.md"
    agents.write_text("# Rules\n\n## Working agreements\n\n- Never push directly to main\n")
    async with stdio_client(_params(workspace, home)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        assert "cairn://instructions/AGENTS.md" in {str(r.uri) for r in (await session.list_resources()).resources}
        assert _text(await session.read_resource("cairn://instructions/AGENTS.md")) == agents.read_text()
        listed = (await session.call_tool("memory_list", {})).structured_content
        assert listed["instructions"] == [{"file": "AGENTS.md", "uri": "cairn://instructions/AGENTS.md"}]
        creds = tmp_path / "credentials"
        creds.write_text(f"token = {SECRET}\n")
        agents.unlink()
        agents.symlink_to(creds)
        with pytest.raises(MCPError) as info:
            await session.read_resource("cairn://instructions/AGENTS.md")
        assert ": E_PATH_SYMLINK: " in str(info.value) and SECRET not in str(info.value)
        listed = (await session.call_tool("memory_list", {})).structured_content
        assert listed["instructions"] == [{"file": "AGENTS.md", "uri": None, "error": "E_PATH_SYMLINK"}]
        agents.unlink()
        os.mkfifo(agents)  # no writer: a blocking open would hang the server
        with pytest.raises(MCPError, match=": E_PATH_NOT_REGULAR: "):
            await session.read_resource("cairn://instructions/AGENTS.md")
        for uri in ("cairn://instructions/CLAUDE.md", "cairn://instructions/..%2Fcredentials"):
            with pytest.raises(MCPError, match=": E_NOT_FOUND: "):
                await session.read_resource(uri)


async def test_a_boolean_limit_is_refused_like_any_other_bad_type(workspace: Path, tmp_path: Path) -> None:
    async with stdio_client(_params(workspace, _home(tmp_path))) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        for value in (True, False):
            bad = await session.call_tool("journal_search", {"limit": value})
            text = bad.content[0].text  # type: ignore[union-attr]
            assert bad.is_error and "Error executing tool journal_search: E_USAGE: limit: " in text, text
        ok = await session.call_tool("journal_search", {"limit": 3})
        assert not ok.is_error and ok.structured_content == {"digests": []}


@pytest.mark.parametrize("where", ["root", "home", "home-by-dot"])
async def test_the_file_system_root_and_the_home_folder_are_not_served(tmp_path: Path, where: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    ws, cwd = {"root": ("/", home), "home": (str(home), tmp_path), "home-by-dot": (".", home)}[where]
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "remember", "arguments": {"text": "Use make check"}}})
    r = subprocess.run([PYTHON, "-m", "cairn.server", "mcp", "-w", ws], input=f"{init}\n{call}\n".encode(),
                       cwd=cwd, env=child_env(HOME=str(home)), capture_output=True, timeout=120)
    err = r.stderr.decode()
    assert r.returncode != 0 and "E_WORKSPACE_INVALID" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (home / ".cairn").exists() and not os.path.exists("/.cairn")
