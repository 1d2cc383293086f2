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
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

STDERR_SECRET = "stderr-secret-Zq8Xw7Vu6Ts5"


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


if __name__ == "__main__":
    main()
