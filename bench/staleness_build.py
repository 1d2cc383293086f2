"""Add one case to the stale-memory bench from a local clone of a public repository.

    python bench/staleness_build.py GIT_DIR OWNER/REPO COMMIT_B PATH LICENCE SPLIT LABELS.json

``COMMIT_B`` is the commit that edited the instruction file ``PATH`` because the
code changed; the case's text is ``PATH`` at ``COMMIT_B^`` (commit A) and its
tree snapshot is taken at ``COMMIT_B``: the top two levels of the listing, every
path one of whose names the text mentions, the manifests (Makefile,
package.json, pyproject.toml, Cargo.toml, justfile, …, at most three folders
deep; the root's build and toolchain files: pom.xml, build.gradle, global.json,
.nvmrc, …), the files the text cites, up to four files that use each name the
text puts in backticks or code lines import (``git grep -w``, code before documents; only one for a name in
over 40 files, so that the snapshot still shows the name occurs; a changelog only when no other file has it), and the code
beside each Python command-line entry point (``[project.scripts]``; at most 80 files, tests left out), where
the verifier looks up a program's commands. ``LABELS.json`` maps line numbers of
the text at A to the reason each is stale (see bench/README.md for the
labelling rule); ``changed`` (every line the edit changed or removed) is read
from ``git diff``. Writes ``bench/staleness-cases/cases/<id>.json.gz`` and adds
or replaces the case in ``manifest.json``. Uses the ``git`` program only.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent / "staleness-cases"
MANIFESTS = {"Makefile", "GNUmakefile", "makefile", "package.json", "pyproject.toml", "Cargo.toml", "justfile",
             "Justfile", "pnpm-workspace.yaml", "turbo.json", ".pre-commit-config.yaml", "hatch.toml", "tox.ini",
             "setup.cfg", "deno.json", "go.mod", "ruff.toml", ".gitmodules", ".gitignore"}
#: build and toolchain files read at the root only: the versions a project compiles for or pins (a Java release,
#: a .NET SDK, a Node or Python or Rust toolchain), which a line may state
ROOT_MANIFESTS = {"pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts",
                  "global.json", ".nvmrc", ".node-version", ".python-version", "rust-toolchain.toml", "rust-toolchain"}
#: documents: they name what the code had as well as what it has
DOC_EXT = {"md", "mdx", "rst", "txt", "html", "adoc"}
GREP_PER_NAME = 4
GREP_COMMON = 40  # a name in more files than this says nothing about where it lives: one is taken (it occurs)
FILE_MAX = 1 << 20
CLI_FILES = 80  # code files taken beside a command-line entry point
#: change history (changelogs, pending changesets): it names what was renamed away, so it is a witness of last resort
HISTORY = re.compile(r"(?:^|/)(?:CHANGELOG|CHANGES|HISTORY|NEWS|RELEASE[-_]?NOTES|RELEASES)(?:\.[\w.]+)?$"
                     r"|(?:^|/)(?:\.changeset|changelog\.d|newsfragments|changelog)/[^/]+\.(?:md|mdx|rst|txt)$", re.I)


def git(gd: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gd, *args], check=True, capture_output=True, text=True,
                          errors="replace").stdout


def changed_lines(gd: str, a: str, b: str, path: str) -> list[int]:
    out: list[int] = []
    for line in git(gd, "diff", "-U0", a, b, "--", path).splitlines():
        m = re.match(r"^@@ -(\d+)(?:,(\d+))? ", line)
        if m:
            start, n = int(m.group(1)), int(m.group(2) or 1)
            out.extend(range(start, start + n))
    return sorted(set(out))


def build(gd: str, repo: str, b: str, path: str, licence: str, split: str, labels: dict[str, str]) -> dict[str, object]:
    b = git(gd, "rev-parse", b).strip()
    a = git(gd, "rev-parse", b + "^").strip()
    text = git(gd, "show", f"{a}:{path}")
    listing = git(gd, "ls-tree", "-r", "--name-only", b).splitlines()
    words = set(re.findall(r"[\w.-]+", text))
    tree = sorted(p for p in listing if p.count("/") <= 1 or any(part in words for part in p.split("/")))
    files: dict[str, str] = {}

    def take(p: str) -> None:
        if p in files or p not in listing_set:
            return
        try:
            size = int(git(gd, "cat-file", "-s", f"{b}:{p}").strip())
        except subprocess.CalledProcessError:
            return
        if size <= FILE_MAX:
            files[p] = git(gd, "show", f"{b}:{p}")

    listing_set = set(listing)
    for p in listing:
        if p.rsplit("/", 1)[-1] in MANIFESTS and p.count("/") <= 3 or p in ROOT_MANIFESTS:
            take(p)
    for p in re.findall(r"[\w.-]+(?:/[\w.-]+)+", text):
        take(p.strip("./"))
    names = {t.strip() for t in re.findall(r"`([^`\n]{3,80})`", text)}
    for line in text.splitlines():  # the identifiers of code lines (``import { A, B } from …``)
        if re.match(r"\s*(?:import|from|class|export|const|let|use|extends)\s", line):
            names.update(re.findall(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b", line))
    for name in sorted(names):
        for part in re.findall(r"[A-Za-z_$][\w$-]{2,}", name)[:3]:
            try:
                hits = git(gd, "grep", "-l", "-w", "-F", "-e", part, b).splitlines()
            except subprocess.CalledProcessError:
                continue
            # code before documents, a changelog last: the verifier asks whether the *code* still has a name
            # (documents repeat names the code dropped), and a changelog names what was renamed away
            hits.sort(key=lambda h: (bool(HISTORY.search(h.split(":", 1)[1])),
                                     h.split(":", 1)[1].rsplit(".", 1)[-1].lower() in DOC_EXT))
            for h in hits[:GREP_PER_NAME] if len(hits) <= GREP_COMMON else hits[:1]:
                take(h.split(":", 1)[1])
    # the code beside each Python command-line entry point (``[project.scripts]``): where its commands are defined
    code_ext = (".py", ".pyi")
    for p in [x for x in listing if x.rsplit("/", 1)[-1] == "pyproject.toml" and x.count("/") <= 3]:
        body = files.get(p) or ""
        sec = re.search(r"(?ms)^\[project\.scripts\]\s*$(.*?)(?=^\[|\Z)", body)
        for target in re.findall(r"(?m)^\s*\"?[\w.-]+\"?\s*=\s*[\"']([\w.]+)", sec.group(1) if sec else ""):
            mod = target.replace(".", "/")
            ep = next((x for x in listing if x.endswith(mod + ".py") or x.endswith(mod + "/__init__.py")), None)
            if ep is None:
                continue
            folder = ep.rpartition("/")[0]
            beside = [x for x in listing if x.startswith(folder + "/") and x.endswith(code_ext)
                      and not re.search(r"(?:^|/)(?:tests?|examples?)/|(?:^|/)test_[^/]*$", x)]
            for x in beside[:CLI_FILES]:
                take(x)
    changed = changed_lines(gd, a, b, path)
    owner_name = repo.split("/")[1].lower()
    cid = f"{owner_name}-{b[:10]}-{re.sub(r'[^a-z0-9]+', '-', path.lower()).strip('-')}"
    case = {"id": cid, "repo": repo, "path": path, "commit_a": a, "commit_b": b, "licence": licence,
            "subject": git(gd, "log", "-1", "--format=%s", b).strip(),
            "text_sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text, "tree": tree, "files": files,
            "changed": changed}
    bad = [n for n in labels if int(n) not in changed]
    if bad:
        raise SystemExit(f"labelled lines not changed by the edit: {bad}")
    with gzip.open(ROOT / "cases" / f"{cid}.json.gz", "wt", encoding="utf-8") as f:
        json.dump(case, f)
    entry = {"id": cid, "source": f"{repo} @ {b} : {path}", "text_at": a, "licence": licence, "split": split,
             "subject": case["subject"], "changed_lines": len(changed), "stale": labels}
    manifest = [m for m in json.loads((ROOT / "manifest.json").read_text(encoding="utf-8")) if m["id"] != cid]
    manifest.append(entry)
    (ROOT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return entry


if __name__ == "__main__":
    gd, repo, b, path, licence, split, labels = sys.argv[1:8]
    print(build(gd, repo, b, path, licence, split, json.loads(pathlib.Path(labels).read_text()))["id"])
