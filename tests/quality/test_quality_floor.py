"""The embedded engine keeps its quality on the dev split of the real-transcript corpus.

``floor.json`` records recall and precision of the extractive engine on the
dev split, measured with ``bench/quality.py`` when the floor was last raised.
A change to the engine that loses either figure fails here. Two floors:

``dev-committed``  the dev files the repository carries (always present);
``dev``            every dev file, including those restored by
                   ``tests/corpus/fetch.py`` (skipped when some are absent).

Only the dev split is ever checked here: the test split is for the figures
reported in ``bench/README.md`` and must not steer the engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cairn.worker.providers import extractive

from bench.quality_corpus import load_corpus
from bench.quality_score import Tally, load_reviewed, score_file, summarize

FLOOR = json.loads((Path(__file__).with_name("floor.json")).read_text(encoding="utf-8"))


def _measure(*, committed_only: bool) -> tuple[Tally, int, int]:
    corpus = load_corpus(split="dev", committed_only=committed_only)
    reviewed = load_reviewed()
    results = [
        score_file(f, [note for inp in f.inputs for note in extractive.digest(inp).notes], reviewed)
        for f in corpus.files
    ]
    return summarize(results).total, len(corpus.files), len(corpus.missing) + len(corpus.altered)


def _check(name: str, total: Tally, files: int) -> None:
    floor = FLOOR[name]
    assert files == floor["files"], f"{name}: {files} files scored, the floor was measured on {floor['files']}"
    assert total.recall >= floor["recall"], f"{name}: recall {total.recall:.3f} < floor {floor['recall']}"
    assert total.precision >= floor["precision"], f"{name}: precision {total.precision:.3f} < floor {floor['precision']}"


def test_committed_dev_files_hold_the_floor() -> None:
    total, files, _ = _measure(committed_only=True)
    _check("dev-committed", total, files)


def test_all_dev_files_hold_the_floor() -> None:
    total, files, missing = _measure(committed_only=False)
    if missing:
        pytest.skip(f"{missing} dev files absent (restore them with tests/corpus/fetch.py)")
    _check("dev", total, files)
