"""The remote review against a real chat-completions endpoint on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.digest import ModelPolicy, Note
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest
from cairn.protocol.memory import ProposalKind
from cairn.protocol.vocab import NoteType, Trigger
from cairn.worker.journal.views import public_digests
from cairn.worker.memory import engine, fingerprints, remote
from cairn.worker.memory.model import MemorySnapshot, apply_index_edits, read_root

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.providers.endpoint import Endpoint
from tests.providers.endpoint import endpoint as endpoint

API_KEY = "sk-test-Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1"
SECRET_IN_TOPIC = "ghp_" + "Ab1Cd2Ef3G" * 4
JAN_2 = 1735819200.0  # 2025-01-02T12:00:00Z
JAN_5 = 1736078400.0  # 2025-01-05T12:00:00Z

D1 = PublicDigest(
    id="d1aaaaaaaaaaaaaaaaaa", capture="c1", session_id="s1", title="CI work", trigger=Trigger.SESSION_END,
    created=JAN_2, provider="extractive", turn_ids=("t1", "t2"),
    notes=(
        Note(type=NoteType.PROJECT, title="CI runs on Forgejo Actions",
             body="This repo's CI runs on Forgejo Actions; the workflow is .forgejo/workflows/ci.yml.",
             turn_ids=("t1",)),
        Note(type=NoteType.FEEDBACK, title="Never use bare except",
             body="From now on never use bare except: catch the specific exception.", turn_ids=("t2",)),
    ),
)
D2 = PublicDigest(
    id="d2bbbbbbbbbbbbbbbbbb", capture="c2", session_id="s2", title="Money", trigger=Trigger.IDLE,
    created=JAN_5, provider="extractive", turn_ids=("t3",),
    notes=(Note(type=NoteType.PROJECT, title="Money is integer cents",
                body="Amounts are stored as integer cents in the ledger.", turn_ids=("t3",)),),
)
DIGESTS = [D2, D1]  # any order in, oldest first out

MONEY = (
    b"---\nname: Money handling\ndescription: How amounts are stored\ntype: project\n---\n\n"
    b"- Never use floats for money.\n- Deploy token " + SECRET_IN_TOPIC.encode() + b" lives in the vault.\n"
)
INDEX = b"# Memory\n\n- [Money handling](money.md) - How amounts are stored\n"
AGENTS = b"# Agents\n\nBe brief.\n"

CREATE = {
    "action": "create", "type": "project", "title": "CI runs on Forgejo Actions",
    "description": "Where CI runs and where its workflow lives",
    "bullets": ["- CI runs on Forgejo Actions; the workflow is .forgejo/workflows/ci.yml."],
    "evidence": [D1.id],
}
UPDATE = {"action": "update", "file": "money.md", "bullets": ["Amounts are stored as integer cents."],
          "evidence": [D2.id]}
INSTRUCTION = {"action": "instruction", "file": "AGENTS.md",
               "bullets": ["Never use bare except: catch the specific exception."], "evidence": [D1.id]}


@pytest.fixture
def root(tmp_path: Path) -> MemorySnapshot:
    r = tmp_path / "memory"
    r.mkdir()
    (r / "MEMORY.md").write_bytes(INDEX)
    (r / "money.md").write_bytes(MONEY)
    return read_root(r)


def policy(ep: Endpoint, **changes: Any) -> ModelPolicy:
    base: dict[str, Any] = {"provider": "openai", "model": "qwen3:8b", "endpoint": ep.base_url,
                            "temperature": 0.0, "max_output_tokens": 3000, "timeout_seconds": 10.0}
    return ModelPolicy(**{**base, **changes})


def review(ep: Endpoint, snapshot: MemorySnapshot, *, rejected: set[str] | None = None,
           instruction_files: dict[str, bytes | None] | None = None, **changes: Any) -> list[engine.ProposalDraft]:
    return remote.review_remote(
        DIGESTS, snapshot, root_rel=".agents/memory", index_rel=".agents/memory/MEMORY.md",
        instruction_files={"AGENTS.md": AGENTS} if instruction_files is None else instruction_files,
        rejected=rejected or set(), now=JAN_5 + 60, review_id="r1", policy=policy(ep, **changes), api_key=API_KEY,
    )


def answer(ep: Endpoint, *proposals: dict[str, Any]) -> None:
    ep.answer(json.dumps({"proposals": list(proposals)}))


def expect(ep: Endpoint, snapshot: MemorySnapshot, code: ErrorCode, **changes: Any) -> CairnError:
    with pytest.raises(CairnError) as info:
        review(ep, snapshot, **changes)
    assert info.value.code == code
    return info.value


def test_good_reply_becomes_engine_shaped_drafts(endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint, INSTRUCTION, CREATE, UPDATE)
    drafts = review(endpoint, root)
    assert [(d.kind, d.target) for d in drafts] == [
        (ProposalKind.UPDATE, ".agents/memory/money.md"),
        (ProposalKind.CREATE, ".agents/memory/ci-runs-on-forgejo-actions.md"),
        (ProposalKind.INSTRUCTION, "AGENTS.md"),
    ]
    update, create, instruction = drafts

    assert create.files == {".agents/memory/ci-runs-on-forgejo-actions.md": (None, (
        b"---\nname: CI runs on Forgejo Actions\ndescription: Where CI runs and where its workflow lives\n"
        b"type: project\n---\n\n"
        b"- CI runs on Forgejo Actions; the workflow is .forgejo/workflows/ci.yml. (noted 2025-01-02)\n"))}
    line = ("- [CI runs on Forgejo Actions](ci-runs-on-forgejo-actions.md) - Where CI runs and where its workflow lives"
            " (confirmed 2025-01-05)")
    assert create.index_edits == (("ci-runs-on-forgejo-actions.md", None, line),)
    assert create.index_path == ".agents/memory/MEMORY.md"
    assert create.title == "New project memory: CI runs on Forgejo Actions"
    assert create.evidence == (D1.id,) and create.review == "r1" and create.created == JAN_5 + 60
    assert apply_index_edits(INDEX, create.index_edits) == INDEX + line.encode() + b"\n"

    assert update.files == {".agents/memory/money.md": (
        MONEY, MONEY + b"- Amounts are stored as integer cents. (noted 2025-01-05)\n")}
    entry = "- [Money handling](money.md) - How amounts are stored"
    assert update.index_edits == (("money.md", entry, entry),)  # freshness guard only
    assert update.title == "Add 1 note to Money handling" and update.evidence == (D2.id,)

    assert instruction.files == {"AGENTS.md": (
        AGENTS, AGENTS + b"\n## Working agreements\n\n- Never use bare except: catch the specific exception.\n")}
    assert instruction.index_edits == () and instruction.title == "Add 1 working agreement to AGENTS.md"
    # the engine's fingerprint of the same change
    assert instruction.fingerprint == fingerprints.fingerprint(
        ProposalKind.INSTRUCTION, "AGENTS.md", ["Never use bare except: catch the specific exception."])


def test_request_is_one_tool_free_call_with_the_scope_and_the_key_only_in_the_header(
        endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint)
    assert review(endpoint, root, rejected={"f" * 64}) == []  # No action
    (req,) = endpoint.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {API_KEY}"
    assert req.body == remote.prepare_payload(DIGESTS, root, instruction_files={"AGENTS.md": AGENTS},
                                              policy=policy(endpoint))
    body = json.loads(req.body)
    assert set(body) == {"model", "messages", "temperature", "max_tokens", "response_format", "stream",
                         "reasoning_effort"}
    assert (body["model"], body["max_tokens"], body["response_format"]) == ("qwen3:8b", 3000, {"type": "json_object"})
    scope = json.loads(body["messages"][1]["content"])
    assert [d["id"] for d in scope["digests"]] == [D1.id, D2.id]
    assert scope["digests"][1]["notes"] == [{"type": "project", "title": "Money is integer cents",
                                             "body": "Amounts are stored as integer cents in the ledger."}]
    (topic,) = scope["topics"]
    assert (topic["file"], topic["title"], topic["type"]) == ("money.md", "Money handling", "project")
    assert scope["instruction_files"] == ["AGENTS.md"]
    assert API_KEY.encode() not in req.body and b"f" * 64 not in req.body  # rejections filter afterwards
    assert SECRET_IN_TOPIC.encode() not in req.body and b"[REDACTED:github_token]" in req.body


def test_a_mirror_of_the_engine_gives_byte_identical_files(endpoint: Endpoint, tmp_path: Path) -> None:
    empty = read_root(tmp_path / "none")
    (ours,) = [d for d in engine.review([D2], empty, root_rel="m", index_rel="m/MEMORY.md", instruction_files={},
                                        rejected=set(), now=1.0, review_id="r") if d.kind == ProposalKind.CREATE]
    note = D2.notes[0]
    answer(endpoint, {"action": "create", "type": "project", "title": note.title, "description": note.body,
                      "bullets": [note.body], "evidence": [D2.id]})
    (theirs,) = remote.review_remote([D2], empty, root_rel="m", index_rel="m/MEMORY.md", instruction_files={},
                                     rejected=set(), now=1.0, review_id="r", policy=policy(endpoint), api_key=None)
    assert (theirs.files, theirs.index_edits, theirs.fingerprint, theirs.target) == (
        ours.files, ours.index_edits, ours.fingerprint, ours.target)
    # and a rejected engine proposal is not made again by the model
    answer(endpoint, {"action": "create", "type": "project", "title": note.title, "description": note.body,
                      "bullets": [note.body], "evidence": [D2.id]})
    assert remote.review_remote([D2], empty, root_rel="m", index_rel="m/MEMORY.md", instruction_files={},
                                rejected={ours.fingerprint}, now=1.0, review_id="r", policy=policy(endpoint),
                                api_key=None) == []


def test_rejected_fingerprint_is_filtered_and_the_rest_kept(endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint, CREATE, UPDATE)
    first = review(endpoint, root)
    assert len(first) == 2
    answer(endpoint, CREATE, UPDATE)
    again = review(endpoint, root, rejected={first[0].fingerprint})
    assert [d.fingerprint for d in again] == [first[1].fingerprint]


def test_collisions_duplicates_known_text_and_secrets(endpoint: Endpoint, root: MemorySnapshot) -> None:
    leaked = "sk-proj-Qw3Er4Ty5Ui6Op7As8Df9Gh0"
    answer(
        endpoint,
        {**CREATE, "title": "Money handling", "bullets": [f"Deploys read {leaked} from the vault."]},
        {**UPDATE, "bullets": ["Never use floats for money", "Amounts are integer cents."]},  # first one known
        {**UPDATE, "bullets": ["Amounts are integer cents.", "Refunds are negative cents."]},
        {**UPDATE, "bullets": ["never use floats for money."]},  # only known text: no proposal of its own
    )
    update, create = review(endpoint, root)
    assert create.target == ".agents/memory/money-handling.md"  # the title is redacted-safe and free in the root
    created = create.files[create.target][1]
    assert created is not None
    assert b"[REDACTED:openai_key]" in created and leaked.encode() not in str(create).encode()
    (before, after) = update.files[".agents/memory/money.md"]
    assert before is not None
    assert after == before + (b"- Amounts are integer cents. (noted 2025-01-05)\n"
                              b"- Refunds are negative cents. (noted 2025-01-05)\n")
    assert update.title == "Add 2 notes to Money handling"


def test_created_name_taken_by_a_file_gets_a_suffix(endpoint: Endpoint, tmp_path: Path) -> None:
    r = tmp_path / "memory"
    r.mkdir()
    (r / "ci-runs-on-forgejo-actions.md").write_bytes(b"no front matter\n")
    (r / "ci-runs-on-forgejo-actions-2.md").write_bytes(b"no front matter\n")
    answer(endpoint, CREATE, {**CREATE, "title": "CI runs on Forgejo Actions, really",
                              "bullets": ["Another fact about CI."]})
    drafts = review(endpoint, read_root(r))
    assert [d.target for d in drafts] == [".agents/memory/ci-runs-on-forgejo-actions-3.md",
                                          ".agents/memory/ci-runs-on-forgejo-actions-really.md"]


BAD = [
    "not json",
    '```json\n{"proposals": []}\n```',
    '{"proposals": [], "notes": []}',
    '{"proposals": {}}',
    json.dumps({"proposals": ["create"]}),
    json.dumps({"proposals": [{**CREATE, "action": "delete"}]}),
    json.dumps({"proposals": [{**CREATE, "why": "because"}]}),
    json.dumps({"proposals": [{**UPDATE, "type": "project"}]}),
    json.dumps({"proposals": [{k: v for k, v in CREATE.items() if k != "description"}]}),
    json.dumps({"proposals": [{**CREATE, "type": "task"}]}),
    json.dumps({"proposals": [{**CREATE, "type": None}]}),
    json.dumps({"proposals": [{**CREATE, "title": "x" * 121}]}),
    json.dumps({"proposals": [{**CREATE, "title": ""}]}),
    json.dumps({"proposals": [{**CREATE, "title": 7}]}),
    json.dumps({"proposals": [{**CREATE, "title": "\u001b[31m\u0007\u0000"}]}),  # nothing left once cleaned
    json.dumps({"proposals": [{**CREATE, "description": "d" * 201}]}),
    json.dumps({"proposals": [{**CREATE, "bullets": []}]}),
    json.dumps({"proposals": [{**CREATE, "bullets": ["b"] * 21}]}),
    json.dumps({"proposals": [{**CREATE, "bullets": ["b" * 501]}]}),
    json.dumps({"proposals": [{**CREATE, "bullets": "one"}]}),
    json.dumps({"proposals": [{**CREATE, "bullets": ["- "]}]}),
    json.dumps({"proposals": [{**CREATE, "evidence": []}]}),
    json.dumps({"proposals": [{**CREATE, "evidence": D1.id}]}),
    json.dumps({"proposals": [{**UPDATE, "file": "MEMORY.md"}]}),
    json.dumps({"proposals": [{**UPDATE, "file": "../money.md"}]}),
    json.dumps({"proposals": [{**UPDATE, "file": "AGENTS.md"}]}),
    json.dumps({"proposals": [{**INSTRUCTION, "file": "CLAUDE.md"}]}),
    json.dumps({"proposals": [{**INSTRUCTION, "file": "money.md"}]}),
]


def test_control_characters_of_a_reply_are_removed_not_written(endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint, {**CREATE, "title": "CI runs on \u001b[1mForgejo\u001b[0m Actions\u0007",
                      "description": "Where CI runs\u001b]52;c;SGVsbG8=\u0007 and where its workflow lives",
                      "bullets": ["CI runs on Forgejo\u009b31m Actions\u007f."]},
           {**UPDATE, "bullets": ["Amounts are \u001b[31minteger\u001b[0m cents.\r"]})
    update, create = review(endpoint, root)
    assert create.target == ".agents/memory/ci-runs-on-forgejo-actions.md"
    assert create.files[create.target] == (None, (
        b"---\nname: CI runs on Forgejo Actions\ndescription: Where CI runs and where its workflow lives\n"
        b"type: project\n---\n\n- CI runs on Forgejo Actions. (noted 2025-01-02)\n"))
    assert update.files[".agents/memory/money.md"] == (
        MONEY, MONEY + b"- Amounts are integer cents. (noted 2025-01-05)\n")


@pytest.mark.parametrize("content", BAD)
def test_wrong_shape_is_an_invalid_reply(endpoint: Endpoint, root: MemorySnapshot, content: str) -> None:
    endpoint.answer(content)
    expect(endpoint, root, ErrorCode.PROVIDER_INVALID_REPLY)


def test_invalid_reply_never_echoes_the_reply(endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint, {**UPDATE, "file": "invented-topic-77.md"})
    err = expect(endpoint, root, ErrorCode.PROVIDER_INVALID_REPLY)
    assert "invented-topic-77" not in str(err) and "none of the 1 proposal(s)" in str(err)
    answer(endpoint, {**CREATE, "evidence": ["invented-digest-42"]})
    err = expect(endpoint, root, ErrorCode.PROVIDER_INVALID_REPLY)
    assert "invented-digest-42" not in str(err)


def test_instruction_file_must_be_present(endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint, INSTRUCTION)
    expect(endpoint, root, ErrorCode.PROVIDER_INVALID_REPLY, instruction_files={"AGENTS.md": None})


def test_length_finish_is_truncated(endpoint: Endpoint, root: MemorySnapshot) -> None:
    endpoint.answer('{"proposals": [{"action": "cre', finish_reason="length")
    expect(endpoint, root, ErrorCode.PROVIDER_TRUNCATED)


def test_slow_endpoint_times_out(endpoint: Endpoint, root: MemorySnapshot) -> None:
    endpoint.hold = True
    answer(endpoint)
    err = expect(endpoint, root, ErrorCode.PROVIDER_TIMEOUT, timeout_seconds=0.3)
    assert len(endpoint.requests) == 1 and not endpoint.release.is_set()  # really no answer in time
    assert "0.3" in err.message


def test_http_error_is_provider_failed_without_the_body(endpoint: Endpoint, root: MemorySnapshot) -> None:
    endpoint.status = 503
    endpoint.reply = b'{"error": "overloaded while reading Money handling"}'
    err = expect(endpoint, root, ErrorCode.PROVIDER_FAILED)
    assert err.detail == {"status": 503} and "Money" not in str(err)


def test_payload_over_the_bound_is_refused_before_sending(endpoint: Endpoint, root: MemorySnapshot) -> None:
    answer(endpoint)
    size = len(remote.prepare_payload(DIGESTS, root, instruction_files={"AGENTS.md": AGENTS},
                                      policy=policy(endpoint)))
    err = expect(endpoint, root, ErrorCode.PAYLOAD_TOO_LARGE, max_payload_bytes=size - 1)
    assert err.detail == {"size": size, "limit": size - 1} and endpoint.requests == []
    assert review(endpoint, root, max_payload_bytes=size) == []  # exactly at the bound is sent
    assert len(endpoint.requests) == 1


def test_missing_model_is_config_invalid_before_sending(endpoint: Endpoint, root: MemorySnapshot) -> None:
    err = expect(endpoint, root, ErrorCode.CONFIG_INVALID, model="")
    assert "review" in err.message and endpoint.requests == []


# -- end to end through the CLI ---------------------------------------------------------


def test_cairn_review_with_the_openai_provider(endpoint: Endpoint, workspace: Path) -> None:
    cairn(workspace, "import", str(DEMO))  # captured under the default (extractive) policy
    cairn(workspace, "seal")
    cairn(workspace, "process")
    (digest,) = public_digests(str(workspace), fresh=True)[0]
    (workspace / "AGENTS.md").write_bytes(AGENTS)
    (workspace / ".cairn" / "config.toml").write_text(
        f'provider = "openai"\nmodel = "review-model"\nendpoint = "{endpoint.base_url}"\n'
        'api_key_env = "CAIRN_TEST_REVIEW_KEY"\n')
    cairn(workspace, "trust")
    answer(endpoint,
           {"action": "create", "type": "project", "title": "Continuous integration",
            "description": "CI runs on Forgejo Actions",
            "bullets": ["CI runs on Forgejo Actions with a Python 3.11 and 3.12 matrix."], "evidence": [digest.id]},
           {"action": "instruction", "file": "AGENTS.md",
            "bullets": ["Never schedule migrations on staging on a Friday."], "evidence": [digest.id]})

    out = json.loads(cairn(workspace, "review", "--json", env={"CAIRN_TEST_REVIEW_KEY": API_KEY}).stdout)
    assert out["proposals"] == 2 and out["digests"] == 1
    (req,) = endpoint.requests
    assert req.headers["authorization"] == f"Bearer {API_KEY}"
    assert json.loads(req.body)["model"] == "review-model"
    (record,) = (workspace / ".cairn/journal/reviews").glob("*.json")
    assert json.loads(record.read_text())["provider"] == "openai"

    rows = cairn_json(workspace, "proposals")
    assert isinstance(rows, list)
    assert sorted((r["kind"], r["target"], r["state"]) for r in rows) == [
        ("create", ".agents/memory/continuous-integration.md", "pending"),
        ("instruction", "AGENTS.md", "pending"),
    ]
    create = next(r for r in rows if r["kind"] == "create")
    cairn(workspace, "accept", create["id"])
    # dated by the session (the demo session was held on 2025-06-12), not by the day it was imported
    assert digest.session_started is not None and digest.session_started.startswith("2025-06-12T")
    day = "2025-06-12"
    written = (workspace / ".agents/memory/continuous-integration.md").read_bytes()
    # the front matter also records the topic's provenance (sources, confirmed: ADR 0020) after ``type``
    assert written.startswith(
        b"---\nname: Continuous integration\ndescription: CI runs on Forgejo Actions\ntype: project\nsources:\n")
    assert written.endswith(
        b"\n---\n\n- CI runs on Forgejo Actions with a Python 3.11 and 3.12 matrix. (noted " + day.encode() + b")\n")
    assert b"\nconfirmed: '" + day.encode() + b"'\n" in written
    assert (workspace / ".agents/memory/MEMORY.md").read_bytes() == (
        b"# Memory\n\n- [Continuous integration](continuous-integration.md) - CI runs on Forgejo Actions"
        b" (confirmed " + day.encode() + b")\n")
    assert (workspace / "AGENTS.md").read_bytes() == AGENTS  # not accepted: untouched
    states = {r["kind"]: r["state"] for r in cairn_json(workspace, "proposals")}
    assert states == {"create": "applied", "instruction": "pending"}
    # nothing left to review: the model is not asked again
    assert json.loads(cairn(workspace, "review", "--json").stdout)["review"] is None
    assert len(endpoint.requests) == 1


TOOLING = b"---\nname: Tooling\ndescription: Tools of this project\ntype: project\n---\n\n- Use npm to install dependencies (noted 2025-01-02)\n"


@pytest.mark.parametrize("action", ["create", "update"])
def test_a_reply_that_changes_a_statement_replaces_it(endpoint: Endpoint, tmp_path: Path, action: str) -> None:
    r = tmp_path / "memory"
    r.mkdir()
    (r / "MEMORY.md").write_bytes(b"# Memory\n\n- [Tooling](tooling.md) - Tools of this project\n")
    (r / "tooling.md").write_bytes(TOOLING)
    bullets = ["Use pnpm, not npm, to install dependencies"]
    if action == "create":  # the model missed the topic: its create still becomes the replacement
        answer(endpoint, {"action": "create", "type": "project", "title": "pnpm", "description": "Package manager",
                          "bullets": bullets, "evidence": [D2.id]})
    else:
        answer(endpoint, {"action": "update", "file": "tooling.md", "bullets": bullets, "evidence": [D2.id]})
    [d] = review(endpoint, read_root(r))
    assert d.kind is ProposalKind.UPDATE and d.target == ".agents/memory/tooling.md"
    assert d.title == ("Replace 1 statement in Tooling: \u201cUse npm to install dependencies\u201d \u2192 "
                       "\u201cUse pnpm, not npm, to install dependencies\u201d")
    assert d.files[".agents/memory/tooling.md"] == (TOOLING, TOOLING.replace(
        b"- Use npm to install dependencies (noted 2025-01-02)",
        b"- Use pnpm, not npm, to install dependencies (noted 2025-01-05)"))
