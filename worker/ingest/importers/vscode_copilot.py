"""VS Code's Copilot Chat "Export Chat…" JSON (``chat.json``), and the chat session files of that shape.

Read from VS Code's ``chatModel.ts`` (``toExport``/``toJSON``) and real
exports. One JSON document::

    {"requesterUsername": "…", "responderUsername": "GitHub Copilot", "initialLocation": "panel",
     "requests": [{"requestId": "request_…", "message": {"text": "…", "parts": […]},
                   "response": [<parts>], "result": {"timings": {…}, …}, "isCanceled": false,
                   "timestamp": 1748118043182, "modelState": {"value": 1, "completedAt": …}, …}]}

Newer exports leave out ``requesterUsername``; VS Code's own session files
(``chatSessions/<id>.json``) add ``version``, ``sessionId``,
``creationDate`` and ``customTitle``.

- **User**: ``message.text``, the request as typed (``#file`` references,
  ``@participant`` and ``/command`` as written); the attached files and the
  prompt Copilot sent (``variableData``, ``result.metadata``) are not read.
- **Assistant**: the response's Markdown parts (a part without ``kind``,
  holding ``value``; ``markdownContent``/``markdownVuln``), with inline
  references (``inlineReference``: a file or symbol named in the reply)
  written as their name. Tool invocations, progress, thinking, edits,
  confirmations, code-block links and every other part are left out; a
  paragraph break stands where they interrupted the text.
- **Completed**: ``modelState.value`` is complete, cancelled or failed
  (1, 2, 3), or, in exports without it, the request has a ``result`` or was
  cancelled, or a later request follows. A request still pending or
  waiting for input is not complete yet. A finished request whose response
  has no text (cancelled before any, failed) answers nothing: its prompt is
  joined to the next prompt, so every word the user typed reaches a turn.
- **Ids and times**: the turn id is the ``requestId`` (of the request whose
  response answers the turn); the session id the file's ``sessionId``, or one
  derived from the first prompt. ``completed_at`` is ``modelState.completedAt``,
  else the request's ``timestamp`` plus ``result.timings.totalElapsed``, else the
  request's ``timestamp`` (epoch milliseconds).
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, iso_from_millis, json_document, malformed
from ._format import Format

NAME = "vscode-copilot"
_USERNAME = re.compile(r'"(?:requester|responder)Username"\s*:')
_REQUESTS = re.compile(r'"requests"\s*:\s*\[')
_TEXT_KINDS = ("markdownContent", "markdownVuln")
_FINAL_STATES = (1, 2, 3)  # ResponseModelState: Complete, Cancelled, Failed (0 Pending, 4 NeedsInput)


def sniff_json(head: str) -> bool:
    """True when the head of a JSON document carries the export's username key and a requests list."""
    return _USERNAME.search(head) is not None and _REQUESTS.search(head) is not None


def sniff_record(rec: dict[str, Any], head: str) -> bool:
    """True for a whole export written on one line."""
    return isinstance(rec.get("requests"), list) and ("responderUsername" in rec or "requesterUsername" in rec)


def _uri_name(uri: Any) -> str:
    if not isinstance(uri, dict):
        return ""
    scheme = uri.get("scheme")
    if scheme in ("http", "https") and isinstance(uri.get("external"), str):
        return str(uri["external"])
    path = uri.get("path") or uri.get("fsPath") or ""
    return path.rstrip("/").rsplit("/", 1)[-1] if isinstance(path, str) else ""


def _reference(part: dict[str, Any]) -> str:
    """An inline reference as VS Code writes it in the reply's text: a symbol's name, a file's base name."""
    if isinstance(part.get("name"), str) and part["name"].strip():
        return f"`{part['name'].strip()}`"
    ref = part.get("inlineReference")
    if isinstance(ref, dict):
        if "uri" in ref:
            return _uri_name(ref["uri"])
        if isinstance(ref.get("name"), str):
            return f"`{ref['name']}`"
    return _uri_name(ref)


def _reply(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    runs: list[str] = []
    current: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("kind")
        if kind is None or kind in _TEXT_KINDS:
            value = part.get("value") if kind is None else (part.get("content") or {}).get("value")
            if isinstance(value, str):
                current.append(value)
        elif kind == "inlineReference":
            current.append(_reference(part))
        elif current:  # a tool call, progress, edits…: the text around it are two paragraphs
            runs.append("".join(current))
            current = []
    runs.append("".join(current))
    return "\n\n".join(kept for kept in (_unfenced(run) for run in runs) if kept)


_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n`]*$")


def _unfenced(run: str) -> str:
    """A text run without the empty code block VS Code writes around an edit (the edit's text is in
    its ``textEditGroup`` part, not in the Markdown): a run of fence lines only is dropped, and an
    unmatched fence line opening or closing a run is cut."""
    lines = run.strip().split("\n")
    fences = [i for i, ln in enumerate(lines) if _FENCE_LINE.match(ln)]
    if len(fences) == len([ln for ln in lines if ln.strip()]):
        return ""
    if len(fences) % 2:
        if fences[-1] == len(lines) - 1:
            lines.pop()
        elif fences[0] == 0:
            lines.pop(0)
    return "\n".join(lines).strip()


def _prompt(request: dict[str, Any]) -> str:
    message = request.get("message")
    text = message.get("text") if isinstance(message, dict) else message
    return text.strip() if isinstance(text, str) else ""


def _millis(value: Any) -> int | float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _completed_at(request: dict[str, Any]) -> str | None:
    state = request.get("modelState")
    if isinstance(state, dict) and _millis(state.get("completedAt")) is not None:
        return iso_from_millis(state["completedAt"])
    start = _millis(request.get("timestamp"))
    result = request.get("result")
    timings = result.get("timings") if isinstance(result, dict) else None
    elapsed = _millis(timings.get("totalElapsed")) if isinstance(timings, dict) else None
    if start is not None and elapsed is not None:
        return iso_from_millis(start + elapsed)
    return iso_from_millis(start) if start is not None else None


def _finished(request: dict[str, Any], last: bool) -> bool:
    if not last:
        return True  # a later request was sent: this one ended
    state = request.get("modelState")
    if isinstance(state, dict) and isinstance(state.get("value"), int):
        return state["value"] in _FINAL_STATES
    return isinstance(request.get("result"), dict) or request.get("isCanceled") is True


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one exported chat (or stored chat session) into at most one session of completed turns."""
    doc = json_document(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("requests"), list):
        raise malformed(1, "not a VS Code chat export (no requests list)")
    requests = [r for r in doc["requests"] if isinstance(r, dict)]
    builder = TurnBuilder()
    pending: list[str] = []  # prompts whose requests ended without a reply, joined to the next answered one
    for index, request in enumerate(requests):
        prompt = _prompt(request)
        if not _finished(request, index == len(requests) - 1):
            break
        reply = _reply(request.get("response"))
        if prompt:
            pending.append(prompt)
        if not reply or not pending:
            continue
        rid = request.get("requestId")
        builder.add("\n\n".join(pending), reply, turn_id=rid if isinstance(rid, str) and rid else None,
                    completed_at=_completed_at(request))
        pending = []

    if not len(builder):
        return []
    sid = doc.get("sessionId")
    title = doc.get("customTitle")
    session_id = sid if isinstance(sid, str) and sid else derived_session_id(NAME, None, builder.first_user or "")
    return [builder.finish(session_id=session_id, source_format=NAME,
                           title=title.strip() or None if isinstance(title, str) else None)]


FORMAT = Format(name=NAME, parse=parse, sniff_record=sniff_record, sniff_json=sniff_json)
