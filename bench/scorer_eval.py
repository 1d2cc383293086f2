"""Does the learned sentence scorer help the extractive engine? Per-user cross-validation on the dev split.

Usage: ``python bench/scorer_eval.py [--mirror DIR] [--split dev]``

The scorer (:mod:`bench.scorer_model`, trained by
``bench/scorer_train.py``) can join the cue rules in two ways, tried here by
wrapping the engine's functions for the run (the engine itself has no
scorer):

``boost``   keep a sentence no rule caught when its score reaches a threshold;
``filter``  drop a broader-cue hit whose score is below a threshold.

Users are the source repositories of the dev files. For each user held out,
the scorer is trained on the public sources plus the tempting items of the
*other* users' dev files, a threshold (and mode) is chosen on the other
users as the one with the highest recall whose precision stays at or above
``--min-precision``, and the held-out user is scored with it. The pooled
held-out figures say what the scorer would do for users it has not seen.
Then the same choice is made on all dev users, which is what the engine
would ship. Only ``--split dev`` is meant for development.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cairn.protocol.vocab import NoteType  # noqa: E402
from cairn.worker.providers import cues, extractive  # noqa: E402
from cairn.worker.providers.notes import one_line  # noqa: E402

from bench import scorer_model as scorer  # noqa: E402
from bench import scorer_train  # noqa: E402
from bench.quality_corpus import CORPUS, CorpusFile, load_corpus  # noqa: E402
from bench.quality_score import FileResult, Tally, load_reviewed, score_file, summarize  # noqa: E402

BOOSTS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995)
FILTERS = (0.02, 0.05, 0.1, 0.2, 0.3)
Setting = tuple[str, float | None]
Model = tuple[float, dict[str, float]]
Classified = tuple[NoteType, str, str] | None
_classify = extractive.classify
_broad = cues.broad


def _boosted(threshold: float, model: Model) -> Callable[[str], Classified]:
    """The engine's ``classify``, plus: a sentence no rule caught is kept when it could be durable and scores high."""

    def classify(sentence: str) -> Classified:
        found = _classify(sentence)
        if found is not None:
            return found
        s = one_line(sentence).replace("\u2019", "'")
        if not s or len(s) > extractive.MAX_SENTENCE or s.endswith("?"):
            return None
        lead, _ = extractive._strip_lead(s)
        body = lead[:1].upper() + lead[1:]
        plain = extractive._URL.sub(" ", lead)
        if extractive._ONE_OFF.search(plain) or extractive._vague(lead) or not _plain_statement(lead):
            return None
        if scorer.score(lead, model) < threshold:
            return None
        return _type_of(lead), lead, body

    return classify


def _filtered(threshold: float, model: Model) -> Callable[[str, str], NoteType | None]:
    """The broader cues, minus the hits that score below ``threshold``."""

    def broad(s: str, original: str) -> NoteType | None:
        kind = _broad(s, original)
        return kind if kind is None or scorer.score(s, model) >= threshold else None

    return broad


def _plain_statement(s: str) -> bool:
    """Not long, not a task or a question, not of the moment: the guards of the broader cues."""
    low = s.lower()
    if len(s) > cues.MAX_CUED or len(s.split()) < 4:
        return False
    return not (cues._TASKISH.search(low) or cues._OF_THE_MOMENT.search(low) or cues._NOW.search(low))


def _type_of(s: str) -> NoteType:
    low = s.lower()
    if cues._YOU.search(low):
        return NoteType.FEEDBACK
    return NoteType.USER if cues._FIRST_PERSON.search(low) else NoteType.PROJECT


def _run(files: Iterable[CorpusFile], setting: Setting, model: Model) -> list[FileResult]:
    """Digest ``files`` with the engine, the scorer joined as ``setting`` says; the engine is restored after."""
    mode, threshold = setting
    if mode == "boost" and threshold is not None:
        extractive.classify = _boosted(threshold, model)  # type: ignore[assignment]
    if mode == "filter" and threshold is not None:
        cues.broad = _filtered(threshold, model)  # type: ignore[assignment]
    reviewed = load_reviewed()
    try:
        return [score_file(f, [n for inp in f.inputs for n in extractive.digest(inp).notes], reviewed) for f in files]
    finally:
        extractive.classify = _classify
        cues.broad = _broad


def _settings() -> list[Setting]:
    settings: list[Setting] = [("rules", None)]
    return settings + [("boost", t) for t in BOOSTS] + [("filter", t) for t in FILTERS]


def _choose(per_setting: dict[Setting, Tally], min_precision: float) -> Setting:
    ok = [(t.recall, -i, s) for i, (s, t) in enumerate(per_setting.items()) if t.precision >= min_precision]
    return max(ok)[2] if ok else ("rules", None)


def _tally(results: list[FileResult]) -> Tally:
    return summarize(results).total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=pathlib.Path)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--min-precision", type=float, default=0.95)
    parser.add_argument("--roles", default=",".join(scorer_train.ROLES), help="source roles to train on")
    parser.add_argument("--no-cv", action="store_true", help="only the grid on all users")
    args = parser.parse_args(argv)
    manifest = {e["id"]: e["repo"] for e in json.loads((CORPUS / "manifest.json").read_text())["files"]}
    corpus = load_corpus(split=args.split)
    users: dict[str, list[CorpusFile]] = defaultdict(list)
    for f in corpus.files:
        users[manifest[f.id].split("/")[0]].append(f)
    public, counts = scorer_train.public_examples(args.mirror, args.roles.split(","))
    print(f"public examples: {counts}; {len(corpus.files)} {args.split} files, {len(users)} users")

    pooled: list[FileResult] = []
    pooled_rules: list[FileResult] = []
    chosen: list[Setting] = []
    if not args.no_cv:
        for user, held in sorted(users.items()):
            held_ids = {f.id for f in held}
            tempting = scorer_train.dev_tempting(exclude_files=held_ids)
            model = scorer_train.train(public + [(s, 0, "dev-tempting") for s in tempting])
            others = [f for f in corpus.files if f.id not in held_ids]
            grid = {s: _tally(_run(others, s, model)) for s in _settings()}
            setting = _choose(grid, args.min_precision)
            chosen.append(setting)
            held_results = _run(held, setting, model)
            h = _tally(held_results)
            print(f"  held out {user} ({len(held)} files): {setting[0]} {setting[1]}, {h.recalled}/{h.labels} recalled, {h.correct}/{h.notes} right")
            pooled += held_results
            pooled_rules += _run(held, ("rules", None), model)
        r, c = _tally(pooled_rules), _tally(pooled)
        print(f"per-user CV, rules only:      recall {r.recall:.3f} precision {r.precision:.3f}")
        print(f"per-user CV, rules + scorer:  recall {c.recall:.3f} precision {c.precision:.3f}")
        print(f"settings chosen per fold: {chosen}")

    model = scorer_train.train(public + [(s, 0, "dev-tempting") for s in scorer_train.dev_tempting()])
    print(f"all {args.split} users, scorer trained with every dev tempting item:")
    for s in _settings():
        t = _tally(_run(corpus.files, s, model))
        print(f"  {s[0]:6} {s[1]!s:6} recall {t.recall:.3f} ({t.recalled}/{t.labels}) precision {t.precision:.3f} ({t.correct}/{t.notes})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
