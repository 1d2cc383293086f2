"""``cairn/evidence``: a proposal's digests, their notes and the cited turns' text, for the user's own editor.

The demo session is imported, sealed, digested and reviewed by the real
command line; the service answers the request for a proposal it made: each
digest it cites with its notes, and the user and assistant text of the
digest's turns as they were captured. The text is bounded per turn with a
cut mark and has no control characters; nothing of it reaches the server's
log. An unknown proposal is ``E_NOT_FOUND`` and a bad parameter
``E_USAGE``, never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cairn.protocol.errors import CairnError
from cairn.protocol.lsp import EVIDENCE
from cairn.server.lsp.features.evidence import CUT_MARK, TURN_BYTES, bounded
from cairn.server.lsp.service import CairnService
from cairn.server.testing import FakeClock

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.server.test_service import FakeEditor


def _reviewed(ws: Path) -> list[dict[str, object]]:
    for argv in (("import", str(DEMO)), ("seal",), ("process",), ("review",)):
        cairn(ws, *argv)
    rows = cairn_json(ws, "proposals")
    assert isinstance(rows, list)
    return [r for r in rows if r["evidence"]]


def _demo_texts() -> list[str]:
    """The user messages of the demo transcript (plain string contents)."""
    out = []
    for line in DEMO.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        content = (rec.get("message") or {}).get("content") if rec.get("type") == "user" else None
        if isinstance(content, str):
            out.append(content)
    return out


@pytest.mark.asyncio
async def test_a_proposals_evidence_has_its_notes_and_the_turns_text(workspace: Path) -> None:
    rows = _reviewed(workspace)
    assert rows, "the demo review proposes something from the journal"
    row = rows[0]
    editor = FakeEditor()
    service = CairnService(editor, clock=FakeClock())
    service.configure([str(workspace)], {})
    await service.start()
    try:
        answer = await service.request(EVIDENCE, {"id": row["id"]})
        assert answer["id"] == row["id"] and answer["title"] == row["title"]
        assert [d["id"] for d in answer["digests"]] == row["evidence"]
        digest = answer["digests"][0]
        assert digest["notes"] and all(n["title"] and n["body"] and n["turnIds"] for n in digest["notes"])
        turns = digest["turns"]
        assert turns and all("missing" not in t for t in turns), turns
        cited = {tid for n in digest["notes"] for tid in n["turnIds"]}
        assert cited <= {t["id"] for t in turns}
        # the user's own words, as captured: the demo's first message opens the first turn
        first = _demo_texts()[0]
        assert turns[0]["user"].startswith(first[:40]), turns[0]["user"][:80]
        assert all(t["assistant"] for t in turns)
        for t in turns:
            for text in (t["user"], t["assistant"]):
                assert not any(ord(c) < 32 and c not in "\n\t" for c in text)
                assert len(text.encode()) <= TURN_BYTES + len(CUT_MARK) + 10
        # private evidence goes to the editor only: never to the server's log
        assert not any(first[:40] in m or turns[0]["assistant"][:40] in m for m in editor.logs)
        # an unknown proposal and a bad parameter are fixed codes
        with pytest.raises(CairnError) as info:
            await service.request(EVIDENCE, {"id": "p000000000000"})
        assert info.value.code == "E_NOT_FOUND"
        with pytest.raises(CairnError) as info:
            await service.request(EVIDENCE, {"id": 3})
        assert info.value.code == "E_USAGE"
    finally:
        await service.shutdown(0.0)


def test_a_long_turn_is_cut_with_a_mark_and_control_characters_go() -> None:
    user, assistant, cut = bounded("ask \x1b[31mred\x1b[0m\r\nnext line\ttab", "short answer")
    assert (user, assistant, cut) == ("ask [31mred[0m\nnext line\ttab", "short answer", False)
    long_user = "é" * 30000  # 60000 bytes
    user, assistant, cut = bounded(long_user, "a" * 100)
    assert cut and assistant == "a" * 100
    assert user.startswith("é" * 100) and user.endswith(" more bytes not shown]")
    kept = user[: user.index("\n[…")]
    assert len(kept.encode()) <= TURN_BYTES - 100 and set(kept) == {"é"}  # never half a character
    assert f"[… {60000 - len(kept.encode())} more bytes not shown]" in user
    # both long: each keeps half
    user, assistant, cut = bounded("u" * 50000, "a" * 50000)
    assert user.startswith("u" * (TURN_BYTES // 2)) and assistant.startswith("a" * (TURN_BYTES // 2))
    assert "u" * (TURN_BYTES // 2 + 1) not in user


def test_ids_and_dates_from_stored_data_reach_the_editor_without_control_characters(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stored digests, proposals and turns are read as they are: an id or a completion time carrying terminal
    escapes or a bell (from transcript text that went into them) comes back without them."""
    from types import SimpleNamespace

    from cairn.server.lsp.features import evidence as E
    from cairn.worker.journal import batches, views
    from cairn.worker.memory import apply

    esc, bell = "\x1b[31m", "\x07"
    note = SimpleNamespace(title="t", type="project", body="b", turn_ids=(f"t1{esc}", f"t2{bell}"))
    digest = SimpleNamespace(id=f"d1{esc}", session_id="s", trigger="seal", created=1.0, title="x",
                             notes=(note,), turn_ids=(f"t1{esc}", f"t2{bell}"))
    proposal = SimpleNamespace(id="p1", title="p", evidence=(f"d1{esc}", f"gone{bell}"))
    turns = {f"t1{esc}": SimpleNamespace(oversized=False, user="u", assistant="a", completed_at=f"2026-01-01{esc}"),
             f"t2{bell}": SimpleNamespace(oversized=True, user="", assistant="", completed_at=f"2026-01-02{bell}Z")}
    monkeypatch.setattr(views, "public_digests", lambda ws: ([digest], []))
    monkeypatch.setattr(apply, "load_proposal", lambda ms, pid: proposal)
    monkeypatch.setattr(batches, "find_turn", lambda j, sid, tid: (None, "segment"))
    monkeypatch.setattr(batches, "turn_evidence", lambda j, name, tid: turns[tid])

    answer = E.evidence(str(workspace), "p1")

    def strings(value: object) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return []

    assert not [s for s in strings(answer) if "\x1b" in s or "\x07" in s], answer
    [found, gone] = answer["digests"]
    assert found["id"] == "d1[31m" and gone == {"id": "gone", "missing": "E_BUNDLE_MISSING"}
    assert found["notes"][0]["turnIds"] == ["t1[31m", "t2"]
    assert [(t["id"], t["completedAt"]) for t in found["turns"]] == [("t1[31m", "2026-01-01[31m"),
                                                                      ("t2", "2026-01-02Z")]


def test_a_remembered_notes_evidence_is_the_remembered_text_at_once(workspace: Path) -> None:
    """A `cairn remember` proposal cites its request, whose digest the journal publishes only once processed:
    its evidence came back as gone (E_BUNDLE_MISSING) right after the remember. It is the text remembered."""
    from cairn.server.lsp.features.evidence import evidence

    out = cairn_json(workspace, "remember", "--type", "feedback", "Always run the linter with ruff before pushing")
    [p] = out["proposals"]
    [d] = evidence(str(workspace), p["id"])["digests"]
    assert "missing" not in d, d
    assert [n["body"] for n in d["notes"]] == ["Always run the linter with ruff before pushing"]
    [turn] = d["turns"]
    assert turn["user"] == "Always run the linter with ruff before pushing" and "missing" not in turn
