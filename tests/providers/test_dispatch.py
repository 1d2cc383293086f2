"""run_digest picks the provider named by the policy; access decides which policy may run and with which key."""

from __future__ import annotations

import pytest
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import Settings
from cairn.worker.providers import DEFAULT_API_KEY_ENV, access, default_policy, extractive, run_digest

from tests.providers.endpoint import Endpoint
from tests.providers.sessions import MIXED


def test_default_policy_is_the_extractive_engine() -> None:
    assert default_policy() == ModelPolicy(provider="extractive")
    assert DEFAULT_API_KEY_ENV == "CAIRN_OPENAI_API_KEY"


@pytest.mark.trio
async def test_extractive_policy_runs_the_embedded_engine() -> None:
    out = await run_digest(MIXED, default_policy())
    assert out == extractive.digest(MIXED)
    assert out.notes


@pytest.mark.trio
async def test_unknown_provider_is_config_invalid() -> None:
    with pytest.raises(CairnError) as info:
        await run_digest(MIXED, ModelPolicy(provider="gpt-local"))
    assert info.value.code == ErrorCode.CONFIG_INVALID


def _settings(base_url: str, api_key_env: str = "CAIRN_OPENAI_API_KEY") -> Settings:
    return Settings(provider="openai", model="m", endpoint=base_url, apiKeyEnv=api_key_env)


@pytest.mark.trio
async def test_openai_policy_reads_the_key_from_the_default_variable(endpoint: Endpoint) -> None:
    endpoint.answer_notes([])
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url, timeout_seconds=10.0)
    key = access.api_key(pol, _settings(endpoint.base_url), {"CAIRN_OPENAI_API_KEY": "key-from-env-123"})
    await run_digest(MIXED, pol, api_key=key)
    assert endpoint.requests[0].headers["authorization"] == "Bearer key-from-env-123"


@pytest.mark.trio
async def test_openai_policy_reads_the_configured_variable_and_nothing_else(endpoint: Endpoint) -> None:
    endpoint.answer_notes([])
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url, timeout_seconds=10.0)
    env = {"CAIRN_OPENAI_API_KEY": "wrong-key", "LOCAL_LLM_KEY": "right-key-456"}
    await run_digest(MIXED, pol, api_key=access.api_key(pol, _settings(endpoint.base_url, "LOCAL_LLM_KEY"), env))
    await run_digest(MIXED, pol, api_key=access.api_key(pol, _settings(endpoint.base_url), {"CAIRN_OPENAI_API_KEY": ""}))
    first, second = endpoint.requests
    assert first.headers["authorization"] == "Bearer right-key-456"
    assert "authorization" not in second.headers


def test_the_key_goes_only_to_the_configured_endpoint() -> None:
    env = {"CAIRN_OPENAI_API_KEY": "k"}
    mine = _settings("http://127.0.0.1:8080/v1/")
    pol = ModelPolicy(provider="openai", model="m", endpoint="http://127.0.0.1:8080/v1")
    other = ModelPolicy(provider="openai", model="m", endpoint="http://127.0.0.1:9999/v1")
    assert access.api_key(pol, mine, env) == "k"
    assert access.api_key(other, mine, env) is None
    assert access.api_key(pol, Settings(), env) is None  # the user configured no remote provider
    assert access.api_key(default_policy(), mine, env) is None  # the embedded engine needs none
    # a frozen policy the settings no longer name is not run: the embedded engine digests instead
    assert access.effective_policy(other, mine) == default_policy()
    assert access.effective_policy(pol, mine) == pol
