"""The verifier on instruction files at one commit, against their own tree at that commit: false flags on
data neither split of ``bench/staleness.py`` holds.

    python bench/staleness_heads.py CLONES OUT.jsonl [--list bench/staleness-cases/heads.txt]

``CLONES`` holds a git clone of each repository the list names, as ``CLONES/owner+name`` (a bare clone
will do); one that is missing is cloned there from its public address. A clone that lacks some blobs
has each missing blob written as an empty file (counted on stderr): the listing stays whole. Each listed file is read from the
tree of its commit (``git archive``, extracted to a scratch folder) and every checkable line is verified
against that same tree, each with the lines before it as context. Nothing at that commit was edited
after it, so a flag is at best a stale line nobody fixed yet: the flags (one JSON object per line:
repository, file, line number, the line, the reasons) are for reading, not for scoring. Prints the number
of flags, and of files and repositories with one. Uses the ``git`` program.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.staleness import entries  # noqa: E402

LIST = pathlib.Path(__file__).resolve().parent / "staleness-cases" / "heads.txt"


def _extract(gd: pathlib.Path, commit: str, root: pathlib.Path) -> int:
    """Write the tree of ``commit`` under ``root``: every path of the listing, links as links, submodules as
    empty folders, a blob the clone lacks as an empty file (the listing is whole even where contents are not:
    ``git archive`` stops at the first missing blob, and every path after it would look removed). Returns
    how many blobs were absent."""
    listing = subprocess.run(["git", "--git-dir", str(gd), "ls-tree", "-r", "-z", "--full-tree", commit],
                             capture_output=True, check=True).stdout.split(b"\0")
    items = [(meta.split(), name) for meta, _, name in (i.partition(b"\t") for i in listing if i)]
    blobs = [oid for (_, kind, oid), _ in items if kind == b"blob"]
    batch = subprocess.run(["git", "--git-dir", str(gd), "cat-file", "--batch"], input=b"".join(o + b"\n" for o in blobs),
                           capture_output=True, check=True,
                           env={**os.environ, "GIT_NO_LAZY_FETCH": "1"}).stdout  # a partial clone fetches nothing
    bodies: dict[bytes, bytes | None] = {}
    at = 0
    for oid in blobs:  # "<oid> blob <size>\n<bytes>\n", or "<oid> missing\n"
        end = batch.index(b"\n", at)
        head = batch[at:end].split()
        if head[-1] == b"missing":
            bodies[oid], at = None, end + 1
            continue
        size = int(head[2])
        bodies[oid], at = batch[end + 1:end + 1 + size], end + 2 + size
    absent = 0
    for (mode, kind, oid), name in items:
        dest = root / name.decode("utf-8", "surrogateescape")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if kind == b"commit":
            dest.mkdir(exist_ok=True)
            continue
        body = bodies.get(oid)
        if body is None:
            absent += 1
            dest.write_bytes(b"")
        elif mode == b"120000":
            dest.symlink_to(body.decode("utf-8", "surrogateescape"))
        else:
            dest.write_bytes(body)
    return absent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("clones", type=pathlib.Path)
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--list", type=pathlib.Path, default=LIST)
    a = ap.parse_args()
    from cairn.worker.memory.citations import STALE, Tree, verify_entry

    rows = [ln.split() for ln in a.list.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    flags, files = 0, set()
    with a.out.open("w", encoding="utf-8") as out, tempfile.TemporaryDirectory() as tmp:
        trees: dict[tuple[str, str], pathlib.Path] = {}
        for repo, commit, path in rows:
            gd = a.clones / repo.replace("/", "+")
            if not gd.exists():
                subprocess.run(["git", "clone", "--bare", f"https://github.com/{repo}", str(gd)], check=True)
            root = trees.get((repo, commit))
            if root is None:
                root = trees[(repo, commit)] = pathlib.Path(tmp) / f"{repo.replace('/', '+')}-{commit[:12]}"
                root.mkdir()
                absent = _extract(gd, commit, root)
                if absent:
                    print(f"{repo}: {absent} blobs absent from the clone, kept as empty files", file=sys.stderr)
            f = root / path
            if f.is_symlink() or not f.is_file():
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            lines = text.splitlines()
            tree = Tree(str(root))
            for n, line, _fenced in entries(text):
                stale = [c.reason for c in verify_entry(str(root), line, tree=tree, context=lines[:n - 1],
                                                        base=path.rpartition("/")[0]) if c.verdict == STALE]
                if stale:
                    flags += 1
                    files.add((repo, path))
                    out.write(json.dumps({"repo": repo, "file": path, "line": n, "text": line, "why": stale}) + "\n")
    print(f"{flags} flags in {len(files)} files of {len({r for r, _ in files})} repositories")


if __name__ == "__main__":
    main()
