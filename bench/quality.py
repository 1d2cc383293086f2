"""Digest quality on real public transcripts: recall of durable items, precision of published notes.

Usage::

    python bench/quality.py [--split dev|test|all] [--provider extractive|openai|command]
                            [--endpoint URL --model NAME] [--command 'PROGRAM ARG...'] [--context-tokens N]
                            [--only ID[,ID...]] [--png FILE] [--unmatched] [--missed] [--audit]

Every corpus file present (``tests/corpus/files`` and, once restored by
``tests/corpus/fetch.py``, ``tests/corpus/cache``) is digested by the chosen
provider, one digest per session, and its notes are matched against the
file's labels (:mod:`quality_score` documents the matcher and the reviewed
list). The report gives recall and precision overall, per transcript format,
per label type (recall) and per note type (precision), how many tempting
items were kept, and how many files were scored or missing. ``--png`` draws
recall and precision per format; ``--unmatched`` lists notes that match no
label, with the key to record a verdict in ``tests/corpus/reviewed.json``.

The extractive provider needs nothing; ``openai`` reads its key from
``CAIRN_OPENAI_API_KEY``; ``command`` runs the assistant the operator names
(``--command 'claude -p'``, split into an argv as a shell would but run with
no shell; the corpus is public, and naming the command is the operator's
consent to send it there). ``--context-tokens`` is the model's context for
both (evidence is cut into windows that fit), as the ``context_tokens``
setting: left out, the provider's default (8192 for an endpoint, 32768 for
a command). A session whose digest fails
is counted with its error code and scores no notes; the table is printed
and the exit status is 1. ``--only`` scores the named corpus files. Tune
only on the dev split: the test split is for the figures reported in
``bench/README.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shlex
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import trio  # noqa: E402
from cairn.protocol.digest import DigestInput, DigestOutput, ModelPolicy, Note  # noqa: E402
from cairn.protocol.errors import CairnError  # noqa: E402
from cairn.protocol.transcript import Turn  # noqa: E402
from cairn.worker.providers import DEFAULT_API_KEY_ENV, run_digest  # noqa: E402

from bench.quality_corpus import CORPUS, CorpusFile, load_corpus, sessions_of  # noqa: E402
from bench.quality_score import (  # noqa: E402
    FileResult,
    Summary,
    Tally,
    load_reviewed,
    note_key,
    score_file,
    summarize,
)

FORMAT_ORDER = ("aider", "specstory", "claude-code", "codex", "claude-export-text", "cctrace-md")
TYPES = ("user", "feedback", "project", "reference")


@dataclass(frozen=True)
class Provider:
    """What a digest needs besides the evidence: the policy and the settings a workspace would give."""

    policy: ModelPolicy
    command: tuple[str, ...] = ()
    context_tokens: int | None = None  # None: the provider's default, as when the setting is left out
    failures: Counter[str] = field(default_factory=Counter)  # error code -> sessions


def digest_file(f: CorpusFile, provider: Provider) -> list[Note]:
    notes: list[Note] = []
    policy = provider.policy

    # the endpoint is the one named on the command line, so its key is the operator's to give
    key = os.environ.get(DEFAULT_API_KEY_ENV) or None if policy.provider == "openai" else None

    async def one(inp: DigestInput) -> DigestOutput:
        return await run_digest(inp, policy, api_key=key, command=provider.command,
                                context_tokens=provider.context_tokens)

    for inp in f.inputs:
        try:
            notes.extend(trio.run(one, inp).notes)
        except CairnError as e:  # counted, not fatal: one bad session must not cost a long model run
            provider.failures[str(e.code)] += 1
    return notes


def run(split: str | None, provider: Provider, *, committed_only: bool = False,
        only: frozenset[str] = frozenset()) -> tuple[list[FileResult], int, float]:
    corpus = load_corpus(split=split, committed_only=committed_only)
    files = [f for f in corpus.files if not only or f.id in only]
    reviewed = load_reviewed()
    started = time.perf_counter()
    results = [score_file(f, digest_file(f, provider), reviewed) for f in files]
    missing = [i for i in (*corpus.missing, *corpus.altered) if not only or i in only]
    return results, len(missing), time.perf_counter() - started


def audit(provider: Provider, *, unmatched: bool = False) -> str:
    """Precision on the audit pool (``tests/corpus/audit.json``): unlabelled files of owners neither split holds,
    every note the engine published there judged by hand (``durable`` or ``not-durable``, keyed as the
    reviewed list is). A note with no verdict counts against, as an unreviewed one does on the splits."""
    doc = json.loads((CORPUS / "audit.json").read_text(encoding="utf-8"))
    verdicts = {n["key"]: n["verdict"] for n in doc["notes"]}
    owners: dict[str, Tally] = {}
    total = Tally()
    pools: dict[int, Tally] = {}
    read = missing = 0
    lines: list[str] = []
    for entry in doc["files"]:
        path = CORPUS / "cache" / entry["file"]
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            missing += 1
            continue
        read += 1
        inputs = [DigestInput(session_id=f"{entry['id']}/{s}", title=None,
                              turns=tuple(Turn(turn_id=t, parent_turn_id=None, user=u, assistant=a) for t, u, a in turns))
                  for s, turns in enumerate(sessions_of(path, entry["format"])) if turns]
        f = CorpusFile(id=entry["id"], format=entry["format"], split="audit", inputs=inputs, labels=[])
        tally = owners.setdefault(entry["repo"].split("/")[0], Tally())
        pool = pools.setdefault(int(entry.get("pool", 1)), Tally())
        for note in digest_file(f, provider):
            key = note_key(f.id, note)
            verdict = verdicts.get(key)
            right = verdict == "durable"
            for t in (tally, pool, total):
                t.notes += 1
                t.correct += right
            if unmatched and not right:
                lines.append(f"audit {f.id} {key} [{verdict or 'not judged'}] {note.type.value}: {note.body[:160]}")
    judged = sum(1 for t in owners.values() if t.notes)
    return "\n".join([
        f"### audit pool: {read} files of {len(owners)} owners read, {missing} missing; "
        f"notes from {judged} owners",
        "",
        table("audit", [*((f"pool {n}", t) for n, t in sorted(pools.items())), ("audit", total)], recall=False),
        *([""] + lines if lines else []),
    ])


def _pct(x: float, n: int) -> str:
    return f"{x:.2f}" if n else "–"


def table(title: str, rows: list[tuple[str, Tally]], *, recall: bool = True, precision: bool = True) -> str:
    head = ["| " + title + " |"]
    sep = ["|---|"]
    if recall:
        head.append(" labels | recalled | recall |")
        sep.append("---|---|---|")
    if precision:
        head.append(" notes | correct | precision |")
        sep.append("---|---|---|")
    lines = ["".join(head), "".join(sep)]
    for name, t in rows:
        cells = [f"| {name} |"]
        if recall:
            cells.append(f" {t.labels} | {t.recalled} | {_pct(t.recall, t.labels)} |")
        if precision:
            cells.append(f" {t.notes} | {t.correct} | {_pct(t.precision, t.notes)} |")
        lines.append("".join(cells))
    return "\n".join(lines)


def report(split_name: str, s: Summary, missing: int, seconds: float) -> str:
    formats = [f for f in FORMAT_ORDER if f in s.by_format] + sorted(set(s.by_format) - set(FORMAT_ORDER))
    parts = [
        f"### {split_name}: {s.files} files scored, {missing} missing ({seconds * 1000:.0f} ms of digesting)",
        "",
        table("split", [(split_name, s.total)]),
        "",
        table("format", [(f, s.by_format[f]) for f in formats]),
        "",
        table("label type", [(t, s.by_label_type[t]) for t in TYPES if t in s.by_label_type], precision=False),
        "",
        table("note type", [(t, s.by_note_type[t]) for t in TYPES if t in s.by_note_type], recall=False),
        "",
        f"task requests kept: {s.tasks_kept} of {s.tasks}",
        f"tempting items kept: {s.tempting_kept} of {s.tempting}; unmatched notes not yet reviewed: {s.unreviewed}; "
        f"type agreement on recalled items: {s.total.type_agree} of {s.total.recalled}",
    ]
    return "\n".join(parts)


def chart(path: pathlib.Path, summaries: dict[str, Summary], caption: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no chart; `pip install -e '.[bench]'`)", file=sys.stderr)
        return
    splits = list(summaries)
    fig, axes = plt.subplots(1, len(splits), figsize=(6 * len(splits), 4), squeeze=False)
    for ax, name in zip(axes[0], splits, strict=True):
        s = summaries[name]
        formats = [f for f in FORMAT_ORDER if f in s.by_format] + ["all"]
        tallies = [s.by_format[f] if f != "all" else s.total for f in formats]
        xs = range(len(formats))
        # a format with no label has no recall, one with no note no precision: no bar, not 1.0
        ax.bar([x - 0.2 for x in xs], [t.recall if t.labels else 0 for t in tallies], width=0.4, label="recall")
        ax.bar([x + 0.2 for x in xs], [t.precision if t.notes else 0 for t in tallies], width=0.4, label="precision")
        names = [f"{f}\n{t.labels} labels\n{t.notes} notes" for f, t in zip(formats, tallies, strict=True)]
        ax.set_xticks(list(xs), names, fontsize=6)
        ax.set_ylim(0, 1.05)
        ax.axhline(0.6, color="grey", linewidth=0.5, linestyle=":")
        ax.axhline(0.9, color="grey", linewidth=0.5, linestyle=":")
        ax.set_title(f"{name} split ({s.files} files)")
        ax.legend(loc="lower right", fontsize=7)
    fig.suptitle(caption, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"chart written to {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--provider", choices=("extractive", "openai", "command"), default="extractive")
    parser.add_argument("--endpoint", default="")
    parser.add_argument("--model", default="")
    parser.add_argument("--command", default="", help="the command provider's program and arguments (no shell)")
    parser.add_argument("--context-tokens", type=int, default=None,
                        help="the model's context window (default: the provider's, as the context_tokens setting)")
    parser.add_argument("--only", default="", help="comma-separated corpus file ids to score")
    parser.add_argument("--png", type=pathlib.Path)
    parser.add_argument("--unmatched", action="store_true", help="list notes that match no label")
    parser.add_argument("--missed", action="store_true", help="list labels no note matched")
    parser.add_argument("--audit", action="store_true",
                        help="also score precision on the audit pool (tests/corpus/audit.json, judged notes)")
    args = parser.parse_args(argv)
    command = tuple(shlex.split(args.command))
    if (args.provider == "command") != bool(command):
        parser.error("--command is needed with --provider command, and only there")
    provider = Provider(ModelPolicy(provider=args.provider, endpoint=args.endpoint, model=args.model),
                        command, args.context_tokens)
    only = frozenset(i for i in args.only.split(",") if i)
    splits = ["dev", "test"] if args.split == "all" else [args.split]
    summaries: dict[str, Summary] = {}
    for split in splits:
        results, missing, seconds = run(split, provider, only=only)
        summaries[split] = summarize(results)
        print(report(split, summaries[split], missing, seconds))
        print()
        for r in results:
            if args.unmatched:
                for key, note, verdict in r.unmatched:
                    print(f"unmatched {r.file.id} {key} [{verdict or 'unreviewed'}] {note.type.value}: {note.body[:160]}")
            if args.missed:
                for label in r.missed:
                    print(f"missed {label.id} {label.type} ({label.turn}): {label.statement}")
    if args.audit:
        print(audit(provider, unmatched=args.unmatched))
        print()
    if args.png:
        chart(args.png, summaries, f"{args.provider} provider on the real-transcript corpus")
    if provider.failures:
        failed = ", ".join(f"{code} x{n}" for code, n in sorted(provider.failures.items()))
        print(f"sessions whose digest failed (no notes scored for them): {failed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
