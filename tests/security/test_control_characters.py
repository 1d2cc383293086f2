"""Control characters from outside cairn: cleaned where text enters, escaped where the CLI prints it.

One rule (``protocol/text.py``): transcripts, remembered texts, a provider's
notes and review replies lose their control characters before evidence,
journal notes or memory files hold them; whatever the CLI prints from such
text shows them escaped. A note that still cannot be written is left out of
its review with a counted warning, and ``cairn doctor`` reports reviews that
keep failing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.digest import Note
from cairn.protocol.journal import PublicDigest
from cairn.protocol.vocab import NoteType, Trigger

from tests.journal.helpers import cairn, cairn_json

#: any control character but tab and newline, as bytes on a terminal or in a file
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
OSC52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # writes the clipboard of whoever prints it


def _no_raw(data: bytes | str, where: str) -> None:
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    assert not RAW.search(raw), f"{where} holds a raw control character: {raw[:400]!r}"


def _memory_files(ws: Path) -> list[Path]:
    return [p for p in [*(ws / ".agents/memory").glob("*.md"), ws / "AGENTS.md"] if p.is_file()]


def _accept_all(ws: Path) -> None:
    for p in cairn_json(ws, "proposals"):
        if p["state"] == "pending":
            cairn(ws, "accept", p["id"])
    files = _memory_files(ws)
    assert files
    for f in files:
        _no_raw(f.read_bytes(), str(f))


def _aider(ws: Path, name: str, prompt: str) -> Path:
    src = ws / name
    src.write_text(f"# aider chat started at 2025-02-01 10:00:00\n\n#### {prompt}\n\nUnderstood.\n")
    return src


def _old_digest(ws: Path, did: str, notes: list[tuple[NoteType, str, str]], title: str | None = None) -> None:
    """A public digest as a version of cairn that kept control characters published it."""
    pub = ws / ".cairn/journal"
    pub.mkdir(parents=True, exist_ok=True)
    d = PublicDigest(id=did, capture=f"c-{did}", session_id=f"s-{did}", title=title, trigger=Trigger.SESSION_END,
                     created=1738400000.0, provider="extractive", turn_ids=(f"t-{did}",),
                     notes=tuple(Note(type=t, title=ti, body=b, turn_ids=(f"t-{did}",)) for t, ti, b in notes))
    (pub / f"{did}.json").write_bytes(codec.encode(d))


# -- the rule ---------------------------------------------------------------------------


def test_the_rule_keeps_the_words_and_drops_every_control() -> None:
    from cairn.protocol.text import clean_text, printable

    assert clean_text("Use \x1b[1;31mpnpm\x1b[0m, not npm\x07") == "Use pnpm, not npm"
    assert clean_text(f"copy{OSC52} this") == "copy this"  # an OSC string goes with its payload
    assert clean_text("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "alink"  # ST-terminated strings too
    assert clean_text("x\x1b]0;no terminator") == "x0;no terminator"  # never swallows the rest of the text
    assert clean_text("one\r\ntwo\rthree\x0cfour\x85five") == "one\ntwo\nthree\nfour\nfive"
    assert clean_text("nul\x00 del\x7f c1\x9b2J csi\x90dcs\x9c done") == "nul del c1 csi done"
    assert clean_text("tab\tand\nnewline stay") == "tab\tand\nnewline stay"
    assert clean_text("lone \ud800 surrogate") == "lone \ufffd surrogate"
    for s in ("Use \x1b[31mred\x1b[0m\x07", OSC52, "\x9d0;t\x9c\x1b7\x1b(B", "\r\n\r", "plain"):
        assert clean_text(clean_text(s)) == clean_text(s)
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", clean_text(s))
    assert printable(f"a{OSC52}b") == "a\\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07b"
    assert printable("name\twith\nbreak\u202e") == "name\\twith\\nbreak\\u202e"
    assert printable("two\nlines\x1b", keep="\n") == "two\nlines\\x1b"
    assert printable("plain text, é") == "plain text, é"


# -- remember ---------------------------------------------------------------------------


def test_a_remembered_text_with_escapes_never_wedges_the_reviews(workspace: Path) -> None:
    out = cairn_json(workspace, "remember", "--type", "project", "The \x1b[1mbilling\x1b[0m service is in Rust\x07")
    [p] = out["proposals"]
    assert p["title"] == "New project memory: The billing service is in Rust"
    r = cairn(workspace, "remember", "Staging deploys happen every Tuesday\x1b[0m")  # and the next one works
    assert "New project memory: Staging deploys happen every Tuesday" in r.stdout
    _no_raw(r.stdout, "remember output")
    r = cairn(workspace, "remember", "\x1b[31m\x07\x1b[0m", check=False)  # nothing but controls: empty
    assert r.returncode == 2 and "E_USAGE" in r.stderr and "empty" in r.stderr
    cairn(workspace, "process")  # the remembered turns' digests, then a general review of them
    r = cairn(workspace, "review")
    assert r.returncode == 0 and "Traceback" not in r.stderr
    _accept_all(workspace)
    assert "billing service is in Rust" in (workspace / ".agents/memory/the-billing-service-is-in-rust.md").read_text()
    journal = cairn(workspace, "journal").stdout
    assert "The billing service is in Rust" in journal
    _no_raw(journal, "cairn journal")


# -- a transcript -----------------------------------------------------------------------


def test_a_colour_escape_in_a_prompt_becomes_a_clean_note_and_a_clean_topic(workspace: Path) -> None:
    src = _aider(workspace, "s.md", "From now on \x1b[1mnever\x1b[0m use the word \x1b[31mbanana\x1b[0m in "
                 "identifiers\x07.\r")
    cairn(workspace, "import", "--ended", str(src))
    cairn(workspace, "seal")
    cairn(workspace, "process")
    segments = list((workspace / ".cairn/state/journal/segments").rglob("*"))
    assert segments and all(b"\\u001b" not in s.read_bytes() for s in segments if s.is_file())
    [d] = cairn_json(workspace, "journal")
    assert d["notes"][0]["title"] == "Never use the word banana in identifiers"
    r = cairn(workspace, "review")
    assert "1 proposal(s)" in r.stdout
    _accept_all(workspace)


# -- a wedged workspace -----------------------------------------------------------------


def test_a_workspace_wedged_by_old_evidence_recovers(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Evidence, digests and remember requests an earlier version kept with their control characters."""
    from cairn.protocol.digest import ModelPolicy
    from cairn.protocol.transcript import Session, Turn
    from cairn.worker.journal import batches, capture, digest
    from cairn.worker.journal.store import Journal
    from cairn.worker.memory import remember, review
    from cairn.worker.memory.store import MemoryStore
    from cairn.worker.providers import notes

    for module in (batches, digest, notes, remember, review):  # that version: nothing was cleaned
        monkeypatch.setattr(module, "clean_text", lambda text: text, raising=False)
    with Journal(str(workspace)) as j:
        turn = Turn(turn_id="t1", parent_turn_id=None, assistant="OK.",
                    user="From now on \x1b[1mnever\x1b[0m use the word banana in identifiers\x07.")
        capture.capture_session(j, Session(session_id="old", source_format="aider", title="\x1b]0;old\x07",
                                           turns=(turn,)), source="import:aider",
                                policy=ModelPolicy(provider="extractive"))
        capture.seal_session(j, "old", Trigger.SESSION_END)
        digest.process(j)
    with MemoryStore(str(workspace)) as ms:
        remember.record_request(ms, "The \x1b[1mbilling\x1b[0m service is in Rust\x07", "project", "cli")
    raw_notes = [n for d in cairn_json(workspace, "journal") for n in d["notes"]]
    assert any("\x1b" in n["title"] for n in raw_notes)  # the old digest holds the escapes
    monkeypatch.undo()

    r = cairn(workspace, "review")  # both the general review and the pending focused review
    assert r.returncode == 0, r.stderr
    r = cairn(workspace, "remember", "Staging deploys happen every Tuesday")
    assert r.returncode == 0 and "New project memory" in r.stdout
    titles = [p["title"] for p in cairn_json(workspace, "proposals")]
    assert any(t.lower().startswith("new feedback memory: never use the word banana") for t in titles)
    assert "New project memory: The billing service is in Rust" in titles
    _accept_all(workspace)
    journal = cairn(workspace, "journal").stdout
    assert "\\x1b[1mnever\\x1b[0m" in journal  # the old note, shown escaped
    _no_raw(journal, "cairn journal")
    assert cairn(workspace, "doctor").returncode == 0


def test_a_note_that_cannot_be_written_is_skipped_and_counted(workspace: Path) -> None:
    _old_digest(workspace, "d" * 20, [(NoteType.PROJECT, "\x1b[0m\x07", "The \x1b[1mbody\x1b[0m survives."),
                                      (NoteType.PROJECT, "Invoices use WeasyPrint",
                                       "Invoices are rendered with WeasyPrint.")])
    r = cairn(workspace, "review")
    assert r.returncode == 0 and "1 proposal(s)" in r.stdout
    assert "1 note(s) left out of the review (E_TOPIC_FRONT_MATTER)" in r.stderr
    assert "body survives" not in r.stderr  # the warning names a count and a code, never the note
    [p] = cairn_json(workspace, "proposals")
    assert p["title"] == "New project memory: Invoices use WeasyPrint"
    _old_digest(workspace, "e" * 20, [(NoteType.PROJECT, "\x1b[0m", "Another one.")])
    out = cairn_json(workspace, "review")
    assert out["skippedNotes"] == {"E_TOPIC_FRONT_MATTER": 1} and out["review"] and out["digests"] == 1


# -- the terminal ---------------------------------------------------------------------------


def test_cairn_journal_never_prints_an_escape(workspace: Path) -> None:
    _old_digest(workspace, "f" * 20, [(NoteType.PROJECT, f"Clipboard{OSC52} note", "Body.")],
                title="session\x1b]0;pwned\x07 title")
    r = cairn(workspace, "journal")
    assert "Clipboard\\x1b]52;c;" in r.stdout and "session\\x1b]0;pwned\\x07 title" in r.stdout
    _no_raw(r.stdout, "cairn journal")
    r = cairn(workspace, "journal", "--json")
    _no_raw(r.stdout, "cairn journal --json")
    assert OSC52 in json.loads(r.stdout)[0]["notes"][0]["title"]  # JSON escapes it, the value is kept


def test_session_file_names_with_controls_are_printed_escaped(tmp_path: Path) -> None:
    from tests.sources.home import env_for, make_home

    ws = tmp_path / "work" / "proj"
    home = make_home(tmp_path, str(ws), str(tmp_path / "work" / "other"))
    env = {k: v for k, v in env_for(home).items() if k in (
        "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME",
        "OPENCODE_DB", "CLINE_DIR", "COPILOT_HOME", "GOOSE_PATH_ROOT", "CONTINUE_GLOBAL_DIR", "APPDATA")}
    [project] = [d for d in (home / ".claude" / "projects").iterdir() if d.name == str(ws).replace("/", "-")]
    good = next(project.glob("*.jsonl"))
    evil = project / "evil\x1b]52;c;SGk=\x07\x1b[2J.jsonl"
    first, rest = good.read_bytes().replace(b'"sessionId":"a', b'"sessionId":"evil').split(b"\n", 1)
    deep = b"[" * 300 + b"]" * 300  # nested too deep: this line is left out, the rest imported
    evil.write_bytes(first + b"\n" + deep + b"\n" + rest)
    shown = "evil\\x1b]52;c;SGk=\\x07\\x1b[2J.jsonl"
    r = cairn(ws, "discover", "--sessions", env=env)
    assert "claude-code" in r.stdout and shown in r.stdout
    _no_raw(r.stdout + r.stderr, "cairn discover --sessions")
    r = cairn(ws, "import", str(evil), env=env, check=False)
    assert "E_IMPORT_MALFORMED" in r.stderr and shown in r.stderr
    _no_raw(r.stdout + r.stderr, "cairn import")
    r = cairn(ws, "import", "--all", env=env, check=False)
    assert "E_IMPORT_MALFORMED" in r.stderr and shown in r.stderr
    _no_raw(r.stdout + r.stderr, "cairn import --all")
    r = cairn(ws, "import", str(project / "missing\x1b[31m.jsonl"), env=env, check=False)
    assert r.returncode == 2 and "missing\\x1b[31m.jsonl" in r.stderr
    _no_raw(r.stderr, "an import error")


# -- doctor -------------------------------------------------------------------------------


def test_doctor_reports_reviews_that_keep_failing(workspace: Path) -> None:
    cairn(workspace, "import", "--ended", str(_aider(workspace, "s.md", "From now on never squash merge.")))
    cairn(workspace, "seal")
    cairn(workspace, "process")
    index = workspace / ".agents/memory/MEMORY.md"
    index.parent.mkdir(parents=True)
    index.write_bytes(b"# Memory\n\n\xff\xfe not text\n")
    for _ in range(3):
        r = cairn(workspace, "doctor", check=False)  # the index itself is reported at once (it was "ok")
        assert r.returncode == 1 and "memory E_MEMORY_NOT_TEXT .agents/memory/MEMORY.md" in r.stdout
        assert "VIOLATION" not in r.stdout  # a failed review or two is not yet a pattern
        r = cairn(workspace, "review", check=False)
        assert r.returncode == 2 and "E_MEMORY_NOT_TEXT" in r.stderr
    r = cairn(workspace, "doctor", check=False)
    assert r.returncode == 1
    [line] = [ln for ln in r.stdout.splitlines() if ln.startswith("VIOLATION")]
    assert "V_REVIEWS_FAILING" in line and "the last 3 runs of review/general failed" in line
    assert "E_MEMORY_NOT_TEXT" in line
    doc = json.loads(cairn(workspace, "doctor", "--json", check=False).stdout)
    assert [v["code"] for v in doc["violations"]] == ["V_REVIEWS_FAILING"]
    index.write_bytes(b"# Memory\n")  # the cause dealt with: the next review succeeds, the doctor is content
    assert "1 proposal(s)" in cairn(workspace, "review").stdout
    assert cairn(workspace, "doctor").returncode == 0
