"""Claim and outcome records: the fencing tokens of every piece of background work.

A claim is generation N of a scope; N is the fencing token. Its deadline is
fixed at election on the target's clock and never renewed. An outcome settles
exactly one generation, holding either an inline payload (small, ids and
counts) or the sha256 of an immutable private bundle.
"""

from __future__ import annotations

from typing import Any

import attrs
from cairn.protocol.codec import record
from cairn.protocol.vocab import OutcomeKind


@attrs.frozen(kw_only=True)
class Authority:
    """Whom a claim acts for: the workspace, the original target and the client."""

    workspace: str
    target: str = ""
    client: str = ""


@record("claim", version=1)
class ClaimRecord:
    scope: str
    generation: int
    nonce: str
    pid: int
    host: str
    purpose: str
    created: float  # target clock, seconds since the epoch
    deadline: float  # target clock; fixed at election, never renewed
    authority: Authority
    inputs: dict[str, str] = attrs.field(factory=dict)  # name -> sha256 of the inputs acted on


@record("outcome", version=1)
class OutcomeRecord:
    scope: str
    generation: int
    kind: OutcomeKind
    nonce: str  # the nonce of whoever elected this outcome (owner, or the taker-over)
    decided: float  # target clock
    claim_nonce: str  # the nonce of the claim this outcome settles
    payload: dict[str, Any] | None = None  # small inline result: ids, counts, codes
    bundle: str | None = None  # sha256 of an immutable private bundle
    error: str | None = None  # fixed error code for failed/cancelled/expired
