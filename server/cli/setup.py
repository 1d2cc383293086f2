"""``cairn setup``: find the digest providers already on this machine and, with consent, use one.

Contract (handlers take the parsed namespace and return an exit code,
:mod:`server.cli.support`):

* ``cairn setup --detect [--json]`` lists what :func:`worker.settings.detect.detect`
  finds (assistant CLIs on ``PATH``, OpenAI-compatible servers on loopback
  ports) with one sentence each on where session text would go, and changes
  nothing. ``--json``: an array of ``{name, kind, where, detail, available}``.
* ``cairn setup --use NAME [--model MODEL]`` writes exactly the settings
  that make NAME the digest provider into the user's own ``config.toml``
  (:func:`worker.settings.userconfig.set_keys`: those keys only, atomically),
  then says where session text goes from now on, and warns when this
  workspace's trusted ``.cairn/config.toml`` still wins over the user's
  file here. NAME not found, or found but not usable, is
  ``E_PROVIDER_UNAVAILABLE`` (exit 2), and nothing is written.
* ``cairn setup`` alone lists the same and, when stdin and stdout are a
  terminal, asks which one to use and then for a yes before writing. Without
  a terminal it writes nothing and says how to choose.

Only the user's own file is ever written: a workspace file may not choose
where data goes unless trusted (:mod:`worker.settings.config`), and the
choice made here is the user's explicit consent. Captures already made keep
the provider frozen in them (the embedded engine, for those made before).

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli.support import EXIT_OK, emit_json, load_config, printable, workspace_path

if TYPE_CHECKING:
    from cairn.worker.settings.detect import Candidate, Detection


def setup_setup(p: argparse.ArgumentParser) -> None:
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--detect",
        action="store_true",
        help="list the digest providers found on this machine; changes nothing",
    )
    mode.add_argument(
        "--use",
        metavar="NAME",
        help="make NAME (as listed by --detect) the digest provider in your own config.toml",
    )
    p.add_argument(
        "--model",
        metavar="MODEL",
        help="with --use: the model to digest with (one the server or ollama "
        "lists, or any llm model) instead of the first one listed",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _row(c: Candidate, number: str = "") -> str:
    state = "" if c.available else "not usable: "
    return f"  {number}{printable(c.name):<16} {c.kind:<8} {c.where:<7} {state}{printable(c.detail)}"


def _missing(d: Detection) -> str:
    parts = []
    if d.missing_programs:
        parts.append(f"not on PATH: {', '.join(d.missing_programs)}")
    if d.other_ports:
        parts.append(
            f"no model list on port{'s' if len(d.other_ports) > 1 else ''} "
            + ", ".join(map(str, d.other_ports))
        )
    if d.quiet_ports:
        parts.append(
            f"nothing listens on loopback port{'s' if len(d.quiet_ports) > 1 else ''} "
            + ", ".join(map(str, d.quiet_ports))
        )
    return "; ".join(parts)


def _current(ns: argparse.Namespace) -> str:
    from cairn.worker.settings import config  # cold start: module docstring

    s = config.from_request(load_config(workspace_path(ns)))
    if s.provider == "command":
        return f"command {json.dumps(list(s.command), ensure_ascii=False)}"
    if s.provider == "openai":
        return f"openai {s.endpoint} model {s.model}"
    return "extractive (the embedded engine, offline)"


def _listing(ns: argparse.Namespace, d: Detection, numbered: bool = False) -> list[Candidate]:
    usable = [c for c in d.candidates if c.available]
    if not d.candidates:
        print("no digest provider found on this machine")
    else:
        print("digest providers found on this machine:")
    n = 0
    for c in d.candidates:
        if numbered and c.available:
            n += 1
            print(_row(c, f"{n:>2}  "))
        else:
            print(_row(c, "    " if numbered else ""))
    if missing := _missing(d):
        print(f"({missing})")
    print(f"in effect: {printable(_current(ns))}")
    return usable


def _use(ns: argparse.Namespace, d: Detection, chosen: Candidate) -> int:
    from cairn.worker.settings import config, userconfig  # cold start: module docstring

    updates = dict(chosen.settings)
    path, changed = userconfig.set_keys(updates)
    settings, _ = config.load(workspace_path(ns))
    wrote = userconfig.lines_for(updates)
    wins = (
        settings.provider != updates["provider"]
        or settings.model != updates.get("model", settings.model)
        or tuple(settings.command) != tuple(updates.get("command", settings.command))
        or settings.endpoint != updates.get("endpoint", settings.endpoint)
    )
    if ns.json:
        emit_json(
            {
                "name": chosen.name,
                "kind": chosen.kind,
                "where": chosen.where,
                "detail": chosen.detail,
                "path": path,
                "changed": changed,
                "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in updates.items()},
                "in_effect_here": not wins,
            }
        )
    else:
        print(
            f"{printable(chosen.name)} is your digest provider: {printable(path)} "
            + ("now says" if changed else "already said")
        )
        for line in wrote:
            print(f"  {printable(line)}")
        print(printable(chosen.detail))
        print(
            "captures made from now on are digested by it; those made before keep the provider they were captured with"
        )
    if chosen.kind == "openai" and settings.apiKeyEnv and os.environ.get(settings.apiKeyEnv):
        sys.stderr.write(
            f"cairn: note: {settings.apiKeyEnv} is set, so its key goes with every request to this "
            "server too (api_key_env names the variable; an unset one sends no key)\n"
        )
    if wins:
        sys.stderr.write(
            "cairn: warning: in this workspace another provider is in effect: its .cairn/config.toml "
            "(trusted) sets the provider settings, and wins over your own file here\n"
        )
    return EXIT_OK


def _find(d: Detection, name: str) -> Candidate:
    for c in d.candidates:
        if c.name == name:
            if not c.available:
                raise CairnError(
                    ErrorCode.PROVIDER_UNAVAILABLE, f"{name} was found but cannot digest: {c.detail}"
                )
            return c
    found = ", ".join(c.name for c in d.candidates if c.available) or "none"
    raise CairnError(
        ErrorCode.PROVIDER_UNAVAILABLE,
        f"no digest provider named {name!r} was found on this machine "
        f"(usable: {found}; see `cairn setup --detect`)",
    )


def _ask(prompt: str) -> str:
    try:
        return input(prompt).strip()
    except EOFError:
        return ""


def _interactive(ns: argparse.Namespace, d: Detection) -> int:
    from cairn.worker.settings import trust  # cold start: module docstring

    usable = _listing(ns, d, numbered=True)
    if not usable:
        print("nothing to set up: the embedded engine keeps digesting")
        return EXIT_OK
    pick = _ask(f"Digest with which one? [1-{len(usable)}, Enter: keep what is in effect] ")
    if not pick.isdigit() or not 1 <= int(pick) <= len(usable):
        print("nothing written")
        return EXIT_OK
    chosen = usable[int(pick) - 1]
    path = f"{trust.config_dir()}/{trust.USER_CONFIG}"
    yes = _ask(f"{printable(chosen.detail)}\nWrite {printable(chosen.name)} into {printable(path)}? [y/N] ")
    if yes.lower() not in ("y", "yes"):
        print("nothing written")
        return EXIT_OK
    return _use(ns, d, chosen)


def cmd_setup(ns: argparse.Namespace) -> int:
    from cairn.worker.settings import detect  # cold start: module docstring

    if ns.model is not None and ns.use is None:
        raise CairnError(ErrorCode.USAGE, "--model goes with --use NAME")
    d = detect.detect()
    if ns.use is not None:
        chosen = _find(d, ns.use)
        if ns.model is not None:
            try:
                chosen = detect.with_model(d, chosen, ns.model)
            except detect.ProbeError as exc:
                raise CairnError(ErrorCode.PROVIDER_UNAVAILABLE, str(exc)) from None
        return _use(ns, d, chosen)
    if ns.json:
        rows: list[dict[str, Any]] = [c.to_json() for c in d.candidates]
        emit_json(rows)
        return EXIT_OK
    if ns.detect or not (sys.stdin.isatty() and sys.stdout.isatty()):
        _listing(ns, d)
        if not ns.detect:
            print("nothing written (stdin is not a terminal): `cairn setup --use NAME` chooses one")
        return EXIT_OK
    return _interactive(ns, d)
