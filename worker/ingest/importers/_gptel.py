"""gptel chat files (Emacs), Org and Markdown flavours.

gptel saves where the model's responses are as *bounds*: 1-based Emacs
character positions (points) of regions, in the whole file as Emacs sees it.
Org files keep them in the top-level property drawer
(``:GPTEL_BOUNDS: ...``), Markdown files in the trailing local-variables block
(``<!-- gptel--bounds: ... -->``). Two layouts exist:

- current: ``((response (BEG END) ...) (tool (BEG END ID) ...) (ignore (BEG END) ...))``
- old: ``((BEG . END) ...)``, every region a response.

A region ``(BEG END)`` covers the characters at points BEG .. END-1. Response
regions are the assistant's words; ``tool``, ``ignore`` and any other region
is noise (tool calls and results, reasoning); everything outside any region is
the user's text, with the prompt prefix (``*** `` in Org, ``### `` in
Markdown by default: any heading marker is accepted) removed. A prompt starts a
turn when a response follows it; responses separated only by noise belong to
the same turn; a trailing prompt with no response is not a completed turn.
Bounds that do not read as one of these layouts, overlap, or point past the
end of the file are malformed.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, malformed

_TOKEN = re.compile(r'\s*(?:(\()|(\))|"((?:[^"\\]|\\.)*)"|([^\s()"]+))', re.S)
_MAX_DEPTH = 16
_ORG_DRAWER = re.compile(r"^[ \t]*:PROPERTIES:[ \t]*\n(.*?)^[ \t]*:END:[ \t]*(?:\n|\Z)", re.S | re.M | re.I)
_ORG_BOUNDS = re.compile(r"^[ \t]*:GPTEL_BOUNDS:[ \t]*(.*)$", re.M | re.I)
_ORG_TITLE = re.compile(r"^#\+title:[ \t]*(.*)$", re.M | re.I)
_ORG_KEYWORD = re.compile(r"\A(?:[ \t]*#\+[^\n]*\n|[ \t]*\n)+")
_MD_BLOCK = re.compile(r"^<!-- Local Variables: -->[ \t]*$", re.M)
_MD_END = re.compile(r"^<!-- End: -->[ \t]*$", re.M)
_MD_BOUNDS = re.compile(r"^<!-- gptel--bounds:[ \t]*(.*?)[ \t]*-->[ \t]*$", re.M)
_PREFIX = {"org": re.compile(r"\A\*+(?:[ \t]+|$)"), "md": re.compile(r"\A#+(?:[ \t]+|$)")}
#: what makes a file gptel's: a gptel property (Org), a gptel local variable (Markdown, at the file's end)
ORG_PROPERTY = re.compile(r"^[ \t]*:GPTEL_[A-Z_]+:", re.M)
MD_VARIABLE = re.compile(r"^<!-- gptel-[-a-z]*:", re.M)


class _Sym(str):
    """An Elisp symbol (distinct from a string)."""


class _Cons(tuple[Any, Any]):
    """A dotted pair ``(car . cdr)``."""


class _BadSexp(Exception):
    pass


_DOT = object()  # the '.' of a dotted pair while its list is being read


def read_sexp(src: str) -> Any:
    """Read one Elisp datum made of lists, dotted pairs, integers, strings and symbols."""
    pos = 0
    stack: list[list[Any]] = []
    result: Any = None
    done = False
    while True:
        match = _TOKEN.match(src, pos)
        if not match:
            if src[pos:].strip():
                raise _BadSexp("unreadable token")
            break
        if done:
            raise _BadSexp("trailing data")
        pos = match.end()
        opening, closing, string, atom = match.groups()
        if opening:
            if len(stack) >= _MAX_DEPTH:
                raise _BadSexp("nested too deeply")
            stack.append([])
            continue
        if closing:
            if not stack:
                raise _BadSexp("unbalanced ')'")
            items = stack.pop()
            value: Any = items
            if len(items) == 3 and items[1] is _DOT:
                value = _Cons((items[0], items[2]))
            elif any(item is _DOT for item in items):
                raise _BadSexp("misplaced '.'")
        elif string is not None:
            value = string.replace('\\"', '"').replace("\\\\", "\\")
        elif atom == ".":
            value = _DOT
        elif re.fullmatch(r"[+-]?\d+", atom):
            value = int(atom)
        else:
            value = _Sym(atom)
        if stack:
            stack[-1].append(value)
        else:
            result, done = value, True
    if stack:
        raise _BadSexp("unbalanced '('")
    if not done:
        raise _BadSexp("empty")
    return result


def _is_int(value: Any) -> bool:
    return type(value) is int


def regions(value: Any) -> list[tuple[int, int, bool]]:
    """``(beg, end, is_response)`` regions from a bounds datum (both layouts); ``nil`` is none."""
    if value == _Sym("nil") or value == []:
        return []
    if not isinstance(value, list) or isinstance(value, _Cons):
        raise _BadSexp("bounds are not a list")
    out: list[tuple[int, int, bool]] = []
    for item in value:
        if isinstance(item, _Cons):  # old layout: (BEG . END)
            if not (_is_int(item[0]) and _is_int(item[1])):
                raise _BadSexp("pair is not two integers")
            out.append((item[0], item[1], True))
        elif isinstance(item, list) and item and isinstance(item[0], _Sym):  # (PROP (BEG END [VAL]) ...)
            response = item[0] == "response"
            for bound in item[1:]:
                if not (isinstance(bound, list) and len(bound) >= 2 and _is_int(bound[0]) and _is_int(bound[1])):
                    raise _BadSexp("bound is not (BEG END ...)")
                out.append((bound[0], bound[1], response))
        else:
            raise _BadSexp("unknown bounds layout")
    return out


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def parse(text: str, *, flavour: str, fmt: str) -> list[Session]:
    """Parse a gptel chat buffer saved as Org (``flavour="org"``) or Markdown (``"md"``)."""
    text = text.replace("\r\n", "\n")
    noise: list[tuple[int, int]] = []  # 0-based [start, end) spans that are neither user nor response
    bounds_src: str | None = None
    bounds_line = 1
    title: str | None = None
    limit = len(text)
    if flavour == "org":
        first_heading = re.search(r"^\*+ ", text, re.M)
        drawer = _ORG_DRAWER.search(text, 0, first_heading.start() if first_heading else len(text))
        if drawer:
            noise.append((drawer.start(), drawer.end()))
            found = _ORG_BOUNDS.search(text, drawer.start(1), drawer.end(1))
            if found:
                bounds_src, bounds_line = found.group(1), _line_of(text, found.start())
        if found_title := _ORG_TITLE.search(text, 0, first_heading.start() if first_heading else len(text)):
            title = found_title.group(1).strip() or None
    else:
        blocks = list(_MD_BLOCK.finditer(text))
        if blocks and _MD_END.search(text, blocks[-1].end()):
            block = blocks[-1]
            limit = block.start()
            found = _MD_BOUNDS.search(text, block.end())
            if found:
                bounds_src, bounds_line = found.group(1), _line_of(text, found.start())

    spans: list[tuple[int, int, bool]] = []
    if bounds_src is not None:
        try:
            datum = read_sexp(bounds_src)
            found_regions = regions(datum)
        except _BadSexp as exc:
            raise malformed(bounds_line, f"gptel bounds: {exc}") from None
        for beg, end, response in found_regions:
            if not 1 <= beg <= end <= len(text) + 1:
                raise malformed(bounds_line, "gptel bounds point outside the file")
            spans.append((beg - 1, end - 1, response))
    spans.extend((start, end, False) for start, end in noise)
    if limit < len(text):
        spans.append((limit, len(text), False))
    spans.sort()
    for (_, prev_end, _), (start, _, _) in zip(spans, spans[1:], strict=False):
        if start < prev_end:
            raise malformed(bounds_line, "gptel bounds overlap")

    prefix = _PREFIX[flavour]
    builder = TurnBuilder()
    user: str | None = None
    replies: list[str] = []
    pending: list[str] = []

    def flush_pending() -> str:
        raw = "".join(pending).strip()
        pending.clear()
        if flavour == "org":
            raw = _ORG_KEYWORD.sub("", raw + "\n").strip()
        return prefix.sub("", raw, count=1).strip()

    cursor = 0
    for start, end, response in spans + [(len(text), len(text), False)]:
        if start > cursor:
            pending.append(text[cursor:start])
        cursor = max(cursor, end)
        if not response or start == end:
            continue
        prompt = flush_pending()
        if prompt:
            if user is not None:
                builder.add(user, "\n\n".join(r for r in replies if r))
            user, replies = prompt, []
        if user is not None:
            replies.append(text[start:end].strip())
    if user is not None:
        builder.add(user, "\n\n".join(r for r in replies if r))

    if not len(builder):
        return []
    sid = derived_session_id(fmt, None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=fmt, title=title)]
