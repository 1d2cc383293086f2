"""Stale-memory detection on real instruction-file histories.

Each case in ``bench/staleness-cases/cases/`` is an agent instruction file
(``AGENTS.md``, ``CLAUDE.md``) as it stood before maintainers edited it,
together with a snapshot of the tree after the code change that prompted the
edit: the file listing (paths whose names the text mentions, plus the top two
levels), manifests (Makefile, package.json, pyproject.toml, Cargo.toml, …)
and the files the text cites or whose backticked names it uses.
``bench/staleness-cases/manifest.json`` gives each case's source (owner/repo @
commit : path), licence, split and the lines labelled stale (changed by the
maintainers because the code changed), with the rationale.

Every non-blank line is an entry. A checker flags a line stale, ok or
unverifiable. Recall: labelled stale lines flagged. Precision: flagged lines
that are labelled stale (a flag on a reworded or unchanged line counts
against); a stale line left unverifiable counts as a miss, and the recall of
the checkable stale lines alone is shown beside it. Two rows: the existence
baseline below and, when present, ``worker.memory.citations.verify_entry``,
which gets each line with the lines before it in its file as ``context`` (a
line of a file-tree diagram is read under its folders; a command after ``cd
DIR`` in the same code block runs in DIR).

    python bench/staleness.py [--split dev|test|all] [--png bench/staleness.png] [--cost]

``--cost``: the price of ``cairn verify`` over 1,000 entries. The largest
case's tree snapshot is written to a workspace together with 1,000 memory
topics (one instruction line each, drawn from every case, no recorded
citations), and ``worker.memory.verify.verify_workspace`` (what ``cairn
verify`` runs, without queuing proposals) checks them all, listing and
indexing the tree included; the existence baseline over the same 1,000 lines
(its index included) is timed in the same run. Best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent / "staleness-cases"
OK, STALE, UNVERIFIABLE = "ok", "stale", "unverifiable"
#: where the cases' trees are written: a memory file system where there is one. The trees hold 441,000 empty
#: files; on a disk-backed /tmp each costs about a millisecond of system time to create and remove (8 minutes
#: for the verifier's run), in memory a few microseconds. The checker reads the tree the same way on either.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK) else None


@dataclass
class Case:
    id: str
    split: str
    path: str
    text: str
    tree: list[str]
    files: dict[str, str]
    changed: set[int]
    stale: set[int]


def load_cases(split: str = "all") -> list[Case]:
    manifest = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))
    out = []
    for m in manifest:
        if split != "all" and m["split"] != split:
            continue
        with gzip.open(ROOT / "cases" / f"{m['id']}.json.gz", "rt", encoding="utf-8") as f:
            c = json.load(f)
        out.append(Case(c["id"], m["split"], c["path"], c["text"], c["tree"], c["files"],
                        set(c["changed"]), {int(n) for n in m["stale"]}))
    return out


def entries(text: str) -> list[tuple[int, str, bool]]:
    """(line number, line, inside a code block) for every checkable line."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("```"):
            fenced = not fenced
            continue
        if s and not re.fullmatch(r"[|\-: ]+", s):
            out.append((n, line, fenced))
    return out


# --- the existence baseline ------------------------------------------------

@dataclass
class Index:
    paths: set[str]
    dirs: set[str]
    files: dict[str, str]
    blob: str = field(repr=False, default="")


def index(case: Case) -> Index:
    paths = set(case.tree) | set(case.files)
    dirs = {p.rsplit("/", i)[0] for p in paths for i in range(1, p.count("/") + 1)}
    return Index(paths, dirs, case.files, "\n".join(case.files.values()))


_PATH = re.compile(r"(?<![\w@:/.-])((?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)+/?|[\w-]+\.(?:py|ts|mts|js|rs|md|toml|json|yml|yaml|sh|nu|go|zig|sdef))(?![\w/])")
_RUNNER = re.compile(r"\b(make|just|npm run|pnpm run|yarn|pnpm|bun run)\s+((?:-C\s+\S+\s+)?)([\w:.-]+)")
_BUILTIN = {"install", "i", "add", "exec", "dlx", "run", "test", "-r", "-F", "--filter", "x"}


def _exists(ix: Index, p: str, base: str) -> bool | None:
    p = p.strip().rstrip("/").removeprefix("./")
    if "/" not in p:
        return any(q == p or q.endswith("/" + p) for q in ix.paths)
    head = p.split("/", 1)[0]
    if not (head in ix.dirs or f"{base}/{head}" in ix.dirs or re.search(r"\.\w{1,4}$", p)):
        return None  # not a path of this tree (owner/name, a/b/c choices)
    for cand in (p, f"{base}/{p}" if base else p):
        if cand in ix.paths or cand in ix.dirs:
            return True
    return False


def baseline(case: Case, ix: Index, line: str, fenced: bool) -> str:
    base = case.path.rsplit("/", 1)[0] if "/" in case.path else ""
    verdicts = []
    spans = re.findall(r"`([^`]+)`", line)
    pieces = [line] if fenced else spans
    for piece in pieces:
        if any(ch in piece for ch in "<>{}*$[]") or piece.startswith(("http", "@")):
            continue
        for p in _PATH.findall(piece):
            if p.startswith("tmp/") or ("/" not in p.strip("/") and not re.search(r"\.\w+$", p)):
                continue
            if "e.g" in line and "/" not in p:
                continue
            found = _exists(ix, p, base)
            if found is not None:
                verdicts.append(found)
        for tool, cdir, target in _RUNNER.findall(piece):
            if target in _BUILTIN or target.startswith("-"):
                continue
            d = cdir.split()[1].rstrip("/") if cdir else ""
            if tool == "make":
                mk = ix.files.get(f"{d}/Makefile" if d else "Makefile")
                verdicts.append(mk is not None and re.search(rf"(?m)^{re.escape(target)}\s*:", mk) is not None)
            elif tool == "just":
                jf = ix.files.get("justfile") or ix.files.get("Justfile") or ""
                verdicts.append(re.search(rf"(?m)^(?:@|alias\s+)?{re.escape(target)}\b", jf) is not None)
            else:
                pkgs = [v for k, v in ix.files.items() if k.endswith("package.json")]
                verdicts.append(any(f'"{target}"' in v for v in pkgs))
    for s in spans:
        s = s.strip()
        if re.fullmatch(r"[A-Za-z_][\w.:$-]{2,}", s) and "/" not in s and not re.search(r"\.\w{1,4}$", s):
            verdicts.append(s.lstrip("$") in ix.blob)
    if not verdicts:
        return UNVERIFIABLE
    return OK if all(verdicts) else STALE


# --- the cairn verifier, when present --------------------------------------

def _verifier() -> Callable[[str, str, list[str], str], str] | None:
    try:
        # cold start: the verifier is optional while it is being written
        from cairn.worker.memory.citations import STALE as V_STALE
        from cairn.worker.memory.citations import UNVERIFIABLE as V_UNVER
        from cairn.worker.memory.citations import Tree, verify_entry
    except ImportError:
        return None
    trees: dict[str, Tree] = {}

    def run(root: str, text: str, context: list[str], base: str = "") -> str:
        tree = trees.get(root)
        if tree is None:
            trees.clear()
            tree = trees[root] = Tree(root)
        checks = verify_entry(root, text, tree=tree, context=context, base=base)
        if any(c.verdict == V_STALE for c in checks):
            return STALE
        if not checks or all(c.verdict == V_UNVER for c in checks):
            return UNVERIFIABLE
        return OK
    return run


def materialize(case: Case, root: pathlib.Path) -> None:
    """Write ``case``'s tree under ``root``: each folder made once, the files without a body left empty."""
    for d in sorted({os.path.dirname(p) for p in (*case.tree, *case.files)} - {""}):
        os.makedirs(root / d, exist_ok=True)
    for p in case.tree:
        if p not in case.files:
            os.close(os.open(root / p, os.O_CREAT | os.O_WRONLY, 0o644))
    for p, body in case.files.items():
        (root / p).write_text(body, encoding="utf-8")


# --- scoring ---------------------------------------------------------------

@dataclass
class Tally:
    stale: int = 0
    hit: int = 0
    flagged: int = 0
    right: int = 0
    entries: int = 0
    unverifiable: int = 0
    stale_unverifiable: int = 0
    seconds: float = 0.0

    @property
    def recall(self) -> float:
        return self.hit / self.stale if self.stale else 0.0

    @property
    def checkable_recall(self) -> float:
        """Recall over the stale lines the checker could check (those left unverifiable set aside)."""
        n = self.stale - self.stale_unverifiable
        return self.hit / n if n else 0.0

    @property
    def precision(self) -> float:
        return self.right / self.flagged if self.flagged else 1.0


def score(cases: list[Case], checker: str) -> Tally:
    t = Tally()
    run = _verifier() if checker == "verifier" else None
    for case in cases:
        ix = index(case)
        with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
            if run is not None:
                materialize(case, pathlib.Path(tmp))
            t0 = time.perf_counter()
            lines = case.text.splitlines()
            for n, line, fenced in entries(case.text):
                v = (run(tmp, line, lines[:n - 1], case.path.rpartition("/")[0]) if run is not None
                     else baseline(case, ix, line, fenced))
                t.entries += 1
                t.unverifiable += v == UNVERIFIABLE
                if n in case.stale:
                    t.stale += 1
                    t.hit += v == STALE
                    t.stale_unverifiable += v == UNVERIFIABLE
                if v == STALE:
                    t.flagged += 1
                    t.right += n in case.stale
            t.seconds += time.perf_counter() - t0
    return t


def cost(repeat: int = 3, n: int = 1000) -> dict[str, float]:
    """Seconds for ``cairn verify`` (marks, no proposals) over ``n`` topics, and for the baseline over the same lines."""
    from cairn.protocol.settings import Settings
    from cairn.worker.memory.model import render_topic
    from cairn.worker.memory.store import MemoryStore
    from cairn.worker.memory.verify import verify_workspace

    cases = load_cases("all")
    big = max(cases, key=lambda c: len(c.tree))
    lines = [(c, ln, f) for c in cases for _n, ln, f in entries(c.text) if "`" in ln or f][:n]
    while len(lines) < n:
        lines += lines[: n - len(lines)]
    best = {"verify": float("inf"), "baseline": float("inf")}
    with tempfile.TemporaryDirectory() as tmp:
        ws = pathlib.Path(tmp)
        materialize(big, ws)
        mem = ws / ".agents" / "memory"
        mem.mkdir(parents=True)
        index_lines = []
        for i, (_c, ln, _f) in enumerate(lines):
            name = f"t{i:04d}.md"
            (mem / name).write_bytes(render_topic(f"entry {i}", "a line", "project", "\n" + ln.strip() + "\n", {}))
            index_lines.append(f"- [entry {i}]({name}) - a line")
        (mem / "MEMORY.md").write_text("\n".join(index_lines) + "\n", encoding="utf-8")
        for _ in range(repeat):
            t0 = time.perf_counter()
            ix = index(big)
            for _c, ln, f in lines:
                baseline(big, ix, ln, f)
            best["baseline"] = min(best["baseline"], time.perf_counter() - t0)
            with MemoryStore(str(ws), Settings()) as ms:
                t0 = time.perf_counter()
                r = verify_workspace(ms, propose=False)
                best["verify"] = min(best["verify"], time.perf_counter() - t0)
            assert r["checked"] == n, r["checked"]
    best["files"] = float(len(big.tree))
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="all", choices=["dev", "test", "all"])
    ap.add_argument("--png", default=None)
    ap.add_argument("--cost", action="store_true", help="time cairn verify over 1,000 entries against the baseline")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if args.cost:
        c = cost(args.repeat)
        print(f"cairn verify, 1,000 entries, tree of {c['files']:.0f} files: {c['verify'] * 1000:.0f} ms; "
              f"existence baseline, same lines: {c['baseline'] * 1000:.0f} ms; ratio {c['verify'] / c['baseline']:.1f}")
        return 0
    checkers = ["baseline"] + (["verifier"] if _verifier() is not None else [])
    splits = ["dev", "test"] if args.split == "all" else [args.split]
    rows = []
    print("| split | checker | cases | stale lines | recall | precision | flags | unverifiable (all / stale) "
          "| recall of checkable stale lines | ms per 1,000 entries |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for split in splits:
        cases = load_cases(split)
        for ch in checkers:
            t = score(cases, ch)
            rows.append((split, ch, t))
            print(f"| {split} | {ch} | {len(cases)} | {t.stale} | {t.recall:.2f} | {t.precision:.2f} | {t.flagged} | "
                  f"{t.unverifiable / max(t.entries, 1):.2f} / {t.stale_unverifiable / max(t.stale, 1):.2f} | "
                  f"{t.checkable_recall:.2f} | {1000 * t.seconds / max(t.entries, 1) * 1000:.0f} |")
    if args.png:
        try:
            # cold start: matplotlib is optional, only for the chart
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib missing: no chart", file=sys.stderr)
            return 0
        fig, ax = plt.subplots(figsize=(7, 3.5))
        labels = [f"{s}\n{c}" for s, c, _ in rows]
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [t.recall for *_, t in rows], 0.4, label="recall")
        ax.bar([x + 0.2 for x in xs], [t.precision for *_, t in rows], 0.4, label="precision")
        ax.axhline(0.8, ls=":", c="grey")
        ax.axhline(0.95, ls="--", c="grey")
        ax.set_xticks(list(xs), labels)
        ax.set_ylim(0, 1.05)
        ax.set_title("stale lines of instruction files: recall and precision")
        ax.legend(loc="lower right")
        fig.tight_layout()
        fig.savefig(args.png, dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
