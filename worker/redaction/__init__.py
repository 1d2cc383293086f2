"""Redaction: where a secret is removed before anything leaves private storage.

Public names (import them from here): :func:`redact_text`,
:func:`redact_bytes`, :func:`redact_obj`, :func:`redact_record`,
:func:`redact` (a job response), :class:`RedactingFilter` (logging) and
:func:`kinds`. The rules are :mod:`.secret_rules` (credentials recognised by
shape) and :mod:`.secret_labels` (values recognised by the label before
them); :mod:`.redact` applies them, including credentials cut over lines
(docs/adr/0014). Pure text in, text out: no I/O, no other worker domain.
"""

from cairn.worker.redaction.redact import (
    RedactingFilter,
    kinds,
    redact,
    redact_bytes,
    redact_obj,
    redact_record,
    redact_text,
)

__all__ = ["RedactingFilter", "kinds", "redact", "redact_bytes", "redact_obj", "redact_record", "redact_text"]
