"""Secrets recognisable only by what introduces them: vendor-labelled values and random words after a secret label.

Contract: :func:`redact_labelled` replaces a *value word* found within
:data:`WINDOW` words after a *label word* by ``[REDACTED:<kind>]``, and
leaves everything else byte for byte. It is pure, idempotent (a marker is
one opaque word that is neither a label nor a value) and linear: the text
is split into words once, and each word is judged as a label once and as a
value once.

* A word is a run of ``[A-Za-z0-9+/_.~-]`` (base64, hex and url-safe
  alphabets) with its ``=`` padding; quotes, colons, brackets, commas and
  whitespace separate words, so ``password: "…"``, ``KEY=…`` and prose
  read alike.
* A label word is split into its parts (``AWS_SECRET_ACCESS_KEY``,
  ``apiKey``, ``db-password``). Vendor parts (``aws``, ``datadog``,
  ``heroku``, ``twilio``, ``jira``/``confluence``/``atlassian``,
  ``discord``, ``cloudflare``, ``mailgun``, ``sentry``) pick
  a vendor kind when the value has that vendor's exact shape (gitleaks'
  labelled rules: a Heroku key is a UUID after "heroku", an AWS secret key
  is 40 base64 characters after "aws … secret"). Secret parts (``secret``,
  ``key``, ``token``, ``password``, ``passwd``, ``pwd``, ``passphrase``,
  ``credential``, ``apikey``, ``auth``) make the fallback kind ``secret``.
* A value word for the fallback has at least :data:`MIN_LENGTH` characters,
  letters and digits mixed within one part (so ``snake_case_words_2024``
  and ``CamelCaseNames`` are identifiers, not secrets), is not a path
  (``/…``, ``./…``, ``a/b.py``, all-lowercase segments), not a dotted
  name (``os.environ.get``, ``api.example.com``), not mostly pronounceable
  words (``Base64HighEntropyString``), and its Shannon entropy
  per character reaches :data:`HEX_ENTROPY` for hex words or
  :data:`ENTROPY` for the others (thresholds measured on real text, see
  ``tests/security/test_false_positives.py``).
* The window stops at a blank line and at a word that says the value is
  something else (``commit``, ``sha``, ``hash``, ``uuid``,
  ``id``, ``path``, ``file``, ``version``, ``branch``, ``name``…), so
  "the key commit is 3f2a9c…" keeps its hash; it does not stop at a
  sentence end ("Here is the key. 8f…" is a secret; measured, stopping
  there avoided no false positive). A plain "is", ":" or "=" is never a
  label by itself: "the commit is 3f2a9c…" is not a secret.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

__all__ = [
    "ENTROPY", "HEX_ENTROPY", "MIN_LENGTH", "VENDOR_KINDS", "VENDOR_PARTS", "WINDOW", "entropy", "is_path", "looks_random",
    "redact_labelled",
]

WINDOW = 5  # words after a label where its value may stand
MIN_LENGTH = 20
ENTROPY = 3.5  # bits per character; see the module docstring
HEX_ENTROPY = 3.0

_WORD = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]|[A-Za-z0-9+/_.~\-]++=*+")
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_SECRET_PARTS = frozenset({
    "secret", "secrets", "key", "keys", "apikey", "token", "tokens", "password", "passwords", "passwd", "pwd",
    "passphrase", "credential", "credentials", "creds", "auth",
})
_STOP_PARTS = frozenset({
    "commit", "commits", "sha", "hash", "checksum", "digest", "uuid", "guid", "id", "ids", "path", "file",
    "filename", "dir", "directory", "version", "branch", "tag", "name", "column", "field", "type", "url",
    "issue", "ticket", "pr", "line",
})
_HEXWORD = re.compile(r"[0-9a-fA-F\-]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_MIXED_PART = re.compile(r"[A-Za-z][0-9]|[0-9][A-Za-z]")
_SEGMENT = re.compile(r"[a-z0-9_.\-]*")
_WORDY = re.compile(r"[A-Z]?[a-z]{2,}|[A-Z]{4,}(?![a-z])")  # the words of an identifier
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_CONSONANTS = re.compile(r"[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{4}")  # pronounceable words have no 4 in a row
WORDY = 0.6  # share of an identifier's characters that are words

# vendor part -> (kind, exact value shape)
_VENDORS: dict[str, tuple[str, re.Pattern[str]]] = {
    "datadog": ("datadog_key", re.compile(r"[a-f0-9]{32}|[a-z0-9]{40}")),
    "heroku": ("heroku_key", _UUID),
    "twilio": ("twilio_auth_token", re.compile(r"[a-f0-9]{32}")),
    "atlassian": ("atlassian_token", re.compile(r"[A-Za-z0-9]{24}")),
    "jira": ("atlassian_token", re.compile(r"[A-Za-z0-9]{24}")),
    "confluence": ("atlassian_token", re.compile(r"[A-Za-z0-9]{24}")),
    "discord": ("discord_token", re.compile(r"[a-f0-9]{64}|[A-Za-z0-9=_\-]{32}")),
    "cloudflare": ("cloudflare_key", re.compile(r"[A-Za-z0-9_\-]{40}|[a-f0-9]{37}")),
    "mailgun": ("mailgun_key", re.compile(r"[a-h0-9]{32}-[a-h0-9]{8}-[a-h0-9]{8}")),
    "sentry": ("sentry_token", re.compile(r"[a-f0-9]{64}")),
    "aws": ("aws_secret_access_key", re.compile(r"[A-Za-z0-9/+]{40}")),
}


def entropy(word: str) -> float:
    """Shannon entropy of ``word`` in bits per character."""
    n = len(word)
    return -sum(c / n * math.log2(c / n) for c in Counter(word).values()) if n else 0.0


def _parts(word: str) -> list[str]:
    return [p.lower() for p in _PARTS.findall(word)]


def is_path(word: str) -> bool:
    """``./a``, ``~/a``, ``a/b.py``, ``src/lower/case``, ``/usr/Lib``: a path, not base64 that happens to hold a slash."""
    if word.startswith(("./", "../", "~")):
        return True
    if "/" not in word:
        return False
    if re.search(r"\.[A-Za-z]{1,8}$", word) or all(_SEGMENT.fullmatch(s) for s in word.split("/")):
        return True
    return word.startswith("/") and sum(c.isupper() for c in word) <= 2


def looks_random(word: str) -> bool:
    """Whether a word standing after a secret label is a credential rather than a name, path or identifier."""
    if len(word) < MIN_LENGTH or is_path(word):
        return False
    if _DOTTED.fullmatch(word):
        return False  # os.environ.get, win32api.RegOpenKeyEx, api.example.com: names, not secrets
    if _UUID.fullmatch(word):
        return True  # a UUID right after a secret label is a key (Heroku, Sentry DSNs, …)
    if not any(_MIXED_PART.search(p) for p in re.split(r"[_.\-]", word)):
        return False  # snake_case_words_2024, CamelCaseNames, dashed-words: identifiers
    if sum(len(w) for w in _WORDY.findall(word) if _VOWEL.search(w) and not _CONSONANTS.search(w)) >= WORDY * len(word):
        return False  # Base64HighEntropyString, parseUtf8Header: mostly words, an identifier
    limit = HEX_ENTROPY if _HEXWORD.fullmatch(word) else ENTROPY
    return entropy(word) >= limit


def _label(word: str) -> tuple[bool, str | None, bool]:
    """(is a secret label, vendor part, is a stop word) of one word."""
    parts = _parts(word)
    vendor = next((p for p in parts if p in _VENDORS), None)
    secret = any(p in _SECRET_PARTS for p in parts) or "apikey" in word.lower()
    stop = bool(parts) and parts[-1] in _STOP_PARTS and not secret
    return secret, vendor, stop


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact_labelled(text: str, marker: Callable[[str], str] = _marker,
                    found: list[tuple[str, str]] | None = None) -> str:
    """Replace value words that follow a secret or vendor label; see the module docstring.

    ``found``, when given, receives each replaced value with its kind (for
    :class:`worker.redaction.redact.KnownSecrets`; kept in memory only).
    """
    replace: list[tuple[int, int, str]] = []
    armed = 0  # words left in the current label's window
    secret_label = False
    vendor: str | None = None
    prev_end = 0
    for m in _WORD.finditer(text):
        start, end, word = m.start(), m.end(), m.group(0)
        if armed and "\n\n" in text[prev_end:start]:
            armed = 0  # a paragraph break ends the window
        prev_end = end
        if word.startswith("[REDACTED:"):
            armed = max(0, armed - 1)
            continue
        value = word.rstrip(".")
        if armed:
            kind = None
            if vendor is not None and _VENDORS[vendor][1].fullmatch(value) and (vendor != "aws" or secret_label):
                kind = _VENDORS[vendor][0]  # "aws" alone does not introduce a secret key
            elif secret_label and looks_random(value):
                kind = "secret"
            armed -= 1
            if kind is not None:
                replace.append((start, start + len(value), kind))
                continue  # a value, read no further: the next pass sees it as a marker, which is no label or stop
        is_secret, is_vendor, stop = _label(value)
        if stop:
            armed = 0  # a word saying the value is something else
        elif is_secret or is_vendor:
            if not armed:
                secret_label, vendor = False, None
            secret_label = secret_label or is_secret
            vendor = is_vendor or vendor
            armed = WINDOW
    if not replace:
        return text
    out: list[str] = []
    pos = 0
    for start, end, kind in replace:
        if found is not None:
            found.append((text[start:end], kind))
        out.append(text[pos:start])
        out.append(marker(kind))
        pos = end
    out.append(text[pos:])
    return "".join(out)


VENDOR_KINDS = tuple(dict.fromkeys(kind for kind, _ in _VENDORS.values()))
VENDOR_PARTS = tuple(_VENDORS)  # the label parts that name a vendor
