"""The scorer experiment of ADR 0008 (revision) is reproducible: deterministic features, training and scores.

The engine does not use the scorer (it did not help on dev); these tests keep
``bench/scorer_train.py`` and ``bench/scorer_model.py`` working so the
experiment can be re-run from ``bench/scorer_sources.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench import scorer_model, scorer_train

POSITIVE = [
    "Always run the linter before committing.",
    "We use pnpm for every package in this repository.",
    "Tests live in the tests folder next to the code.",
    "Prefer small functions with clear names.",
    "Never commit secrets to the repository.",
    "The API is written in Go and deployed to Fly.",
]
NEGATIVE = [
    "fix the login button on the settings page",
    "add a spinner while the upload runs",
    "the build fails again with a type error",
    "update the readme with the new screenshots",
    "remove the debug logs from main.py",
    "why does the page reload twice",
]


def _examples() -> list[scorer_train.Example]:
    return [(s, 1, f"p{i % 3}") for i, s in enumerate(POSITIVE)] + [(s, 0, f"n{i % 3}") for i, s in enumerate(NEGATIVE)]


def test_features_are_deterministic_and_lower_cased() -> None:
    feats = scorer_model.features("We use PNPM, always.")
    assert feats == sorted(set(feats))
    assert {"w:we", "w:pnpm", "b:we_use", "s:we", "s2:we_use"} <= set(feats)
    assert scorer_model.features("We use PNPM, always.") == feats


def test_training_is_deterministic_and_separates_its_examples() -> None:
    first = scorer_train.train(_examples(), min_repos=1, epochs=20)
    assert scorer_train.train(_examples(), min_repos=1, epochs=20) == first
    assert all(scorer_model.score(s, first) > 0.5 for s in POSITIVE)
    assert all(scorer_model.score(s, first) < 0.5 for s in NEGATIVE)


def test_a_feature_of_too_few_repositories_is_dropped() -> None:
    _, weights = scorer_train.train(_examples(), min_repos=2, epochs=5)
    assert "w:pnpm" not in weights  # one repository only
    assert any(f.startswith("w:") for f in weights)


def test_weights_round_trip_through_json(tmp_path: Path) -> None:
    bias, weights = scorer_train.train(_examples(), min_repos=1)
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"bias": bias, "weights": weights}), encoding="utf-8")
    loaded = scorer_model.load(path)
    assert scorer_model.score(POSITIVE[0], loaded) == scorer_model.score(POSITIVE[0], (bias, weights))


def test_commit_subjects_lose_their_conventional_prefix() -> None:
    log = "feat(ui): add a dark theme toggle\nfix: typo\nchore!: drop the old build script\n[ci] run tests on pull requests\n"
    assert scorer_train.commit_sentences(log) == [
        "add a dark theme toggle", "drop the old build script", "run tests on pull requests",
    ]


def test_instruction_files_keep_prose_and_bullets_not_headings_tables_or_code() -> None:
    text = "# Guide\n\n- Use pnpm for installs.\n- Keep modules small and focused.\n\n| a | b |\n\n```sh\nrm -rf /tmp/x && echo done\n```\n"
    assert scorer_train.instruction_sentences(text) == ["Use pnpm for installs.", "Keep modules small and focused."]
