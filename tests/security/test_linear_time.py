"""One megabyte of input built to make the new shapes backtrack still finishes quickly; redaction is idempotent."""

from __future__ import annotations

import pytest
from cairn.worker.redaction.redact import redact_text
from hypothesis import given
from hypothesis import strategies as st

MB = 1 << 20

ADVERSARIAL = {
    "slack-hooks": "hooks.slack.com/services/" * (MB // 25),
    "discord-hooks": "discord.com/api/webhooks/1234567/" * (MB // 33),
    "account-keys": "AccountKey=" * (MB // 11),
    "telegram-digits": "1234567890:AA" * (MB // 13),
    "mailchimp-hex": ("0123456789abcdef" * 2 + "-u") * (MB // 34),
    "discord-dots": ("M" + "a1" * 12 + ".") * (MB // 26),
    "azure-tilde": "abc8Q~" * (MB // 6),
    "stripe-prefixes": "sk_live_" * (MB // 8),
    "gitlab-prefixes": "glpat-" * (MB // 6),
    "secret-labels": "secret " * (MB // 7),
    "label-then-words": ("token " + "a1B2c3D4e5F6g7H8i9J0k " * 5) * (MB // 120),
    "one-long-word": "aB3" * (MB // 3),
    "key-hex": "key-" * (MB // 4),
    "dotted": "a." * (MB // 2),
    "slashes": "a/" * (MB // 2),
    "camel": "AbcDef1" * (MB // 7),
    "encoded-schemes": "%3A%2F%2F" * (MB // 9),
    "encoded-userinfo": "%3A%2F%2Fu%3Ap%2F" * (MB // 17),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_one_megabyte_adversarial_input_finishes(name: str) -> None:
    """Fast on a megabyte of near-matches, and still right: a real token at its end is redacted."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    out = redact_text(ADVERSARIAL[name] + " then " + token)
    assert token not in out and "[REDACTED:" in out


WORDS = ["key", "token", "secret", "password", "aws", "heroku", "jira", "commit", "is", ":", "=", ".", "\n", "\n\n",
         " ", '"', "\\", "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1", "3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a", "npm_", "a1B2" * 9,
         "123e4567-e89b-12d3-a456-426614174000", "[REDACTED:secret]", "AccountKey=", "sk_live_", "x" * 20]


@given(st.lists(st.sampled_from(WORDS), max_size=40))
def test_redaction_with_labels_is_idempotent(words: list[str]) -> None:
    once = redact_text("".join(words))
    assert redact_text(once) == once
