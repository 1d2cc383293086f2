"""docs/agents.md is where a user learns how to give each agent cairn's MCP tools: it must say what the server serves.

The tools are listed by the real server (``cairn mcp`` over stdio, the SDK's
own client) and compared with the doc's table; each agent that ``cairn agents
wire`` wires has a configuration snippet that runs ``cairn mcp -w``, every
JSON or TOML snippet parses, and the README points to the page instead of
repeating the snippets.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.support import PYTHON, REPO, child_env

DOC = (REPO / "docs" / "agents.md").read_text()
MCP = DOC[DOC.index("## MCP: cairn's tools for agents"):]
#: each agent wire makes read the memory -> how its snippet is introduced in the MCP section
AGENTS = {"claude-code": "Claude Code", "codex": "Codex", "gemini-cli": "Gemini CLI", "qwen-code": "Qwen Code",
          "copilot": "GitHub Copilot", "cursor": "Cursor"}


@pytest.mark.asyncio
async def test_the_tools_the_doc_lists_are_the_ones_the_server_serves(workspace: Path) -> None:
    params = StdioServerParameters(command=PYTHON, args=["-m", "cairn.server", "mcp", "-w", str(workspace)],
                                   cwd=str(REPO), env=child_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        served = {t.name for t in (await session.list_tools()).tools}
    table = MCP[MCP.index("| tool |"):].split("\n\n", 1)[0]
    documented = set(re.findall(r"(?m)^\| `([a-z_]+)` \|", table))
    assert documented == served


def _blocks(text: str) -> list[tuple[str, str, str]]:
    """(the paragraph before, language, body) of each fenced block."""
    return [(text[:m.start()].rstrip().split("\n\n")[-1], m.group(1), m.group(2))
            for m in re.finditer(r"(?m)^```(\w*)\n(.*?)^```$", text, re.S)]


def test_each_wired_agent_has_a_snippet_that_runs_cairn_mcp() -> None:
    found: dict[str, str] = {}
    for intro, lang, body in _blocks(MCP):
        if lang == "json":
            servers = json.loads(body)
            entry = (servers.get("mcpServers") or servers.get("servers"))["cairn"]
            command = [entry["command"], *entry["args"]]
        elif lang == "toml":
            entry = tomllib.loads(body)["mcp_servers"]["cairn"]
            command = [entry["command"], *entry["args"]]
        else:
            command = body.split(" -- ", 1)[-1].split()
        assert command[:3] == ["cairn", "mcp", "-w"], (intro, body)
        for agent, name in AGENTS.items():
            if name in intro.split(",")[0]:
                found.setdefault(agent, body)
    missing = set(AGENTS) - set(found) - {"qwen-code"}
    assert not missing, missing
    # Qwen Code takes Gemini CLI's `mcpServers` entry: the doc says so in its own paragraph
    assert re.search(r"Qwen Code, `\.qwen/settings\.json`[^\n]*\n[^\n]*\n`mcpServers` entry as Gemini CLI", MCP)


def test_the_readme_points_to_the_doc_and_does_not_repeat_the_snippets() -> None:
    readme = (REPO / "README.md").read_text()
    assert "docs/agents.md" in readme
    assert "mcpServers" not in readme and "[mcp_servers" not in readme and "claude mcp add" not in readme
