"""``cairn/status`` counts the coding agents in use that do not read the memory (``unwiredAgents``).

A workspace with a ``CLAUDE.md`` and an ``AGENTS.md`` that neither brings its
agent to ``.agents/memory/MEMORY.md``: the real server says 2; once the
wiring proposals ``cairn agents wire`` made are accepted from the CLI, the
next ``cairn/status`` says 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.journal.helpers import cairn, cairn_json
from tests.server.lsp_harness import plain, request, until

pytestmark = pytest.mark.asyncio


@pytest.fixture
def instruction_files(workspace: Path) -> Path:
    (workspace / "CLAUDE.md").write_text("# Project\n\nUse tabs.\n")
    (workspace / "AGENTS.md").write_text("# Project\n\nRun the tests.\n")
    return workspace


async def test_status_counts_the_agents_that_do_not_read_the_memory(instruction_files: Path,
                                                                     client: LanguageClient) -> None:
    status = plain(await request(client, "cairn/status"))
    assert status["unwiredAgents"] == 2 and status["journal"]["unwiredAgents"] == 2, status

    wired = cairn_json(instruction_files, "agents", "wire")
    assert sorted(p["target"] for p in wired["proposals"]) == ["AGENTS.md", "CLAUDE.md"]
    cairn(instruction_files, "accept", *(p["id"] for p in wired["proposals"]))

    # the server refreshes its snapshot when it sees the CLI's writes: re-ask after each of its log lines
    async def wired_now() -> bool:
        return plain(await request(client, "cairn/status"))["unwiredAgents"] == 0

    assert await until(client, wired_now)
