"""A secret value recognised anywhere in a session is hidden wherever else the session repeats it bare.

Credentials known only by their label (``AWS_SECRET_ACCESS_KEY=…``,
``STAGING_API_KEY=…``, ``Authorization: Basic …``) are redacted where the
label stands; the same value repeated bare in an assistant's reply or a
later turn is followed by :func:`redact_session` (and
:func:`redact_known` with the values of :func:`known_secrets`).
Values are generated at import time (see :mod:`tests.security.samples`).
"""

from __future__ import annotations

import pytest
from cairn.worker.redaction import redact as gate
from cairn.worker.redaction.redact import (
    KnownSecrets,
    known_secrets,
    redact_known,
    redact_session,
    redact_text,
)

from tests.security.samples import ALNUM, B64, r

AWS = r(B64, 40)  # an AWS secret access key: 40 characters of base64, named only by its label
API = r(ALNUM, 16)
BASIC = r(B64, 28) + "=="


def _pieces(value: str) -> list[str]:
    return [value[k:k + 16] for k in range(0, len(value) - 15)]


def _clean(text: str, *values: str) -> bool:
    return not any(p in text for v in values for p in _pieces(v))


def test_a_labelled_value_is_hidden_where_the_reply_repeats_it_bare() -> None:
    user = f"Always export AWS_SECRET_ACCESS_KEY={AWS} before deploying."
    reply = f"Done: I exported {AWS} for this shell."
    assert redact_text(reply) == reply  # bare, nothing names it a secret
    assert redact_session([user, reply]) == [
        "Always export AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_access_key] before deploying.",
        "Done: I exported [REDACTED:aws_secret_access_key] for this shell.",
    ]


def test_a_value_is_hidden_in_every_text_of_the_session_before_or_after_its_label() -> None:
    texts = [
        f"Smoke tests with {API}",  # the session title, before the turn that states it
        f"Our convention: STAGING_API_KEY={API} for smoke tests.",
        "Noted.",
        "Please run the smoke tests.",
        f"Ran them with {API}: 12 passed.",
        f"Use {API} in CI too, and Authorization: Basic {BASIC} for the proxy.",
        f"The proxy answered once I sent {BASIC}.",
    ]
    out = redact_session(texts)
    assert all(_clean(t, API, BASIC) for t in out)
    assert out[0] == "Smoke tests with [REDACTED:api_key]"
    assert out[4] == "Ran them with [REDACTED:api_key]: 12 passed."
    assert out[6] == "The proxy answered once I sent [REDACTED:basic_auth]."
    assert out[2:4] == texts[2:4]


def test_a_value_inside_a_longer_word_is_hidden_too() -> None:
    out = redact_session([f"export STAGING_API_KEY={API}", f"curl 'https://metrics.example.com/?k={API}&v=1'"])
    assert out[1] == "curl 'https://metrics.example.com/?k=[REDACTED:api_key]&v=1'"


def test_a_bare_repeat_cut_over_lines_is_hidden_whole() -> None:
    user = f"Always export AWS_SECRET_ACCESS_KEY={AWS} before deploying."
    reply = f"Exported for this shell:\n{AWS[:20]}\n{AWS[20:]}\nok"
    assert not _clean(redact_text(reply), AWS)  # the rules alone leave both pieces
    out = redact_session([user, reply])
    assert out[1] == "Exported for this shell:\n[REDACTED:aws_secret_access_key]\nok"


def test_a_value_recognised_cut_over_lines_is_followed_where_it_stands_whole() -> None:
    scrollback = f"$ export AWS_SECRET_ACCESS_KEY={AWS[:9]}\n{AWS[9:]}\n$ make deploy"  # cut at 40 columns
    reply = f"Done: I exported {AWS} for this shell; {AWS[9:]} was the part on the second line."
    out = redact_session([scrollback, reply])
    assert out[0] == "$ export AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_access_key]\n$ make deploy"
    assert out[1] == ("Done: I exported [REDACTED:aws_secret_access_key] for this shell; "
                      "[REDACTED:aws_secret_access_key] was the part on the second line.")


@pytest.mark.parametrize(("labelled", "repeat"), [
    ("Our convention: DB_PASSWORD=changeme in every environment.", "Replace changeme in the docs."),
    ("Set pwd=ab12cd for the fixture.", "The ab12cd fixture loads."),  # 6 characters: redacted, not followed
    ("Use token=correcthorsebatterystaple for it.", "A correcthorsebatterystaple passphrase."),
    ("The deploy key is /etc/keys/deploy-2024.pem on the host.", "Copy /etc/keys/deploy-2024.pem first."),
])
def test_short_or_plain_labelled_values_are_redacted_only_where_labelled(labelled: str, repeat: str) -> None:
    """A value is followed with 8 characters or more, a letter and a digit, and not a path: no word of prose."""
    stated = f"Our convention: STAGING_API_KEY={API} for smoke tests."
    out = redact_session([labelled, stated, f"{repeat} Then {API}."])
    assert out == [redact_text(labelled), redact_text(stated), f"{repeat} Then [REDACTED:api_key]."]


def test_the_known_values_are_never_shown() -> None:
    known = KnownSecrets()
    gate.redact_collect(f"Always export AWS_SECRET_ACCESS_KEY={AWS} before deploying.", known)
    assert len(known) == 1
    assert repr(known) == str(known) == "<KnownSecrets: 1 value(s)>"


def test_hiding_is_idempotent() -> None:
    texts = [f"STAGING_API_KEY={API}", f"ran with {API}\nand\n{API[:8]}\n{API[8:]}"]
    once = redact_session(texts)
    assert once[1] == "ran with [REDACTED:api_key]\nand\n[REDACTED:api_key]"
    assert redact_session(once) == once
    known = KnownSecrets()
    for t in texts:
        gate.redact_collect(t, known)
    assert [known.hide(t) for t in once] == once


def test_known_secrets_reads_only_the_texts_a_note_could_quote(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"Our convention: STAGING_API_KEY={API} for smoke tests.", "Please run the smoke tests. " * 50,
             f"Ran them with {API}: 12 passed."]
    read: list[str] = []
    real = gate.redact_collect

    def counted(text: str, known: KnownSecrets) -> str:
        read.append(text)
        return real(text, known)

    monkeypatch.setattr(gate, "redact_collect", counted)
    assert len(known_secrets(texts, among="Prefers small commits. Never squash.")) == 0 and read == []
    note = f"Always run the smoke tests with {API}."
    known = known_secrets(texts, among=note)
    assert read == [texts[0], texts[2]]
    assert redact_known(note, known) == "Always run the smoke tests with [REDACTED:api_key]."
