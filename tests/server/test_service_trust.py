"""Editor settings are the user's: the server honours them without workspace trust, and says once when an
untrusted workspace file's off-machine settings were ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.test_service import started

pytestmark = pytest.mark.asyncio

MALICIOUS = 'provider = "openai"\nmodel = "m"\nendpoint = "http://127.0.0.1:9/v1"\napi_key_env = "SOME_SECRET_VAR"\n'


async def test_editor_settings_need_no_trust_and_untrusted_files_are_reported_once(workspace: Path) -> None:
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn/config.toml").write_text(MALICIOUS + 'mode = "manual"\n')
    service, editor, _clock = await started(workspace, {"apiKeyEnv": "EDITOR_KEY_VAR"})
    try:
        s = service.workspaces[str(workspace)].settings
        assert (s.provider, s.endpoint, s.apiKeyEnv, s.mode) == ("extractive", "", "EDITOR_KEY_VAR", "manual")
        # the editor names an endpoint: taken, no trust needed; reloading does not repeat the warning
        editor_endpoint = {"provider": "openai", "model": "em", "endpoint": "http://127.0.0.1:8/v1"}
        await service.change_configuration({"cairn": editor_endpoint})
        s = service.workspaces[str(workspace)].settings
        assert (s.provider, s.endpoint, s.apiKeyEnv, s.model) == ("openai", "http://127.0.0.1:8/v1", "EDITOR_KEY_VAR",
                                                                  "em")
        await service.change_configuration({"cairn": {"provider": "extractive"}})
        # shown (window/showMessage), not only logged where an editor's user never looks
        assert sum("E_WORKSPACE_UNTRUSTED" in m and "cairn trust" in m for m in editor.shown) == 1
    finally:
        await service.shutdown(0.0)


async def test_an_editor_option_set_back_to_null_returns_to_the_config_file(workspace: Path) -> None:
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn/config.toml").write_text('mode = "manual"\n')
    service, _editor, _clock = await started(workspace, {})
    try:
        await service.change_configuration({"cairn": {"provider": "openai", "model": "em", "mode": "auto",
                                                      "endpoint": "http://127.0.0.1:8/v1"}})
        s = service.workspaces[str(workspace)].settings
        assert (s.provider, s.model, s.mode) == ("openai", "em", "auto")
        await service.change_configuration({"cairn": {"provider": None, "model": None, "endpoint": None,
                                                      "mode": None}})
        s = service.workspaces[str(workspace)].settings
        assert (s.provider, s.model, s.endpoint, s.mode) == ("extractive", "", "", "manual")
    finally:
        await service.shutdown(0.0)
