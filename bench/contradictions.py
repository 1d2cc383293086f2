"""Contradictions a review leaves on real sessions: notes kept, topics that disagree with themselves or each other.

Every file of the quality corpus's dev split (and, with ``--audit``, of both audit pools, when
``tests/corpus/cache`` holds them) is digested by the embedded engine, one note per digest, and its notes
reviewed by the embedded review engine into an empty memory root, 20 digests a review. Counted: the notes,
the topic files the drafts write, and how many of those disagree with themselves or with another draft's
topic by ``worker.memory.contradiction.conflict`` (ADR 0025): what accepting everything would leave.

    python bench/contradictions.py [--audit]

Run with ``PYTHONPATH`` at a view of another commit's package for its figures (``conflict`` is taken from
this tree either way, so both are judged by one rule).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import pathlib
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cairn.protocol.digest import DigestInput, ModelPolicy  # noqa: E402
from cairn.protocol.journal import PublicDigest  # noqa: E402
from cairn.protocol.transcript import Turn  # noqa: E402
from cairn.protocol.vocab import Trigger  # noqa: E402
from cairn.worker.memory import engine, model  # noqa: E402

import bench.quality_corpus as qc  # noqa: E402
from bench import quality as Q  # noqa: E402

_spec = importlib.util.spec_from_file_location("_contradiction", REPO / "worker" / "memory" / "contradiction.py")
assert _spec is not None and _spec.loader is not None
ct = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ct)


def _audit_files() -> list[qc.CorpusFile]:
    doc = json.loads((qc.CORPUS / "audit.json").read_text())
    out = []
    for e in doc["files"]:
        p = qc.CORPUS / "cache" / e["file"]
        if not p.exists():
            continue
        inputs = [DigestInput(session_id=f"{e['id']}/{s}", title=None,
                              turns=tuple(Turn(turn_id=t, parent_turn_id=None, user=u, assistant=a) for t, u, a in turns))
                  for s, turns in enumerate(qc.sessions_of(p, e["format"])) if turns]
        out.append(qc.CorpusFile(id=e["id"], format=e["format"], split="audit", inputs=inputs, labels=[]))
    return out


def count(files: list[qc.CorpusFile]) -> dict[str, int]:
    prov = Q.Provider(ModelPolicy(provider="extractive"))
    t = dict(files=0, notes=0, writes=0, itself=0, another=0)
    for f in files:
        notes = Q.digest_file(f, prov)
        if not notes:
            continue
        t["files"] += 1
        t["notes"] += len(notes)
        digests = [PublicDigest(id=f"d{i:04d}", capture=f"c{i}", session_id="s", title=None, trigger=Trigger.IDLE,
                                created=1.7e9 + i, provider="extractive", turn_ids=n.turn_ids, notes=(n,))
                   for i, n in enumerate(notes)]
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp) / "memory"
            root.mkdir()
            snap = model.read_root(root)
            drafts = [d for k in range(0, len(digests), 20)
                      for d in engine.review(digests[k:k + 20], snap, root_rel=".agents/memory",
                                             index_rel=".agents/memory/MEMORY.md", instruction_files={},
                                             rejected=set(), now=1.7e9 + 3600, review_id="r1")]
        afters = [(p, a) for d in drafts for p, (_b, a) in d.files.items() if a is not None and not p.endswith("MEMORY.md")]
        t["writes"] += len(afters)
        t["itself"] += sum(1 for _p, a in afters if ct.conflict([(None, a)], {}))
        t["another"] += sum(1 for (p1, a1), (p2, a2) in itertools.combinations(afters, 2)
                            if p1 != p2 and ct.conflict([(None, a1)], {"x.md": a2}))
    return t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--audit", action="store_true", help="also the audit pools (tests/corpus/cache)")
    args = ap.parse_args()
    rows = [("dev", qc.load_corpus(split="dev").files)] + ([("audit pools", _audit_files())] if args.audit else [])
    print("| set | files with notes | notes | topic files written | disagreeing with itself | with another |")
    print("|---|---|---|---|---|---|")
    for name, files in rows:
        t = count(files)
        print(f"| {name} | {t['files']} | {t['notes']} | {t['writes']} | {t['itself']} | {t['another']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
