"""Every credential kind is redacted in a sentence; a near miss of every kind is left alone."""

from __future__ import annotations

import re

import pytest
from cairn.worker.redaction.redact import kinds, redact_text

from tests.security.samples import KINDS, NEAR_MISSES, SAMPLES, Sample


def test_at_least_thirty_kinds_are_covered_by_samples() -> None:
    assert len(KINDS) >= 30
    assert KINDS == set(kinds())  # every kind a marker can name has a sample
    assert set(NEAR_MISSES) == KINDS


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{s.kind}-{i}" for i, s in enumerate(SAMPLES)])
def test_kind_is_redacted_in_a_sentence(sample: Sample) -> None:
    out = redact_text(sample.sentence)
    assert sample.secret not in out
    assert f"[REDACTED:{sample.kind}]" in out
    # nothing of the secret survives: no 8-character piece of it is left
    rest = re.sub(r"\[REDACTED:[a-z0-9_]+\]", " ", out)
    pieces = {sample.secret[i:i + 8] for i in range(0, max(1, len(sample.secret) - 8), 4)}
    assert not [p for p in pieces if p in rest and "-----" not in p], out
    assert redact_text(out) == out


@pytest.mark.parametrize("kind", sorted(NEAR_MISSES))
def test_near_miss_is_left_alone(kind: str) -> None:
    text = NEAR_MISSES[kind]
    assert redact_text(text) == text
