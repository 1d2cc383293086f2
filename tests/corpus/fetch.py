"""Restore the corpus files whose licence does not let the repository carry them.

Usage: ``python tests/corpus/fetch.py [--dry-run]``

For each entry of ``manifest.json`` (the quality corpus), ``importers.json``
(real files the importer tests read) and ``audit.json`` (the unlabelled audit
pool whose published notes are judged) with ``"committed": false`` and no verified copy in
``tests/corpus/cache/``, fetch the recorded commit of the recorded public
repository with ``git`` (a shallow fetch of one commit into a scratch
repository), take the recorded path, and keep it only if its SHA-256 is the
recorded one. Nothing else is written; ``cache/`` is ignored by git. The
quality bench scores whatever is present and says how many files it scored.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
MANIFESTS = ("manifest.json", "importers.json", "audit.json")


def _git(*args: str, cwd: pathlib.Path) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def _present(entry: dict[str, object]) -> bool:
    path = HERE / "cache" / str(entry["file"])
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]


def restore(entry: dict[str, object]) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        work = pathlib.Path(scratch)
        _git("init", "-q", cwd=work)
        _git("fetch", "-q", "--depth", "1", f"https://github.com/{entry['repo']}", str(entry["commit"]), cwd=work)
        data = _git("show", f"{entry['commit']}:{entry['path']}", cwd=work)
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        return "sha256 mismatch, not kept"
    (HERE / "cache").mkdir(exist_ok=True)
    (HERE / "cache" / str(entry["file"])).write_bytes(data)
    return "restored"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="only list what would be fetched")
    args = parser.parse_args(argv)
    entries = [entry for name in MANIFESTS
               for entry in json.loads((HERE / name).read_text(encoding="utf-8"))["files"]]
    failures = 0
    for entry in entries:
        if entry["committed"] or _present(entry):
            continue
        if args.dry_run:
            print(f"would fetch {entry['id']}: {entry['repo']}@{entry['commit'][:12]}:{entry['path']}")
            continue
        try:
            outcome = restore(entry)
        except (OSError, subprocess.CalledProcessError) as exc:
            outcome = f"not fetched ({type(exc).__name__})"
        failures += outcome != "restored"
        print(f"{entry['id']}: {outcome}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
