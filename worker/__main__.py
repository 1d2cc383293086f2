"""``python -m cairn.worker KIND``: run one job from a JSON request on stdin.

Imports only what the job needs (:data:`worker.entry.REGISTRY` names each job lazily), so a cold start
stays close to a bare interpreter start. Exit status is 0 whenever a
response was written, including failed jobs; a non-zero exit or a missing
response means the worker itself died, which the runner reports as a failure.
"""

from __future__ import annotations

import sys

from cairn.worker.entry import run_stdio


def main() -> int:
    return run_stdio(sys.argv[1:], sys.stdin.buffer, sys.stdout.buffer, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
