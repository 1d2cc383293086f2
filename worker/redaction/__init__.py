"""Redaction: where a secret is removed before anything leaves private storage.

Public names (import them from here): :func:`redact_text` (also
:func:`redact_bytes`, :func:`redact_obj`, :func:`redact_record` and the
logging :class:`RedactingFilter`), :func:`kinds`; and the values followed
through a session: :class:`KnownSecrets`, :func:`redact_session`,
:func:`redact_collect`, :func:`known_secrets`, :func:`redact_known`. The
rules are :mod:`.secret_rules` (credentials recognised by shape) and
:mod:`.secret_labels` (values recognised by the label before them);
:mod:`.redact` applies them, including credentials cut over lines
(docs/adr/0014). Pure text in, text out: no I/O, no other worker domain.
"""

from cairn.worker.redaction.redact import (
    KnownSecrets,
    RedactingFilter,
    kinds,
    known_secrets,
    redact_bytes,
    redact_collect,
    redact_known,
    redact_obj,
    redact_record,
    redact_session,
    redact_text,
)

__all__ = ["KnownSecrets", "RedactingFilter", "kinds", "known_secrets", "redact_bytes", "redact_collect",
           "redact_known", "redact_obj", "redact_record", "redact_session", "redact_text"]
