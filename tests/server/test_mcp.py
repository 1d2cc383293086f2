"""``cairn mcp`` end to end: the SDK's own stdio client against the real server, a real workspace."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.support import PYTHON, REPO, child_env

pytestmark = pytest.mark.asyncio

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _params(ws: Path) -> StdioServerParameters:
    return StdioServerParameters(command=PYTHON, args=["-m", "cairn.server", "mcp", "-w", str(ws)], cwd=str(REPO),
                                 env=child_env())


class RawToolCall(types.Request[dict[str, Any] | None, Literal["tools/call"]]):
    """A ``tools/call`` whose params go out as given: the client's own ``call_tool`` refuses to send them."""

    method: Literal["tools/call"] = "tools/call"
    params: dict[str, Any] | None = None


def _structured(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


async def test_an_agent_remembers_searches_and_lists_through_the_sdk(workspace: Path) -> None:
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    cairn(workspace, "process")
    async with stdio_client(_params(workspace)) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        from cairn.server import version
        assert (init.server_info.name, init.server_info.version) == ("cairn", version())  # the version was ""
        tools = {t.name for t in (await session.list_tools()).tools}
        assert tools == {"remember", "journal_search", "memory_list"}

        out = _structured(await session.call_tool("remember", {"text": "Run database migrations with "
                                                              f"`make migrate`, token {SECRET}",
                                                              "type": "project"}))
        [p] = out["proposals"]
        assert out["reviewed"] and p["state"] == "pending" and SECRET not in json.dumps(out)
        # it arrives as a reviewable proposal, like any other
        assert [r["id"] for r in cairn_json(workspace, "proposals") if r["id"] == p["id"]] == [p["id"]]
        assert not (workspace / ".agents/memory").exists()

        found = _structured(await session.call_tool("journal_search", {"query": "staging friday"}))
        [d] = found["digests"]
        assert d["turn_ids"] and all("Friday" in n["body"] for n in d["notes"])
        typed = _structured(await session.call_tool("journal_search", {"type": "reference"}))["digests"]
        assert typed and all(n["type"] == "reference" for d in typed for n in d["notes"])
        assert _structured(await session.call_tool("journal_search", {"until": "2000-01-01"}))["digests"] == []
        assert _structured(await session.call_tool("journal_search", {"since": "2000-01-01", "limit": 1}))[
            "digests"]

        for args, code in [({"text": ""}, "E_USAGE"), ({"text": "a b", "type": "opinion"}, "E_USAGE"),
                           ({"text": "z" * 3000}, "E_RECORD_TOO_LARGE")]:
            bad = await session.call_tool("remember", args)
            assert bad.is_error and f": {code}: " in bad.content[0].text, bad.content  # type: ignore[union-attr]
        bad = await session.call_tool("journal_search", {"since": "yesterday"})
        assert bad.is_error and "E_USAGE" in bad.content[0].text  # type: ignore[union-attr]

        assert _structured(await session.call_tool("memory_list", {}))["topics"] == []
        cairn(workspace, "accept", p["id"])
        [topic] = _structured(await session.call_tool("memory_list", {}))["topics"]
        assert topic["type"] == "project"

        index = await session.read_resource("cairn://memory/index")
        assert "make migrate" in index.contents[0].text  # type: ignore[union-attr]
        name = Path(topic["file"]).name
        body = await session.read_resource(f"cairn://memory/topic/{name}")
        assert "make migrate" in body.contents[0].text and SECRET not in body.contents[0].text  # type: ignore[union-attr]
        listed = await session.read_resource("cairn://memory/topics")
        assert json.loads(listed.contents[0].text)[0]["file"] == topic["file"]  # type: ignore[union-attr]
        for uri in ("cairn://memory/topic/..%2FAGENTS.md", "cairn://memory/topic/nope.md"):
            with pytest.raises(MCPError, match=": E_NOT_FOUND: "):
                await session.read_resource(uri)


async def test_memory_resources_never_serve_a_linked_file_and_never_block(workspace: Path, tmp_path: Path) -> None:
    """A cloned repository whose MEMORY.md or topic links to a credentials file must not hand it to the agent."""
    creds = tmp_path / "credentials"
    creds.write_text(f"aws_secret_access_key = {SECRET}\n")
    mem = workspace / ".agents/memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").symlink_to(creds)
    (mem / "keys.md").symlink_to(creds)
    os.mkfifo(mem / "pipe.md")  # no writer: a blocking open would hang the server
    async with stdio_client(_params(workspace)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for uri in ("cairn://memory/index", "cairn://memory/topic/keys.md", "cairn://memory/topic/pipe.md"):
            with pytest.raises(MCPError) as info:
                await session.read_resource(uri)
            assert SECRET not in str(info.value) and str(info.value).startswith("Error"), str(info.value)


async def test_a_shipped_state_folder_is_refused_with_its_code(tmp_path: Path) -> None:
    """A repository that committed ``.cairn/state`` (ADR 0011): a tool answers the code, never a traceback."""
    from tests.support.shipped import clone_like

    src = tmp_path / "source"
    src.mkdir()
    cairn(src, "run", str(DEMO))
    ws = clone_like(src, tmp_path / "clone")
    async with stdio_client(_params(ws)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        bad = await session.call_tool("remember", {"text": "Run migrations with make migrate", "type": "project"})
        assert bad.is_error and ": E_STATE_FOREIGN: " in bad.content[0].text, bad.content  # type: ignore[union-attr]
        assert "Traceback" not in bad.content[0].text  # type: ignore[union-attr]
    assert not list((ws / ".cairn/state/memory").rglob("remember*"))


async def test_bad_arguments_and_unreadable_topics_answer_a_code_and_log_no_traceback(workspace: Path,
                                                                                      tmp_path: Path) -> None:
    """Wrong argument types are ``E_USAGE`` naming the field (not the SDK's validation text); a topic that
    is linked, not a regular file or over 4 MiB is refused with its code; stderr: one line per failure."""
    creds = tmp_path / "credentials"
    creds.write_text(f"aws_secret_access_key = {SECRET}\n")
    mem = workspace / ".agents/memory"
    mem.mkdir(parents=True)
    (mem / "keys.md").symlink_to(creds)
    os.mkfifo(mem / "pipe.md")
    (mem / "folder.md").mkdir()
    (mem / "huge.md").write_bytes(b"x" * ((4 << 20) + 1))
    errlog = tmp_path / "mcp-stderr.txt"
    failures = 0
    with errlog.open("w") as err:
        async with stdio_client(_params(workspace), errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            cases: list[tuple[str, dict[str, Any], str]] = [
                ("journal_search", {"limit": "ten"}, "limit"), ("remember", {"text": 5}, "text"),
                ("remember", {}, "text"), ("journal_search", {"query": ["a"]}, "query"),
                ("remember", {"text": "Use make check", "type": 3}, "type")]
            for tool, args, field in cases:
                bad = await session.call_tool(tool, args)
                text = bad.content[0].text  # type: ignore[union-attr]
                assert bad.is_error and f"Error executing tool {tool}: E_USAGE: {field}: " in text, text
                assert "validation error" not in text and "input_value" not in text and "pydantic" not in text
                failures += 1
            bad = await session.call_tool("forget", {"text": "x"})
            assert bad.is_error and ": E_METHOD_UNKNOWN: " in bad.content[0].text, bad.content  # type: ignore[union-attr]
            failures += 1
            for name, code in [("keys.md", "E_PATH_SYMLINK"), ("pipe.md", "E_PATH_NOT_REGULAR"),
                               ("folder.md", "E_PATH_NOT_REGULAR"), ("huge.md", "E_RECORD_TOO_LARGE"),
                               ("nope.md", "E_NOT_FOUND")]:
                with pytest.raises(MCPError) as info:
                    await session.read_resource(f"cairn://memory/topic/{name}")
                assert f": {code}: " in str(info.value) and SECRET not in str(info.value), str(info.value)
                failures += 1
            # the server is still serving
            assert _structured(await session.call_tool("journal_search", {"limit": 5})) == {"digests": []}
    log = errlog.read_text()
    assert "Traceback" not in log, log
    lines = log.splitlines()
    assert len(lines) <= failures and all(re.search(r"\(E_[A-Z_]+", line) for line in lines), log
    assert SECRET not in log


async def test_a_remembered_text_with_escapes_is_cleaned_and_reviews_go_on(workspace: Path) -> None:
    """An agent's text with a colour escape and a BEL: a clean proposal, and every later review still runs."""
    async with stdio_client(_params(workspace)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out = _structured(await session.call_tool("remember", {"text": "Run \x1b[1mmake migrate\x1b[0m first\x07",
                                                              "type": "project"}))
        [p] = out["proposals"]
        assert p["title"] == "New project memory: Run make migrate first"
        again = _structured(await session.call_tool("remember", {"text": "Releases are tagged on Mondays"}))
        assert again["reviewed"] and again["proposals"]
    cairn(workspace, "process")
    assert cairn(workspace, "review").returncode == 0
    cairn(workspace, "accept", p["id"])
    for topic in (workspace / ".agents/memory").glob("*.md"):
        assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", topic.read_bytes()), topic


async def test_a_tool_call_with_malformed_params_answers_e_usage_naming_the_field(workspace: Path,
                                                                                  tmp_path: Path) -> None:
    """``arguments`` that is no object, a missing or non-string ``name``, no ``params`` at all: the SDK
    answered a bare ``-32602 Invalid request parameters`` (no code, nothing said of what was wrong). The
    answer keeps JSON-RPC's code and carries cairn's: ``E_USAGE: tools/call: FIELD: ...``, and
    ``data.code``, as over LSP; stderr: one plain line per refusal, no traceback."""
    errlog = tmp_path / "mcp-stderr.txt"
    cases: list[tuple[dict[str, Any] | None, str]] = [
        ({"name": "remember", "arguments": "Run make check"}, "arguments"),
        ({"name": "journal_search", "arguments": ["staging"]}, "arguments"),
        ({"arguments": {"text": "Run make check"}}, "name"),
        ({"name": 5, "arguments": {}}, "name"),
        (None, "params"),
    ]
    with errlog.open("w") as err:
        async with stdio_client(_params(workspace), errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for params, field in cases:
                with pytest.raises(MCPError) as info:
                    await session.send_request(RawToolCall(params=params), types.CallToolResult)
                assert info.value.code == -32602 and info.value.data == {"code": "E_USAGE"}, info.value.error
                assert str(info.value).startswith(f"E_USAGE: tools/call: {field}: "), str(info.value)
                assert "validation error" not in str(info.value) and "input_value" not in str(info.value)
            # the arguments a tool declares, as before: a tool error naming the field; an unknown tool's code
            bad = await session.call_tool("remember", {"text": ["Run make check"]})
            assert bad.is_error and "E_USAGE: text: " in bad.content[0].text, bad.content  # type: ignore[union-attr]
            bad = await session.call_tool("remember", {})
            assert bad.is_error and "E_USAGE: text: " in bad.content[0].text, bad.content  # type: ignore[union-attr]
            bad = await session.call_tool("forget", {})
            assert bad.is_error and ": E_METHOD_UNKNOWN: " in bad.content[0].text, bad.content  # type: ignore[union-attr]
            assert _structured(await session.call_tool("memory_list", {}))["topics"] == []  # still serving
    log = errlog.read_text()
    assert "Traceback" not in log, log
    refused = [line for line in log.splitlines() if "tools/call" in line]
    assert len(refused) == len(cases) and all("(E_USAGE)" in line for line in refused), log


async def test_a_line_the_transport_cannot_read_is_answered_and_the_server_goes_on(workspace: Path) -> None:
    """params that is an array or a string, a line that is no JSON, a request without ``jsonrpc``: the SDK's
    transport hands its reader an exception and answered nothing, so a client waited for ever. Each now gets
    JSON-RPC's code (``-32602``, ``-32700`` with id null, ``-32600``) and cairn's ``E_USAGE``, one plain stderr
    line each, and the next request is served. Raw stdio: the SDK's client cannot send such lines."""
    import subprocess

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": ["remember", "Run make check"]},
        {"jsonrpc": "2.0", "id": "three", "method": "tools/list", "params": "all"},
        "{not json",
        {"id": 4, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}},
    ]
    stdin = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    # stdin stays open until the last answer came, as a client keeps it (at end of input the server may end
    # before it answered what it read last)
    proc = subprocess.Popen([PYTHON, "-m", "cairn.server", "mcp", "-w", str(workspace)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(REPO), env=child_env(), text=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(stdin)
        proc.stdin.flush()
        answers: dict[object, Any] = {}
        while 5 not in answers:
            line = proc.stdout.readline()  # the server answers each line; a hang fails by the test's timeout
            assert line, f"the server ended before answering: {answers}"
            answer = json.loads(line)
            answers[answer.get("id")] = answer
        proc.stdin.close()
        proc.wait(timeout=60)
        stderr = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert set(answers) == {1, 2, "three", None, 4, 5}, answers  # the malformed notification has no id to answer
    for rid, code, text in [(2, -32602, "E_USAGE: tools/call: params: an object is expected"),
                            ("three", -32602, "E_USAGE: tools/list: params: an object is expected"),
                            (None, -32700, "E_USAGE: the message is not JSON"),
                            (4, -32600, "E_USAGE: not a JSON-RPC 2.0 request")]:
        error = answers[rid]["error"]
        assert error["code"] == code and error["message"].startswith(text) and error["data"] == {"code": "E_USAGE"}
    assert {t["name"] for t in answers[5]["result"]["tools"]} == {"remember", "journal_search", "memory_list"}
    assert "Traceback" not in stderr and stderr.count("(E_USAGE)") == 5, stderr
    assert "Run make check" not in stderr
