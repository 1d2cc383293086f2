"""Fixtures shared by the whole suite; plain helpers live in :mod:`tests.support`.

``client`` is the real ``cairn serve`` over stdio, started by pytest-lsp for
one test and initialized on the ``workspace`` fixture. Per test:
``@pytest.mark.lsp_options({...})`` sets the initialization options and
``@pytest.mark.lsp_env(NAME="value")`` adds to the server's environment.
Files the server must find at start are written by fixtures named before
``client`` in the test's arguments. The session is always shut down (a
server that will not leave is killed).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from hypothesis import settings
from pytest_lsp import LanguageClient

from tests.server.lsp_harness import SERVE, end_session, initialize_params

# Property tests: one profile for the whole suite (no test sets its own example count).
# "dev" (default) explores new examples each run; "ci" (CI=true) replays the same ones so a
# red build is reproducible; CAIRN_HYPOTHESIS=full explores ten times as far.
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True, print_blob=True)
settings.register_profile("full", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("CAIRN_HYPOTHESIS") or ("ci" if os.environ.get("CI") == "true" else "dev"))


@pytest.fixture(autouse=True)
def user_config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test (and every subprocess it starts) gets its own empty user config home:
    the real ``~/.config/cairn`` (settings, trusted workspaces) is never read or written."""
    home = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture(autouse=True)
def lsp_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Apply a test's ``lsp_env`` marker before its server starts (autouse fixtures run first)."""
    marker = request.node.get_closest_marker("lsp_env")
    for name, value in (marker.kwargs if marker else {}).items():
        monkeypatch.setenv(name, value)


@pytest_lsp.fixture(config=SERVE)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 workspace: Path) -> AsyncIterator[None]:
    marker = request.node.get_closest_marker("lsp_options")
    options = dict(marker.args[0]) if marker else {}
    try:
        await lsp_client.initialize_session(initialize_params(workspace, options))
    except BaseException:
        await end_session(lsp_client)  # pytest-lsp stops the client only after a successful setup
        await lsp_client.stop()
        raise
    yield
    await end_session(lsp_client)
