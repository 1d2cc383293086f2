"""``cairn/cockpit`` with ``view: "overview"``: the real server over stdio, real workers, a real workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from tests.server.lsp_harness import command, plain, request, until
from tests.support.live import start_session

pytestmark = pytest.mark.asyncio

OLD_TOPIC = """---
name: Old build notes
description: how the build ran in 2020
type: project
confirmed: 2020-01-02
---

The build used make.
"""


@pytest.mark.lsp_options({"mode": "propose"})
async def test_overview_lists_pending_by_topic_stale_memories_and_recent_decisions(
    workspace: Path, client: LanguageClient
) -> None:
    memory = workspace / ".agents" / "memory"
    memory.mkdir(parents=True)
    (memory / "old_build.md").write_text(OLD_TOPIC, encoding="utf-8")
    (memory / "MEMORY.md").write_text(
        "- [Old build notes](old_build.md) — how the build ran in 2020\n", encoding="utf-8"
    )
    ids = []
    for text in ("Never force-push to shared branches", "Releases are tagged on Mondays"):
        out = plain(await command(client, "cairn.remember", {"workspace": str(workspace), "text": text}))
        ids += [p["id"] for p in out["result"]["proposals"]]
    assert len(ids) == 2
    await command(client, "cairn.accept", {"workspace": str(workspace), "ids": [ids[0]]})

    rows = plain(await request(client, "cairn/cockpit", {"view": "overview"}))
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["section"], []).append(r)
    assert set(by) <= {"pending", "stale", "decided", "jobs", "sessions"}, set(by)
    [pending] = by["pending"]
    assert pending["id"] == ids[1] and pending["group"] == pending["target"] and pending["state"] == "pending"
    [stale] = by["stale"]
    assert stale["file"].endswith("old_build.md") and stale["due"] and stale["age"] > 365 and "why" in stale
    decided = by["decided"]
    assert decided[0]["id"] == ids[0] and decided[0]["action"] == "accept"
    assert "jobs" not in by  # nothing failed


@pytest.mark.lsp_options({"watchPaths": ["sessions"]})  # relative: to the workspace
async def test_overview_lists_the_sessions_followed_now(workspace: Path, client: LanguageClient) -> None:
    live = start_session(workspace / "sessions" / "session.jsonl")

    async def followed() -> list[dict[str, Any]] | None:
        rows = plain(
            await request(client, "cairn/cockpit", {"workspace": str(workspace), "view": "overview"})
        )
        sessions = [r for r in rows if r["section"] == "sessions"]
        return sessions or None

    [row] = await until(client, followed)
    assert row["path"] == str(live) and row["size"] == live.stat().st_size and row["modified"] > 0
