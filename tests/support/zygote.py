"""A warm Python for the test suite: one process that has imported cairn forks a child per command.

Tests run ``cairn`` (:func:`tests.journal.helpers.cairn`) and their own
actors (``python -m tests.memory.actor``) hundreds of times, crash sweeps
once per kill point; each used to start a new interpreter and import the
CLI and the jobs: 0.2–0.4 s of every run. This zygote imports them once,
then, per request, forks a child that behaves as ``python -m MODULE ARGS``
or ``python -c CODE ARGS`` would, with the request's environment, working
directory and output files: still a process of its own (its own pid, exit
status or death by signal, claims, file descriptors and module state, since
the zygote itself never runs a command), without the start-up. Crash and
fault injection follow the child's environment
(:func:`cairn.state.crash.configure_from_environment`).

Protocol on stdin/stdout, one JSON object a line: a request
``{"argv", "env", "cwd", "out", "err"}`` (``argv`` as given to ``python``:
``["-m", "cairn.server", ...]`` or ``["-c", code, ...]``) is answered
``{"pid": N}`` at once, then ``{"rc": N}`` when the child has exited
(``rc`` < 0: killed by that signal, as :mod:`subprocess` reports it). The
zygote is single-threaded, so a fork copies no lock held by another thread.
It exits when its stdin closes.
"""

from __future__ import annotations

import json
import os
import signal
import sys

#: imported once, before any request; never a module that reads a tuning knob when imported
#: (:func:`cairn.protocol.knobs.readers`: capture, imports, digest, import_run…), since a child
#: must read the knobs of its own environment
PRELOAD = (
    "cairn.server.cli.app", "cairn.server.cli.journal", "cairn.server.cli.memory", "cairn.server.cli.run",
    "cairn.server.cli.sources", "cairn.worker.entry", "cairn.worker.journal.views", "cairn.worker.memory.review",
    "cairn.worker.memory.apply", "cairn.worker.memory.jobs", "cairn.worker.providers.extractive",
    "cairn.worker.redaction", "cairn.worker.ingest.importers", "cairn.worker.settings.config", "trio",
)


def _child(req: dict) -> None:
    """Become the command: never returns."""
    rc = 70
    try:
        os.setpgid(0, 0)  # the caller may end the whole group (the command's own workers included)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, req["out"]), (2, req["err"])):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(f, fd)
            os.close(f)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        import random

        random.seed()
        from cairn.state import crash

        crash.configure_from_environment()
        rc = _run(req["argv"])
    except BaseException:  # noqa: BLE001 - the child must end here, whatever happened
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc)


def _run(argv: list[str]) -> int:
    """What ``python ARGV`` would do, in this process; its exit status."""
    import runpy
    import traceback

    flag, target, rest = argv[0], argv[1], argv[2:]
    try:
        if flag == "-m":
            sys.argv = [target, *rest]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        elif flag == "-c":
            sys.argv = ["-c", *rest]
            exec(compile(target, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            raise ValueError(f"unsupported interpreter arguments {argv[:2]}")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:  # noqa: BLE001 - as the interpreter: the traceback on stderr, status 1
        traceback.print_exc()
        return 1
    return 0


def serve() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from cairn.protocol import knobs

    if knobs.readers():  # their knobs would be this process's, not each child's
        sys.exit(f"tests/support/zygote.py: the preload imported knob readers {sorted(knobs.readers())}")
    out = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req)
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        out.write(json.dumps({"rc": rc}) + "\n")
        out.flush()


if __name__ == "__main__":
    serve()
