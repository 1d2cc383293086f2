"""run_digest picks the provider named by the frozen policy and reads the API key from the environment."""

from __future__ import annotations

import pytest
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.providers import DEFAULT_API_KEY_ENV, default_policy, extractive, run_digest

from tests.providers.endpoint import Endpoint
from tests.providers.sessions import MIXED


def test_default_policy_is_the_extractive_engine() -> None:
    assert default_policy() == ModelPolicy(provider="extractive")
    assert DEFAULT_API_KEY_ENV == "CAIRN_OPENAI_API_KEY"


@pytest.mark.trio
async def test_extractive_policy_runs_the_embedded_engine() -> None:
    out = await run_digest(MIXED, default_policy(), env={})
    assert out == extractive.digest(MIXED)
    assert out.notes


@pytest.mark.trio
async def test_unknown_provider_is_config_invalid() -> None:
    with pytest.raises(CairnError) as info:
        await run_digest(MIXED, ModelPolicy(provider="gpt-local"), env={})
    assert info.value.code == ErrorCode.CONFIG_INVALID


@pytest.mark.trio
async def test_openai_policy_reads_the_key_from_the_default_variable(endpoint: Endpoint) -> None:
    endpoint.answer_notes([])
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url, timeout_seconds=10.0)
    await run_digest(MIXED, pol, env={"CAIRN_OPENAI_API_KEY": "key-from-env-123"})
    assert endpoint.requests[0].headers["authorization"] == "Bearer key-from-env-123"


@pytest.mark.trio
async def test_openai_policy_reads_the_configured_variable_and_nothing_else(endpoint: Endpoint) -> None:
    endpoint.answer_notes([])
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url, timeout_seconds=10.0)
    env = {"CAIRN_OPENAI_API_KEY": "wrong-key", "LOCAL_LLM_KEY": "right-key-456"}
    await run_digest(MIXED, pol, env=env, api_key_env="LOCAL_LLM_KEY")
    await run_digest(MIXED, pol, env={"CAIRN_OPENAI_API_KEY": ""})
    first, second = endpoint.requests
    assert first.headers["authorization"] == "Bearer right-key-456"
    assert "authorization" not in second.headers
