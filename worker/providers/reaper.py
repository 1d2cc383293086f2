"""The ``command`` provider's supervisor: runs one program so that nothing it starts outlives it.

:mod:`worker.providers.command` starts it by path, isolated and in a new
session, with the program's stdin, stdout, stderr and working directory::

    python -I reaper.py STATUS_FD PARENT_PID PROGRAM [ARG...]

* It makes itself a **child subreaper** (Linux, ``prctl(PR_SET_CHILD_SUBREAPER)``):
  a process the program starts stays in the supervisor's tree even when it
  calls ``setsid`` or double-forks and its parent exits — it is reparented
  to the supervisor, not to init. A process group or a session is not
  enough: ``setsid`` leaves both.
* It starts the program (``posix_spawnp``: ``PATH`` lookup, no shell, the
  signal mask and the dispositions Python changed restored) with the three
  standard streams, then lets go of its own copies, so the reply ends when
  the program and whatever it started have closed them.
* It waits, with every signal it acts on blocked and taken by ``sigwait``
  (no handler can interrupt its cleanup), for the first of: the program
  exits (``SIGCHLD``); it is asked to stop (``SIGTERM``, ``SIGINT``,
  ``SIGHUP``); its parent has died (``PR_SET_PDEATHSIG`` delivers
  ``SIGUSR1``; the parent pid is compared, since Linux also sends it when
  the parent's *thread* that started the supervisor ends).
* Then it kills every descendant (``SIGKILL``, looked up again after each
  death, since a dying parent hands its children to the subreaper) and
  reaps every child until it has none — no process and no zombie is left —
  and writes one line to ``STATUS_FD``: ``exit N`` (N as
  :func:`os.waitstatus_to_exitcode` gives it, negative for a signal),
  ``nostart ERRNO`` (the program could not be started) or ``stopped``.

Without ``PR_SET_CHILD_SUBREAPER`` (not Linux) the descendants still in its
tree are killed, but one whose parent has exited belongs to init and is out
of reach; without ``PR_SET_PDEATHSIG`` a supervisor whose parent died waits
for the program to end by itself. Out of reach everywhere: a process the
program has another service start for it (``systemd-run``, a D-Bus
activation), which was never its descendant.

It imports nothing of cairn (it runs by path, isolated): the standard
library and psutil only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

import psutil  # before the program starts: a supervisor that cannot clean up runs nothing

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
ORPHANED = signal.SIGUSR1
WATCHED = {signal.SIGCHLD, ORPHANED, *STOP}
#: what Python sets to ignored at start-up (a program gets the defaults back, as from ``subprocess``)
RESTORED = {getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ") if hasattr(signal, name)}


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _let_go_of_streams() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _wait(child: int, parent: int) -> str:
    """Wait for the program's exit or a reason to stop; the status line."""
    while True:
        sig = signal.sigwait(WATCHED)
        if sig in STOP or (sig == ORPHANED and os.getppid() != parent):
            return "stopped"
        if sig != signal.SIGCHLD:
            continue  # the parent's starting thread ended, not the parent
        while True:  # SIGCHLD is one for any number of exits: reap what there is
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return "stopped"  # no child at all: cannot happen while the program runs
            if pid == 0:
                break
            if pid == child:
                return f"exit {os.waitstatus_to_exitcode(status)}"


def kill_descendants() -> None:
    """SIGKILL every descendant and reap every child until none is left."""
    me = psutil.Process()
    while True:
        try:
            everyone = me.children(recursive=True)
        except psutil.Error:
            everyone = []
        for p in everyone:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no child left, running or zombie
        if pid == 0:
            time.sleep(0.005)  # killed, not yet dead: look again (a dying parent may hand us its children)


def main(argv: list[str]) -> int:
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    status_fd, parent, program = int(argv[1]), int(argv[2]), argv[3:]
    os.set_inheritable(status_fd, False)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, ORPHANED)
    report = "stopped"
    try:
        if os.getppid() == parent and program:  # else the parent died before PDEATHSIG was armed
            try:
                child = os.posix_spawnp(program[0], program, os.environ, setsigmask=(), setsigdef=RESTORED)
            except OSError as exc:
                report = f"nostart {exc.errno or 0}"
            else:
                _let_go_of_streams()
                report = _wait(child, parent)
    finally:
        kill_descendants()
        try:
            os.write(status_fd, f"{report}\n".encode())
        except OSError:
            pass  # the parent is gone: nobody to tell
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
