"""Fixed error codes and the one exception type that carries them.

A code is part of the public contract: scripts, the editor and tests match on
it. Messages are for people and may change; codes may not. Messages never
contain evidence, memory bodies, prompts or secrets: only ids, paths, counts.
"""

from __future__ import annotations

import enum
import errno


class ErrorCode(enum.StrEnum):
    # records and schemas
    RECORD_EMPTY = "E_RECORD_EMPTY"
    RECORD_TRUNCATED = "E_RECORD_TRUNCATED"
    RECORD_MALFORMED = "E_RECORD_MALFORMED"
    RECORD_UNKNOWN_KIND = "E_RECORD_UNKNOWN_KIND"
    RECORD_UNKNOWN_VERSION = "E_RECORD_UNKNOWN_VERSION"
    RECORD_UNKNOWN_FIELD = "E_RECORD_UNKNOWN_FIELD"
    RECORD_INVALID_FIELD = "E_RECORD_INVALID_FIELD"
    RECORD_TOO_LARGE = "E_RECORD_TOO_LARGE"
    # pinned file system
    PATH_SYMLINK = "E_PATH_SYMLINK"
    PATH_NOT_DIRECTORY = "E_PATH_NOT_DIRECTORY"
    PATH_INVALID_NAME = "E_PATH_INVALID_NAME"
    PATH_OUTSIDE_ROOT = "E_PATH_OUTSIDE_ROOT"
    PATH_NOT_REGULAR = "E_PATH_NOT_REGULAR"  # a FIFO, device or directory where a regular file belongs
    IO_FAILED = "E_IO_FAILED"
    NO_SPACE = "E_NO_SPACE"  # ENOSPC or EDQUOT: the storage is full; nothing was half-written
    STATE_FOREIGN = "E_STATE_FOREIGN"  # a .cairn/state this user's cairn did not create (e.g. shipped in a clone)
    # bundles
    BUNDLE_HASH_MISMATCH = "E_BUNDLE_HASH_MISMATCH"
    BUNDLE_MISSING = "E_BUNDLE_MISSING"
    # claims
    CLAIM_BUSY = "E_CLAIM_BUSY"
    CLAIM_LOST = "E_CLAIM_LOST"
    CLAIM_EXPIRED = "E_CLAIM_EXPIRED"
    CLAIM_UNSETTLED = "E_CLAIM_UNSETTLED"
    CLAIM_CORRUPT = "E_CLAIM_CORRUPT"
    # configuration and CLI
    CONFIG_INVALID = "E_CONFIG_INVALID"
    EXTRA_MISSING = "E_EXTRA_MISSING"  # an optional part (an extra) is not installed
    WORKSPACE_UNTRUSTED = "E_WORKSPACE_UNTRUSTED"  # a workspace file set off-machine settings; ignored
    WORKSPACE_INVALID = "E_WORKSPACE_INVALID"
    NOT_FOUND = "E_NOT_FOUND"
    USAGE = "E_USAGE"
    METHOD_UNKNOWN = "E_METHOD_UNKNOWN"  # an LSP method or command the server does not have
    MESSAGE_MALFORMED = "E_MESSAGE_MALFORMED"  # an LSP message that cannot be read (framing, JSON)
    SHUT_DOWN = "E_SHUT_DOWN"  # an LSP request after shutdown (only exit is accepted then)
    # import
    IMPORT_UNKNOWN_FORMAT = "E_IMPORT_UNKNOWN_FORMAT"
    IMPORT_MALFORMED = "E_IMPORT_MALFORMED"
    IMPORT_UNREADABLE = "E_IMPORT_UNREADABLE"
    IMPORT_TOO_LARGE = "E_IMPORT_TOO_LARGE"
    IMPORT_LOCKED = "E_IMPORT_LOCKED"  # a tool's database locked even for an immutable read
    IMPORT_WRONG_FORMAT = "E_IMPORT_WRONG_FORMAT"  # `--format X` on a file that is not X: nothing in it read as X
    IMPORT_PROMPTS_ONLY = "E_IMPORT_PROMPTS_ONLY"  # a log of the prompts typed, with no replies (Gemini CLI logs.json)
    # capture and digest pipeline
    CAPTURE_OVERSIZED = "E_CAPTURE_OVERSIZED"
    CAPTURE_EXHAUSTED = "E_CAPTURE_EXHAUSTED"
    CAPTURE_STATE = "E_CAPTURE_STATE"
    PAYLOAD_TOO_LARGE = "E_PAYLOAD_TOO_LARGE"
    PROVIDER_FAILED = "E_PROVIDER_FAILED"
    PROVIDER_TIMEOUT = "E_PROVIDER_TIMEOUT"
    PROVIDER_INVALID_REPLY = "E_PROVIDER_INVALID_REPLY"
    PROVIDER_TRUNCATED = "E_PROVIDER_TRUNCATED"
    PROVIDER_UNAVAILABLE = "E_PROVIDER_UNAVAILABLE"  # `cairn setup --use NAME`: no such provider here, or not usable
    CANCELLED = "E_CANCELLED"
    # memory and proposals
    PROPOSAL_STALE = "E_PROPOSAL_STALE"
    PROPOSAL_STATE = "E_PROPOSAL_STATE"
    TARGET_OUTSIDE_ROOTS = "E_TARGET_OUTSIDE_ROOTS"
    TARGET_CHANGED = "E_TARGET_CHANGED"
    INDEX_ENTRY_CHANGED = "E_INDEX_ENTRY_CHANGED"  # an affected MEMORY.md entry differs from its before-state
    INDEX_ENTRY_INVALID = "E_INDEX_ENTRY_INVALID"  # an index edit that is not one well-formed entry line
    INDEX_FULL = "E_INDEX_FULL"  # the index would cross its budget (indexMaxLines / indexMaxBytes: what agents load)
    TOPIC_FRONT_MATTER = "E_TOPIC_FRONT_MATTER"  # missing or invalid YAML front matter of a topic
    TOPIC_STALE = "E_TOPIC_STALE"  # confirming a topic the last verification marked stale (what it cites changed)
    MEMORY_NOT_TEXT = "E_MEMORY_NOT_TEXT"  # a memory or instruction file that is not UTF-8 text
    AGENT_NOT_IN_USE = "E_AGENT_NOT_IN_USE"  # `cairn agents wire AGENT`: no session of it here, none of its files
    HOOK_PAYLOAD_INVALID = "E_HOOK_PAYLOAD_INVALID"  # `cairn hook AGENT`: stdin is not that agent's hook payload
    HOOK_TRANSCRIPT_OUTSIDE = "E_HOOK_TRANSCRIPT_OUTSIDE"  # `cairn hook`: transcript outside the agent's store and the workspace
    HOOK_NOTIFY_TAKEN = "E_HOOK_NOTIFY_TAKEN"  # `cairn agents hooks codex`: Codex's `notify` runs another program
    # workers
    WORKER_CRASHED = "E_WORKER_CRASHED"
    WORKER_TIMEOUT = "E_WORKER_TIMEOUT"
    WORKER_BAD_RESPONSE = "E_WORKER_BAD_RESPONSE"
    WORKER_UNKNOWN_JOB = "E_WORKER_UNKNOWN_JOB"
    INTERNAL = "E_INTERNAL"
    # maintenance jobs (coordinator)
    JOB_INVALID = "E_JOB_INVALID"
    JOB_STATE = "E_JOB_STATE"


class CairnError(Exception):
    """An expected failure with a fixed code and a message fit for a person.

    ``detail`` holds only identifiers and counts (line numbers, paths, ids),
    never content, so it is safe to log and to publish.
    """

    def __init__(self, code: ErrorCode, message: str, **detail: object) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.detail = detail

    def to_json(self) -> dict[str, object]:
        return {"code": str(self.code), "message": self.message, **{k: v for k, v in self.detail.items()}}


def os_error(exc: OSError) -> CairnError:
    """An ``OSError`` as a fixed error: ``E_NO_SPACE`` for a full disk or quota, else ``E_IO_FAILED``."""
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    code = ErrorCode.NO_SPACE if full else ErrorCode.IO_FAILED
    where = f" ({exc.filename})" if exc.filename else ""
    return CairnError(code, f"{exc.strerror or type(exc).__name__}{where}")
