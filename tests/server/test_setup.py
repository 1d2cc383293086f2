"""``cairn setup`` finds the providers already on the machine and writes the user's config only with consent;
``cairn doctor`` shows the provider in effect and whether it answers, without sending session text.

Everything is real: fake assistant CLIs are executables on a temporary ``PATH``, model servers are HTTP
servers on loopback ports of this test, the port list comes from ``CAIRN_SETUP_PORTS``.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import threading
import time
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import attrs
import pytest
from cairn.worker.settings.userconfig import edit

from tests.journal.helpers import cairn
from tests.support import PYTHON, REPO, child_env

MODELS = {
    "object": "list",
    "data": [
        {"id": "nomic-embed-text:latest", "object": "model", "owned_by": "library"},
        {"id": "qwen2.5:7b", "object": "model", "owned_by": "library"},
        {"id": "llama3.1:8b", "object": "model", "owned_by": "library"},
    ],
}


@attrs.define
class Server:
    port: int
    models: dict = attrs.Factory(lambda: MODELS)
    requests: list[tuple[str, str, bytes]] = attrs.Factory(list)  # method, path, body


@pytest.fixture
def server() -> Iterator[Server]:
    """An OpenAI-compatible model list on an ephemeral loopback port; every request is recorded."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    srv = Server(port=httpd.server_address[1])

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _record(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            srv.requests.append((self.command, self.path, body))

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._record()
            reply = json.dumps(srv.models).encode() if self.path == "/v1/models" else b"{}"
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def do_POST(self) -> None:  # noqa: N802
            self._record()
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    httpd.RequestHandlerClass = Handler
    httpd.daemon_threads = False  # server_close() joins every handler thread
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound by this test and not listening: a probe there is refused at once."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    try:
        yield s.getsockname()[1]
    finally:
        s.close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port whose connections are accepted by the kernel and never answered."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    try:
        yield s.getsockname()[1]
    finally:
        s.close()


FAKE = """#!{python}
import json, os, signal, sys
data = sys.stdin.read()
with open({log!r}, "a") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "stdin": data, "pid": os.getpid()}}) + "\\n")
if {hang!r}:
    signal.pause()
if sys.argv[1:] == ["--version"]:
    print("9.9.9 (fake {name})")
"""


def fake_program(bin_dir: Path, name: str, *, hang: bool = False) -> Path:
    """An executable ``name`` in ``bin_dir`` that logs each run (argv, stdin) to ``bin_dir/NAME.log``."""
    bin_dir.mkdir(exist_ok=True)
    log = bin_dir / f"{name}.log"
    path = bin_dir / name
    path.write_text(FAKE.format(python=PYTHON, log=str(log), hang=hang, name=name))
    path.chmod(0o755)
    return log


def runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def snapshot(*roots: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and folder under ``roots``: mode and bytes (a folder's bytes are empty)."""
    out = {}
    for root in roots:
        for dirpath, dirs, files in os.walk(root):
            for name in dirs + files:
                p = Path(dirpath) / name
                st = p.lstat()
                out[str(p)] = (st.st_mode, p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
    return out


def detect_json(ws: Path, env: dict[str, str]) -> dict[str, dict]:
    r = cairn(ws, "setup", "--detect", "--json", env=env)
    rows = json.loads(r.stdout)
    assert all(set(row) == {"name", "kind", "where", "detail", "available"} for row in rows)
    return {row["name"]: row for row in rows}


def user_config(home: Path) -> dict:
    return tomllib.loads((home / "cairn" / "config.toml").read_text())


def test_assistant_clis_on_path_are_detected_and_nothing_runs(
    workspace: Path, tmp_path: Path, closed_port: int
) -> None:
    bin_dir = tmp_path / "bin"
    claude_log, llm_log = fake_program(bin_dir, "claude"), fake_program(bin_dir, "llm")
    (tmp_path / "llm-home").mkdir()
    (tmp_path / "llm-home" / "default_model.txt").write_text("claude-3-5-haiku-latest\n")
    env = {
        "PATH": str(bin_dir),
        "CAIRN_SETUP_PORTS": str(closed_port),
        "LLM_USER_PATH": str(tmp_path / "llm-home"),
    }
    found = detect_json(workspace, env)
    assert set(found) == {"claude", "llm"}  # codex, gemini, ollama are not on this PATH; the port is closed
    assert found["claude"] == {
        "name": "claude",
        "kind": "command",
        "where": "remote",
        "available": True,
        "detail": "claude -p: session text is sent to Anthropic by your Claude Code login",
    }
    assert (
        found["llm"]["kind"] == "command" and found["llm"]["where"] == "remote" and found["llm"]["available"]
    )
    assert (
        "llm -m claude-3-5-haiku-latest" in found["llm"]["detail"] and "Anthropic" in found["llm"]["detail"]
    )
    assert runs(claude_log) == [] and runs(llm_log) == []  # found on PATH, never started


def test_a_loopback_server_answering_v1_models_is_detected(workspace: Path, server: Server) -> None:
    found = detect_json(workspace, {"PATH": "/nonexistent", "CAIRN_SETUP_PORTS": str(server.port)})
    row = found[f"server:{server.port}"]
    assert row["kind"] == "openai" and row["where"] == "local" and row["available"] is True
    assert row["detail"] == (
        f"an OpenAI-compatible server at 127.0.0.1:{server.port}, model qwen2.5:7b (1 of 2): "
        "session text stays on this machine"
    )  # the embedding model is not offered
    assert server.requests == [("GET", "/v1/models", b"")]


def test_a_port_answering_without_a_model_list_is_no_candidate(workspace: Path, tmp_path: Path) -> None:
    import functools
    from http.server import SimpleHTTPRequestHandler

    (tmp_path / "site").mkdir()

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    handler = functools.partial(Quiet, directory=str(tmp_path / "site"))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)  # a web app's dev server: /v1/models is a 404
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        port = httpd.server_address[1]
        env = {"PATH": "/nonexistent", "CAIRN_SETUP_PORTS": str(port)}
        assert detect_json(workspace, env) == {}
        assert f"; no model list on port {port})" in cairn(workspace, "setup", "--detect", env=env).stdout
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def test_detect_and_setup_without_a_terminal_write_nothing(
    workspace: Path, tmp_path: Path, server: Server, user_config_home: Path
) -> None:
    fake_program(tmp_path / "bin", "claude")
    env = {"PATH": str(tmp_path / "bin"), "CAIRN_SETUP_PORTS": str(server.port)}
    before = snapshot(user_config_home, workspace)
    listed = cairn(workspace, "setup", "--detect", env=env).stdout
    assert f"server:{server.port}" in listed and "claude" in listed and "in effect: extractive" in listed
    cairn(workspace, "setup", "--detect", "--json", env=env)
    plain = cairn(workspace, "setup", env=env)  # stdin is not a terminal: a listing, no question
    assert "nothing written (stdin is not a terminal)" in plain.stdout
    assert snapshot(user_config_home, workspace) == before
    assert not (user_config_home / "cairn").exists()


def test_use_writes_only_the_provider_keys_and_doctor_shows_it_answering(
    workspace: Path, server: Server, user_config_home: Path
) -> None:
    (user_config_home / "cairn").mkdir()
    mine = (
        '# my cairn settings\nmode = "auto"   # I decide\nprovider = "extractive"\n\n'
        '[prices]   # per 1M tokens\n"gpt-4o-mini" = { input = 0.15, output = 0.60 }\n'
    )
    (user_config_home / "cairn" / "config.toml").write_text(mine)
    env = {"PATH": "/nonexistent", "CAIRN_SETUP_PORTS": str(server.port)}
    r = cairn(workspace, "setup", "--use", f"server:{server.port}", env=env)
    assert "session text stays on this machine" in r.stdout
    text = (user_config_home / "cairn" / "config.toml").read_text()
    assert text == (
        '# my cairn settings\nmode = "auto"   # I decide\nprovider = "openai"\n'
        f'endpoint = "http://127.0.0.1:{server.port}/v1"\nmodel = "qwen2.5:7b"\n\n'
        '[prices]   # per 1M tokens\n"gpt-4o-mini" = { input = 0.15, output = 0.60 }\n'
    )
    assert oct((user_config_home / "cairn" / "config.toml").stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    server.requests.clear()
    doctor = cairn(workspace, "doctor", env=env)
    assert (
        f"provider openai http://127.0.0.1:{server.port}/v1 model qwen2.5:7b (local): "
        "answers (HTTP 200, the model is listed)"
    ) in doctor.stdout.splitlines()
    assert server.requests == [("GET", "/v1/models", b"")]  # a model list, never a chat request
    report = json.loads(cairn(workspace, "doctor", "--json", env=env).stdout)
    assert report["provider"]["provider"] == "openai" and report["provider"]["answers"] is True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_use_of_a_command_cli_and_doctor_runs_it_only_with_version(
    workspace: Path, tmp_path: Path, closed_port: int, user_config_home: Path
) -> None:
    log = fake_program(tmp_path / "bin", "claude")
    env = {"PATH": str(tmp_path / "bin"), "CAIRN_SETUP_PORTS": str(closed_port)}
    out = json.loads(cairn(workspace, "setup", "--use", "claude", "--json", env=env).stdout)
    assert out["settings"] == {"provider": "command", "command": ["claude", "-p"], "model": ""}
    assert out["in_effect_here"] is True and out["where"] == "remote"
    assert user_config(user_config_home) == {"provider": "command", "command": ["claude", "-p"], "model": ""}
    assert oct((user_config_home / "cairn" / "config.toml").stat().st_mode & 0o777) == "0o600"
    doctor = cairn(workspace, "doctor", env=env).stdout
    line = next(ln for ln in doctor.splitlines() if ln.startswith("provider "))
    assert line.startswith('provider command ["claude", "-p"] (remote): answers (`claude --version` in ')
    assert line.endswith(": 9.9.9 (fake claude))")
    assert [(r["argv"], r["stdin"]) for r in runs(log)] == [(["--version"], "")]  # no session text, no prompt


def test_a_trusted_workspace_file_that_names_another_provider_is_said(
    workspace: Path, tmp_path: Path, closed_port: int
) -> None:
    fake_program(tmp_path / "bin", "claude")
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn" / "config.toml").write_text('provider = "extractive"\n')
    env = {"PATH": str(tmp_path / "bin"), "CAIRN_SETUP_PORTS": str(closed_port)}
    cairn(workspace, "trust", str(workspace))
    r = cairn(workspace, "setup", "--use", "claude", env=env)
    assert "another provider is in effect" in r.stderr and "(trusted)" in r.stderr


def test_a_bad_use_name_is_a_fixed_error_and_writes_nothing(
    workspace: Path, tmp_path: Path, server: Server, user_config_home: Path
) -> None:
    fake_program(tmp_path / "bin", "claude")
    env = {"PATH": str(tmp_path / "bin"), "CAIRN_SETUP_PORTS": str(server.port)}
    before = snapshot(user_config_home, workspace)
    r = cairn(workspace, "setup", "--use", "chatgpt\x1b[31m", env=env, check=False)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(
        "cairn: E_PROVIDER_UNAVAILABLE: no digest provider named 'chatgpt\\x1b[31m' was found"
    )
    assert f"usable: server:{server.port}, claude" in r.stderr and "Traceback" not in r.stderr
    bad_model = cairn(
        workspace, "setup", "--use", f"server:{server.port}", "--model", "gpt-5", env=env, check=False
    )
    assert bad_model.returncode == 2
    assert (
        bad_model.stderr.startswith("cairn: E_PROVIDER_UNAVAILABLE: ")
        and "qwen2.5:7b, llama3.1:8b" in bad_model.stderr
    )
    assert snapshot(user_config_home, workspace) == before
    server.models = {"object": "list", "data": [{"id": "nomic-embed-text:latest"}]}  # nothing that can chat
    unusable = cairn(workspace, "setup", "--use", f"server:{server.port}", env=env, check=False)
    assert unusable.returncode == 2
    assert (
        unusable.stderr.startswith(
            f"cairn: E_PROVIDER_UNAVAILABLE: server:{server.port} was found but cannot digest: "
        )
        and "serves no chat model" in unusable.stderr
    )
    assert snapshot(user_config_home, workspace) == before


def test_model_chooses_another_listed_model(workspace: Path, server: Server, user_config_home: Path) -> None:
    env = {"PATH": "/nonexistent", "CAIRN_SETUP_PORTS": str(server.port)}
    cairn(workspace, "setup", "--use", f"server:{server.port}", "--model", "llama3.1:8b", env=env)
    assert user_config(user_config_home)["model"] == "llama3.1:8b"


def test_probes_that_hang_are_cut_off_by_the_timeout(
    workspace: Path, tmp_path: Path, silent_port: int, user_config_home: Path
) -> None:
    env = {"PATH": "/nonexistent", "CAIRN_SETUP_PORTS": str(silent_port), "CAIRN_PROBE_TIMEOUT_MS": "200"}
    started = time.monotonic()
    found = detect_json(workspace, env)
    assert time.monotonic() - started < 5  # one 0.2 s timeout, not a hang
    assert found[f"server:{silent_port}"]["available"] is False
    assert found[f"server:{silent_port}"]["detail"].endswith(
        f"127.0.0.1:{silent_port}: no answer within 0.2 s"
    )
    # doctor: an endpoint that never answers, and a program that never answers --version
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn" / "config.toml").write_text(
        f'provider = "openai"\nendpoint = "http://127.0.0.1:{silent_port}/v1"\nmodel = "m"\n'
    )
    started = time.monotonic()
    doctor = cairn(workspace, "doctor", env=env)
    assert time.monotonic() - started < 5
    assert (
        f"provider openai http://127.0.0.1:{silent_port}/v1 model m (local): does not answer (no answer within 0.2 s)"
        in doctor.stdout.splitlines()
    )
    log = fake_program(tmp_path / "bin", "claude", hang=True)
    (user_config_home / "cairn" / "config.toml").write_text(
        'provider = "command"\ncommand = ["claude", "-p"]\n'
    )
    started = time.monotonic()
    doctor = cairn(
        workspace, "doctor", env={"PATH": str(tmp_path / "bin"), "CAIRN_VERSION_TIMEOUT_MS": "300"}
    )
    assert time.monotonic() - started < 5
    assert (
        'provider command ["claude", "-p"] (remote): no answer to --version within 0.3 s (stopped)'
        in doctor.stdout.splitlines()
    )
    (run,) = runs(log)
    with pytest.raises(ProcessLookupError):
        os.kill(run["pid"], 0)  # killed and reaped, not left behind


def test_a_symlinked_user_config_is_never_replaced(
    workspace: Path, tmp_path: Path, closed_port: int, user_config_home: Path
) -> None:
    fake_program(tmp_path / "bin", "claude")
    target = tmp_path / "dotfiles-config.toml"
    target.write_text('mode = "manual"\n')
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn" / "config.toml").symlink_to(target)
    r = cairn(
        workspace,
        "setup",
        "--use",
        "claude",
        env={"PATH": str(tmp_path / "bin"), "CAIRN_SETUP_PORTS": str(closed_port)},
        check=False,
    )
    assert r.returncode == 2 and r.stderr.startswith("cairn: E_CONFIG_INVALID: ")
    assert 'provider = "command"; command = ["claude", "-p"]' in r.stderr  # what to add by hand
    assert (
        user_config_home / "cairn" / "config.toml"
    ).is_symlink() and target.read_text() == 'mode = "manual"\n'


def _read_until(fd: int, marker: bytes, seen: bytearray) -> None:
    deadline = time.monotonic() + 60
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0 and select.select([fd], [], [], left)[0], f"no {marker!r} in {bytes(seen)!r}"
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        assert chunk, f"the command ended before {marker!r}: {bytes(seen)!r}"
        seen += chunk


@pytest.mark.parametrize("answer", ["y", "n"])
def test_on_a_terminal_setup_asks_and_writes_only_after_a_yes(
    workspace: Path, tmp_path: Path, closed_port: int, user_config_home: Path, answer: str
) -> None:
    import pty

    fake_program(tmp_path / "bin", "claude")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [PYTHON, "-m", "cairn.server", "setup", "-w", str(workspace)],
        cwd=REPO,
        env=child_env(PATH=str(tmp_path / "bin"), CAIRN_SETUP_PORTS=str(closed_port)),
        stdin=slave,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    seen = bytearray()
    try:
        _read_until(master, b"Digest with which one? [1-1", seen)
        os.write(master, b"1\n")
        _read_until(master, b"[y/N]", seen)
        assert b"sent to Anthropic by your Claude Code login" in seen
        os.write(master, answer.encode() + b"\n")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    if answer == "y":
        assert user_config(user_config_home) == {
            "provider": "command",
            "command": ["claude", "-p"],
            "model": "",
        }
    else:
        assert not (user_config_home / "cairn" / "config.toml").exists()


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # a multi-line array is replaced whole; CRLF line ends and the comment above stay
        (
            '# mine\r\ncommand = [\r\n  "llm",\r\n  "-m", "x",\r\n]\r\n',
            '# mine\r\ncommand = ["claude", "-p"]\r\nprovider = "command"\r\n',
        ),
        # no top-level key yet: above the first table and the comment that belongs to it
        (
            '# about prices\n[prices]\n"a" = { input = 1 }\n',
            '# digest provider, chosen with `cairn setup`\nprovider = "command"\ncommand = ["claude", "-p"]\n\n'
            '# about prices\n[prices]\n"a" = { input = 1 }\n',
        ),
    ],
)
def test_the_user_config_is_edited_in_place(before: str, after: str) -> None:
    assert edit(before, {"provider": "command", "command": ("claude", "-p")}) == after


def test_values_from_a_server_are_escaped_in_the_config() -> None:
    text = edit("", {"model": 'we"ird\\\x7f\x1bé'})
    assert tomllib.loads(text) == {"model": 'we"ird\\\x7f\x1bé'}
    assert "\x1b" not in text and "\x7f" not in text


def test_a_port_list_that_is_not_numbers_is_reported_and_the_default_used(workspace: Path) -> None:
    r = cairn(
        workspace, "setup", "--detect", env={"PATH": "/nonexistent", "CAIRN_SETUP_PORTS": "11434,eleven"}
    )
    assert r.stderr.splitlines() == [
        "cairn: E_CONFIG_INVALID: CAIRN_SETUP_PORTS is not a list of whole numbers from 1 to 65535; "
        "the default 11434,1234,8080,8000,1337 is used"
    ]  # the value itself is not echoed
