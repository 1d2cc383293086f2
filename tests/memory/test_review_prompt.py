"""A review request that fits the workspace, and replies taken in good part.

The ``instruction`` action is offered only when an instruction file is
present; digests come in the order their sessions were held, with their
dates; the prompt asks for one proposal per topic; the model sees the
existing memory entries (title, description, the dates their bullets were
noted). A reply is taken in good part: an unknown digest reference is left
out of its proposal, an invalid proposal is left out and counted (counts
only, never the reply's text); the review fails only when nothing valid is
left. Proposal bullets and memory notes carry the session's date.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.digest import ModelPolicy, Note
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest
from cairn.protocol.memory import ProposalKind
from cairn.protocol.vocab import NoteType, Trigger
from cairn.worker.journal.views import public_digests
from cairn.worker.memory import engine, remote
from cairn.worker.memory.model import MemorySnapshot, read_root

from tests.journal.helpers import DEMO, cairn
from tests.providers.endpoint import Endpoint
from tests.providers.endpoint import endpoint as endpoint

IMPORTED = 1796428800.0  # 2026-12-05T00:00:00Z: when the sessions below were imported
AGENTS = b"# Agents\n\nBe brief.\n"

# imported in one order, held in the other: the 2025-04-28 session before the 2025-03-02 one
LATE = PublicDigest(
    id="d-late-aaaaaaaaaaaaaa", capture="c1", session_id="s1", title="Ledger", trigger=Trigger.SESSION_END,
    created=IMPORTED, provider="extractive", turn_ids=("t1",),
    session_started="2025-04-28T09:15:00.000Z", session_ended="2025-04-28T11:40:00.000Z",
    notes=(Note(type=NoteType.PROJECT, title="Refunds are negative cents",
                body="Refunds are stored as negative integer cents.", turn_ids=("t1",)),),
)
EARLY = PublicDigest(
    id="d-early-bbbbbbbbbbbbb", capture="c2", session_id="s2", title="Money", trigger=Trigger.SESSION_END,
    created=IMPORTED + 60, provider="extractive", turn_ids=("t2",),
    session_started="2025-03-02T16:00:00.000Z", session_ended="2025-03-02T16:20:00.000Z",
    notes=(Note(type=NoteType.PROJECT, title="Money is integer cents",
                body="Amounts are stored as integer cents in the ledger.", turn_ids=("t2",)),),
)

MONEY = (b"---\nname: Money handling\ndescription: How amounts are stored\ntype: project\n---\n\n"
         b"- Never use floats for money. (noted 2025-01-02)\n- Round half to even. (noted 2025-02-14)\n")
INDEX = b"# Memory\n\n- [Money and amounts](money.md) - How amounts are stored\n"


@pytest.fixture
def root(tmp_path: Path) -> MemorySnapshot:
    r = tmp_path / "memory"
    r.mkdir()
    (r / "MEMORY.md").write_bytes(INDEX)
    (r / "money.md").write_bytes(MONEY)
    return read_root(r)


def policy(ep: Endpoint) -> ModelPolicy:
    return ModelPolicy(provider="openai", model="m", endpoint=ep.base_url, temperature=0.0,
                       max_output_tokens=3000, timeout_seconds=10.0)


def review(ep: Endpoint, snapshot: MemorySnapshot, *, instruction_files: dict[str, bytes | None] | None = None,
           dropped: remote.Dropped | None = None) -> list[engine.ProposalDraft]:
    return remote.review_remote(
        [LATE, EARLY], snapshot, root_rel=".agents/memory", index_rel=".agents/memory/MEMORY.md",
        instruction_files={} if instruction_files is None else instruction_files, rejected=set(),
        now=IMPORTED + 600, review_id="r1", policy=policy(ep), api_key=None, dropped=dropped)


def answer(ep: Endpoint, *proposals: dict[str, Any]) -> None:
    ep.answer(json.dumps({"proposals": list(proposals)}))


def sent(ep: Endpoint) -> tuple[str, dict[str, Any]]:
    """The system prompt and the parsed scope of the one request sent."""
    (req,) = ep.requests
    messages = json.loads(req.body)["messages"]
    return messages[0]["content"], json.loads(messages[1]["content"])


def test_instruction_is_offered_only_when_an_instruction_file_exists(endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint)
    review(endpoint, root, instruction_files={"AGENTS.md": None, "CLAUDE.md": None})  # configured, absent
    system, scope = sent(endpoint)
    assert '"instruction"' not in system and "instruction file" not in system
    assert "instruction_files" not in scope

    endpoint.requests.clear()
    answer(endpoint)
    review(endpoint, root, instruction_files={"AGENTS.md": AGENTS})
    system, scope = sent(endpoint)
    assert '"instruction"' in system and scope["instruction_files"] == ["AGENTS.md"]


def test_digests_in_session_order_with_their_dates_and_one_proposal_per_topic(
        endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint)
    review(endpoint, root)
    system, scope = sent(endpoint)
    assert [(d["id"], d["date"]) for d in scope["digests"]] == [(EARLY.id, "2025-03-02"), (LATE.id, "2025-04-28")]
    assert "one proposal per topic" in system.lower()


def test_the_review_sees_the_existing_memory_entries(endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint)
    review(endpoint, root)
    _, scope = sent(endpoint)
    (topic,) = scope["topics"]
    assert {k: topic[k] for k in ("file", "title", "type", "description", "first_noted", "last_noted")} == {
        "file": "money.md", "title": "Money and amounts", "type": "project",
        "description": "How amounts are stored", "first_noted": "2025-01-02", "last_noted": "2025-02-14"}


def test_bullets_carry_the_session_date_and_creates_of_one_topic_are_one_proposal(
        endpoint: Endpoint, root: MemorySnapshot) -> None:
    create = {"action": "create", "type": "project", "title": "Refunds", "description": "How refunds are stored",
              "bullets": ["Refunds are negative integer cents."], "evidence": [LATE.id]}
    answer(endpoint, create, {**create, "bullets": ["Amounts are integer cents."], "evidence": [EARLY.id, LATE.id]},
           {"action": "update", "file": "money.md", "bullets": ["Amounts are integer cents."],
            "evidence": [EARLY.id]})
    update, made = review(endpoint, root)
    assert (update.kind, made.kind) == (ProposalKind.UPDATE, ProposalKind.CREATE)
    assert update.files[".agents/memory/money.md"][1] == MONEY + b"- Amounts are integer cents. (noted 2025-03-02)\n"
    after = made.files[made.target][1]
    assert after is not None and after.endswith(
        b"\n- Refunds are negative integer cents. (noted 2025-04-28)\n"
        b"- Amounts are integer cents. (noted 2025-03-02)\n")
    assert made.evidence == tuple(sorted((EARLY.id, LATE.id)))


def test_a_reply_is_taken_in_good_part(endpoint: Endpoint, root: MemorySnapshot,
                                       caplog: pytest.LogCaptureFixture) -> None:
    answer(endpoint,
           {"action": "create", "type": "project", "title": "Refunds", "description": "How refunds are stored",
            "bullets": ["Refunds are negative integer cents."], "evidence": [LATE.id, "invented-digest-42"]},
           {"action": "update", "file": "invented-topic-77.md", "bullets": ["SECRET-REPLY-TEXT"],
            "evidence": [LATE.id]},
           {"action": "instruction", "file": "AGENTS.md", "bullets": ["Never use floats."], "evidence": [EARLY.id]})
    lost = remote.Dropped()
    with caplog.at_level(logging.WARNING, logger="cairn.worker.memory.review"):
        (made,) = review(endpoint, root, dropped=lost)  # no instruction file: the instruction cannot be taken
    assert made.kind is ProposalKind.CREATE and made.evidence == (LATE.id,)
    assert lost.report() == {"proposals": 2, "references": 1}
    (line,) = [r.getMessage() for r in caplog.records if r.name == "cairn.worker.memory.review"]
    assert "2 of 3 proposal(s)" in line and "1 unknown digest reference(s)" in line
    assert not any(text in line for text in ("SECRET-REPLY-TEXT", "invented", "Refunds", "floats"))


def test_the_review_fails_only_when_nothing_valid_is_left(endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint, {"action": "update", "file": "invented-topic-77.md", "bullets": ["x"], "evidence": [LATE.id]},
           {"action": "create", "type": "task", "title": "t", "description": "d", "bullets": ["b"],
            "evidence": [LATE.id]})
    with pytest.raises(CairnError) as err:
        review(endpoint, root)
    assert err.value.code == ErrorCode.PROVIDER_INVALID_REPLY and "none of the 2 proposal(s)" in err.value.message
    assert "invented" not in str(err.value)
    answer(endpoint)  # nothing proposed at all is No action, not a failure
    assert review(endpoint, root) == []


def test_the_embedded_engine_dates_its_bullets_by_the_session(tmp_path: Path) -> None:
    drafts = engine.review([LATE], read_root(tmp_path / "none"), root_rel="m", index_rel="m/MEMORY.md",
                           instruction_files={}, rejected=set(), now=IMPORTED + 600, review_id="r")
    (create,) = [d for d in drafts if d.kind is ProposalKind.CREATE]
    after = create.files[create.target][1]
    assert after is not None and after.endswith(b"- Refunds are stored as negative integer cents. (noted 2025-04-28)\n")


def test_cairn_review_without_instruction_files_keeps_what_the_model_got_right(
        endpoint: Endpoint, workspace: Path) -> None:
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    cairn(workspace, "process")
    (digest,) = public_digests(str(workspace), fresh=True)[0]
    (workspace / ".cairn" / "config.toml").write_text(
        f'provider = "openai"\nmodel = "review-model"\nendpoint = "{endpoint.base_url}"\n')
    cairn(workspace, "trust")
    # the workspace has no AGENTS.md: an instruction proposal cannot be taken, the create can
    answer(endpoint,
           {"action": "instruction", "file": "AGENTS.md", "bullets": ["Never deploy on a Friday."],
            "evidence": [digest.id]},
           {"action": "create", "type": "project", "title": "Continuous integration",
            "description": "CI runs on Forgejo Actions", "bullets": ["CI runs on Forgejo Actions."],
            "evidence": [digest.id, "invented-digest-42"]})
    r = cairn(workspace, "review", "--json")
    out = json.loads(r.stdout)
    assert (out["proposals"], out["droppedProposals"]) == (1, {"proposals": 1, "references": 1})
    assert "1 invalid proposal(s) and 1 unknown digest reference(s) left out" in r.stderr
    assert "Friday" not in r.stderr and "invented" not in r.stderr
    system = json.loads(endpoint.requests[0].body)["messages"][0]["content"]
    assert '"instruction"' not in system
    rows = json.loads(cairn(workspace, "proposals", "--json").stdout)
    assert [(row["kind"], row["target"]) for row in rows] == [("create", ".agents/memory/continuous-integration.md")]
