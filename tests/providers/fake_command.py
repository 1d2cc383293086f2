"""A fake assistant CLI for the ``command`` provider's tests (run as ``python fake_command.py MODE DIR``).

It reads the prompt from stdin, keeps a copy in DIR (``prompt-<n>.txt``)
and answers according to MODE:

* ``answer`` — a digest prompt gets one ``user`` note per turn that says
  "prefer" or "never", in a ```json fence as chat models write it; a review prompt
  gets one ``create`` proposal citing every digest.
* ``hang`` — starts a helper process, writes both pids to DIR/pids, and
  never answers.
* ``fail`` — writes a secret to stderr and exits with status 3.
* ``prose`` — answers with text around the JSON object.
* ``flood`` — writes more than the 4 MiB reply bound to stdout.
* ``detach`` / ``detach-hang`` — has a helper start a grandchild in a new
  session (``setsid``) and exit, so the grandchild is an orphan while the
  program still runs; writes the grandchild's pid to DIR/grandchild, then
  answers (``detach``) or never answers (``detach-hang``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

STDERR_SECRET = "stderr-secret-Zq8Xw7Vu6Ts5"
#: an argument of the detached grandchild, so a test's teardown kills only its own leftovers
GRANDCHILD_MARK = "cairn-test-detached-grandchild"
FLOOD_BYTES = (4 << 20) + (1 << 20)


def detach(where: str) -> None:
    """A helper starts a grandchild in a session of its own and exits before it: the grandchild is orphaned."""
    start = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', "
             f"{GRANDCHILD_MARK!r}], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL); print(p.pid)")
    pid = subprocess.run([sys.executable, "-c", start], capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(where, "grandchild.tmp"), "w") as f:
        f.write(pid)
    os.replace(os.path.join(where, "grandchild.tmp"), os.path.join(where, "grandchild"))


def answer(prompt: str) -> str:
    request = json.loads(prompt.rstrip("\n").rsplit("\n", 1)[-1])  # the request text is the last line
    if "turns" in request:
        notes = [{"type": "user", "title": "Prefers small commits", "body": "The user prefers small commits.",
                  "turn_ids": [t["turn_id"]]} for t in request["turns"] if "never" in t["user"].lower() or "prefer" in t["user"]]
        return "```json\n" + json.dumps({"notes": notes}) + "\n```\n"
    ids = [d["id"] for d in request["digests"]]
    return json.dumps({"proposals": [{"action": "create", "type": "user", "title": "Commit style",
                                      "description": "How the user likes commits",
                                      "bullets": ["The user prefers small commits."], "evidence": ids}]})


def main() -> None:
    mode, where = sys.argv[1], sys.argv[2]
    prompt = sys.stdin.read()
    n = len([f for f in os.listdir(where) if f.startswith("prompt-")])
    with open(os.path.join(where, f"prompt-{n}.txt"), "w") as f:
        f.write(prompt)
    if mode == "answer":
        sys.stdout.write(answer(prompt))
    elif mode == "hang":
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.path.join(where, "pids"), "w") as f:
            f.write(f"{os.getpid()} {helper.pid}\n")
        time.sleep(600)
    elif mode == "fail":
        sys.stderr.write(f"fatal: {STDERR_SECRET}\n")
        sys.exit(3)
    elif mode == "prose":
        sys.stdout.write('Sure! Here are the notes: {"notes": []}\nHope that helps.\n')
    elif mode == "flood":
        chunk = "x" * 65536
        for _ in range(FLOOD_BYTES // len(chunk)):
            sys.stdout.write(chunk)
    elif mode in ("detach", "detach-hang"):
        detach(where)
        if mode == "detach-hang":
            time.sleep(600)
        sys.stdout.write(answer(prompt))


if __name__ == "__main__":
    main()
