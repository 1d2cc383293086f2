"""Private state is only state this user's cairn created (ADR 0011).

A repository can ship ``.cairn/state/`` (git keeps whatever is committed);
a clone recreates it with the cloner's umask (``0755``, files ``0644``). Read
as private state, its forged proposals would show as pending, its forged
evidence would feed reviews and its forged claims and intents would drive
recovery. So every ``<base>/.cairn/state`` directory is checked when it is
opened -- in :meth:`state.fsdir.PinnedDir.child`, the one place every path
into it passes through -- before anything below it is read or written:

* it is a real directory (opened with ``O_NOFOLLOW``: a symlink already fails
  as ``E_PATH_SYMLINK``);
* it is owned by the effective uid (root's own state works when run as root);
* it has no group or other permission bits (cairn creates it ``0700``);
* it carries :data:`MARKER` (``0600``), written when cairn creates the folder,
  naming this directory's inode (a copy of the folder, a clone included, is
  another inode).

A folder that passes the first three but has no valid marker -- made by an
earlier version, or copied by the user -- is *adopted* (the marker written)
unless git tracks files under it (a shipped folder: one bounded
``git ls-files``, only at adoption). Anything else is refused with
``E_STATE_FOREIGN``: nothing in it is read, nothing is deleted; the message
says to move it aside. :func:`state.fsdir.refusal` asks the same question
without raising, for ``cairn doctor`` and the language server.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from typing import TYPE_CHECKING

from cairn.protocol.errors import CairnError, ErrorCode

if TYPE_CHECKING:
    from cairn.state.fsdir import PinnedDir

STATE_NAME = "state"  # the private state folder, a child of CAIRN_NAME
CAIRN_NAME = ".cairn"
MARKER = "owner"  # {"kind": "cairn-state", "v": 1, "id": <random>, "ino": <the folder's inode>}
GITIGNORE = ".gitignore"
GITIGNORE_BODY = b"# private cairn state: never committed\n*\n"
GIT_TIMEOUT = 2.0  # seconds; a git that does not answer in time leaves the question open
_MARKER_LIMIT = 4096
_verified: set[tuple[int, int]] = set()  # (st_dev, st_ino) of roots whose marker this process checked


def is_state_root(parent_path: str, name: str) -> bool:
    """Whether ``name`` below the directory at ``parent_path`` is a private state root."""
    return name == STATE_NAME and os.path.basename(os.path.normpath(parent_path)) == CAIRN_NAME


def foreign(where: str, reason: str) -> CairnError:
    return CairnError(ErrorCode.STATE_FOREIGN,
                      f"{where} is not private state this user's cairn created ({reason}); nothing in it is "
                      "read. Move it aside (mv .cairn/state .cairn/state.foreign) and cairn starts afresh; "
                      "`cairn doctor` explains", path=where, reason=reason)


def owner_problem(st: os.stat_result) -> str | None:
    """Why a state root's own metadata rules it out, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not {os.geteuid()}"
    if st.st_mode & 0o077:
        return f"mode {stat.S_IMODE(st.st_mode):04o} lets others in; cairn creates it 0700"
    return None


def _marker_ok(d: PinnedDir, st: os.stat_result) -> bool:
    try:
        raw = d.read(MARKER, limit=_MARKER_LIMIT)
        rec = json.loads(raw) if raw is not None else None
    except (CairnError, OSError, ValueError):
        return False
    return (isinstance(rec, dict) and rec.get("kind") == "cairn-state" and rec.get("v") == 1
            and rec.get("ino") == st.st_ino)


def git_tracked(workspace: str) -> bool | None:
    """Whether git tracks anything under ``workspace/.cairn/state``; None if unknown (no git, no answer)."""
    import subprocess  # only here: a command that never asks git does not load it (start-up)
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        r = subprocess.run(["git", "-C", workspace, "-c", "core.fsmonitor=false", "ls-files", "-z", "--",
                            f"{CAIRN_NAME}/{STATE_NAME}"], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=GIT_TIMEOUT, env=env, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None  # not a repository (or git refuses it): nothing tracked that we can know of
    return bool(r.stdout)


def _base_of(where: str) -> str:
    """The folder holding ``.cairn`` (for git; messages and this question only)."""
    return os.path.dirname(os.path.dirname(os.path.normpath(where))) or "."


def _write_marker(d: PinnedDir, st: os.stat_result, *, replace: bool, adopt: bool) -> None:
    body = json.dumps({"kind": "cairn-state", "v": 1, "id": os.urandom(16).hex(), "ino": st.st_ino},
                      sort_keys=True).encode() + b"\n"
    try:
        if replace:
            d.replace(MARKER, body)
        else:
            d.publish(MARKER, body)  # a concurrent creator's marker is as good as ours
        if not d.exists(GITIGNORE):
            d.publish(GITIGNORE, GITIGNORE_BODY)
    except CairnError:
        pass  # the marker is retried on the next open; owner and mode already passed
    except OSError as exc:
        # A failed write or fsync is fatal for that write (ADR 0021: never fsynced again on the same
        # descriptor, whose error the kernel reports once): the command stops with its fixed code
        # (E_IO_FAILED / E_NO_SPACE) and the next open writes the marker afresh. Only a look at an
        # adopted folder on a read-only file system goes on without one (nothing is written there).
        if adopt and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return
        raise


def verify(d: PinnedDir, *, created: bool) -> None:
    """Check (and on creation mark) the state root ``d``; raise ``E_STATE_FOREIGN`` if it is not ours."""
    st = os.fstat(d.fd)
    problem = owner_problem(st)
    if problem is not None:
        raise foreign(d.path, problem)
    key = (st.st_dev, st.st_ino)
    if key in _verified:
        return
    if created:
        _write_marker(d, st, replace=False, adopt=False)
    elif not _marker_ok(d, st):
        if git_tracked(_base_of(d.path)):
            raise foreign(d.path, "its files are tracked by git, so they came with the repository")
        _write_marker(d, st, replace=d.exists(MARKER), adopt=True)  # adopt: an earlier version's folder, or a copy
    _verified.add(key)
