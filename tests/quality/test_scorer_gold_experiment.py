"""The gold-label scorer experiment of ADR 0008 (last revision) is reproducible and leaves the engine as it was.

The engine does not use this scorer (it did not beat the rules on held-out
owners); these tests keep ``bench/scorer_gold_train.py`` and
``bench/scorer_gold_model.py`` working so the experiment can be re-run, and
check that joining the scorer to the engine for a run never outlives it.
"""

from __future__ import annotations

import json

from cairn.protocol.digest import DigestInput
from cairn.protocol.transcript import Turn
from cairn.protocol.vocab import NoteType
from cairn.worker.providers import blocks, extractive

from bench import scorer_gold_model as model
from bench import scorer_gold_train as trainer

TEXT = "## Conventions\n\n- We deploy with fly.io from the main branch.\n- Tests live in `tests/`.\n\nfix the login page"


def _candidates() -> list[trainer.Candidate]:
    rows = [
        ("We deploy with fly.io from the main branch.", True, "a"),
        ("Tests live in the tests folder next to the code.", True, "b"),
        ("Always run the linter before committing.", True, "c"),
        ("fix the login button on the settings page", False, "a"),
        ("why does the page reload twice?", False, "b"),
        ("add a spinner while the upload runs", False, "c"),
    ]
    place = model.Place()
    return [trainer.Candidate("f", owner, text, place, y, tuple(model.features(text, place))) for text, y, owner in rows]


def test_features_are_sorted_unique_and_see_the_place() -> None:
    units = extractive._units(TEXT)
    places = model.places(TEXT, units, turn=0)
    assert [len(row) for row in places] == [len(unit) for unit in units]
    flat = [(s, p) for unit, row in zip(units, places, strict=True) for s, p in zip(unit, row, strict=True)]
    deploy = next(p for s, p in flat if s.startswith("We deploy"))
    task = next(p for s, p in flat if s.startswith("fix the"))
    assert deploy.listed and deploy.heading and deploy.turn == 0
    assert not task.listed
    feats = model.features("We deploy with fly.io, always.", deploy)
    assert feats == sorted(set(feats))
    assert {"w:we", "b:we_deploy", "s:we", "f:we", "f:modal", "f:listed", "f:heading", "f:turn0"} <= set(feats)


def test_training_is_deterministic() -> None:
    data = _candidates()
    assert trainer.train(data, min_owners=1) == trainer.train(data, min_owners=1)
    assert trainer.train_stumps(data, min_owners=1, rounds=10) == trainer.train_stumps(data, min_owners=1, rounds=10)
    assert trainer.train_averaged(data, seeds=3, min_owners=1) == trainer.train_averaged(data, seeds=3, min_owners=1)
    bias, weights = trainer.train(data, min_owners=1)
    yes = model.probability(list(data[0].feats), bias, weights)
    no = model.probability(list(data[3].feats), bias, weights)
    assert 0.0 <= no < yes <= 1.0


def test_joining_the_scorer_is_undone_after_the_run() -> None:
    saved = (extractive._units, extractive.classify, blocks.blocks)
    inp = DigestInput(session_id="s", title=None, turns=(
        Turn(turn_id="0.0", parent_turn_id=None, user="Rupiah is the primary currency here.", assistant=""),
    ))
    place = model.Place(turn=0, index=0, sentences=1, turn_chars=36)
    table = {("Rupiah is the primary currency here.", place): 0.99}
    with trainer.engine("both", table, 0.9) as turn_index:
        turn_index["Rupiah is the primary currency here."] = 0
        notes = extractive.digest(inp).notes
    assert [(n.type, n.body) for n in notes] == [(NoteType.PROJECT, "Rupiah is the primary currency here.")]
    assert (extractive._units, extractive.classify, blocks.blocks) == saved
    assert extractive.digest(inp).notes == ()
    with trainer.engine("scorer", table, 0.9):
        assert blocks.blocks("Tech stack:\n- Next.js\n- Postgres") == []
    assert (extractive._units, extractive.classify, blocks.blocks) == saved


def test_sentence_vectors_are_binned_per_dimension_and_a_missing_one_is_marked(tmp_path) -> None:
    data = _candidates()
    vectors = {c.text: [float(i), float(-i)] for i, c in enumerate(data[:-1])}  # the last sentence has none
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(vectors), encoding="utf-8")
    out = trainer.with_sentence_vectors(data, path)
    assert [c.text for c in out] == [c.text for c in data]
    extra = [[f for f in c.feats if f.startswith("e:")] for c in out]
    assert extra[-1] == ["e:none"]
    assert extra[0] == ["e:0:0", "e:1:3"] and extra[4] == ["e:0:3", "e:1:0"]  # lowest / highest quartile
    assert all(set(c.feats) >= set(d.feats) for c, d in zip(out, data, strict=True))
