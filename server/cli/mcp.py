"""``cairn mcp``: the Model Context Protocol endpoint on stdio (:mod:`server.mcp`), when its extra is installed."""

from __future__ import annotations

import argparse
import os

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli.support import EXIT_OK


def cmd_mcp(ns: argparse.Namespace) -> int:
    if not os.path.isdir(ns.workspace):
        raise CairnError(ErrorCode.WORKSPACE_INVALID, f"{str(ns.workspace)[:120]} is not a directory")
    try:
        import mcp  # noqa: F401  (the optional extra, looked for only by `cairn mcp`)
    except ImportError:
        # the SDK (and what it pulls: pydantic, starlette, uvicorn, a second HTTP stack) is the `mcp` extra
        raise CairnError(ErrorCode.EXTRA_MISSING, "`cairn mcp` needs the Model Context Protocol SDK: "
                                                  "pip install 'cairn-journal[mcp]'") from None
    from cairn.server.mcp.server import build, plain_logs  # the SDK, for `cairn mcp` only (see server.cli)

    plain_logs()
    build(ns).run("stdio")
    return EXIT_OK
