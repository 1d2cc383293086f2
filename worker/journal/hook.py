"""``cairn hook AGENT``: a coding agent's session hook, read and acted on (import what is new, seal).

The agent runs ``cairn hook AGENT`` with a JSON payload on stdin when a
session ends or its context is compacted (docs/agents.md, *Hooks*, records
each agent's events and fields and the page they come from). :func:`parse`
checks the payload and maps its event to a :class:`Trigger`;
:func:`check_transcript` refuses a transcript path outside the agent's
store and the workspace, a link, a FIFO or a file over the import bound,
before anything is opened in the journal; :func:`run` imports the file
(``import_paths``, under the same session claims as every writer) and seals
each of its sessions with the trigger. Nothing here writes to a terminal:
the command (:mod:`server.cli.hook`) reports.

Trigger of each event: Claude Code ``SessionEnd`` is ``clear`` when its
``reason`` is ``clear``, else ``session-end`` (``logout``,
``prompt_input_exit``, ``other`` and any reason added later);
``PreCompact`` is ``compaction``. Gemini CLI the same with ``SessionEnd``
and ``PreCompress``. The session's last answered turn (its tail) is admitted
on ``session-end`` and ``clear`` and on a ``manual`` compaction; an ``auto``
compaction can come in the middle of a turn, so only turns already closed
are captured then.

Codex has no session-end event: its ``notify`` program runs after every
turn with one JSON argument (``agent-turn-complete``: ``thread-id``,
``turn-id``, ``cwd``, the turn's messages), which names no file.
:func:`parse_notify` checks that argument, :func:`find_rollout` finds the
thread's rollout under ``$CODEX_HOME/sessions/`` (``YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``;
the flat older layout too), and :func:`run` imports what is new in it with no
seal (trigger ``None``): the session goes on, only its closed turns are
captured (a turn closes on ``task_complete``); ``cairn watch`` seals it once
quiet.
"""

from __future__ import annotations

import math
import os
import re
import stat
import time
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import Trigger
from cairn.state.layout import too_wide

#: agents whose hooks cairn understands -> (their session format, the event that ends, the one that compacts)
AGENTS = {"claude-code": ("claude-code", "SessionEnd", "PreCompact"),
          "gemini-cli": ("gemini-cli", "SessionEnd", "PreCompress")}
#: agents whose hook passes its payload as the last argument, after each turn (Codex's ``notify``) -> format
NOTIFY = {"codex": "codex"}
#: the one ``notify`` payload cairn acts on
TURN_COMPLETE = "agent-turn-complete"
#: largest payload read from stdin (bytes)
MAX_PAYLOAD = 64 * 1024
#: largest ``notify`` argument (bytes): it carries the turn's messages
MAX_NOTIFY = 1024 * 1024
#: a Codex thread id (a UUID): nothing that could name a folder or a pattern
_THREAD = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}\Z")
#: largest transcript a hook imports (bytes); a larger one is left to ``cairn import``
MAX_TRANSCRIPT = 256 * 1024 * 1024


@attrs.frozen
class Payload:
    agent: str
    session_id: str
    transcript: str
    cwd: str | None
    event: str
    trigger: Trigger | None  # None: import only, no seal (Codex's turn notification)
    ended: bool  # admit each session's tail (the file is sealed)


def _bad(message: str) -> CairnError:
    return CairnError(ErrorCode.HOOK_PAYLOAD_INVALID, message)


def parse(agent: str, raw: bytes) -> Payload:
    """The payload ``raw`` of ``agent``'s hook, checked; raises ``E_HOOK_PAYLOAD_INVALID`` (never its text)."""
    if agent not in AGENTS:
        raise CairnError(ErrorCode.USAGE, f"no hook known for {agent[:40]!r}; known: {', '.join(AGENTS)}")
    if len(raw) > MAX_PAYLOAD:
        raise _bad(f"payload over {MAX_PAYLOAD} bytes")
    try:
        data = boundedjson.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _bad("payload is not JSON") from None
    if not isinstance(data, dict):
        raise _bad("payload is not a JSON object")

    def text(key: str, required: bool = True) -> str | None:
        v = data.get(key)
        if v is None and not required:
            return None
        if not isinstance(v, str) or not v or len(v) > 4096 or "\x00" in v:
            raise _bad(f"payload field {key!r} missing or not a string")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (JSON allows "\ud800"): no file or id is named so
            raise _bad(f"payload field {key!r} is not valid Unicode") from None
        return v

    session_id, transcript, event = text("session_id"), text("transcript_path"), text("hook_event_name")
    cwd = text("cwd", required=False)
    assert session_id is not None and transcript is not None and event is not None
    _, ends, compacts = AGENTS[agent]
    if event == ends:
        reason = data.get("reason", data.get("trigger"))
        trigger = Trigger.CLEAR if reason == "clear" else Trigger.SESSION_END
        ended = True
    elif event == compacts:
        trigger, ended = Trigger.COMPACTION, data.get("trigger") == "manual"
    else:
        raise _bad(f"event {event[:40]!r} is not one cairn acts on ({ends}, {compacts})")
    if not os.path.isabs(transcript):
        raise _bad("payload field 'transcript_path' is not an absolute path")
    if any(len(part.encode("utf-8")) > 255 for part in transcript.split("/")):  # NAME_MAX: no file is named so
        raise _bad("payload field 'transcript_path' names a file no file system holds (a name over 255 bytes)")
    return Payload(agent, session_id, transcript, cwd, event, trigger, ended)


def parse_notify(agent: str, raw: bytes) -> Payload:
    """The argument ``raw`` of ``agent``'s ``notify`` program, checked (its ``transcript`` still empty: see
    :func:`find_rollout`); raises ``E_HOOK_PAYLOAD_INVALID`` (never its text)."""
    if agent not in NOTIFY:
        raise CairnError(ErrorCode.USAGE, f"no notify payload known for {agent[:40]!r}; known: {', '.join(NOTIFY)}")
    if len(raw) > MAX_NOTIFY:
        raise _bad(f"payload over {MAX_NOTIFY >> 20} MiB")
    try:
        data = boundedjson.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _bad("payload is not JSON") from None
    if not isinstance(data, dict):
        raise _bad("payload is not a JSON object")
    kind = data.get("type")
    if kind != TURN_COMPLETE:
        raise _bad(f"payload type {str(kind)[:40]!r} is not one cairn acts on ({TURN_COMPLETE})")
    thread = data.get("thread-id")
    if not isinstance(thread, str) or not _THREAD.match(thread):
        raise _bad("payload field 'thread-id' missing or not a thread id")
    turn, cwd = data.get("turn-id"), data.get("cwd")
    if turn is not None and not isinstance(turn, str):
        raise _bad("payload field 'turn-id' is not a string")
    if cwd is not None and (not isinstance(cwd, str) or not cwd or len(cwd) > 4096 or "\x00" in cwd
                            or not os.path.isabs(cwd)):
        raise _bad("payload field 'cwd' is not an absolute path")
    return Payload(agent, thread, "", cwd, TURN_COMPLETE, None, False)


def codex_home(home: str, env: Mapping[str, str]) -> str:
    base = env.get("CODEX_HOME", "").strip()
    return os.path.expanduser(base) if base else os.path.join(home, ".codex")


def _v7_days(thread: str) -> list[str]:
    """The local days (``YYYY/MM/DD``) around the time a UUIDv7 thread id carries, where its rollout likely is."""
    digits = thread.replace("-", "")
    if len(digits) != 32 or digits[12] != "7":
        return []
    try:
        start = int(digits[:12], 16) / 1000
        days = [time.localtime(start + shift) for shift in (0, -86400, 86400)]
    except (ValueError, OverflowError, OSError):
        return []
    return [f"{d.tm_year:04d}/{d.tm_mon:02d}/{d.tm_mday:02d}" for d in days]


def _subfolders(folder: str) -> list[str]:
    """``folder``'s subfolders with all-digit names, newest (largest) first; links are not followed."""
    try:
        with os.scandir(folder) as it:
            names = [e.name for e in it if e.name.isdigit() and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return sorted(names, reverse=True)


def _day_folders(root: str, thread: str) -> Iterator[str]:
    for day in _v7_days(thread):
        yield os.path.join(root, *day.split("/"))
    for year in _subfolders(root):
        for month in _subfolders(os.path.join(root, year)):
            for day in _subfolders(os.path.join(root, year, month)):
                yield os.path.join(root, year, month, day)
    yield root  # the older flat layout


def find_rollout(p: Payload, home: str, env: Mapping[str, str]) -> Payload:
    """``p`` with the path of its thread's rollout under ``$CODEX_HOME/sessions/`` (the file name ends with the
    thread id); raises ``E_NOT_FOUND`` when there is none. The path is checked by :func:`check_transcript`."""
    root = os.path.join(codex_home(home, env), "sessions")
    suffix = f"-{p.session_id}.jsonl"
    seen: set[str] = set()
    for folder in _day_folders(root, p.session_id):
        if folder in seen:
            continue
        seen.add(folder)
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if e.name.startswith("rollout-") and e.name.endswith(suffix):
                        return attrs.evolve(p, transcript=e.path)
        except OSError:
            continue
    raise CairnError(ErrorCode.NOT_FOUND, "no Codex rollout of this thread under the sessions folder of "
                     "$CODEX_HOME (default ~/.codex); nothing read")


def stores(agent: str, home: str, env: Mapping[str, str]) -> list[str]:
    """The folders where ``agent`` keeps its transcripts."""
    if agent == "claude-code":
        base = env.get("CLAUDE_CONFIG_DIR", "").strip()
        return [os.path.join(os.path.expanduser(base) if base else os.path.join(home, ".claude"), "projects")]
    if agent == "gemini-cli":
        base = env.get("GEMINI_CLI_HOME", "").strip()
        return [os.path.join(os.path.expanduser(base) if base else home, ".gemini", "tmp")]
    if agent == "codex":
        return [os.path.join(codex_home(home, env), "sessions")]
    return []


def _inside(path: str, folder: str) -> bool:
    folder = os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


def check_transcript(p: Payload, workspace: str, home: str, env: Mapping[str, str]) -> str:
    """The transcript's path, once it is a regular file inside the agent's store or the workspace, within bounds."""
    folder, name = os.path.split(p.transcript)
    real = os.path.join(os.path.realpath(folder), name)
    if not any(_inside(real, f) for f in [workspace, *stores(p.agent, home, env)]):
        raise CairnError(ErrorCode.HOOK_TRANSCRIPT_OUTSIDE,
                         "the transcript is neither in the agent's session store nor in the workspace; nothing read")
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        raise CairnError(ErrorCode.NOT_FOUND, "the transcript does not exist") from None
    if stat.S_ISLNK(st.st_mode):
        raise CairnError(ErrorCode.PATH_SYMLINK, "the transcript is a symlink; not followed")
    if not stat.S_ISREG(st.st_mode):
        raise CairnError(ErrorCode.PATH_NOT_REGULAR, "the transcript is not a regular file; not read")
    if st.st_size > MAX_TRANSCRIPT:
        raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"the transcript is over {MAX_TRANSCRIPT >> 20} MiB; "
                         "import it with `cairn import`")
    return real


def candidate(p: Payload, given: str | None, here: str) -> str:
    """The folder the hook's workspace is decided from: ``-w`` when the hook's command names one, else the
    payload's ``cwd`` (an absolute, existing folder), else (a payload without one) the folder the hook runs
    in. The file system root or the home folder is refused (``E_WORKSPACE_INVALID``) before anything is read."""
    if given is not None:
        where = os.path.abspath(given)
        if not os.path.isdir(where):
            raise CairnError(ErrorCode.WORKSPACE_INVALID, "the workspace -w names is not a folder; nothing written")
    elif p.cwd is not None:
        if not os.path.isabs(p.cwd) or not os.path.isdir(p.cwd):
            raise _bad("payload field 'cwd' is not an absolute path to an existing folder")
        where = os.path.normpath(p.cwd)
    else:
        where = os.path.abspath(here)
    if too_wide(where):
        raise CairnError(ErrorCode.WORKSPACE_INVALID, f"{where} is the file system root or the home folder, never a "
                         "workspace; nothing written (start the agent in a project folder, or name one with -w)")
    return where


#: bytes of a transcript's head searched for the folder its session records (its first ``cwd``)
CWD_HEAD = 1 << 20
_CWD = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _head(path: str, size: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return os.read(fd, size) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def recorded_cwd(p: Payload, path: str, near: str, home: str, env: Mapping[str, str]) -> str | None:
    """The folder the session of ``path`` records as its own, or None when the file names none: Claude Code's
    and Codex's first ``cwd`` (a record's field, or the rollout's ``session_meta``); Gemini CLI's project root
    (its project folder's ``.project_root``, ``projects.json``, or the ``sha256`` of ``near`` or of a folder
    above it, which the older layout names the project folder by)."""
    if p.agent == "gemini-cli":
        store = next((s for s in stores(p.agent, home, env) if _inside(path, s)), None)
        if store is None:
            return None
        # cold start: only for a Gemini CLI session
        from cairn.worker.ingest.sources.probe import GeminiProjects

        known, folder = [], near
        while True:
            known.append(folder)
            if os.path.dirname(folder) == folder:
                break
            folder = os.path.dirname(folder)
        return GeminiProjects(os.path.dirname(os.path.realpath(store)), known).workspace(os.path.dirname(path))
    match = _CWD.search(_head(path, CWD_HEAD))
    if not match:
        return None
    try:
        value = boundedjson.loads('"' + match.group(1).decode("utf-8") + '"')
    except (UnicodeDecodeError, ValueError):
        return None
    return os.path.normpath(value) if isinstance(value, str) and os.path.isabs(value) and "\x00" not in value \
        else None


def _at_or_under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it, by name or once links are resolved."""
    def under(a: str, b: str) -> bool:
        return os.path.commonpath([a, b]) == b

    return under(os.path.normpath(path), os.path.normpath(folder)) or \
        under(os.path.realpath(path), os.path.realpath(folder))


def workspace_of(p: Payload, path: str, where: str, given: bool, home: str, env: Mapping[str, str]) -> str:
    """The workspace a checked transcript ``path`` is imported into, from the folder :func:`candidate` gave.

    A session is imported only into the workspace it belongs to: the folder it records (:func:`recorded_cwd`)
    is ``where`` or a folder inside it. When ``where`` is inside the recorded folder instead (the agent moved
    into a subfolder of the folder it started in, and the payload's ``cwd`` says where it is now) the
    recorded folder is the workspace, unless ``-w`` named ``where`` (``given``) or it is the file system root
    or the home folder. A session that records no folder belongs to ``where`` when its file is inside it,
    or (Claude Code) when its project folder is the one Claude Code names after ``where``. Anything else is
    ``E_HOOK_TRANSCRIPT_OUTSIDE``: nothing is written."""
    recorded = recorded_cwd(p, path, where, home, env)
    if recorded is None:
        from cairn.worker.ingest.sources.probe import claude_folder  # cold start: a session naming none

        if _inside(path, where) or (p.agent == "claude-code" and
                                    os.path.basename(os.path.dirname(path)) == claude_folder(where)):
            return where
        raise CairnError(ErrorCode.HOOK_TRANSCRIPT_OUTSIDE, "the session records no folder and its file is "
                         "not the workspace's; nothing imported (import it with `cairn import -w DIR`)")
    if _at_or_under(recorded, where):
        return where
    if not given and _at_or_under(where, recorded) and os.path.isdir(recorded):
        if too_wide(recorded):
            raise CairnError(ErrorCode.WORKSPACE_INVALID, f"the session was started in {recorded}, the file system "
                             "root or the home folder, never a workspace; nothing written")
        return recorded
    raise CairnError(ErrorCode.HOOK_TRANSCRIPT_OUTSIDE, "the session was recorded in another folder than the "
                     "workspace (its own cwd is neither the workspace nor inside it); nothing imported")


def run(p: Payload, path: str, workspace: str, config: dict[str, Any]) -> dict[str, Any]:
    """Import ``path`` (links refused) and seal each of its sessions with the payload's trigger (none: no seal)."""
    from cairn.worker.journal.capture import policy_from_config, seal_session  # cold start: after checks
    from cairn.worker.journal.imports import import_paths  # cold start: only a checked payload gets here
    from cairn.worker.journal.store import Journal  # cold start: only a checked payload opens the journal

    fmt = NOTIFY[p.agent] if p.agent in NOTIFY else AGENTS[p.agent][0]
    trigger = p.trigger
    with Journal(workspace) as j:
        tally = import_paths(j, [path], fmt, policy_from_config(config), follow_symlinks=False,
                             sealed_before=math.inf if p.ended else None)
        sealed = [] if trigger is None else \
            [c for c in (seal_session(j, s, trigger) for s in dict.fromkeys(tally.session_ids)) if c]
    return {"trigger": None if trigger is None else str(trigger), "captured": tally.captured, "skipped": tally.skipped,
            "sessions": list(dict.fromkeys(tally.session_ids)), "sealed": sealed,
            "malformed": len(tally.malformed)}
