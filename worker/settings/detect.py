"""Digest providers already on this machine (``cairn setup``), and whether the configured one answers (``cairn doctor``).

Detection looks in two places and changes nothing:

* **Assistant CLIs on ``PATH``** (:data:`CLIS`): ``claude``, ``codex``,
  ``gemini``, ``llm`` and ``ollama``. Found means an executable of that name
  is on ``PATH``; nothing is run. Each becomes the argv the ``command``
  provider runs (prompt on stdin, reply on stdout:
  :mod:`worker.providers.command`): ``claude -p``, ``codex exec
  --skip-git-repo-check -`` (the run's folder is an empty temporary one, not
  a git repository), ``gemini -p "…"`` (headless; the short instruction is
  appended to the prompt read from stdin), ``llm -m MODEL`` (the model llm
  would use: ``LLM_MODEL``, else its ``default_model.txt``; unknown, plain
  ``llm``) and ``ollama run MODEL`` (a model the Ollama server the CLI
  talks to lists: ``OLLAMA_HOST``, default 127.0.0.1:11434, probed only on
  loopback; without one it is not usable).
* **OpenAI-compatible servers on loopback** (:data:`PORTS`): Ollama 11434,
  LM Studio 1234, llama.cpp's ``llama-server`` or LocalAI 8080 (told apart
  by the ``owned_by`` llama.cpp puts in its model list), vLLM 8000, Jan 1337.
  ``CAIRN_SETUP_PORTS`` (a comma-separated list) replaces the list; a port
  outside it is never probed. Each port gets one ``GET /v1/models`` on
  ``127.0.0.1`` (``::1`` when that refuses), never another host, all ports
  at once, each cut off at ``CAIRN_PROBE_TIMEOUT_MS`` (default 1000) over
  the whole exchange (connect, request, reply), so a server that accepts
  and never answers costs one timeout. A refused port is not a finding,
  nor one whose HTTP server answers with anything but a model list or a
  request for a key (another program's server).
  The model written is the first chat model listed (embedding, speech and
  image models are skipped; an Ollama cloud model, ``…:cloud`` or
  ``…-cloud``, only when no local one is listed).

Every :class:`Candidate` says in one sentence where session text would go
(``where``: ``local`` or ``remote``; a CLI whose model cannot be known is
``remote``) and carries the exact settings that make it the digest
provider (:attr:`Candidate.settings`, written by
:mod:`worker.settings.userconfig` only with the user's consent). Model names
come from a local server and are untrusted: one holding a control character
or longer than 200 characters is never offered.

:func:`check` is ``cairn doctor``'s line: the provider in effect and whether
it answers, without sending session text. An endpoint gets ``GET
<endpoint>/models`` (with the key the same settings name, as a digest would
send it), a command's program is looked up on ``PATH`` and run once as
``PROGRAM --version`` (stdin empty, an empty temporary folder, its process
group killed after ``CAIRN_VERSION_TIMEOUT_MS``, default 5000; the first
line of its output is kept, 200 bytes at most).

Standard library only (sockets, no HTTP stack): ``cairn setup`` and ``cairn
doctor`` start fast. Nothing here logs or stores what a server or program
answers.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
from cairn.protocol.knobs import env_int, env_ints
from cairn.protocol.settings import Settings

#: loopback ports probed, each with the name of the server usually there
PORTS: tuple[tuple[int, str, str], ...] = (
    (11434, "ollama", "Ollama"),
    (1234, "lmstudio", "LM Studio"),
    (8080, "llamacpp", "llama.cpp server"),
    (8000, "vllm", "vLLM"),
    (1337, "jan", "Jan"),
)
#: what answers on port 8080 when llama.cpp's ``owned_by`` is not in its model list
LOCALAI = ("localai", "LocalAI")
#: the instruction ``gemini -p`` appends to the prompt it reads from stdin
GEMINI_ASK = "Answer the request above with the JSON object it asks for, and nothing else."
#: assistant CLIs: name, argv, who receives the text, through what
CLIS: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    ("claude", ("claude", "-p"), "Anthropic", "your Claude Code login"),
    (
        "codex",
        ("codex", "exec", "--skip-git-repo-check", "-"),
        "OpenAI",
        "your Codex login (or to the model provider your Codex config names)",
    ),
    ("gemini", ("gemini", "-p", GEMINI_ASK), "Google", "your Gemini CLI login"),
)
LLM_DEFAULT = "gpt-4o-mini"  # llm's own default model when none is set
MAX_REPLY = 1 << 20
_NOT_CHAT = (
    "embed",
    "whisper",
    "tts-",
    "rerank",
    "stablediffusion",
    "stable-diffusion",
    "dall-e",
    "moderation",
)


def probe_timeout() -> float:
    """Seconds one HTTP probe may take (``CAIRN_PROBE_TIMEOUT_MS``)."""
    return env_int("CAIRN_PROBE_TIMEOUT_MS", 1000) / 1000


def version_timeout() -> float:
    """Seconds ``PROGRAM --version`` may take in ``cairn doctor`` (``CAIRN_VERSION_TIMEOUT_MS``)."""
    return env_int("CAIRN_VERSION_TIMEOUT_MS", 5000) / 1000


def ports() -> tuple[int, ...]:
    return env_ints("CAIRN_SETUP_PORTS", tuple(p for p, _, _ in PORTS))


@attrs.frozen
class Candidate:
    """One provider found on this machine."""

    name: str
    kind: str  # "command" | "openai"
    where: str  # "local" | "remote"
    detail: str
    available: bool
    #: the user-config keys (snake_case) that make it the digest provider; empty when not available
    settings: tuple[tuple[str, str | tuple[str, ...]], ...] = ()
    #: the models it lists (servers, ollama), for ``--model``
    models: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "where": self.where,
            "detail": self.detail,
            "available": self.available,
        }


class ProbeError(Exception):
    """A probe that got no usable answer; the message is a short reason fit for a person.

    ``connected``: whether something accepted the connection (else nothing listens there).
    """

    def __init__(self, reason: str, *, connected: bool = True) -> None:
        super().__init__(reason)
        self.connected = connected


# ---------------------------------------------------------------- HTTP, with a deadline over the whole exchange


def _complete(data: bytes) -> tuple[int, bytes] | None:
    """(status, body) once ``data`` holds a whole response (by length or chunks), else None."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.split(b"\r\n")
    m = re.match(rb"HTTP/\d(?:\.\d)? (\d{3})", lines[0])
    if not m:
        raise ProbeError("not an HTTP server")
    status = int(m.group(1))
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(b":") for ln in lines[1:])}
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        body = bytearray()
        while True:
            size_line, crlf, after = rest.partition(b"\r\n")
            if not crlf:
                return None
            try:
                size = int(size_line.split(b";")[0], 16)
            except ValueError:
                raise ProbeError("a malformed chunked reply") from None
            if size == 0:
                return status, bytes(body)
            if len(after) < size + 2:
                return None
            body += after[:size]
            rest = after[size + 2 :]
    length = headers.get(b"content-length")
    if length is not None and length.isdigit():
        return (status, rest[: int(length)]) if len(rest) >= int(length) else None
    return None  # read to the end of the connection


def http_get(url: str, *, timeout: float, headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    """One ``GET url``: (status, body), or :class:`ProbeError` (refused, timed out, unreadable).

    ``timeout`` bounds the whole exchange; the reply is read up to 1 MiB.
    """
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url) or any(
        any(ord(c) < 0x20 or ord(c) == 0x7F for c in k + v) for k, v in (headers or {}).items()
    ):
        raise ProbeError("the URL or a header holds a space or control character")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProbeError("not an http:// or https:// URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ProbeError("the URL's port is not a number") from None
    deadline = time.monotonic() + timeout
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [
        f"GET {target} HTTP/1.1",
        f"Host: {parts.netloc.rpartition('@')[2]}",
        "Accept: application/json",
        "Connection: close",
        "User-Agent: cairn",
    ]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
    try:
        sock: socket.socket = socket.create_connection((parts.hostname, port), timeout=timeout)
    except ConnectionRefusedError:
        raise ProbeError("refused", connected=False) from None
    except TimeoutError:
        raise ProbeError(f"no answer within {timeout:g} s", connected=False) from None
    except OSError as exc:
        raise ProbeError(exc.strerror or type(exc).__name__, connected=False) from None
    try:
        if parts.scheme == "https":
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname)
        sock.sendall(request)
        data = bytearray()
        while (done := _complete(bytes(data))) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                head, sep, rest = bytes(data).partition(b"\r\n\r\n")
                m = re.match(rb"HTTP/\d(?:\.\d)? (\d{3})", head)
                if not sep or not m:
                    raise ProbeError("the connection closed without a reply")
                return int(m.group(1)), rest
            data += chunk
            if len(data) > MAX_REPLY:
                raise ProbeError(f"a reply over {MAX_REPLY >> 20} MiB")
        return done
    except TimeoutError:
        raise ProbeError(f"no answer within {timeout:g} s") from None
    except ssl.SSLError:
        raise ProbeError("the TLS handshake failed") from None
    except OSError as exc:
        raise ProbeError(exc.strerror or type(exc).__name__) from None
    finally:
        sock.close()


def model_ids(body: bytes) -> list[str]:
    """The model ids of an OpenAI ``/models`` reply; :class:`ProbeError` when it is not one."""
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        doc = None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise ProbeError("its /models reply is not an OpenAI model list")
    return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def _owners(body: bytes) -> set[str]:
    try:
        data = json.loads(body).get("data")
        return {
            str(m["owned_by"]) for m in data if isinstance(m, dict) and isinstance(m.get("owned_by"), str)
        }
    except (AttributeError, TypeError, ValueError, RecursionError):
        return set()


def offered(model: str) -> bool:
    """Whether a model name from outside may be shown and written (printable, at most 200 characters)."""
    return 0 < len(model) <= 200 and model.isprintable() and model == model.strip()


def cloud_model(model: str) -> bool:
    """An Ollama cloud model (``gpt-oss:120b-cloud``, ``gemma4:cloud``): run in Ollama's cloud, not here."""
    tag = model.rpartition(":")[2].lower()
    return tag == "cloud" or tag.endswith("-cloud")


def chat_models(ids: Sequence[str]) -> list[str]:
    """The models worth offering, in the server's order, local ones first."""
    usable = [m for m in ids if offered(m) and not any(w in m.lower() for w in _NOT_CHAT)]
    return [m for m in usable if not cloud_model(m)] + [m for m in usable if cloud_model(m)]


# ---------------------------------------------------------------- detection


@attrs.frozen
class _Server:
    port: int
    host: str = ""
    status: int = 0
    body: bytes = b""
    reason: str = ""  # why there is no answer; "refused": nothing there


def _probe_port(port: int, timeout: float) -> _Server:
    """``GET /v1/models`` on 127.0.0.1, then on ::1 when nothing listens there (reason "refused": on neither)."""
    for netloc in (f"127.0.0.1:{port}", f"[::1]:{port}"):
        try:
            status, body = http_get(f"http://{netloc}/v1/models", timeout=timeout)
        except ProbeError as exc:
            if exc.connected:
                return _Server(port, netloc, reason=str(exc))
            if not str(exc).startswith("no answer"):
                continue  # refused, or no IPv6 loopback
            # a connection that never completed: something is there
            return _Server(port, netloc, reason=str(exc))
        return _Server(port, netloc, status, body)
    return _Server(port, reason="refused")


def _label(port: int, body: bytes) -> tuple[str, str]:
    known = {p: (name, label) for p, name, label in PORTS}
    if port == 8080 and "llamacpp" not in _owners(body):
        return LOCALAI
    return known.get(port, ("server", "an OpenAI-compatible server"))


def _where_model(label: str, at: str, model: str, count: int) -> tuple[str, str]:
    which = f"model {model}" + (f" (1 of {count})" if count > 1 else "")
    if cloud_model(model):
        return (
            "remote",
            f"{label} at {at}, {which}: a cloud model, so session text is sent to Ollama's cloud (ollama.com)",
        )
    return "local", f"{label} at {at}, {which}: session text stays on this machine"


def server_candidate(server: _Server, model: str | None = None) -> Candidate:
    """The candidate of a probed port (``model``: the one asked for instead of the first listed)."""
    name, label = _label(server.port, server.body)
    name = f"{name}:{server.port}"
    at = server.host
    if server.reason:
        return Candidate(name, "openai", "local", f"{label} at {at}: {server.reason}", False)
    if server.status in (401, 403):
        return Candidate(
            name,
            "openai",
            "local",
            f"{label} at {at} answers HTTP {server.status}: it wants an API key "
            "(set api_key_env to the variable that holds it and choose it by hand)",
            False,
        )
    if server.status != 200:
        return Candidate(
            name,
            "openai",
            "local",
            f"{label} at {at} answers GET /v1/models with HTTP {server.status}: "
            "not an OpenAI-compatible server",
            False,
        )
    try:
        models = chat_models(model_ids(server.body))
    except ProbeError as exc:
        return Candidate(name, "openai", "local", f"{label} at {at}: {exc}", False)
    if not models:
        return Candidate(
            name, "openai", "local", f"{label} at {at} serves no chat model (load or pull one first)", False
        )
    chosen = model if model is not None else models[0]
    where, detail = _where_model(label, at, chosen, len(models))
    settings = (("provider", "openai"), ("endpoint", f"http://{at}/v1"), ("model", chosen))
    return Candidate(name, "openai", where, detail, True, settings, tuple(models))


def _program(name: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=env.get("PATH", os.defpath))


def llm_model(env: Mapping[str, str]) -> str | None:
    """The model ``llm`` uses by default: ``LLM_MODEL``, else its ``default_model.txt``; None when not set."""
    if offered(env.get("LLM_MODEL", "")):
        return env["LLM_MODEL"]
    config_home = env.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(config_home):
        config_home = os.path.join(os.path.expanduser("~"), ".config")
    base = env.get("LLM_USER_PATH") or os.path.join(config_home, "io.datasette.llm")
    try:
        with open(os.path.join(base, "default_model.txt"), "rb") as f:
            text = f.read(256).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return text if offered(text) else None


def _llm_host(model: str) -> str:
    m = model.lower()
    if "claude" in m or "anthropic" in m:
        return "to Anthropic"
    if "gemini" in m:
        return "to Google"
    if re.match(r"(openai/)?(gpt|o\d|4o|chatgpt)", m):
        return "to OpenAI"
    return "wherever llm runs that model (a plugin's model may stay on this machine)"


def llm_candidate(model: str | None) -> Candidate:
    argv: tuple[str, ...] = ("llm", "-m", model) if model else ("llm",)
    shown = model or f"its default model ({LLM_DEFAULT} unless you changed it)"
    detail = (
        f"{' '.join(argv)}: session text goes {_llm_host(model or LLM_DEFAULT)}, through llm with {shown}"
    )
    return Candidate(
        "llm",
        "command",
        "remote",
        detail,
        True,
        (("provider", "command"), ("command", argv), ("model", model or "")),
    )


def ollama_candidate(
    models: Sequence[str], model: str | None = None, *, at: str = "127.0.0.1:11434"
) -> Candidate:
    if not models:
        return Candidate(
            "ollama",
            "command",
            "local",
            f"ollama run: the Ollama server at {at} lists no chat model "
            "(start it, `ollama pull MODEL`, then run setup again)",
            False,
        )
    chosen = model if model is not None else models[0]
    argv = ("ollama", "run", chosen)
    if cloud_model(chosen):
        where, detail = (
            "remote",
            f"ollama run {chosen}: a cloud model, so session text is sent to Ollama's cloud (ollama.com)",
        )
    else:
        where, detail = "local", f"ollama run {chosen}: session text stays on this machine"
    return Candidate(
        "ollama",
        "command",
        where,
        detail,
        True,
        (("provider", "command"), ("command", argv), ("model", chosen)),
        tuple(models),
    )


def ollama_host(env: Mapping[str, str]) -> tuple[str, int] | None:
    """The loopback host and port the ``ollama`` CLI talks to (``OLLAMA_HOST``, default 127.0.0.1:11434).

    None when ``OLLAMA_HOST`` names another machine: that one is never probed.
    """
    raw = env.get("OLLAMA_HOST", "").strip()
    if not raw:
        return "127.0.0.1", 11434
    parts = urllib.parse.urlsplit(raw if "://" in raw else f"http://{raw}")
    try:
        port = parts.port or 11434
    except ValueError:
        return None
    host = parts.hostname or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return (host, port) if loopback(host) else None


def _ollama(env: Mapping[str, str], found: Sequence[_Server], timeout: float) -> Candidate:
    """``ollama run MODEL`` with a model the Ollama server the CLI uses lists."""
    at = ollama_host(env)
    if at is None:
        return Candidate(
            "ollama",
            "command",
            "remote",
            "ollama run: OLLAMA_HOST names another machine, which cairn does not probe (choose it by hand)",
            False,
        )
    host, port = at
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    server = next((s for s in found if s.host == netloc), None)
    if server is None:
        try:
            status, body = http_get(f"http://{netloc}/v1/models", timeout=timeout)
            server = _Server(port, netloc, status, body)
        except ProbeError as exc:
            server = _Server(port, netloc, reason=str(exc))
    try:
        models = chat_models(model_ids(server.body)) if not server.reason and server.status == 200 else []
    except ProbeError:
        models = []
    return ollama_candidate(models, at=netloc)


@attrs.frozen
class Detection:
    candidates: tuple[Candidate, ...]
    #: CLIs not on PATH, and ports where nothing answered (refused)
    missing_programs: tuple[str, ...]
    quiet_ports: tuple[int, ...]
    #: ports where an HTTP server answers, but not with an OpenAI model list (a web app's dev server)
    other_ports: tuple[int, ...] = ()
    servers: tuple[_Server, ...] = ()


def _model_server(server: _Server) -> bool:
    """Whether a probed port may hold a model server: silent, asking for a key, or listing models."""
    if server.reason:
        return server.reason.startswith("no answer")
    if server.status in (401, 403):
        return True
    try:
        return server.status == 200 and isinstance(model_ids(server.body), list)
    except ProbeError:
        return False


def detect(env: Mapping[str, str] | None = None) -> Detection:
    """Every provider found on this machine: local servers first (they keep text here), then CLIs.

    Reads ``PATH`` and the ports; runs nothing, writes nothing.
    """
    env = os.environ if env is None else env
    timeout = probe_timeout()
    wanted = ports()
    with ThreadPoolExecutor(max_workers=max(1, len(wanted))) as pool:
        servers = list(pool.map(lambda p: _probe_port(p, timeout), wanted))
    found = [s for s in servers if s.reason != "refused"]
    candidates = [server_candidate(s) for s in found if _model_server(s)]
    missing: list[str] = []
    for name, argv, company, login in CLIS:
        if _program(name, env) is None:
            missing.append(name)
            continue
        shown = " ".join(argv[:2]) if name != "codex" else "codex exec"
        candidates.append(
            Candidate(
                name,
                "command",
                "remote",
                f"{shown}: session text is sent to {company} by {login}",
                True,
                (("provider", "command"), ("command", argv), ("model", "")),
            )
        )
    if _program("llm", env) is None:
        missing.append("llm")
    else:
        candidates.append(llm_candidate(llm_model(env)))
    if _program("ollama", env) is None:
        missing.append("ollama")
    else:
        candidates.append(_ollama(env, found, timeout))
    order = sorted(candidates, key=lambda c: (not c.available, c.where != "local"))
    return Detection(
        tuple(order),
        tuple(missing),
        tuple(s.port for s in servers if s.reason == "refused"),
        tuple(s.port for s in found if not _model_server(s)),
        tuple(found),
    )


def with_model(detection: Detection, candidate: Candidate, model: str) -> Candidate:
    """``candidate`` digesting with ``model`` instead; :class:`ProbeError` when it does not offer it."""
    if candidate.name == "llm":
        if not offered(model):
            raise ProbeError("that model name holds a control character or is too long")
        return llm_candidate(model)
    if candidate.kind == "command" and candidate.name != "ollama":
        raise ProbeError(f"{candidate.name} takes no model here (its own settings choose it)")
    if model not in candidate.models:
        listed = ", ".join(candidate.models[:10]) + (", …" if len(candidate.models) > 10 else "")
        raise ProbeError(f"{candidate.name} does not list the model {model!r} (it lists: {listed})")
    if candidate.name == "ollama":
        return ollama_candidate(candidate.models, model)
    server = next(s for s in detection.servers if server_candidate(s).name == candidate.name)
    return server_candidate(server, model)


# ---------------------------------------------------------------- doctor: the provider in effect


@attrs.frozen
class Check:
    provider: str
    target: str  # the endpoint and model, or the argv
    where: str  # "local" | "remote" | "unknown"
    answers: bool
    status: str

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def line(self) -> str:
        what = f"{self.provider} {self.target}".rstrip()
        return f"{what} ({self.where}): {self.status}"


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _command_where(argv: Sequence[str]) -> str:
    program = os.path.basename(argv[0]) if argv else ""
    if program == "ollama":
        return "remote" if any(cloud_model(a) for a in argv[1:]) else "local"
    return "remote" if program in ("claude", "codex", "gemini", "llm") else "unknown"


def _read_first_line(proc: subprocess.Popen[bytes], deadline: float) -> bytes:
    """Up to 200 bytes of the program's stdout before the deadline (the rest is drained unread)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    kept = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return kept
        if len(kept) < 200:
            kept = (kept + chunk)[:200]


def run_version(program: str, timeout: float, env: Mapping[str, str]) -> tuple[bool, str]:
    """``program --version`` in an empty folder with no input: (exit 0, what to say)."""
    path = _program(program, env)
    if path is None:
        return False, f"{os.path.basename(program)[:60]} is not on PATH"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cairn-doctor-") as cwd:
        try:
            proc = subprocess.Popen(
                [path, "--version"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
            )
        except OSError as exc:
            return False, f"{os.path.basename(path)[:60]} cannot start ({exc.strerror or type(exc).__name__})"
        try:
            out = _read_first_line(proc, started + timeout)
            status = proc.wait(timeout=max(0.001, started + timeout - time.monotonic()))
        except (TimeoutError, subprocess.TimeoutExpired):
            return False, f"no answer to --version within {timeout:g} s (stopped)"
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # whatever it started goes with it
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    took = time.monotonic() - started
    first = out.decode("utf-8", "replace").strip().split("\n", 1)[0][:80]
    if status != 0:
        return False, f"`{os.path.basename(path)[:60]} --version` exits with status {status}"
    return True, f"answers (`{os.path.basename(path)[:60]} --version` in {took:.1f} s" + (
        f": {first})" if first else ")"
    )


def check(settings: Settings, env: Mapping[str, str] | None = None) -> Check:
    """The provider ``settings`` name and whether it answers now; no session text is sent."""
    env = os.environ if env is None else env
    if settings.provider == "command":
        argv = settings.command
        target = json.dumps(list(argv), ensure_ascii=False)[:200]
        if not argv or not argv[0].strip():
            return Check("command", target, "unknown", False, 'no program: command = ["program", "arg", ...]')
        ok, said = run_version(argv[0], version_timeout(), env)
        return Check("command", target, _command_where(argv), ok, said)
    if settings.provider == "openai":
        endpoint = settings.endpoint.strip().rstrip("/")
        target = f"{endpoint} model {settings.model or '(none)'}"
        host = urllib.parse.urlsplit(endpoint).hostname or ""
        where = "local" if loopback(host) else "remote"
        base = endpoint[: -len("/chat/completions")] if endpoint.endswith("/chat/completions") else endpoint
        key = env.get(settings.apiKeyEnv) if settings.apiKeyEnv else None
        timeout = probe_timeout()
        try:
            status, body = http_get(
                f"{base}/models", timeout=timeout, headers={"Authorization": f"Bearer {key}"} if key else None
            )
        except ProbeError as exc:
            return Check("openai", target, where, False, f"does not answer ({exc})")
        if status != 200:
            return Check(
                "openai",
                target,
                where,
                True,
                f"answers GET /models with HTTP {status}"
                + (f" (no key: {settings.apiKeyEnv} is unset)" if status in (401, 403) and not key else ""),
            )
        try:
            ids = model_ids(body)
        except ProbeError as exc:
            return Check("openai", target, where, True, f"answers (HTTP 200), but {exc}")
        if settings.model and settings.model not in ids:
            return Check(
                "openai",
                target,
                where,
                True,
                f"answers (HTTP 200), but the model is not among the {len(ids)} it lists",
            )
        return Check("openai", target, where, True, "answers (HTTP 200, the model is listed)")
    return Check(settings.provider, "", "local", True, "the embedded engine, offline: nothing to reach")
