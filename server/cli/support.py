"""What every CLI command module shares: the command record, exit codes, job calls, output helpers.

Contract: this module imports no other module of :mod:`server.cli`, so the
command modules (``journal``, ``memory``, ``run``, ``workspace``…) depend
only on it, the table (``commands``) depends on them and ``main`` on the
table: the import graph is a line, never a cycle.

Exit codes (the README's command table documents them):

* 0 success (also ``cairn run`` whose review was left to another process);
* 1 the command ran and found problems (violations, failed digests);
* 2 bad usage or a fixed error: ``cairn: E_…: message`` on stderr;
* 3 an unexpected internal error: ``cairn: E_INTERNAL: …`` on stderr, one
  line (the traceback only with ``CAIRN_DEBUG=1``);
* 130 interrupted;
* 141 the reader of stdout went away (``cairn journal | head``): the output
  stops there quietly, with the status a shell gives a tool SIGPIPE ends.

Untrusted text (journal notes and titles, proposal titles and diffs, file
and session names, error messages) is printed through :func:`printable`
(:func:`protocol.text.printable`): a control character shows as ``\x1b``,
it never reaches the terminal. JSON output escapes DEL and C1 controls too
(``json`` escapes the C0 ones).

Commands run their jobs in this process (:mod:`server.scheduler.inprocess`)
through the job functions the workers run, under the same claims: a CLI
command and a background worker can never both own one piece of work.

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from cairn.protocol.text import printable
from cairn.server.scheduler import inprocess
from cairn.server.scheduler.inprocess import load_config, response_error

if TYPE_CHECKING:
    from cairn.protocol.import_results import MalformedLine
    from cairn.protocol.settings import Settings

__all__ = ["load_config", "printable", "response_error"]  # re-exported for the command modules

T = TypeVar("T")

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141  # 128 + SIGPIPE: stdout's reader went away (`cairn journal | head -1`)

Handler = Callable[[argparse.Namespace], int]
Setup = Callable[[argparse.ArgumentParser], None]


def no_setup(p: argparse.ArgumentParser) -> None:
    """The setup of a command that takes only the common ``-w/--workspace``."""


class Command(NamedTuple):
    """One row of the command table: its help line, its argparse setup, its handler."""

    help: str
    setup: Setup
    handler: Handler


#: DEL and C1 controls, which ``json.dumps(ensure_ascii=False)`` leaves raw, as JSON escapes
_JSON_CONTROLS = {n: f"\\u{n:04x}" for n in range(0x7F, 0xA0)}


def emit_json(obj: object) -> None:
    """``obj`` as indented JSON on stdout; a record (:mod:`protocol.results`) as its fields."""
    if hasattr(type(obj), "RECORD_KIND"):
        from cairn.protocol.codec import to_body

        obj = to_body(obj)
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False).translate(_JSON_CONTROLS)
    sys.stdout.write(text + "\n")


def workspace_path(ns: argparse.Namespace) -> str:
    return os.path.abspath(ns.workspace)


def indexes_over_budget(ws: str, settings: Settings | None = None) -> list[dict[str, Any]]:
    """The memory indexes of the workspace already past their budget (what agents load), as ``cairn verify``
    reports them: read here, in the command's process (``cairn doctor``, ``cairn memory``). ``settings``: the
    workspace's, loaded when not given."""
    from pathlib import Path  # cold start: a listing of memory only

    from cairn.protocol.errors import CairnError
    from cairn.worker.memory import model
    from cairn.worker.settings import config

    settings = settings if settings is not None else config.from_request(load_config(ws))
    out: list[dict[str, Any]] = []
    for rel in dict.fromkeys([os.path.join(".agents", "memory"), *settings.memoryRoots]):
        if os.path.isabs(rel) or not os.path.isdir(os.path.join(ws, rel)):
            continue
        try:
            snap = model.read_root(Path(ws, rel), workspace=ws)
        except CairnError:
            continue  # a root that cannot be read is reported by what reads it
        past = model.over_budget(snap.index, model.IndexBudget.of(settings))
        if past is not None:
            out.append({"index": os.path.join(rel, model.INDEX_NAME), **past})
    return out


def refused_why(code: object) -> str:
    """Why a ``*.md`` of a memory root was not read, said to the person who can fix it."""
    from cairn.protocol.errors import ErrorCode  # cold start

    return {ErrorCode.PATH_SYMLINK: "a symlink: never followed, so cairn neither verifies nor reviews it (an agent that follows links may still load it)",
            ErrorCode.PATH_NOT_REGULAR: "not a regular file (a FIFO, a device or a folder): never read",
            ErrorCode.PATH_INVALID_NAME: "a name cairn does not read (only ASCII letters, digits, '.', '_' and "
                                         "'-'): never read; rename the file",
            ErrorCode.RECORD_TOO_LARGE: "too large to read: never read"}.get(
        code, f"not read ({code}): unreadable")  # type: ignore[call-overload]


def budget_line(o: dict[str, Any]) -> str:
    """One index past its budget, said with what agents miss and how to make room."""
    past = []
    if o.get("entriesPast"):
        past.append(f"{o['entriesPast']} entr{'y' if o['entriesPast'] == 1 else 'ies'} past line {o['maxLines']}")
    if o["bytes"] > o["maxBytes"]:
        past.append(f"{o['bytes']} bytes, past the {o['maxBytes']}")
    return (f"{o['index']}: past its budget ({'; '.join(past)}): agents load the first {o['maxLines']} lines, at "
            f"most {o['maxBytes']} bytes, and miss the rest; merge or retire topics (`cairn memory retire TOPIC`) "
            "or raise index_max_lines / index_max_bytes")


def json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def listing(ns: argparse.Namespace, rows: list[dict[str, Any]], empty: str,
            line: Callable[[dict[str, Any]], str]) -> int:
    """Print ``rows``: a JSON array with ``--json``, else one line each (``empty`` when none)."""
    if ns.json:
        emit_json(rows)
        return EXIT_OK
    if not rows:
        print(empty)
    for r in rows:
        print(line(r))
    return EXIT_OK


def report_malformed(malformed: tuple[MalformedLine, ...]) -> None:
    """Lines an import left out (the rest of each file was imported): one stderr line each."""
    for bad in malformed:  # as every error line reads: ``cairn: E_CODE: file: reason``
        sys.stderr.write(f"cairn: {bad.code}: {printable(bad.file)}: {printable(bad.message)}\n")


def warn_skipped(skipped: dict[str, int] | None) -> None:
    """A review's notes left out because they cannot be written to a memory file: one stderr line per code."""
    from cairn.protocol.errors import ErrorCode  # cold start

    for code, n in sorted((skipped or {}).items()):
        why = (INDEX_FULL_HINT if code == str(ErrorCode.INDEX_FULL)
               else "they cannot be written to a memory file; the other notes were reviewed")
        sys.stderr.write(f"cairn: warning: {n} note(s) left out of the review ({code}): {why}\n")


#: why a note was left out with ``E_INDEX_FULL``, and what to do
INDEX_FULL_HINT = ("MEMORY.md has no room within its budget (index_max_lines, index_max_bytes) and memory has no "
                   "topic to file them under; retire or merge entries, or raise the budget, then remember them again")


def call(ns: argparse.Namespace, job: str, job_args: Any = None) -> Any:
    """Run ``job`` in this process and return its response, whatever its status.

    ``job_args``: the job's argument record (:mod:`protocol.results`), or none.
    """
    return inprocess.call(workspace_path(ns), job, job_args)


def run_job(ns: argparse.Namespace, job: str, job_args: Any = None) -> Any:
    """Run ``job`` in this process; a non-ok response raises its :class:`CairnError`."""
    resp = call(ns, job, job_args)
    if resp.status != "ok":
        raise response_error(resp)
    return resp


def run_result(ns: argparse.Namespace, job: str, result: type[T], job_args: Any = None) -> T:
    """:func:`run_job`, and its result record (``result``, the job's in ``protocol.results.RESULTS``)."""
    from cairn.protocol.results import read

    return read(result, run_job(ns, job, job_args).result, job=job)


#: the folders of a workspace cairn writes in, each with what it keeps there
_WRITTEN = (((".cairn", "state"), "its private state (.cairn/state)"), ((".agents", "memory"), "memory (.agents/memory)"))


def unwritable(ws: str) -> str | None:
    """The first folder of the workspace cairn writes in and cannot (a read-only file system, no write
    permission), said with what it keeps there: the private state (``.cairn/state``, or the deepest of its
    folders already made), then the memory folder. None when each can be written (the error is elsewhere)."""
    for chain, what in _WRITTEN:
        here = ws
        for part in chain:  # the deepest folder of the chain that exists is where the next write goes
            below = os.path.join(here, part)
            if not os.path.isdir(below) or os.path.islink(below):
                break
            here = below
        if os.path.isdir(here) and not os.access(here, os.W_OK):
            return f"{here}, where cairn keeps {what}"
    return None
