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
alone is reported, never sent (a digest treats it as a turn of unknown
content, like any oversized turn).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import CONTEXT_TOKENS

DEFAULT_CONTEXT_TOKENS = CONTEXT_TOKENS["openai"]  # an endpoint's model, unknown: what small local models run with
BYTES_PER_TOKEN = 3
SAFETY_MARGIN = 0.10
REQUEST_OVERHEAD = 64


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
