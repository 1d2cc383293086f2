"""Text comparison for reviews: the verbatim key, content words, and when two texts are alike.

Rule 2 of the engine (:mod:`worker.memory.engine`). **Similarity** is token
Jaccard: words are casefolded, split on non-alphanumerics, stripped of a
plural ``s`` and of stop words (articles, pronouns, modal and polarity
words such as "always", "never", "don't" — these say *how*, not *what
about* — and words like "repo" or "project" that every note could use). Two
texts are similar at :data:`SIMILARITY` = 0.5 or more: half of their
distinct content words shared. That is deliberately conservative —
paraphrases group, merely related statements do not — because a note filed
under the wrong topic misleads while an extra small topic costs one index
line. A note is compared with a topic's name + description and with each
line of its body (the best match counts, :meth:`TopicView.similarity`);
notes with each other on title + body; topics with each other on all their
words (:attr:`TopicView.all_words`).

:func:`normalise` is the verbatim comparison key: "memory already says it"
and fingerprints both compare normalised text. Pure; imports only the
protocol and :mod:`worker.memory.model`.
"""

from __future__ import annotations

import re
import unicodedata

import attrs
from cairn.worker.memory.model import Topic, one_line

#: token Jaccard at or above which two texts are about the same thing
SIMILARITY = 0.5

_STOP = frozenset(
    """a an the and or but if then so of to in on at by for from with without into onto as is are was were be
    been being it its this that these those there here i me my we us our you your he she they them their
    do does did don dont not no never always please should must can could would will shall may might
    instead also just only very use using used when while than which who what how all any each every
    avoid stop s t repo repository codebase project""".split()
)
#: the stop words :func:`tokens` drops (the supersession shapes never take one for a choice)
STOP_WORDS = _STOP
FENCE = re.compile(r"^\s*(```|~~~)", re.M)
HEADING = re.compile(r"^\s*#")
BULLET_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
#: the date a bullet ends with, ``(noted YYYY-MM-DD)``: when it was said, not what it is about
NOTED = re.compile(r"\s*\(noted [^()]*\)\s*$")


def _fold(text: str) -> str:
    # bidirectional controls order nothing a comparison sees: a note and the memory made of it (which never
    # holds them: protocol.text.memory_text) compare equal
    return _BIDI.sub("", unicodedata.normalize("NFKC", text).replace("\u2019", "'").casefold())


_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u2060-\u2064\ufeff\u00ad]")  # and the invisible ones


def normalise(text: str) -> str:
    """Casefolded, one-line, NFKC text without trailing punctuation: the verbatim comparison key."""
    return one_line(_fold(text)).rstrip(" .!;,")


def tokens(text: str) -> frozenset[str]:
    """The content words of ``text``: casefolded, singular, without stop words."""
    out = set()
    for w in re.findall(r"[^\W_]+", _fold(text)):
        if w in _STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        if w not in _STOP:
            out.add(w)
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def similar(a: frozenset[str], b: frozenset[str]) -> bool:
    return jaccard(a, b) >= SIMILARITY


def body_lines(body: str) -> list[str]:
    """The non-blank lines of a topic body."""
    return [line for line in body.splitlines() if line.strip()]


@attrs.define
class TopicView:
    """A parsed topic of the snapshot with the words it is compared by."""

    file: str
    path: str
    topic: Topic
    data: bytes
    head: frozenset[str]  # name + description
    lines: list[frozenset[str]]  # each non-empty body line, list marker and headings dropped
    all_words: frozenset[str]

    def similarity(self, words: frozenset[str]) -> float:
        """How alike ``words`` (a note's) are to this topic: the best of its head and its lines."""
        return max([jaccard(words, self.head), *(jaccard(words, line) for line in self.lines)])

    @property
    def has_code(self) -> bool:
        return FENCE.search(self.topic.body) is not None


def topic_view(file: str, path: str, topic: Topic, data: bytes) -> TopicView:
    # a bullet's date is no subject: two memories noted the same day would share its words
    lines = [tokens(NOTED.sub("", BULLET_MARK.sub("", line))) for line in body_lines(topic.body)
             if not HEADING.match(line)]
    head = tokens(f"{topic.name} {topic.description}")
    all_words = head.union(*lines) if lines else head
    return TopicView(
        file=file,
        path=path,
        topic=topic,
        data=data,
        head=head,
        lines=[x for x in lines if x],
        all_words=all_words,
    )
