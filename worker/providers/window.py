"""Context windows: how much request text fits a model, judged before anything is sent.

Many local models run with 4–8k tokens of context, and a server that gets a
longer prompt either refuses it (HTTP 400) or silently drops its start. So
every model request is sized against ``context_tokens`` (the setting
``context_tokens`` / ``contextTokens``; unset, the provider's default:
:data:`DEFAULT_CONTEXT_TOKENS` for an ``openai`` endpoint, more for a
``command``, see :func:`protocol.settings.context_window`)
and longer material is split into several requests at item boundaries
(turns for a digest, notes for a review).

The estimate needs no tokenizer: :func:`estimate_tokens` counts one token
per :data:`BYTES_PER_TOKEN` bytes of UTF-8, rounded up. English prose and
JSON run at about 4 bytes per token in common tokenizers, so 3 over-counts
them; code, escapes and non-Latin scripts (2–3 bytes per character, often
one token each) come out about right. On top of it :func:`budget` keeps a
safety margin of :data:`SAFETY_MARGIN` of the window plus
:data:`REQUEST_OVERHEAD` tokens for the chat template, and reserves the
reply budget (``max_output_tokens``) and the system prompt.

:func:`pack` fills windows greedily in order; an item that cannot fit even
alone is reported, never sent. A digest first makes every turn fit with
:func:`fit_turn`, so the user's words never fall off a window's edge:

* a turn that fits is sent whole;
* a turn larger than a window keeps the user's words whole and cuts the
  assistant's reply in the middle, its head and tail kept around a marker
  that says how many characters were cut (:data:`CUT_MARKER`);
* only a user message that is itself larger than a window is split, in
  order, into parts marked ``"part": "k of n"`` (the assistant's reply, cut
  the same way, goes with the last part).

What is left out is never more than what the window cannot hold. (A turn
beyond :data:`protocol.journal.TURN_SNAPSHOT_LIMIT` has no reply captured,
and its user's words only when they alone fit: that is the capture's limit,
not a window's.)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import CONTEXT_TOKENS

DEFAULT_CONTEXT_TOKENS = CONTEXT_TOKENS["openai"]  # an endpoint's model, unknown: what small local models run with
BYTES_PER_TOKEN = 3
SAFETY_MARGIN = 0.10
REQUEST_OVERHEAD = 64
#: what stands in the middle of an assistant reply cut to fit a window
CUT_MARKER = "[… {n} characters of the assistant's reply cut here …]"
#: the widest ``part`` label sized for (a 512 KiB message in parts of a few hundred bytes stays under it)
_PART_WIDTH = "9999 of 9999"
#: a part ends at a line break or a space in its last fifth when there is one
_BREAK_SEARCH = 0.2


def estimate_tokens(text: str) -> int:
    """A cautious token count of ``text``: UTF-8 bytes / :data:`BYTES_PER_TOKEN`, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def json_tokens(value: Any) -> int:
    """:func:`estimate_tokens` of ``value`` serialised as requests serialise it (plus one for its separator)."""
    return estimate_tokens(json.dumps(value, ensure_ascii=False, sort_keys=True)) + 1


def budget(context_tokens: int, system: str, max_output_tokens: int, *, what: str = "digest") -> int:
    """Tokens left for the request text once the margin, overhead, system prompt and reply are reserved."""
    left = (math.floor(context_tokens * (1 - SAFETY_MARGIN)) - REQUEST_OVERHEAD
            - estimate_tokens(system) - max_output_tokens)
    if left <= 0:
        raise CairnError(
            ErrorCode.CONFIG_INVALID,
            f"context_tokens = {context_tokens} leaves no room for {what} evidence next to the instructions and "
            f"the reply budget of {max_output_tokens} tokens",
        )
    return left


def pack(costs: Sequence[int], room: int) -> tuple[list[list[int]], list[int]]:
    """Group item indices, in order, into windows whose costs sum to at most ``room``.

    Returns (windows, too_large): ``too_large`` lists the items that exceed
    ``room`` alone; they are in no window.
    """
    windows: list[list[int]] = []
    too_large: list[int] = []
    current: list[int] = []
    used = 0
    for index, cost in enumerate(costs):
        if cost > room:
            too_large.append(index)
            continue
        if current and used + cost > room:
            windows.append(current)
            current, used = [], 0
        current.append(index)
        used += cost
    if current:
        windows.append(current)
    return windows, too_large


def _largest(hi: int, fits: Callable[[int], bool]) -> int:
    """The largest ``n`` in ``0..hi`` with ``fits(n)`` (``fits`` monotone: true up to a point), -1 if none."""
    if not fits(0):
        return -1
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def cut_middle(text: str, keep: int) -> str:
    """``text`` with all but ``keep`` characters cut from its middle: head, :data:`CUT_MARKER`, tail."""
    if keep >= len(text):
        return text
    head = (keep + 1) // 2
    marker = CUT_MARKER.format(n=len(text) - keep)
    return f"{text[:head]}\n{marker}\n{text[len(text) - (keep - head):]}"


def _with_reply_cut(doc: dict[str, str], room: int) -> dict[str, str] | None:
    """``doc`` with its ``assistant`` text cut to fit ``room`` (whole if it fits); None when not even the marker fits."""
    reply = doc["assistant"]

    def sized(keep: int) -> dict[str, str]:
        return {**doc, "assistant": cut_middle(reply, keep)}

    # a token holds at least one character: more than room * BYTES_PER_TOKEN characters never fit
    keep = _largest(min(len(reply), room * BYTES_PER_TOKEN), lambda k: json_tokens(sized(k)) <= room)
    return None if keep < 0 else sized(keep)


def _split_user(doc: dict[str, str], room: int) -> list[dict[str, str]]:
    """``doc``'s user message in consecutive parts that each fit ``room`` next to a cut reply; [] if none can."""
    words = doc["user"]
    reply = doc["assistant"]
    reserve = estimate_tokens(CUT_MARKER.format(n=len(reply))) + 2 if reply else 0
    pieces: list[str] = []
    start = 0
    while start < len(words):
        rest = words[start:]

        def part(n: int, rest: str = rest) -> dict[str, str]:
            return {**doc, "user": rest[:n], "assistant": "", "part": _PART_WIDTH}

        n = _largest(min(len(rest), room * BYTES_PER_TOKEN), lambda k: json_tokens(part(k)) + reserve <= room)
        if n <= 0:
            return []
        if n < len(rest):
            floor = n - max(1, int(n * _BREAK_SEARCH))
            brk = max(rest.rfind("\n", floor, n), rest.rfind(" ", floor, n))
            if brk > 0:
                n = brk + 1
        pieces.append(rest[:n])
        start += n
    parts = [{**doc, "user": piece, "assistant": "", "part": f"{k + 1} of {len(pieces)}"}
             for k, piece in enumerate(pieces)]
    if reply:
        last = _with_reply_cut({**parts[-1], "assistant": reply}, room)
        if last is None:
            return []
        parts[-1] = last
    return parts


def fit_turn(doc: dict[str, str], room: int) -> list[dict[str, str]]:
    """A turn as requests carry it (``turn_id``, ``user``, ``assistant``), made to fit ``room`` tokens.

    Whole when it fits; else the user's words whole and the reply cut in the
    middle; else the user's message in parts (module docstring). [] when not
    even one character of the message fits next to the markers (a window
    too small to be useful: the caller reports the turn, never sends it).
    """
    if json_tokens(doc) <= room:
        return [doc]
    whole = _with_reply_cut(doc, room)
    if whole is not None:
        return [whole]
    return _split_user(doc, room)
