"""``cairn trust`` / ``cairn untrust``: the user's list of trusted workspaces.

A trusted workspace's ``.cairn/config.toml`` may set the settings that send
data off the machine or run a program (provider, endpoint, API key variable,
command), and those only the user chooses (the model, memory roots outside
the workspace, ``mode = "auto"``); an untrusted one's are ignored, with one
``E_WORKSPACE_UNTRUSTED`` warning (:mod:`worker.settings.config`). The list is the user's, in
``$XDG_CONFIG_HOME/cairn/`` (:mod:`worker.settings.trust`). Depends only on
:mod:`server.cli.support`; the rows are in :mod:`server.cli.commands`.

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import os

from cairn.server.cli.support import EXIT_OK, emit_json, workspace_path


def _target(ns: argparse.Namespace) -> str:
    return os.path.abspath(ns.dir) if ns.dir else workspace_path(ns)


def trust_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", metavar="DIR", help="the workspace to trust (default: -w, else .)")
    p.add_argument("--list", action="store_true", help="list the trusted workspaces instead")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def untrust_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", metavar="DIR", help="the workspace to stop trusting (default: -w, else .)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _report(ns: argparse.Namespace, path: str, trusted: bool, changed: bool) -> int:
    if ns.json:
        emit_json({"workspace": path, "trusted": trusted, "changed": changed})
    else:
        state = "trusted" if trusted else "not trusted"
        print(f"{path}: {state}{'' if changed else ' (unchanged)'}")
    return EXIT_OK


def cmd_trust(ns: argparse.Namespace) -> int:
    from cairn.worker.settings import trust

    if ns.list:
        paths = trust.trusted_paths()
        if ns.json:
            emit_json(paths)
        else:
            print("\n".join(paths) if paths else "no trusted workspaces")
        return EXIT_OK
    path, changed = trust.trust(_target(ns))
    return _report(ns, path, True, changed)


def cmd_untrust(ns: argparse.Namespace) -> int:
    from cairn.worker.settings import trust

    path, changed = trust.untrust(_target(ns))
    return _report(ns, path, False, changed)
