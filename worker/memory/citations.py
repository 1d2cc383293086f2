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

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from cairn.protocol.errors import ErrorCode

#: a cited file larger than this is never read
FILE_MAX = 1 << 20
#: lines of evidence a stale check carries at most
EVIDENCE_LINES = 6
OK, STALE, UNVERIFIABLE = "ok", "stale", "unverifiable"

_TICKED = re.compile(r"`([^`\s]{1,200})`")
_SLASHED = re.compile(r"(?<![\w./:-])((?:\.{1,2}/|/)?[\w.-]+(?:/[\w.-]+)+/?)")
_LINES = re.compile(r"^(.*?):(\d{1,7})(?:-(\d{1,7}))?$")
_PATHLIKE = re.compile(r"^[\w./-]+$")
_EXT = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_TARGET_NAME = r"([A-Za-z0-9][\w.:/-]{0,80})"
_RUNNERS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"\bmake\s+(?:-[A-Za-z]+\s+)*" + _TARGET_NAME), ("GNUmakefile", "makefile", "Makefile")),
    (re.compile(r"\b(?:npm|pnpm)\s+run\s+" + _TARGET_NAME), ("package.json",)),
    (re.compile(r"\byarn\s+(?!add\b|install\b|remove\b)" + _TARGET_NAME), ("package.json",)),
    (re.compile(r"\bjust\s+" + _TARGET_NAME), ("justfile", "Justfile", ".justfile")),
)
_MAKE_RULE = re.compile(r"^([^\s:#=][^:#=]*?)\s*::?(?!=)")
_JUST_RULE = re.compile(r"^@?([A-Za-z0-9_][\w-]*)\b[^:=]*:(?!=)")


@attrs.frozen(kw_only=True)
class Citation:
    kind: str  # "path" | "target"
    path: str  # workspace-relative, "/" separated (as written; checked when read)
    target: str | None = None  # the target's name (kind "target")
    lines: tuple[int, int] | None = None  # 1-based, inclusive
    sha256: str | None = None  # of the cited lines, or of the file without lines
    commit: str | None = None  # the workspace's git commit when it was recorded

    def as_front_matter(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.target is not None:
            out["target"] = self.target
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
    rule = _MAKE_RULE if "make" in build.lower() else _JUST_RULE
    for i, ln in enumerate(text):
        m = rule.match(ln)
        if m:
            for name in m.group(1).split():
                out.setdefault(name.lstrip("@"), i + 1)
    return out


# -- finding ---------------------------------------------------------------------------------

def _path_candidates(text: str) -> list[tuple[str, tuple[int, int] | None, bool]]:
    """(path, line span, weak) named in ``text``; weak: a backticked bare name (``Makefile``), cited only if a file."""
    seen: dict[str, tuple[tuple[int, int] | None, bool]] = {}
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
        if token.startswith("./"):
            token = token[2:]
        seen.setdefault(token.rstrip("/"), (span, weak))
    return [(path, span, weak) for path, (span, weak) in seen.items()]


def _target_candidates(text: str) -> list[tuple[str, str]]:
    """(target, build file) pairs named in ``text``, in order, once each; the build file is resolved later."""
    out: list[tuple[str, str]] = []
    for pattern, builds in _RUNNERS:
        for m in pattern.finditer(text):
            pair = (m.group(1).rstrip(".,;:)"), "|".join(builds))
            if pair not in out:
                out.append(pair)
    return out


def _build_file(root: str, builds: str) -> tuple[str, list[str]] | None:
    for name in builds.split("|"):
        try:
            data = _read(root, name)
        except _Refused:
            continue
        if data is not None:
            return name, _lines(data)
    return None


def find_citations(root: str, text: str, *, commit: str | None = None, hashes: bool = True) -> list[Citation]:
    """What ``text`` names in the workspace ``root`` now, with the content hashes of the cited lines or files.

    Only what exists is cited; a path outside the workspace or through a
    symlink is cited as written (without a hash) so that its check says why
    it cannot be verified. ``commit``: recorded on each citation (see :func:`git_commit`).
    """
    out: list[Citation] = []
    for target, builds in _target_candidates(text):
        found = _build_file(root, builds)
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
    return out


def from_front_matter(value: object) -> tuple[list[Citation], list[Check]]:
    """Citations recorded in a topic's front matter, and a check for each item that is not one."""
    good: list[Citation] = []
    bad: list[Check] = []
    items = value if isinstance(value, list) else [value]
    for item in items:
        try:
            good.append(_citation(item))
        except (TypeError, ValueError):
            bad.append(Check(citation=Citation(kind="path", path=""), verdict=UNVERIFIABLE,
                             code=str(ErrorCode.TOPIC_FRONT_MATTER), reason="a citation in the front matter is not valid"))
    return good, bad


def _citation(item: object) -> Citation:
    if not isinstance(item, Mapping) or not isinstance(item.get("path"), str) or not item["path"]:
        raise ValueError("no path")
    target = item.get("target")
    lines = item.get("lines")
    span = None
    if lines is not None:
        m = re.fullmatch(r"(\d{1,7})(?:-(\d{1,7}))?", str(lines).strip())
        if not m or int(m.group(1)) < 1 or int(m.group(2) or m.group(1)) < int(m.group(1)):
            raise ValueError("bad lines")
        span = (int(m.group(1)), int(m.group(2) or m.group(1)))
    sha, commit = item.get("sha256"), item.get("commit")
    for v in (target, sha, commit):
        if v is not None and not isinstance(v, str):
            raise TypeError("not text")
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
    out = text
    for pattern, _builds in _RUNNERS:
        out = pattern.sub(lambda m: m.group(0)[: m.start(1) - m.start(0)] + new + m.group(1)[len(old):]
                          if m.group(1).rstrip(".,;:)") == old else m.group(0), out)
    return out


def check_citation(root: str, c: Citation) -> Check:
    """One citation against the working tree of ``root``."""
    try:
        data = _read(root, c.path)
    except _Refused as exc:
        return Check(citation=c, verdict=UNVERIFIABLE, code=str(exc.code), reason=exc.reason)
    except IsADirectoryError:
        return Check(citation=c, verdict=UNVERIFIABLE, code=str(ErrorCode.PATH_NOT_REGULAR),
                     reason="the path is not a regular file")
    if data is None:
        return Check(citation=c, verdict=STALE, reason=f"{c.path} no longer exists")
    lines = _lines(data)
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


def verify_entry(root: str, text: str, citations: object = None) -> list[Check]:
    """The verification API: the citations of one memory entry and the verdict of each.

    ``root``: the workspace; ``text``: the entry's text (a topic's body);
    ``citations``: its recorded citations (:class:`Citation` objects, or the
    front matter's list of mappings); None or empty: those :func:`find_citations`
    finds in ``text`` now (paths by existence, targets by name). Pure apart
    from reading the cited files; never writes.
    """
    if citations:
        if isinstance(citations, list | tuple) and all(isinstance(c, Citation) for c in citations):
            good, bad = list(citations), list[Check]()
        else:
            good, bad = from_front_matter(citations)
    else:
        good, bad = find_citations(root, text, hashes=False), []
    return bad + [check_citation(root, c) for c in good]
