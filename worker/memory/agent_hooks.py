"""``cairn agents hooks AGENT``: the proposal that installs an agent's session hooks calling ``cairn hook``.

The hooks go in the agent's workspace settings (default: the uncommitted
local file, Claude Code's ``.claude/settings.local.json``; Gemini CLI has
one project file, ``.gemini/settings.json``), or with ``--user`` in the
user's own (``~/.claude/settings.json``, ``~/.gemini/settings.json``), read
and written like an absolute memory root: a link, a FIFO or a file over
1 MiB is refused with its fixed code and nothing is proposed. The file is a JSON object:
its other keys and hooks are kept in their order, cairn's command is added
to each event it acts on (docs/agents.md, *Hooks*, with the documentation
pages), and an event that already runs ``cairn hook`` is left as it is, so
proposing twice adds nothing. The proposal is an ``instruction`` proposal
with its exact before-state, shown, accepted, rejected and undone like every
memory edit (:mod:`.apply`); its id is a function of the file and its before
and after hashes.

A settings file that is not a JSON object, or whose ``hooks`` (or an
event's list under it) has another shape, is refused with
``E_CONFIG_INVALID`` and nothing is proposed.

Codex: its ``notify`` program (run after each turn with the turn's JSON as
its last argument) is read only from the user's ``$CODEX_HOME/config.toml``
(default ``~/.codex``): Codex ignores the key in a project's
``.codex/config.toml``, so the proposal needs ``--user``. It adds one line,
``notify = ["cairn", "hook", "codex"]``, among the top-level keys (before
the first table), every other byte kept; the result is parsed again and
must hold exactly the keys it held plus ``notify``, else nothing is
proposed (``E_CONFIG_INVALID``). Codex runs one notify program: a
different one already there is never replaced (``E_HOOK_NOTIFY_TAKEN``,
with the line that chains both).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import time
from typing import Any

from cairn.protocol import boundedjson, codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import Proposal, ProposalKind
from cairn.state import program as P
from cairn.worker.memory.agents import MAX_FILE, read_before
from cairn.worker.memory.apply import decisions
from cairn.worker.memory.store import PROPOSALS, MemoryStore, user_hook_files

REVIEW = "agents-hooks"
#: a command that runs ``cairn hook`` (the program by name or by path, or ``python -m cairn.server hook``)
HOOK = re.compile(r"(?:^|[\s/\"'=])cairn(?:\.server)?[\"']?\s+hook(?:\s|$)")
#: agent -> (its workspace settings files, the default first; the events cairn's hook runs on)
HOOKABLE = {"claude-code": ((".claude/settings.local.json", ".claude/settings.json"), ("SessionEnd", "PreCompact")),
            "gemini-cli": ((".gemini/settings.json",), ("SessionEnd", "PreCompress"))}
#: agents whose hook is a ``notify`` program in the user's TOML config (no workspace file counts)
NOTIFIABLE = ("codex",)
#: the order of :func:`.store.user_hook_files`
USER_FILES = ("claude-code", "gemini-cli", "codex")


def program() -> list[str]:
    """How a hook runs this very cairn: ``["cairn"]`` when ``cairn`` on ``PATH`` is this program, else its
    absolute path (a ``.venv/bin/cairn`` not on ``PATH``: a hook naming ``cairn`` would never run, silently),
    or, for a cairn run as ``python -m cairn.server`` with no script of its own, that interpreter and module.

    *This program*: the ``cairn`` script running now (``sys.argv[0]``), else
    the one beside the running interpreter (the script of this
    installation). ``cairn`` on ``PATH`` is the same program when it is that
    very file, or a script whose ``#!`` line names the running interpreter.
    """
    argv0 = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    mine = argv0 if os.path.basename(argv0) in ("cairn", "cairn.exe") and os.path.isfile(argv0) else None
    beside = os.path.join(os.path.dirname(sys.executable), "cairn") if sys.executable else ""
    if mine is None and beside and os.path.isfile(beside) and _shebang(beside) == os.path.normpath(sys.executable):
        mine = beside
    found = shutil.which("cairn")
    if found is not None:
        found = os.path.abspath(found)
        if mine is not None and _same(found, mine):
            return ["cairn"]
        if mine is None and _shebang(found) == os.path.normpath(sys.executable or "-"):
            return ["cairn"]
    if mine is not None:
        return [mine]
    return [sys.executable, "-m", "cairn.server"]


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _shebang(path: str) -> str | None:
    """The interpreter a script's ``#!`` line names (normalized), None for anything else (read: 256 bytes)."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    return os.path.normpath(words[0]) if words else None


def notify_argv() -> list[str]:
    """Codex's ``notify`` running ``cairn hook codex`` (:func:`program`)."""
    return [*program(), "hook", "codex"]


def notify_line() -> str:
    return "notify = " + json.dumps(notify_argv())


def command(agent: str) -> str:
    """The command a hook runs: ``cairn hook AGENT``, cairn by name or by path (:func:`program`)."""
    return shlex.join([*program(), "hook", agent])


def settings_file(agent: str, file: str | None, user: bool = False) -> str:
    """The settings file to install ``agent``'s hooks in: ``file`` when given, else its workspace default;
    with ``user``, the user's own settings file (an absolute path: :func:`.store.user_hook_files`)."""
    if agent not in HOOKABLE and agent not in NOTIFIABLE:
        raise CairnError(ErrorCode.USAGE, f"cairn has no session hook for {agent[:40]!r} (hooks: "
                         f"{', '.join([*HOOKABLE, *NOTIFIABLE])}); its sessions are captured by `cairn watch` or "
                         "`cairn import`")
    if user:
        if file is not None:
            raise CairnError(ErrorCode.USAGE, "--user and --file: name one settings file")
        return user_hook_files()[USER_FILES.index(agent)]
    if agent in NOTIFIABLE:
        raise CairnError(ErrorCode.USAGE, "Codex reads `notify` only from the user's config ($CODEX_HOME/config.toml, "
                         "default ~/.codex/config.toml) and ignores it in a project's .codex/config.toml: propose it "
                         "there with `cairn agents hooks codex --user`")
    files = HOOKABLE[agent][0]
    if file is None:
        return files[0]
    if file not in files:
        raise CairnError(ErrorCode.USAGE, f"{agent}'s hooks go in {' or '.join(files)}, not {file[:120]!r}")
    return file


def notify_runs_cairn(notify: Any) -> bool:
    """Whether a Codex ``notify`` value (a list of strings) runs ``cairn hook``."""
    if not isinstance(notify, list) or not notify or not all(isinstance(a, str) for a in notify):
        return False
    return (notify[0].rsplit("/", 1)[-1] == "cairn" and notify[1:2] == ["hook"]) or bool(HOOK.search(" ".join(notify)))


def notify_bytes(path: str, before: bytes | None) -> bytes | None:
    """``path`` (Codex's TOML config) with ``notify`` running ``cairn hook codex``; None when it already does."""
    import tomllib  # Codex's config only

    text = "" if before is None else before.decode("utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise CairnError(ErrorCode.CONFIG_INVALID, f"{path}: not valid TOML; nothing proposed") from None
    if "notify" in data:
        old = data["notify"]
        if notify_runs_cairn(old):
            return None
        if not isinstance(old, list) or not old or not all(isinstance(a, str) for a in old):
            raise CairnError(ErrorCode.CONFIG_INVALID, f"{path}: `notify` is not a list of strings; nothing proposed")
        chain = json.dumps(["sh", "-c", f'{command("codex")} "$1" & exec {shlex.join(old)} "$1"', "sh"])
        raise CairnError(ErrorCode.HOOK_NOTIFY_TAKEN,
                         f"{path}: `notify` already runs {shlex.join(old)[:200]}, and Codex runs one notify program; "
                         f"nothing proposed, it is left as it is. To run both, replace that line with: notify = {chain}")
    nl = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    # before the first table (a line that starts with `[` may also be inside an array or a string: each
    # place is checked by parsing the result), else at the end
    spots = [i for i, line in enumerate(lines) if line.lstrip().startswith("[")]
    line_ = notify_line()
    for i in [*spots, None]:
        if i is None:
            out = text + ("" if not text or text.endswith(("\n", "\r")) else nl) + line_ + nl
        else:
            out = "".join(lines[:i]) + line_ + nl + nl + "".join(lines[i:])
        try:
            after = tomllib.loads(out)
        except tomllib.TOMLDecodeError:
            continue
        if after.get("notify") == notify_argv() and {k: v for k, v in after.items() if k != "notify"} == data:
            encoded = out.encode("utf-8")
            if len(encoded) > MAX_FILE:
                raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"{path} would be over {MAX_FILE >> 20} MiB; "
                                 "nothing proposed")
            return encoded
    raise CairnError(ErrorCode.CONFIG_INVALID, f"{path}: no place found for a top-level `notify` key; nothing "
                     f"proposed (add `{line_}` by hand, before the first table)")


def _runs_cairn(groups: list[Any]) -> bool:
    for g in groups:
        for h in (g.get("hooks") if isinstance(g, dict) else None) or ():
            if isinstance(h, dict) and isinstance(h.get("command"), str) and HOOK.search(h["command"]):
                return True
    return False


def _jsonc_ok(text: str) -> bool:
    """Whether ``text`` is JSON once its comments are taken out (as Gemini CLI reads its settings)."""
    try:
        boundedjson.loads(boundedjson.strip_comments(text))
    except ValueError:
        return False
    return bool(text)


def hooks_bytes(agent: str, path: str, before: bytes | None) -> bytes | None:
    """``path``'s bytes with ``agent``'s hooks in it; None when every event already runs ``cairn hook``."""
    data: Any = {}
    if before is not None and before.strip():
        text = before.decode("utf-8", "replace")
        try:
            data = boundedjson.loads(before.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            if agent == "gemini-cli" and _jsonc_ok(text):
                raise CairnError(ErrorCode.CONFIG_INVALID, f"{path}: holds comments, which rewriting it would lose; "
                                 f"nothing proposed: add `{command(agent)}` to its hooks by hand") from None
            raise CairnError(ErrorCode.CONFIG_INVALID, f"{path}: not valid JSON; nothing proposed") from None
    if not isinstance(data, dict):
        raise CairnError(ErrorCode.CONFIG_INVALID, f"{path}: not a JSON object; nothing proposed")
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise CairnError(ErrorCode.CONFIG_INVALID, f"{path}: `hooks` is not an object; nothing proposed")
    added = False
    for event in HOOKABLE[agent][1]:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise CairnError(ErrorCode.CONFIG_INVALID, f"{path}: `hooks.{event}` is not a list; nothing proposed")
        if _runs_cairn(groups):
            continue
        entry: dict[str, Any] = {"type": "command", "command": command(agent)}
        if agent == "gemini-cli":
            entry = {"name": "cairn", **entry}
        groups.append({"hooks": [entry]})
        added = True
    if not added:
        return None
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if before is not None and b"\r\n" in before:
        text = text.replace("\n", "\r\n")
    out = text.encode("utf-8")
    if len(out) > MAX_FILE:
        raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"{path} would be over {MAX_FILE >> 20} MiB; nothing proposed")
    return out


def _sha(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def propose(ms: MemoryStore, agent: str, path: str) -> tuple[Proposal | None, bool]:
    """The proposal installing ``agent``'s hooks in ``path``: (proposal, newly made?); (None, False) when
    the hooks are there already."""
    # fingerprints import the memory model (yaml): only a proposal needs them (cold start of the status counts)
    from cairn.worker.memory.fingerprints import fingerprint

    before = read_before(ms, path)
    if before is not None:
        try:
            before.decode("utf-8")
        except UnicodeDecodeError:
            raise CairnError(ErrorCode.MEMORY_NOT_TEXT, f"{path}: not UTF-8 text") from None
    after = notify_bytes(path, before) if agent in NOTIFIABLE else hooks_bytes(agent, path, before)
    if after is None:
        return None, False
    edit, ops = ms.edit_ops(path, before, after)
    seed = _sha(f"{REVIEW}\0{path}\0{edit.before}\0{edit.after}")
    for n in range(1, 1000):
        pid = "p" + _sha(f"{seed}\0{n}")[:12]
        known = ms.read_record(f"{PROPOSALS}/{pid}", Proposal)
        if known is None:
            break
        if not decisions(ms, pid):
            return known, False
    else:  # pragma: no cover - a thousand decided proposals of one file state
        raise CairnError(ErrorCode.PROPOSAL_STATE, f"{path}: too many decided hook proposals of this file state")
    if agent in NOTIFIABLE:
        title = f"Run cairn's turn hook from {path} for {agent}"
        summary = (f"{agent} runs `{command(agent)}` after each turn (`notify`): each completed turn is captured "
                   "as it ends; no seal (the session goes on: `cairn watch` seals it once quiet)")
    else:
        events = " and ".join(HOOKABLE[agent][1])
        title = f"Run cairn's session hooks from {path} for {agent}"
        summary = (f"{agent} runs `{command(agent)}` on {events}: each session's turns are captured "
                   "and sealed when it ends or is compacted")
    p = Proposal(id=pid, review=REVIEW, kind=ProposalKind.INSTRUCTION, title=title,
                 summary=summary, target=path, files=(edit,),
                 index=(), evidence=(), fingerprint=fingerprint(ProposalKind.INSTRUCTION, path, [REVIEW, agent]),
                 created=time.time())
    res = ms.run([*ops, P.EnsureDir(PROPOSALS), P.Link(f"{PROPOSALS}/{pid}", codec.encode(p), optional=True)])
    for r in res.results:
        if r.status.value == "failed":
            raise CairnError(r.code or ErrorCode.IO_FAILED, r.message)
    return p, True
