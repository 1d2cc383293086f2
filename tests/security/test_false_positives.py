"""The high-entropy fallback: what it catches after a secret label, and what real text it leaves alone.

Measured with ``python -m pytest tests/security/test_false_positives.py``
(thresholds in :mod:`worker.redaction.secret_labels`): random tokens of 20 characters
are caught at least 90% of the time, of 32 and more at least 98%; real
transcripts, this repository's documents and the standard library's
networking and authentication modules (real code that names passwords,
keys and tokens everywhere) give no fallback redaction at all.
"""

from __future__ import annotations

import random
import string
import sysconfig
from pathlib import Path

import pytest
from cairn.worker.redaction import secret_labels
from cairn.worker.redaction.redact import redact_text

from tests.support import REPO

STDLIB = Path(sysconfig.get_paths()["stdlib"])
REAL_CODE = ["urllib/request.py", "urllib/parse.py", "smtplib.py", "ftplib.py", "imaplib.py", "poplib.py",
             "getpass.py", "hmac.py", "hashlib.py", "ssl.py", "netrc.py", "http/client.py", "http/cookiejar.py",
             "email/utils.py", "uuid.py", "zipfile.py", "base64.py", "tokenize.py", "secrets.py"]
DOCTEST_TOKENS = {"secrets.py": 2}  # its docstrings show example tokens: those are redacted, rightly
#: real transcripts that hold a real credential: exactly those values are redacted, nothing else changes
REAL_SECRETS = {"session-ses_2560.md": 1}  # an MCP server config with its database password spelled out


def _fallback_hits(text: str) -> list[str]:
    hits: list[str] = []

    def marker(kind: str) -> str:
        hits.append(kind)
        return f"[REDACTED:{kind}]"

    secret_labels.redact_labelled(text, marker)
    return hits


def test_real_transcripts_come_through_unchanged() -> None:
    files = [p for p in (REPO / "tests/fixtures/transcripts").rglob("*") if p.is_file()]
    assert len(files) >= 5
    for p in files:
        text = p.read_text(errors="replace")
        redacted = redact_text(text)
        expected = REAL_SECRETS.get(p.name, 0)
        assert redacted.count("[REDACTED:") - text.count("[REDACTED:") == expected, p.name
        if not expected:
            assert redacted == text, p.name


def test_repository_documents_give_no_fallback_redaction() -> None:
    for p in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        assert _fallback_hits(p.read_text()) == [], p.name


@pytest.mark.parametrize("rel", REAL_CODE)
def test_real_code_gives_no_fallback_redaction(rel: str) -> None:
    path = STDLIB / rel
    assert path.is_file(), f"{rel} is part of the standard library of every supported Python (3.11+)"
    assert len(_fallback_hits(path.read_text(errors="replace"))) == DOCTEST_TOKENS.get(rel, 0)


ALPHABETS = {"base62": string.ascii_letters + string.digits, "base64": string.ascii_letters + string.digits + "+/",
             "hex": "0123456789abcdef", "urlsafe": string.ascii_letters + string.digits + "_-"}


@pytest.mark.parametrize(("length", "recall"), [(20, 0.90), (32, 0.98), (40, 0.99), (64, 0.99)])
@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
def test_random_tokens_after_a_label_are_caught(alphabet: str, length: int, recall: float) -> None:
    rng = random.Random(length)
    words = ["".join(rng.choice(ALPHABETS[alphabet]) for _ in range(length)) for _ in range(500)]
    caught = sum("[REDACTED:secret]" in redact_text(f"the api token is {w} here") for w in words)
    assert caught >= recall * len(words)


@pytest.mark.parametrize("text", [
    "The key insight is that worker/memory/engine.py stays pure.",
    "The secret is to keep src/cairn/worker/providers/openai_compat.py small.",
    "the key commit is 3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a and it fixed the race",
    "the token id 123e4567-e89b-12d3-a456-426614174000 names the session",
    "primary key is tenant_id_and_user_id_2024 in the ledger table",
    "the key binding is C-c C-k, and the password prompt uses getpass.getpass(prompt)",
    "Tokens come from tokenizer.TokenizerFast.from_pretrained and the api key from os.environ",
    "secret_key_base lives in config/credentials.yml.enc, key ~/.ssh/id_ed25519_work2024",
    "Use Base64HighEntropyString and HexHighEntropyString detectors for the key checks.",
    "The token: see https://docs.example.com/auth/tokens#personal-access-tokens-2024",
    "Passwords are required (min 12 characters); the token is optional",
    "passwd = getpass.getpass(prompt) and password = self._password",
    "The API key field is named X-Api-Key and the header is Authorization.",
    "key 42, token 17, secret level 3 in the game config",
])
def test_prose_paths_hashes_and_identifiers_after_labels_are_kept(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize("text", [
    "the AWS secret key is {} for staging",
    "password {}",
    "API key: {}",
    "our signing secret, which is {}, never changes",
    "token={}",
    'creds = "{}"',
    "export SECRET_KEY_BASE={}",
])
def test_random_value_after_a_label_is_redacted(text: str) -> None:
    value = "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9E"
    assert value not in redact_text(text.format(value))
