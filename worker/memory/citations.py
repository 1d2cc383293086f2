"""Citations: what a memory entry names in the repository, and whether it still says so.

A citation is a path in the workspace (``kind: path``), optionally with a
1-based inclusive line span and the SHA-256 of those lines (or of the whole
file), or a named target of a build file (``kind: target``: a Make, npm or
just target, with the build file as its path). Citations are found locally
by patterns, never by a model: backticked or slashed paths that exist,
``make X`` / ``npm run X`` / ``yarn X`` / ``pnpm run X`` / ``just X`` whose
build file exists.

:func:`verify_entry` is the pure check the ``verify`` job and the staleness
benchmark call: given the workspace root, an entry's text and its recorded
citations (front matter; none: found in the text now), one :class:`Check`
per citation with a verdict ``ok``, ``stale`` (with the reason and the
current lines as evidence) or ``unverifiable`` (with a fixed code).

Safety: a path outside the workspace (absolute, ``..``) is
``E_PATH_OUTSIDE_ROOT``; a symlink anywhere on the way is ``E_PATH_SYMLINK``;
a FIFO, device, socket or folder is ``E_PATH_NOT_REGULAR``; a file over
:data:`FILE_MAX` is ``E_RECORD_TOO_LARGE``. None of them is followed, opened
or read (``lstat`` only; the open itself uses ``O_NOFOLLOW | O_NONBLOCK``).
"""

from __future__ import annotations

import bisect
import builtins
import fnmatch
import hashlib
import json
import os
import posixpath
import re
import stat
from collections.abc import Iterable, KeysView, Mapping, Sequence
from typing import Any

import attrs
from cairn.protocol.errors import ErrorCode
from cairn.state import layout

#: a cited file larger than this is never read
FILE_MAX = 1 << 20
#: lines of evidence a stale check carries at most
EVIDENCE_LINES = 6
OK, STALE, UNVERIFIABLE = "ok", "stale", "unverifiable"

_TICKED = re.compile(r"`([^`\s]{1,200})`")
_SLASHED = re.compile(r"(?<![\w./:@%-])((?:\.{1,2}/|/)?[\w.-]+(?:/[\w.-]+)+/?)(?![\w%*.-])")  # not URL-encoded, nor
# a glob's head (``packages/plugin-*/``: a pattern, not the folder ``packages/plugin-``)
#: a Markdown link to a page elsewhere: its text names that page's place, not one of this tree
_LINK_OUT = re.compile(r"\[[^\]]*\]\(https?://[^)\s]*\)")
#: a relative link's target (``[guide](./pnpm/AGENTS.md#rules)``): a path of the repository, from the file's folder
_LINK_TARGET = re.compile(r"\]\(\s*(?:\./)?([\w.-]+(?:/[\w.-]+)*/?)(?:#[^)\s]*)?\s*\)")
_LINES = re.compile(r"^(.*?):(\d{1,7})(?:-(\d{1,7}))?$")
_PATHLIKE = re.compile(r"^[\w./-]+$")
_EXT = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_TARGET = re.compile(r"[A-Za-z0-9][\w.:/-]{0,80}")
_MAKEFILES, _JUSTFILES = "GNUmakefile|makefile|Makefile", "justfile|Justfile|.justfile"
#: a runner at the start of a command; what it runs is read word by word up to the end of the command
_RUNNER_WORD = re.compile(r"(?<![\w./@$<{-])(g?make|just|npm|pnpm|yarn|bun)(?=[ \t]+\S)")
_COMMAND_END = re.compile(r"&&|\|\||[;|#>`]|\]\(|\$\(|\)|\n")  # ``](``: a Markdown link's text ends
#: subcommands of the package managers themselves (not scripts of the project)
_PNPM_OWN = frozenset("install i add remove rm un uninstall exec dlx update up upgrade why list ls ll outdated create "
                      "publish pack link ln unlink store config c env import init patch patch-commit patch-remove "
                      "audit fetch rebuild rb prune setup self-update test t server deploy licenses root bin doctor "
                      "help recursive m multi approve-builds ignored-builds get set cat-file cat-index find-hash "
                      "dedupe install-test it "
                      # what pnpm hands to npm: the registry's commands
                      "access adduser bugs deprecate dist-tag docs edit info login logout owner ping prefix profile "
                      "pkg repo search set-script star stars team token unpublish unstar version view whoami".split())
_YARN_OWN = frozenset("add install remove upgrade up upgrade-interactive why info init create dlx exec node set config "
                      "cache constraints dedupe explain link unlink pack patch patch-commit plugin rebuild npm version "
                      "workspaces global bin audit outdated list login logout publish tag team owner licenses check "
                      "autoclean import policies generate-lock-entry help search stage sdks".split())
#: package managers by their package's name: in their own tree, ``pnpm X`` may be a command being written
_PACKAGE_MANAGERS = frozenset({"pnpm", "npm", "yarn", "@yarnpkg/cli", "bun"})
#: options that take the next word as their value
_VALUE_OPTS = {
    "make": frozenset("-C --directory -f --file --makefile -I --include-dir -o --old-file -W --what-if --new-file "
                      "--assume-new --assume-old --eval".split()),
    "just": frozenset("-f --justfile -d --working-directory --shell --shell-arg --dotenv-filename --dotenv-path -E "
                      "--color --chooser --command-color --list-heading --list-prefix --dump-format --tempdir "
                      "--timestamp-format --alias-style".split()),
    "npm": frozenset("--prefix -C -w --workspace --loglevel --registry".split()),
    "pnpm": frozenset("-C --dir -F --filter --filter-prod --workspace-concurrency --reporter --loglevel "
                      "--changed-files-ignore-pattern --test-pattern --resume-from".split()),
    "yarn": frozenset("--cwd".split()),
    "bun": frozenset("--cwd".split()),
}
#: what ends a list of make targets (a line's prose after a command)
_NOT_TARGET = frozenset("and or then to the a an before after if when with for in on is are it you your we our "
                        "sure first once again also only".split())


@attrs.frozen
class _Run:
    """A build-file target a command runs: ``make -C docs html``, ``pnpm --filter web dev``, ``just fmt``."""
    target: str
    builds: str  # the build file names, "|"-separated, or the one file a command names (``make -f x.mk``)
    cwd: str = ""  # the folder the command itself runs in (``-C DIR``, ``--prefix DIR``, ``--cwd DIR``)
    package: str = ""  # the workspace package it runs in (``--filter P``, ``-w P``, ``yarn workspace P``); "*": any
    start: int = 0  # the target's place in the text
    end: int = 0


def _parse_run(tool: str, words: list[tuple[str, int]]) -> list[_Run]:
    """The targets one runner's command line names (``words``: the words after the runner, with offsets)."""
    cwd = file = package = ""
    ran = False  # npm/pnpm/yarn/bun: ``run`` seen
    out: list[_Run] = []
    i = 0
    while i < len(words):
        w, at = words[i]
        nxt = words[i + 1][0] if i + 1 < len(words) else ""
        opt, eq, val = w.partition("=")
        if w.startswith("-") and (w in _VALUE_OPTS[tool] or (eq and opt in _VALUE_OPTS[tool])):
            val = val if eq else nxt
            i += 1 if eq else 2
            if opt in ("-C", "--directory", "--dir", "--prefix", "--cwd") and tool != "just":
                cwd = val
            elif opt in ("-f", "--file", "--makefile", "--justfile"):
                file = val
            elif opt in ("-F", "--filter", "--filter-prod", "-w", "--workspace") and tool in ("pnpm", "npm"):
                package = "*" if package else val
            continue
        if tool == "make" and w in ("-j", "--jobs", "-l", "--load-average") and nxt.isdigit():
            i += 2
            continue
        if tool == "make" and re.fullmatch(r"-[Cf]\S+", w):
            cwd, file = (w[2:], file) if w[1] == "C" else (cwd, w[2:])
            i += 1
            continue
        if w in ("--if-present", "-ws", "--workspaces", "-l", "--list", "--summary", "--evaluate", "--fmt",
                 "--init", "--edit", "--choose", "--variables", "--dump", "--groups") and tool != "make":
            return []  # runs a target that may be absent, every package's, or none (``just --list``)
        if tool == "pnpm" and w in ("-r", "--recursive"):
            package = "*"
        if w.startswith("-") or (tool in ("make", "just") and "=" in w):
            i += 1  # a flag, or ``VAR=value``
            continue
        if tool == "yarn" and not ran and w == "workspace" and not package:
            package, i = nxt, i + 2
            continue
        if tool in ("npm", "pnpm", "yarn", "bun") and not ran and w in ("run", "run-script"):
            ran, i = True, i + 1
            continue
        if not ran and tool != "make" and w.endswith(":") and i == 0:
            return []  # a label: "pnpm version: ^11.9.0", "yarn workspaces: …"
        if not ran and ((tool == "npm" or tool == "bun") or (tool == "pnpm" and w in _PNPM_OWN)
                        or (tool == "yarn" and w in _YARN_OWN)):
            return []  # the package manager's own command (``npm ci``, ``pnpm exec``, ``yarn add``)
        lead = len(w) - len(w.lstrip("*\"'"))  # emphasis and quotes around the target: ``"lint"``, ``**check**``
        t = w[lead:].rstrip(".,;:)]!?*\"'")  # and closing punctuation
        if not _TARGET.fullmatch(t) or (out and t.lower() in _NOT_TARGET):
            break
        builds = file or (_MAKEFILES if tool == "make" else _JUSTFILES if tool == "just" else "package.json")
        out.append(_Run(t, builds, cwd.strip("/").removeprefix("./"), package, at + lead, at + lead + len(t)))
        if tool != "make":
            break  # the words after a script or a recipe are its arguments
        i += 1
    return out


def _runs(text: str) -> list[_Run]:
    """Every build-file target the commands in ``text`` run, in order."""
    out: list[_Run] = []
    for m in _RUNNER_WORD.finditer(text):
        end = _COMMAND_END.search(text, m.end())
        words = [(w.group(0), w.start()) for w in re.finditer(r"\S+", text[:end.start() if end else len(text)])
                 if w.start() >= m.end()]
        out.extend(_parse_run(m.group(1).removeprefix("g"), words))
    return out


_MAKE_RULE = re.compile(r"^([^\s:#=][^:#=]*?)\s*::?(?!=)")
_JUST_MOD = re.compile(r"^mod\??\s+([A-Za-z0-9_][\w-]*)")  # a module: ``just MODULE RECIPE``
_JUST_RULE = re.compile(r"^(?:alias\s+([A-Za-z0-9_][\w-]*)\s*:=|@?([A-Za-z0-9_][\w-]*)(?:\s[^:]*?)?\s*:(?!=))")


@attrs.frozen(kw_only=True)
class Citation:
    kind: str  # "path" | "target" | "symbol" (an identifier, ``target`` its name); checks of plain lines add others
    path: str  # workspace-relative, "/" separated (as written; checked when read)
    target: str | None = None  # the target's name (kind "target")
    lines: tuple[int, int] | None = None  # 1-based, inclusive
    sha256: str | None = None  # of the cited lines, or of the file without lines
    commit: str | None = None  # the workspace's git commit when it was recorded

    def as_front_matter(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.target is not None:
            out["symbol" if self.kind == "symbol" else "target"] = self.target
        if self.lines is not None:
            out["lines"] = f"{self.lines[0]}-{self.lines[1]}"
        if self.sha256:
            out["sha256"] = self.sha256
        if self.commit:
            out["commit"] = self.commit
        return out


@attrs.frozen(kw_only=True)
class Check:
    citation: Citation
    verdict: str  # ok | stale | unverifiable
    reason: str = ""
    code: str | None = None  # unverifiable: the fixed error code
    lines: tuple[int, int] | None = None  # where the cited text is now (moved lines)
    evidence: tuple[str, ...] = ()  # stale: the lines there now
    renamed: Citation | None = None  # stale target: the target now defined where it was (a rename), cited afresh
    #: stale: what the text says (``[0]``: a path, a value) and what the tree says instead (``[1]``: the one
    #: file it moved to, the one value given now); an update can say it. None: no single replacement is known
    replace: tuple[str, str] | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.citation.as_front_matter(), "verdict": self.verdict}
        for key in ("reason", "code"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.lines is not None:
            out["now"] = f"{self.lines[0]}-{self.lines[1]}"
        if self.evidence:
            out["evidence"] = list(self.evidence)
        return out


class _Refused(Exception):
    def __init__(self, code: ErrorCode, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


# -- reading a cited file safely -----------------------------------------------------------

def _rel_parts(path: str) -> list[str]:
    if not path or path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path) or "\0" in path:
        raise _Refused(ErrorCode.PATH_OUTSIDE_ROOT, "the path is not inside the workspace")
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise _Refused(ErrorCode.PATH_OUTSIDE_ROOT, "the path is not inside the workspace")
    return parts


def _lstat_chain(root: str, path: str) -> tuple[str, os.stat_result] | None:
    """The full path and ``lstat`` of ``path`` under ``root``; None when absent. Refuses links and escapes."""
    full = root
    st: os.stat_result | None = None
    for part in _rel_parts(path):
        full = os.path.join(full, part)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        except OSError as exc:
            raise _Refused(ErrorCode.IO_FAILED, f"cannot stat the path ({exc.errno})") from None
        if stat.S_ISLNK(st.st_mode):
            raise _Refused(ErrorCode.PATH_SYMLINK, "the path is or passes through a symlink")
    assert st is not None
    return full, st


def _read(root: str, path: str) -> bytes | None:
    """The bytes of a regular file under ``root`` (None: absent); never follows, opens a FIFO, or reads a huge file."""
    found = _lstat_chain(root, path)
    if found is None:
        return None
    full, st = found
    if not stat.S_ISREG(st.st_mode):
        raise _Refused(ErrorCode.PATH_NOT_REGULAR, "the path is not a regular file")
    if st.st_size > FILE_MAX:
        raise _Refused(ErrorCode.RECORD_TOO_LARGE, f"the file is over {FILE_MAX} bytes")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(full, flags)
    except OSError as exc:
        raise _Refused(ErrorCode.PATH_SYMLINK if exc.errno == 40 else ErrorCode.IO_FAILED,
                       "the file could not be opened") from None
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode) or fst.st_size > FILE_MAX:
            raise _Refused(ErrorCode.PATH_NOT_REGULAR, "the path changed into something else")
        return os.read(fd, FILE_MAX + 1)[:FILE_MAX]
    finally:
        os.close(fd)


class _Reader:
    """:func:`_read` for many files of one tree: each folder opened once from its parent (``O_NOFOLLOW``,
    so a link is refused at every component as :func:`_lstat_chain` refuses it), each file from its
    folder; at most :data:`_READER_FDS` folders held open. None for a file absent or refused."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.fds: dict[str, int] = {}  # folder -> descriptor, oldest first

    def _dir(self, rel: str) -> int | None:
        fd = self.fds.pop(rel, None)
        if fd is None:
            if rel:
                head, _, name = rel.rpartition("/")
                parent = self._dir(head)
                if parent is None:
                    return None
                try:
                    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
                except OSError:
                    return None
            else:
                try:
                    fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError:
                    return None
            while len(self.fds) >= _READER_FDS:
                os.close(self.fds.pop(next(iter(self.fds))))
        self.fds[rel] = fd  # the newest last
        return fd

    def read(self, path: str) -> bytes | None:
        try:
            parts = _rel_parts(path)
        except _Refused:
            return None
        folder = self._dir("/".join(parts[:-1]))
        if folder is None:
            return None
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > FILE_MAX:
                return None
            return os.read(fd, FILE_MAX + 1)[:FILE_MAX]
        except OSError:
            return None
        finally:
            os.close(fd)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


_READER_FDS = 32


def read_lines(root: str, path: str) -> list[str] | None:
    """The lines of the text file ``path`` under ``root``, read as a citation is (never a link, a FIFO or a
    huge file); None when it is absent or refused."""
    try:
        data = _read(root, path)
    except (_Refused, IsADirectoryError):
        return None
    return None if data is None else _lines(data)


def refused_code(root: str, path: str) -> str | None:
    """Why ``path`` under ``root`` is never read as a text file (a link, a FIFO, a folder, a huge file: its
    code), None when it is absent or readable."""
    try:
        _read(root, path)
    except _Refused as exc:
        return str(exc.code)
    except IsADirectoryError:
        return str(ErrorCode.PATH_NOT_REGULAR)
    return None


def _lines(data: bytes) -> list[str]:
    return [ln.rstrip("\r") for ln in data.decode("utf-8", "replace").split("\n")]


def lines_sha(lines: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def git_commit(root: str) -> str | None:
    """The workspace's checked-out commit, read from ``.git`` directly (no program run); None when unknown."""
    try:
        head = _read(root, ".git/HEAD")
        if head is None:
            return None
        text = head.decode("ascii", "replace").strip()
        if re.fullmatch(r"[0-9a-f]{40}", text):
            return text
        if not text.startswith("ref: refs/"):
            return None
        ref = text[5:].strip()
        if not _PATHLIKE.match(ref) or ".." in ref:
            return None
        loose = _read(root, ".git/" + ref)
        if loose is not None and re.fullmatch(r"[0-9a-f]{40}", loose.decode("ascii", "replace").strip()):
            return loose.decode("ascii").strip()
        packed = _read(root, ".git/packed-refs") or b""
        for line in packed.decode("ascii", "replace").splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref and re.fullmatch(r"[0-9a-f]{40}", sha):
                return sha
    except _Refused:
        return None
    return None


# -- targets ---------------------------------------------------------------------------------

def _target_lines(build: str, text: list[str]) -> dict[str, int]:
    """Target name -> its 1-based line in a build file's lines."""
    out: dict[str, int] = {}
    build = build.rsplit("/", 1)[-1]
    if build == "package.json":
        try:
            scripts = json.loads("\n".join(text)).get("scripts", {})
        except (ValueError, AttributeError):
            return out
        if not isinstance(scripts, dict):
            return out
        for name in scripts:
            pat = re.compile(r'^\s*"' + re.escape(str(name)) + r'"\s*:')
            out[str(name)] = next((i + 1 for i, ln in enumerate(text) if pat.match(ln)), 1)
        return out
    rule = _MAKE_RULE if "make" in build.lower() or build.endswith(".mk") else _JUST_RULE
    for i, ln in enumerate(text):
        m = rule.match(ln) or (_JUST_MOD.match(ln) if rule is _JUST_RULE else None)
        if m:
            for name in (m.group(1) or m.group(m.lastindex or 1)).split():
                out.setdefault(name.lstrip("@"), i + 1)
    return out


# -- finding ---------------------------------------------------------------------------------

def _path_candidates(text: str) -> list[tuple[str, tuple[int, int] | None, bool]]:
    """(path, line span, weak) named in ``text``; weak: a backticked bare name (``Makefile``), cited only if a file."""
    seen: dict[str, tuple[tuple[int, int] | None, bool]] = {}
    text = _LINK_OUT.sub(" ", text)
    for sp in re.finditer(r"`([\w.-]+/[\w./-]*(?: [\w./-]+)+/?)`", text):  # a path with a space: `docs/a b/c.md`
        if "/" in sp.group(1).split(" ")[-1] or sp.group(1).endswith("/"):
            seen.setdefault(sp.group(1).rstrip("/"), (None, False))
            text = text.replace(sp.group(0), " ")
    tokens = [(m.group(1), True) for m in _TICKED.finditer(text)] + [(m.group(1), False)
                                                                     for m in _SLASHED.finditer(text)]
    for token, ticked in tokens:
        token = token.rstrip(".,;:)")
        if "://" in token or not token:
            continue
        span = None
        m = _LINES.match(token)
        if m:
            token = m.group(1)
            start = int(m.group(2))
            end = int(m.group(3) or start)
            span = (start, end) if 1 <= start <= end else None
        if not _PATHLIKE.match(token):
            continue
        weak = not ("/" in token or _EXT.search(token))
        if weak and not (ticked and re.match(r"^[A-Za-z][\w.-]*$", token)):
            continue
        if (not ticked and token.count("/") == 1 and not token.endswith("/") and not _EXT.search(token)
                and not token.startswith(("./", "../", "/"))):
            continue  # prose "A/B" ("docs/code", "test/file", "docs/versioning guidance"): a choice or a pair
        if token.startswith("./"):
            token = token[2:]
        seen.setdefault(token.rstrip("/"), (span, weak))
    return [(path, span, weak) for path, (span, weak) in seen.items()]


def _target_candidates(text: str) -> list[tuple[str, str, str]]:
    """(target, build files, folder) named in ``text``, in order, once each; the build file is resolved later.
    A target run in a workspace package (``--filter P``) needs the tree to resolve: it is left to the line checks."""
    out: list[tuple[str, str, str]] = []
    for r in _runs(text):
        triple = (r.target, r.builds, r.cwd)
        if not r.package and triple not in out:
            out.append(triple)
    return out


def _build_file(root: str, builds: str, cwd: str = "") -> tuple[str, list[str]] | None:
    for name in builds.split("|"):
        path = f"{cwd}/{name}" if cwd else name
        try:
            data = _read(root, path)
        except _Refused:
            continue
        if data is not None:
            return path, _lines(data)
    return None


def find_citations(root: str, text: str, *, commit: str | None = None, hashes: bool = True,
                   tree: Tree | None = None, exclude: Iterable[str] = ()) -> list[Citation]:
    """What ``text`` names in the workspace ``root`` now, with the content hashes of the cited lines or files.

    Only what exists is cited; a path outside the workspace or through a
    symlink is cited as written (without a hash) so that its check says why
    it cannot be verified. A backticked identifier (:func:`mentions`) is cited
    where it first occurs whole-word (``kind: symbol``). ``commit``: recorded on
    each citation (see :func:`git_commit`). ``exclude``: the memory roots besides ``.agents/memory`` (what
    memory says is never where a name is cited).
    """
    out: list[Citation] = []
    for target, builds, cwd in _target_candidates(text):
        found = _build_file(root, builds, cwd)
        if found is None:
            continue
        build, lines = found
        at = _target_lines(build, lines).get(target)
        if at is None:
            continue
        out.append(Citation(kind="target", path=build, target=target, lines=(at, at),
                            sha256=lines_sha(lines[at - 1:at]) if hashes else None, commit=commit))
    for path, span, weak in _path_candidates(text):
        try:
            data = _read(root, path)
        except _Refused:
            if weak:
                continue
            out.append(Citation(kind="path", path=path, lines=span, commit=commit))
            continue
        except IsADirectoryError:
            continue
        if data is None:
            continue
        lines = _lines(data)
        if span is not None and span[1] > len(lines):
            span = None
        sha = None
        if hashes:
            sha = lines_sha(lines[span[0] - 1:span[1]]) if span else hashlib.sha256(data).hexdigest()
        out.append(Citation(kind="path", path=path, lines=span, sha256=sha, commit=commit))
    said = mentions(text)
    keyed = [m for m in said if m.kind in ("value", "setting")]
    if keyed:  # a configuration key the text states a value of: cited where a configuration file sets it
        tree = tree if tree is not None else Tree(root, exclude=exclude)
        for m in keyed:
            setting = _config_line(tree, _keys_of(m))
            if setting is not None:
                conf, at_line, text_line, key = setting
                out.append(Citation(kind="symbol", path=conf, target=key, lines=(at_line, at_line),
                                    sha256=lines_sha([text_line]) if hashes else None, commit=commit))
    symbols = [m.name for m in said if m.kind == "symbol"]
    if symbols:
        tree = tree if tree is not None else Tree(root, exclude=exclude)
        for name in symbols:
            where = tree.find_word(re.split(r"\.|::", name)[0])
            if where is not None:
                path, at, line = where
                out.append(Citation(kind="symbol", path=path, target=name, lines=(at, at),
                                    sha256=lines_sha([line]) if hashes else None, commit=commit))
    # a snake_case name in backticks is cited only where the tree's code defines it as a function (``def
    # helper_fn``): such a name is too often another tool's or a setting's to be cited where it merely occurs
    functions = list(dict.fromkeys(m.group(1) for t in _TICKED_SPAN.findall(text)
                                   for m in [_SNAKE_FUNCTION.fullmatch(t.strip())] if m))
    if functions:
        tree = tree if tree is not None else Tree(root, exclude=exclude)
        tree.words()
        for name in functions:
            where = tree.find_definition(name)
            if where is not None:
                path, at, line = where
                out.append(Citation(kind="symbol", path=path, target=name, lines=(at, at),
                                    sha256=lines_sha([line]) if hashes else None, commit=commit))
    return out


def _keys_of(m: Mention) -> list[str]:
    """The configuration keys a value or setting mention names (a line length: its formatters' keys)."""
    if m.kind == "setting":
        tools = m.package.split(",") if m.package else list(_LINE_LENGTH_KEYS)
        return list(dict.fromkeys(k for t in tools for k in _LINE_LENGTH_KEYS.get(t, ())))
    return [m.name.rsplit(".", 1)[-1]]


def _config_line(tree: Tree, keys: Sequence[str]) -> tuple[str, int, str, str] | None:
    """(configuration file, 1-based line, the line, key) where one of ``keys`` is first set (``key = v`` or
    ``key: v``), else None."""
    for key in keys:
        pat = re.compile(r"^\s*\"?" + re.escape(key) + r"\"?\s*[=:]")
        for p in tree.configs():
            body = tree.text(p) or ""
            if key not in body:
                continue
            for i, line in enumerate(body.split("\n")):
                if pat.match(line):
                    return p, i + 1, line.rstrip("\r"), key
    return None


def from_front_matter(value: object) -> tuple[list[Citation], list[Check]]:
    """Citations recorded in a topic's front matter, and a check for each item that is not one."""
    good: list[Citation] = []
    bad: list[Check] = []
    items = value if isinstance(value, list) else [value]
    for n, item in enumerate(items, 1):
        try:
            good.append(_citation(item))
        except (TypeError, ValueError) as exc:  # which item, and what is wrong with it (never its text)
            bad.append(Check(citation=Citation(kind="path", path=""), verdict=UNVERIFIABLE,
                             code=str(ErrorCode.TOPIC_FRONT_MATTER),
                             reason=f"citation {n} of the front matter is not valid: {exc}"))
    return good, bad


def _citation(item: object) -> Citation:
    if not isinstance(item, Mapping) or not isinstance(item.get("path"), str) or not item["path"]:
        raise ValueError("it names no path")
    target, symbol = item.get("target"), item.get("symbol")
    if symbol is not None and (target is not None or not isinstance(symbol, str) or not _IDENT.fullmatch(symbol)):
        raise ValueError("its symbol is not one name, or it has a target too")
    lines = item.get("lines")
    span = None
    if lines is not None:
        m = re.fullmatch(r"(\d{1,7})(?:-(\d{1,7}))?", str(lines).strip())
        if not m or int(m.group(1)) < 1 or int(m.group(2) or m.group(1)) < int(m.group(1)):
            raise ValueError("its lines are not a span such as 3-7")
        span = (int(m.group(1)), int(m.group(2) or m.group(1)))
    sha, commit = item.get("sha256"), item.get("commit")
    for v in (target, sha, commit):
        if v is not None and not isinstance(v, str):
            raise TypeError("its target, sha256 or commit is not text")
    if symbol is not None:
        return Citation(kind="symbol", path=item["path"], target=symbol, lines=span, sha256=sha, commit=commit)
    return Citation(kind="target" if target else "path", path=item["path"], target=target, lines=span,
                    sha256=sha, commit=commit)


# -- verifying -------------------------------------------------------------------------------

def _clip(lines: Iterable[str]) -> tuple[str, ...]:
    out = []
    for ln in list(lines)[:EVIDENCE_LINES]:
        clean = "".join(ch if ch.isprintable() or ch == "\t" else "?" for ch in ln)
        out.append(clean[:200])
    return tuple(out)


def _find_span(lines: list[str], size: int, sha: str, near: int) -> tuple[int, int] | None:
    """Where ``size`` consecutive lines hash to ``sha``, nearest to line ``near``; None if nowhere."""
    n = len(lines)
    best: tuple[int, int] | None = None
    for start in range(0, max(n - size + 1, 0)):
        if lines_sha(lines[start:start + size]) == sha:
            if best is None or abs(start + 1 - near) < abs(best[0] - near):
                best = (start + 1, start + size)
    return best


def _rename(c: Citation, lines: list[str]) -> Citation | None:
    """The one target now defined on the line where ``c``'s was (its rename), or None."""
    if c.lines is None:
        return None
    there = [name for name, at in _target_lines(os.path.basename(c.path), lines).items() if at == c.lines[0]]
    if len(there) != 1 or not re.fullmatch(r"[A-Za-z0-9][\w.:/-]{0,80}", there[0]):
        return None
    at = c.lines[0]
    return Citation(kind="target", path=c.path, target=there[0], lines=(at, at),
                    sha256=lines_sha(lines[at - 1:at]), commit=c.commit)


def rename_in_text(text: str, old: str, new: str) -> str:
    """``text`` with each runner invocation of target ``old`` (``make old``, ``npm run old`` …) naming ``new``."""
    out, last = [], 0
    for r in _runs(text):
        if r.target == old and r.start >= last:
            out += [text[last:r.start], new]
            last = r.end
    return "".join(out) + text[last:]


def check_citation(root: str, c: Citation, tree: Tree | None = None, *, exclude: Iterable[str] = ()) -> Check:
    """One citation against the working tree of ``root``; ``exclude``: memory roots besides ``.agents/memory``."""
    try:
        data = _read(root, c.path)
    except _Refused as exc:
        return Check(citation=c, verdict=UNVERIFIABLE, code=str(exc.code), reason=exc.reason)
    except IsADirectoryError:
        return Check(citation=c, verdict=UNVERIFIABLE, code=str(ErrorCode.PATH_NOT_REGULAR),
                     reason="the path is not a regular file")
    if data is None:
        went = _moved_file(root, c, tree, exclude)
        if went is not None:
            return Check(citation=c, verdict=STALE, reason=f"{c.path} moved to {went.path}", renamed=went,
                         replace=(c.path, went.path))
        now = _moved_symbol(root, c, tree, exclude)
        if now is not None:  # the file renamed or split (`git mv`), the name still defined: cited where it is
            return Check(citation=c, verdict=STALE, reason=f"{c.path} no longer exists; {c.target} is now in {now.path}",
                         renamed=now)
        return Check(citation=c, verdict=STALE, reason=f"{c.path} no longer exists")
    lines = _lines(data)
    if c.kind == "symbol" and c.target:
        head = re.split(r"\.|::", c.target)[0]
        pat = re.compile(r"(?<![\w$-])" + re.escape(head) + r"(?![\w$]|-\w)")
        in_memory = any((c.path.strip("/") + "/").startswith(m.strip("/") + "/")  # cited by an older version
                        for m in (layout.MEMORY_ROOT, *exclude))
        at = None if in_memory else next((i + 1 for i, ln in enumerate(lines) if pat.search(ln)), None)
        if at is not None:
            return Check(citation=c, verdict=OK, lines=(at, at))
        elsewhere = (tree if tree is not None else Tree(root, exclude=exclude)).find_word(head)
        if elsewhere is not None:
            return Check(citation=c, verdict=OK, reason=f"{c.target} is now in {elsewhere[0]}")
        return Check(citation=c, verdict=STALE, reason=f"{head!r} no longer occurs in the tree")
    if c.kind == "target" and c.target:
        at = _target_lines(os.path.basename(c.path), lines).get(c.target)
        if at is None:
            around = (c.lines[0] if c.lines else 1) - 1
            return Check(citation=c, verdict=STALE, reason=f"{c.path} has no target {c.target!r} any more",
                         evidence=_clip(lines[max(around - 2, 0):around + 3]), renamed=_rename(c, lines))
        return Check(citation=c, verdict=OK, lines=(at, at))
    if c.lines is None:
        return Check(citation=c, verdict=OK)  # a cited file: it exists (its edits do not make the entry wrong)
    if c.sha256 is None:
        ok = c.lines[1] <= len(lines)
        return Check(citation=c, verdict=OK if ok else STALE, lines=c.lines if ok else None,
                     reason="" if ok else f"{c.path} has fewer than {c.lines[1]} lines now")
    size = c.lines[1] - c.lines[0] + 1
    if lines_sha(lines[c.lines[0] - 1:c.lines[1]]) == c.sha256:
        return Check(citation=c, verdict=OK, lines=c.lines)
    moved = _find_span(lines, size, c.sha256, c.lines[0])
    if moved is not None:
        return Check(citation=c, verdict=OK, lines=moved)
    return Check(citation=c, verdict=STALE, reason=f"lines {c.lines[0]}-{c.lines[1]} of {c.path} changed",
                 evidence=_clip(lines[c.lines[0] - 1:c.lines[1]]))


def _moved_symbol(root: str, c: Citation, tree: Tree | None, exclude: Iterable[str] = ()) -> Citation | None:
    """A cited function whose file is gone, cited afresh in the one code file that defines it now (a ``def``,
    ``fn``, ``function`` or ``func`` line); None when no file or several do, or the target is dotted (a
    method, a class: no definition line tells): a mention (a note saying it was dropped, a comment) is no
    evidence that it lives on, so the retirement stands."""
    if c.kind != "symbol" or not c.target or re.search(r"\.|::", c.target):
        return None
    tree = tree if tree is not None else Tree(root, exclude=exclude)
    found = tree.find_definitions(c.target, limit=2)
    if len(found) != 1:
        return None
    path, at, line = found[0]
    return Citation(kind="symbol", path=path, target=c.target, lines=(at, at),
                    sha256=lines_sha([line]) if c.sha256 else None, commit=c.commit)


def _moved_file(root: str, c: Citation, tree: Tree | None, exclude: Iterable[str] = ()) -> Citation | None:
    """Where a cited whole file that is gone went, cited afresh: the one file of the tree with the bytes it had
    (the recorded hash), looked for among files of the same name and the files of its folder (a rename in
    place); else the one file of the same name (moved, and edited since). None when neither is one file."""
    if c.kind != "path" or c.lines is not None or c.target is not None:
        return None
    tree = tree if tree is not None else Tree(root, exclude=exclude)
    folder, _, base = c.path.strip("/").rpartition("/")
    same_name = sorted(tree.by_name.get(base, []))
    nearby = sorted(p for p in tree.files if p.rpartition("/")[0] == folder and p not in same_name)[:200]

    def sha_of(path: str) -> str | None:
        try:
            data = _read(root, path)
        except (_Refused, OSError):
            return None
        return hashlib.sha256(data).hexdigest() if data is not None else None

    if c.sha256:
        same = [p for p in same_name[:50] + nearby if sha_of(p) == c.sha256]
        if len(same) == 1:
            return Citation(kind="path", path=same[0], sha256=c.sha256, commit=c.commit)
    if len(same_name) == 1 and "." in base.lstrip(".") and _same_place(c.path, same_name[0]):
        sha = sha_of(same_name[0])
        if sha is not None:
            return Citation(kind="path", path=same_name[0], sha256=sha if c.sha256 else None, commit=c.commit)
    return None


def _same_place(old: str, new: str) -> tuple[str, str] | None:
    """``(old, new)`` when ``new`` reads as ``old`` moved (the same file name in a folder of the same name:
    ``src/app/cli.py`` -> ``pkg/app/cli.py``), else None: a file of the same name elsewhere may be another
    file (a test fixture's ``providers.json``), named in a finding but never written into a memory."""
    a, b = old.strip("/").split("/"), new.strip("/").split("/")
    return (old, new) if len(a) >= 2 and len(b) >= 2 and a[-2:] == b[-2:] else None


def verify_entry(root: str, text: str, citations: object = None, tree: Tree | None = None, *,
                 context: Sequence[str] = (), base: str = "", exclude: Iterable[str] = ()) -> list[Check]:
    """The verification API: the citations of one memory entry and the verdict of each.

    ``root``: the workspace; ``text``: the entry's text (a topic's body);
    ``citations``: its recorded citations (:class:`Citation` objects, or the
    front matter's list of mappings); None or empty: ``text`` is a plain line
    and what it names is checked against the tree (:func:`check_line`; ``tree``:
    a :class:`Tree` shared by the entries of one run, else one is listed here).
    ``context``: the lines before ``text`` in the file it comes from (an instruction file checked line by
    line): a line of a file-tree diagram is read as the path its diagram gives it, and a command after
    ``cd DIR`` in the same code block runs in DIR. ``base``: the folder of that file, relative to ``root``
    (a relative link is read from there). ``exclude``: the memory roots besides ``.agents/memory``, never
    searched. Pure apart from reading the workspace; never writes.
    """
    if citations:
        if isinstance(citations, list | tuple) and all(isinstance(c, Citation) for c in citations):
            good, bad = list(citations), list[Check]()
        else:
            good, bad = from_front_matter(citations)
        if tree is None and any(c.kind == "symbol" for c in good):
            tree = Tree(root, exclude=exclude)
        out = bad + [check_citation(root, c, tree, exclude=exclude) for c in good]
        if any(m.kind in _LINE_ONLY for m in mentions(text)):  # what no citation records: values, commands, skills
            tree = tree if tree is not None else Tree(root, exclude=exclude)
            out += [c for m in mentions(text) if m.kind in _LINE_ONLY
                    for c in [check_mention(tree, m)] if c is not None]
        return out
    return check_line(root, text, tree if tree is not None else Tree(root, exclude=exclude), context=context,
                      base=base)


# -- plain lines: what a line names, checked against the tree --------------------------------
#
# An instruction or memory line as people write it carries no recorded citation. The same
# extractor that finds citations for cairn's own entries (the patterns above) reads it, and
# each thing it names is checked against the tree as it is now: a path exists (or moved to
# another folder with the same file name), a runner's target is defined in some build file of
# its kind (Make, npm/pnpm/yarn/bun, just, hatch environments), a backticked identifier occurs
# whole-word (``qoder`` inside ``qodercli`` does not count) and in some code or configuration, not
# only in documents (which keep what the code had), a tool named for running things
# has a trace in the tree (its lock or config file), a ``key = value`` / "``key`` defaults to
# N" still has that value where the key is configured, a ``--flag`` of one of the project's own
# scripts still occurs in its sources, a Node or Python version named is still supported (the
# root ``engines.node`` / ``requires-python``), a folder still holds what a parenthesised list
# says it holds, a package named in the workspace's own scope or prefix still is one, and a tool
# named for a role ("Formatter: X") is still named by some manifest. Also: the folder or package
# a command runs in (``make -C DIR``, ``--filter P``, ``cd DIR``, "from `DIR`") and the script
# it runs; a default the code gives (a parameter, a constant, an option's ``default=``); a line
# length against the formatter settings; a file-tree diagram's line under its folders (given the
# lines before it as ``context``); a well-known tool no longer configured while another for the
# same job is. A line with nothing checkable has no checks: it is unverifiable, never flagged; an
# example ("e.g.") path that is missing, a path in a code block introduced as an example or as what to
# avoid, a path or script its context calls planned (an earlier line naming it, a heading naming a
# plan), a module turned into a package of the same name, a naming convention (``PascalCase``), a path
# ``.gitignore`` ignores or a command writes (a redirect, ``mkdir``, the new name of ``ln``/``cp``/``mv``),
# a name the language defines, a blank to fill in (``path_to_test.py``, ``SCRIPT.py``, ``test_something.py``),
# a pair in prose ("docs/code", "test/file": no backticks, one slash, no extension), a glob, a path
# that reads as a pattern of the tree's (``test_provider/`` beside ``test_openai/``), a name the line
# says not to use ("`Store()` not `GetStore()`") or another project provides are not flagged either;
# a TypeScript source named by the ``.js`` it compiles to, or a path in other letter case, exists.

#: folders never listed or searched (vendored, built, or cairn's own)
SKIP_DIRS = frozenset({".git", "node_modules", "target", ".venv", "venv", "__pycache__", ".cairn", "dist",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".next", ".turbo"})
#: files never searched for identifiers: they are instruction files, which repeat what they say
INSTRUCTION_FILES = frozenset({"CLAUDE.md", "AGENTS.md", "GEMINI.md", ".cursorrules", "copilot-instructions.md",
                               "MEMORY.md", "CLAUDE.local.md"})
#: a tree walk stops after this many files, and the identifier index after this many bytes
TREE_MAX_FILES = 100_000
WORDS_MAX_BYTES = 256 << 20
_TEXT_EXT = frozenset(("py pyi ts tsx mts cts js jsx mjs cjs rs go zig c h cc cpp hpp java kt swift rb php lua "
                       "el vim sh bash zsh fish nu toml json jsonc yaml yml ini cfg conf md mdx rst txt "
                       "j2 jinja2 html css scss vue svelte sql proto gradle cmake mk just nix").split())
_WORD = re.compile(r"[A-Za-z0-9_$]+(?:-[A-Za-z0-9_$]+)*")
_IDENT = re.compile(r"\$?[A-Za-z_][\w$]*(?:(?:\.|::)[A-Za-z_][\w$]*)*(?:\(\))?|\$?[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_PLACEHOLDER = re.compile(r"[<>{}*\[\]|]|\.\.\.|path/to|^~|\$\{"
                          r"|(?<![A-Za-z0-9])(?:N{1,4}|X{2,4})(?![A-Za-z0-9])|(?i:(?<![a-z])file_?name(?![a-z]))"
                          r"|(?i:(?<![a-z])path_to_)"  # ``tests/path_to_test.py``
                          # a program's file named in capitals (``python SCRIPT.py``): a blank to fill in
                          r"|(?<![\w.-])[A-Z]{3,}(?:_[A-Z]+)*\.(?:py|js|mjs|ts|tsx|jsx|go|rs|rb|java|kt|sh)(?![\w.])")
#: a line about what is not there yet: the paths it names are plans, not claims that they exist
_PLANNED = re.compile(r"(?i)\b(?:planned|not\s+yet\s+(?:created|implemented|added|built|written)|"
                      r"to\s+be\s+(?:added|created|written|implemented|built)|coming\s+soon)\b")
#: a backticked path with spaces in its file name (``doc/Multimodal GUI Design.md``): one path, not a command
_SPACED_PATH = re.compile(r"[\w.-]*/[\w./-]*(?: [\w-]+)+\.[A-Za-z]\w{0,4}")
_KEYWORDS = frozenset(("true false null none None True False self this async await return import from def class "
                       "const let var function struct enum impl trait type interface public private static "
                       "if else for while match in is not and or new delete string int bool str dict list "
                       "main test tests build lint check dev run src lib docs app bin").split())
#: tools named for running things, and what in the tree shows the project uses them
_TOOLS: dict[str, tuple[str, ...]] = {
    "pnpm": ("pnpm-lock.yaml", "pnpm-workspace.yaml", '"packageManager": "pnpm'),
    "yarn": ("yarn.lock", ".yarnrc.yml", ".yarnrc", '"packageManager": "yarn'),
    "bun": ("bun.lockb", "bun.lock", "bunfig.toml"),
    "poetry": ("poetry.lock", "[tool.poetry"),
    "hatch": ("hatch.toml", "[tool.hatch"),
    "pdm": ("pdm.lock", "[tool.pdm"),
    "pipenv": ("Pipfile",),
    "tox": ("tox.ini", "[tool.tox"),
    "nox": ("noxfile.py",),
    "turbo": ("turbo.json",),
    "nx": ("nx.json",),
    "lerna": ("lerna.json",),
    "bazel": ("WORKSPACE", "MODULE.bazel", "WORKSPACE.bazel"),
}
_TOOL_USE = re.compile(r"(?<![\w./-])(?:uvx\s+|npx\s+)?(" + "|".join(_TOOLS) + r")\s+(?:run|install|add|exec|x|dlx|sync)\b"
                       # a monorepo runner's own verbs: ``npx nx build @scope/core``, ``turbo build``
                       r"|(?<![\w./-])(?:npx\s+|pnpm\s+(?:exec\s+)?|yarn\s+)?(nx|turbo|lerna)\s+"
                       r"(?:build|test|lint|affected|run-many|graph|serve|dev|typecheck|publish|version)\b")
_HATCH = re.compile(r"\bhatch\s+(?:run|shell|env\s+\w+)\s+(?:\+\S+\s+)*([A-Za-z0-9][\w-]*):")
_CD = re.compile(r"\bcd\s+([\w./-]+)\s*(?:&&|;|`|$)")
#: where a line says its commands run: "from `web/`", "in the `docs` directory", "inside frontend/"
_FROM_DIR = re.compile(r"\b(?:[Ff]rom|[Ii]n|[Ii]nside|[Ww]ithin|[Uu]nder)\s+(?:the\s+)?(?:`([\w./-]+/?)`|(?<![`\w])((?:\./)?[\w.-]+(?:/[\w.-]+)*/)"
                       r"(?![\w`]))(?:\s+(?:directory|folder|dir|package)\b)?")
#: a script a command runs: ``python tools/gen.py``, ``uv run x.py``, ``bash build.sh``, ``./run.sh``
_SCRIPT_RUN = re.compile(r"(?:^|[\s;&(])(?:(?:uv|poetry|pdm|hatch|pipenv|rye)\s+run\s+)?(?:python3?|node|bash|sh|zsh|tsx|"
                         r"ts-node|deno\s+run|ruby|perl)\s+(?:-[\w-]+\s+)*((?:\./)?[\w./-]*[\w-]\.(?:py|js|mjs|cjs|ts|"
                         r"mts|sh|rb|pl|bash))(?![\w/-])|(?:^|[\s;&(])\./([\w.-]+(?:/[\w.-]+)*)(?![\w/-])")
#: what a "key: value" in a schema or a type annotation gives: a type, not a value
_TYPE_WORDS = frozenset("string str number int integer float double bool boolean any unknown object array list dict "
                        "map void date datetime uuid".split())  # not null/none: real settings take them
#: a file a line names with a line in it ("`Layout.tsx:221`"), not a key with its value ("`server.port: 9090`")
_SOURCE_EXT = frozenset("ts tsx js jsx mjs cjs py go rs java kt rb php c h cc cpp hpp cs swift vue svelte ex exs dart "
                        "lua sh scala m mm".split())
_VALUE = (re.compile(r"`([A-Za-z_][\w.-]{1,60})\s*(?:=|:)\s*\"?([\w.+-]{1,40})\"?`"),
          re.compile(r"`-{0,2}([A-Za-z_][\w.-]{1,60})`\s+(?:is|of|=|:)\s+`?\"?(\d[\w.]*|true|false)\"?`?"),
          re.compile(r"(?<![\w`.-])([a-z][a-z0-9]*[_-][a-z0-9_.-]*)\s*=\s*(\d[\w.]*)(?![\w`])"))
#: a default a line states: "`timeout` defaults to `30`", "--jobs (default: 4)", "the port defaults to 8000"
_DEFAULT = (re.compile(r"(?:`-{0,2}([A-Za-z_][\w.-]{1,60})`|(?<![\w`.-])([a-z][a-z0-9]*(?:[_-][a-z0-9]+)*))\s+(?:defaults?\s+to|"
                       r"is\s+set\s+to|is\s+\d[\w.]*\s+by\s+default)\s+`?\"?(-?\d[\w.]*|true|false)\b"),
            re.compile(r"`-{0,2}([A-Za-z_][\w.-]{1,60})(?:[ =][^`]{0,30})?`\s*\((?:\s*)default(?:s\s+to|:)?\s+`?\"?(-?\d[\w.]*|true|"
                       r"false)\b"))
#: a line length a line states ("line length 100", "max line length: 88", "100-character lines") and the
#: configuration keys that set it, by tool
_LINE_LENGTH = (re.compile(r"(?i)\b(?:max(?:imum)?[ _-])?line[ _-]?(?:length|width)s?(?:\s+limit)?\b[^\d.;:|]{0,12}?[:=]?\s*"
                           r"`?(\d{2,3})\b(?!\.\d|%)"),
                re.compile(r"(?i)\b(\d{2,3})[ -]?(?:char(?:acter)?|col(?:umn)?)s?\s+(?:lines?|line\s+(?:length|limit|width))\b"),
                # "lines are at most 100 characters", "keep lines under 88 columns", "wrap lines at 80 characters"
                re.compile(r"(?i)\blines?\b[^\d.;:|`]{0,24}?(?:\bat\s+most|\bunder|\bup\s+to|\bmax(?:imum)?(?:\s+of)?|"
                           r"\bno\s+(?:longer|more|wider)\s+than|\bwithin|\bbelow|\bat|<=|≤)\s*(\d{2,3})\s*"
                           r"(?:char(?:acter)?s?|col(?:umn)?s?)\b"),
                # "100 characters per line", "max 120 columns a line"
                re.compile(r"(?i)\b(\d{2,3})\s*(?:char(?:acter)?s?|col(?:umn)?s?)\s+(?:per|a|each)\s+line\b"),
                re.compile(r"(?i)\b(?:printWidth|print_width|lineWidth|line_width|max_width|ColumnLimit|"
                           r"max[-_]line[-_]length)\b`?\s*[:=]?\s*`?(\d{2,3})\b"))
_LINE_LENGTH_KEYS = {"ruff": ("line-length",), "black": ("line-length",), "isort": ("line_length", "line-length"),
                     "prettier": ("printWidth",), "oxfmt": ("printWidth",), "biome": ("lineWidth",),
                     "dprint": ("lineWidth",), "rustfmt": ("max_width",), "clang-format": ("ColumnLimit",),
                     "flake8": ("max-line-length", "max_line_length"), "pylint": ("max-line-length",),
                     "editorconfig": ("max_line_length",)}
#: configuration files of formatters and linters, by name (a line length is told only when every one is read)
_FORMAT_CONFIG = re.compile(r"^(?:\.prettierrc(?:\.\w+)?|prettier\.config\.\w+|biome\.jsonc?|\.?rustfmt\.toml|\.clang-format|"
                            r"\.editorconfig|\.flake8|\.pylintrc|pylintrc|setup\.cfg|tox\.ini|pyproject\.toml|\.?ruff\.toml|"
                            r"dprint\.jsonc?|\.oxfmtrc\.jsonc?|\.isort\.cfg)$")
#: keys too common to say which setting a "key: value" means (``format``, ``name``): only a stated default counts
_GENERIC_KEYS = frozenset("name type format mode version path default id title description value key level target "
                          "kind main module types style color size status source output input url host user "
                          "env language lang scope role label file files dir test tests build run image tag".split())
_LITERAL = r"-?\d[\d_]*(?:\.\d+)?|True|False|None|true|false|null|\"[^\"\n]{0,40}\"|'[^'\n]{0,40}'"
#: source files whose values are not a default of the project (tests, examples, fixtures)
_NOT_DEFAULTS = re.compile(r"(?:^|/)(?:tests?|spec|__tests__|fixtures?|examples?|docs?|benchmarks?|scripts)(?:/|$)|"
                           r"(?:^|/)(?:test_[^/]*|[^/]*_test\.\w+|[^/]*\.(?:test|spec)\.\w+|conftest\.py)$")
# a file of the project's change history (a changelog, a release note, a pending changeset): it names what was
# removed or renamed, so a name found only there is not a name the tree still has
_HISTORY = re.compile(r"(?:^|/)(?:CHANGELOG|CHANGES|HISTORY|NEWS|RELEASE[-_]?NOTES|RELEASES)(?:\.[\w.]+)?$"
                      r"|(?:^|/)(?:\.changeset|changelog\.d|newsfragments|changelog)/[^/]+\.(?:md|mdx|rst|txt)$", re.I)
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]{1,40})\b")
_TICKED_SPAN = re.compile(r"`([^`]{1,300})`")
_CODE_LINE = re.compile(r"^\s*(?:[-*]\s+|\$\s+|\d+\.\s+)?(?:[A-Z_]+=\S+\s+)*(?:make|just|npm|pnpm|yarn|bun|cd|uvx?|hatch)\s")
_EXAMPLE = re.compile(r"(?i:(?:^|[^a-z])(?:your|my|foo|bar|baz|example|something)(?:[^a-z]|$))"
                      r"|(?:^|/)test_(?:specific|thing|stuff|whatever|xyz)(?:[^a-z]|$)|(?:^|/)(?:my|your|foo|some)[A-Z]|(?:^|/)path/"
                      r"|(?:^|[/_\d])new_[a-z]"
                      r"|^(?:My|Your|Foo|Type|Some|Another)[A-Z]|TypeName")
#: programs that package managers run by name, not scripts of the project
_BINS = frozenset("changeset changesets tsc vitest eslint prettier tsx turbo biome knip playwright jest vite "
                  "oxlint oxfmt dlx exec node".split())
#: file name extensions that make a token with a dot a file name (``Effect.gen`` is not one)
_FILE_EXT = _TEXT_EXT | frozenset("lock png svg jpg gif snap txt csv xml env example sample template tpl wasm "
                                  "bin so dll exe pem key log patch diff db sqlite".split())
_DOC_EXT = frozenset("md mdx rst txt html adoc".split())
_BUILT = frozenset({"dist", "build", "out", "node_modules", "target", "tmp", ".venv", "venv", "coverage"})
_NAMED = re.compile(r"(?<![\w.-])[\w.-]*/[\w./-]+")  # from a run's start only: linear on long runs
_COMMAND_LINE = re.compile(r"^\s*(?:#\s*)*(?:\$\s+)?([a-z][\w-]{2,30})\s+([a-z][a-z0-9_-]{1,40})"
                           r"(?=\s+(?:--|\"|\\$|#|[a-z][\w-]*\s|[A-Z]\w+\s*(?:#|$))|\s*$)")
_PROSE = frozenset("is are was were be has have had can could will would should must may might uses is not "
                   "does do did and or the a an of to in on for with as by at it its this that".split())
_QUOTED = re.compile(r"[\"']([a-z][a-z0-9_-]{1,40})[\"']")
_SNAKE_FUNCTION = re.compile(r"([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?:\(\))?")  # ``helper_fn`` or ``helper_fn()``
_DEFINED = re.compile(r"\b(?:def|fn|function|func)\s+([a-z][a-z0-9_]{1,40})\b")
#: a type, module or namespace a source file defines (``class X``, ``struct X``, ``impl<T> X``, ``defmodule X.Y``)
_OWNER = re.compile(r"\b(?:class|struct|enum|trait|interface|type|union|object|protocol|namespace|mod|module"
                    r"|defmodule|impl(?:<[^<>\n]{0,80}>)?)\s+([A-Za-z_][\w]*)")
_SOURCE_LINE = re.compile(r"^\s*(?:import|from|class|export|const|let|use|extends)\s")
_CODE_EXT = frozenset("py ts mts cts js mjs cjs tsx jsx rs go zig rb java kt swift lua sh".split())
#: a version exact enough to be a pin: three parts, or two and a pre-release (``10.0.100-rc.1.25411.109``, ``3.12.4``)
_PINNED = re.compile(r"(?<![\w.^~<>=/-])v?\d+\.\d+(?:\.\d+(?:-[0-9A-Za-z.]+)?|-[A-Za-z][0-9A-Za-z.]*)(?![\w.-]*\w)")
#: a line that says the file it names holds the version ("pins", "specified in"), not only that both matter
_PIN_WORD = re.compile(r"(?i)\b(?:pins?|pinned|specified|declared|locked)\b")
#: the package a cargo command selects (``cargo test -p NAME``, ``--package=NAME``)
_CARGO_PACKAGE = re.compile(r"\bcargo\s+[a-z][\w-]*(?:\s+[^\s`|;&]+){0,8}?\s+(?:-p|--package)(?:\s+|=)([A-Za-z][\w-]*)")
#: a list item that opens with a module's name and a colon (``- pinot-kafka-2.0: Kafka 2.x ingestion``)
_MODULE_ITEM = re.compile(r"^\s*[-*]\s+([a-z][a-z0-9]*(?:-[a-z0-9]+)+(?:-\d+(?:\.\d+)+)?):\s")
#: a package script and, in parentheses, the tool it runs (``pnpm run format:js`` (prettier))
_SCRIPT_TOOL = re.compile(r"`(?:npm\s+run|pnpm(?:\s+run)?|yarn(?:\s+run)?|bun\s+run)\s+([\w:.-]+)`\s*\(([A-Za-z][\w.-]*)(?:\s+[\w.-]+)?\)")
#: tools a script may be said to run beside the well-known ones of :data:`_TOOL_JOBS`
_SCRIPT_TOOLS = frozenset("cargo taplo rslint tsc tsgo deno".split())
#: a script that runs a file of the tree (its tools are inside that file, not in the script's line)
_RUNS_FILE = re.compile(r"(?:^|&&|;|\s)(?:node|tsx|ts-node|bun|deno\s+run|bash|sh|python3?|zx)\s+[\w./-]+\.\w+|\./[\w./-]+")
#: a project's configuration file by its name alone (``.dlint.json``, ``.eslintrc.cjs``), not a user's (``.npmrc``)
_DOT_CONFIG = re.compile(r"\.[a-z][\w-]*(?:\.[\w-]+)*\.(?:json|jsonc|json5|toml|ya?ml|js|cjs|mjs|ts|cts|mts)")
#: a line (or the one before it) about configuration: the dotfile it names is the project's configuration file
_CONFIG_WORD = re.compile(r"(?i)\bconfig(?:uration|ured|ures?)?\b")
#: a kind of file a line names by its extension ("after modifying `.fbs` files", ".proto changes affect …")
_FILE_KIND = re.compile(r"(?<![\w/.*$-])`?\.([a-z][a-z0-9]{1,7})`?\s+(?:[a-z]+\s+)?(?:files|changes|definitions|schemas)\b")
#: extensions of what a program reads or writes (data, documents, media), or of what a build, an editor or a user
#: leaves behind unversioned: a tree without one says nothing about the line
_KIND_NOT_SOURCE = frozenset(
    "env log tmp temp bak swp orig rej pyc pyo class o so a dll dylib exe lock cache local pem key crt out pid db "
    "sqlite csv tsv xlsx xls pdf doc docx ppt pptx txt png jpg jpeg gif svg webp ico mp3 mp4 wav mov avi zip gz tar "
    "tgz whl jar parquet arrow npy npz pkl pt onnx safetensors bin dat jsonl ndjson har map snap".split())
_LINE_ONLY = frozenset({"filekind", "pin", "runs", "value", "filevalue", "nested", "default", "setting", "script", "devtool", "diagram", "command", "skill", "tool", "runtime", "children", "package", "role"})
#: a tool named for a role (``Formatter: Prettier``, "formatted with `black`", "uses ruff for linting")
_ROLE_END = r"`?(?=\s*(?:$|[(),.;:|+&*]|(?:and|via|with|for|or)\b))"  # the name alone, not a phrase's first word
#: ("**Tool**: ruff" names a tool for a role; "Missing MCP tool: bash-before-MCP" is a kind of tool, not a role)
_ROLE = (re.compile(r"(?i)\b(?:formatter|linter|type[- ]?checker|test runner|bundler|(?<!\w\s)tool)\**\s*:\s*\**\s*`?([A-Za-z][\w.-]{1,30})"
                    + _ROLE_END),
         re.compile(r"(?i)\b(?:formatted|linted|type-?checked|bundled)\s+(?:with|by|using)\s+`?([A-Za-z][\w.-]{1,30})" + _ROLE_END),
         re.compile(r"(?i)\buses?\s+`?([A-Za-z][\w.-]{1,30})`?\s+for\s+(?:formatting|linting|type[- ]?checking|bundling)\b"))
#: more roles a line may name a tool for ("- **Testing**: pytest"); only well-known tools are checked for these
_ROLE_MORE = re.compile(r"(?i)\b(?:linting|formatting|type[- ]?checking|testing|tests|test framework|unit tests|"
                        r"e2e(?: tests)?|package manager|build tool|bundling|docs|documentation|git hooks|hooks)\**\s*:\s*"
                        r"\**\s*`?([A-Za-z][\w.-]{1,30})" + _ROLE_END)
#: well-known tools by what they do: a tool a line says the project uses, of which the tree keeps no trace while it
#: keeps one of another tool for the same job, was replaced (ESLint -> oxlint, black -> ruff, jest -> vitest)
_TOOL_JOBS: dict[str, tuple[str, ...]] = {}
for _job, _names in {
        "format": "prettier black yapf autopep8 oxfmt dprint biome ruff isort rome",
        "lint": "eslint tslint oxlint biome ruff flake8 pylint pyflakes golangci-lint stylelint isort rome",
        "types": "mypy pyright basedpyright pyre pytype",
        "test": "pytest jest vitest mocha ava jasmine karma nose nose2 uvu",
        "bundle": "webpack rollup esbuild parcel vite tsup rolldown rspack browserify",
        "docs": "sphinx mkdocs docusaurus typedoc vitepress mdbook pdoc nextra mintlify",
        "hooks": "husky lefthook pre-commit",
        "e2e": "cypress playwright puppeteer webdriverio",
        "python-env": "poetry pipenv pdm uv hatch rye",
        "monorepo": "lerna nx turbo rush"}.items():
    for _name in _names.split():
        _TOOL_JOBS[_name] = (*_TOOL_JOBS.get(_name, ()), _job)
#: tool names that are also common words: checked only where a line runs them or names them for a job
#: the language a tool serves: a tool for the same job in another language (pytest beside ava) replaces nothing
_TOOL_LANG: dict[str, str] = {
    **dict.fromkeys("pytest nose nose2 black yapf autopep8 ruff isort flake8 pylint pyflakes mypy pyright basedpyright "
                    "pyre pytype sphinx mkdocs pdoc poetry pipenv pdm uv hatch rye tox nox".split(), "python"),
    **dict.fromkeys("jest vitest mocha ava jasmine karma uvu prettier eslint tslint oxlint oxfmt dprint biome rome "
                    "stylelint webpack rollup esbuild parcel vite tsup rolldown rspack browserify docusaurus typedoc "
                    "vitepress nextra mintlify husky lerna nx turbo rush".split(), "js"),
}
_TOOL_WORDS = frozenset("black rome ava jasmine karma nose parcel turbo nx hatch rye poetry rush vite".split())
#: a line that names a tool to compare with, or to move away from, says nothing about what the project uses
_NOT_USED = re.compile(r"(?i)\b(?:not|no|never|don'?t|doesn'?t|instead|rather|unlike|replac\w*|migrat\w*|compat\w*|vs\.?|"
                       r"versus|like|than|equivalent|port(?:ed)?\s+(?:of|from)|drop-in|alternative|former(?:ly)?|"
                       r"deprecated|removed?|legacy|switch\w*|moved?|convert\w*)\b")
_TOOL_RUN = re.compile(r"(?:^|&&|;|\|\|?|\$\s)\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:(?:npx|bunx|pnpm\s+(?:exec|dlx)|pnpm|yarn(?:\s+dlx)?|"
                       r"uvx|uv\s+run|poetry\s+run|pdm\s+run|hatch\s+run|pipx\s+run|python3?\s+-m)\s+)?([a-z][\w-]{1,30})(?![\w./-])")
_TOOL_PROSE = re.compile(r"(?i)\b(?:use[sd]?|using|run(?:s|ning)?|with|via)\s+`?([A-Za-z][\w-]{1,30})`?(?![\w./-])|"
                         r"\b([A-Za-z][\w-]{1,30})`?\s+(?:is|are)\s+used\b")
#: tools that come with a language's own toolchain (no manifest names them), and words that are no tool
_ROLE_SKIP = frozenset("go gofmt cargo rustfmt clippy zig swift deno bun node npm python pip the a an our your this "
                       "none n/a tbd it its".split())
#: names the languages themselves define (``ModuleNotFoundError``, ``Promise``): no tree need hold them
_LANGUAGE_NAMES = frozenset(dir(builtins)) | frozenset(
    "Array ArrayBuffer BigInt Boolean DataView Date Error EvalError Function Intl JSON Map Math Number Object Promise "
    "Proxy RangeError ReferenceError Reflect RegExp Set String Symbol SyntaxError TypeError URIError URL "
    "URLSearchParams WeakMap WeakSet WeakRef Uint8Array Int32Array Float64Array AbortController AbortSignal Request "
    "Response Headers FormData Blob ReadableStream WritableStream TextEncoder TextDecoder EventTarget HTMLElement "
    "Record Partial Required Readonly Pick Omit Exclude Extract NonNullable ReturnType Parameters Awaited "
    "Vec HashMap HashSet BTreeMap Option Result Box Rc Arc RefCell Mutex String".split())
#: names of naming conventions, written like identifiers (``PascalCase``) but naming none
_CONVENTIONS = frozenset("PascalCase camelCase CamelCase lowerCamelCase UpperCamelCase snake_case kebab-case "
                         "SCREAMING_SNAKE_CASE UPPER_CASE UPPER_SNAKE_CASE Title_Case".split())
#: a runtime's version named in a line (``Node.js v18, v20``, ``Python 3.10+``); not ``node:20`` (an image)
_RUNTIME = re.compile(r"(?i)(?<![\w./@-])(node(?:\.?js)?|python)(?!:\d)(?![\w/@-])([^;\n]{0,60})")
#: a Java version a line requires ("JDK 21+", "Java 11 or later"), or the one it says the code targets
_JAVA_MIN = re.compile(r"(?i)(?<![\w.-])(?:jdk|java|jre)\s*(\d{1,2})(?:\s*\+|\s+or\s+(?:later|newer|above|higher)\b)")
_JAVA_TARGET = re.compile(r"(?i)\btargets?\s+java\s+(\d{1,2})\b")
_JAVA_ANY = re.compile(r"(?i)(?<![\w.-])(?:jdk|java|jre)\s*\d{1,2}\b")
#: where a Maven or Gradle build says the Java version it compiles for
_JAVA_BUILD = (re.compile(r"<(?:jdk\.version|java\.version|maven\.compiler\.release|maven\.compiler\.source)>\s*(?:1\.)?(\d{1,2})\s*<"),
               re.compile(r"JavaLanguageVersion\.of\(\s*(\d{1,2})\s*\)|JavaVersion\.VERSION_(?:1_)?(\d{1,2})\b"))
#: a line that lists browsers or other runtimes beside Node states a compatibility, not what the project needs
_OTHER_RUNTIMES = re.compile(r"(?i)\b(?:chrome|safari|firefox|edge|browsers?|deno|bun|electron|ios|android)\s*\d")
_PROSE_FILE = re.compile(r"(?<![\w./@$-])([A-Za-z_][\w-]*)\.([a-z]{1,4})(?![\w/-])")
#: a line about making a file: the paths it names need not exist yet
_CREATES = re.compile(r"(?i)\b(?:create[sd]?|creating|scaffold\w*|generate[sd]?|new\s+file)\b")
_MADE = re.compile(r"(?:>>?|\btouch|\bmkdir(?:\s+-p)?|\btee(?:\s+-a)?"
                   r"|\b(?:ln|cp|mv|git\s+mv)(?:\s+-[\w-]+)*\s+[\w./-]+)\s+([\w./-]+)")  # a link, a copy: its new name
_EG = re.compile(r"(?i)\be\.\s?g\.|\bfor example\b|\bsuch as\b|\b(?:files?|paths?|folders?|names?)\s+like\b|"
                 r"\b(?:do\s+not|don'?t|never|avoid)\s+(?:\w+\s+)?(?:create|add|write|put|make)\b")
#: a line that tells the reader to set a value, not what the file holds ("set `retries: 3` in `ci.yml`")
_TO_SET = re.compile(r"(?i)\b(?:set|change|add|put|configure|override|update|adjust|increase|decrease|bump|raise|lower)\b")
#: lock files: they name every package installed, the transitive ones too
_LOCKS = frozenset("pnpm-lock.yaml yarn.lock package-lock.json bun.lock bun.lockb npm-shrinkwrap.json Cargo.lock "
                   "poetry.lock uv.lock pdm.lock Pipfile.lock Gemfile.lock composer.lock go.sum".split())
#: folders whose files a project gives to others or tests with, not its own tooling: a scaffold's templates
_SHIPPED = re.compile(r"(?:^|/)(?:templates?|examples?|fixtures?|__fixtures__|samples?|playgrounds?|boilerplates?)/")
#: the extensions a TypeScript source is imported by (ES modules name the file it compiles to)
_EMITTED = {"js": ("ts", "tsx"), "jsx": ("tsx",), "mjs": ("mts",), "cjs": ("cts",)}
#: a name the line tells the reader not to use: "`Store()` not `GetStore()`", "instead of `x`", "rather than `y`"
_AVOIDED = re.compile(r"(?i)(?:\bnot|\bnever|\binstead\s+of|\brather\s+than|\bavoid(?:ing)?|\bover)\s+"
                      r"(?:use\s+|using\s+|(?:name|call|title)\s+(?:\w+\s+){0,2})?`([^`]{1,200})`")
#: a path the reader is told to look for on their own machine ("by checking that `.husky/_/` exists"): made by
#: an install or a hook, never a file of the tree
_RUNTIME_PATH = re.compile(r"(?i)\b(?:check(?:ing)?|verify(?:ing)?|confirm(?:ing)?|ensur(?:e|ing)|mak(?:e|ing)\s+sure)"
                           r"\s+(?:that\s+|whether\s+|if\s+)?(?:the\s+)?`([^`]{1,200})`\s+(?:(?:folder|directory|file)\s+)?exists\b")
#: a repository another project's issues or pull requests live in ("open a tracking issue in `dask/community`")
_ISSUES_IN = re.compile(r"(?i)\b(?:issues?|PRs?|pull\s+requests?|discussions?)\s+(?:in|on|at|against|to)\s+(?:the\s+)?"
                        r"`[\w.-]+/[\w.-]+`")
#: a name the line says another project provides ("the `UpdateXlf` target (provided by [XliffTasks](…))")
_PROVIDED = re.compile(r"(?i)\b(?:provided|supplied|shipped|implemented)\s+by\b|\bcomes?\s+from\s+\[")
#: a folder and, in parentheses, what it holds: ``tools/`` (eslint-config, tsconfig)
_DIR_TOKEN = re.compile(r"(?<![\w./@-])([\w.-]+(?:/[\w.-]+)*)/(?=[\s`|]|$)")
_PAREN_LIST = re.compile(r"\(([^()]{3,200})\)")
_CONFIG_NAMES = frozenset({".prettierrc", ".clang-format", ".flake8", ".pylintrc", "pylintrc"})
_CONFIG_EXT = (".toml", ".ini", ".cfg", ".json", ".yaml", ".yml", ".editorconfig", ".env")


def _whole_in(word: str, blob: str) -> bool:
    """Whether ``word`` occurs in ``blob`` as a whole word (not inside a longer name or after a hyphen); a plain
    substring test first, since most words looked for are not there and the blob is the size of many files."""
    return word in blob and re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w])", blob) is not None


class Tree:
    """The workspace as the checks of plain lines see it: its files (listed with ``lstat``, no link
    followed, :data:`SKIP_DIRS` skipped) and, built on first need, the set of words in its text files
    (each a regular file of at most :data:`FILE_MAX` bytes, read with the same guards as a citation)."""

    def __init__(self, root: str, *, exclude: Iterable[str] = ()) -> None:
        self.root = root
        # the memory's own root is never evidence about the code: a topic naming ``ConfigLoader`` must not
        # prove that ``ConfigLoader`` still exists (configured roots are added by the caller)
        self.exclude = {e.strip("/") for e in (layout.MEMORY_ROOT, *exclude) if e}
        self.files: set[str] = set()
        self.dirs: set[str] = set()
        self.links: set[str] = set()  # symbolic links: seen by ``lstat``, never followed
        self.by_name: dict[str, list[str]] = {}
        self._words: set[str] | None = None
        self.quoted: set[str] = set()  # short quoted strings and defined names in source files
        self.named: set[str] = set()  # paths the tree's own files name (cloned, generated, ignored paths)
        self.code_words: set[str] = set()  # the words of files other than documents (code, configuration, build)
        self._texts: dict[str, str] = {}
        self._tails: dict[str, str] | None = None
        self._lower: dict[str, str] | None = None
        self._tool_blob: str | None = None
        self._scripts: dict[str, list[str]] | None = None
        self._configs: list[str] | None = None
        self._sorted: list[str] | None = None
        self._rsorted: list[str] | None = None
        self._ignore: list[tuple[bool, str, bool]] | None = None
        self._values: dict[str, list[str]] = {}
        self._defaults: dict[str, list[str]] = {}
        self._traces: dict[str, bool] = {}
        self._names: list[str] | None = None
        self._extensions: set[str] | None = None
        self._dir_names: dict[str, list[str]] | None = None
        self.targets: dict[str, frozenset[str] | None] = {}  # build file -> the targets it defines (see _defined_targets)
        self._run_blob: str | None = None
        self._children: dict[str, set[str]] | None = None
        self._packages: set[str] | None = None
        self._package_dirs: dict[str, list[str]] = {}
        self._config_blob: str | None = None
        self._deps: set[str] | None = None
        self._owners: set[str] | None = None
        self._history: dict[str, bool] = {}
        self._history_files: list[str] | None = None
        self._py_files: dict[str, list[str]] = {}  # a package folder -> its .py/.pyi files (see ``_py_defined``)
        stack = [""]
        while stack and len(self.files) < TREE_MAX_FILES:
            rel = stack.pop()
            try:
                with os.scandir(os.path.join(root, rel) if rel else root) as it:
                    entries = list(it)
            except OSError:
                continue
            for e in entries:
                p = f"{rel}/{e.name}" if rel else e.name
                try:
                    if e.is_dir(follow_symlinks=False):
                        if e.name not in SKIP_DIRS and p not in self.exclude:
                            self.dirs.add(p)
                            stack.append(p)
                    elif e.is_file(follow_symlinks=False):
                        self.files.add(p)
                        self.by_name.setdefault(e.name, []).append(p)
                    elif e.is_symlink():
                        self.links.add(p)
                except OSError:
                    continue

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            try:
                data = _read(self.root, path)
            except (_Refused, OSError):
                data = None
            self._texts[path] = data.decode("utf-8", "replace") if data is not None else ""
        return self._texts[path] or None

    def words(self) -> set[str]:
        if self._words is None:
            reader = _Reader(self.root)
            try:
                self._words = self._read_words(reader)
            finally:
                reader.close()
        return self._words

    def _read_words(self, reader: _Reader) -> set[str]:
        """:meth:`words`, every text file read once through ``reader`` (kept as :meth:`text` keeps it)."""
        words: set[str] = set()
        budget = WORDS_MAX_BYTES
        for p in sorted(self.files):
            name = p.rsplit("/", 1)[-1]
            ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            if (name in INSTRUCTION_FILES or (ext not in _TEXT_EXT and "." in name.lstrip("."))
                    or _HISTORY.search(p)):
                continue
            if p not in self._texts:
                data = reader.read(p)
                self._texts[p] = data.decode("utf-8", "replace") if data is not None else ""
            body = self._texts[p] or None
            if not body:
                continue
            budget -= len(body)
            if budget < 0:
                break
            found = set(_WORD.findall(body))
            words |= found
            for w in found:
                if "-" in w:
                    words.update(w.split("-"))
            if ext not in _DOC_EXT:  # docs repeat a stale path; build files, ignores and code make paths
                self.named.update(x.strip("/").removeprefix("./") for x in _NAMED.findall(body))
                self.code_words |= found
            if ext in _CODE_EXT:
                self.quoted.update(_QUOTED.findall(body))
                self.quoted.update(_DEFINED.findall(body))
        return words

    def mentioned(self, name: str) -> bool:
        """Whether some text file of the tree (not an instruction file) names ``name`` as a whole."""
        self.words()
        pat = re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])")
        return any(body and name in body and pat.search(body) for p, body in self._texts.items()
                   if p.rsplit("/", 1)[-1] not in INSTRUCTION_FILES and not _HISTORY.search(p))

    def owners(self) -> set[str]:
        """The types, modules and namespaces the tree's source files define (read once, when first asked)."""
        if self._owners is None:
            self.words()
            self._owners = set()
            for p, body in self._texts.items():
                ext = p.rsplit(".", 1)[-1].lower() if "." in p.rsplit("/", 1)[-1] else ""
                if body and (ext in _CODE_EXT or ext in ("ex", "exs")):
                    self._owners.update(_OWNER.findall(body))
        return self._owners

    def in_history(self, name: str) -> bool:
        """Whether the project's change history (a changelog, a release note, a pending changeset) names
        ``name`` whole: a name the project had."""
        if name not in self._history:
            if self._history_files is None:
                self._history_files = sorted(p for p in self.files if _HISTORY.search(p))
            pat = re.compile(r"(?<![\w$-])" + re.escape(name) + r"(?![\w$]|-\w)")
            self._history[name] = any(
                (body := self.text(p)) is not None and name in body and pat.search(body) is not None
                for p in self._history_files)
        return self._history[name]

    def has(self, path: str) -> str | None:
        """Where ``path`` is in the tree (from the root, or under some folder); None when nowhere."""
        p = path.strip("/")
        if p in self.files or p in self.dirs:
            return p
        if self._tails is None:
            self._tails = {}
            for q in sorted(self.files | self.dirs):
                parts = q.split("/")
                for i in range(1, len(parts)):
                    self._tails.setdefault("/".join(parts[i:]), q)
        return self._tails.get(p)

    def variant(self, path: str) -> str | None:
        """Where the tree holds ``path`` under another spelling that still names it: a TypeScript source
        imported by its emitted name (``exports/client/index.js`` for ``index.ts``: ES modules import the
        ``.js`` a ``.ts`` compiles to), or the same path in other letter case (``PULL_REQUEST_TEMPLATE.md``
        for ``pull_request_template.md``, which GitHub reads either way). None when neither."""
        p = path.strip("/")
        stem, dot, ext = p.rpartition(".")
        for alt in _EMITTED.get(ext.lower(), ()) if dot and stem else ():
            hit = self.has(f"{stem}.{alt}")
            if hit is not None:
                return hit
        if self._lower is None:
            self._lower = {}
            for q in sorted(self.files | self.dirs):
                self._lower.setdefault(q.lower(), q)
        return self._lower.get(p.lower())

    def find_word(self, word: str) -> tuple[str, int, str] | None:
        """The first (file, 1-based line, line) where ``word`` occurs whole-word; None when nowhere."""
        if word not in self.words():
            return None
        pat = re.compile(r"(?<![\w$-])" + re.escape(word) + r"(?![\w$]|-\w)")
        for p in sorted(self.files):
            body = self._texts.get(p)
            if body and word in body and not _HISTORY.search(p):
                for i, ln in enumerate(body.split("\n")):
                    if pat.search(ln):
                        return p, i + 1, ln.rstrip("\r")
        return None

    def find_definition(self, name: str) -> tuple[str, int, str] | None:
        """The first (file, 1-based line, line) of a code file where a function ``name`` is defined (``def``,
        ``fn``, ``function``, ``func``); None when no code file defines it."""
        found = self.find_definitions(name, limit=1)
        return found[0] if found else None

    def find_definitions(self, name: str, *, limit: int) -> list[tuple[str, int, str]]:
        """Up to ``limit`` code files' first definitions of a function ``name`` (see :meth:`find_definition`),
        one per file, in file order."""
        self.words()  # reads the tree: the texts, and the defined names of code files
        if name not in self.quoted:
            return []
        pat = re.compile(r"^\s*(?:(?:export|async|pub(?:\([\w:]+\))?|static|inline)\s+)*(?:def|fn|function|func)\s+"
                         + re.escape(name) + r"\b")  # a definition's own line, not a comment or a string naming it
        out: list[tuple[str, int, str]] = []
        for p in sorted(self.files):
            body = self._texts.get(p)
            if body and name in body and p.rsplit(".", 1)[-1].lower() in _CODE_EXT:
                for i, ln in enumerate(body.split("\n")):
                    if pat.search(ln):
                        out.append((p, i + 1, ln.rstrip("\r")))
                        break
                if len(out) >= limit:
                    break
        return out

    def prefixed(self, word: str) -> str | None:
        """The one identifier of the tree that starts with ``word`` and goes on (``qodercli`` for ``qoder``)."""
        if self._sorted is None:
            self._sorted = sorted(self.words())
        i = bisect.bisect_right(self._sorted, word)
        found: list[str] = []
        while i < len(self._sorted) and self._sorted[i].startswith(word) and len(found) < 2:
            w = self._sorted[i]
            if w[len(word)].isalnum() and len(w) <= len(word) + 8:
                found.append(w)
            i += 1
        return found[0] if len(found) == 1 else None

    def dir_names(self) -> KeysView[str]:
        """The last part of every folder's path (``crates/pnpm-cli`` -> ``pnpm-cli``)."""
        return self._folders_by_name().keys()

    def dirs_named(self, name: str) -> list[str]:
        """Every folder whose last part is ``name``, sorted."""
        return sorted(self._folders_by_name().get(name, ()))

    def _folders_by_name(self) -> dict[str, list[str]]:
        if self._dir_names is None:
            self._dir_names = {}
            for d in self.dirs:
                self._dir_names.setdefault(d.rsplit("/", 1)[-1], []).append(d)
        return self._dir_names

    def extensions(self) -> set[str]:
        """Every extension a file of the tree has, lower case (``fbs`` and ``d.ts``'s ``ts``), without the dot."""
        if self._extensions is None:
            self._extensions = {n.rsplit(".", 1)[1].lower() for n in self.by_name if "." in n}  # ``.sqlfluff`` too
        return self._extensions

    def ignored(self, path: str) -> bool:
        """Whether the root ``.gitignore`` ignores ``path`` (or a folder on its way): a local or generated file,
        which a fresh tree need not hold."""
        if self._ignore is None:
            self._ignore = []
            for ln in (self.text(".gitignore") or "").splitlines():
                ln = ln.strip()
                if ln and not ln.startswith("#"):
                    self._ignore.append((ln.startswith("!"), ln.lstrip("!").rstrip("/"), ln.endswith("/")))
        parts = path.strip("/").split("/")
        verdict = False
        for neg, pat, _dir_only in self._ignore:
            anchored = "/" in pat.strip("/")
            pat = pat.lstrip("/")
            for i in range(1, len(parts) + 1):
                here = "/".join(parts[:i])
                if fnmatch.fnmatchcase(here if anchored else parts[i - 1], pat):
                    verdict = not neg
                    break
        return verdict

    def family(self, name: str) -> int:
        """How many identifiers of the tree begin or end with ``name`` as a part of their own (``AuthIR`` in
        ``AltAuthIR``, ``parse_`` in ``parse_args``); at most 2 are counted."""
        if self._sorted is None:
            self._sorted = sorted(self.words())
        if self._rsorted is None:
            self._rsorted = sorted(w[::-1] for w in self.words())
        n = 0
        for table, key in ((self._sorted, name), (self._rsorted, name[::-1])):
            i = bisect.bisect_right(table, key)
            while i < len(table) and table[i].startswith(key) and n < 2:
                n += 1
                i += 1
        return n

    def values(self, key: str) -> list[str]:
        """The values ``key`` is given in the configuration files (``key = v`` / ``key: v``), lower-cased; in a
        package.json not its scripts or dependencies (their names are not settings)."""
        if key not in self._values:
            pat = re.compile(r"(?m)^\s*\"?" + re.escape(key) + r"\"?\s*[=:]\s*\"?([^\"\s,#]+)")
            out: list[str] = []
            for p in self.configs():
                body = self.text(p) or ""
                if key not in body:
                    continue
                if p.rsplit("/", 1)[-1] == "package.json":
                    body = re.sub(r'(?s)"(?:scripts|(?:dev|peer|optional)?[dD]ependencies)"\s*:\s*\{.*?\}', "", body)
                out += [vm.group(1).strip("'\"").lower() for vm in pat.finditer(body) if vm.group(1)[0] not in "{[("]
            self._values[key] = out
        return self._values[key]

    def code_defaults(self, key: str) -> list[str]:
        """The literal defaults the project's source gives ``key``: a parameter or field (``key: int = 30``,
        ``key=30``), a constant naming it (``DEFAULT_KEY = 30``), an option's ``default=`` (``"--key", default=30``);
        tests, examples and scripts left out. Lower-cased, unquoted."""
        if key not in self._defaults:
            self.words()
            snake = key.replace("-", "_")
            upper = snake.upper()
            alts = "|".join(re.escape(k) for k in sorted({key, snake}))
            pats = (re.compile(r"(?<![\w.$-])(?:" + alts + r")\s*(?::\s*[\w\[\], .|]{1,60}?)?\s*=\s*(" + _LITERAL + r")(?![\w.])"),
                    re.compile(r"(?<![\w.])[A-Z0-9_]*" + re.escape(upper) + r"[A-Z0-9_]*\s*(?::\s*[\w\[\], .|]{1,40}?)?\s*=\s*("
                               + _LITERAL + r")(?![\w.])"),
                    re.compile(r"[\"']--" + re.escape(key.replace("_", "-")) + r"[\"'](?:[^()]|\([^()]*\)){0,400}?\bdefault\s*=\s*("
                               + _LITERAL + r")"))
            out: list[str] = []
            for p, body in self._texts.items():
                ext = p.rsplit(".", 1)[-1].lower() if "." in p.rsplit("/", 1)[-1] else ""
                if (not body or ext not in _CODE_EXT or (snake not in body and upper not in body and key not in body)
                        or _NOT_DEFAULTS.search(p)):
                    continue
                for pat in pats:
                    out += [v.strip("'\"").lower() for v in pat.findall(body)]
            self._defaults[key] = out
        return self._defaults[key]

    def config_blob_has(self, word: str) -> bool:
        """Whether ``word`` occurs (whole, any case) in the configuration files (:meth:`configs`)."""
        if self._config_blob is None:
            self._config_blob = "\n".join((self.text(p) or "") for p in self.configs()).lower()
        return _whole_in(word.lower(), self._config_blob)

    def tool_trace(self, tool: str) -> bool:
        """Whether the tree shows the project uses ``tool``: a file or folder named for it (``.eslintrc.json``,
        ``vitest.config.ts``, ``poetry.lock``, ``.husky``), or its name in a configuration file, a build file or
        a workflow."""
        if tool not in self._traces:
            named = re.compile(re.escape(tool) + r"(?:$|[._-]|rc|config)")
            if self._names is None:  # files the project ships to others (a scaffold's templates) are not its own
                self._names = sorted({n.lstrip(".").lower() for n, ps in self.by_name.items()
                                      if any(not _SHIPPED.search(p) for p in ps)}
                                     | {d.rsplit("/", 1)[-1].lstrip(".").lower() for d in self.dirs if d.count("/") <= 2})
            i = bisect.bisect_left(self._names, tool)
            found = False
            while i < len(self._names) and self._names[i].startswith(tool) and not found:
                found, i = named.match(self._names[i]) is not None, i + 1
            if not found:
                if self._tool_blob is None:  # a lock file lists every transitive package; a template is another's
                    self._tool_blob = "\n".join((self.text(p) or "") for p in self.configs()
                                                 if p.rsplit("/", 1)[-1] not in _LOCKS and not _SHIPPED.search(p)).lower()
                found = _whole_in(tool, self._tool_blob)
            if not found:
                if self._run_blob is None:
                    runs = [p for p in self.files if p.startswith(".github/workflows/") and p.endswith((".yml", ".yaml"))
                            or p.rsplit("/", 1)[-1] in (
                        "Makefile", "GNUmakefile", "makefile", "justfile", "Justfile", "noxfile.py", "tox.ini")]
                    self._run_blob = "\n".join(self.text(p) or "" for p in sorted(runs)[:200]).lower()
                found = _whole_in(tool, self._run_blob)
            self._traces[tool] = found
        return self._traces[tool]

    def dependencies(self) -> set[str]:
        """The unscoped names the package.json files depend on (``nx``: its program has its name)."""
        if self._deps is None:
            deps: set[str] = set()
            for p in sorted(self.by_name.get("package.json", []))[:500]:
                try:
                    pkg = json.loads(self.text(p) or "{}")
                except ValueError:
                    continue
                for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
                    section = pkg.get(key) if isinstance(pkg, dict) else None
                    if isinstance(section, dict):
                        deps.update(str(k) for k in section if not str(k).startswith("@"))
            self._deps = deps
        return self._deps

    def children(self, folder: str) -> set[str]:
        """The names of what ``folder`` holds (files, folders and links, one level): a renamed folder kept
        under its old name as a link still holds that name."""
        if self._children is None:
            self._children = {}
            for q in self.files | self.dirs | self.links:
                parent, _, name = q.rpartition("/")
                self._children.setdefault(parent, set()).add(name)
        return self._children.get(folder, set())

    def packages(self) -> set[str]:
        """The names of the workspace's own packages (package.json ``name``, pyproject and Cargo ``[…] name``)."""
        if self._packages is None:
            names: set[str] = set()
            self._package_dirs = {}
            for p in sorted(self.by_name.get("package.json", []))[:500]:
                try:
                    pkg = json.loads(self.text(p) or "{}")
                except ValueError:
                    continue
                if isinstance(pkg, dict) and isinstance(pkg.get("name"), str):
                    names.add(pkg["name"])
                    self._package_dirs.setdefault(pkg["name"], []).append(p.rpartition("/")[0])
            for p in sorted(self.by_name.get("pom.xml", []))[:500]:  # a Maven module: its own artifactId
                am = re.search(r"<artifactId>\s*([\w.-]+)\s*</artifactId>",
                               re.sub(r"(?s)<parent>.*?</parent>", "", self.text(p) or "", count=1))
                if am:
                    names.add(am.group(1))
            for n, sec in (("pyproject.toml", "project"), ("Cargo.toml", "package")):
                for p in sorted(self.by_name.get(n, []))[:500]:
                    pm = re.search(r"(?ms)^\[" + sec + r"\]\s*$(?:(?!^\[).)*?^name\s*=\s*[\"']([^\"']+)", self.text(p) or "")
                    if pm:
                        names.add(pm.group(1))
            self._packages = names
        return self._packages

    def package_dirs(self, selector: str) -> list[str]:
        """The folders of the npm workspace packages a ``--filter`` / ``-w`` / ``yarn workspace`` selector names:
        by package name, or by path (``./apps/web``); [] when it names none or is a pattern."""
        sel = selector.strip("'\"").removesuffix("...").removeprefix("...").removeprefix("^")
        if not sel or re.search(r"[*{}\[\]!]", sel):
            return []
        self.packages()
        if sel in self._package_dirs:
            return self._package_dirs[sel]
        path = sel.removeprefix("./").strip("/")
        if sel.startswith(("./", "../")) or "/" in path and not sel.startswith("@"):
            return [path] if f"{path}/package.json" in self.files else []
        return []

    def scripts(self) -> set[str]:
        return set(self.script_entries())

    def script_entries(self) -> dict[str, list[str]]:
        if self._scripts is None:
            self._scripts = _scripts(self)
        return self._scripts

    def configs(self) -> list[str]:
        """Configuration files (at most three folders deep; not workflows, not instruction files)."""
        if self._configs is None:
            self._configs = sorted(p for p in self.files if (p.endswith(_CONFIG_EXT) or p.rsplit("/", 1)[-1] in _CONFIG_NAMES)
                                   and p.count("/") <= 3
                                   and not p.startswith(".github/") and p.rsplit("/", 1)[-1] not in INSTRUCTION_FILES)
        return self._configs


@attrs.frozen(kw_only=True)
class Mention:
    kind: str  # path | target | symbol | tool | value | flag
    name: str  # the path, target, identifier, tool, key or flag
    build: str = ""  # target: build file names "|"-separated; value: the value; flag: the script; path: "example"/"config"
    cwd: str = ""  # target: the folder it runs in (``cd DIR &&``, ``-C DIR``, "from `DIR`")
    package: str = ""  # target: the workspace package it runs in (``--filter P``); "*": any package
    linked: bool = False  # path: a relative link's target (``[x](./pkg/AGENTS.md)``): the file's own, from its folder
    py_from: str = ""  # symbol: the Python package a code example imports it from (``from PKG import Name``)


_IMPORT_SOURCE = re.compile(r"""\bfrom\s+["']([^"'\s]+)["']|^\s*from\s+([\w.]+)\s+import\b|\brequire\(\s*["']([^"'\s]+)["']"""
                            r"|^\s*(?:pub\s+)?use\s+(\w+)::")


def _import_source(text: str) -> str:
    """The package a code line imports from (``effect`` of ``import { X } from "effect/Y"``), else ""."""
    im = _IMPORT_SOURCE.search(text)
    if im is None:
        return ""
    src = next(g for g in im.groups() if g)
    if src.startswith("@"):
        return "/".join(src.split("/")[:2])
    return re.split(r"[/.]", src)[0]


_PY_IMPORT = re.compile(r"^\s*from\s+([A-Za-z_][\w.]*)\s+import\s+\(?([^#]*)")


def _py_imported(line: str, name: str) -> str:
    """The module a Python ``from PKG.MOD import A, B as C`` line imports ``name`` (one of its own names) from,
    else ""."""
    im = _PY_IMPORT.match(line)
    if im is None:
        return ""
    names = {n.split(" as ")[0].strip() for n in im.group(2).strip().rstrip(")\\").split(",")}
    return im.group(1) if name in names else ""


def _py_from(text: str, context: Sequence[str], name: str) -> str:
    """The Python package a code example takes ``name`` from: its own import line, or an import of the name
    earlier in the same fenced block (``from agent_framework import ChatAgent`` ... ``agent = ChatAgent(``)."""
    found = _py_imported(text, name)
    if found or not context or not _in_block(context):
        return found
    for ln in reversed(context):
        if _FENCE.match(ln):
            return ""
        found = _py_imported(ln, name)
        if found:
            return found
    return ""


def _clean_piece(token: str) -> bool:
    return bool(token) and not _PLACEHOLDER.search(token) and "://" not in token


_PROSE_WORDS = frozenset("the a an is are was our your you we to sure that this it when if before after with for of "
                         "on at by first then should must will can".split())


def _prose(text: str) -> bool:
    """Whether a line that starts like a command reads as a sentence ("make sure the tests pass")."""
    bare = re.sub(r"\s#\s.*$", "", re.sub(r"\"[^\"]*\"|'[^']*'", "", text))
    return any(w in _PROSE_WORDS for w in re.findall(r"[A-Za-z]+", bare.lower()))


_FENCE = re.compile(r"^\s*(?:```|~~~)")
_CD_LINE = re.compile(r"^\s*(?:\$\s+)?cd\s+([\w./-]+)\s*(?:#.*)?$")
_DIAGRAM_GLYPHS = " \t│|├└─┬┼`+-"
_DIAGRAM_NOTE = re.compile(r"\s{2,}#|\s+#\s|\s{2,}//|\s+←|\s+<-+|\s{2,}\(|\s{2,}-\s")


def _in_block(context: Sequence[str]) -> bool:
    """Whether the line after ``context`` is inside a fenced code block."""
    return sum(1 for ln in context if _FENCE.match(ln)) % 2 == 1


#: what introduces a code block of examples, not of the project's own files: "Example pattern", "❌ Avoid: …"
_EXAMPLE_LEAD = re.compile(r"(?i)\b(?:examples?|e\.\s?g\.|for\s+instance|illustrat\w*|anti-?patterns?|avoid|"
                           r"bad|wrong|don'?t|do\s+not)\b|\u274c")
#: a section heading that names a plan: what it lists need not exist yet
_PLAN_HEADING = re.compile(r"(?i)^\s{0,3}#{1,6}\s.*\b(?:plans?|planned|roadmap|proposals?|proposed|future|todo|"
                           r"next\s+steps|ideas|wish\s?list)\b")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")


def _example_block(context: Sequence[str]) -> bool:
    """Whether the line after ``context`` is in a fenced code block that its heading or the text just before
    it introduces as an example (or as what to avoid): the paths it names are illustrations."""
    if not context or not _in_block(context):
        return False
    at = next(i for i in range(len(context) - 1, -1, -1) if _FENCE.match(context[i]))
    lead = [ln for ln in context[max(0, at - 6):at] if ln.strip()][-2:]
    heading = next((ln for ln in reversed(context[:at]) if _HEADING.match(ln)), "")
    return any(_EXAMPLE_LEAD.search(ln) for ln in [*lead, heading])


def _planned_in_context(context: Sequence[str], path: str) -> bool:
    """Whether the lines before say ``path`` is a plan: its section's heading names a plan ("Architecture
    Plan", "Roadmap"), or an earlier line naming the same path calls it planned."""
    heading = next((ln for ln in reversed(context) if _HEADING.match(ln)), "")
    if _PLAN_HEADING.search(heading):
        return True
    bare = path.strip("/")
    return any(bare in ln and _PLANNED.search(ln) for ln in context if "lann" in ln or "yet" in ln or "oming" in ln)


def _block_cd(context: Sequence[str]) -> re.Match[str] | None:
    """The ``cd DIR`` line earlier in the code block the next line is in (None: not in a block, or none)."""
    for prev in reversed(context[-40:]):
        if _FENCE.match(prev):
            return None
        m = _CD_LINE.match(prev)
        if m:
            return m
    return None


def _diagram_row(line: str) -> tuple[int, str, bool] | None:
    """(column of the name, the name, drawn with tree glyphs) of a line of a file-tree diagram; None if not one."""
    body = _DIAGRAM_NOTE.split(line, 1)[0].rstrip()
    i = 0
    while i < len(body) and body[i] in _DIAGRAM_GLYPHS:
        i += 1
    name = body[i:]
    lead = body[:i]
    drawn = any(g in lead for g in "│├└") or re.search(r"[|`+]--", lead) is not None
    if not re.fullmatch(r"\.?[\w@][\w.@+-]*(?:/[\w.@+-]+)*/?", name) or (lead.strip(" \t") and not drawn):
        return None
    return i, name, drawn


def _diagram_paths(lines: list[str], start: int) -> list[tuple[int, str, list[str]]]:
    """(index, path, the paths of the diagram's lines above) of each line from ``start`` on that is a line of a
    file-tree diagram in a code block: its name under the names of the lines above it with a smaller indent
    (``src/`` / ``├── app/`` / ``│   └── main.py``)."""
    out: list[tuple[int, str, list[str]]] = []
    fenced, begin = False, start
    for i in range(start):
        if lines[i].lstrip().startswith(("```", "~~~")):
            fenced, begin = not fenced, i + 1
    if not fenced:
        begin = start
    stack: list[tuple[int, str, bool]] = []  # the rows the next one may sit under
    block: list[str] = []  # the paths of the diagram so far
    for i in range(begin, len(lines)):
        if lines[i].lstrip().startswith(("```", "~~~")):
            fenced, stack, block = not fenced, [], []
            continue
        row = _diagram_row(lines[i]) if fenced else None
        if row is None:
            if lines[i].strip(_DIAGRAM_GLYPHS):
                stack = []  # prose or code: the diagram ended
            continue
        while stack and stack[-1][0] >= row[0]:
            stack.pop()
        names = [r[1] for r in stack] + [row[1]]
        drawn = row[2] or any(r[2] for r in stack)
        stack.append(row)
        if row[0] == 0 or not stack or stack[0][0] != 0:
            continue  # the root, or no root: a list of names, not of paths
        if not (drawn or all(n.endswith("/") for n in names[:-1])):
            continue
        if any(_PLACEHOLDER.search(n) or n.strip("/") in (".", "..") for n in names):
            continue
        path = "/".join(n.strip("/") for n in names) + ("/" if names[-1].endswith("/") else "")
        if i >= start:
            out.append((i - start, path, block[-40:]))
        block.append(path)
    return out


def mentions(text: str, *, code: bool | None = None, context: Sequence[str] = ()) -> list[Mention]:
    """What ``text`` names, read from the text alone (no tree): the one extractor behind
    :func:`find_citations` and the checks of plain lines. ``code``: the text is a code line
    (every word is a command); None: guessed (no backticks and a runner at its start).
    ``context``: the lines before ``text`` (see :func:`verify_entry`)."""
    out: list[Mention] = []
    seen: set[tuple[str, str, str]] = set()

    def add(m: Mention) -> None:
        key = (m.kind, m.name, m.cwd + "|" + m.package)
        if key not in seen:
            seen.add(key)
            out.append(m)

    cwd = run_dir = ""  # run_dir: where the line says its commands run (not just where something lives)
    m = _FROM_DIR.search(text)
    if m:
        d = m.group(1) or m.group(2)
        named = m.group(0).rstrip().endswith(("directory", "folder", "dir", "package"))
        if ("/" in d or named) and _clean_piece(d):
            cwd = d.strip("/").removeprefix("./")
            run_dir = cwd if named or m.group(0).split()[0].lower() in ("from", "inside", "within") else ""
    cd = _CD.search(text) or (_block_cd(context) if context and not cwd else None)
    if cd and _clean_piece(cd.group(1)) and cd.group(1) not in (".", "..", "~", "-"):
        cwd = run_dir = cd.group(1).strip("/").removeprefix("./")
    if code is None:
        code = "`" not in text and not _prose(text) and (bool(_CODE_LINE.match(text)) or _in_block(context)
                                                          and bool(_SCRIPT_RUN.search(text)))
    pieces = [text] if code else _TICKED_SPAN.findall(text)
    for piece in pieces:
        for r in _runs(piece):
            if (_clean_piece(r.target) and "/" not in r.target and not r.target[0].isdigit()
                    and r.target not in _BINS and _clean_piece(r.cwd or "x") and _clean_piece(r.package or "x")):
                add(Mention(kind="target", name=r.target, build=r.builds, cwd=r.cwd or cwd, package=r.package))
                if r.cwd:
                    add(Mention(kind="path", name=r.cwd))
        for sm in _SCRIPT_RUN.finditer(piece):
            script = sm.group(1) or sm.group(2)
            if _clean_piece(script) and not _EXAMPLE.search(script) and (run_dir or "/" not in script
                                                                         or sm.group(2)) \
                    and not (context and _planned_in_context(context, script)):
                add(Mention(kind="script", name=script.removeprefix("./"), cwd=run_dir))
    for hm in _HATCH.finditer(text):
        add(Mention(kind="target", name=hm.group(1), build="hatch", cwd=cwd))
    tainted = [t for t in _TICKED_SPAN.findall(text) if _PLACEHOLDER.search(t)]
    avoided = {a.strip().rstrip("/").removesuffix("()") for a in _AVOIDED.findall(text)}  # its absence says nothing
    avoided |= {a.strip().rstrip("/") for a in _RUNTIME_PATH.findall(text)}
    other_repo = (re.search(r"`[\w.-]+`\s+(?:repo|repository)\b", text) is not None  # its paths are not ours
                  or _ISSUES_IN.search(text) is not None)
    example = "example" if _EG.search(text) or _CREATES.search(text) else ""  # unverifiable when missing
    made = {x.strip("./") for x in _MADE.findall(text)}  # what a command writes: ``> out.sql``, ``mkdir -p d``
    spaced = [t.strip() for t in _TICKED_SPAN.findall(text) if _SPACED_PATH.fullmatch(t.strip())]
    planned = _PLANNED.search(text) is not None
    candidates = _path_candidates(text) if not planned else []
    linked = {t.rstrip("/") for t in _LINK_TARGET.findall(text) if ".." not in t.split("/")}
    if not example and (candidates or spaced) and _example_block(context):
        example = "example"  # a path a code block of examples shows: unverifiable when missing too
    for path, _span, weak in candidates:
        if (not weak and not other_repo and _clean_piece(path) and not any(path in t for t in tainted)
                and path.rstrip("/") not in avoided
                and path.strip("./") not in made and not any(path in t for t in spaced)
                and not (context and _planned_in_context(context, path))
                and not (path.startswith(".") and re.search(re.escape(path) + r"`?\s+files\b", text))):  # a kind
            config = (path.startswith(".") and "/" not in path and _DOT_CONFIG.fullmatch(path) and not example
                      and _CONFIG_WORD.search(" ".join([*context[-1:], text])))
            add(Mention(kind="path", name=path, build="config" if config else example,
                        linked=path.rstrip("/") in linked))
    for t in spaced if not planned else ():
        add(Mention(kind="path", name=t, build=example))
    for rm in _RUNTIME.finditer(text) if not _OTHER_RUNTIMES.search(text) else ():
        versions = _versions(rm.group(1), re.split(r"\.\s|\.$|/|\s-{1,2}\w", rm.group(2))[0])  # not a command's args
        if versions:
            rt = "python" if rm.group(1).lower() == "python" else "node"
            add(Mention(kind="runtime", name=rt, build=",".join(".".join(map(str, v)) for v in versions)))
    jm = _JAVA_MIN.search(text) or (_JAVA_TARGET.search(text) if len(_JAVA_ANY.findall(text)) == 1 else None)
    if jm and not _EG.search(text):  # the first version the line requires: "JDK 21+ …; clients target Java 11"
        add(Mention(kind="runtime", name="java", build=jm.group(1)))
    negated = _NOT_USED.search(text) is not None
    for pat in (*_ROLE, _ROLE_MORE):
        for om in pat.finditer(text):
            name = om.group(1).lower().rstrip(".")
            if name in _TOOL_JOBS and not negated:
                add(Mention(kind="devtool", name=name))
            elif name not in _ROLE_SKIP and pat is not _ROLE_MORE and name not in _TOOL_JOBS:
                add(Mention(kind="role", name=name))
    if not negated:
        for piece in pieces:
            for tm in _TOOL_RUN.finditer(piece if code else piece.strip()):
                if tm.group(1) in _TOOL_JOBS:
                    add(Mention(kind="devtool", name=tm.group(1)))
        for tm in _TOOL_PROSE.finditer(text):
            name = (tm.group(1) or tm.group(2)).lower()
            if name in _TOOL_JOBS and name not in _TOOL_WORDS:
                add(Mention(kind="devtool", name=name))
    for km in _FILE_KIND.finditer(text) if not _EG.search(text) else ():  # "generated from .fbs files": a source
        if km.group(1) not in _KIND_NOT_SOURCE and not _NOT_USED.search(text[max(km.start() - 40, 0):km.start()]):
            add(Mention(kind="filekind", name=km.group(1)))
    for cm in _CARGO_PACKAGE.finditer(text):  # ``cargo nextest run -p pacquet-lockfile``
        add(Mention(kind="package", name=cm.group(1)))
    for sm in _SCRIPT_TOOL.finditer(text):  # "`pnpm run format:js` (prettier)": the script still runs that tool
        if sm.group(2).lower() in _TOOL_JOBS or sm.group(2).lower() in _SCRIPT_TOOLS:
            add(Mention(kind="runs", name=sm.group(1), build=sm.group(2).lower()))
    held = _held(text)
    if held is not None:
        add(Mention(kind="children", name=held[0], build="|".join(held[1])))
    module = _MODULE_ITEM.match(text)  # "- pinot-kafka-2.0: Kafka 2.x ingestion": a list of the project's modules
    for tok in [*_TICKED_SPAN.findall(text), *([module.group(1)] if module else [])]:
        tok = tok.strip()
        if re.fullmatch(r"@[\w.-]+/[\w.-]+|[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+(?:-\d+(?:\.\d+)+)?", tok) and not _EXAMPLE.search(tok):
            # the package's folder an earlier line of the file names (``packages/vitest-pool-workers/``)
            folder = next((t.strip("/") for ln in reversed(context[-400:]) for t in _TICKED.findall(ln)
                           if "/" in t.strip("/") and t.strip("/").rsplit("/", 1)[-1] == tok), "") if context else ""
            add(Mention(kind="package", name=tok, build=folder))
    if cwd and not other_repo and not (context and _planned_in_context(context, cwd)):
        add(Mention(kind="path", name=cwd))
    for tm in _TOOL_USE.finditer(text):
        add(Mention(kind="tool", name=tm.group(1) or tm.group(2)))
    for pat in _DEFAULT:
        for vm in pat.finditer(text):
            key = vm.group(1) or vm.group(2) if pat.groups == 3 else vm.group(1)
            if key and (len(key) >= 4 or "-" in key or "_" in key) and key.lower() not in _KEYWORDS:
                add(Mention(kind="default", name=key.lstrip("-"), build=vm.group(pat.groups)))
    defaults = {m.name for m in out if m.kind == "default"}
    eg = _EG.search(text)
    for pat in _VALUE:
        for vm in pat.finditer(text):
            key = vm.group(1)
            if eg and eg.start() < vm.start():
                continue  # "missing permissions (e.g. `statuses: write`)": an example of a value, not the tree's
            if key.rsplit(".", 1)[-1].lower() in _SOURCE_EXT and "." in key and re.search(r"[^\s=]:\d", vm.group(0)):
                continue  # "`Layout.tsx:221`": a file and a line in it, not a key and its value
            if key.lstrip("-") not in defaults and (
                    re.search(r"[._-]|[a-z][A-Z]", key.strip("-")) or key.lower() not in _GENERIC_KEYS and len(key) >= 8):
                add(Mention(kind="value", name=key, build=vm.group(2)))
    named_files = {t.strip() for t in _TICKED_SPAN.findall(text)
                   if re.fullmatch(r"[\w./-]+\.(?:json|jsonc|toml|ya?ml|ts|mts|js|mjs|cjs|py|ini|cfg)", t.strip())}
    if len(named_files) == 1 and not _TO_SET.search(text):  # "Shared vitest config (`vitest.shared.ts`): `retry: 2`"
        for vm in _VALUE[0].finditer(text):
            key = vm.group(1)
            if not (key.rsplit(".", 1)[-1].lower() in _SOURCE_EXT and "." in key):  # "`hook.ts:93`": a file's line
                add(Mention(kind="filevalue", name=key, build=vm.group(2), package=next(iter(named_files))))
        for pm in _PINNED.finditer(text) if _PIN_WORD.search(text) and not eg else ():  # "`global.json`: Pins the SDK (10.0.1…)"
            add(Mention(kind="pin", name=pm.group(0), package=next(iter(named_files))))
    keyed = {m.name.rsplit(".", 1)[-1] for m in out if m.kind in ("value", "default")}
    for pat in _LINE_LENGTH if not keyed & {k for ks in _LINE_LENGTH_KEYS.values() for k in ks} else ():
        lm = pat.search(text)
        if lm:
            tools = sorted(t for t in _LINE_LENGTH_KEYS if re.search(r"(?i)(?<![\w-])" + re.escape(t) + r"(?![\w-])", text))
            if not re.search(r"(?i)markdown|commit|docstring|comment|prose|\bmd\b", text):
                add(Mention(kind="setting", name="line length", build=lm.group(1), package=",".join(tools)))
            break
    names = [re.sub(r"\([^()`]{0,80}\)$", "()", t.strip().rstrip(".,;:")) for t in _TICKED_SPAN.findall(text)]
    names_checked = not _PROVIDED.search(text)  # a name another project provides is that project's to change
    if _SOURCE_LINE.match(text):  # what a code line imports or builds on, not the names it defines
        used = re.sub(r"^\s*(?:export\s+)?(?:class|struct|enum|interface|type|fn|def)\s+[\w$]+", "", text)
        if re.match(r"\s*(?:export\s+)?(?:const|let|var)\s", text):
            used = text.split("=", 1)[1] if "=" in text else ""  # what the variable the example defines is made of
        elif used != text and not re.search(r"\b(?:extends|implements)\b|\(", used):
            used = ""  # a class the example defines
        names += re.findall(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+(?:\.[A-Za-z_]\w*)?", used)
    elif context and _in_block(context):  # a Python example using what its block imported: ``agent = ChatAgent(``
        names += [w for w in dict.fromkeys(re.findall(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b", text))
                  if _py_from(text, context, w)]
    for tok in names:
        if not _IDENT.fullmatch(tok) or _PLACEHOLDER.search(tok):
            continue
        if tok.startswith("$") and re.fullmatch(r"\$[a-z][a-z0-9]*(?:-[a-z0-9]+)+", tok):
            add(Mention(kind="skill", name=tok[1:]))  # a skill named `$name`: its folder
            continue
        core = tok.removesuffix("()").lstrip("$")
        head = re.split(r"\.|::", core)[0]
        qualified = "." in core or "::" in core
        camel = bool(re.fullmatch(r"_?[A-Z]?[a-z0-9]+(?:[A-Z][a-z0-9]*)+", head))
        if (len(head) < 4 or head in _KEYWORDS or core in _CONVENTIONS or _EXAMPLE.search(core)
                or head in _LANGUAGE_NAMES):
            continue
        if not (qualified or camel):
            if re.fullmatch(r"[a-z][a-z0-9]{3,30}", core):
                add(Mention(kind="word", name=core))  # checked only for a rename that keeps it as a prefix
            continue  # snake_case and kebab-case names are too often another tool's
        if _EXT.search(core) and "." in core and not re.search(r"[A-Z_]", core.split(".")[-1]):
            continue  # a file name, checked as a path
        if not names_checked or core in avoided or tok.removesuffix("()") in avoided:
            continue
        add(Mention(kind="symbol", name=core, package=_import_source(text), build="|".join(
            sorted({re.split(r"\.|::", n.removesuffix("()"))[0] for n in names if n != tok and _IDENT.fullmatch(n)})),
            py_from=_py_from(text, context, head) if not qualified else ""))
    for sm in re.finditer(r"(?:^|[`\s])([a-z][\w-]{2,30})\s+(?:[a-z][\w-]*\s+)*?(--[a-z][a-z0-9-]{1,40})", text):
        add(Mention(kind="flag", name=sm.group(2), build=sm.group(1)))
    cmd = None if code or "`" in text or text.rstrip().endswith(".") else _COMMAND_LINE.match(text)
    if cmd and cmd.group(2) not in _PROSE:
        add(Mention(kind="command", name=cmd.group(2), build=cmd.group(1)))
    for piece in pieces:
        for cm in re.finditer(r"(?:^|[;&|(]\s*|^\s*(?:[-*#>]\s+)*)([a-z][\w-]{2,30})\s+([a-z][a-z0-9_-]{1,40})\b(?!\s*[=:(])",
                              piece if code else piece.strip()):
            add(Mention(kind="command", name=cm.group(2), build=cm.group(1)))
    for tok in _TICKED_SPAN.findall(text):
        tok = tok.strip()
        if re.fullmatch(r"[A-Za-z_][\w-]*\.[a-z]{1,4}", tok) and tok.rsplit(".", 1)[1] in _CODE_EXT:
            add(Mention(kind="file", name=tok))
    lines = text.split("\n")
    nested = _nested_path(text, context) if context else None
    if nested is not None:
        add(Mention(kind="nested", name=nested[0], build=nested[1]))
    for _k, path, above in _diagram_paths([*context, *lines], len(context)):
        add(Mention(kind="diagram", name=path, build="\n".join(above)))
    for fm in _PROSE_FILE.finditer(_TICKED_SPAN.sub(" ", text)):  # a file named in prose: "edit dev.ts"
        if fm.group(2) in _CODE_EXT and not (fm.group(2) == "js" and fm.group(1)[0].isupper()):  # Node.js, Vue.js
            add(Mention(kind="file", name=fm.group(0)))
    return out


def _versions(runtime: str, tail: str) -> list[tuple[int, ...]]:
    """The versions of ``runtime`` a line names after it (``v18, v20`` -> [(18,), (20,)]; ``3.10+`` -> [(3, 10)])."""
    out: list[tuple[int, ...]] = []
    if runtime.lower() == "python":
        for vm in re.finditer(r"(?<![\w.<])(?:>=?\s*|~=\s*|\^)?3\.(\d{1,2})(?![\d])", tail):
            out.append((3, int(vm.group(1))))
        return out
    for vm in re.finditer(r"(?<![\w.<])(?:v|\^|~|>=?\s*)?(\d{2})(?:\.(?:\d+|x))*\+?(?![\w.-]*\d)", tail):
        if 10 <= int(vm.group(1)) <= 40 and "<" not in tail[max(vm.start() - 2, 0):vm.start()]:
            out.append((int(vm.group(1)),))
    return out


def _range_min(spec: str, size: int) -> tuple[int, ...] | None:
    """The lowest version a range allows (``^18.0.0 || >=20`` -> (18,)), ``size`` parts; None if unreadable."""
    lows = []
    for alt in spec.split("||"):
        alt = re.sub(r"<=?\s*[\w.*]+", "", alt)
        vm = re.search(r"(\d+)(?:\.(\d+))?", alt)
        if vm is None:
            return None
        lows.append((int(vm.group(1)), int(vm.group(2) or 0))[:size])
    return min(lows) if lows else None


def _runtime_min(tree: Tree, runtime: str) -> tuple[int, ...] | None:
    """The lowest version of ``runtime`` the project supports: the root ``engines.node`` (else the one value all
    packages agree on, those an example, template or fixture folder ships left out: they pin what their own
    users run), or the root ``requires-python``; None when the tree does not say."""
    if runtime == "java":  # the root build's: a module may compile for an older one (its clients)
        for name, pat in (("pom.xml", _JAVA_BUILD[0]), ("build.gradle", _JAVA_BUILD[1]), ("build.gradle.kts", _JAVA_BUILD[1])):
            jm = pat.search(tree.text(name) or "")
            if jm:
                return (int(jm.group(1) or jm.group(jm.lastindex or 1)),)
        return None
    if runtime == "python":
        body = tree.text("pyproject.toml") or ""
        rm = re.search(r"(?m)^\s*requires-python\s*=\s*[\"']([^\"']+)[\"']", body)
        return _range_min(rm.group(1), 2) if rm else None
    specs: set[str] = set()
    for p in (["package.json"] if "package.json" in tree.files else []) + sorted(
            q for q in tree.by_name.get("package.json", []) if not _SHIPPED.search(q))[:300]:
        try:
            pkg = json.loads(tree.text(p) or "{}")
        except ValueError:
            continue
        eng = pkg.get("engines") if isinstance(pkg, dict) else None
        if isinstance(eng, dict) and isinstance(eng.get("node"), str):
            specs.add(eng["node"].strip())
            if p == "package.json":
                break
    return _range_min(specs.pop(), 1) if len(specs) == 1 else None


#: a name as a file or folder is named (a dot, a separator, a digit, an inner capital), not a plain word
_NAME_SHAPED = re.compile(r"[._\-\d*@]|[a-z][A-Z]")


def _held(text: str) -> tuple[str, list[str]] | None:
    """A folder a line names and, in parentheses, the names it says the folder holds; None if the line has not one."""
    dirs = {d for d in _DIR_TOKEN.findall(text) if not _PLACEHOLDER.search(d)}
    pm = _PAREN_LIST.search(text)
    if len(dirs) != 1 or pm is None or _EG.search(pm.group(1)):
        return None
    items = []
    for item in re.split(r",|\s+(?:or|and)\s+", pm.group(1)):
        item = item.strip().strip("`").rstrip("/")
        if item.lower() in ("etc", "etc.", "...", "…", ""):
            continue
        if not re.fullmatch(r"[\w@][\w.@*-]{0,60}", item) or re.fullmatch(r"[A-Z0-9]{2,}", item):
            return None  # not a list of names (prose, choices, paths, kinds: "CSS, images")
        items.append(item)
    return (dirs.pop(), items) if len(items) >= 2 else None


def _scripts(tree: Tree) -> dict[str, list[str]]:
    """The project's own command-line scripts (pyproject ``[project.scripts]``, package.json ``bin``), each with
    the files of the tree its entry point may be (``pkg.cli:main`` -> ``src/pkg/cli.py``)."""
    out: dict[str, list[str]] = {}
    for p in tree.by_name.get("pyproject.toml", []):
        body = tree.text(p) or ""
        sec = re.search(r"(?ms)^\[project\.scripts\]\s*$(.*?)(?=^\[|\Z)", body)
        if sec:
            for name, target in re.findall(r"(?m)^\s*\"?([\w.-]+)\"?\s*=\s*[\"']([\w.]+)", sec.group(1)):
                mod = target.replace(".", "/")
                out.setdefault(name, []).extend(
                    q for q in (tree.has(mod + ".py"), tree.has(mod + "/__init__.py"), tree.has(mod + "/__main__.py"),
                                tree.has(mod.split("/")[0]))  # the package itself, for a folder of commands
                    if q)
    for p in tree.by_name.get("package.json", []):
        try:
            pkg = json.loads(tree.text(p) or "{}")
        except ValueError:
            continue
        b = pkg.get("bin") if isinstance(pkg, dict) else None
        base = p.rpartition("/")[0]
        bins = ({str(k): v for k, v in b.items()} if isinstance(b, dict) else
                {pkg["name"].rsplit("/", 1)[-1]: b} if isinstance(b, str) and isinstance(pkg.get("name"), str) else {})
        for name, target in bins.items():
            path = f"{base}/{str(target).removeprefix('./')}".lstrip("/")
            out.setdefault(name, []).extend([path] if path in tree.files else [])
    return out


def _cli_scope(tree: Tree, program: str) -> list[str]:
    """The folders where ``program`` defines its commands: the folder of its Python entry point's module
    (``pkg.cli.main:run`` -> ``src/pkg/cli``); [] when none is known (a Node ``bin`` is often a shim that loads
    the commands from anywhere in its package or its build)."""
    return sorted({e.rpartition("/")[0] for e in tree.script_entries().get(program, [])
                   if e in tree.files and e.endswith(".py")})


#: what a command kept only to say it is gone carries near its name (``app.command("create", hidden=True,
#: help="The create command was removed …")``); a hidden command alone still runs
_TOMBSTONE = re.compile(r"\b(?:was|were|been|is|are|has been)\s+removed\b|\bno longer (?:exists|available|supported)\b"
                        r"|\bdeprecated\b", re.I)


def _tombstones(tree: Tree, folders: list[str], names: set[str]) -> set[str]:
    """Those of ``names`` that the code under ``folders`` quotes only beside a removal or deprecation mark (within
    the six lines from the quote: the call that registers the command)."""
    seen: dict[str, bool] = {}
    for p in tree.files:
        if not any(f == "" or p.startswith(f + "/") for f in folders) or _NOT_DEFAULTS.search(p):
            continue
        body = tree.text(p) or ""
        if not any(n in body for n in names):
            continue
        lines = body.split("\n")
        for i, ln in enumerate(lines):
            for n in _QUOTED.findall(ln):
                if n in names:
                    dead = bool(_TOMBSTONE.search("\n".join(lines[i:i + 6])))
                    seen[n] = seen.get(n, True) and dead
    return {n for n, dead in seen.items() if dead}


def _scoped_names(tree: Tree, folders: list[str]) -> tuple[set[str], set[str]]:
    """Quoted and defined names, and module stems, of the code under ``folders`` (tests and examples left out)."""
    quoted: set[str] = set()
    stems: set[str] = set()
    for p in tree.files:
        if not any(f == "" or p.startswith(f + "/") for f in folders) or _NOT_DEFAULTS.search(p):
            continue
        name = p.rsplit("/", 1)[-1]
        stem, _, ext = name.rpartition(".")
        if ext not in _CODE_EXT:
            continue
        stems.add(stem)
        body = tree.text(p) or ""
        quoted.update(_QUOTED.findall(body))
        quoted.update(_DEFINED.findall(body))
    return quoted, stems


def _command_seen(tree: Tree, program: str, sub: str) -> bool | None:
    """Whether the tree defines ``sub`` of the project's program ``program``: a quoted name or a defined function in
    its sources, or a module or folder named for it; None when its entry point cannot be read (not told). Where the
    entry point's module is known, only the code beside it counts (a command is defined in the program's own
    package: ``"mcp"`` quoted by a service elsewhere in the tree is no ``pipecat mcp``), and a name it registers
    only to say the command was removed (hidden, "was removed", deprecated) is no command it has."""
    tree.words()
    names = {sub, sub.replace("-", "_")}
    scope = _cli_scope(tree, program)
    if scope:
        quoted, stems = _scoped_names(tree, scope)
        if names & stems or names & quoted - _tombstones(tree, scope, names & quoted):
            return True
        return False if _commands_visible(tree, program) else None
    if names & tree.quoted:
        return True
    if any(n + ".py" in tree.by_name or n + ".ts" in tree.by_name or n + ".js" in tree.by_name for n in names):
        return True
    return False if _commands_visible(tree, program) else None


def _commands_visible(tree: Tree, program: str) -> bool:
    """Whether the tree shows where ``program`` defines its commands: its entry point can be read, or its package
    has a folder of one module per command (``cli/commands/init.py``, ``cli/commands/eval.py``)."""
    entries = tree.script_entries().get(program, [])
    if any(tree.text(p) for p in entries):
        return True
    for e in entries:
        top = e.split("/")[0] if not e.startswith("src/") else "/".join(e.split("/")[:2])
        for d in tree.dirs:
            if d.startswith(top + "/") and d.rsplit("/", 1)[-1] in ("commands", "cmd", "subcommands"):
                if sum(1 for n in tree.children(d) if n.rsplit(".", 1)[-1] in _CODE_EXT and not n.startswith("_")) >= 2:
                    return True
    return False


def _builds_of(tree: Tree, builds: str, cwd: str, package: str = "") -> list[str]:
    """The build files a target is looked up in: the one a command names (``make -f``), the package's
    (``--filter P``), the folder's it runs in, else every build file of its kind; [] when none can be told."""
    names = builds.split("|")
    if package and package != "*":
        dirs = tree.package_dirs(package)
        return [f"{d}/package.json" if d else "package.json" for d in dirs]
    if len(names) == 1 and names[0] not in ("package.json", *_MAKEFILES.split("|"), *_JUSTFILES.split("|")):
        given = f"{cwd}/{names[0]}" if cwd else names[0]
        return [given] if given in tree.files else []
    if cwd:
        here = [f"{cwd}/{n}" for n in names if f"{cwd}/{n}" in tree.files]
        if here:
            return here
    return [p for n in names for p in tree.by_name.get(n, [])]


def _same_value(stated: str, seen: str) -> bool:
    """Whether a value a line states is the one the tree has (``30`` = ``30.0`` = ``30_000`` ms, any case)."""
    a, b = stated.strip("'\"`").lower(), seen.strip("'\"`").lower()
    if a == b:
        return True
    try:
        x, y = float(a.replace("_", "")), float(b.replace("_", ""))
    except ValueError:
        return a.rstrip("s") == b.rstrip("s")
    return any(abs(x * f - y) < 1e-9 or abs(y * f - x) < 1e-9 for f in (1, 60, 1000))


_INCLUDE = re.compile(r"(?m)^(?:-?include|sinclude|import\??|mod\??\s+[\w-]+)\s+['\"]?([^\s'\"#]+)")


def _defined_targets(tree: Tree, build: str, depth: int = 0) -> set[str] | None:
    """The targets a build file defines, with those of the Makefiles / justfiles it includes; None when some
    cannot be told (an include through a variable, an included file not in the tree, a target made by a variable).
    Read once per tree and build file (the tree does not change while it is checked)."""
    if depth == 0:
        if build not in tree.targets:
            found = _read_targets(tree, build, 0)
            tree.targets[build] = None if found is None else frozenset(found)
        known = tree.targets[build]
        return None if known is None else set(known)
    return _read_targets(tree, build, depth)


def _read_targets(tree: Tree, build: str, depth: int) -> set[str] | None:
    body = tree.text(build) or ""
    name = build.rsplit("/", 1)[-1]
    out = set(_target_lines(name, _lines(body.encode())))
    if name == "package.json":
        return out
    if any(t.startswith("$") for t in out):
        return None
    base = build.rpartition("/")[0]
    for inc in _INCLUDE.findall(body):
        if "$" in inc or depth > 3:
            return None
        found = sorted(p for p in tree.files if fnmatch.fnmatchcase(p, f"{base}/{inc}".lstrip("/")))
        if not found and not re.search(r"[*?\[]", inc):
            cand = (f"{base}/{inc}".lstrip("/")).rstrip("/")
            found = [c for c in (cand, f"{cand}/mod.just", f"{cand}/justfile", f"{cand}.just") if c in tree.files]
        if not found:
            return None
        for f in found:
            more = _defined_targets(tree, f, depth + 1)
            if more is None:
                return None
            out |= more
    return out


def _stale(kind: str, name: str, reason: str, evidence: Iterable[str] = (),
           replace: tuple[str, str] | None = None) -> Check:
    return Check(citation=Citation(kind=kind, path=name), verdict=STALE, reason=reason, evidence=_clip(evidence),
                 replace=replace)


def _ok(kind: str, name: str) -> Check:
    return Check(citation=Citation(kind=kind, path=name), verdict=OK)


def _check_script(tree: Tree, m: Mention) -> Check | None:
    """A script a command runs (``python gen.py``, ``./run.sh``), in the folder the line says it runs in: stale when
    no file of its name is left in the tree, or when the folder stands and the script is now in one other place."""
    p = m.name.strip("/")
    full = f"{m.cwd}/{p}" if m.cwd else p
    try:
        _rel_parts(full)
    except _Refused:
        return None
    if full.split("/")[0] in _BUILT or p.split("/")[0] in _BUILT or full in tree.files or tree.has(full):
        return _ok("script", full) if full in tree.files or tree.has(full) else None
    if tree.ignored(full):
        return None
    base = p.rsplit("/", 1)[-1]
    where = sorted(tree.by_name.get(base, []))
    if tree.mentioned(base):
        return None  # the tree's own files name it (a generated or downloaded script)
    if not where:
        return _stale("script", full, f"{full} no longer exists")
    if m.cwd and len(where) == 1 and (m.cwd in tree.dirs or tree.has(m.cwd)):
        return _stale("script", full, f"{full} moved to {where[0]}")
    return None


_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+")
#: a list item that opens with a relative folder or a glob of files: ``datatypes/*.fbs``, ``Aspire.Cli/``
_NESTED_ITEM = re.compile(r"^(\s+)(?:[-*+]|\d{1,3}[.)])\s+(?:\*\*)?`([\w@][\w.@-]*(?:/[\w.@*-]+)*/|[\w@][\w.@-]*/[\w.@*-]*\*[\w.*-]*)`")


def _nested_path(text: str, context: Sequence[str]) -> tuple[str, str] | None:
    """(the path, its parent) of a nested list item naming a folder or a glob under the folder its parent item
    names: ``- Type definitions in `crates/…/definitions/rerun/``` then ``  - `datatypes/*.fbs` - …``, or
    ``- **`/src`**: …`` then ``  - `Aspire.Cli/`: …``. None for any other line."""
    m = _NESTED_ITEM.match(text)
    if m is None:
        return None
    indent, child = len(m.group(1)), m.group(2)
    for ln in reversed(context):
        if not ln.strip():
            continue
        item = _LIST_ITEM.match(ln)
        if item is None:
            if ln[:1].isspace():
                continue  # a wrapped line of an item above
            return None  # prose or a heading: the list ended
        if len(item.group(1)) >= indent:
            continue  # a sibling, or a sibling's child
        ticks = [t for t in _TICKED.findall(ln) if "/" in t or t.endswith("/")]
        if len(ticks) != 1 or _PLACEHOLDER.search(ticks[0].replace("/", "")):
            return None
        parent = ticks[0].strip("/").removeprefix("./")
        if not parent or "*" in parent or child.startswith(parent + "/"):
            return None
        return f"{parent}/{child.rstrip('/')}", parent
    return None


def _check_nested(tree: Tree, m: Mention) -> Check | None:
    """A folder or a glob a nested list item names under its parent item's folder: ok when the tree holds it,
    stale when the parent folder stands without it (or the parent, a path, is gone too)."""
    path, parent = m.name, m.build
    if "*" in path:
        if any(fnmatch.fnmatchcase(q, path) for q in tree.files):
            return _ok("path", path)
    elif path in tree.dirs or path in tree.files:
        return _ok("path", path)
    if tree.has(path.split("/", 1)[-1]) == path.split("/", 1)[-1]:
        return None  # the item named a folder from the root after all
    if parent in tree.dirs:
        if "*" in path:
            return _stale("path", path, f"no file matches {path}")
        base = path.rsplit("/", 1)[-1]
        moved = [d for d in tree.dirs if d.rsplit("/", 1)[-1] == base and not any(x in _BUILT for x in d.split("/"))]
        return _stale("path", path, f"{path} moved to {moved[0]}" if len(moved) == 1 else f"{path} no longer exists")
    if "/" in parent and not tree.has(parent) and parent.split("/", 1)[0] in tree.dirs:  # not ``/etc/app/``
        return _stale("path", path, f"{path}: its folder {parent} no longer exists")
    return None


def _check_diagram(tree: Tree, m: Mention) -> Check | None:
    """A path a file-tree diagram shows: stale when it is gone and its name is now in one other place that the
    diagram's folders do not lead to (moved), or nowhere while its folder stands; a diagram that skips folders
    (``core/index.ts`` for ``core/src/index.ts``) is not stale."""
    full = m.name.rstrip("/")
    parts = full.split("/")

    def found(path: str) -> str | None:
        p = path.rstrip("/")
        ps = p.split("/")
        for c in [p] + (["/".join(ps[1:])] if len(ps) > 2 else []):  # the root line may name the project
            if c in tree.files or c in tree.dirs or tree.has(c):
                return c
        return None

    cands = [full] + (["/".join(parts[1:])] if len(parts) > 2 else [])
    here = found(full)
    if here is not None:
        return _ok("path", here)
    if tree.ignored(full) or len(parts) > 2 and tree.ignored("/".join(parts[1:])):
        return None
    above = [a for a in m.build.split("\n") if a]
    hits = sum(found(a) is not None for a in above)
    if hits < 3 or hits * 2 < len(above):
        return None  # a diagram of another tree (a generated project, a proposal): not this one
    base = parts[-1]
    is_dir = m.name.endswith("/")
    ext = base.rsplit(".", 1)[-1].lower() if "." in base.lstrip(".") else ""
    if ext and ext not in _FILE_EXT or any(p in _BUILT for p in parts):
        return None
    where = (sorted(d for d in tree.dirs if d.rsplit("/", 1)[-1] == base) if is_dir or not ext
             else sorted(tree.by_name.get(base, [])))
    where = [w for w in where if not any(p in _BUILT for p in w.split("/"))]

    def leads_to(path: str) -> bool:  # the diagram's folders, in order, are among the path's (skipped folders)
        it = iter(path.split("/")[:-1])
        return all(any(x == p for x in it) for p in parts[1:-1])

    same_folder = len(parts) > 1 and len(where) == 1 and where[0].split("/")[-2:-1] == parts[-2:-1]
    if same_folder and not leads_to(where[0]):  # the file kept its folder's name: the folder moved
        return _stale("path", full, f"{full} moved to {where[0]}")
    if not where and not is_dir and ext:
        for c in cands:
            parent = c.rpartition("/")[0]
            if parent and (parent in tree.dirs or tree.has(parent)):
                return _stale("path", full, f"{full} no longer exists")
    return None


def _py_defined(tree: Tree, module: str, name: str) -> bool:
    """Whether the project's own Python package that ``module`` (``pkg`` or ``pkg.sub``) is part of still
    defines or exports ``name``; True whenever that cannot be told (not the project's package, names made at
    run time, a compiled extension's).

    An example's ``from agent_framework import ChatAgent`` names what the package provides: after a rename
    (``ChatAgent`` -> ``Agent``) samples that were not migrated still use the old name, so the name still
    occurs in the tree; only its definition is gone. Read: the package's ``.py``/``.pyi`` files (folders
    named ``package`` holding an ``__init__.py``) that hold the name, for a ``class``/``def``, an
    assignment, an ``as`` alias, an import (a re-export) or a quoted name (``__all__``, a lazy-import map).
    A package whose ``__init__`` exports with ``*`` or a module ``__getattr__`` may define it elsewhere."""
    package, _, sub = module.partition(".")
    roots = [d for d in tree.dirs_named(package) if f"{d}/__init__.py" in tree.files]
    if not roots or len(roots) > 8:
        return True  # not a package of this tree (a dependency's), or too many to tell which
    mods = [f"{r}/{sub.replace('.', '/')}" if sub else r for r in roots]
    own = {f for m in mods for f in (f"{m}.py", f"{m}.pyi", f"{m}/__init__.py") if f in tree.files}
    if not own:
        return True  # a module the tree does not hold (generated, compiled): nothing to read
    pat = re.compile(r"(?m)^\s*(?:async\s+)?(?:def|class|type)\s+" + re.escape(name) + r"\b|^\s*" + re.escape(name)
                     + r"\s*(?::[^=\n]*)?=(?!=)|\bas\s+" + re.escape(name) + r"\b|\bimport\b[^\n#]*\b" + re.escape(name)
                     + r"\b|[\"']" + re.escape(name) + r"[\"']")
    for root in roots:
        if root not in tree._py_files:
            tree._py_files[root] = sorted(p for p in tree.files if p.startswith(root + "/") and p.endswith((".py", ".pyi")))
        for p in tree._py_files[root]:
            body = tree.text(p) or ""
            if name in body and pat.search(body):
                return True
            if p in own and _py_loose(tree, p.rpartition("/")[0], body):
                return True
    return False


def _py_loose(tree: Tree, folder: str, body: str) -> bool:
    """Whether a package's ``__init__`` may export names no source file of the tree shows: a module
    ``__getattr__``, or a ``*`` import of a module that is not a ``.py``/``.pyi`` file of the package (a
    compiled extension, another package). ``from ._agents import *`` of the package's own file is read there."""
    if re.search(r"(?m)^def\s+__getattr__\s*\(", body):
        return True
    for sm in re.finditer(r"(?m)^\s*from\s+(\.+)([\w.]*)\s+import\s+\*|^\s*from\s+[\w.]+\s+import\s+\*", body):
        if sm.group(1) != ".":
            return True  # an absolute or a parent's module: not this folder's own file
        mod = f"{folder}/{sm.group(2).replace('.', '/')}"
        if not any(f"{mod}{ext}" in tree.files for ext in (".py", ".pyi", "/__init__.py")):
            return True
    return False


def _projects_own(tree: Tree, parts: list[str], missing: str, imported_from: str | None,
                  siblings: Sequence[str] = ()) -> bool:
    """Whether the tree shows that a name it no longer has was the project's own, so that its absence is
    news: the change history names it (it was renamed or removed), the text imports it from one of the
    workspace's own packages, it is a member of a type or module the tree still defines
    (``DispatchResult::remap_tailwind_into``), the line names it beside a type the tree defines (a line
    about the project's own code), or the tree defines a name of its family (``QoderCli`` beside
    ``QoderRunner``). A name with none of these may never have been the project's: a library's API
    (``Phoenix.LiveViewTest``, ``QueryClientProvider``), an example's, a name the text tells the reader
    not to use. Checked only once a name is missing."""
    if tree.in_history(missing):
        return True
    if imported_from and imported_from in tree.packages():
        return True
    owners = tree.owners()
    owner = parts[0] if len(parts) > 1 and parts[0] != missing else None
    if owner is not None:
        return owner in owners
    if any(s != missing and s in owners for s in siblings):
        return True
    head = re.match(r"[A-Z][a-z0-9]{3,}(?=[A-Z])", missing)
    if head is not None and any(o != missing and o.startswith(head.group(0)) and o[len(head.group(0)):][:1].isupper()
                                for o in owners):
        return True
    return _renamed_beside(tree, missing)


#: words a path uses for "any such thing": ``test_provider``, ``command.go``, ``plugin-name``
_GENERIC_PARTS = frozenset("provider providers name module package component feature service model plugin command "
                           "tool app lib thing type kind language lang platform backend adapter driver target project "
                           "sample item entity resource handler page route endpoint widget integration".split())


def _pattern_path(tree: Tree, parts: list[str]) -> bool:
    """Whether the missing path ``parts`` reads as a pattern of the tree's paths: one of its parts is a word
    for "any such thing" (after a ``test_``-like head: ``test_provider``, ``command.go``) and, with that word
    as a wildcard, the path matches two paths or more of the tree (``tests/llm/test_*/evals``,
    ``pkg/domain/infra/abi/*.go``): the line shows the shape of the project's files, not one of them."""
    for i, part in enumerate(parts):
        stem, dot, ext = part.partition(".")
        cut = max(stem.rfind("_"), stem.rfind("-")) + 1
        if stem[cut:].lower() not in _GENERIC_PARTS:
            continue
        pattern = "/".join([*parts[:i], stem[:cut] + "*" + dot + ext, *parts[i + 1:]])
        hits = 0
        for q in tree.files | tree.dirs:
            if fnmatch.fnmatchcase(q, pattern):
                hits += 1
                if hits >= 2:
                    return True
    return False


def _renamed_beside(tree: Tree, name: str) -> bool:
    """Whether the tree holds a name that reads as ``name`` renamed: the same first and last words of a
    CamelCase name with another middle (``QoderCliRunner`` for ``QoderRunner``)."""
    words = re.findall(r"[A-Z][a-z0-9]+|[a-z0-9]+", name)
    if len(words) < 2 or not name[:1].isupper():
        return False
    first, last = words[0], words[-1]
    if tree._sorted is None:
        tree._sorted = sorted(tree.words())
    i = bisect.bisect_left(tree._sorted, first)
    while i < len(tree._sorted) and tree._sorted[i].startswith(first):
        w = tree._sorted[i]
        if w != name and w.endswith(last) and len(w) > len(first) + len(last) and abs(len(w) - len(name)) <= 12:
            return True
        i += 1
    return False


def _script_body(tree: Tree, name: str) -> str | None:
    """The command of package script ``name``: the root package.json's, else the one package's defining it."""
    found: list[str] = []
    for p in (["package.json"] if "package.json" in tree.files else []) + sorted(
            q for q in tree.by_name.get("package.json", []) if q != "package.json" and not _SHIPPED.search(q))[:300]:
        try:
            scripts = json.loads(tree.text(p) or "{}").get("scripts")
        except (ValueError, AttributeError):
            continue
        if isinstance(scripts, dict) and isinstance(scripts.get(name), str):
            if p == "package.json":
                return scripts[name]
            found.append(scripts[name])
    return found[0] if len(set(found)) == 1 else None


def _check_runs(tree: Tree, m: Mention) -> Check | None:
    """A script the line says runs a tool: stale when its command (and the scripts it calls) no longer name it
    and name another tool instead (``lint:js`` (Biome) now running ``rslint``)."""
    body = _script_body(tree, m.name)
    if body is None:
        return None  # no such script (the target check says so), or several packages' differing ones
    seen = [body]
    for cm in re.finditer(r"\b(?:pnpm|npm|yarn|bun)\s+(?:run\s+)?([\w:.-]+)", body):
        seen.append(_script_body(tree, cm.group(1)) or "")
    blob = " ".join(seen)
    if re.search(r"(?i)(?<!\w)" + re.escape(m.build) + r"(?!\w)", blob) or (
            len(m.build) >= 5 and m.build in re.sub(r"\s+", "", blob.lower())):  # Rslint as ``rs lint``
        return _ok("runs", m.name)
    if _RUNS_FILE.search(blob):
        return None  # the tool may be inside the file the script runs
    others = sorted({t for t in re.findall(r"(?<![\w@/.-])([a-z][\w-]+)(?![\w/.-])", blob.lower())
                     if t != m.build and (t in _TOOL_JOBS or t in _SCRIPT_TOOLS)})
    if not others:
        return None  # a wrapper (``rs check``, ``bun -F pkg x``) may run it: no other tool is named instead
    return _stale("runs", m.name, f"the {m.name} script runs {others[0]} now, not {m.build} (`{body[:80]}`)")


def _check_kind(tree: Tree, ext: str) -> Check | None:
    """A kind of file (``.fbs``) the line names: stale when no file of the tree has that extension any more (the
    tree listed whole, not a stub, and the kind not one the root ``.gitignore`` keeps out: generated)."""
    if not 50 <= len(tree.files) < TREE_MAX_FILES or tree.ignored(f"x.{ext}"):
        return None
    suffix = f".{ext}"
    if ext in tree.extensions():
        return _ok("filekind", suffix)
    return _stale("filekind", suffix, f"no {suffix} file is left in the tree")


def check_mention(tree: Tree, m: Mention) -> Check | None:
    """One mention against the tree: ok, stale with the reason, unverifiable with a code; None: not checkable here."""
    if m.kind == "filekind":
        return _check_kind(tree, m.name)
    if m.kind == "runs":
        return _check_runs(tree, m)
    if m.kind == "path":
        try:
            _rel_parts(m.name)
            found = _lstat_chain(tree.root, m.name)
            if found is not None and not stat.S_ISREG(found[1].st_mode) and not stat.S_ISDIR(found[1].st_mode):
                raise _Refused(ErrorCode.PATH_NOT_REGULAR, "the path is not a regular file or folder")
            if found is not None and stat.S_ISREG(found[1].st_mode) and found[1].st_size > FILE_MAX:
                raise _Refused(ErrorCode.RECORD_TOO_LARGE, f"the file is over {FILE_MAX} bytes")
        except _Refused as exc:
            return Check(citation=Citation(kind="path", path=m.name), verdict=UNVERIFIABLE, code=str(exc.code),
                         reason=exc.reason)
        if found is not None or tree.has(m.name) or tree.variant(m.name):
            return _ok("path", m.name)
        if tree.ignored(m.name):
            return None  # a local or generated path (``.gitignore``): a fresh tree need not hold it
        p = m.name.strip("/")
        parts = p.split("/")
        base = parts[-1]
        ext = base.rsplit(".", 1)[-1].lower() if "." in base.lstrip(".") else ""
        if m.build == "config" and "/" not in p and not tree.ignored(base) and len(tree.files) >= 50:
            # a configuration file the line says the project has (``.dlint.json``): anywhere in the tree, with
            # or without its dot (``clippy.toml`` is read as ``.clippy.toml``)
            if base in tree.by_name or base.lstrip(".") in tree.by_name:
                return _ok("path", m.name)
            return _stale("path", m.name, f"no {base} is left in the tree")
        if (len(parts) < 2 or any(x in _BUILT for x in parts) or base.startswith(".") and "/" not in p
                or (ext and ext not in _FILE_EXT) or _EXAMPLE.search(p) or ".gitmodules" in tree.files
                and re.search(r"(?m)^\s*path\s*=\s*" + re.escape(p) + r"\s*$", tree.text(".gitmodules") or "")):
            return None  # a bare name, a built or example path, a submodule: not checkable here
        if ext == "py" and p[:-3] in tree.dirs:
            return _ok("path", m.name)  # a module that became a package of the same name
        if m.build == "example" and not tree.has(p.rsplit("/", 1)[0]):
            return None  # an example in a folder that is gone: a guess
        parent = "/".join(parts[:-1])
        if ext and parts[0] not in _BUILT and len(tree.by_name.get(base, [])) == 1 and m.build != "example":
            tree.words()
            if p not in tree.named and "/" + p not in tree.named:
                return _stale("path", m.name, f"{m.name} moved to {tree.by_name[base][0]}",
                              replace=_same_place(m.name, tree.by_name[base][0]))
        if parent not in tree.dirs and not m.linked and not (len(parts) > 2 and (tree.has(parent) or parts[0] in tree.dirs)):
            return None  # owner/name, a/b choices: not a path of this tree
        tree.words()
        if p in tree.named or "/" + p in tree.named:
            return _ok("path", m.name)  # a path the project's own files make (a clone, a build output)
        moved = sorted(tree.by_name.get(base, [])) if ext else tree.dirs_named(base)
        if m.build == "example":
            return None  # an example path: its folder stands, the name may be illustrative
        if _pattern_path(tree, parts):
            return None  # ``tests/llm/test_provider/evals/`` beside ``test_openai/evals``: a pattern, not a place
        if len(moved) == 1 or (ext and len(moved) == 2):
            return _stale("path", m.name, f"{m.name} moved to {' or '.join(moved)}",
                          replace=_same_place(m.name, moved[0]) if len(moved) == 1 else None)
        return _stale("path", m.name, f"{m.name} no longer exists")
    if m.kind == "script":
        return _check_script(tree, m)
    if m.kind == "diagram":
        return _check_diagram(tree, m)
    if m.kind == "nested":
        return _check_nested(tree, m)
    if m.kind == "runtime":
        low = _runtime_min(tree, m.name)
        if low is None:
            return None
        named = min(tuple(int(x) for x in v.split(".")) for v in m.build.split(","))
        if named >= low:
            return _ok("runtime", m.name)
        return _stale("runtime", m.name, f"{m.name} {'.'.join(map(str, named))} is no longer supported "
                      f"(the project needs {'.'.join(map(str, low))} or later)")
    if m.kind == "devtool":
        if tree.tool_trace(m.name):
            return _ok("devtool", m.name)
        jobs = set(_TOOL_JOBS.get(m.name, ()))
        lang = _TOOL_LANG.get(m.name)
        other = sorted(t for t, j in _TOOL_JOBS.items() if t != m.name and jobs & set(j)
                       and _TOOL_LANG.get(t, lang) == lang and tree.tool_trace(t))
        if not other:
            return None  # nothing says which tool does this job: the project may run it without configuring it
        return _stale("devtool", m.name, f"nothing in the tree configures {m.name} any more "
                      f"({' and '.join(other[:2])} {'are' if len(other) > 1 else 'is'})")
    if m.kind == "role":
        configs = tree.configs()
        if not configs:
            return None
        if tree.config_blob_has(m.name) or any(n.lstrip(".").lower().startswith(m.name) for n in tree.by_name):
            return _ok("role", m.name)
        return _stale("role", m.name, f"no manifest or configuration names {m.name} any more")
    if m.kind == "children":
        d = m.name.strip("/")
        if d not in tree.dirs:
            cands = [x for x in tree.dirs if x.endswith("/" + d)]
            if len(cands) != 1:
                return None
            d = cands[0]
        held = tree.children(d)
        stems = {n.split(".", 1)[0] for n in held}
        present: list[str] = []
        missing: list[str] = []
        for item in m.build.split("|"):
            hit = (any(fnmatch.fnmatchcase(n, item) for n in held) if "*" in item else
                   item in held or item in stems or any(n.startswith(item + "-") for n in held))  # next-openai-pages
            (present if hit else missing).append(item)
        if not missing:
            return _ok("children", d)
        if not present or len(present) < len(missing):
            return None  # not a list of what the folder holds
        as_files = [x for x in missing if _NAME_SHAPED.search(x)]
        if not as_files:
            return None  # "(models, DTOs)", "(rich, textual)": kinds of content or the libraries used, not names
        return _stale("children", d, f"{d}/ holds no {as_files[0]} any more")
    if m.kind == "package":
        names = tree.packages()
        if not names or m.name in names:
            return _ok("package", m.name) if names else None
        if (m.build and m.build not in tree.dirs and tree.has(m.build) is None and not any(
                n.rsplit("/", 1)[-1] == m.name for n in names) and not any(
                x.rsplit("/", 1)[-1] == m.name for x in tree.dirs)):
            return _stale("package", m.name, f"no package {m.name} in the workspace any more ({m.build} is gone)")
        if m.name.startswith("@"):
            scope = m.name.split("/", 1)[0] + "/"
            if sum(n.startswith(scope) for n in names) < 2:
                return None
            tree.words()
            if m.name[1:] in tree.named or any(f'"{m.name}"' in (tree.text(p) or "")
                                                for p in tree.by_name.get("package.json", [])[:500]):
                return _ok("package", m.name)
        else:
            prefix = re.split(r"[-_]", m.name)[0]
            if m.name in tree.words() or m.name in tree.dir_names():
                return _ok("package", m.name)
            if sum(bool(re.match(re.escape(prefix) + r"[-_]", n)) for n in names) < 2:
                # the whole family renamed (``pacquet-cli`` -> ``pnpm-cli``): one package of another family of
                # two or more has the same rest, and no package keeps the old prefix
                rest = m.name[len(prefix) + 1:]
                peers = sorted(n for n in names if re.fullmatch(r"[a-z0-9]+[-_]" + re.escape(rest), n)
                               and not n.startswith(prefix))
                family = re.split(r"[-_]", peers[0])[0] if len(peers) == 1 else ""
                if not rest or not family or any(re.match(re.escape(prefix) + r"[-_]", n) for n in names) or sum(
                        bool(re.match(re.escape(family) + r"[-_]", n)) for n in names) < 2:
                    return None
                return _stale("package", m.name, f"no package {m.name} in the workspace any more ({peers[0]} now?)")
        return _stale("package", m.name, f"no package {m.name} in the workspace any more")
    if m.kind == "skill":
        skills = [d for d in tree.dirs if d.rsplit("/", 1)[-1] == "skills"]
        if not skills:
            return None
        if any(f"{d}/{m.name}" in tree.dirs or f"{d}/{m.name}.md" in tree.files for d in skills):
            return _ok("skill", m.name)
        return _stale("skill", m.name, f"no skill {m.name!r} in {', '.join(sorted(skills)[:2])} any more")
    if m.kind == "target":
        if m.build == "hatch":
            defs = [p for p in tree.by_name.get("hatch.toml", []) + tree.by_name.get("pyproject.toml", [])]
            if not defs:
                return None
            pat = re.compile(r"(?m)^\[(?:tool\.hatch\.)?envs\." + re.escape(m.name) + r"[\].]")
            if any(pat.search(tree.text(p) or "") for p in defs):
                return _ok("target", m.name)
            return _stale("target", m.name, f"no hatch environment {m.name!r} is defined any more")
        builds = [b for b in _builds_of(tree, m.build, m.cwd, m.package) if tree.text(b)]
        if not builds:
            return None  # no build file to read (absent, empty, or not a regular file)
        for b in builds:
            defined = _defined_targets(tree, b)
            if defined is None or m.name in defined or any(
                    "%" in t and fnmatch.fnmatchcase(m.name, t.replace("%", "*")) for t in defined):
                return _ok("target", m.name) if defined is not None else None
        if m.build == "package.json" and m.name in tree.dependencies():
            return None  # ``pnpm nx …``: the program of a dependency, not a script
        if m.build == "package.json" and tree.packages() & _PACKAGE_MANAGERS:
            return None  # the project is a package manager: ``pnpm lane`` may be one of its own commands
        where = builds[0] if len(builds) == 1 and (m.package or m.cwd) else " / ".join(
            sorted({b.rsplit("/", 1)[-1] for b in builds}))
        return _stale("target", m.name, f"{where} has no target {m.name!r} any more")
    if m.kind == "symbol":
        words = tree.words()
        parts = [x for x in re.split(r"\.|::", m.name) if x]
        if not words or not parts:
            return None
        missing = [x for x in parts[:2] if x not in words]
        documented = [x for x in parts[:1] if not missing and x not in tree.code_words and x in words
                      and (x[:1].isupper() or "_" in x) and len(tree.code_words) >= 1000]
        if documented and not tree.family(documented[0]) >= 2 and _projects_own(
                tree, parts, documented[0], m.package, m.build.split("|") if m.build else ()):
            # the code no longer has it; only documents (guides, decision records, READMEs) still name it
            return _stale("symbol", m.name, f"{documented[0]!r} is named only in documentation now")
        if not missing:
            gone = m.py_from if m.py_from and not _py_defined(tree, m.py_from, parts[0]) else None
            if gone:
                return _stale("symbol", m.name, f"{parts[0]!r} is no longer defined in {gone.split('.')[0]}; "
                                                "only code that was not updated still uses it")
            return _ok("symbol", m.name)
        if tree.family(missing[0]) >= 2:
            return None  # the common part of several names (``AuthIR`` of ``AltAuthIR``, ``AthenaAuthIR``): a concept
        if not _projects_own(tree, parts, missing[0], m.package, m.build.split("|") if m.build else ()):
            return None  # a library's name, an example's, one the text forbids: its absence says nothing
        return _stale("symbol", m.name, f"{missing[0]!r} no longer occurs in the tree")
    if m.kind == "tool":
        traces = _TOOLS.get(m.name, ())
        for t in traces:
            if t.startswith(("[", '"')):
                if any(t in (tree.text(p) or "") for n in ("pyproject.toml", "package.json")
                       for p in tree.by_name.get(n, [])[:50]):
                    return _ok("tool", m.name)
            elif tree.by_name.get(t):
                return _ok("tool", m.name)
        return _stale("tool", m.name, f"nothing in the tree shows {m.name} is used any more")
    if m.kind in ("value", "default"):
        key = m.name.rsplit(".", 1)[-1]
        if m.build.lower() in _TYPE_WORDS:
            return None  # "`_id: string`": the line states a type, not a value
        seen, where = [v for v in tree.values(key) if v not in _TYPE_WORDS], "the configuration"
        if not seen and m.kind == "default":
            seen, where = tree.code_defaults(key), "the code"
        # a key given three or more values is a field of records (results, fixtures, an enum's uses), not one
        # setting: a line's value for it is an example
        if not seen or len(set(seen)) >= 3 and not any(_same_value(m.build, v) for v in seen):
            return None
        if any(_same_value(m.build, v) for v in seen):
            return _ok(m.kind, m.name)
        return _stale(m.kind, m.name, f"{m.name} is {seen[0]} now, not {m.build}"
                      + (" (its default in the code)" if where == "the code" else ""),
                      replace=(m.build, seen[0]) if len(set(seen)) == 1 else None)
    if m.kind == "pin":
        held_in = m.package if m.package in tree.files else tree.has(m.package)
        body = tree.text(held_in) if held_in and held_in in tree.files else None
        stated = m.name.removeprefix("v")
        pins = set(_PINNED.findall(body or ""))
        if not pins:
            return None  # no version there: the line's version is of something else
        if re.search(r"(?<![\w.])" + re.escape(stated) + r"(?![\w.-]*\w)", body or ""):
            return _ok("pin", m.name)
        now = sorted(p for p in pins if p.split(".")[0].lstrip("v") == stated.split(".")[0])
        return _stale("pin", m.name, f"{held_in} no longer holds {stated}" + (f" ({now[0]} now)" if len(now) == 1 else ""),
                      replace=(m.name, now[0]) if len(now) == 1 else None)
    if m.kind == "filevalue":
        held_in = m.package if m.package in tree.files else tree.has(m.package)
        body = tree.text(held_in) if held_in and held_in in tree.files else None
        if not body:
            return None
        key = m.name.rsplit(".", 1)[-1]
        given = re.findall(r"(?m)(?<![\w.$-])[\"']?" + re.escape(key) + r"[\"']?\s*[:=]\s*[\"']?([\w.+-]{1,40})", body)
        if not given or len(set(given)) > 2:
            return None  # not set there, or set to several values (per case, per environment)
        if any(_same_value(m.build, v) for v in given):
            return _ok("value", m.name)
        return _stale("value", m.name, f"{held_in} sets {key} to {given[0]} now, not {m.build}",
                      replace=(m.build, given[0]) if len(set(given)) == 1 else None)
    if m.kind == "setting":
        seen_by: dict[str, list[str]] = {}
        configs = [p for p in tree.files if p.count("/") <= 3 and _FORMAT_CONFIG.match(p.rsplit("/", 1)[-1])]
        if not configs or any(not tree.text(p) or not p.endswith((".toml", ".json", ".jsonc", ".cfg", ".ini", ".yaml",
                                                                   ".yml", ".editorconfig", ".flake8", "rc", ".clang-format"))
                              for p in configs):
            return None  # a formatter configuration that cannot be read as keys and values: the length is not told
        tools = m.package.split(",") if m.package else list(_LINE_LENGTH_KEYS)
        for t in tools:
            for k in _LINE_LENGTH_KEYS[t]:
                if tree.values(k):
                    seen_by.setdefault(t, []).extend(tree.values(k))
        values = [v for vs in seen_by.values() for v in vs]
        if not values:
            return None
        if any(_same_value(m.build, v) for v in values):
            return _ok("setting", m.name)
        return _stale("setting", m.name, f"the line length is {values[0]} now, not {m.build}",
                      replace=(m.build, values[0]) if len(set(values)) == 1 else None)
    if m.kind == "word":
        words = tree.words()
        if not words or m.name in words:
            return _ok("word", m.name) if words else None
        longer = tree.prefixed(m.name)
        if longer:
            return _stale("word", m.name, f"{m.name!r} occurs only inside {longer!r} now")
        return None
    if m.kind == "file":
        if tree.by_name.get(m.name) or not tree.files:
            return _ok("file", m.name) if tree.by_name.get(m.name) else None
        stem = m.name.rsplit(".", 1)[0]
        like = sorted(p for n, ps in tree.by_name.items() if n.rsplit(".", 1)[0] == stem
                      and n.rsplit(".", 1)[-1] in _CODE_EXT for p in ps)
        if len(like) == 1:
            return _stale("file", m.name, f"{m.name} is now {like[0]}")
        return None
    if m.kind == "command":
        if m.build not in tree.scripts():
            return None
        known = _command_seen(tree, m.build, m.name)
        if known is None:
            return None
        if known:
            return _ok("command", f"{m.build} {m.name}")
        return _stale("command", f"{m.build} {m.name}", f"{m.build} has no command {m.name!r} any more")
    if m.kind == "flag":
        if m.build not in tree.scripts():
            return None
        words = tree.words()
        if m.name[2:] in words or m.name in words:
            return _ok("flag", m.name)
        if not any(tree.text(p) for p in tree.script_entries().get(m.build, [])):
            return None  # where the options are defined cannot be read
        return _stale("flag", m.name, f"{m.build} has no option {m.name} any more")
    return None


def check_line(root: str, text: str, tree: Tree | None = None, *, code: bool | None = None,
               context: Sequence[str] = (), base: str = "") -> list[Check]:
    """The checks of a plain line (no recorded citations): one per mention that can be checked here. ``base``:
    the folder of the file the line is in, relative to ``root`` (a relative link is read from there)."""
    tree = tree if tree is not None else Tree(root)
    out = []
    for m in mentions(text, code=code, context=context):
        if m.linked and base.strip("/."):
            m = attrs.evolve(m, name=posixpath.normpath(f"{base.strip('/')}/{m.name}"))
        c = check_mention(tree, m)
        if c is not None:
            out.append(c)
    return out
