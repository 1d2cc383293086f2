"""``cairn.acceptEdited``: edit before accept, through the same checked path.

The editor gets a pending one-file proposal's proposed text from
``cairn/proposal`` (``edit``), the user changes it, and the command makes a
new proposal with the reviewed before-state and the edited text, accepts it
(undo works as for any accept) and rejects the original as superseded. A
proposal whose target changed since the review is refused (stale), and wrong
parameter types are ``E_USAGE``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cairn.protocol.errors import CairnError
from cairn.protocol.lsp import CHECK_EDITED, CMD_ACCEPT_EDITED, CMD_UNDO, PROPOSAL
from cairn.server.lsp.service import CairnService
from cairn.server.testing import FakeClock

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.server.test_service import FakeEditor

pytestmark = pytest.mark.asyncio
ORIGINAL = b"# Agents\n\nKeep pull requests small.\n"


def _instruction_proposal(ws: Path) -> str:
    (ws / "AGENTS.md").write_bytes(ORIGINAL)
    for argv in (("import", str(DEMO)), ("seal",), ("process",), ("review",)):
        cairn(ws, *argv)
    rows = cairn_json(ws, "proposals")
    assert isinstance(rows, list)
    return next(r["id"] for r in rows if r["target"] == "AGENTS.md" and r["state"] == "pending")


async def _service(ws: Path) -> CairnService:
    service = CairnService(FakeEditor(), clock=FakeClock())
    service.configure([str(ws)], {})
    await service.start()
    return service


async def test_the_edited_text_is_accepted_and_undoable(workspace: Path) -> None:
    pid = _instruction_proposal(workspace)
    service = await _service(workspace)
    try:
        shown = await service.request(PROPOSAL, {"id": pid})
        assert shown["edit"]["path"] == "AGENTS.md"
        proposed = shown["edit"]["text"]
        assert proposed.startswith("# Agents\n") and proposed != ORIGINAL.decode()
        mine = proposed.replace("Keep pull requests small.", "Keep pull requests small and focused.")
        with pytest.raises(CairnError) as info:
            await service.execute(CMD_ACCEPT_EDITED, [{"id": pid, "text": 3}])
        assert info.value.code == "E_USAGE"
        answer = await service.execute(CMD_ACCEPT_EDITED, [{"id": pid, "text": mine}])
        new_id = answer["result"]["id"]
        assert new_id != pid and answer["result"]["supersedes"] == pid
        assert (workspace / "AGENTS.md").read_bytes() == mine.encode()
        states = {r["id"]: r["state"] for r in cairn_json(workspace, "proposals")}
        assert states[new_id] == "applied" and states[pid] == "rejected"
        await service.execute(CMD_UNDO, [{"id": new_id}])
        assert (workspace / "AGENTS.md").read_bytes() == ORIGINAL
    finally:
        await service.shutdown(0.0)


async def test_an_edit_of_a_changed_target_is_refused(workspace: Path) -> None:
    pid = _instruction_proposal(workspace)
    (workspace / "AGENTS.md").write_bytes(b"# Agents\n\nRewritten by hand.\n")
    service = await _service(workspace)
    try:
        with pytest.raises(CairnError) as info:
            await service.execute(CMD_ACCEPT_EDITED, [{"id": pid, "text": "# Agents\n\nMine.\n"}])
        assert info.value.code == "E_PROPOSAL_STALE"
        assert (workspace / "AGENTS.md").read_bytes() == b"# Agents\n\nRewritten by hand.\n"
    finally:
        await service.shutdown(0.0)


async def test_an_edited_topic_with_broken_front_matter_is_refused_and_nothing_written(workspace: Path) -> None:
    _instruction_proposal(workspace)
    memory = workspace / ".agents" / "memory"
    service = await _service(workspace)
    try:
        topics = []
        for row in cairn_json(workspace, "proposals"):
            if row["state"] == "pending":
                shown = await service.request(PROPOSAL, {"id": row["id"]})
                edit = shown.get("edit")
                if edit and edit["path"].endswith(".md") and edit["text"].startswith("---\n"):
                    topics.append((row["id"], edit))
        assert topics, "the demo review proposes a topic file"
        pid, edit = topics[0]
        lines = edit["text"].split("\n")
        colon = "\n".join("description: use: the release script" if x.startswith("description:") else x
                          for x in lines)
        no_front_matter = edit["text"].split("---\n", 2)[2]
        for broken in (colon, no_front_matter):
            with pytest.raises(CairnError) as info:
                await service.execute(CMD_ACCEPT_EDITED, [{"id": pid, "text": broken}])
            assert info.value.code == "E_TOPIC_FRONT_MATTER", info.value
            assert "nothing was written" in info.value.message
            assert not (memory / edit["path"]).exists()
            assert {r["id"]: r["state"] for r in cairn_json(workspace, "proposals")}[pid] == "pending"
    finally:
        await service.shutdown(0.0)


async def test_the_index_entry_follows_the_edited_name_and_the_check_says_it(workspace: Path) -> None:
    """The MEMORY.md line of an edited topic carries its edited name and description; ``cairn/checkEdited``
    shows that line before the accept, and the front matter problem the accept would refuse."""
    _instruction_proposal(workspace)
    service = await _service(workspace)
    try:
        pid, edit = None, None
        for row in cairn_json(workspace, "proposals"):
            if row["state"] == "pending" and row["kind"] == "create":
                shown = await service.request(PROPOSAL, {"id": row["id"]})
                pid, edit = row["id"], shown["edit"]
                break
        assert pid and edit and edit["index"], "the demo review proposes a new topic with its index entry"
        entry = edit["index"][0]
        assert entry["index"].endswith("MEMORY.md") and f"]({entry['file']})" in entry["after"]
        lines = edit["text"].split("\n")
        mine = "\n".join("name: Release checklist" if x.startswith("name:") else
                         "description: tag, build, upload in that order" if x.startswith("description:") else x
                         for x in lines)
        checked = await service.request(CHECK_EDITED, {"id": pid, "text": mine})
        assert checked["problems"] == []
        after = checked["index"][0]["after"]
        assert after == f"- [Release checklist]({entry['file']}) - tag, build, upload in that order"
        broken = mine.replace("description: tag", "description: use: tag")
        bad = await service.request(CHECK_EDITED, {"id": pid, "text": broken})
        assert [p["code"] for p in bad["problems"]] == ["E_TOPIC_FRONT_MATTER"] and bad["problems"][0]["line"] >= 2
        answer = await service.execute(CMD_ACCEPT_EDITED, [{"id": pid, "text": mine}])
        index = (workspace / entry["index"]).read_text()
        assert after in index and entry["after"] not in index
        # History: the edited version carries the edited name, the original shows as superseded
        rows = cairn_json(workspace, "history")
        new = next(r for r in rows if r["id"] == answer["result"]["id"])
        assert new["title"].endswith("Release checklist (edited)") and not new["title"].startswith("Edited: ")
        assert next(r for r in rows if r["id"] == pid)["state"] == "superseded"
    finally:
        await service.shutdown(0.0)
