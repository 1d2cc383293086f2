"""``cairn mcp``: a Model Context Protocol endpoint (stdio) for coding agents.

Contract. One workspace per server (``-w DIR``), the official ``mcp`` SDK's
:class:`~mcp.server.mcpserver.MCPServer` on stdin/stdout. Every tool runs the
same worker job as the CLI, in this process and under the same claims
(:func:`server.scheduler.inprocess.call`), with the same settings (the user's config
and a trusted workspace's file):

* ``remember(text, type?)``: as ``cairn remember``: the text becomes a
  captured turn of its own ``remember`` session and a focused review turns it
  into a proposal the user reviews (``cairn proposals``, the editors'
  cockpit), applied at once only in ``auto`` mode. An agent can therefore
  record a memory on the user's request, never write memory behind the
  user's back.
* ``journal_search(query?, type?, since?, until?, limit?)``: public digests
  (the journal: already redacted) whose notes match, newest session first
  (``since``/``until`` bound the day the session was held, else the day it
  was imported), each with its turn ids and session times.
* ``memory_list()``: the memory topics of every memory root, the user's own
  (``memory_roots``) too (file, name, type, description, and ``uri``: the
  resource that reads it), and the rules files (``instructions``: ``AGENTS.md``
  and the configured instruction files at the top level, each with its ``uri``).

Resources, all read-only: ``cairn://memory/index`` (the workspace's
``MEMORY.md``, then each other memory root's index under a comment line
naming the root), ``cairn://memory/topics`` (the topic list as JSON),
``cairn://memory/topic/{name}`` (one topic file: the first memory root
whose folder holds that name, the workspace's first),
``cairn://memory/roots/{n}/{name}`` (one topic file of root ``n``, 0 the
workspace's) and ``cairn://instructions/AGENTS.md`` (``{name}``: another
configured instruction file at the top level), read as ``cairn agents``
reads it (:class:`worker.memory.agents.Files`: a link only to another
instruction file of the workspace, one hop; no FIFO, at most 1 MiB).

The file system root and the home folder itself are not served
(:func:`~cairn.state.layout.too_wide`, the language server's rule): ``cairn mcp`` refuses them
with ``E_WORKSPACE_INVALID`` before the server starts, nothing written.

Failures are tool errors whose text is ``Error executing tool NAME: E_CODE:
message`` (fixed codes, never evidence): arguments that fail the tool's
schema (a string where ``limit`` wants an integer, a number for ``text``) are
``E_USAGE`` naming the fields, an unknown tool ``E_METHOD_UNKNOWN``, anything
unexpected ``E_INTERNAL``. A request whose params fail the protocol's own
schema, so that no tool can be called (``tools/call`` with ``arguments`` that
is no object, no ``name`` or one that is no string, no params at all) stays
JSON-RPC's ``-32602``, its message ``E_USAGE: METHOD: FIELD: problem`` and its
``data`` ``{"code": "E_USAGE"}`` as over LSP, where the SDK answered a bare
``Invalid request parameters`` (:func:`_malformed`). A line the SDK's transport cannot read at all (params that
is an array or a string, a line that is no JSON) is answered alike (``-32602``, ``-32700``, ``-32600``;
:func:`_refusal`), where the SDK answered nothing and the client waited. A resource read fails alike with ``Error reading
resource URI: E_CODE: message`` (a symlinked topic ``E_PATH_SYMLINK``, a FIFO
``E_PATH_NOT_REGULAR``, one over 4 MiB ``E_RECORD_TOO_LARGE``, an unknown one
``E_NOT_FOUND``). The server logs to stderr at WARNING, one plain line per
failure with its code and the tool or resource name, never a tool's
arguments and never a traceback (:class:`_Server`). ``mcp`` is imported only
by this module, which only ``cairn mcp`` imports (:mod:`server.cli.mcp`,
once it found the extra), so no other command pays for it.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import os
import re
import sys
from typing import Any, TypeVar

from cairn.protocol.codec import to_body
from cairn.protocol.errors import CairnError, ErrorCode, os_error
from cairn.protocol.results import RememberArgs, RememberResult, read
from cairn.protocol.transcript import utc_instant
from cairn.server.scheduler.inprocess import call, response_error
from cairn.state.fsdir import PinnedDir
from cairn.state.layout import too_wide
from cairn.worker.memory.remember import TYPES, check_request
from cairn.worker.memory.store import DEFAULT_ROOT
from cairn.worker.redaction.redact import RedactingFilter
from mcp import types as mcp_types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
)
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from pydantic import StrictInt, ValidationError

log = logging.getLogger("cairn.server.mcp")
_CODE = re.compile(r"\b(E_[A-Z_]+): ")
T = TypeVar("T")
SEARCH_LIMIT = 50  # digests per journal_search answer at most
NAME = "cairn"
INSTRUCTIONS = (
    "cairn keeps this project's curated memory (.agents/memory, AGENTS.md). When the user asks you to "
    "remember something, call `remember` with their words: it becomes a proposal the user accepts or "
    "rejects (applied at once only in the user's auto mode). Use `journal_search` and `memory_list` "
    "to consult what was learned before; the project's rules are in AGENTS.md (the resource "
    "cairn://instructions/AGENTS.md)."
)


def _run(ns: argparse.Namespace, job: str, args: Any = None) -> dict[str, Any]:
    """A worker job's result; its failure as a :class:`CairnError`."""
    resp = call(os.path.abspath(ns.workspace), job, args)
    if resp.status != "ok":
        raise response_error(resp)
    result: dict[str, Any] = resp.result
    return result


def _job(ns: argparse.Namespace, job: str, args: Any = None) -> dict[str, Any]:
    """The result of ``job`` (``args``: its argument record, or none) as the worker answered it."""
    try:
        return _run(ns, job, args)
    except CairnError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from None


def _usage(exc: Any, *, under: str | None = None) -> str:
    """A pydantic validation error as field names and what each expects (never the values sent); ``under``:
    a first name left out of each field (``params``, which every field of a request's own is under)."""

    def field(loc: tuple[Any, ...]) -> str:
        names = [str(p) for p in loc]
        if under is not None and len(names) > 1 and names[0] == under:
            names = names[1:]
        return ".".join(names) or "arguments"

    problems = sorted({f"{field(err['loc'])}: {err['msg']}"
                       for err in exc.errors(include_url=False, include_input=False)})
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return "; ".join(p[:160] for p in problems[:5]) + more


def _cause(exc: BaseException) -> BaseException:
    """What the SDK wrapped: the first :class:`CairnError` or ``OSError`` down the causes, else the last cause."""
    for _ in range(10):
        if isinstance(exc, (CairnError, OSError)) or exc.__cause__ is None:
            break
        exc = exc.__cause__
    return exc


async def _malformed(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware (the SDK's ``MCPServer(middleware=...)``, around every request): params that fail
    the protocol's schema for their method (checked before any handler: a ``tools/call`` whose
    ``arguments`` is no object never reaches :meth:`_Server.call_tool`) are ``E_USAGE`` naming the fields.
    JSON-RPC's ``-32602`` stays (clients act on it); the fixed code leads the message and is ``data.code``,
    as over LSP. Only errors about the params are taken: a result that fails its own schema is a fault of
    this server, left to the SDK."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        if ctx.request_id is None or not errors or any(err["loc"][:1] != ("params",) for err in errors):
            raise
        method = str(ctx.method)[:60]
        log.warning("%s refused (%s)", method, ErrorCode.USAGE)
        raise MCPError(INVALID_PARAMS, f"{ErrorCode.USAGE}: {method}: {_usage(exc, under='params')}",
                       {"code": str(ErrorCode.USAGE)}) from None


def _refusal(exc: Exception) -> mcp_types.JSONRPCError | None:
    """The answer to a line the SDK's transport could not read as a JSON-RPC message (it hands the reader an
    exception and answers nothing, so the client would wait for ever): a line that is no JSON ``-32700`` (id
    null, as JSON-RPC says); a request (an object with an ``id`` and a ``method``) whose ``params`` is no object
    ``-32602``, anything else with an ``id`` ``-32600``; each message ``E_USAGE: ...`` with ``data`` ``{"code":
    "E_USAGE"}``. None for what has no id to answer (a malformed notification): it is dropped, logged."""
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors(include_url=False)
    data = {"code": str(ErrorCode.USAGE)}
    if any(e["type"] == "json_invalid" for e in errors):
        return mcp_types.JSONRPCError(jsonrpc="2.0", id=None, error=mcp_types.ErrorData(
            code=PARSE_ERROR, message=f"{ErrorCode.USAGE}: the message is not JSON", data=data))
    whole: dict[str, Any] = next((e["input"] for e in errors if isinstance(e.get("input"), dict)), {})
    rid = whole.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        return None
    method = whole.get("method")
    if isinstance(method, str) and "params" in whole and not isinstance(whole["params"], dict):
        code, message = INVALID_PARAMS, f"{ErrorCode.USAGE}: {method[:60]}: params: an object is expected"
    else:
        code, message = INVALID_REQUEST, f"{ErrorCode.USAGE}: not a JSON-RPC 2.0 request (jsonrpc, id, method)"
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=rid, error=mcp_types.ErrorData(code=code, message=message,
                                                                                    data=data))


class _Answering:
    """The transport's read stream, with every line it could not read answered (:func:`_refusal`) on the
    write stream instead of being passed on (the SDK would only log it at debug level)."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner, self._write = inner, write

    def __getattr__(self, name: str) -> Any:  # ``last_context`` and whatever else the SDK may look for
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            answer = _refusal(item)
            log.warning("a message refused (%s)", ErrorCode.USAGE)
            if answer is not None:
                await self._write.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> Any:
        import anyio  # the SDK's own dependency, needed only when a stream ends

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Answering:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)


def _server_class() -> Any:
    """:class:`MCPServer` whose every tool and resource failure carries a fixed code (see the module docstring)."""
    class _Server(MCPServer):
        async def run_stdio_async(self) -> None:
            """As the SDK's, with a malformed line answered (:class:`_Answering`)."""
            async with stdio_server() as (read_stream, write_stream):
                await self._lowlevel_server.run(_Answering(read_stream, write_stream), write_stream,
                                                self._lowlevel_server.create_initialization_options())

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(exc, UnexpectedToolError):
                    code, message = ErrorCode.INTERNAL, "unexpected failure; the server log has its class"
                    log.error("tool %r failed (%s: %s)", name[:60], code, type(_cause(exc)).__name__)
                elif isinstance(cause, ValidationError):
                    code, message = ErrorCode.USAGE, _usage(cause)
                elif self._tool_manager.get_tool(name) is None:
                    code, message = ErrorCode.METHOD_UNKNOWN, f"the server has no tool {name[:60]!r}"
                elif (found := _CODE.search(str(exc))) is not None:
                    log.warning("tool %r refused (%s)", name[:60], found.group(1))
                    raise
                else:
                    code, message = ErrorCode.INTERNAL, "unexpected failure; the server log has its class"
                    log.error("tool %r failed (%s: %s)", name[:60], code, type(_cause(exc)).__name__)
                if code is not ErrorCode.INTERNAL:
                    log.warning("tool %r refused (%s)", name[:60], code)
                raise ToolError(f"Error executing tool {name[:60]}: {code}: {message}") from None

        async def read_resource(self, uri: Any, context: Any = None) -> Any:
            try:
                return await super().read_resource(uri, context)
            except ResourceError as exc:
                cause = _cause(exc) if isinstance(exc, UnexpectedResourceError) else exc
                if isinstance(cause, OSError):
                    cause = os_error(cause)
                if isinstance(cause, CairnError):
                    code, message = cause.code, cause.message
                    log.warning("resource %r refused (%s)", str(uri)[:120], code)
                elif isinstance(exc, ResourceNotFoundError):
                    code, message = ErrorCode.NOT_FOUND, "no such resource"
                    log.warning("resource %r refused (%s)", str(uri)[:120], code)
                else:
                    code, message = ErrorCode.INTERNAL, "unexpected failure; the server log has its class"
                    log.error("resource %r failed (%s: %s)", str(uri)[:120], code, type(cause).__name__)
                error = ResourceNotFoundError if code is ErrorCode.NOT_FOUND else ResourceError
                raise error(f"Error reading resource {str(uri)[:120]}: {code}: {message}") from None

    return _Server


def _typed(ns: argparse.Namespace, job: str, args: Any, record: type[T]) -> T:
    """:func:`_job`, structured as its result ``record`` (:mod:`protocol.results`)."""
    try:
        return read(record, _job(ns, job, args), job=job)
    except CairnError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from None


def _day(value: str | None, name: str, *, end: bool) -> float | None:
    """A YYYY-MM-DD bound as a UTC timestamp (``until`` includes its whole day)."""
    if value in (None, ""):
        return None
    try:
        day = _dt.datetime.strptime(str(value), "%Y-%m-%d").replace(tzinfo=_dt.UTC)
    except ValueError:
        raise CairnError(ErrorCode.USAGE, f"{name}: a date YYYY-MM-DD is expected") from None
    return (day + _dt.timedelta(days=1 if end else 0)).timestamp()


def _held(d: dict[str, Any]) -> float:
    """When a digest's session was held (its ``session_started``), else when it was published (``created``)."""
    start = utc_instant(d.get("session_started"))
    return start.timestamp() if start is not None else float(d["created"])


def search_digests(digests: list[dict[str, Any]], *, query: str = "", note_type: str | None = None,
                   since: str | None = None, until: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """Digests (newest session first) with the notes that match every given filter; a digest without one is
    left out. ``since``/``until`` bound the day the session was held (:func:`_held`)."""
    if note_type not in (None, "") and note_type not in TYPES:
        raise CairnError(ErrorCode.USAGE, f"type: unknown type {str(note_type)[:40]!r}; expected one of "
                         + ", ".join(TYPES))
    if not 1 <= limit <= SEARCH_LIMIT:
        raise CairnError(ErrorCode.USAGE, f"limit: 1 to {SEARCH_LIMIT}")
    lo, hi = _day(since, "since", end=False), _day(until, "until", end=True)
    words = query.casefold().split()
    out = []
    for d in sorted(digests, key=lambda d: (_held(d), d["created"], d["id"]), reverse=True):
        if (lo is not None and _held(d) < lo) or (hi is not None and _held(d) >= hi):
            continue
        notes = [n for n in d["notes"] if (not note_type or n["type"] == note_type)
                 and all(w in f"{n['title']} {n['body']} {d.get('title') or ''}".casefold() for w in words)]
        if notes:
            created = _dt.datetime.fromtimestamp(d["created"], _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            out.append({"id": d["id"], "created": created, "title": d.get("title"), "session_id": d["session_id"],
                        "session_started": d.get("session_started"), "session_ended": d.get("session_ended"),
                        "turn_ids": d["turn_ids"], "notes": notes})
            if len(out) >= limit:
                break
    return out


def build(ns: argparse.Namespace) -> Any:
    """The server for ``ns.workspace`` (tools and resources registered; not running)."""
    from cairn.server import version  # looked up once the server starts (importlib.metadata: not at import)

    ws = os.path.abspath(ns.workspace)
    if too_wide(ws):
        # the file system root or the home folder itself: its .cairn/state would collect every project's
        # sessions; refused before anything runs (the language server refuses them alike)
        raise CairnError(ErrorCode.WORKSPACE_INVALID, f"{ws[:120]} is the file system root or the home folder; it "
                         "is not served (name a project folder with -w)")
    server: Any = _server_class()(NAME, instructions=INSTRUCTIONS, log_level="WARNING", version=version(),
                                  middleware=[_malformed])

    @server.tool()
    def remember(text: str, type: str | None = None) -> dict[str, Any]:
        """Remember TEXT in this project's memory, as the user asked: it becomes a proposal for the user to
        accept or reject (applied at once in auto mode). TYPE is user, feedback, project or reference
        (omit it to classify the text). Answers with the proposals made for it."""
        try:
            text, note_type, source = check_request(text, type, "mcp")
        except CairnError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        remembered = _typed(ns, "remember", RememberArgs(text=text, type=note_type, source=source), RememberResult)
        return to_body(remembered)

    @server.tool()
    def journal_search(query: str = "", type: str | None = None, since: str | None = None,
                       until: str | None = None, limit: StrictInt = 20) -> dict[str, Any]:
        """Search the public journal (what past coding sessions taught): digests whose notes contain every
        word of QUERY, of TYPE (user, feedback, project, reference), of sessions held from SINCE to UNTIL
        (YYYY-MM-DD, both included), newest first, at most LIMIT (1-50). Each digest names its turn ids and
        when its session started and ended."""
        digests = _job(ns, "journal")["digests"]
        try:
            found = search_digests(digests, query=query, note_type=type, since=since, until=until, limit=limit)
        except CairnError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        return {"digests": found}

    @server.tool()
    def memory_list() -> dict[str, Any]:
        """List this project's memory topics (file, name, type, description, and the `uri` of the resource
        that reads it), those of the user's own memory roots too, and the project's rules files
        (`instructions`: AGENTS.md, the `uri` that reads it)."""
        try:
            settings = _settings(ws)
            topics = _with_uris(ws, settings, _job(ns, "memory")["topics"])
            return {"topics": topics, "instructions": _instructions(ws, settings)}
        except CairnError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None

    @server.resource("cairn://memory/index", name="memory-index", mime_type="text/markdown",
                     description="The memory index (MEMORY.md): one line per topic; then the index of each "
                                 "other memory root (the user's own), with where its topics are read")
    def memory_index() -> str:
        return _index_text(ws, _settings(ws))

    @server.resource("cairn://memory/topics", name="memory-topics", mime_type="application/json",
                     description="The memory topics as JSON: file, name, type, description, uri")
    def memory_topics() -> str:
        return json.dumps(_with_uris(ws, _settings(ws), _run(ns, "memory")["topics"]), ensure_ascii=False)

    @server.resource("cairn://memory/topic/{name}", name="memory-topic", mime_type="text/markdown",
                     description="One memory topic file, by its file name (the first memory root holding it: "
                                 "the project's, then the user's own)")
    def memory_topic(name: str) -> str:
        roots = _roots(ws, _settings(ws))
        for i in range(len(roots)):
            text = _topic_in(ws, roots, i, name)
            if text is not None:
                return text
        raise CairnError(ErrorCode.NOT_FOUND, f"no memory topic {name[:80]!r}")

    @server.resource("cairn://memory/roots/{root}/{name}", name="memory-root-topic", mime_type="text/markdown",
                     description="One memory topic file of one memory root (0: the project's, then the user's "
                                 "own, in memory_roots order), by its file name")
    def memory_root_topic(root: str, name: str) -> str:
        roots = _roots(ws, _settings(ws))
        i = int(root) if root.isdigit() and len(root) < 4 else -1
        text = _topic_in(ws, roots, i, name) if 0 <= i < len(roots) else None
        if text is None:
            raise CairnError(ErrorCode.NOT_FOUND, f"no memory topic {name[:80]!r} in memory root {root[:8]!r}")
        return text

    @server.resource("cairn://instructions/AGENTS.md", name="agents-md", mime_type="text/markdown",
                     description="The project's rules (AGENTS.md: where the rules accepted with cairn go), read-only")
    def agents_md() -> str:
        return _instruction_text(ws, _settings(ws), "AGENTS.md")

    @server.resource("cairn://instructions/{name}", name="instructions", mime_type="text/markdown",
                     description="A rules file of the project (AGENTS.md, or another configured instruction file "
                                 "at its top level), read-only")
    def instructions(name: str) -> str:
        return _instruction_text(ws, _settings(ws), name)

    return server


def _settings(ws: str) -> Any:
    """The workspace's settings, as the jobs the tools run get them (the user's config, a trusted
    workspace's file; memory roots resolved: a folder inside the workspace relative to it, any other absolute)."""
    # cold start: the settings are read only by the tools that need the memory roots
    from cairn.server.scheduler.inprocess import load_config
    from cairn.worker.settings import config  # cold start: as load_config

    return config.from_request(load_config(ws))


def _roots(ws: str, settings: Any) -> list[str]:
    """The memory roots in ``memory_list``'s order: the workspace's, then ``memory_roots`` (a root named twice
    once)."""
    out: list[str] = []
    seen: set[str] = set()
    for r in (DEFAULT_ROOT, *settings.memoryRoots):
        key = os.path.normpath(r if os.path.isabs(r) else os.path.join(ws, r))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _topic_in(ws: str, roots: list[str], i: int, name: str) -> str | None:
    """Topic file ``name`` of memory root ``roots[i]``, read as every memory file is; None when that root has
    no such file (a file there that cannot be served raises its code)."""
    if not name.endswith(".md") or name == "MEMORY.md" or "/" in name or "\\" in name or name.startswith("."):
        return None
    if name not in _names(ws, roots[i]):
        return None
    return _memory_text(ws, roots[i], name)


def _names(ws: str, root: str) -> set[str]:
    """The names in memory root ``root`` (none when it is absent, or a link below the workspace)."""
    try:
        d = _open_root(ws, root)
    except CairnError:
        return set()
    if d is None:
        return set()
    with d:
        return set(d.listdir())


def _open_root(ws: str, root: str) -> PinnedDir | None:
    """Memory root ``root`` opened: an absolute one (the user's, chosen by them: its own path may hold links)
    as it is, one in the workspace component by component, no link followed; None when absent."""
    try:
        if os.path.isabs(root):
            return PinnedDir.open_root(root)
        with PinnedDir.open_root(ws) as base:
            return base.descend(root)
    except CairnError as exc:
        if exc.code in (ErrorCode.NOT_FOUND, ErrorCode.PATH_NOT_DIRECTORY):
            return None
        raise


def _uri(roots: list[str], names: list[set[str]], i: int, name: str) -> str:
    """The resource that reads topic ``name`` of root ``i``: by its name alone when no root before it holds
    that name, else by its root's number."""
    if not any(name in names[j] for j in range(i)):
        return f"cairn://memory/topic/{name}"
    return f"cairn://memory/roots/{i}/{name}"


def _with_uris(ws: str, settings: Any, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``memory_list``'s rows, each with the ``uri`` of the resource that reads its file."""
    roots = _roots(ws, settings)
    keys = [os.path.normpath(r if os.path.isabs(r) else os.path.join(ws, r)) for r in roots]
    names = [_names(ws, r) for r in roots]
    out = []
    for row in topics:
        root = str(row.get("root") or "")
        key = os.path.normpath(root if os.path.isabs(root) else os.path.join(ws, root))
        name = os.path.basename(str(row.get("file") or ""))
        uri = _uri(roots, names, keys.index(key), name) if key in keys and name else None
        out.append({**row, "uri": uri})
    return out


def _index_text(ws: str, settings: Any) -> str:
    """The workspace's ``MEMORY.md``, then each other memory root's, each under a line saying which root it
    is and where its topics are read (a root's index that cannot be served is named with its code)."""
    roots = _roots(ws, settings)
    parts = [_memory_text(ws, DEFAULT_ROOT, "MEMORY.md") or ""]
    for i, root in enumerate(roots[1:], start=1):
        try:
            text = _memory_text(ws, root, "MEMORY.md")
        except CairnError as exc:
            parts.append(f"<!-- cairn: memory root {i} ({root}): its MEMORY.md is not served ({exc.code}) -->\n")
            continue
        if text is None:
            continue
        parts.append(f"<!-- cairn: memory root {i} ({root}): its topics are read as cairn://memory/topic/FILE, "
                     f"or cairn://memory/roots/{i}/FILE when a root before it has a file of that name -->\n{text}")
    if len(parts) == 1:
        return parts[0]
    return "\n".join(p if p.endswith("\n") or not p else p + "\n" for p in parts)


def _instruction_names(settings: Any) -> list[str]:
    """The rules files served: ``AGENTS.md`` and every configured instruction file at the workspace's top level."""
    return list(dict.fromkeys(["AGENTS.md", *(f for f in settings.instructionFiles if "/" not in f and f)]))


def _instruction_text(ws: str, settings: Any, name: str) -> str:
    """A rules file's text, read as ``cairn agents`` reads the agents' files: never through a link but one hop
    to another instruction file of the workspace, never blocking, at most 1 MiB, UTF-8."""
    from cairn.worker.memory.agents import Files  # cold start: only when an instruction file is read

    if name not in _instruction_names(settings):
        raise CairnError(ErrorCode.NOT_FOUND, f"no instruction file {name[:80]!r} (served: "
                         f"{', '.join(_instruction_names(settings))})")
    with Files(ws, settings.instructionFiles) as files:
        text = files.text(name)
        problem = files.problems.get(name)
    if problem is not None:
        raise CairnError(ErrorCode(problem.code), problem.message)
    if text is None:
        raise CairnError(ErrorCode.NOT_FOUND, f"{name} does not exist in this workspace")
    return text


def _instructions(ws: str, settings: Any) -> list[dict[str, Any]]:
    """The rules files there, each ``{"file", "uri"}`` (with ``error``, its code, when it cannot be served)."""
    out = []
    for name in _instruction_names(settings):
        try:
            _instruction_text(ws, settings, name)
        except CairnError as exc:
            if exc.code is not ErrorCode.NOT_FOUND:
                out.append({"file": name, "uri": None, "error": str(exc.code)})
            continue
        out.append({"file": name, "uri": f"cairn://instructions/{name}"})
    return out


#: a memory file larger than this is not served (the index holds 200 lines; topics are notes)
MEMORY_FILE_LIMIT = 4 << 20


def _memory_text(workspace: str, root_rel: str, name: str) -> str | None:
    """A memory file's text, read as every memory file is; None when it is absent.

    No symlink is followed below the workspace (a cloned repository's
    ``MEMORY.md`` linked to a credentials file is ``E_PATH_SYMLINK``, never
    served to the agent), the open never blocks and only a regular file of
    bounded size is read (``E_PATH_NOT_REGULAR``, ``E_RECORD_TOO_LARGE``).
    """
    opened: list[PinnedDir] = []
    try:
        d = PinnedDir.open_root(root_rel if os.path.isabs(root_rel) else workspace)  # an absolute root: the user's
        opened.append(d)
        for part in ([] if os.path.isabs(root_rel) else root_rel.split("/")):
            d = d.child(part)
            opened.append(d)
        data = d.read(name, limit=MEMORY_FILE_LIMIT)
    except CairnError as exc:
        if exc.code is ErrorCode.NOT_FOUND:
            return None
        raise
    finally:
        for each in opened:
            each.close()
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CairnError(ErrorCode.MEMORY_NOT_TEXT, f"{root_rel}/{name} is not UTF-8 text") from None


def plain_logs() -> None:
    """stderr at WARNING, one plain line per record, redacted (the SDK's own setup is then a no-op:
    its rich handler wraps long lines and prints multi-line tracebacks)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="cairn: %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())
