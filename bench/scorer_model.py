"""An experimental learned sentence scorer: how much a user sentence reads like durable knowledge.

Contract: :func:`features` maps one sentence to a set of string features
(lower-cased word unigrams and bigrams, the first word and first two words,
a length bucket); :func:`score` returns the logistic-regression probability
``P(durable | features)`` under a weight file, in ``[0, 1]``. Pure Python,
deterministic, nothing downloaded: the weights are a small JSON file
(``{"bias": float, "weights": {feature: float}}``), read once.

Why: the cue rules of :mod:`worker.providers.cues` are written by hand from
few users and find about a third of the durable items of new users. The
weights are trained by ``bench/scorer_train.py`` on a large weakly labelled
set built from public data (positives: sentences of permissively licensed
agent instruction files such as ``AGENTS.md`` and ``CLAUDE.md``; negatives:
user prompts of public transcripts and commit subjects, mostly changes of
the moment), whose sources are recorded in ``bench/scorer_sources.json``.
``bench/scorer_eval.py`` measures it beside the engine's rules. It lives in
``bench/``, not in the engine: on the dev split it did not help (ADR 0008,
revision), so the engine does not use it.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

WEIGHTS = Path(__file__).with_name("scorer_weights.json")  # written by scorer_train.py; not committed

_WORD = re.compile(r"[a-z][a-z0-9'_+.#-]*[a-z0-9+#]|[a-z]|\d+")
_LENGTHS = (4, 8, 14, 24, 40)


def features(sentence: str) -> list[str]:
    """The features of ``sentence``: unigrams, bigrams, its opening and a length bucket (sorted, unique)."""
    words = _WORD.findall(sentence.lower().replace("\u2019", "'"))
    feats = {f"w:{w}" for w in words}
    feats.update(f"b:{a}_{b}" for a, b in zip(words, words[1:], strict=False))
    if words:
        feats.add(f"s:{words[0]}")
        feats.add(f"s2:{'_'.join(words[:2])}")
    bucket = next((i for i, limit in enumerate(_LENGTHS) if len(words) <= limit), len(_LENGTHS))
    feats.add(f"len:{bucket}")
    return sorted(feats)


@lru_cache(maxsize=4)
def load(path: Path = WEIGHTS) -> tuple[float, dict[str, float]]:
    """The bias and weights of a weight file (cached: the file is data shipped with the code)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return float(data["bias"]), {str(k): float(v) for k, v in data["weights"].items()}


def score(sentence: str, model: tuple[float, dict[str, float]] | None = None) -> float:
    """``P(durable)`` of ``sentence`` under ``model`` (default: the shipped weights)."""
    bias, weights = model if model is not None else load()
    z = bias + sum(weights.get(f, 0.0) for f in features(sentence))
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
