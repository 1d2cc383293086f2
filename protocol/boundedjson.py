"""JSON decoding with a bound on nesting depth, for every decode of untrusted text.

The standard decoder recurses once per nested array or object; a line such as
``[[[[…]]]]`` 100,000 deep exhausts the interpreter's recursion limit and
raises ``RecursionError`` — not a ``ValueError`` — which escapes the callers'
"not JSON" handling as a traceback. Here a text nesting deeper than
:data:`MAX_DEPTH` is refused *before* it is decoded, with :class:`TooDeep`
(a ``ValueError``, so existing "not JSON" paths classify it), and the
decoder's own ``RecursionError`` is mapped to the same error as a backstop.

The check is linear and cheap: a text with at most ``limit`` opening brackets
cannot nest deeper than ``limit`` (two ``str.count`` calls, C speed, decide
almost every real record). Only texts with more brackets are scanned: string
literals are removed by one regular expression (brackets inside strings do
not nest), then the running depth over the remaining brackets is computed
with C-level iterators. For well-formed JSON the scan is exact; for
malformed JSON the decoder stops at the first error anyway.

No record cairn writes nests more than a few levels; transcripts' tool
payloads rarely pass a few dozen. 256 leaves room for both and stays far
below the interpreter's default recursion limit (1000), so whatever decodes
within the bound can also be walked and re-encoded.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 256

# the closing quote is optional so an unterminated string runs to the end in one match:
# a required one would make every later quote restart a scan to the end (quadratic)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class TooDeep(ValueError):
    """The text nests arrays/objects deeper than the bound; it was not decoded."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nesting deeper than {limit} levels")
        self.limit = limit


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when ``text`` (read as JSON) nests arrays/objects deeper than ``limit``."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


def loads(text: str, *, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` that raises :class:`TooDeep` instead of recursing past ``limit``."""
    if too_deep(text, limit):
        raise TooDeep(limit)
    try:
        return json.loads(text)
    except RecursionError:  # a caller already deep in its own stack: same answer, no traceback
        raise TooDeep(limit) from None


_JSONC_PARTS = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)


def strip_comments(text: str) -> str:
    """``text`` with ``//`` and ``/* */`` comments outside strings blanked (JSON with comments, as Gemini CLI
    and Qwen Code read their ``settings.json``: strip-json-comments); positions and line numbers kept."""
    def blank(m: re.Match[str]) -> str:
        part = m.group()
        return part if part.startswith('"') else re.sub(r"[^\n]", " ", part)

    return _JSONC_PARTS.sub(blank, text)
