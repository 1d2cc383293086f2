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
message completes the task. A last turn that ends on text without calling a
tool is the session's tail, admitted once the file is sealed: the extension
answers such a reply with a notice of its own ("[ERROR] You did not use a
tool…", no words of the user's) and the turn goes on, so read earlier it was
captured again under another id once it did.

Beside the history, each task folder holds ``ui_messages.json``: what the
extension showed, a JSON array of ``{ts, type: "say" | "ask", say | ask, text,
partial?, images?, …}``. Exported and committed task folders often keep only
that file; it is read (:func:`parse_ui`) when the array holds no ``role``
messages. The user's words are ``say: "task"`` (the first prompt; Roo Code
says it as the first ``say: "text"``, before any model request) and ``say:
"user_feedback"`` (each later message). The assistant's are ``say: "text"``
(an identical text said twice in a row counts once), ``say:
"completion_result"`` and the questions it waits on (``ask: "followup"``'s
``question``, ``ask: "plan_mode_respond"``'s ``response``). Everything else
is tool traffic or bookkeeping (``api_req_started``, ``reasoning``, ``tool``,
``command``, ``command_output``, ``checkpoint_created``, ``task_progress``,
``mcp_*``, errors). There a turn is complete when a new prompt follows it, or
when the task completed (``completion_result``) or waits on the user's answer
after the turn's last text; a ``partial`` message is still streaming. An
answered last turn that is not complete is the session's tail.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol import boundedjson
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
    """Parse one task history (or a task's ``ui_messages.json``) into at most one session of completed
    turns labelled ``fmt``."""
    sid, messages = messages_of(text)
    if sid is None and is_ui(messages):
        return parse_ui(messages, fmt)
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
    if turn is not None and turn["completes"]:
        close(turn)
    elif turn is not None and turn.get("ended_on_text") and not turn["calls"] and turn["texts"]:
        builder.set_tail(turn["user"], join_texts(turn["texts"]), turn_id=turn["id"], completed_at=turn["at"])
    if not len(builder) and not builder.has_tail:
        return []
    sid = sid or derived_session_id(fmt, first_raw, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=fmt, title=None)]


_UI_TYPES = ("say", "ask")
#: what the extension shows that the user wrote
_USER_SAYS = ("task", "user_feedback")
#: asks that wait on the user after the assistant said something: their text is its words
_QUESTIONS = {"followup": "question", "plan_mode_respond": "response"}


def is_ui(messages: list[dict[str, Any]]) -> bool:
    """Whether a task file's array is ``ui_messages.json`` (say/ask messages, no API messages).

    Raises ``E_IMPORT_MALFORMED`` for a non-empty array holding neither.
    """
    if any("role" in m for m in messages):
        return False
    if any(m.get("type") in _UI_TYPES for m in messages):
        return True
    if messages:
        raise malformed(1, "task file holds neither API messages nor UI messages")
    return False


def _question(kind: str, text: str) -> str:
    """The words of a ``followup`` or ``plan_mode_respond`` ask: JSON ``{question | response, options…}``
    (older versions: the plain text)."""
    try:
        doc = boundedjson.loads(text)
    except ValueError:
        return text
    if isinstance(doc, dict):
        value = doc.get(_QUESTIONS[kind])
        return value if isinstance(value, str) else ""
    return doc if isinstance(doc, str) else text


def parse_ui(messages: list[dict[str, Any]], fmt: str) -> list[Session]:
    """The turns of a task's ``ui_messages.json`` (see the module docstring)."""
    builder = TurnBuilder()
    turn: dict[str, Any] | None = None
    first_ts: Any = None
    asked_model = False  # a model request was made (Roo Code's first ``say: text`` is the task before it)

    def close(t: dict[str, Any] | None) -> None:
        if t is not None and t["texts"]:
            builder.add(t["user"], join_texts(t["texts"]), completed_at=t["at"])

    for m in messages:
        kind = m.get("type")
        which = m.get(kind) if kind in _UI_TYPES else None
        if not isinstance(which, str):
            continue
        raw = m.get("text")
        text = raw.strip() if isinstance(raw, str) else ""
        if first_ts is None:
            first_ts = m.get("ts")
        if kind == "say" and (which in _USER_SAYS or (which == "text" and turn is None and not asked_model)):
            if text:
                close(turn)
                turn = {"user": text, "texts": [], "at": None, "done": False}
            continue
        if which == "api_req_started":
            asked_model = True
        if turn is None:
            continue
        said: str | None = None
        if kind == "say" and which in ("text", "completion_result"):
            said = text
        elif kind == "ask" and which in _QUESTIONS:
            said = _question(which, text).strip() if text else ""
        elif kind == "ask" and which == "completion_result":
            said = text
        if said is None:
            if which == "api_req_started":
                turn["done"] = False  # the model is asked again: the turn goes on
            continue
        if m.get("partial") is True:
            turn["done"] = False  # still streaming
            continue
        if said and (not turn["texts"] or turn["texts"][-1] != said):
            turn["texts"].append(said)
            turn["at"] = iso_from_millis(m.get("ts")) or turn["at"]
        turn["done"] = which != "text" and bool(turn["texts"])
    if turn is not None and turn["done"]:
        close(turn)
    elif turn is not None and turn["texts"]:  # answered, not complete yet: the session's tail
        builder.set_tail(turn["user"], join_texts(turn["texts"]), completed_at=turn["at"])
    if not len(builder) and not builder.has_tail:
        return []
    sid = derived_session_id(fmt, f"ui:{first_ts}", builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=fmt, title=None)]


#: the head of a legacy task history: an array of messages (or of the UI messages beside it)
TASK_ARRAY = re.compile(r'^\[\s*\{\s*"(?:role|content|ts)"\s*:|^\[\s*\{\s*"type"\s*:\s*"(?:say|ask)"')
#: what Roo Code adds to a task history (see :mod:`.roo_code`), and the keys of its UI messages' asks
ROO_MARKERS = re.compile(r"<slug>[\w-]+</slug>|<user_message>|\"condenseId\"|\"isSummary\"|\"reasoning_details\""
                         r"|\"autoApprovalDecision\"|\"isProtected\"")
#: Cline 4's session document: ``{version, sessionId, agent, messages}``
_AGENT = re.compile(r'"agent"\s*:\s*"(?:lead|subagent|teammate)"')
_MESSAGES = re.compile(r'"messages"\s*:')


def is_session_document(head: str) -> bool:
    """The head of Cline 4's ``<id>.messages.json``."""
    return _AGENT.search(head) is not None and _MESSAGES.search(head) is not None
