"""An experimental sentence scorer trained on the corpus's gold labels (ADR 0008, last revision).

Contract: :func:`features` maps one cleaned user sentence and where it sits
(:class:`Place`, from :func:`places`) to a sorted list of string features;
:func:`probability` is the logistic-regression ``P(durable | features)``
under a bias and weights; :func:`note_type` gives a scored sentence a note
type without the cue rules. Pure Python and deterministic.

Why: the hand-written cue rules find a third of the durable items of users
they were not written from. The dev split of ``tests/corpus`` holds ~200
durable and ~250 tempting items from ~46 owners, labelled by hand, so a
scorer can learn from real user turns instead of weak labels. Its features
are the words of the sentence (unigrams, bigrams, opening words), its form
(length, question, code spans, paths, URLs, modal verbs, pronouns) and its
place (first turn, position in the turn, in a list, under a heading, size of
the turn); none is a cue rule's output, so rule changes leave them valid.
``bench/scorer_gold_train.py`` trains it and measures it by
leave-one-owner-out cross-validation. It lives in ``bench/``: on held-out
owners it did not beat the rules at comparable precision, so the engine does
not use it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from cairn.protocol.vocab import NoteType

MAX_SENTENCE = 400  # longer sentences are pasted text or task descriptions: never scored

_WORD = re.compile(r"[a-z][a-z0-9'_+#-]*[a-z0-9+#]|[a-z]")
_LENGTHS = (3, 6, 10, 16, 25, 40, 70)
_CODE = re.compile(r"`[^`]+`")
_PATH = re.compile(r"\b[\w-]+(?:/[\w.-]+)+|\b[\w-]+\.(?:py|js|ts|tsx|jsx|md|json|ya?ml|toml|vue|css|html|sh|rs|go|env)\b")
_URL = re.compile(r"https?://")
_MODAL = re.compile(r"\b(?:should|must|shall|need to|needs to|have to|has to|always|never|ensure|make sure)\b")
_NUMBER = re.compile(r"\d")
_FIRST = ("i", "i'm", "i've", "i'd", "my", "me")
_WE = ("we", "we're", "we've", "our", "us", "let's")
_YOU = ("you", "your", "you're")


@dataclass(frozen=True)
class Place:
    """Where a sentence sits: turn index in its session, sentence index in its turn, and its surroundings."""

    turn: int = 0
    index: int = 0
    sentences: int = 1
    listed: bool = False  # its line is a bullet or numbered item
    heading: bool = False  # the nearest non-blank line above is a heading or ends with ":"
    turn_chars: int = 0


def _bucket(n: int, limits: tuple[int, ...]) -> int:
    return next((i for i, limit in enumerate(limits) if n <= limit), len(limits))


def features(sentence: str, place: Place) -> list[str]:
    """The features of ``sentence`` at ``place`` (sorted, unique); see the module docstring."""
    low = sentence.lower().replace("\u2019", "'")
    words = _WORD.findall(low)
    feats = {f"w:{w}" for w in words}
    feats.update(f"b:{a}_{b}" for a, b in zip(words, words[1:], strict=False))
    if words:
        feats.add(f"s:{words[0]}")
        feats.add(f"s2:{'_'.join(words[:2])}")
    word_set = set(words)
    feats.add(f"len:{_bucket(len(words), _LENGTHS)}")
    flags = {
        "q": low.rstrip().endswith("?"),
        "excl": low.rstrip().endswith("!"),
        "code": bool(_CODE.search(sentence)),
        "path": bool(_PATH.search(low)),
        "url": bool(_URL.search(low)),
        "modal": bool(_MODAL.search(low)),
        "digit": bool(_NUMBER.search(low)),
        "first": bool(word_set.intersection(_FIRST)),
        "we": bool(word_set.intersection(_WE)),
        "you": bool(word_set.intersection(_YOU)),
        "nonascii": any(ord(c) > 127 for c in sentence),
        "turn0": place.turn == 0,
        "lead": place.index == 0,
        "last": place.index == place.sentences - 1,
        "alone": place.sentences == 1,
        "listed": place.listed,
        "heading": place.heading,
    }
    feats.update(f"f:{name}" for name, on in flags.items() if on)
    feats.add(f"tlen:{_bucket(place.turn_chars, (80, 200, 500, 1200, 3000))}")
    feats.add(f"pos:{_bucket(place.index, (0, 2, 5, 10))}")
    return sorted(feats)


def probability(feats: list[str], bias: float, weights: dict[str, float]) -> float:
    z = bias + sum(weights.get(f, 0.0) for f in feats)
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def note_type(sentence: str) -> NoteType:
    """A type without the cue rules: a URL is a reference, "you" feedback, "I/my" user, else project."""
    low = sentence.lower()
    words = set(_WORD.findall(low))
    if _URL.search(low):
        return NoteType.REFERENCE
    if words.intersection(_YOU) or low.startswith(("always ", "never ", "don't ", "do not ", "please ")):
        return NoteType.FEEDBACK
    if words.intersection(_FIRST) and not words.intersection(_WE):
        return NoteType.USER
    return NoteType.PROJECT


_LISTED = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s|\*\*[^*]+\*\*:?\s*$)|:\s*$")


def places(text: str, units: list[list[str]], turn: int) -> list[list[Place]]:
    """The :class:`Place` of every sentence of ``units`` (the engine's paragraphs of ``text``)."""
    total = sum(len(unit) for unit in units)
    out: list[list[Place]] = []
    cursor = 0
    index = 0
    for unit in units:
        listed = heading = False
        head = unit[0][:24] if unit and unit[0] else ""
        at = text.find(head, cursor) if head else -1
        if at >= 0:
            cursor = at + len(head)
            start = text.rfind("\n", 0, at) + 1
            listed = bool(_LISTED.match(text[start:at + 1]))
            above = text[:start].rstrip().rsplit("\n", 1)[-1]
            heading = bool(above) and bool(_HEADING.search(above))
        row = []
        for _ in unit:
            row.append(Place(turn=turn, index=index, sentences=total, listed=listed, heading=heading,
                             turn_chars=len(text)))
            index += 1
        out.append(row)
    return out

