"""Imports inside functions only where a cold start is measured and said (docs/adr/0016, "Imports").

Two checks. Every ``import`` inside a function of the four layers carries its
reason: a comment on its line or on the line just above (``# noqa`` alone is
no reason), or its module's docstring has a paragraph that starts with
``Imports inside functions:`` and names how it was measured
(``python -X importtime``) or the module that does. And the cold starts those
imports protect still load none of what they keep out: each path below runs
in a fresh interpreter and lists ``sys.modules``. The numbers themselves are
in CONTRIBUTING.md ("Cold start"); this test holds what they depend on, not a
timing.
"""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

from tests.support import PYTHON, REPO, child_env

LAYERS = ("protocol", "state", "worker", "server")
MARK = "Imports inside functions:"
_DIRECTIVE = re.compile(r"^(noqa(:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*)?|type:\s*ignore(\[[^\]]*\])?)\s*")


def _modules() -> list[Path]:
    return sorted(p for layer in LAYERS for p in (REPO / layer).rglob("*.py"))


def _reasons(source: str) -> set[int]:
    """Lines holding a comment that says something (a bare ``noqa`` or ``type: ignore`` does not)."""
    out = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            text = _DIRECTIVE.sub("", tok.string.lstrip("#").strip())
            if re.search(r"[A-Za-z]", text):
                out.add(tok.start[0])
    return out


def _function_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            walk(child, inside)

    walk(tree, False)
    return found


def _paragraph(doc: str | None) -> str | None:
    """The docstring's ``Imports inside functions:`` paragraph, if any."""
    if not doc or MARK not in doc:
        return None
    return doc[doc.index(MARK):].split("\n\n", 1)[0]


def test_every_import_inside_a_function_says_why() -> None:
    bare, vague = [], []
    total = 0
    for path in _modules():
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        rel = path.relative_to(REPO)
        paragraph = _paragraph(ast.get_docstring(tree))
        if paragraph is not None and "importtime" not in paragraph and ":mod:`" not in paragraph:
            vague.append(f"{rel}: {paragraph[:80]!r}")
        reasons = _reasons(source)
        for node in _function_imports(tree):
            total += 1
            if paragraph is None and not reasons & {node.lineno, node.lineno - 1}:
                bare.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert total > 0, "no import inside a function found: is the walk still looking at the layers?"
    assert not bare, ("imports inside functions without a reason (a comment on the line or just above, or a "
                      f"module docstring paragraph {MARK!r}; see docs/adr/0016):\n" + "\n".join(bare))
    assert not vague, (f"an {MARK!r} paragraph names no measurement (python -X importtime) nor the module "
                       "that gives it:\n" + "\n".join(vague))


_LIBRARIES = ("httpx", "mcp", "pydantic", "rich", "watchfiles")  # optional or only for one command or route

#: what an import that reads no transcript keeps out: the readers, the capture path and the records it writes,
#: the thread pool, the helper process (docs/adr/0022, "Consequences": a re-run with nothing new is start-up)
_NOTHING_TO_READ = ("cairn.worker.journal.capture", "cairn.worker.journal.import_split", "cairn.worker.ingest.resume",
                    "cairn.worker.ingest.importers.claude_code", "cairn.worker.ingest.importers.codex",
                    "cairn.worker.ingest.importers.aider", "cairn.worker.ingest.importers._format",
                    "cairn.protocol.journal", "cairn.protocol.memory", "concurrent", "subprocess", "logging",
                    "cairn.protocol.results",  # the other jobs' records: an import's are in protocol.import_results
                    "sqlite3",  # only where a database store is found
                    "shutil")  # argparse's width: server/cli/app.py reads it without

#: path -> (code run in a fresh interpreter, packages and cairn modules it must not have loaded)
COLD_PATHS = {
    "cairn --help": (
        "from cairn.server.cli.app import build_parser\nbuild_parser().format_help()",
        (*_LIBRARIES, "pygls", "lsprotocol", "trio", "yaml", "cattrs", "psutil",
         "cairn.worker.journal.capture", "cairn.worker.settings.config"),
    ),
    "worker test-echo": (
        "run('test-echo')",
        (*_LIBRARIES, "pygls", "trio", "yaml", "attrs", "cattrs", "psutil", "cairn.state", "cairn.worker.redaction",
         "cairn.worker.providers.extractive"),
    ),
    "worker status": (
        "run('status')",
        (*_LIBRARIES, "pygls", "trio", "yaml", "cairn.worker.journal.digest", "cairn.worker.memory.review"),
    ),
    "worker journal": (
        "run('journal')",
        (*_LIBRARIES, "pygls", "trio", "yaml", "cairn.worker.journal.digest"),
    ),
    "worker accept, proposals (the job modules)": (
        "from cairn.worker.entry import resolve\nresolve('accept')\nresolve('proposals')",
        (*_LIBRARIES, "pygls", "trio", "yaml", "cairn.worker.memory.review", "cairn.worker.memory.focused"),
    ),
    "cairn import --all (an empty home)": (
        "import os\nos.environ.update(HOME=sys.argv[1], XDG_CONFIG_HOME=sys.argv[1] + '/c', "
        "XDG_DATA_HOME=sys.argv[1] + '/d')\nfrom cairn.server.cli.app import main\n"
        "assert main(['import', '--all', '-w', sys.argv[1]]) == 0",
        (*_LIBRARIES, "pygls", "trio", "yaml", "asyncio", "ssl", "psutil", "cairn.server.watch",
         "cairn.server.cli.headless",
         "cairn.worker.journal.digest", *_NOTHING_TO_READ),
    ),
    "language server start": (
        "from cairn.server.lsp.server import build_server\nbuild_server()",
        (*_LIBRARIES, "trio", "yaml", "sqlite3", "cairn.worker.jobs.status", "cairn.worker.memory.views",
         "cairn.worker.journal.views", "cairn.worker.ingest.sources"),
    ),
}

_PRELUDE = """
import io, json, sys
def run(kind):
    from cairn.worker.entry import run_stdio
    req = json.dumps({"record": "worker-request", "v": 1, "job": kind, "workspace": sys.argv[1], "args": {}})
    out = io.BytesIO()
    run_stdio([kind], io.BytesIO(req.encode()), out, sys.stderr)
    assert json.loads(out.getvalue())["status"] == "ok", out.getvalue()
"""


@pytest.mark.parametrize("path", sorted(COLD_PATHS))
def test_a_cold_start_loads_none_of_what_it_keeps_out(path: str, tmp_path: Path) -> None:
    code, kept_out = COLD_PATHS[path]
    script = f"{_PRELUDE}\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([PYTHON, "-c", script, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path,
                       env=child_env(CAIRN_TEST_JOBS="1"), timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = json.loads(r.stdout.splitlines()[-1])
    found = sorted(m for m in loaded if any(m == k or m.startswith(k + ".") for k in kept_out))
    assert not found, f"{path} loads what its cold start keeps out (see CONTRIBUTING.md, Cold start): {found}"


def test_an_import_that_finds_nothing_new_loads_no_reader_and_no_capture(tmp_path: Path) -> None:
    """A second ``cairn import --all`` over a home whose sessions were all imported: every file is
    unchanged (docs/adr/0022), so none is read, and the readers and the capture path are never loaded."""
    home = tmp_path / "home"
    claude = home / ".claude" / "projects" / "-work"
    claude.mkdir(parents=True)
    real = REPO / "tests" / "fixtures" / "transcripts" / "claude-code" / "speakfree-ide-context.jsonl"
    (claude / "7d48b15d-e2d0-4b94-a40b-621ba5e8485f.jsonl").write_bytes(real.read_bytes())
    rollouts = sorted((REPO / "tests" / "fixtures" / "transcripts" / "codex").glob("rollout-*.jsonl"))
    day = home / ".codex" / "sessions" / "2025" / "07" / "14"
    day.mkdir(parents=True)
    (day / rollouts[0].name).write_bytes(rollouts[0].read_bytes())
    ws = tmp_path / "ws"
    ws.mkdir()
    script = ("import json, os, sys\nos.environ.update(HOME=sys.argv[1], XDG_CONFIG_HOME=sys.argv[1] + '/c', "
              "XDG_DATA_HOME=sys.argv[1] + '/d')\nfrom cairn.server.cli.app import main\n"
              "code = main(['import', '--all', '--every-workspace', '--json', '-w', sys.argv[2]])\n"
              "print(json.dumps([code, sorted(sys.modules)]))")
    runs = []
    for _ in range(2):
        r = subprocess.run([PYTHON, "-c", script, str(home), str(ws)], capture_output=True, text=True, cwd=tmp_path,
                           env=child_env(CAIRN_TEST_JOBS="1"), timeout=120)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.splitlines()[-1]))
    (first_code, first), (code, loaded) = runs
    assert first_code == code == 0
    assert "cairn.worker.journal.capture" in first, "the first import captured nothing: the fixture is not read"
    # discovery knows each store's format: the first import loads those two readers, not the twenty others
    readers = sorted(m.rsplit(".", 1)[1] for m in first if m.startswith("cairn.worker.ingest.importers.")
                     and not m.rsplit(".", 1)[1].startswith("_"))
    assert readers == ["claude_code", "codex"]
    found = sorted(m for m in loaded if any(m == k or m.startswith(k + ".") for k in _NOTHING_TO_READ))
    assert not found, f"an import with nothing new loads what only a read needs: {found}"
