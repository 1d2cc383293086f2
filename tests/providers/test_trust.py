"""Keys and endpoints: the configured key variable, and workspace trust, against a real endpoint on 127.0.0.1.

Every test runs with its own empty ``XDG_CONFIG_HOME`` (tests/conftest.py):
trusting a workspace here never touches the real user configuration.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cairn.protocol.worker import WorkerRequest
from cairn.worker.entry import run_request

from tests.journal.helpers import ALL_FORMATS, DEMO, cairn, cairn_json
from tests.providers.endpoint import Endpoint

SECRET_VAR = "CAIRN_TEST_SOME_SECRET_VAR"
SECRET = "s3cret-Zq8Xw7Vu6Ts5Rq4Po3"
DEFAULT_KEY = "default-key-not-to-be-sent"
ENV = {SECRET_VAR: SECRET, "CAIRN_OPENAI_API_KEY": DEFAULT_KEY}


def _ok(req: WorkerRequest) -> dict[str, object]:
    resp = run_request(req)
    assert resp.status == "ok", (resp.error, resp.message)
    return resp.result


def test_digest_sends_the_key_of_the_configured_variable(
    endpoint: Endpoint, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker path (the language server's): settings arrive in the request, the key follows apiKeyEnv."""
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    endpoint.answer_notes([])
    config = {"provider": "openai", "model": "digest-model", "endpoint": endpoint.base_url, "apiKeyEnv": SECRET_VAR}
    ws = str(workspace)
    _ok(WorkerRequest(job="import", workspace=ws, args={"paths": [str(DEMO)], "format": "auto"}, config=config))
    _ok(WorkerRequest(job="seal", workspace=ws, args={"trigger": "session-end"}, config=config))
    counts = _ok(WorkerRequest(job="process", workspace=ws, config=config))
    assert counts["all_none"] == 1 and counts["failed"] == 0, counts
    (req,) = endpoint.requests
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert json.loads(req.body)["model"] == "digest-model"


def _malicious(ws: Path, endpoint: Endpoint) -> None:
    (ws / ".cairn").mkdir()
    (ws / ".cairn/config.toml").write_text(
        f'provider = "openai"\nmodel = "m"\nendpoint = "{endpoint.base_url}"\napi_key_env = "{SECRET_VAR}"\n'
        'mode = "manual"\n')


def test_an_untrusted_workspace_cannot_send_a_key_until_trusted(endpoint: Endpoint, workspace: Path) -> None:
    _malicious(workspace, endpoint)
    endpoint.answer_notes([])
    # untrusted: import, seal, digest and review all run, and nothing reaches the endpoint
    r = cairn(workspace, "run", str(DEMO), env=ENV)
    assert endpoint.requests == []
    assert r.stderr.count("E_WORKSPACE_UNTRUSTED") == 1, r.stderr
    assert "provider, endpoint, api_key_env" in r.stderr and SECRET not in r.stderr
    assert "published 1" in r.stdout  # the embedded engine digested it
    assert "not trusted" in cairn(workspace, "doctor").stdout

    # trusted: the workspace's endpoint gets the request, with the key of its variable
    out = cairn_json(workspace, "trust")
    assert out == {"workspace": str(workspace.resolve()), "trusted": True, "changed": True}
    assert "trusted (list" in cairn(workspace, "doctor").stdout
    assert cairn_json(workspace, "trust", "--list") == [str(workspace.resolve())]
    r = cairn(workspace, "run", str(ALL_FORMATS["codex"]), env=ENV)
    assert "E_WORKSPACE_UNTRUSTED" not in r.stderr
    (req,) = endpoint.requests
    assert req.headers["authorization"] == f"Bearer {SECRET}"

    # untrusted again: not again
    assert cairn_json(workspace, "untrust")["changed"] is True
    assert cairn(workspace, "trust", "--list").stdout == "no trusted workspaces\n"
    r = cairn(workspace, "run", str(ALL_FORMATS["claude-code"]), env=ENV)
    assert len(endpoint.requests) == 1
    assert r.stderr.count("E_WORKSPACE_UNTRUSTED") == 1


def test_a_capture_frozen_while_trusted_is_not_sent_after_untrust(endpoint: Endpoint, workspace: Path) -> None:
    _malicious(workspace, endpoint)
    cairn(workspace, "trust")
    cairn(workspace, "import", str(DEMO), env=ENV)  # frozen policy: the workspace's endpoint
    cairn(workspace, "seal")
    cairn(workspace, "untrust")
    counts = json.loads(cairn(workspace, "process", "--json", env=ENV).stdout)
    assert endpoint.requests == []
    assert counts["published"] == 1 and counts["failed"] == 0, counts
    (digest,) = cairn_json(workspace, "journal")
    assert digest["provider"] == "extractive"


def test_user_config_names_the_endpoint_without_any_trust(endpoint: Endpoint, workspace: Path,
                                                          user_config_home: Path) -> None:
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn/config.toml").write_text(
        f'provider = "openai"\nmodel = "m"\nendpoint = "{endpoint.base_url}"\napi_key_env = "{SECRET_VAR}"\n')
    endpoint.answer_notes([])
    r = cairn(workspace, "run", str(DEMO), env=ENV)
    assert "E_WORKSPACE_UNTRUSTED" not in r.stderr
    (req,) = endpoint.requests
    assert req.headers["authorization"] == f"Bearer {SECRET}"
