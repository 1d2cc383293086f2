"""Cline and Roo Code task histories, shared by :mod:`cline` and :mod:`roo_code`.

Both extensions keep one folder per task under VS Code's global storage
(``<editor>/User/globalStorage/<extension-id>/tasks/<task-id>/``) holding
``api_conversation_history.json``: a JSON array of Anthropic ``MessageParam``
objects ``{role, content, ts?}`` (content a string or blocks: ``text``,
``image``, ``tool_use``, ``tool_result``, ``thinking``). Cline 4 also writes
``~/.cline/data/sessions/<id>/<id>.messages.json``: ``{version: 1, sessionId,
messages: [{id, role, content, ts?, modelInfo?, metrics?}]}`` with the same blocks.

What the user typed is wrapped: ``<task>`` (the first prompt),
``<feedback>``/``<answer>`` (replies to the agent) or ``<user_message>`` (Roo);
``<environment_details>`` is injected context and is removed. A user message of
tool results only (``tool_result`` blocks, or legacy ``[tool for 'x'] Result:``
texts) continues the tool loop. Assistant text has ``<thinking>`` removed and,
in the legacy XML tool style, the tool-call elements; ``attempt_completion``'s
``result`` (native or XML) is the final answer and completes the turn.

A turn is complete when a new prompt follows it, or when its last assistant
message completes the task or ends on text without calling a tool.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, iso_from_millis, join_texts, json_document, malformed

_ENV = re.compile(r"<environment_details>.*?(?:</environment_details>|\Z)", re.S)
_WRAPPED = re.compile(r"<(task|feedback|answer|user_message)>\s*(.*?)\s*</\1>", re.S)
_TOOL_RESULT = re.compile(r"^\[[^\]\n]{1,200}\] Result:")
_INJECTED_PREFIXES = ("[TASK RESUMPTION]", "[ERROR]", "<explicit_instructions", "[Response interrupted")
_THINKING = re.compile(r"<thinking>.*?(?:</thinking>|\Z)", re.S)
_TOOLS = (
    "read_file|write_to_file|replace_in_file|apply_diff|insert_content|search_and_replace|execute_command|"
    "search_files|list_files|list_code_definition_names|browser_action|use_mcp_tool|access_mcp_resource|"
    "ask_followup_question|new_task|switch_mode|codebase_search|update_todo_list|fetch_instructions|"
    "load_mcp_documentation|plan_mode_respond|web_fetch|condense|report_bug|new_rule"
)
_XML_TOOL = re.compile(rf"<({_TOOLS})>.*?(?:</\1>|\Z)", re.S)
_COMPLETION = re.compile(r"<attempt_completion>(.*?)(?:</attempt_completion>|\Z)", re.S)
_RESULT = re.compile(r"<result>\s*(.*?)\s*(?:</result>|\Z)", re.S)


def messages_of(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """(session id when the file names one, messages) of a task history file."""
    doc = json_document(text)
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        sid = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) else None
        return sid, [m for m in doc["messages"] if isinstance(m, dict)]
    if not isinstance(doc, list):
        raise malformed(1, "task history is neither a message array nor a messages file")
    return None, [m for m in doc if isinstance(m, dict)]


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def prompt_of(content: Any) -> tuple[str, bool]:
    """(the user's words, tool traffic only?) of a user message's content.

    In a message that carries a legacy ``[tool] Result:`` block, the other text
    blocks are that tool's output; only wrapped replies (``<feedback>``...) count.
    """
    blocks = [b for b in _blocks(content) if b.get("type") == "text" and isinstance(b.get("text"), str)]
    texts = [_ENV.sub("", b["text"]).strip() for b in blocks]
    texts = [t for t in texts if t]
    tool_output = any(_TOOL_RESULT.match(t) for t in texts)
    words: list[str] = []
    for raw in texts:
        wrapped = [m.group(2) for m in _WRAPPED.finditer(raw)]
        if wrapped:
            words.extend(wrapped)
        elif not tool_output and not raw.startswith(_INJECTED_PREFIXES):
            words.append(raw)
    prompt = join_texts(words)
    return prompt, not prompt and (tool_output or any(b.get("type") == "tool_result" for b in _blocks(content)))


def answer_of(content: Any) -> tuple[list[str], bool, bool]:
    """(text pieces, calls a tool?, completes the task?) of an assistant message."""
    texts: list[str] = []
    calls = completes = False
    for b in _blocks(content):
        kind = b.get("type")
        if kind == "text" and isinstance(b.get("text"), str):
            raw = _THINKING.sub("", b["text"])
            for m in _COMPLETION.finditer(raw):
                completes = True
                result = _RESULT.search(m.group(1))
                if result:
                    texts.append(result.group(1))
            raw = _COMPLETION.sub("", raw)
            if _XML_TOOL.search(raw):
                calls = True
                raw = _XML_TOOL.sub("", raw)
            if raw.strip():
                texts.append(raw.strip())
        elif kind == "tool_use":
            name = b.get("name")
            raw_input = b.get("input")
            payload: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
            if name == "attempt_completion":
                completes = True
                if isinstance(payload.get("result"), str):
                    texts.append(payload["result"])
            else:
                calls = True
    return texts, calls, completes


def parse_task(text: str, fmt: str) -> list[Session]:
    """Parse one task history into at most one session of completed turns labelled ``fmt``."""
    sid, messages = messages_of(text)
    builder = TurnBuilder()
    turn: dict[str, Any] | None = None
    first_raw: str | None = None

    def close(t: dict[str, Any] | None) -> None:
        if t is not None and t["texts"]:
            builder.add(t["user"], join_texts(t["texts"]), turn_id=t["id"], completed_at=t["at"])

    for m in messages:
        if m.get("type") == "reasoning" or m.get("isSummary"):
            continue
        role, content = m.get("role"), m.get("content")
        if role == "user":
            prompt, tool_only = prompt_of(content)
            if first_raw is None:
                first_raw = content if isinstance(content, str) else repr(content)[:4096]
            if prompt and not tool_only:
                close(turn)
                turn = {"id": m.get("id") if isinstance(m.get("id"), str) else None, "user": prompt,
                        "texts": [], "at": None, "calls": True, "completes": False}
        elif role == "assistant" and turn is not None:
            texts, calls, completes = answer_of(content)
            turn["texts"].extend(texts)
            if texts:
                turn["at"] = iso_from_millis(m.get("ts")) or turn["at"]
            turn["calls"], turn["completes"] = calls and not completes, completes
            turn["ended_on_text"] = bool(texts)
    if turn is not None and (turn["completes"] or (turn.get("ended_on_text") and not turn["calls"])):
        close(turn)
    if not len(builder):
        return []
    sid = sid or derived_session_id(fmt, first_raw, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=fmt, title=None)]


#: the head of a legacy task history: an array of messages
TASK_ARRAY = re.compile(r'^\[\s*\{\s*"(?:role|content|ts)"\s*:')
#: what Roo Code adds to a task history (see :mod:`.roo_code`)
ROO_MARKERS = re.compile(r"<slug>[\w-]+</slug>|<user_message>|\"condenseId\"|\"isSummary\"|\"reasoning_details\"")
#: Cline 4's session document: ``{version, sessionId, agent, messages}``
_AGENT = re.compile(r'"agent"\s*:\s*"(?:lead|subagent|teammate)"')
_MESSAGES = re.compile(r'"messages"\s*:')


def is_session_document(head: str) -> bool:
    """The head of Cline 4's ``<id>.messages.json``."""
    return _AGENT.search(head) is not None and _MESSAGES.search(head) is not None
