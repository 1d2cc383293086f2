"""Reading usage records: sums per UTC day, provider and model, prices, and the roll-up that bounds them.

Records are :mod:`worker.providers.usage`'s start/end pairs under
``.cairn/state/usage/<day>/``. Summing happens at read time:

* a pair counts under its end record's outcome (``ok``, ``failed``,
  ``timeout``, ``cancelled``) with its tokens and duration;
* a start without an end counts ``running`` while the process that wrote it
  lives, else ``interrupted`` (the worker died mid-request), with its
  request tokens estimated and no output tokens;
* ``estimated`` counts the requests whose tokens are estimates.

**Bounded.** Once a day is older than :data:`KEEP_DAYS` and none of its
requests is running, it is rolled up: its rows are published as
``<day>.sum`` (exclusively, fsynced), then its records and folder are
removed. Readers prefer a ``.sum`` over a folder of the same day, so a crash
anywhere in between converges on the next roll-up and never counts a
request twice. A roll-up runs after each recorded request, one day at a
time, so the folder holds at most ``KEEP_DAYS`` days of records plus one
small file per older day with requests.

**Prices** (the ``prices`` setting: per model, or ``provider/model``, the
price of a million input and a million output tokens) are applied at read
time, so a corrected table re-prices the history; a row without a price has
``cost: null``.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.state.fsdir import PinnedDir
from cairn.worker.providers.usage import OUTCOMES, USAGE, alive, day_of, estimate
from cairn.worker.settings import config

KEEP_DAYS = 7
COUNTS = (*OUTCOMES, "interrupted", "running")
SUM_SUFFIX = ".sum"
Prices = tuple[tuple[str, float, float], ...]


def _load(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        doc = boundedjson.loads(raw.decode("utf-8"))
    except ValueError:  # a torn or foreign record counts as absent
        return None
    return doc if isinstance(doc, dict) else None


def _num(doc: dict[str, Any], key: str) -> float:
    v = doc.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else 0.0


def _empty(day: str, provider: str, model: str) -> dict[str, Any]:
    return {"day": day, "provider": provider, "model": model, "requests": 0, **dict.fromkeys(COUNTS, 0),
            "tokensIn": 0, "tokensOut": 0, "estimated": 0, "seconds": 0.0}


def _records(d: Any) -> frozenset[str]:
    """The record names of a day folder (temps, named ``.tmp-...``, are not records yet)."""
    return frozenset(n for n in d.listdir() if not n.startswith("."))


def _day_rows(d: Any, day: str, names: frozenset[str] | None = None) -> tuple[list[dict[str, Any]], bool]:
    """The rows of one day folder and whether any of its requests is still running."""
    names = _records(d) if names is None else names
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    running = False
    for name in sorted(n for n in names if n.endswith(".start")):
        start = _load(d.read(name, limit=1 << 16))
        if start is None:
            continue
        end = _load(d.read(name[: -len(".start")] + ".end", limit=1 << 16)) if name[:-6] + ".end" in names else None
        provider, model = str(start.get("provider", "?")), str(start.get("model", ""))
        row = rows.setdefault((provider, model), _empty(day, provider, model))
        row["requests"] += 1
        if end is not None and end.get("outcome") in OUTCOMES:
            row[end["outcome"]] += 1
            row["tokensIn"] += int(_num(end, "tokensIn"))
            row["tokensOut"] += int(_num(end, "tokensOut"))
            row["estimated"] += 1 if end.get("estimated") is not False else 0
            row["seconds"] = round(row["seconds"] + _num(end, "seconds"), 3)
            continue
        pid = start.get("pid")
        started = start.get("pidStarted")
        if isinstance(pid, int) and alive(pid, started if isinstance(started, (int, float)) else None):
            row["running"] += 1
            running = True
        else:
            row["interrupted"] += 1
        row["tokensIn"] += estimate(int(_num(start, "requestChars")))
        row["estimated"] += 1
    return [rows[k] for k in sorted(rows)], running


def _is_day(name: str) -> bool:
    return len(name) == 10 and name[4] == "-" and name[7] == "-" and name.replace("-", "").isdigit()


def _root(workspace: str) -> Any:
    """The pinned usage folder, or None when nothing was ever recorded (a symlink fails closed)."""
    with PinnedDir.open_root(workspace) as root:
        try:
            return root.descend(USAGE)
        except CairnError as exc:
            if exc.code is ErrorCode.NOT_FOUND:
                return None
            raise


def read_rows(workspace: str, since: str | None = None) -> list[dict[str, Any]]:
    """Every row (day, provider, model) from ``since`` (a ``YYYY-MM-DD`` UTC day) on, oldest first."""
    u = _root(workspace)
    if u is None:
        return []
    out: list[dict[str, Any]] = []
    with u:
        names = set(u.listdir())
        days = sorted({n[: -len(SUM_SUFFIX)] if n.endswith(SUM_SUFFIX) else n for n in names
                       if _is_day(n.removesuffix(SUM_SUFFIX))})
        for day in days:
            if since is None or day >= since:
                out += _rows_of(u, names, day)
    return out


def _rows_of(u: Any, names: set[str], day: str, cache: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rows of ``day`` in the usage folder ``u`` (whose entries are ``names``): its summary, else its records.

    With ``cache`` (a dict the caller keeps between calls), a day folder whose
    record names are the ones of the last read is not read again: a record is
    published complete under its final name and never rewritten, so the same
    names mean the same rows. A day with a request still running is always
    re-read (its writer may have died since: ``running`` becomes
    ``interrupted`` without a file changing).
    """
    summary = _load(u.read(day + SUM_SUFFIX)) if day + SUM_SUFFIX in names else None
    if summary is not None and isinstance(summary.get("rows"), list):
        return [r for r in summary["rows"] if isinstance(r, dict)]
    if day not in names:
        return []
    with u.child(day) as d:
        if cache is None:
            return _day_rows(d, day)[0]
        records = _records(d)
        key = (day, records)
        if cache.get("key") != key:
            rows, running = _day_rows(d, day, records)
            cache.update(key=None if running else key, rows=rows)
        return [dict(r) for r in cache["rows"]]


def roll_up(workspace: str, *, now: float | None = None) -> str | None:
    """Roll up the oldest day past :data:`KEEP_DAYS` with nothing running; the day rolled up, or None."""
    u = _root(workspace)
    if u is None:
        return None
    limit = day_of((time.time() if now is None else now) - KEEP_DAYS * 86400)
    with u:
        names = set(u.listdir())
        for day in sorted(n for n in names if _is_day(n) and n < limit):
            with u.child(day) as d:
                if day + SUM_SUFFIX not in names:
                    rows, running = _day_rows(d, day)
                    if running:
                        continue
                    data = json.dumps({"v": 1, "day": day, "rows": rows}, sort_keys=True).encode()
                    u.publish(day + SUM_SUFFIX, data)
                for name in d.listdir():
                    d.remove(name, sync=False)
                d.sync()
            os.rmdir(day, dir_fd=u.fd)
            u.sync()
            return day
    return None


def price_of(prices: Prices, provider: str, model: str) -> tuple[float, float] | None:
    """(per million input tokens, per million output tokens) for ``provider/model``, else ``model``."""
    table = {key: (pin, pout) for key, pin, pout in prices}
    return table.get(f"{provider}/{model}") or table.get(model)


def priced(rows: list[dict[str, Any]], prices: Prices) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        p = price_of(prices, r["provider"], r["model"])
        cost = None if p is None else round(r["tokensIn"] * p[0] / 1e6 + r["tokensOut"] * p[1] / 1e6, 6)
        out.append({**r, "cost": cost})
    return out


def total(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The sum of ``rows``; ``cost`` sums the priced rows (None when none is priced)."""
    out: dict[str, Any] = {"requests": 0, **dict.fromkeys(COUNTS, 0), "tokensIn": 0, "tokensOut": 0,
                           "estimated": 0, "seconds": 0.0, "cost": None}
    for r in rows:
        for k in ("requests", *COUNTS, "tokensIn", "tokensOut", "estimated"):
            out[k] += int(r.get(k, 0))
        out["seconds"] = round(out["seconds"] + float(r.get("seconds", 0.0)), 3)
        if r.get("cost") is not None:
            out["cost"] = round((out["cost"] or 0.0) + r["cost"], 6)
    return out


def report(workspace: str, *, since: str | None = None, prices: Prices = ()) -> dict[str, Any]:
    """``cairn usage --json``: the rows (priced) and their total."""
    rows = priced(read_rows(workspace, since), prices)
    return {"since": since, "rows": rows, "total": total(rows)}


def today(workspace: str, *, prices: Prices = (), now: float | None = None,
          cache: dict[str, Any] | None = None) -> dict[str, Any]:
    """Today's (UTC) total, the ``usage`` of ``cairn/status``.

    ``cache`` (a dict the caller keeps between calls, see :func:`_rows_of`)
    spares re-reading the records of a day that did not change.
    """
    day = day_of(time.time() if now is None else now)
    u = _root(workspace)
    rows: list[dict[str, Any]] = []
    if u is not None:
        with u:
            rows = [r for r in _rows_of(u, set(u.listdir()), day, cache) if r.get("day") == day]
    return {"day": day, **total(priced(rows, prices))}


def parse_since(text: str | None, *, now: float | None = None) -> str | None:
    """``--since``: a UTC day ``YYYY-MM-DD``, ``today``, or ``<N>d`` (the last N days, today included)."""
    if text is None or text == "":
        return None
    t = time.time() if now is None else now
    if text == "today":
        return day_of(t)
    if text.endswith("d") and text[:-1].isdigit() and 0 < int(text[:-1]) <= 100000:
        return day_of(t - (int(text[:-1]) - 1) * 86400)
    try:
        time.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise CairnError(ErrorCode.USAGE, f"--since {text[:40]!r}: expected YYYY-MM-DD, today or <N>d") from None
    return text


def job_usage(req: Any) -> dict[str, Any]:
    """The ``usage`` job: :func:`report` from ``args.since`` with the request's price table."""
    since = req.args.get("since")
    if since is not None and not isinstance(since, str):
        raise CairnError(ErrorCode.USAGE, "since must be a string")
    return report(req.workspace, since=parse_since(since), prices=config.from_request(req.config).prices)
