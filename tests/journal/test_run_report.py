"""What ``cairn run`` and ``cairn process`` tell a person: each stage, every failure's code and what follows."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from cairn.protocol.errors import ErrorCode
from cairn.protocol.vocab import OutcomeKind
from cairn.worker.memory.store import MemoryStore

from tests.journal.helpers import DEMO, cairn


def _refused_endpoint() -> str:
    """A loopback URL whose port refuses connections: bound, never listened on, closed."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_an_unreachable_endpoint_is_reported_with_its_code_and_the_next_attempt(workspace: Path,
                                                                                 tmp_path: Path) -> None:
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn/config.toml").write_text(
        f'provider = "openai"\nmodel = "m"\nendpoint = "{_refused_endpoint()}"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}  # the user's config (and trust list) of this test only
    cairn(workspace, "trust", env=env)  # a workspace file may name an endpoint only in a trusted workspace
    r = cairn(workspace, "run", str(DEMO), env=env, check=False)
    assert r.returncode == 1, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("capture ")]
    assert "E_PROVIDER_FAILED: connection refused (ConnectError)" in line
    assert "attempt 1/3 failed; attempt 2/3 is eligible now: `cairn process` runs it" in line
    assert "digests: published 0, all-none 0, recovered 0, failed 1" in r.stdout
    assert "Traceback" not in r.stderr

    second = json.loads(cairn(workspace, "process", "--json", env=env, check=False).stdout)
    (f,) = second["failures"]
    assert (f["code"], f["message"], f["attempt"], f["of"], f["exhausted"]) == (
        "E_PROVIDER_FAILED", "connection refused (ConnectError)", 2, 3, False)

    third = cairn(workspace, "process", env=env, check=False)
    assert third.returncode == 1
    (line,) = [x for x in third.stdout.splitlines() if x.startswith("capture ")]
    cid = f["capture"]
    assert f"attempt 3/3 failed, the capture is exhausted: `cairn retry {cid}`" in line
    assert f"`cairn discard {cid}` accepts the omission" in line


def test_run_leaves_review_to_the_process_holding_its_claim(workspace: Path) -> None:
    with MemoryStore(str(workspace)) as ms:
        held = ms.mclaims.elect("review/general", purpose="review", ttl=600, authority=ms.mauthority)
        r = cairn(workspace, "run", str(DEMO), check=False)
        as_json = json.loads(cairn(workspace, "run", str(DEMO), "--json", check=False).stdout)
        ms.mclaims.settle(held, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
    # import, seal and digests happened and are said to have happened; review is not a failure
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("imported ") and lines[0] != ("imported 0 new turn(s) from 1 session(s) in 1 file(s) "
                                                             "(claude-code), 0 already captured")
    assert lines[1] == "sealed 1 capture(s)"
    assert lines[2].startswith("digests: published 1, ")
    assert lines[3].startswith("review: left to another process, which holds the review claim (E_CLAIM_BUSY: ")
    assert r.stderr == ""
    assert as_json["review"]["skipped"] == "busy" and as_json["review"]["error"] == "E_CLAIM_BUSY"
    # nothing was lost: once the holder is gone the digest is reviewed
    review = json.loads(cairn(workspace, "review", "--json").stdout)
    assert review["digests"] == 1
