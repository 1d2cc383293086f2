"""One megabyte of input built to make the new shapes backtrack still finishes quickly."""

from __future__ import annotations

import pytest
from cairn.worker.redact import redact_text

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
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_one_megabyte_adversarial_input_finishes(name: str) -> None:
    out = redact_text(ADVERSARIAL[name])
    assert isinstance(out, str)
