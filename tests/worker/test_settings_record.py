"""The settings record is the one list of options: the layers, the editors and the docs agree with it."""

from __future__ import annotations

import re

import attrs
import pytest
from cairn.protocol.settings import MODES, PROVIDERS, Settings, context_window
from cairn.worker.settings import config

from tests.support import REPO

EMACS = (REPO / "editors" / "emacs" / "cairn.el").read_text(encoding="utf-8")
NVIM = (REPO / "editors" / "nvim" / "lua" / "cairn" / "config.lua").read_text(encoding="utf-8")
FIELDS = {f.name for f in attrs.fields(Settings)}


def _defcustom_choices(name: str) -> tuple[str, ...]:
    m = re.search(rf"\(defcustom {re.escape(name)} .*?:type '\(choice (.*?)\)\s*\n\s*:set", EMACS, re.S)
    assert m, name
    return tuple(re.findall(r'\(const "([a-z]+)"\)', m.group(1)))


@pytest.mark.parametrize(("name", "vocabulary"), [("cairn-mode-setting", MODES), ("cairn-provider", PROVIDERS)])
def test_the_emacs_choices_are_the_records_vocabulary(name: str, vocabulary: tuple[str, ...]) -> None:
    assert _defcustom_choices(name) == vocabulary


def test_every_option_emacs_sends_is_a_settings_field() -> None:
    body = EMACS[EMACS.index("(defun cairn--settings "):EMACS.index("(defun cairn--settings-object")]
    sent = set(re.findall(r"\(:([A-Za-z]+) \. ", body))
    assert sent and sent <= FIELDS, sent - FIELDS


def test_the_neovim_defaults_send_only_settings_fields() -> None:
    block = NVIM[NVIM.index("M.defaults = {"):]
    settings = re.search(r"\bsettings = \{(.*?)\}", block, re.S)
    assert settings is not None
    keys = set(re.findall(r"\b([A-Za-z]+)\s*=", settings.group(1)))
    assert keys <= FIELDS, keys - FIELDS


@pytest.mark.parametrize(("field", "bad"), [("mode", "always"), ("provider", "gpt"), ("idleMinutes", -1.0),
                                             ("timeoutSeconds", float("inf")), ("contextTokens", -5)])
def test_the_record_refuses_values_outside_its_vocabulary_and_the_merge_keeps_the_layer_below(field: str, bad: object) -> None:
    with pytest.raises(ValueError):
        Settings(**{field: bad})  # type: ignore[arg-type]
    merged, warnings = config.merge(Settings(), {field: bad}, source="test")
    assert merged == Settings()
    assert [w.code for w in warnings] == ["E_CONFIG_INVALID"] and field in warnings[0].message


def test_context_tokens_unset_is_not_the_default_and_null_keeps_the_layer_below() -> None:
    # unset: the provider decides (protocol.settings.context_window); a value set is kept, 8192 included
    assert Settings().contextTokens is None
    assert context_window("command") == 32768 and context_window("openai") == 8192
    assert context_window("command", 8192) == 8192
    toml, warnings = config.merge(Settings(), {"provider": "command", "context_tokens": 8192}, source="t", snake=True)
    assert toml.contextTokens == 8192 and warnings == []
    editor, warnings = config.merge(toml, {"contextTokens": None}, source="editor settings")
    assert editor.contextTokens == 8192 and warnings == []
    # a worker receives the resolved record: unset stays unset, set stays set
    assert config.from_request(config.to_dict(Settings(provider="command"))).contextTokens is None
    assert config.from_request(config.to_dict(toml)).contextTokens == 8192


def test_the_editors_leave_context_tokens_to_the_provider_by_default() -> None:
    body = EMACS[EMACS.index("(defun cairn--settings "):EMACS.index("(defun cairn--settings-object")]
    assert "contextTokens" not in body
    block = NVIM[NVIM.index("M.defaults = {"):]
    settings = re.search(r"\bsettings = \{(.*?)\}", block, re.S)
    assert settings is not None and "contextTokens" not in settings.group(1)
