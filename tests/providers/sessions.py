"""Realistic transcripts shared by the provider tests and the throughput bench."""

from __future__ import annotations

from pathlib import Path

from cairn.protocol.digest import DigestInput
from cairn.protocol.transcript import Turn


def turn(turn_id: str, user: str, assistant: str = "Done.", parent: str | None = None) -> Turn:
    return Turn(turn_id=turn_id, parent_turn_id=parent, user=user, assistant=assistant)


MIXED_TURNS: tuple[Turn, ...] = (
    turn(
        "t1",
        "Can you add a retry to the upload client? It keeps timing out.\n"
        "Also, I prefer small focused commits over one big commit.",
        "I added a retry with exponential backoff. From now on I will always add retries.",
    ),
    turn(
        "t2",
        "Here's the failure:\n"
        "```\n"
        "Traceback (most recent call last):\n"
        '  File "upload.py", line 12, in <module>\n'
        "    always_retry()\n"
        "never mind this line\n"
        "```\n"
        "2024-05-01 12:00:01 ERROR upload failed: always retry\n"
        "ValueError: never use this\n"
        "Please fix it.",
        "Fixed: the timeout was too short.",
    ),
    turn(
        "t3",
        "No, use httpx instead of requests. From now on, never summarize what you did at the end "
        "of a reply. Because I read the diff anyway.",
    ),
    turn(
        "t4",
        "This project uses trio, not asyncio. Our CI runs ruff and pytest on every push.\n"
        "The billing service lives in services/billing.\n"
        "The tracker is https://linear.app/acme/team/ENG and dashboards are at https://grafana.acme.dev/d/uploads.",
    ),
    turn(
        "t5",
        "I've done the migration and now tests pass. Let's go with option B for the cache. "
        "We need to ship this by Friday. For now, don't touch the migrations folder.\n"
        "    def always_fail():\n"
        "        never_called()\n",
    ),
    turn(
        "t6",
        "Stop asking for confirmation before running the tests. "
        "We always squash-merge pull requests. "
        "I'd rather you didn't add comments that restate the code.",
    ),
    turn(
        "t7",
        "ok, from now on, never summarize what you did at the end of a reply.\n"
        "What does the retry do on a 429?\n"
        "Our CI is failing right now, can you look?",
    ),
    turn(
        "t8",
        "Please always authenticate the smoke tests with token=ghp_abcdefghijklmnopqrstuvwxyz0123456789 "
        "from the vault.",
    ),
)

MIXED = DigestInput(session_id="session-1", title="Upload retries", turns=MIXED_TURNS)


def long_transcript(path: Path, turns: int = 30) -> Path:
    """An aider chat of ``turns`` long turns, each stating one preference, and a closing turn."""
    lines = ["", "# aider chat started at 2025-05-20 14:03:11", ""]
    for i in range(turns):
        lines += [f"#### I prefer option-{i} for module {i}. " + "Some context about the module. " * 25 + " ", "",
                  f"Noted: option-{i}. " + "The reply goes on about it. " * 20, ""]
    lines += ["#### thanks  ", "", "You're welcome.", ""]
    path.write_text("\n".join(lines))
    return path
