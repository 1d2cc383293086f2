"""Every label of the quality corpus quotes its cited turn: the evidence occurs verbatim in that turn's user text.

The matcher (``bench/quality_score.py``) credits a note that cites a label's
turn, so a label whose turn number drifted (an importer that now reads one
more prompt earlier in the file) silently turns a recalled item into a miss
and a correct note into a wrong one. Files are read by the product's
importers, as the bench reads them; a file absent here (not committed, not
restored into ``tests/corpus/cache``) is skipped, and so is a file from which
the importer yields no completed turn (a scrollback copy that ends on an
unanswered prompt: its labels can never be matched, as ``tests/corpus/README.md``
says).
"""

from __future__ import annotations

from bench.quality_corpus import load_corpus


def test_every_label_quotes_the_user_text_of_the_turn_it_cites() -> None:
    corpus = load_corpus()
    assert not corpus.altered, corpus.altered
    wrong = []
    checked = 0
    for f in corpus.files:
        if not f.user_text:
            continue
        cited = [(lb.turn, lb.evidence, "durable") for lb in f.labels]
        cited += [(t["turn"], t["evidence"], f"tempting {t['kind']}") for t in f.tempting]
        for turn, evidence, kind in cited:
            checked += 1
            if not evidence or evidence not in f.user_text.get(turn, ""):
                wrong.append((f.id, kind, turn, evidence[:60]))
    assert checked > 100  # the committed files alone hold hundreds of labels
    assert not wrong, wrong
