"""Train the engine's sentence scorer (:mod:`bench.scorer_model`) from public data.

Usage: ``python bench/scorer_train.py [--mirror DIR] [--out PATH]``

Weak labels, no hand labelling: every sentence of a permissively licensed
agent instruction file (``AGENTS.md``, ``CLAUDE.md``, ``.cursorrules``,
``CONVENTIONS.md``, ``copilot-instructions.md`` …) is a positive, because
that is what people write down for an agent to keep; every user sentence of
a permissively licensed public transcript is a negative, because most of what
users type is a task of the moment (some are durable: that is the noise of
weak labels). The sentences the corpus labels as tempting-but-wrong in the
*dev* split are added as negatives (never the test split's).

Sources: ``bench/scorer_sources.json`` (repository, commit, path, licence,
role, SHA-256). Each file is read from a local cache, from ``--mirror DIR``
(bare git directories at ``DIR/<owner>+<name>/repo``) or by a shallow
``git fetch`` of the recorded commit, and kept only if its SHA-256 matches.
No source comes from a corpus repository (dev or test) or from the
repositories kept for the independent check. Training text is never
written into the repository: only the weights are.

Model: logistic regression over the features of :func:`scorer.features`,
classes balanced, L2, plain SGD in a fixed order (deterministic), features
seen fewer than ``--min-count`` times dropped, small weights pruned.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pathlib
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cairn.protocol.errors import CairnError  # noqa: E402
from cairn.worker.providers import extractive  # noqa: E402
from cairn.worker.providers.notes import one_line  # noqa: E402

from bench import scorer_model as scorer  # noqa: E402
from bench.quality_corpus import load_corpus, sessions_of  # noqa: E402

SOURCES = ROOT / "bench" / "scorer_sources.json"
CACHE = ROOT / "bench" / ".scorer-cache"
_HEADING = re.compile(r"^\s*(?:#{1,6}\s|\||<|---|===|\*\*[^*]+\*\*:?\s*$)")
MAX_PER_FILE = 400


def _git(*args: str, cwd: pathlib.Path | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def source_bytes(entry: dict[str, Any], mirror: pathlib.Path | None) -> bytes | None:
    """The recorded file, from the cache, a local mirror or a shallow fetch; None unless its SHA-256 matches."""
    cached = CACHE / entry["sha256"]
    if cached.is_file():
        return cached.read_bytes()
    git_dir = mirror / entry["repo"].replace("/", "+", 1) / "repo" if mirror else None
    # a file is one blob; commit subjects are the first ``count`` non-merge subjects from the commit
    what = (
        ["log", "-n", str(entry["count"]), "--no-merges", "--format=%s", entry["commit"]]
        if entry["role"] == "commits"
        else ["show", f"{entry['commit']}:{entry['path']}"]
    )
    depth = str(int(entry.get("count", 0)) * 3 + 50) if entry["role"] == "commits" else "1"
    try:
        if git_dir is not None and git_dir.is_dir():
            data = _git("--git-dir", str(git_dir), *what)
        else:
            with tempfile.TemporaryDirectory() as scratch:
                work = pathlib.Path(scratch)
                _git("init", "-q", cwd=work)
                _git("fetch", "-q", "--depth", depth, f"https://github.com/{entry['repo']}", entry["commit"], cwd=work)
                data = _git(*what, cwd=work)
    except (subprocess.CalledProcessError, OSError):
        return None
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        return None
    CACHE.mkdir(exist_ok=True)
    cached.write_bytes(data)
    return data


def _sentences(text: str) -> Iterable[str]:
    for unit in extractive._units(text):
        for sentence in unit:
            s = one_line(sentence)
            if 3 <= len(s.split()) <= 60:
                yield s


def instruction_sentences(text: str) -> list[str]:
    """Sentences of an instruction file: prose lines and bullets, without headings, tables and code."""
    kept = "\n".join("" if _HEADING.match(line) else line for line in text.splitlines())
    return list(dict.fromkeys(_sentences(kept)))[:MAX_PER_FILE]


def transcript_sentences(path: pathlib.Path, fmt: str, side: str = "user") -> list[str]:
    """The user's (or the assistant's) sentences of a transcript, read by the product's importer."""
    out: list[str] = []
    for session in sessions_of(path, fmt):
        for _, user, assistant in session:
            out.extend(_sentences(user if side == "user" else assistant))
    return list(dict.fromkeys(out))[:MAX_PER_FILE]


_CONVENTIONAL = re.compile(r"^(?:\w+(?:\([^)]*\))?!?:\s*|\[[^\]]*\]\s*)")


def commit_sentences(log: str) -> list[str]:
    """Commit subjects without their conventional prefix ("feat(ui): "): changes of the moment."""
    out = (one_line(_CONVENTIONAL.sub("", line)) for line in log.splitlines())
    return list(dict.fromkeys(s for s in out if 3 <= len(s.split()) <= 60))


def dev_tempting(exclude_files: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Evidence of the dev split's tempting-but-wrong labels (never the test split's)."""
    corpus = load_corpus(split="dev")
    return [str(t["evidence"]) for f in corpus.files if f.id not in exclude_files for t in f.tempting]


Example = tuple[str, int, str]  # sentence, 1 (durable) or 0, the repository it came from


ROLES = ("positive", "negative", "commits")  # "assistant" adds the assistant's side of the transcripts


def public_examples(mirror: pathlib.Path | None, roles: Sequence[str] = ROLES) -> tuple[list[Example], dict[str, int]]:
    """``[(sentence, 1|0, repository)]`` of every source present with one of ``roles``, and counts by role."""
    entries = [e for e in json.loads(SOURCES.read_text(encoding="utf-8"))["sources"] if e["role"] in roles]
    examples: list[Example] = []
    counts: Counter[str] = Counter()
    for entry in entries:
        data = source_bytes(entry, mirror)
        if data is None:
            counts["missing"] += 1
            continue
        if entry["role"] == "commits":
            found = commit_sentences(data.decode("utf-8", errors="replace"))
            examples.extend((s, 0, entry["repo"]) for s in found)
        elif entry["role"] == "positive":
            found = instruction_sentences(data.decode("utf-8", errors="replace"))
            examples.extend((s, 1, entry["repo"]) for s in found)
        else:
            with tempfile.TemporaryDirectory() as scratch:
                name = "session.jsonl" if entry["format"] == "claude-code" else pathlib.Path(entry["path"]).name
                path = pathlib.Path(scratch) / name
                path.write_bytes(data)
                try:
                    found = transcript_sentences(path, entry["format"])
                    # what the assistant wrote is never the user's durable word
                    said = transcript_sentences(path, entry["format"], "assistant") if "assistant" in roles else []
                except CairnError:
                    counts["unreadable"] += 1
                    continue
            examples.extend((s, 0, entry["repo"]) for s in found + said)
            counts["assistant"] += len(said)
        counts[entry["role"]] += len(found)
    return examples, dict(counts)


def train(
    examples: Sequence[Example], *, epochs: int = 6, l2: float = 1e-4, rate: float = 0.2, min_repos: int = 5
) -> tuple[float, dict[str, float]]:
    """Balanced logistic regression by SGD in a fixed pseudo-random order; returns (bias, weights).

    A feature is kept only if it occurs in ``min_repos`` distinct repositories: a
    word of one project (its names, its topic) says nothing of how durable a
    sentence of another project is.
    """
    rows = [(scorer.features(s), y) for s, y, _ in examples]
    repos: dict[str, set[str]] = {}
    for (feats, _), (_, _, repo) in zip(rows, examples, strict=True):
        for f in feats:
            repos.setdefault(f, set()).add(repo)
    rows = [([f for f in feats if len(repos[f]) >= min_repos], y) for feats, y in rows]
    positives = sum(y for _, y in rows)
    weight_of = {1: len(rows) / (2 * max(positives, 1)), 0: len(rows) / (2 * max(len(rows) - positives, 1))}
    bias = 0.0
    w: dict[str, float] = {}
    order = list(range(len(rows)))
    rng = random.Random(8)
    step = 0
    for _ in range(epochs):
        rng.shuffle(order)
        for i in order:
            feats, y = rows[i]
            step += 1
            eta = rate / (1 + step * 1e-5)
            z = bias + sum(w.get(f, 0.0) for f in feats)
            p = 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))
            g = (p - y) * weight_of[y]
            bias -= eta * g
            for f in feats:
                old = w.get(f, 0.0)
                w[f] = old - eta * (g + l2 * old)
    return round(bias, 4), {f: round(v, 4) for f, v in sorted(w.items()) if abs(v) >= 0.02}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=pathlib.Path, help="folder of bare git directories <owner>+<name>/repo")
    parser.add_argument("--out", type=pathlib.Path, default=scorer.WEIGHTS)
    parser.add_argument("--roles", default=",".join(ROLES), help="source roles to train on")
    parser.add_argument("--no-dev-tempting", action="store_true", help="public data only")
    args = parser.parse_args(argv)
    examples, counts = public_examples(args.mirror, args.roles.split(","))
    if not args.no_dev_tempting:
        tempting = dev_tempting()
        examples.extend((s, 0, "dev-tempting") for s in tempting)
        counts["dev-tempting"] = len(tempting)
    bias, weights = train(examples)
    args.out.write_text(
        json.dumps({"bias": bias, "weights": weights, "trained_on": counts}, indent=0, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    print(f"{counts}; {len(weights)} weights -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
