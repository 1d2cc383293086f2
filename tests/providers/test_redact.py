"""Secrets become ``[REDACTED:<kind>]``; ordinary text is untouched; time stays linear."""

from __future__ import annotations

import pytest
from cairn.worker.redaction.redact import redact
from hypothesis import given
from hypothesis import strategies as st

GH = "ghp_" + "a1B2c3D4e5" * 4
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
    "aNAoGBAKnSaP8jZ+0fcDHwnmAuCk=\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv", "key [REDACTED:openai_key]"),
        ("sk-Ab3dEf6hIj9kLm2nOp5qRs8tUvWx1yZ", "[REDACTED:openai_key]"),
        ("export K=sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2", "export K=[REDACTED:anthropic_key]"),
        (f"token {GH} here", "token [REDACTED:github_token] here"),
        ("gho_" + "Q" * 30 + "1234 x", "[REDACTED:github_oauth_token] x"),
        ("ghs_" + "z9" * 18, "[REDACTED:github_app_token]"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED:github_fine_grained_token]"),
        ("id AKIAIOSFODNN7EXAMPLE.", "id [REDACTED:aws_access_key_id]."),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [REDACTED:aws_secret_access_key]",
        ),
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_access_key]",
        ),
        ("slack xoxb-123456789012-abcdefABCDEF", "slack [REDACTED:slack_bot_token]"),
        ("xoxp-1-2-3-abcdef123456", "[REDACTED:slack_user_token]"),
        ("maps AIzaSyD4c9X-1234567890abcdefghijklmnop_", "maps [REDACTED:google_api_key]"),
        ("Authorization: Bearer abc123.def456-ghi789_jkl", "Authorization: Bearer [REDACTED:bearer_token]"),
        (
            "curl -H 'authorization: bearer 0123456789abcdef0123'",
            "curl -H 'authorization: bearer [REDACTED:bearer_token]'",
        ),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED:basic_auth]"),
        (f"jwt={JWT}", "jwt=[REDACTED:jwt]"),
        (f"cookie {JWT} end", "cookie [REDACTED:jwt] end"),
        (f"before\n{PEM}\nafter", "before\n[REDACTED:private_key]\nafter"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY----- ok",
            "[REDACTED:private_key] ok",
        ),
        ("x -----BEGIN PRIVATE KEY-----\nMIIE unterminated\nmore", "x [REDACTED:private_key]"),
        ("postgres://app:hunter2@db:5432/x", "postgres://app:[REDACTED:password]@db:5432/x"),
        (
            "see https://bob:p%40ss:w0rd@example.com/path",
            "see https://bob:[REDACTED:password]@example.com/path",
        ),
        ("redis://:s3cretpass@cache:6379", "redis://:[REDACTED:password]@cache:6379"),
        ("API_KEY=abcd1234efgh5678", "API_KEY=[REDACTED:api_key]"),
        ("stripe_api_key: 'rk_live_51Hx9aB2c'", "stripe_api_key: '[REDACTED:api_key]'"),
        ('{"password": "correct horse battery"}', '{"password": "[REDACTED:password]"}'),
        ("DB_PASSWORD=hunter22", "DB_PASSWORD=[REDACTED:password]"),
        ("password: s3cr3tpw", "password: [REDACTED:password]"),
        ("client_secret=9f8e7d6c5b4a39281706", "client_secret=[REDACTED:secret]"),
        ("GITLAB_TOKEN=glpat-x1y2z3a4b5c6d7e8", "GITLAB_TOKEN=[REDACTED:token]"),
        (
            "https://api.example.com/v1?token=abc123def456ghi789&x=1",
            "https://api.example.com/v1?token=[REDACTED:token]&x=1",
        ),
        (
            "two keys sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv and AKIAIOSFODNN7EXAMPLE",
            "two keys [REDACTED:openai_key] and [REDACTED:aws_access_key_id]",
        ),
    ],
)
def test_secrets_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "We always squash-merge pull requests.",
        "commit 3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a fixed it",
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "https://github.com/acme/app/pull/12 and http://localhost:8080/health",
        "ssh://git@github.com/acme/app.git",
        "https://user@example.com/path",
        "http://example.com:8080/a@b",
        "mailto:someone@example.com",
        "Use scikit-learn, sk-learn is a different thing.",
        "sk-this-is-a-long-hyphenated-css-class-name",
        "The token: required for every call.",
        "password: ${DB_PASSWORD}",
        "api_key = os.environ['API_KEY']",
        "token = <your-token-here>",
        "secret: ********",
        "The bearer of this message is tokenization-friendly.",
        "Bearer authentication is configured.",
        "a tokenizer=BertTokenizerFast() call",
        "Passwords must be hashed with argon2.",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
        "AKIA is the prefix of AWS access key ids.",
        "eyJ is how base64 JSON starts.",
        "the highway_to_hell_is_paved_with_good_intentions_0123456789",
        "",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text


def test_redaction_is_idempotent_on_the_examples() -> None:
    sample = f"{GH} {JWT} postgres://a:b1234567@h {PEM} API_KEY=abcd1234efgh5678 Bearer abc123def456ghi789"
    once = redact(sample)
    assert redact(once) == once
    assert "[REDACTED:" in once and GH not in once and "b1234567" not in once


@given(
    st.text(
        alphabet=st.sampled_from(list("sk-antghp_AKIAeyJ.:/@=\"' \nbearerpasswordtoken0123456789xX")),
        max_size=200,
    )
)
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


MB = 1 << 20

ADVERSARIAL = {
    "jwt-prefixes": "eyJ" * (MB // 3),
    "jwt-segments": "eyJaaaaaaaaa." * (MB // 13),
    "openai-prefixes": "sk-" * (MB // 3),
    "long-token-run": "sk-" + "a" * MB,
    "schemes": "a://" * (MB // 4),
    "long-userinfo": ("a://" + "b" * 250 + ":") * (MB // 256),
    "colons-after-scheme": "a://b:" + "c:" * (MB // 2),
    "assignments": "password=" * (MB // 9),
    "spaced-assignments": "token : " * (MB // 8),
    "unterminated-pem": "-----BEGIN RSA PRIVATE KEY-----\n" * (MB // 32),
    "bearers": "Bearer " * (MB // 7),
    "aws-labels": "aws_secret_access_key=" * (MB // 22),
    "akia": "AKIA" * (MB // 4),
    "authorization": "Authorization: Basic " * (MB // 21),
    "single-run": "a" * MB,
    "ats": "@" * MB,
    "quotes": 'password="' * (MB // 10),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_one_megabyte_adversarial_input_finishes(name: str) -> None:
    """Catastrophic backtracking on 1 MB would take hours; linear time takes well under a second."""
    text = ADVERSARIAL[name]
    out = redact(text)
    assert isinstance(out, str)


def test_a_marker_inside_a_cut_word_is_redacted_to_a_fixed_point() -> None:
    """Found by the property test: the first pass redacted the labelled uuid, and the marker made the
    cut word's random piece under the ``key`` line readable as a labelled secret on a second pass."""
    text = "key\n\nkeykey\n.Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1AccountKey=123e4567-e89b-12d3-a456-426614174000"
    once = redact(text)
    assert redact(once) == once
    assert "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1" not in once
