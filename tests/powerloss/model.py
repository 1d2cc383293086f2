"""Crash states a power loss may leave, built from a recorded run (docs/adr/0021-power-loss-model.md).

The log (:mod:`tests.powerloss.recorder`) is a sequence of mutating
operations and barriers. A power loss is placed just before each barrier and
after the last operation (between two barriers nothing new becomes durable,
so those states are among the ones at the next barrier). At a crash point:

* a directory operation (create, link, rename, unlink, mkdir, rmdir) is
  *durable* when an fsync of its directory came after it; the others of each
  directory persist as a prefix of their program order (the ext4 journal
  commits in order), independently across directories (stricter than ext4,
  whose one journal orders them across directories too), and a name whose
  parent directory's own entry did not persist is unreachable;
* a file's data written before an fsync of that file is durable; the rest
  persists whole, not at all, torn to a prefix, or as the file's size with
  zeroes in place of the content (the size without the data).

Every combination is a crash state; :func:`crash_states` enumerates them
all (``full``) or a deterministic sample.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

DIR_OPS = {"creat", "link", "rename", "unlink", "mkdir", "rmdir"}
DATA_MODES = ("kept", "lost", "torn", "zeroes")


def load(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def inodes_of(root: Path) -> dict[str, str]:
    """``{relative path: file id}`` (the inode number) of every file below ``root`` before the recorded run."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = str(p.lstat().st_ino)
    return out


def _dir_of(op: dict) -> str:
    return os.path.dirname(op["dst"] if op["op"] in ("link", "rename") else op["path"])


def crash_points(ops: list[dict]) -> list[int]:
    """Prefix lengths to cut at: before each barrier, and after the last operation."""
    return [i for i, op in enumerate(ops) if op["op"] in ("fsync", "fsync-dir")] + [len(ops)]


class Cut:
    """What is durable and what is in doubt when the power goes after ``ops[:k]``."""

    def __init__(self, ops: list[dict], k: int) -> None:
        self.ops, self.k = ops, k
        last_dir_sync: dict[str, int] = {}
        last_file_sync: dict[str, int] = {}
        for i, op in enumerate(ops[:k]):
            if op["op"] == "fsync-dir":
                last_dir_sync[op["path"]] = i
            elif op["op"] == "fsync":
                last_file_sync[op["ino"]] = i
        self.durable: set[int] = set()
        self.doubt: dict[str, list[int]] = {}  # directory -> its unsynced operations, in order
        self.data_doubt: dict[str, list[int]] = {}  # inode -> its unsynced writes/truncates
        self.data_durable: dict[str, list[int]] = {}
        for i, op in enumerate(ops[:k]):
            if op["op"] in DIR_OPS:
                d = _dir_of(op)
                if last_dir_sync.get(d, -1) > i:
                    self.durable.add(i)
                else:
                    self.doubt.setdefault(d, []).append(i)
            elif op["op"] in ("write", "truncate"):
                (self.data_durable if last_file_sync.get(op["ino"], -1) > i else self.data_doubt) \
                    .setdefault(op["ino"], []).append(i)

    def dimensions(self) -> list[tuple[str, str, int]]:
        return [("dir", d, len(v) + 1) for d, v in sorted(self.doubt.items())] + \
               [("data", ino, len(DATA_MODES)) for ino in sorted(self.data_doubt)]


def _content(ops: list[dict], durable: list[int], doubt: list[int], mode: str, base: bytes) -> bytes:
    def apply(buf: bytearray, idx: list[int]) -> bytearray:
        for i in idx:
            op = ops[i]
            if op["op"] == "truncate":
                del buf[op["size"]:]
                buf.extend(bytes(max(0, op["size"] - len(buf))))
            else:
                data = bytes.fromhex(op["data"])
                off = op["off"]
                if len(buf) < off:
                    buf.extend(bytes(off - len(buf)))
                buf[off:off + len(data)] = data
        return buf
    safe = apply(bytearray(base), durable)
    if mode == "lost" or not doubt:
        return bytes(safe)
    full = apply(bytearray(safe), doubt)
    if mode == "kept":
        return bytes(full)
    if mode == "zeroes":
        return bytes(safe[:len(full)]) + bytes(max(0, len(full) - len(safe)))
    cut = len(safe) + max(0, len(full) - len(safe)) // 2  # torn: a prefix of what was written
    return bytes(full[:cut])


def materialize(template: Path, before: dict[str, str], cut: Cut, choice: tuple[int, ...], dest: Path) -> None:
    """Write the crash state ``choice`` (one value per :meth:`Cut.dimensions`) to ``dest``."""
    dims = cut.dimensions()
    keep = set(cut.durable)
    modes: dict[str, str] = {}
    for (kind, key, _), c in zip(dims, choice, strict=True):
        if kind == "dir":
            keep.update(cut.doubt[key][:c])
        else:
            modes[key] = DATA_MODES[c]
    dirs: set[str] = {""}
    pre_ino: dict[str, str] = {}  # file id -> its path in the template
    names: dict[str, str] = {}  # path -> file id
    for dirpath, _subdirs, files in os.walk(template):
        r = os.path.relpath(dirpath, template)
        r = "" if r == "." else r
        dirs.add(r)
        for f in files:
            p = os.path.join(r, f) if r else f
            names[p] = before.get(p, f"template:{p}")
            pre_ino[names[p]] = p
    for i in sorted(keep):
        op = cut.ops[i]
        kind = op["op"]
        if kind in ("link", "rename"):
            if _parent(op["dst"]) not in dirs or op["src"] not in names:
                continue
            names[op["dst"]] = names[op["src"]]
            if kind == "rename":
                del names[op["src"]]
        elif _parent(op["path"]) not in dirs:
            continue
        elif kind == "creat":
            names[op["path"]] = op["ino"]
        elif kind == "unlink":
            names.pop(op["path"], None)
        elif kind == "mkdir":
            dirs.add(op["path"])
        elif kind == "rmdir":
            dirs.discard(op["path"])
    if dest.exists():
        shutil.rmtree(dest)
    for d in sorted(dirs, key=lambda s: s.count("/")):
        if all(_reachable(d, dirs)):
            (dest / d).mkdir(parents=True, exist_ok=True, mode=0o700)
    for p, ino in names.items():
        if not all(_reachable(_parent(p), dirs)):
            continue
        base = b""
        if ino in pre_ino:
            base = (template / pre_ino[ino]).read_bytes()
        data = _content(cut.ops, cut.data_durable.get(ino, []), cut.data_doubt.get(ino, []),
                        modes.get(ino, "kept"), base)
        out = dest / p
        out.write_bytes(data)
        out.chmod(0o600)
        if ino in pre_ino and not cut.data_durable.get(ino) and not cut.data_doubt.get(ino):
            shutil.copystat(template / pre_ino[ino], out)  # untouched: its times too (a quiet note stays quiet)


def _parent(p: str) -> str:
    return os.path.dirname(p)


def _reachable(d: str, dirs: set[str]) -> Iterator[bool]:
    while d:
        yield d in dirs
        d = _parent(d)


def choices(cut: Cut, *, full: bool, sample: int, seed: int) -> list[tuple[int, ...]]:
    """Every combination (``full``) or: all kept, all lost, each dimension alone at each value, and a sample."""
    sizes = [n for _, _, n in cut.dimensions()]
    if not sizes:
        return [()]
    total = 1
    for n in sizes:
        total *= n
    if full and total <= 100_000:
        return list(itertools.product(*[range(n) for n in sizes]))
    kept = tuple(n - 1 if kind == "dir" else 0 for kind, _, n in cut.dimensions())
    lost = tuple(0 if kind == "dir" else 1 for kind, _, _ in cut.dimensions())
    out = {kept, lost}
    rng = random.Random(seed)
    while len(out) < min(total, sample + 2):
        out.add(tuple(rng.randrange(n) for n in sizes))
    return sorted(out)


def synced_versions(template: Path, before: dict[str, str], ops: list[dict]) -> set[bytes]:
    """Every content a file had when the run fsynced it, and every file's content before the run.

    A file a writer publishes (temp, fsync, link or rename) is visible after
    any crash only as one of these: anything else is a half write.
    """
    content: dict[str, bytearray] = {}
    for p, ino in before.items():
        content[ino] = bytearray((template / p).read_bytes())
    out = {bytes(v) for v in content.values()}
    for i, op in enumerate(ops):
        if op["op"] in ("write", "truncate"):
            content[op["ino"]] = bytearray(_content(ops, [i], [], "lost", bytes(content.get(op["ino"], b""))))
        elif op["op"] == "fsync":
            out.add(bytes(content.get(op["ino"], b"")))
    return out
