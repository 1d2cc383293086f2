"""The model digest path on real sessions: user words kept, requests per distinct request, exhausted captures, rounds.

Usage::

    python bench/model_path.py [--context-tokens 8192] [--only ID[,ID...]] [--max-rounds 8]
                               [--baseline REV] [--png FILE] [--json FILE]

Every corpus file present (``tests/corpus``: ``manifest.json``, ``files/``
and, once restored, ``cache/``) is imported as the product imports it (its
importer, as :mod:`bench.quality_corpus` maps the corpus formats), each
session captured and sealed in one
scratch workspace whose settings name an ``openai`` provider. The provider
is a real OpenAI chat-completions server on 127.0.0.1 in this process (a
``ThreadingHTTPServer``): it answers every digest request with notes that
quote the user text it was sent (one per turn, citing it), and reports
``usage.prompt_tokens`` as the body's length / 4. It runs twice:

* **refusing**: the first time it sees a request body it refuses it (HTTP
  503 or 429, by the body's hash), as a provider under load does; the same
  bytes sent again are answered;
* **reliable**: every request is answered.

Each run digests with ``process`` passes in this process (one pass is one
``cairn process``: a *round*), without ever running ``cairn retry``, until
no capture is left runnable or ``--max-rounds`` passes ran. Reported:

* **user words kept**: labelled durable items (``tests/corpus/labels``) whose
  quoted evidence reached a request (the parts of a split message joined in
  order), and turns whose whole user text reached one;
* **requests sent / distinct requests** (target ≤ 2.2 refusing, ≤ 1.05
  reliable), and the input tokens usage recorded over the distinct input;
* **captures exhausted** (target 0) and **rounds** a published session took
  (median, max; an exhausted one has none).

``--baseline REV`` runs the same measurement on the code of revision REV
(``git archive``; that revision's code, corpus loader and labels, with the
corpus files restored here, in a child process) and prints it beside this
tree's. ``--png`` draws both; ``--json`` writes the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import attrs  # noqa: E402
from cairn.protocol.digest import ModelPolicy  # noqa: E402
from cairn.protocol.journal import TURN_SNAPSHOT_LIMIT  # noqa: E402
from cairn.protocol.settings import Settings  # noqa: E402
from cairn.protocol.text import clean_text  # noqa: E402
from cairn.protocol.transcript import Session, Turn  # noqa: E402
from cairn.protocol.vocab import Trigger  # noqa: E402
from cairn.worker.ingest.importers import load  # noqa: E402
from cairn.worker.journal.batches import capture_states  # noqa: E402
from cairn.worker.journal.capture import capture_session, seal_session  # noqa: E402
from cairn.worker.journal.digest import process  # noqa: E402
from cairn.worker.journal.store import Journal  # noqa: E402
from cairn.worker.providers import usage_report  # noqa: E402
from cairn.worker.providers.usage import bound  # noqa: E402
from cairn.worker.redaction.redact import KnownSecrets, redact_session  # noqa: E402

from bench import quality_corpus  # noqa: E402
from bench.quality_corpus import CORPUS, MINIMAL_FORMATS, sessions_of  # noqa: E402

#: manifest format -> importer format, as the corpus loader of this tree maps them (its own parsers aside)
IMPORTER: dict[str, str] = {"claude-export-text": "claude-code-export", **getattr(quality_corpus, "_IMPORTER", {})}
MODEL = "bench-model"


# ---------------------------------------------------------------- the corpus as sessions

@dataclass
class Label:
    turn: str  # "<file>/<session>.<turn>"
    evidence: str


@dataclass
class Corpus:
    sessions: list[tuple[Session, str]] = field(default_factory=list)  # (session, source format)
    labels: list[Label] = field(default_factory=list)
    files: int = 0
    missing: int = 0


def corpus(only: frozenset[str]) -> Corpus:
    """Sessions of every present, verified corpus file; turn ids ``<file>/<session>.<turn>`` as labels name them."""
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    out = Corpus()
    for entry in manifest["files"]:
        fid, fmt = entry["id"], entry["format"]
        if only and fid not in only:
            continue
        path = next((p for p in (CORPUS / d / entry["file"] for d in ("files", "cache")) if p.is_file()), None)
        if path is None or hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            out.missing += 1
            continue
        out.files += 1
        if fmt in MINIMAL_FORMATS:
            found = [Session(session_id=f"bench:{fid}/{s}", source_format=fmt, title=None,
                             turns=tuple(Turn(turn_id=f"{fid}/{t}", parent_turn_id=None, user=u, assistant=a)
                                         for t, u, a in turns))
                     for s, turns in enumerate(sessions_of(path, fmt))]
        else:
            found = [Session(session_id=f"bench:{fid}/{s}", source_format=session.source_format, title=session.title,
                             turns=tuple(attrs.evolve(turn, turn_id=f"{fid}/{s}.{t}", parent_turn_id=None)
                                         for t, turn in enumerate(session.turns)))
                     for s, session in enumerate(load(path, IMPORTER.get(fmt, fmt)))]
        out.sessions += [(s, IMPORTER.get(fmt, fmt)) for s in found if s.turns]
        labels = json.loads((CORPUS / "labels" / f"{fid}.json").read_text(encoding="utf-8"))
        out.labels += [Label(turn=f"{fid}/{d['turn']}", evidence=d["evidence"]) for d in labels.get("durable", [])]
    return out


# ---------------------------------------------------------------- the model server

class Model:
    """What the loopback server saw and answered: request bodies, and the user text of every turn it was sent."""

    def __init__(self, refusing: bool) -> None:
        self.refusing = refusing
        self.lock = threading.Lock()
        self.seen: set[bytes] = set()
        self.sent = 0
        self.refused = 0
        self.answered_input = 0
        self.user: dict[str, dict[str, str]] = {}  # turn id -> part label ("" when whole) -> user text

    def answer(self, body: bytes) -> tuple[int, bytes]:
        with self.lock:
            self.sent += 1
            first = body not in self.seen
            self.seen.add(body)
            if self.refusing and first:
                self.refused += 1
                status = 503 if hashlib.sha256(body).digest()[0] % 2 else 429
                return status, b'{"error": {"message": "overloaded, try again"}}'
        request = json.loads(body)
        evidence = json.loads(request["messages"][1]["content"])
        notes = []
        for t in evidence.get("turns", []):
            part = t.get("part", "")
            with self.lock:
                self.user.setdefault(t["turn_id"], {})[part] = t["user"]
            quote = " ".join(t["user"].split())[:300]
            if quote:
                notes.append({"type": "user", "title": f"Said in turn {t['turn_id']}"[:120], "body": quote,
                              "turn_ids": [t["turn_id"]]})
        content = json.dumps({"notes": notes} if "turns" in evidence else {"proposals": []})
        with self.lock:
            self.answered_input += len(body) // 4
        reply = {"id": "bench", "object": "chat.completion",
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                              "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": len(content) // 4}}
        return 200, json.dumps(reply).encode()

    def received(self, turn_id: str) -> str | None:
        """The user text of ``turn_id`` as requests carried it (parts joined in order); None if never sent."""
        pieces = self.user.get(turn_id)
        if not pieces:
            return None
        if "" in pieces:
            return pieces[""]
        numbered = sorted(((int(k.split(" of ")[0]), int(k.split(" of ")[1]), v) for k, v in pieces.items()))
        return "".join(v for _, _, v in numbered)


@contextmanager
def serve(model: Model) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status, reply = model.answer(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that closed its connection: no news
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host!s}:{port}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


# ---------------------------------------------------------------- one run

@dataclass
class Figures:
    mode: str
    sessions: int
    labels: int
    labels_reached: int
    labels_uncaptured: int  # in a turn over the capture's limit (TURN_SNAPSHOT_LIMIT): never kept, by design
    turns: int
    turns_whole: int
    requests: int
    distinct: int
    refused: int
    exhausted: int
    published: int
    rounds_median: float
    rounds_max: int
    rounds: list[int]
    input_recorded: int
    input_distinct: int
    seconds: float

    @property
    def ratio(self) -> float:
        return self.requests / self.distinct if self.distinct else 0.0


def run(data: Corpus, *, refusing: bool, context_tokens: int, max_rounds: int) -> Figures:
    model = Model(refusing)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cairn-model-path-") as ws, serve(model) as url:
        policy = ModelPolicy(provider="openai", model=MODEL, endpoint=url, timeout_seconds=60.0)
        settings = Settings(provider="openai", model=MODEL, endpoint=url, contextTokens=context_tokens, mode="manual")
        with Journal(ws) as j:
            for session, fmt in data.sessions:
                capture_session(j, session, source=f"import:{fmt}", policy=policy)
                seal_session(j, session.session_id, Trigger.SESSION_END)
        done_at: dict[str, int] = {}
        rounds = 0
        while rounds < max_rounds:
            rounds += 1
            with Journal(ws) as j, bound(ws):
                process(j, settings=settings)
                states = capture_states(j)
            for st in states:
                if st.retired:
                    done_at.setdefault(st.cid, rounds)
            if not any(s.sealed and not s.retired and not s.exhausted for s in states):
                break
        exhausted = sum(1 for s in states if s.exhausted)
        left = [s for s in states if not s.retired]
        per_session = [done_at[s.cid] for s in states if s.cid in done_at]  # rounds to publish (published ones)
        rows = usage_report.report(ws)["rows"]
    # what reached the model, against what was captured (cleaned, and redacted as every request is)
    expected: dict[str, str] = {}
    oversized: set[str] = set()
    for session, _ in data.sessions:  # redacted in one pass over the session, as the provider does (``sent``)
        texts = redact_session([clean_text(session.title or ""), *(clean_text(x) for t in session.turns
                                                                   for x in (t.user, t.assistant))], KnownSecrets())
        for i, t in enumerate(session.turns):
            expected[t.turn_id] = texts[1 + 2 * i]
            if len(clean_text(t.user).encode()) + len(clean_text(t.assistant).encode()) > TURN_SNAPSHOT_LIMIT:
                oversized.add(t.turn_id)
    reached = uncaptured = 0
    for label in data.labels:
        got = model.received(label.turn) or ""
        if label.evidence in got or " ".join(label.evidence.split()) in " ".join(got.split()):
            reached += 1
        elif label.turn in oversized:
            uncaptured += 1
    with_words = [t for t, text in expected.items() if text.strip() and t not in oversized]
    whole = sum(1 for t in with_words if model.received(t) == expected[t])
    return Figures(
        mode="refusing" if refusing else "reliable", sessions=len(data.sessions), labels=len(data.labels),
        labels_reached=reached, labels_uncaptured=uncaptured, turns=len(with_words), turns_whole=whole,
        requests=model.sent, distinct=len(model.seen), refused=model.refused, exhausted=exhausted,
        published=len(states) - len(left), rounds_median=statistics.median(per_session) if per_session else 0.0,
        rounds_max=max(per_session, default=0), rounds=per_session,
        input_recorded=sum(r["tokensIn"] for r in rows), input_distinct=model.answered_input,
        seconds=time.perf_counter() - started)


# ---------------------------------------------------------------- report

def table(results: dict[str, list[Figures]]) -> str:
    lines = ["| code | server | user words kept (labelled items) | turns sent whole | requests / distinct | "
             "input recorded / distinct | exhausted | rounds to publish (median, max) | published |",
             "|---|---|---|---|---|---|---|---|---|"]
    for code, figures in results.items():
        for f in figures:
            lines.append(
                f"| {code} | {f.mode} | {f.labels_reached} of {f.labels} | {f.turns_whole} of {f.turns} | "
                f"{f.requests} / {f.distinct} = **{f.ratio:.2f}** | "
                f"{f.input_recorded:,} / {f.input_distinct:,} = {f.input_recorded / max(1, f.input_distinct):.2f} | "
                f"**{f.exhausted}** of {f.sessions} | {f.rounds_median:g}, {f.rounds_max} | {f.published} |")
    return "\n".join(lines)


def chart(path: pathlib.Path, results: dict[str, list[Figures]]) -> None:
    try:
        import matplotlib  # optional: the `bench` extra

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no chart; `pip install -e '.[bench]'`)", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))
    codes = list(results)
    modes = ["refusing", "reliable"]
    width = 0.8 / len(codes)
    panels = [
        ("requests sent / distinct", lambda f: f.ratio, (2.2, 1.05)),
        ("labelled items whose words reached the model", lambda f: f.labels_reached / max(1, f.labels), None),
        ("captures exhausted (of sessions)", lambda f: f.exhausted, None),
        ("rounds to publish a session (median)", lambda f: f.rounds_median, None),
    ]
    for ax, (title, value, targets) in zip(axes, panels, strict=True):
        for i, code in enumerate(codes):
            by_mode = {f.mode: f for f in results[code]}
            xs = [m + i * width for m in range(len(modes))]
            ax.bar(xs, [value(by_mode[m]) if m in by_mode else 0 for m in modes], width=width, label=code)
        if targets:
            for m, target in enumerate(targets):
                ax.hlines(target, m - 0.1, m + 0.9, colors="grey", linestyles=":", linewidth=1)
        ax.set_xticks([m + width * (len(codes) - 1) / 2 for m in range(len(modes))], modes)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("model digest path on the corpus sessions (dotted: targets)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"chart written to {path}")


def measure(args: argparse.Namespace) -> list[Figures]:
    data = corpus(frozenset(i for i in args.only.split(",") if i))
    print(f"{data.files} corpus files ({data.missing} missing), {len(data.sessions)} sessions, "
          f"{sum(len(s.turns) for s, _ in data.sessions)} turns, {len(data.labels)} labelled durable items",
          file=sys.stderr)
    return [run(data, refusing=refusing, context_tokens=args.context_tokens, max_rounds=args.max_rounds)
            for refusing in (True, False)]


def baseline(rev: str, args: argparse.Namespace) -> list[Figures]:
    """The same measurement on the code of ``rev``, in a child process importing that tree as ``cairn``."""
    with tempfile.TemporaryDirectory(prefix="cairn-baseline-") as tmp:
        src, pkg = pathlib.Path(tmp, "src"), pathlib.Path(tmp, "pkg", "cairn")
        src.mkdir()
        pkg.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        for layer in ("protocol", "state", "worker", "server"):
            (pkg / layer).symlink_to(src / layer)
        # that revision's corpus loader and labels (turn numbers follow its importers), this tree's restored files
        (src / "bench" / "model_path.py").write_bytes(pathlib.Path(__file__).read_bytes())
        if (CORPUS / "cache").is_dir() and not (src / "tests" / "corpus" / "cache").exists():
            (src / "tests" / "corpus" / "cache").symlink_to(CORPUS / "cache")
        out = pathlib.Path(tmp, "figures.json")
        argv = [sys.executable, str(src / "bench" / "model_path.py"), "--context-tokens", str(args.context_tokens),
                "--max-rounds",
                str(args.max_rounds), "--only", args.only, "--json", str(out)]
        subprocess.run(argv, env={**os.environ, "PYTHONPATH": str(pkg.parent)})  # its targets may be missed
        return [Figures(**d) for d in json.loads(out.read_text())[0]["figures"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context-tokens", type=int, default=8192)
    parser.add_argument("--max-rounds", type=int, default=8)
    parser.add_argument("--only", default="", help="comma-separated corpus file ids")
    parser.add_argument("--baseline", default="", metavar="REV", help="measure revision REV too, for comparison")
    parser.add_argument("--png", type=pathlib.Path)
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args(argv)
    results: dict[str, list[Figures]] = {}
    if args.baseline:
        results[args.baseline] = baseline(args.baseline, args)
    results["this tree"] = measure(args)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps([{"code": k, "figures": [asdict(f) for f in v]} for k, v in results.items()]))
    if args.png:
        chart(args.png, results)
    mine = {f.mode: f for f in results["this tree"]}
    met = (mine["refusing"].ratio <= 2.2 and mine["reliable"].ratio <= 1.05
           and all(f.exhausted == 0 for f in mine.values())
           and all(f.labels_reached + f.labels_uncaptured == f.labels for f in mine.values()))
    print("targets (≤ 2.2 refusing, ≤ 1.05 reliable, 0 exhausted, every labelled item's words sent): "
          + ("met" if met else "missed"))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
