"""Train and cross-validate the engine's gold-label sentence scorer (:mod:`worker.providers.scorer_gold`).

Usage::

    python bench/scorer_gold_train.py [--min-owners N] [--l2 X] [--epochs N] [--cue-features]

Dev split only, always: the test split's labels, transcripts and notes are
never read (:func:`load_corpus` is called with ``split="dev"``).

Candidates are the sentences of the user turns as the engine cuts them
(``extractive._units``, aider hand-offs skipped). A candidate is *positive*
when it carries a durable label of its turn: it holds at least half of the
evidence's word tokens, or at least 70 % of its own tokens (three or more)
are evidence tokens (long evidence spans several sentences). Everything else
is negative, tempting items included. Labels come from the corpus, never
from the engine's output, so rule changes do not invalidate the weights.

Model: logistic regression over :func:`scorer_gold.features`, classes
balanced, L2, Adagrad SGD in a seeded order (deterministic); a word feature
must occur in the training sentences of at least ``--min-owners``
repository owners, so project names and topics of one user are not learnt.

Measure: leave-one-owner-out cross-validation (owner = the repository owner
in the manifest). Each fold trains without the held-out owner's files, then
the engine digests that owner's files with the fold's scores joined to it
(:func:`engine`), and the notes are scored by :mod:`bench.quality_score`
(the bench's matcher and reviewed list). Tallies are pooled over folds for
*rules* (the engine as it is), *rules filtered* (a rule's note dropped when
the scorer rates it below a floor), *scorer* (the scorer alone, cue rules
off) and *both* (a sentence the rules drop is kept when it scores at least
the threshold), at each threshold. Nothing is written: the scorer did not
beat the rules (ADR 0008, last revision), so no weights are shipped.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cairn.worker.providers import extractive  # noqa: E402
from cairn.worker.providers.notes import one_line  # noqa: E402

from bench import scorer_gold_model as scorer_gold  # noqa: E402
from bench.quality_corpus import CORPUS, CorpusFile, load_corpus  # noqa: E402
from bench.quality_score import Tally, load_reviewed, score_file, tokens  # noqa: E402

FILTERS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.5)
THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.998, 0.999)


@dataclass(frozen=True)
class Candidate:
    file: str
    owner: str
    text: str
    place: scorer_gold.Place
    positive: bool
    feats: tuple[str, ...]


def owners() -> dict[str, str]:
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    return {e["id"]: e["repo"].split("/")[0].lower() for e in manifest["files"] if e["split"] == "dev"}


def _positive(text: str, evidences: Sequence[set[str]]) -> bool:
    own = set(tokens(text))
    for ev in evidences:
        if ev and len(ev & own) / len(ev) >= 0.5:
            return True
        if len(own) >= 3 and len(own & ev) / len(own) >= 0.7:
            return True
    return False


def candidates(files: Sequence[CorpusFile], owner_of: dict[str, str], *, cue_features: bool = False) -> list[Candidate]:
    out: list[Candidate] = []
    for f in files:
        evidence: dict[str, list[set[str]]] = defaultdict(list)
        for label in f.labels:
            evidence[label.turn].append(set(tokens(label.evidence)))
        for inp in f.inputs:
            for index, turn in enumerate(inp.turns):
                if extractive._HANDOFF.match(turn.user.lstrip()):
                    continue
                units = extractive._units(turn.user)
                for sentences, where in zip(units, scorer_gold.places(turn.user, units, index), strict=True):
                    for sentence, place in zip(sentences, where, strict=True):
                        text = one_line(sentence)
                        if len(text) > scorer_gold.MAX_SENTENCE or len(text.split()) < 3:
                            continue  # the hook never scores these
                        feats = scorer_gold.features(text, place)
                        if cue_features:  # the rules' verdict as a feature (ties the weights to the rules)
                            found = extractive.classify(sentence)
                            feats.append(f"f:cue-{found[0].value if found else 'none'}")
                        out.append(Candidate(
                            f.id, owner_of[f.id], text, place, _positive(text, evidence.get(turn.turn_id, [])),
                            tuple(feats),
                        ))
    return out


def train(data: Sequence[Candidate], *, min_owners: int = 3, l2: float = 1e-4, epochs: int = 12,
          seed: int = 7) -> tuple[float, dict[str, float]]:
    """A balanced L2 logistic regression by Adagrad SGD in a seeded order."""
    seen: dict[str, set[str]] = defaultdict(set)
    for c in data:
        for feat in c.feats:
            seen[feat].add(c.owner)
    # word features must be shared by owners; form and place features always count
    keep = {f for f, who in seen.items() if f.startswith(("f:", "len:", "tlen:", "pos:")) or len(who) >= min_owners}
    pos = sum(1 for c in data if c.positive)
    neg = len(data) - pos
    w_pos, w_neg = len(data) / (2 * max(pos, 1)), len(data) / (2 * max(neg, 1))
    rows = [([f for f in c.feats if f in keep], 1.0 if c.positive else 0.0) for c in data]
    order = list(range(len(rows)))
    rng = random.Random(seed)
    weights: dict[str, float] = defaultdict(float)
    grad2: dict[str, float] = defaultdict(lambda: 1e-8)
    bias, bias_g2, rate = 0.0, 1e-8, 0.5
    for _ in range(epochs):
        rng.shuffle(order)
        for i in order:
            feats, y = rows[i]
            p = scorer_gold.probability(feats, bias, weights)
            g = (p - y) * (w_pos if y else w_neg)
            bias_g2 += g * g
            bias -= rate * g / math.sqrt(bias_g2)
            for f in feats:
                gf = g + l2 * weights[f]
                grad2[f] += gf * gf
                weights[f] -= rate * gf / math.sqrt(grad2[f])
    return bias, {f: round(w, 4) for f, w in sorted(weights.items()) if abs(w) >= 1e-3}


Table = dict[tuple[str, scorer_gold.Place], float]


@contextmanager
def engine(mode: str, table: Table, threshold: float) -> Iterator[dict[str, int]]:
    """The engine as *rules*, *scorer* (cue rules off), *both* or *filter:LOW*, for the run only.

    The scorer joins the engine where a hook would: a sentence the cue rules
    drop becomes a note when its precomputed score is ``>= threshold``. The
    engine's ``_units`` is wrapped to learn each sentence's place and its
    ``classify`` to consult the scores, in the order the engine calls them.
    The yielded dict maps a turn's text to its index; fill it per session.
    """
    units, classify = extractive._units, extractive.classify
    turn_index: dict[str, int] = {}
    queue: list[scorer_gold.Place] = []

    def placed_units(text: str) -> list[list[str]]:
        found = units(text)
        queue[:] = [p for row in scorer_gold.places(text, found, turn_index.get(text, 0)) for p in row][::-1]
        return found

    def joined(sentence: str) -> object:
        place = queue.pop()
        text = one_line(sentence)
        p = table.get((text, place))
        found = None if mode == "scorer" else classify(sentence)
        if mode.startswith("filter:"):  # a rule's note is kept unless the scorer rates it below LOW
            return found if found is None or p is None or p >= float(mode[7:]) else None
        if found is None and mode in ("scorer", "both") and p is not None and p >= threshold:
            return scorer_gold.note_type(text), text, text[:1].upper() + text[1:]
        return found

    extractive._units = placed_units  # type: ignore[assignment]
    extractive.classify = joined  # type: ignore[assignment]
    try:
        yield turn_index
    finally:
        extractive._units, extractive.classify = units, classify  # type: ignore[assignment]


def tally(files: Sequence[CorpusFile], mode: str, table: Table, threshold: float,
          reviewed: dict[str, str]) -> tuple[Tally, int]:
    total, kept = Tally(), 0
    with engine(mode, table, threshold) as turn_index:
        for f in files:
            notes = []
            for inp in f.inputs:
                turn_index.clear()
                turn_index.update((t.user, i) for i, t in reversed(list(enumerate(inp.turns))))
                notes.extend(extractive.digest(inp).notes)
            r = score_file(f, notes, reviewed)
            total.add(r.tally)
            kept += r.tempting_kept
    return total, kept


def cross_validate(files: Sequence[CorpusFile], data: Sequence[Candidate], **options: float) -> None:
    reviewed = load_reviewed()
    by_owner: dict[str, list[CorpusFile]] = defaultdict(list)
    for f in files:
        by_owner[owners()[f.id]].append(f)
    pooled: dict[tuple[str, float], Tally] = defaultdict(Tally)
    kept: Counter[tuple[str, float]] = Counter()
    folds = sorted(by_owner)
    for n, owner in enumerate(folds, 1):
        bias, weights = train([c for c in data if c.owner != owner], **options)  # type: ignore[arg-type]
        table = {(c.text, c.place): scorer_gold.probability(list(c.feats), bias, weights)
                 for c in data if c.owner == owner}
        held = by_owner[owner]
        t, k = tally(held, "rules", table, 1.0, reviewed)
        pooled["rules", 0.0].add(t)
        kept["rules", 0.0] += k
        for low in FILTERS:
            t, k = tally(held, f"filter:{low}", table, 1.0, reviewed)
            pooled[f"filter:{low}", 0.0].add(t)
            kept[f"filter:{low}", 0.0] += k
        for threshold in THRESHOLDS:
            for mode in ("scorer", "both"):
                t, k = tally(held, mode, table, threshold, reviewed)
                pooled[mode, threshold].add(t)
                kept[mode, threshold] += k
        print(f"fold {n}/{len(folds)} {owner}: {len(held)} files", file=sys.stderr)
    print(f"leave-one-owner-out, {len(folds)} owners, {len(files)} dev files")
    print("| engine | threshold | recall | precision | notes | tempting kept |")
    print("|---|---|---|---|---|---|")
    r = pooled["rules", 0.0]
    print(f"| rules | – | {r.recall:.3f} ({r.recalled}/{r.labels}) | {r.precision:.3f} | {r.notes} | {kept['rules', 0.0]} |")
    for low in FILTERS:
        r = pooled[f"filter:{low}", 0.0]
        print(f"| rules, filtered below {low} | – | {r.recall:.3f} ({r.recalled}/{r.labels}) | {r.precision:.3f} | "
              f"{r.notes} | {kept[f'filter:{low}', 0.0]} |")
    for mode in ("scorer", "both"):
        for threshold in THRESHOLDS:
            r = pooled[mode, threshold]
            print(f"| {mode} | {threshold} | {r.recall:.3f} ({r.recalled}/{r.labels}) | {r.precision:.3f} | "
                  f"{r.notes} | {kept[mode, threshold]} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-owners", type=int, default=3)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--cue-features", action="store_true", help="add the cue rules' verdict as a feature")
    args = parser.parse_args(argv)
    corpus = load_corpus(split="dev")  # never the test split
    data = candidates(corpus.files, owners(), cue_features=args.cue_features)
    pos = sum(1 for c in data if c.positive)
    print(f"{len(corpus.files)} dev files ({len(corpus.missing) + len(corpus.altered)} missing), "
          f"{len(data)} candidates, {pos} positive", file=sys.stderr)
    cross_validate(corpus.files, data, min_owners=args.min_owners, l2=args.l2, epochs=args.epochs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
