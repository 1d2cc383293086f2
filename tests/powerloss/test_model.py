"""The power-loss model builds the crash states POSIX allows, and no fewer.

A writer that skips a barrier must produce a crash state a user would see as
loss: these tests hand the model such runs and check the state is there.
"""

from __future__ import annotations

from pathlib import Path

from tests.powerloss import model


def _states(ops: list[dict], tmp: Path) -> list[dict[str, bytes]]:
    (tmp / "template").mkdir(exist_ok=True)
    out = []
    for n, k in enumerate(model.crash_points(ops)):
        cut = model.Cut(ops, k)
        for c in model.choices(cut, full=True, sample=0, seed=0):
            dest = tmp / f"s{n}-{'-'.join(map(str, c))}"
            model.materialize(tmp / "template", {}, cut, c, dest)
            out.append({str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()})
    return out


def _w(ino: str, data: bytes) -> dict:
    return {"op": "write", "ino": ino, "off": 0, "data": data.hex()}


def test_rename_before_the_data_fsync_can_leave_an_empty_or_torn_file(tmp_path: Path) -> None:
    ops = [{"op": "creat", "path": "t", "ino": "1"}, _w("1", b"hello world"),
           {"op": "rename", "src": "t", "dst": "f", "ino": "1"}, {"op": "fsync-dir", "path": ""}]
    seen = {s.get("f") for s in _states(ops, tmp_path)}
    assert {b"", b"hello", bytes(11), b"hello world", None} <= seen


def test_the_correct_sequence_never_shows_a_partial_file(tmp_path: Path) -> None:
    ops = [{"op": "creat", "path": "t", "ino": "1"}, _w("1", b"hello world"), {"op": "fsync", "ino": "1"},
           {"op": "rename", "src": "t", "dst": "f", "ino": "1"}, {"op": "fsync-dir", "path": ""}]
    states = _states(ops, tmp_path)
    assert {s.get("f") for s in states} == {None, b"hello world"}
    assert states[-1] == {"f": b"hello world"}  # after the directory fsync, the name is durable


def test_an_entry_in_an_unsynced_new_directory_can_vanish(tmp_path: Path) -> None:
    ops = [{"op": "mkdir", "path": "d"}, {"op": "creat", "path": "d/f", "ino": "1"}, _w("1", b"x"),
           {"op": "fsync", "ino": "1"}, {"op": "fsync-dir", "path": "d"}]
    # the parent of d was never fsynced: even at the end, d (and so d/f) may be gone
    last = model.Cut(ops, len(ops))
    assert [n for _, _, n in last.dimensions()] == [2]
    dest = tmp_path / "end"
    (tmp_path / "template").mkdir()
    model.materialize(tmp_path / "template", {}, last, (0,), dest)
    assert not (dest / "d").exists()


def test_directory_operations_persist_in_order_within_a_directory(tmp_path: Path) -> None:
    ops = [{"op": "creat", "path": "a", "ino": "1"}, {"op": "creat", "path": "b", "ino": "2"},
           {"op": "fsync", "ino": "2"}]
    names = [set(s) for s in _states(ops, tmp_path)]
    assert {"b"} not in names  # b was created after a: never b without a
    assert {"a"} in names and set() in names and {"a", "b"} in names
