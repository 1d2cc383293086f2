"""Test doubles live in each layer's ``testing`` module, and production never imports one.

``cairn.server.testing`` (the fake clock) and ``cairn.worker.testing`` (the
runner's test jobs, named only by string in ``TEST_REGISTRY`` and enabled by
``CAIRN_TEST_JOBS=1``) ship with the package but are dead weight to it: a
production import would make a fake reachable from a real run.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from cairn.worker.entry import TEST_REGISTRY

from tests.support import PYTHON, REPO, child_env

LAYERS = ("protocol", "state", "worker", "server")
DOUBLES = {"cairn.server.testing", "cairn.worker.testing"}


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("cairn", *parts))


def _imports(source: str, module: str, is_package: bool) -> set[str]:
    """Every module an import statement in ``source`` names (relative imports resolved)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _doubles(names: set[str]) -> set[str]:
    return {name for name in names if any(name == d or name.startswith(d + ".") for d in DOUBLES)}


def test_no_production_module_imports_a_testing_module() -> None:
    offenders = []
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            module = _module(path)
            if module in DOUBLES:
                continue
            found = _doubles(_imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"))
            offenders += [f"{path.relative_to(REPO)}: {name}" for name in sorted(found)]
    assert not offenders, offenders


def test_the_scan_sees_relative_and_absolute_imports() -> None:
    assert _module(REPO / "worker" / "memory" / "apply.py") == "cairn.worker.memory.apply"
    assert _module(REPO / "server" / "lsp" / "features" / "__init__.py") == "cairn.server.lsp.features"
    source = "from ..testing import job_echo\nimport cairn.server.testing\nfrom cairn.state import claims\n"
    assert _doubles(_imports(source, "cairn.worker.memory.apply", False)) == {
        "cairn.worker.testing", "cairn.worker.testing.job_echo", "cairn.server.testing"}
    assert _doubles(_imports("from . import testing\n", "cairn.server", True)) == {"cairn.server.testing"}


def test_test_jobs_live_in_the_worker_testing_module() -> None:
    assert TEST_REGISTRY
    assert {target.partition(":")[0] for target in TEST_REGISTRY.values()} == {"cairn.worker.testing"}


def test_a_production_start_loads_no_testing_module() -> None:
    code = ("import sys, cairn.server.lsp.server, cairn.server.lsp.serve, cairn.server.cli.app, cairn.worker.entry; "
            "print(sorted(m for m in sys.modules if m.endswith('.testing') and m.startswith('cairn.')))")
    out = subprocess.run([PYTHON, "-c", code], env=child_env(), capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
