"""Generated Codex rollouts of any length (for resume tests and bench/ingest.py).

The records of each turn follow a real Codex CLI rollout of the current layout
(``tests/fixtures/transcripts/codex/2026-05/``, and the CLI 0.125 rollout of
the same source): ``task_started``, ``turn_context``, the prompt as a user
message item and as a ``user_message`` event, a ``reasoning`` item, a
``function_call`` with its ``token_count`` and output and an
``exec_command_end`` event, the reply as an ``agent_message`` event and an
assistant message item, a ``token_count``, then ``task_complete``. The file
opens with ``session_meta`` and an ``<environment_context>`` user message.
Deterministic for given arguments.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

from tests.support.generated import _text


def _stamp(n: int) -> str:
    return f"2026-05-11T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z"


def rollout_lines(session: int, turns: int, *, words: int = 12, start: int = 0) -> Iterator[str]:
    """JSONL lines of one rollout: its header (unless ``start`` > 0), then turns ``start`` to ``turns - 1``."""
    sid = str(uuid.UUID(int=(session + 1) << 64 | 0x7000 << 48))
    n = 2 + start * 13 if start else 0  # the header's two records, then 13 a turn

    def rec(kind: str, payload: dict[str, object]) -> str:
        nonlocal n
        n += 1
        return json.dumps({"timestamp": _stamp(n), "type": kind, "payload": payload}, separators=(",", ":"))

    if start == 0:
        yield rec("session_meta", {"id": sid, "timestamp": _stamp(0), "cwd": "/work/project", "originator": "codex-tui",
                                   "cli_version": "0.125.0", "source": "cli", "model_provider": "openai",
                                   "base_instructions": {"text": "You are Codex."}})
        yield rec("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/work/project</cwd>\n</environment_context>"}]})
    for t in range(start, turns):
        turn = str(uuid.UUID(int=(session + 1) << 64 | t))
        call = f"call_{session}_{t}"
        prompt = f"Turn {t}: please look at the {_text(t, words // 3)}"
        reply = f"Done with turn {t}. {_text(t + 7, words)}"
        usage = {"input_tokens": 1000 + t, "cached_input_tokens": 900, "output_tokens": 40, "total_tokens": 1040 + t}
        yield rec("event_msg", {"type": "task_started", "turn_id": turn, "model_context_window": 258400})
        yield rec("turn_context", {"turn_id": turn, "cwd": "/work/project", "approval_policy": "on-request",
                                   "model": "gpt-5.5", "effort": "medium"})
        yield rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
        yield rec("event_msg", {"type": "user_message", "message": prompt, "images": [], "local_images": [],
                                "text_elements": []})
        yield rec("response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAA" + "x" * 60})
        yield rec("response_item", {"type": "function_call", "name": "exec_command",
                                    "arguments": json.dumps({"cmd": "pytest -q"}), "call_id": call})
        yield rec("event_msg", {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage,
                                                                "model_context_window": 258400}, "rate_limits": None})
        yield rec("response_item", {"type": "function_call_output", "call_id": call, "output": "12 passed in 0.31s"})
        yield rec("event_msg", {"type": "exec_command_end", "call_id": call, "turn_id": turn, "command": ["pytest", "-q"],
                                "aggregated_output": "12 passed in 0.31s", "exit_code": 0})
        yield rec("event_msg", {"type": "agent_message", "message": reply, "phase": "final_answer"})
        yield rec("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}],
                                    "phase": "final_answer"})
        yield rec("event_msg", {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage,
                                                                "model_context_window": 258400}, "rate_limits": None})
        yield rec("event_msg", {"type": "task_complete", "turn_id": turn, "last_agent_message": reply})


def write_rollout(path: Path, session: int, turns: int, *, words: int = 12) -> Path:
    with path.open("w") as fh:
        for line in rollout_lines(session, turns, words=words):
            fh.write(line + "\n")
    return path


def append_turns(path: Path, session: int, have: int, turns: int, *, words: int = 12) -> None:
    """Append turns ``have`` to ``turns - 1`` to a rollout written by :func:`write_rollout`, as Codex appends them."""
    with path.open("a") as fh:
        for line in rollout_lines(session, turns, words=words, start=have):
            fh.write(line + "\n")
