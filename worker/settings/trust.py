"""The user's own files: user-level settings and the list of trusted workspaces.

Both live in ``$XDG_CONFIG_HOME/cairn/`` (``~/.config/cairn/`` when the
variable is unset or not absolute):

* ``config.toml`` — the user's settings, same keys as a workspace's
  ``.cairn/config.toml``. The user edits it; cairn writes it only when the
  user chooses a digest provider with ``cairn setup``, and then only those
  keys, in place (:mod:`worker.settings.userconfig`): its comments and order
  are never rewritten.
* ``trusted-workspaces.json`` — ``{"version": 1, "workspaces": [...]}``,
  the resolved real paths of the workspaces the user trusts (``cairn
  trust`` / ``cairn untrust``). It is machine-owned, so it is a separate
  file in a closed JSON schema (the standard library reads TOML but cannot
  write it, and rewriting the user's TOML would lose their comments).
  Every write is atomic (temp, fsync, rename, fsync of the directory)
  under a ``flock`` of the directory, so two concurrent ``cairn trust``
  never lose each other's entry and a reader never sees half a list.

Trust is per exact real path: trusting a folder does not trust the folders
inside it. Why trust exists: a workspace file comes with a cloned
repository, so it must not choose where data and keys are sent (see
:data:`worker.settings.config.OFF_MACHINE`).

Control files are read like every other file cairn reads
(:func:`read_control_file`, through :meth:`state.fsdir.PinnedDir.read`): a
regular file only, opened without blocking (a FIFO never hangs the reader)
and at most :data:`CONTROL_FILE_LIMIT` bytes; anything else is
``E_CONFIG_INVALID`` with a one-line reason.
"""

from __future__ import annotations

import json
import os

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.state.fsdir import PinnedDir
from cairn.state.locks import TargetLock

CONTROL_FILE_LIMIT = 64 << 10
USER_CONFIG = "config.toml"
TRUST_FILE = "trusted-workspaces.json"
TRUST_VERSION = 1


def read_control_file(d: PinnedDir, name: str, *, label: str, follow: bool = False) -> bytes | None:
    """Bytes of the regular file ``name`` in ``d``, or None when it is absent.

    One reader for every file cairn reads (:meth:`state.fsdir.PinnedDir.read`):
    no symlink followed unless ``follow``, regular files only, an open that
    never blocks, at most :data:`CONTROL_FILE_LIMIT` bytes. Any refusal is
    ``E_CONFIG_INVALID`` naming ``label`` with a one-line reason.
    """
    try:
        return d.read(name, limit=CONTROL_FILE_LIMIT, follow=follow)
    except CairnError as exc:
        reason = {ErrorCode.PATH_SYMLINK: "is a symlink; not followed",
                  ErrorCode.PATH_NOT_REGULAR: "is not a regular file",
                  ErrorCode.RECORD_TOO_LARGE: f"is larger than {CONTROL_FILE_LIMIT >> 10} KiB"}.get(
                      exc.code, f"is unreadable ({exc.detail.get('reason') or exc.code})")
        raise CairnError(ErrorCode.CONFIG_INVALID, f"{label} {reason}") from None
    except OSError as exc:
        raise CairnError(ErrorCode.CONFIG_INVALID, f"{label} is unreadable ({exc.strerror})") from None


def open_config_dir() -> PinnedDir | None:
    """The user's cairn folder (:func:`config_dir`), or None when there is none (or it is not a folder)."""
    try:
        return PinnedDir.open_root(config_dir())
    except CairnError as exc:
        if exc.code in (ErrorCode.NOT_FOUND, ErrorCode.PATH_NOT_DIRECTORY):
            return None
        raise
    except OSError as exc:
        raise CairnError(ErrorCode.CONFIG_INVALID, f"{config_dir()} is unreadable ({exc.strerror})") from None


def config_dir(env: dict[str, str] | None = None) -> str:
    """``$XDG_CONFIG_HOME/cairn`` (an unset or relative value means ``~/.config``)."""
    base = (os.environ if env is None else env).get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "cairn")


def user_config_bytes() -> bytes | None:
    """The user's ``config.toml`` (None when absent).

    The user's own file may be a symlink (dotfile managers link it); its
    target must still be a small regular file.
    """
    d = open_config_dir()
    if d is None:
        return None
    with d:
        return read_control_file(d, USER_CONFIG, label=f"{USER_CONFIG} (user)", follow=True)


def real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def _parse(raw: bytes) -> list[str]:
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        doc = None
    paths = doc.get("workspaces") if isinstance(doc, dict) and doc.get("version") == TRUST_VERSION else None
    if (not isinstance(doc, dict) or set(doc) != {"version", "workspaces"} or not isinstance(paths, list)
            or not all(isinstance(p, str) and os.path.isabs(p) for p in paths)):
        raise CairnError(ErrorCode.CONFIG_INVALID, f"{TRUST_FILE} is not a version-{TRUST_VERSION} trust list")
    return paths


def trusted_paths() -> list[str]:
    """The trusted real paths, sorted; raises ``E_CONFIG_INVALID`` for an unreadable list."""
    d = open_config_dir()
    if d is None:
        return []
    with d:
        raw = read_control_file(d, TRUST_FILE, label=TRUST_FILE)
    return sorted(set(_parse(raw))) if raw is not None else []


def is_trusted(workspace: str) -> bool:
    return real(workspace) in trusted_paths()


def _update(workspace: str, add: bool) -> tuple[str, bool]:
    path = real(workspace)
    with PinnedDir.open_root(config_dir(), create=True) as d, TargetLock(d):
        raw = read_control_file(d, TRUST_FILE, label=TRUST_FILE)
        before = set(_parse(raw)) if raw is not None else set()
        after = before | {path} if add else before - {path, os.path.abspath(workspace)}
        if after != before:
            doc = {"version": TRUST_VERSION, "workspaces": sorted(after)}
            d.replace(TRUST_FILE, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode(), mode=0o600)
    return path, after != before


def trust(workspace: str) -> tuple[str, bool]:
    """Trust ``workspace`` (a directory); return its real path and whether the list changed."""
    if not os.path.isdir(workspace):
        raise CairnError(ErrorCode.WORKSPACE_INVALID, f"{workspace} is not a directory")
    return _update(workspace, True)


def untrust(workspace: str) -> tuple[str, bool]:
    """Stop trusting ``workspace``; return its real path and whether the list changed."""
    return _update(workspace, False)


def trust_line(workspace: str) -> str:
    """One line for ``cairn doctor``: whether the workspace is trusted, and where the list is."""
    try:
        state = "trusted" if is_trusted(workspace) else "not trusted"
    except CairnError as exc:
        state = f"unknown ({exc.code}: {exc.message})"
    return f"{state} (list: {os.path.join(config_dir(), TRUST_FILE)})"

