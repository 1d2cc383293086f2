"""What an import says besides its counts: the formats it read, why a file gave no turn, what it left out.

Pure wording over the counts of :class:`~protocol.import_results.ImportResult` and
:class:`~protocol.import_results.SourcesImport` (no import machinery loads here):
``cairn import`` (files and ``--all``) and ``cairn run`` print these lines
after their summary, so an import that captured nothing says whether nothing
is complete yet or why a file was not read, and nothing found is left out
without a count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping


def formats_said(formats: Iterable[str]) -> str:
    """``" (codex)"``, ``" (2 codex, 1 claude-code)"``: the formats the files were read as, in the order
    first met; ``""`` when no file was read."""
    counts = Counter(f for f in formats if f)  # a file with nothing in it yet was read as no format
    if not counts:
        return ""
    if len(counts) == 1:
        return f" ({next(iter(counts))})"
    return " (" + ", ".join(f"{n} {fmt}" for fmt, n in counts.items()) + ")"


def waiting_lines(*, turns: int, pending: int, empty: int, idle_minutes: float, ended_flag: str) -> list[str]:
    """Why turns are missing: last turns with no end signal yet (``pending``), files with no answered
    prompt (``empty``); ``turns`` is the number of turns seen (new and already captured)."""
    out: list[str] = []
    wait = (f"captured once the file has been quiet {idle_minutes:g} minute(s), or now with {ended_flag} "
            "if the session is over")
    if pending:
        head = "nothing complete yet: " if not turns else ""
        out.append(f"{head}{pending} last turn(s) not over yet (no end signal or next prompt after them); {wait}")
    if empty and not turns and not pending:
        out.append("nothing complete yet: no prompt has been answered in it" if empty == 1
                   else f"nothing complete yet: no prompt has been answered in these {empty} files")
    elif empty:
        out.append(f"{empty} file(s) with nothing complete yet (no prompt answered)")
    return out


_LEFT_OUT = {
    "other-workspace": "{n} session(s) of other workspaces",
    "no-workspace": "{n} session(s) whose tool records no workspace",
    "before-since": "{n} session(s) older than --since",
    "cut-stores": "the files past the listing bound of {n} store(s)",
}


def left_out_line(left_out: Mapping[str, int] | None) -> str | None:
    """``import --all``: the sessions found but not imported, by reason (None when none)."""
    if not left_out:
        return None
    order = [*_LEFT_OUT, *sorted(set(left_out) - set(_LEFT_OUT))]
    parts = [_LEFT_OUT.get(reason, "{n} " + reason).format(n=left_out[reason]) for reason in order
             if left_out.get(reason)]
    if not parts:
        return None
    hint = ("; --every-workspace takes every workspace's sessions"
            if left_out.get("other-workspace") or left_out.get("no-workspace") else "")
    return "left out: " + ", ".join(parts) + hint
