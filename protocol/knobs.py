"""Tuning knobs read from the environment (``CAIRN_IMPORT_WORKERS`` and the like).

Contract: :func:`env_int` returns the variable's whole-number value, raised
to ``minimum`` when below it, or ``default`` when the variable is unset or
empty. A value that is not a whole number is a user's typo, not a crash: the
default is used and one ``E_CONFIG_INVALID`` line goes to stderr, naming the
variable and the default but not the value (the value is the user's text).

:func:`env_ints` is the same for a comma-separated list of whole numbers
(``CAIRN_SETUP_PORTS=11434,8080``), each within ``minimum``..``maximum``:
one value that is not is the whole default, with the same one line.

Why here: these knobs are read when their module is imported, so a bad value
used to fail every command with ``E_INTERNAL`` before any code could report it.
"""

from __future__ import annotations

import os
import sys

from cairn.protocol.errors import ErrorCode

_warned: set[str] = set()
_readers: set[str] = set()


def readers() -> frozenset[str]:
    """The modules that have read a knob (a process forked from this one keeps their values)."""
    return frozenset(_readers)


def env_int(name: str, default: int, *, minimum: int = 1) -> int:
    _readers.add(sys._getframe(1).f_globals.get("__name__", "?"))
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return max(minimum, int(raw))
    except ValueError:
        if name not in _warned:
            _warned.add(name)
            print(f"cairn: {ErrorCode.CONFIG_INVALID}: {name} is not a whole number; the default {default} is used",
                  file=sys.stderr)
        return default


def env_ints(name: str, default: tuple[int, ...], *, minimum: int = 1, maximum: int = 65535) -> tuple[int, ...]:
    _readers.add(sys._getframe(1).f_globals.get("__name__", "?"))
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        values = tuple(int(part) for part in raw.split(","))
        if all(minimum <= v <= maximum for v in values):
            return tuple(dict.fromkeys(values))
    except ValueError:
        pass
    if name not in _warned:
        _warned.add(name)
        print(f"cairn: {ErrorCode.CONFIG_INVALID}: {name} is not a list of whole numbers from {minimum} to {maximum}; "
              f"the default {','.join(map(str, default))} is used", file=sys.stderr)
    return default
