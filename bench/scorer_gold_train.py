"""Train and cross-validate a sentence scorer on the corpus's gold labels (:mod:`bench.scorer_gold_model`).

Usage::

    python bench/scorer_gold_train.py [--stumps | --average N] [--guarded-only] [--cue-features] [--context]
                                      [--train-owners K] [--vectors FILE] [--sentence-vectors FILE] [--dump-texts FILE]
                                      [--min-owners N] [--l2 X] [--epochs N] [--seed N]

Dev split only, always: the test split's labels, transcripts and notes are
never read (:func:`load_corpus` is called with ``split="dev"``).

Candidates are the sentences of the user turns as the engine cuts them
(``extractive._units``, aider hand-offs skipped, 3 words to 400 characters).
A candidate is *positive* when it carries a durable label of its turn: it
holds at least half of the evidence's word tokens, or at least 70 % of its
own tokens (three or more) are evidence tokens (long evidence spans several
sentences). Everything else is negative, tempting items included. Labels
come from the corpus, never from the engine's output.

Models (both give a bias and a weight per feature, read by
:func:`scorer_gold_model.probability`): logistic regression, classes
balanced, L2, Adagrad SGD in a seeded order (:func:`train`; ``--average N``
takes the mean over seeds 1..N, :func:`train_averaged`); or boosted
stumps (``--stumps``, :func:`train_stumps`). A word feature must occur in the
training sentences of at least ``--min-owners`` repository owners, so one
user's project names and topics are not learnt. ``--guarded-only`` trains
on the sentences that pass :func:`guarded`; ``--cue-features`` adds the
rules' verdict as a feature; ``--context`` adds features of the sentence's
session (:func:`context_features`: the assistant's reply acknowledges a
correction or promises to remember, the assistant had just asked a question,
how many turns follow, how often the sentence's longer words recur in later
user and assistant turns).

Measure: leave-one-owner-out cross-validation (owner = the repository owner
in the manifest). Each fold trains without the held-out owner's files, then
the engine digests that owner's files with the fold's scores joined to it
(:func:`engine`), and the notes are scored by :mod:`bench.quality_score`
(the bench's matcher and reviewed list). Tallies are pooled over folds for
*rules* (the engine as it is, list-shaped facts of ``blocks`` included), *rules filtered* (a rule's note dropped when
the scorer rates it below a floor), *scorer* (the scorer alone, cue rules and
blocks off), *both* (a sentence the rules drop is kept when it scores at least the
threshold) and *gated* (the same, only for sentences that pass
:func:`guarded`), at each threshold; then with each owner's threshold chosen
on the other owners. Nothing is written: the scorer did not beat the rules
(ADR 0008, last revision), so no weights are shipped.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cairn.protocol.digest import Note  # noqa: E402
from cairn.protocol.vocab import NoteType  # noqa: E402
from cairn.worker.providers import blocks, cues, extractive  # noqa: E402
from cairn.worker.providers.notes import one_line  # noqa: E402

from bench import scorer_gold_model as scorer_gold  # noqa: E402
from bench.quality_corpus import CORPUS, CorpusFile, load_corpus  # noqa: E402
from bench.quality_score import Tally, load_reviewed, score_file, tokens  # noqa: E402

FILTERS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.5)
THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999)


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


_ACK = re.compile(
    r"^\W*(?:you'?re (?:absolutely |completely |totally |quite )?(?:right|correct)|good (?:catch|point|call)"
    r"|great (?:point|catch|call)|understood|got it|noted|i understand|my (?:apologies|mistake|bad)|i apologi[sz]e"
    r"|sorry|thanks for (?:the )?(?:clarif|correct)|that makes sense)",
    re.I,
)
_PROMISE = re.compile(
    r"\b(?:i'?ll (?:remember|keep (?:that|this|it) in mind|make sure to|always|never|from now on)"
    r"|(?:from now on|going forward|in (?:the )?future),? i'?ll|i will (?:remember|always|never))",
    re.I,
)
_CONTENT = re.compile(r"[a-z][a-z0-9_+#.-]{4,}[a-z0-9+#]")


def context_features(turns: Sequence[Any], index: int, text: str) -> list[str]:
    """Features of where a sentence's turn sits in its session: the reply's reaction, later recurrence."""
    reply = turns[index].assistant.lstrip()[:400].replace("\u2019", "'")
    feats = []
    if _ACK.search(reply):
        feats.append("c:ack")
    if _PROMISE.search(turns[index].assistant[:3000].replace("\u2019", "'")):
        feats.append("c:promise")
    if index and "?" in turns[index - 1].assistant[-800:]:
        feats.append("c:answer")
    later = turns[index + 1:]
    feats.append(f"c:left:{scorer_gold._bucket(len(later), (0, 2, 5, 10, 25))}")
    words = set(_CONTENT.findall(text.lower()))
    if words and later:
        docs_u = [t.user.lower() for t in later]
        docs_a = [t.assistant.lower() for t in later]
        fu = [sum(1 for d in docs_u if w in d) / len(later) for w in words]
        fa = [sum(1 for d in docs_a if w in d) / len(later) for w in words]
        feats.append(f"c:ru:{scorer_gold._bucket(int(100 * max(fu)), (0, 10, 30, 60))}")
        feats.append(f"c:ra:{scorer_gold._bucket(int(100 * max(fa)), (0, 10, 30, 60))}")
        feats.append(f"c:rm:{scorer_gold._bucket(int(100 * sum(fa) / len(fa)), (0, 5, 15, 40))}")
    return feats


def candidates(files: Sequence[CorpusFile], owner_of: dict[str, str], *, cue_features: bool = False,
               context: bool = False) -> list[Candidate]:
    out: list[Candidate] = []
    for f in files:
        evidence: dict[str, list[set[str]]] = defaultdict(list)
        for label in f.labels:
            evidence[label.turn].append(set(tokens(label.evidence)))
        for inp in f.inputs:
            for index, turn in enumerate(inp.turns):
                if extractive._HANDOFF.match(turn.user.lstrip()):
                    continue
                own = extractive._own_words(turn.user)
                units = extractive._units(own)
                for sentences, where in zip(units, scorer_gold.places(own, units, index), strict=True):
                    for sentence, place in zip(sentences, where, strict=True):
                        text = one_line(sentence)
                        if len(text) > scorer_gold.MAX_SENTENCE or len(text.split()) < 3:
                            continue  # the hook never scores these
                        feats = scorer_gold.features(text, place)
                        if context:
                            feats = sorted(feats + context_features(inp.turns, index, text))
                        if cue_features:  # the rules' verdict as a feature (ties the weights to the rules)
                            found = extractive.classify(sentence)
                            feats.append(f"f:cue-{found[0].value if found else 'none'}")
                        out.append(Candidate(
                            f.id, owner_of[f.id], text, place, _positive(text, evidence.get(turn.turn_id, [])),
                            tuple(feats),
                        ))
    return out


def with_vectors(data: Sequence[Candidate], path: pathlib.Path) -> list[Candidate]:
    """Add word-vector features: the mean vector of a sentence's words, each dimension binned at its quartiles.

    ``path`` is a JSON object word -> vector (e.g. pretrained GloVe vectors of the corpus's words, made outside
    this repository); the bins are computed over all candidates (no label is read).
    """
    vectors: dict[str, list[float]] = json.loads(path.read_text(encoding="utf-8"))
    dims = len(next(iter(vectors.values())))
    means: list[list[float] | None] = []
    for c in data:
        found = [vectors[w] for w in scorer_gold._WORD.findall(c.text.lower()) if w in vectors]
        means.append([sum(v[d] for v in found) / len(found) for d in range(dims)] if found else None)
    return _binned(data, means, "g")


def with_sentence_vectors(data: Sequence[Candidate], path: pathlib.Path) -> list[Candidate]:
    """Add sentence-embedding features: each dimension of the sentence's own vector, binned at its quartiles.

    ``path`` is a JSON object sentence text -> vector, one entry per candidate text (e.g. the output of a
    pretrained sentence encoder run outside this repository over the candidates that ``--dump-texts`` writes).
    """
    vectors: dict[str, list[float]] = json.loads(path.read_text(encoding="utf-8"))
    return _binned(data, [vectors.get(c.text) for c in data], "e")


def _binned(data: Sequence[Candidate], means: Sequence[list[float] | None], prefix: str) -> list[Candidate]:
    dims = len(next(m for m in means if m is not None))
    cuts = []
    for d in range(dims):
        column = sorted(m[d] for m in means if m is not None)
        cuts.append([column[len(column) * q // 4] for q in (1, 2, 3)])
    out = []
    for c, m in zip(data, means, strict=True):
        extra = (
            [f"{prefix}:none"] if m is None else [f"{prefix}:{d}:{sum(m[d] > cut for cut in cuts[d])}" for d in range(dims)]
        )
        out.append(Candidate(c.file, c.owner, c.text, c.place, c.positive, tuple(sorted((*c.feats, *extra)))))
    return out


def train(data: Sequence[Candidate], *, min_owners: int = 3, l2: float = 1e-3, epochs: int = 6,
          seed: int = 7) -> tuple[float, dict[str, float]]:
    """A balanced L2 logistic regression by Adagrad SGD in a seeded order."""
    seen: dict[str, set[str]] = defaultdict(set)
    for c in data:
        for feat in c.feats:
            seen[feat].add(c.owner)
    # word features must be shared by owners; form and place features always count
    keep = {f for f, who in seen.items() if f.startswith(("f:", "len:", "tlen:", "pos:", "c:", "g:")) or len(who) >= min_owners}
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


def train_averaged(data: Sequence[Candidate], *, seeds: int = 5, **options: float) -> tuple[float, dict[str, float]]:
    """The mean of :func:`train` over seeds ``1..seeds``: SGD's dependence on the order averaged out."""
    bias = 0.0
    weights: dict[str, float] = defaultdict(float)
    for seed in range(1, seeds + 1):
        b, w = train(data, seed=seed, **options)  # type: ignore[arg-type]
        bias += b / seeds
        for f, v in w.items():
            weights[f] += v / seeds
    return round(bias, 4), {f: round(v, 4) for f, v in sorted(weights.items()) if abs(v) >= 1e-3}


def train_stumps(data: Sequence[Candidate], *, min_owners: int = 3, rounds: int = 150, shrink: float = 0.3,
                 lam: float = 5.0, **unused: float) -> tuple[float, dict[str, float]]:
    """Gradient-boosted stumps on the binary features, classes balanced (Newton steps, logistic loss).

    A stump on a binary feature adds ``v1`` when the feature is present and
    ``v0`` when absent, so the sum of stumps is again a bias plus a weight per
    feature: the same model form as :func:`train`, chosen greedily and sparse.
    """
    seen: dict[str, set[str]] = defaultdict(set)
    for c in data:
        for feat in c.feats:
            seen[feat].add(c.owner)
    keep = {f for f, who in seen.items() if f.startswith(("f:", "len:", "tlen:", "pos:", "c:", "g:")) or len(who) >= min_owners}
    rows = [[f for f in c.feats if f in keep] for c in data]
    ys = [1.0 if c.positive else 0.0 for c in data]
    pos = sum(ys)
    cw = [len(ys) / (2 * pos) if y else len(ys) / (2 * (len(ys) - pos)) for y in ys]
    margin = [0.0] * len(rows)
    bias = 0.0
    weights: dict[str, float] = defaultdict(float)
    for _ in range(rounds):
        g_all = h_all = 0.0
        gs: dict[str, float] = defaultdict(float)
        hs: dict[str, float] = defaultdict(float)
        for i, feats in enumerate(rows):
            p = 1.0 / (1.0 + math.exp(-margin[i]))
            g, h = (p - ys[i]) * cw[i], max(p * (1 - p), 1e-6) * cw[i]
            g_all += g
            h_all += h
            for f in feats:
                gs[f] += g
                hs[f] += h
        best, best_gain, best_v = "", -1.0, (0.0, 0.0)
        for f in sorted(gs):
            g1, h1 = gs[f], hs[f]
            g0, h0 = g_all - g1, h_all - h1
            gain = g1 * g1 / (h1 + lam) + g0 * g0 / (h0 + lam)
            if gain > best_gain:
                best, best_gain, best_v = f, gain, (-g1 / (h1 + lam), -g0 / (h0 + lam))
        v1, v0 = shrink * best_v[0], shrink * best_v[1]
        bias += v0
        weights[best] += v1 - v0
        for i, feats in enumerate(rows):
            margin[i] += v1 if best in feats else v0
    return bias, {f: round(w, 4) for f, w in sorted(weights.items()) if abs(w) >= 1e-3}


Table = dict[tuple[str, scorer_gold.Place], float]


def guarded(text: str) -> bool:
    """The engine's own drop rules and task guards, before the scorer may keep a sentence (mode *gated*)."""
    low = text.lower()
    return not (
        low.rstrip("\"') ").endswith("?") or "@" in low or extractive._ONE_OFF.search(low)
        or extractive._STATUS.search(low) or cues._TASKISH.search(low) or cues._OF_THE_MOMENT.search(low)
    )


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

    def joined(sentence: str) -> tuple[NoteType, str, str] | None:
        place = queue.pop()
        text = one_line(sentence)
        p = table.get((text, place))
        found = None if mode == "scorer" else classify(sentence)
        if mode.startswith("filter:"):  # a rule's note is kept unless the scorer rates it below LOW
            return found if found is None or p is None or p >= float(mode[7:]) else None
        if mode == "gated" and not guarded(text):
            return found
        if found is None and mode in ("scorer", "both", "gated") and p is not None and p >= threshold:
            return scorer_gold.note_type(text), text, text[:1].upper() + text[1:]
        return found

    shapes = blocks.blocks
    extractive._units = placed_units
    extractive.classify = joined
    if mode == "scorer":
        blocks.blocks = lambda text: []
    try:
        yield turn_index
    finally:
        extractive._units, extractive.classify, blocks.blocks = units, classify, shapes


def tally(files: Sequence[CorpusFile], mode: str, table: Table, threshold: float,
          reviewed: dict[str, str]) -> tuple[Tally, int]:
    total, kept = Tally(), 0
    with engine(mode, table, threshold) as turn_index:
        for f in files:
            notes: list[Note] = []
            for inp in f.inputs:
                turn_index.clear()
                turn_index.update(
                    (extractive._own_words(t.user), i) for i, t in reversed(list(enumerate(inp.turns)))
                )
                notes.extend(extractive.digest(inp).notes)
            r = score_file(f, notes, reviewed)
            total.add(r.tally)
            kept += r.tempting_kept
    return total, kept


Setting = tuple[str, float]  # engine mode, threshold
MODES = ("scorer", "both", "gated")


def _row(name: str, threshold: str, r: Tally, kept: int) -> str:
    return f"| {name} | {threshold} | {r.recall:.3f} ({r.recalled}/{r.labels}) | {r.precision:.3f} | {r.notes} | {kept} |"


def _pool(per_owner: dict[str, dict[Setting, tuple[Tally, int]]], who: Sequence[str], setting: Setting) -> tuple[Tally, int]:
    total, kept = Tally(), 0
    for owner in who:
        t, k = per_owner[owner][setting]
        total.add(t)
        kept += k
    return total, kept


Fit = Callable[..., tuple[float, dict[str, float]]]


def cross_validate(files: Sequence[CorpusFile], data: Sequence[Candidate], fit: Fit, *, train_owners: int = 0,
                   **options: float) -> None:
    """Leave-one-owner-out figures, pooled over folds; then thresholds chosen on the other owners.

    ``train_owners`` > 0 trains each fold on that many of the other owners, drawn at random (seed 1): the
    learning curve, which says whether more labelled owners would help.
    """
    draw = random.Random(1)
    reviewed = load_reviewed()
    by_owner: dict[str, list[CorpusFile]] = defaultdict(list)
    for f in files:
        by_owner[owners()[f.id]].append(f)
    folds = sorted(by_owner)
    settings: list[Setting] = [("rules", 0.0)] + [(f"filter:{low}", 0.0) for low in FILTERS]
    settings += [(mode, threshold) for mode in MODES for threshold in THRESHOLDS]
    per_owner: dict[str, dict[Setting, tuple[Tally, int]]] = {}
    for n, owner in enumerate(folds, 1):
        others = [o for o in folds if o != owner]
        chosen_owners = set(draw.sample(others, train_owners)) if 0 < train_owners < len(others) else set(others)
        bias, weights = fit([c for c in data if c.owner in chosen_owners], **options)
        table = {(c.text, c.place): scorer_gold.probability(list(c.feats), bias, weights)
                 for c in data if c.owner == owner}
        per_owner[owner] = {(mode, t): tally(by_owner[owner], mode, table, t, reviewed) for mode, t in settings}
        print(f"fold {n}/{len(folds)} {owner}: {len(by_owner[owner])} files", file=sys.stderr)
    print(f"leave-one-owner-out, {len(folds)} owners, {len(files)} dev files, pooled over folds")
    print("| engine | threshold | recall | precision | notes | tempting kept |")
    print("|---|---|---|---|---|---|")
    for mode, t in settings:
        name = f"rules, filtered below {mode[7:]}" if mode.startswith("filter:") else mode
        print(_row(name, str(t) if t else "–", *_pool(per_owner, folds, (mode, t))))
    # each owner's threshold is chosen on the other owners: the highest recall whose
    # precision is at least the rules' precision there (no threshold: the rules alone)
    print()
    print("threshold chosen per fold on the other owners (recall at precision >= the rules' there)")
    print("| engine | recall | precision | notes | tempting kept | thresholds chosen |")
    print("|---|---|---|---|---|---|")
    for mode in ("both", "gated"):
        total, kept, chosen = Tally(), 0, Counter[float]()
        for owner in folds:
            rest = [o for o in folds if o != owner]
            floor = _pool(per_owner, rest, ("rules", 0.0))[0].precision
            best: Setting = ("rules", 0.0)
            best_recall = _pool(per_owner, rest, best)[0].recall
            for t in THRESHOLDS:
                r = _pool(per_owner, rest, (mode, t))[0]
                if r.precision >= floor and r.recall > best_recall:
                    best, best_recall = (mode, t), r.recall
            chosen[best[1]] += 1
            t_, k = per_owner[owner][best]
            total.add(t_)
            kept += k
        picks = ", ".join(f"{t or 'rules'} x{n}" for t, n in sorted(chosen.items()))
        print(f"| rules or {mode} | {total.recall:.3f} ({total.recalled}/{total.labels}) | {total.precision:.3f} | "
              f"{total.notes} | {kept} | {picks} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-owners", type=int, default=3)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--stumps", action="store_true", help="boosted stumps instead of SGD logistic regression")
    parser.add_argument("--average", type=int, default=0, help="mean of the regression over this many seeds")
    parser.add_argument("--guarded-only", action="store_true", help="train only on sentences that pass the guards")
    parser.add_argument("--cue-features", action="store_true", help="add the cue rules' verdict as a feature")
    parser.add_argument("--vectors", type=pathlib.Path, help="JSON word -> vector: add binned mean-vector features")
    parser.add_argument("--sentence-vectors", type=pathlib.Path,
                        help="JSON sentence -> vector: add binned sentence-embedding features")
    parser.add_argument("--dump-texts", type=pathlib.Path, help="write the candidates' texts (JSON list) and stop")
    parser.add_argument("--train-owners", type=int, default=0, help="train each fold on this many other owners")
    parser.add_argument("--context", action="store_true", help="add the session context's features (reply, recurrence)")
    args = parser.parse_args(argv)
    corpus = load_corpus(split="dev")  # never the test split
    data = candidates(corpus.files, owners(), cue_features=args.cue_features, context=args.context)
    if args.dump_texts:
        args.dump_texts.write_text(json.dumps(sorted({c.text for c in data}), ensure_ascii=False), encoding="utf-8")
        return 0
    if args.vectors:
        data = with_vectors(data, args.vectors)
    if args.sentence_vectors:
        data = with_sentence_vectors(data, args.sentence_vectors)
    if args.guarded_only:
        data = [c for c in data if guarded(c.text)]
    pos = sum(1 for c in data if c.positive)
    print(f"{len(corpus.files)} dev files ({len(corpus.missing) + len(corpus.altered)} missing), "
          f"{len(data)} candidates, {pos} positive", file=sys.stderr)
    fit: Fit = train_stumps if args.stumps else train_averaged if args.average else train
    options = {"min_owners": args.min_owners, "l2": args.l2, "epochs": args.epochs}
    options.update({"seeds": args.average} if args.average else {"seed": args.seed})
    cross_validate(corpus.files, data, fit, train_owners=args.train_owners, **options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
