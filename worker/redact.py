"""Replace secrets in free text with ``[REDACTED:<kind>]`` before anything leaves private storage.

Contract: :func:`redact` is pure, idempotent (its markers never match again)
and runs in time linear in the length of the text, whatever the text is.
It errs towards redacting: a private key block without its END line is
redacted to the end of the text.

Kinds: ``private_key``, ``anthropic_key``, ``openai_key``, ``github_token``,
``aws_access_key_id``, ``aws_secret_access_key``, ``slack_token``,
``google_api_key``, ``jwt``, ``bearer_token``, ``basic_auth``,
``password`` (in ``scheme://user:password@host`` and ``password=…``), and
for other ``name=value`` assignments ``api_key``, ``secret`` or ``token``
after the name. Names, users, hosts and schemes around a secret are kept
so the text still reads.

Why it is linear: Python's ``re`` backtracks, so every pattern is built so
that one attempt is cheap and attempts cannot pile up. A token pattern
starts with a literal (which the engine skips to quickly), checks with a
fixed-width look-behind that the literal starts a run, and consumes the run
possessively (``{n,}+``, Python 3.11+), so no run is rescanned by failing
attempts; every other repetition is bounded. Private key blocks are found
with ``str.find`` instead of a lazy ``.*?`` (quadratic on many BEGIN lines
without an END).
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["redact"]

_T = r"A-Za-z0-9_\-"  # character class of API-key style tokens


def _literal_first(lit: str, body: str, before: str = _T) -> re.Pattern[str]:
    """``lit`` not preceded by a ``before`` character, then ``body``.

    The literal comes first so the regex engine can skip ahead to it; the
    look-behind placed after it (fixed width) checks the character before.
    """
    return re.compile(f"{re.escape(lit)}(?<![{before}]{re.escape(lit)}){body}")


_BEGIN_PRIVATE = re.compile(r"-----BEGIN ([A-Z0-9]{1,20} ){0,3}PRIVATE KEY( BLOCK)?-----")
_END_MARK = "-----END "
_DASHES = "-----"

# (kind, pattern, whether the value must mix letters and digits)
_TOKENS: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    ("anthropic_key", _literal_first("sk-ant-", rf"[{_T}]{{20,}}+"), True),
    ("openai_key", _literal_first("sk-", rf"(?:proj-|svcacct-|admin-)?[{_T}]{{20,}}+"), True),
    ("github_token", _literal_first("gh", r"[pousr]_[A-Za-z0-9]{30,}+"), False),
    ("github_token", _literal_first("github_pat_", r"[A-Za-z0-9_]{22,}+"), False),
    ("aws_access_key_id", _literal_first("AKIA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", "A-Za-z0-9"), False),
    ("aws_access_key_id", _literal_first("ASIA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", "A-Za-z0-9"), False),
    ("slack_token", _literal_first("xox", r"[baprs]-[A-Za-z0-9\-]{10,}+"), False),
    ("google_api_key", _literal_first("AIza", rf"[{_T}]{{30,}}+"), True),
    ("jwt", _literal_first("eyJ", rf"[{_T}]{{8,}}+\.eyJ[{_T}]{{8,}}+\.[{_T}]*+", _T + "."), False),
)

# Patterns that keep their first group (a label, user or header) and replace the rest.
_KEEPERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "aws_secret_access_key",
        re.compile(
            r"(aws_?secret_?access_?key[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?)[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
            re.I,
        ),
    ),
    (
        "bearer_token",
        re.compile(r"(bearer(?<![A-Za-z0-9_]bearer)[ \t]{1,8})([A-Za-z0-9._~+/=\-]{16,}+)", re.I),
    ),
    (
        "basic_auth",
        re.compile(
            r"(authorization[ \t]{0,8}:[ \t]{0,8}(?:basic|token)[ \t]{1,8})[A-Za-z0-9._~+/=\-]{8,}+", re.I
        ),
    ),
    # scheme://user:password@host -> the scheme, user and host stay.
    ("password", re.compile(r"(://[^\s:/@]{0,256}+:)[^\s/@]{1,256}+(?=@)")),
)

_ASSIGNMENT = re.compile(
    r"(?=[aceprstACEPRST])"
    r"(?P<name>pass(?:word|wd|phrase)|pwd|api[_\-]?key|apikey|access[_\-]?token|auth[_\-]?token"
    r"|refresh[_\-]?token|client[_\-]?secret|secret(?:[_\-]?key)?|private[_\-]?key|token)"
    r"(?P<sep>[\"']?[ \t]{0,8}[:=][ \t]{0,8})"
    r"(?:(?P<q>[\"'])(?P<qv>[^\"'\r\n]{1,512}+)(?=[\"'])|(?P<v>[^\s\"'`,;&]{1,512}+))",
    re.I,
)

_PLACEHOLDER = re.compile(
    r"^(?:[$%<{(\[]|os\.|process\.env|env\.|getenv|\*+$|x+$|\.\.\.|none$|null$|true$|false$)", re.I
)
_PASSWORD_NAMES = ("pass", "pwd")


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _looks_random(s: str) -> bool:
    """A real key mixes letters and digits; hyphenated words (``sk-learn-…``) do not."""
    return _has_digit(s) and any(c.isalpha() for c in s)


def _assignment(m: re.Match[str]) -> str:
    name = m.group("name")
    value = m.group("qv") if m.group("q") else m.group("v")
    lowered = name.lower()
    if lowered.startswith(_PASSWORD_NAMES):
        kind, minimum = "password", 6
    elif "secret" in lowered or "private" in lowered:
        kind, minimum = "secret", 8
    elif "key" in lowered:
        kind, minimum = "api_key", 8
    else:
        kind, minimum = "token", 8
    if len(value) < minimum or _PLACEHOLDER.match(value):
        return m.group(0)
    if kind != "password" and not (_has_digit(value) or len(value) >= 24):
        return m.group(0)  # prose like "token: required", not a credential
    return f"{name}{m.group('sep')}{m.group('q') or ''}{_marker(kind)}"


def _redact_private_keys(text: str) -> str:
    if "PRIVATE KEY" not in text:
        return text
    out: list[str] = []
    pos = 0
    while True:
        m = _BEGIN_PRIVATE.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        out.append(text[pos : m.start()])
        out.append(_marker("private_key"))
        end = text.find(_END_MARK, m.end())
        if end < 0:
            break  # unterminated block: everything after BEGIN is key material
        close = text.find(_DASHES, end + len(_END_MARK))
        if close < 0:
            break
        pos = close + len(_DASHES)
    return "".join(out)


def _keep_first(marker: str) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        if marker == "[REDACTED:bearer_token]" and m.group(2).isalpha():
            return m.group(0)  # "Bearer authentication…": a word, not a token
        return m.group(1) + marker

    return replace


def _if_random(marker: str) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        return marker if _looks_random(m.group(0)[4:]) else m.group(0)

    return replace


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    text = _redact_private_keys(text)
    for kind, rx, mixed in _TOKENS:
        text = rx.sub(_if_random(_marker(kind)) if mixed else _marker(kind), text)
    for kind, rx in _KEEPERS:
        text = rx.sub(_keep_first(_marker(kind)), text)
    return _ASSIGNMENT.sub(_assignment, text)
