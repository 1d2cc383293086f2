"""Generated Claude Code session files of any size (for import tests and bench/ingest.py).

Each turn is a user prompt, an assistant tool call, a tool result (optionally
large, like real command output) and a final assistant answer, chained by
``parentUuid`` like the real format. Texts vary per turn and repeat some
boilerplate, as real sessions do. Deterministic for given arguments.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

_WORDS = ("ledger", "rollover", "period", "timezone", "fixture", "retry", "parser", "cache", "index", "commit",
          "review", "branch", "schema", "query", "worker", "queue", "deadline", "claim", "segment", "journal")


def _text(seed: int, words: int) -> str:
    out = []
    x = seed * 2654435761 % 2**32
    for _ in range(words):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(_WORDS[x % len(_WORDS)])
    return " ".join(out)


def session_lines(session: int, turns: int, *, tool_bytes: int = 0, words: int = 60, tools: bool = True) -> Iterator[str]:
    """JSONL lines of one session with ``turns`` completed root turns (without ``tools``: a prompt and
    an answer per turn, no tool call)."""
    sid = str(uuid.UUID(int=session + 1))
    parent: str | None = None
    n = 0

    def rec(kind: str, message: dict[str, object]) -> str:
        nonlocal parent, n
        n += 1
        uid = str(uuid.UUID(int=(session + 1) << 40 | n))
        line = json.dumps({"parentUuid": parent, "isSidechain": False, "sessionId": sid, "type": kind, "uuid": uid,
                           "timestamp": f"2026-01-01T00:00:{n % 60:02d}.000Z", "message": message})
        parent = uid
        return line

    yield json.dumps({"type": "summary", "summary": f"generated session {session}", "leafUuid": "none"})
    for t in range(turns):
        yield rec("user", {"role": "user", "content": f"Turn {t}: please look at the {_text(t, words // 3)}"})
        if not tools:
            yield rec("assistant", {"role": "assistant", "stop_reason": "end_turn", "content": [
                {"type": "text", "text": f"Done with turn {t}. {_text(t + 7, words)}"}]})
            continue
        tool = f"toolu_{session}_{t}"
        yield rec("assistant", {"role": "assistant", "stop_reason": "tool_use", "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": "pytest -q"}}]})
        output = ("collected 212 items\n" + "." * 70 + "\n") * max(1, tool_bytes // 90) if tool_bytes else "ok"
        yield rec("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool, "content": output}]})
        yield rec("assistant", {"role": "assistant", "stop_reason": "end_turn", "content": [
            {"type": "text", "text": f"Done with turn {t}. {_text(t + 7, words)}"}]})


def write_session(path: Path, session: int, turns: int, *, tool_bytes: int = 0, words: int = 60,
                  tools: bool = True) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for line in session_lines(session, turns, tool_bytes=tool_bytes, words=words, tools=tools):
            fh.write(line + "\n")
    return path
