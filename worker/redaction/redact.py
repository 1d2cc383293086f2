"""The one redaction gate: every text leaving private storage goes through here.

Public writes (journal digest entries, review and decision records,
proposal titles, summaries and after-states, memory files written on
accept), log and stderr lines, error messages and every provider request
body call :func:`redact_text` (alias :func:`redact`), :func:`redact_bytes`,
:func:`redact_obj` (nested JSON values) or :func:`redact_record` (attrs
records); a new path uses one of them instead of its own patterns.

Contract: redaction is pure, idempotent (its markers ``[REDACTED:<kind>]``
never match again) and runs in time linear in the length of the text,
whatever the text is. It errs towards redacting: a private key block
without its END line is redacted to the end of the text.

Kinds: the credential shapes of :mod:`worker.redaction.secret_rules` (the table, with
its kinds, follows gitleaks' and detect-secrets' public rule sets), then
here ``aws_secret_access_key`` (``aws_secret_access_key = …``),
``bearer_token``, ``basic_auth``, ``password`` (in
``scheme://user:password@host``, also percent-encoded, and ``password=…``) and for other
``name=value`` assignments ``api_key``, ``secret`` or ``token``; last the
vendor-labelled values and the high-entropy fallback of
:mod:`worker.redaction.secret_labels` (``[REDACTED:secret]`` for a random-looking
word just after "secret", "key", "token", "password", …). Names, users,
hosts and schemes around a secret are kept so the text still reads.

Values followed through a session: a value known only by its label
(``AWS_SECRET_ACCESS_KEY=…``, ``Authorization: Basic …``, "the signing
secret is …") is redacted where the label stands, and nowhere else by the
rules; a turn that repeats it bare ("Done: I exported … for this shell")
would send it in clear. So text made from one session's evidence (every
provider request of a digest, the notes of every digest engine) is
redacted with :func:`redact_session` (each text once, collecting the
values replaced: :func:`redact_collect`; then every value hidden in every
text) or with the values of :func:`known_secrets` (:func:`redact_known`).
A value is followed when it has :data:`FOLLOW_MIN` characters or more,
a letter and a digit, and is not a path: ``password=changeme`` is redacted
where it is assigned, but "changeme" elsewhere stays a word. Values live in
a :class:`KnownSecrets` in memory only, never logged, stored or shown.

Why it is linear: Python's ``re`` backtracks, so every pattern is built so
that one attempt is cheap and attempts cannot pile up. A token pattern
starts with a literal (which the engine skips to quickly), checks with a
fixed-width look-behind that the literal starts a run, and consumes the run
possessively (``{n,}+``, Python 3.11+), so no run is rescanned by failing
attempts; every other repetition is bounded. Private key blocks are found
with ``str.find`` instead of a lazy ``.*?`` (quadratic on many BEGIN lines
without an END). The labelled pass splits the text into words once.
"""

from __future__ import annotations

import bisect
import enum
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

import attrs
from cairn.worker.redaction.secret_labels import VENDOR_KINDS, VENDOR_PARTS, is_path, redact_labelled
from cairn.worker.redaction.secret_rules import RULES, Rule

__all__ = [
    "FOLLOW_MIN", "KnownSecrets", "RedactingFilter", "kinds", "known_secrets", "redact", "redact_added", "redact_bytes", "redact_collect",
    "redact_known", "redact_obj", "redact_record", "redact_session", "redact_text",
]

R = TypeVar("R")
_Found = list[tuple[str, str]] | None  # (value, kind) of each secret a redaction replaced, when collected

_BEGIN_PRIVATE = re.compile(r"-----BEGIN ([A-Z0-9]{1,20} ){0,3}PRIVATE KEY( BLOCK)?-----")
_END_MARK = "-----END "
_DASHES = "-----"

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
    # scheme://user:password@host -> the scheme, user and host stay (a user already redacted is no user:
    # "://[REDACTED:github_token]@" would read as user "[REDACTED" with password "github_token]")
    ("password", re.compile(r"(://(?!\[REDACTED:)[^\s:/@]{0,256}+:)[^\s/@]{1,256}+(?=@)")),
    # the same URL percent-encoded as a query value (next=postgres%3A%2F%2Fuser%3Apassword%40host)
    ("password", re.compile(r"(%3A%2F%2F(?:[^\s:/@%]|%(?!3A)[0-9A-F]{2}){0,256}+%3A)"
                            r"(?:[^\s/@%]|%(?!40)[0-9A-F]{2}){1,256}+(?=%40)", re.I)),
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
_CODE = re.compile(r"[()\[\]{}]")
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


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
    if not m.group("q") and (_CODE.search(value) or _DOTTED_NAME.fullmatch(value)):
        return m.group(0)  # code: ``getpass.getpass(...)``, ``self._password``
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


def _rule_sub(rule: Rule) -> Callable[[re.Match[str]], str]:
    marker = _marker(rule.kind)

    def replace(m: re.Match[str]) -> str:
        if rule.mixed and not _looks_random(m.group(0)[4:]):
            return m.group(0)
        return (m.group(rule.keep) if rule.keep else "") + marker

    return replace


_SUBS = tuple((rule.pattern, _rule_sub(rule)) for rule in RULES)


# A run of token or URL characters that ends its line, whole lines of such characters, and the run that starts
# the line after them: one word cut by a terminal's width. Matched possessively, so no run is rescanned.
_RUN = r"[A-Za-z0-9_\-+/=.:;~%?&#@]"
# a line that starts something of its own starts anew:
_NEXT = (
    r"\r?\n[ \t]{0,8}(?!"
    r"[-+]?(?:(?:export|set|local|readonly)[ \t]{1,8})?"  # NAME=value, also a diff's -NAME=/+NAME=, a shell's
    r"[A-Za-z_][A-Za-z0-9_]*=(?!=|\s|$)"  # export NAME=value (not base64 padding)
    r"|(?:#{1,6}|//)(?:\s|$)"  # a comment or a heading
    r"|\d{4}-\d\d-\d\d"  # a log time stamp
    r"|[A-Za-z0-9_.\-/]*:(?:\s|$)"  # a key or a label: "remote:", "volumes:", "L334:", "6767:"
    r"|[-+*>](?:\s|$)|\d{1,6}(?:[.)]\s|\t)|HTTP/\d"  # a list item, a diff or quote line, a numbered line, a status
    r")"
)
_SPLIT_WORD = re.compile(rf"(?<!{_RUN}){_RUN}++(?:{_NEXT}{_RUN}++(?=\r?\n))*{_NEXT}{_RUN}++")
_BREAK = re.compile(r"\r?\n[ \t]{0,8}")
_CONTEXT = 120  # characters before a split word (lines joined by spaces), read with it for a labelled secret


def _columns(text: str) -> int:
    """Terminal columns of ``text``: East Asian wide and full-width characters take two."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


_JOIN_MAX = 8192  # characters of a split word read joined at each end; longer than any credential seen


def _joined(m: re.Match[str], found: _Found = None) -> str:
    """A split word, its secrets cut over lines redacted (:func:`_join`).

    A word longer than ``2 * _JOIN_MAX`` is data (an encoded file, a list of
    paths, a wrapped blob): only its first and last ``_JOIN_MAX`` characters,
    cut at line breaks, are read joined, where a labelled value or a URL's
    secret would start or end; its middle is read line by line, as before.
    Reading it all joined would cost ten line-by-line passes for nothing.
    """
    raw = m.group(0)
    before = m.string[max(0, m.start() - _CONTEXT) : m.start()]
    prefix = _columns(m.string[m.string.rfind("\n", 0, m.start()) + 1 : m.start()])  # the first line's before it
    if len(raw) <= 2 * _JOIN_MAX:
        return _join(raw, before, prefix, found)
    cuts = list(_BREAK.finditer(raw))
    head_end = max((c.start() for c in cuts if c.start() <= _JOIN_MAX), default=cuts[0].start())
    tail_start = min((c.end() for c in cuts if c.end() >= len(raw) - _JOIN_MAX), default=cuts[-1].end())
    if tail_start <= head_end:
        return _join(raw, before, prefix, found)
    tail_before = raw[max(0, tail_start - _CONTEXT) : tail_start]
    tail_prefix = tail_start - (raw.rfind("\n", 0, tail_start) + 1)
    return (_join(raw[:head_end], before, prefix, found) + raw[head_end:tail_start]
            + _join(raw[tail_start:], tail_before, tail_prefix, found))


def _join(raw: str, lines: str, prefix: int = 0, found: _Found = None) -> str:
    """The word with each secret that crosses one of its line breaks redacted; else the text as it was.

    ``lines`` is the text before the word (its label context) and ``prefix``
    how many characters of the word's first line stand before it. A terminal
    cuts every line of a token at one width, so where a line's length differs
    from the line before's by more than two characters (the first break of a
    part excepted: it may be a wrap after a label, "password:" / the value;
    a line ending in a hyphen excepted: wrapped text breaks there) the word
    is read as two, after a shorter line (a token's last piece) or before a
    longer one; each part is read by :func:`_join_part`.
    """
    if len(raw) < 16 or len(_BREAK.sub("", raw)) < 16:
        return raw
    widths = _widths(raw, prefix)  # each line's length is the same whichever part it starts
    out: list[str] = []
    pos, first, prev = 0, 0, -1  # the part's start in raw, its first break, the last hard line's length in it
    for i, (at_i, width, soft) in enumerate(widths):
        if i == first or soft:
            continue
        if prev < 0 or abs(width - prev) <= 2:
            prev = width
            continue
        # a shorter line may be a token's last piece: split after it; a longer one starts something else
        at = at_i if width < prev else widths[i - 1][0]
        brk = _BREAK.match(raw, at)
        assert brk is not None
        out.append(_join_part(raw[pos:at], lines, prefix, found))
        out.append(raw[at : brk.end()])
        lines = (lines + out[-2] + out[-1])[-_CONTEXT:]  # as it will stand: its secrets redacted
        prefix = brk.end() - raw.rfind("\n", 0, brk.end()) - 1
        pos, first, prev = brk.end(), i + 1 if at == at_i else i, -1
    out.append(_join_part(raw[pos:], lines, prefix, found))
    return "".join(out)


def _join_part(raw: str, lines: str, prefix: int, found: _Found = None) -> str:
    """One part of a split word, its secrets that cross a break redacted.

    A break is a cut inside the word (a terminal's width) or, at either end,
    possibly a space (text wrapped at words: "use\\nTOKEN", "TOKEN\\nfor"):
    the word is read whole first, then without a first or last piece, which
    then counts as a word of its own. Only the changed stretch loses its line
    breaks, and only when :func:`_needed` says so: lines that are separate
    things keep their layout. The rest of the word after a redacted stretch
    is read again, for a second secret.
    """
    out: list[str] = []
    while True:
        change = _first_secret(raw, lines, prefix)
        if change is None:
            out.append(raw)
            return "".join(out)
        head, stop, replacement = change
        if found is not None:
            _record(found, raw[head:stop], replacement)
        out.append(raw[:head] + replacement)
        rest = raw[stop:]
        if "\n" not in rest or len(_BREAK.sub("", rest)) < 16:
            out.append(rest)
            return "".join(out)
        so_far = lines + raw[:head] + replacement
        prefix = prefix + head + len(replacement) if "\n" not in raw[:head] else len(so_far) - so_far.rfind("\n") - 1
        lines, raw = so_far[-_CONTEXT:], rest


def _first_secret(raw: str, lines: str, prefix: int) -> tuple[int, int, str] | None:
    """The first stretch of ``raw`` to redact as a secret crossing a break (start, end, replacement), or None."""
    cuts = [(c.start(), c.end()) for c in _BREAK.finditer(raw)]
    if not cuts:
        return None
    # a label can only be there if one of its words is, read across the breaks (most split words are paths)
    labelled = _LABEL_CUE.search(_WRAP.sub("", lines + raw)) is not None
    if not labelled and _SHAPE_CUE.search(raw) is None:
        return None  # words of prose wrapped at a width: no secret known by its shape alone is that plain
    # the lines before the word, read as one line, give the labels of a value ("the secret key is …"); their
    # breaks were spaces (wrapped at words) or nothing (cut at a width: "the secret ke\\ny is …"); a secret in
    # them is redacted first, as the line-by-line pass will, so the word is read after it as it will stand
    priors = [_WRAP.sub(" ", lines)] + ([_WRAP.sub("", lines)] if "\n" in lines else [])
    priors = [_redact_lines(p) for p in priors]
    plain: str | None = None  # the line-by-line pass of raw after its context, once
    for lead in (False, True):
        for trail in (False, True):
            if len(cuts) - lead - trail < (0 if lead else 1):
                continue  # without its first piece, the word may be one line (a value between label and text)
            start = cuts[0][1] if lead else 0
            end = cuts[-1][0] if trail else len(raw)
            span = _Span(raw[start:end])
            if len(span.word) < 16:
                continue
            done = span.redact(None)
            by_label = False
            for prior in priors if labelled and done is None else ():
                done = span.redact(prior + (raw[: cuts[0][0]] + " " if lead else ""))
                if done is not None:
                    by_label = True
                    break
            if done is None:
                continue
            result = raw[:start] + done + raw[end:]
            change = _changed(raw, result)
            if change is None or (by_label and not _random_pieces(raw[change[0] : change[1]])):
                continue
            if _takes_a_word(raw, change):
                continue
            if plain is None:
                plain = _redact_lines(priors[0] + raw)
                plain = plain[len(priors[0]) :] if plain.startswith(priors[0]) else _redact_lines(raw)
            if _needed(plain, raw, result, change, prefix):
                return change
    return None


def _random_pieces(stretch: str) -> bool:
    """Whether a piece of ``stretch`` (8 characters or more, not a path) looks random on its own.

    A value known by its label is judged random as one word; joined, two
    lines of a file listing ("…-groups.md" / "0008-keep-…") become random at
    the seam. A real credential cut at a width has random pieces.
    """
    pieces = [p for p in _BREAK.split(stretch) if len(p) >= 8]
    return not pieces or any(_looks_cut(p) and not _pathlike(p) for p in pieces)


# a run that is words: lower case, capitalised or in capitals, joined by - _ . / (a command, an option, a file name)
_WORDLIKE = re.compile(r"(?:--?|\.{1,2}/|/)?(?:[A-Z]?[a-z]+|[A-Z]+)(?:[-_./](?:[A-Z]?[a-z]+|[A-Z]+))*[.,:;!?]*")


def _takes_a_word(raw: str, change: tuple[int, int, str]) -> bool:
    """Whether a stretch ends with the first word of its last line, which the secret it replaces does not need.

    A value its label's rule does not take alone (``API_KEY=`` and five
    characters, a value of letters shorter than the rule's length, "the
    secret is" and a short hex string) reaches the rule's length with the
    word that starts the next line: "API_KEY=…" / "export OWNER=acme" read
    as one value lost "export" and the line break. When the stretch takes
    that line's whole run (punctuation after it aside) and the run is words
    (:data:`_WORDLIKE`: "export", "npm", "--force", "main.py"; not
    "HsbwekbgjOGH", the rest of a cut token), the value's line is read as
    it stands, as the line-by-line pass reads it. A token known by its shape
    (a prefix, a fixed length) takes the word only when it is not known
    without it: cut at a width, a token may end in a few lowercase letters;
    known without it, the token is read without that line (a rule's open
    length would take "sk-ant-…" / "deploy now" for one longer key).
    """
    head, end, _ = change
    breaks = list(_BREAK.finditer(raw, head, end))
    if not breaks:
        return False
    last = breaks[-1]
    line_end = raw.find("\n", last.end())
    run = raw[last.end() : len(raw) if line_end < 0 else line_end].rstrip("\r")
    if end - last.end() < len(run.rstrip(".,:;!?")) or not _WORDLIKE.fullmatch(run):
        return False  # the stretch ends inside the run, or the run may be the rest of a token
    joined, shorter = _BREAK.sub("", raw[head:end]), _BREAK.sub("", raw[head : last.start()])
    return _redact_shapes(joined) == joined or _redact_shapes(shorter) != shorter


def _redact_shapes(text: str) -> str:
    """``text`` with the secrets known by their shape alone redacted (no label read)."""
    text = _redact_private_keys(text)
    for rx, sub in _SUBS:
        text = rx.sub(sub, text)
    return text


def _pathlike(piece: str) -> bool:
    """A piece that is a path of its own ("/Users/…/bin/pnpm"), not a cut piece of base64 holding a slash."""
    return piece.startswith(("/", "./", "../", "~/")) and is_path(piece)


def _looks_cut(piece: str) -> bool:
    return bool(_MIXED.search(piece)) or 6 * len(_CASE_TURN.findall(piece)) >= len(piece)


def _widths(raw: str, prefix: int, head: int = 0, end: int | None = None) -> list[tuple[int, int, bool]]:
    """(break position, length of the line it ends, soft) for the breaks of ``raw[head:end]``.

    A line ending in a hyphen is *soft*: text wrapped at words breaks there
    ("sk-ant-" / "api03-"), at any length.
    """
    out = []
    for c in _BREAK.finditer(raw, head, len(raw) if end is None else end):
        start = raw.rfind("\n", 0, c.start()) + 1
        soft = c.start() > 0 and raw[c.start() - 1] == "-"
        out.append((c.start(), c.start() - start + (prefix if start == 0 else 0), soft))
    return out


_MIN_WIDTH = 12  # no terminal or wrapped pane is narrower; ids listed one per line under a label are shorter


def _needed(plain: str, raw: str, done: str, change: tuple[int, int, str], prefix: int) -> bool:
    """Whether the rejoined redaction ``done`` of ``raw`` should stand instead of the line-by-line pass (``plain``).

    Three conditions:

    * the lines it joins look cut by a terminal: when it crosses two breaks
      or more, the lines ending at them are of one length (give or take two
      characters for wide characters), not a label and a list of short ids;
    * it hides everything the line-by-line pass hides: a greedy rule that
      swallowed the start of the next line's token must not leave that
      token's rest readable;
    * the line-by-line pass would leave a piece of the secret. It may
      already have the secret whole on its line; a rejoined word would then
      only swallow the next line's first word ("token: …" / "HTTP/1.1
      200"). So the join is needed when the stretch's first piece (up to its
      line end) is left whole by the line-by-line pass, or a later piece it
      leaves looks like part of a secret: at least 8 characters with a
      letter and a digit side by side, or with a turn from lower to upper
      case every 6 characters or fewer.
    """
    head, end, _ = change
    found = [(at, w) for at, w, soft in _widths(raw, prefix, head, end) if not soft]
    inner = [w for _, w in found]
    first_break = _BREAK.search(raw)
    if len(inner) >= 3 and first_break is not None and found[0][0] == first_break.start() and inner[0] > max(inner[1:]):
        inner = inner[1:]  # the word's first line may hold a label before the cut value ("password= " / the value)
    if len(inner) >= 2 and (max(inner) - min(inner) > 2 or min(inner) < _MIN_WIDTH):
        return False
    after = _redact_lines(done)
    if any(len(run) >= 8 and run not in plain for run in _MARKER_RUN.sub(" ", after).split()):
        return False
    raw_lines, plain_lines = raw.split("\n"), plain.split("\n")
    if len(raw_lines) != len(plain_lines):
        return True
    row = raw.count("\n", 0, head)
    first = raw_lines[row][head - (raw.rfind("\n", 0, head) + 1) :].rstrip("\r")
    if _ALNUM.search(first) and plain_lines[row].rstrip("\r").endswith(first):
        return True  # ("---" or "**" before a path is a line of its own, not a secret's first piece)
    for k, piece in enumerate(_BREAK.split(raw[head:end])[1:], start=1):
        for run in _MARKER_RUN.sub(" ", plain_lines[row + k]).split():  # what the line-by-line pass leaves of it
            kept = run if run in piece else piece if piece in run else ""
            if len(kept) >= 8 and _looks_cut(kept) and not _pathlike(kept):
                return True
    return False


_ALNUM = re.compile(r"[A-Za-z0-9]")
_MARKER_RUN = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")
_MIXED = re.compile(r"[A-Za-z][0-9]|[0-9][A-Za-z]")
_CASE_TURN = re.compile(r"[a-z][A-Z]")  # random letters turn case often; CamelCaseNames once a word


_WRAP = re.compile(r"[ \t]*\r?\n[ \t]*")
# every rule that knows a secret by its shape alone needs a digit or a capital letter inside a word (a capital
# starting a line or the word is a sentence's); a fuzz of 300,000 plain words found no exception
_SHAPE_CUE = re.compile(r"[0-9]|(?<=[^\s])[A-Z]")
# a word of every label the labelled rules and the keepers know: secret parts, vendors, "bearer", a URL's "://"
_LABEL_CUE = re.compile(r"secret|key|token|pass|pwd|cred|auth|bearer|" + "|".join(VENDOR_PARTS) + r"|://|%3a%2f%2f", re.I)


@attrs.frozen
class _Span:
    """A word with line breaks in it (``raw``), rejoined."""

    raw: str
    word: str = attrs.field(init=False)
    places: list[int] = attrs.field(init=False)  # for each character of ``word``, its index in ``raw``

    def __attrs_post_init__(self) -> None:
        places: list[int] = []
        pos = 0
        for cut in _BREAK.finditer(self.raw):
            places.extend(range(pos, cut.start()))
            pos = cut.end()
        places.extend(range(pos, len(self.raw)))
        object.__setattr__(self, "word", "".join(self.raw[i] for i in places))
        object.__setattr__(self, "places", places)

    def redact(self, before: str | None) -> str | None:
        """``raw`` with the secret in the rejoined word redacted, or None.

        ``before`` None: a secret known by its shape alone. Else one known by
        its label in ``before`` ("the secret key is …", "Bearer …").
        """
        word, raw = self.word, self.raw
        if before is None:
            redacted = _changed(word, _redact_lines(word))
        else:
            # the labelled pass, run on the lines as they stand, redacts a value that touches the first break
            left, _, right = _redact_lines(before + raw).partition("\n")
            first_line = (before + raw).partition("\n")[0]
            touches = (left.endswith("]") and left != first_line) or right.lstrip(" \t").startswith("[REDACTED:")
            # else only the labelled rules, whose values must look random, judge the rejoined word (an
            # assignment's length rule would take "generate_secret = false" and the next line's name for one
            # long secret)
            joined = _redact_lines(before + word) if touches else _redact_labels_only(before + word)
            if not joined.startswith(before):
                return None
            redacted = _changed(word, joined[len(before) :])
        if redacted is None:
            return None
        head, end, replacement = redacted
        return raw[: self.places[head]] + replacement + raw[self.places[end - 1] + 1 :]


def _changed(word: str, redacted: str) -> tuple[int, int, str] | None:
    """The changed stretch of ``word`` (start, end, its replacement), or None when nothing changed."""
    if redacted == word:
        return None
    head = 0
    while head < min(len(word), len(redacted)) and word[head] == redacted[head]:
        head += 1
    tail = 0
    while tail < min(len(word), len(redacted)) - head and word[-1 - tail] == redacted[-1 - tail]:
        tail += 1
    end = len(word) - tail
    if end <= head:
        return None
    return head, end, redacted[head : len(redacted) - tail]


def _redact_labels_only(text: str) -> str:
    for kind, rx in _KEEPERS:
        text = rx.sub(_keep_first(_marker(kind)), text)
    return redact_labelled(text, _marker)


def _redact_lines(text: str, found: _Found = None) -> str:
    """Every recognised secret of ``text`` as it stands, line by line (each replaced value into ``found``)."""
    text = _redact_private_keys(text)
    if found is None:
        for rx, sub in _SUBS:
            text = rx.sub(sub, text)
        for kind, rx in _KEEPERS:
            text = rx.sub(_keep_first(_marker(kind)), text)
        text = _ASSIGNMENT.sub(_assignment, text)
        return redact_labelled(text, _marker)
    for rx, sub in _SUBS:
        text = rx.sub(_recording(sub, found), text)
    for kind, rx in _KEEPERS:
        text = rx.sub(_recording(_keep_first(_marker(kind)), found), text)
    text = _ASSIGNMENT.sub(_recording(_assignment, found), text)
    return redact_labelled(text, _marker, found)


def _recording(replace: Callable[[re.Match[str]], str], found: list[tuple[str, str]]) -> Callable[[re.Match[str]], str]:
    """``replace``, noting in ``found`` the value each replacement hides."""

    def recorded(m: re.Match[str]) -> str:
        out = replace(m)
        if out != m.group(0):
            _record(found, m.group(0), out)
        return out

    return recorded


_ONE_MARKER = re.compile(r"\[REDACTED:([a-z0-9_]{1,40})\]")


def _record(found: list[tuple[str, str]], before: str, after: str) -> None:
    """Note the value that ``after`` hides of ``before`` behind one marker (a kept label or user is no value)."""
    change = _changed(before, after)
    if change is not None:
        head, end, replacement = change
        marker = _ONE_MARKER.fullmatch(replacement)
        if marker is not None:
            found.append((before[head:end], marker.group(1)))


def redact_text(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``.

    A secret cut over several lines (a terminal's width, a wrapped log) is
    found too: the pieces of a word split at line ends are rejoined, and
    when the rejoined word holds a secret across a break, that stretch is
    redacted whole.
    """
    return _redact(text)


#: passes over a multi-line text at most (see :func:`_redact`)
_PASSES = 4


def _redact(text: str, found: _Found = None) -> str:
    """One redaction of ``text``, to a fixed point: ``redact(redact(x)) == redact(x)``.

    A marker put into a word cut over lines changes what the word's pieces
    join to, so a second pass can find a labelled secret the first could not
    read (a random piece under a label line, joined to a marker). Each pass
    whose output differs from its input is followed by another, at most
    :data:`_PASSES`; text in which nothing was redacted costs one pass.
    """
    for _ in range(_PASSES):
        out = _redact_once(text, found)
        if out == text:
            break
        text = out
    return text


def _redact_once(text: str, found: _Found = None) -> str:
    if "\n" not in text:
        return _redact_lines(text, found)
    if found is None:
        return _redact_lines(_SPLIT_WORD.sub(_joined, text))
    return _redact_lines(_SPLIT_WORD.sub(lambda m: _joined(m, found), text), found)


redact = redact_text


# --- Values followed through a session ---------------------------------------------------------------------------

#: characters a value needs, at least, to be followed through a session (with a letter and a digit in it)
FOLLOW_MIN = 8
_CUE = re.compile(rf"[A-Za-z0-9]{{{FOLLOW_MIN},}}")  # a run of letters and digits a followed value may show


def _followed(value: str) -> bool:
    """Whether a replaced value is followed elsewhere: 8 characters or more, a letter and a digit, not a path.

    A labelled value that is a plain word (``password=changeme``,
    ``token=required``) or short (``pwd=abc1``) is redacted where its label
    stands but not followed: redacting every "changeme" of a session would
    hide ordinary words. A value with a letter and a digit is a word no one
    writes by chance.
    """
    return len(value) >= FOLLOW_MIN and _looks_random(value) and "[REDACTED:" not in value and not is_path(value)


class KnownSecrets:
    """The secret values recognised in one session's texts, each with its kind: the values a redaction follows.

    Filled by :func:`redact_collect` (or :func:`known_secrets`) and applied by
    :meth:`hide` (or :func:`redact_known`). Values stay in memory only: the
    object is never serialised, and its ``repr`` gives their number, never
    them. Only values :func:`_followed` accepts are kept (see
    :data:`FOLLOW_MIN`); a value cut over lines where it was recognised is
    kept rejoined.
    """

    __slots__ = ("_kinds",)

    def __init__(self) -> None:
        self._kinds: dict[str, str] = {}  # value -> kind of the marker that replaced it first

    def __len__(self) -> int:
        return len(self._kinds)

    def __repr__(self) -> str:
        return f"<KnownSecrets: {len(self._kinds)} value(s)>"

    def add(self, value: str, kind: str) -> None:
        """Keep ``value``, replaced as ``[REDACTED:<kind>]``, if it is followed.

        A value cut over lines is kept rejoined, and each of its lines as
        well: a word wrapped with it ("is" / the value) may be part of the
        stretch that was replaced, and a piece of a secret is secret too.
        """
        values = [value]
        if "\n" in value:
            values = [_BREAK.sub("", value), *_BREAK.split(value)]
        for v in values:
            if _followed(v):
                self._kinds.setdefault(v, kind)

    def hide(self, text: str) -> str:
        """``text`` with every occurrence of a known value replaced by its marker; no other rule is applied.

        An occurrence is replaced wherever it stands, inside a longer word
        too, and also when it is cut over lines (the breaks of
        :func:`redact_text`'s split words: a line end and up to 8 spaces or
        tabs of indent); the replaced stretch then loses its line breaks.
        Linear in ``text`` for a fixed set of values; a no-op without values.
        """
        if not self._kinds or not text:
            return text
        joined = _BREAK.sub("", text) if "\n" in text else text  # holds every value the text holds, cut or not
        if not any(v in joined for v in self._kinds):
            return text
        present = [v for v in self._kinds if v in text]
        if present:
            text = self._pattern(present).sub(lambda m: _marker(self._kinds[m.group(0)]), text)
        return self._hide_cut(text) if "\n" in text else text

    def _pattern(self, values: list[str]) -> re.Pattern[str]:
        return re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))

    def _hide_cut(self, text: str) -> str:
        """Known values cut over lines: found in the text read without its breaks, replaced in the text."""
        joined = _BREAK.sub("", text)
        present = [v for v in self._kinds if v in joined]
        if not present:
            return text
        breaks = list(_BREAK.finditer(text))
        at: list[int] = []  # for each break, where it stands in ``joined``
        removed: list[int] = []  # characters removed up to and including that break
        total = 0
        for b in breaks:
            at.append(b.start() - total)
            total += b.end() - b.start()
            removed.append(total)

        def place(j: int) -> int:  # the index in ``text`` of character ``j`` of ``joined``
            k = bisect.bisect_right(at, j)
            return j + (removed[k - 1] if k else 0)

        out: list[str] = []
        pos = 0
        for m in self._pattern(present).finditer(joined):
            start, end = place(m.start()), place(m.end() - 1) + 1
            out.append(text[pos:start])
            out.append(_marker(self._kinds[m.group(0)]))
            pos = end
        out.append(text[pos:])
        return "".join(out)


def redact_collect(text: str, known: KnownSecrets) -> str:
    """:func:`redact_text` of ``text``, adding to ``known`` each value it replaced (at the cost of one redaction)."""
    found: list[tuple[str, str]] = []
    out = _redact(text, found)
    for value, kind in found:
        known.add(value, kind)
    return out


def known_secrets(texts: Iterable[str], *, among: str | None = None) -> KnownSecrets:
    """The followed secret values of ``texts`` (one redaction of each text read).

    With ``among`` (the text about to be published, such as a digest's
    notes), only the texts that share a cue with it are read: a run of
    :data:`FOLLOW_MIN` letters and digits, mixed, that ``among`` holds. A
    value that ``among`` does not show needs no hiding there, so a session
    whose notes hold no such run costs no redaction at all. (A followed value
    whose every run of letters and digits is shorter, ``ab1-cd2-ef3``, is
    then not seen.)
    """
    known = KnownSecrets()
    cues = None if among is None else {c for c in _CUE.findall(among) if _looks_random(c)}
    if cues is not None and not cues:
        return known
    for text in texts:
        if text and (cues is None or any(c in text for c in cues)):
            redact_collect(text, known)
    return known


def redact_known(text: str, known: KnownSecrets) -> str:
    """:func:`redact_text` of ``text``, then every value of ``known`` hidden (:meth:`KnownSecrets.hide`)."""
    return known.hide(redact_text(text))


def redact_session(texts: Sequence[str], known: KnownSecrets | None = None) -> list[str]:
    """Each text redacted once, with every value recognised in any of them hidden in all: one pass.

    The texts are the evidence of one session (a title, each turn's user
    and assistant text): a value recognised by its shape or label in one
    place is replaced wherever else it stands, bare. ``known``, when given,
    collects the values, for notes made from the same session
    (:func:`worker.providers.notes.finalize`).
    """
    known = KnownSecrets() if known is None else known
    first = [redact_collect(t, known) for t in texts]
    return [known.hide(t) for t in first]


def redact_bytes(data: bytes) -> bytes:
    """:func:`redact_text` over UTF-8 bytes; bytes that are not UTF-8 pass through unchanged."""
    text = data.decode("utf-8", "surrogateescape")
    out = redact_text(text)
    return data if out == text else out.encode("utf-8", "surrogateescape")


def redact_added(before: bytes | None, after: bytes) -> bytes:
    """``after`` through the redaction gate where it adds to ``before``: each run of lines the file did not
    hold is redacted as one text (a key split over lines is still found); the lines it held are kept byte
    for byte. Redacting the whole file replaced a user's own tokens in the agent settings a hooks proposal
    edits, and credentials a user keeps in their instruction file, with ``[REDACTED:…]``."""
    if not before:
        return redact_bytes(after)
    held = set(before.splitlines())
    out: list[bytes] = []
    run: list[bytes] = []
    for line in after.splitlines(keepends=True):
        if line.rstrip(b"\r\n") in held:
            if run:
                out.append(redact_bytes(b"".join(run)))
                run = []
            out.append(line)
        else:
            run.append(line)
    if run:
        out.append(redact_bytes(b"".join(run)))
    return b"".join(out)


def redact_obj(obj: Any) -> Any:
    """Every string value of nested JSON-like data redacted (mapping keys are names, kept).

    A string that is itself a JSON document (a chat message carrying the
    evidence) is redacted value by value and, only if that changed
    something, serialised again: redacting its text directly could swallow
    the backslash of an escape and leave the document malformed.
    """
    if isinstance(obj, str):
        if obj[:1] in ("{", "["):
            try:
                inner = json.loads(obj)
            except ValueError:
                return redact_text(obj)
            clean = redact_obj(inner)
            return obj if clean == inner else json.dumps(clean, ensure_ascii=False, sort_keys=True)
        return redact_text(obj)
    if isinstance(obj, Mapping):
        return {k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj


def _field(value: Any) -> Any:
    if isinstance(value, enum.Enum) or value is None:
        return value  # vocabulary, never free text
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, bytes):
        return redact_bytes(value)
    if isinstance(value, tuple):
        return tuple(_field(v) for v in value)
    if attrs.has(type(value)):
        return redact_record(value)
    return value


def redact_record(rec: R) -> R:
    """A copy of attrs record ``rec`` with every text field (nested records and tuples too) redacted."""
    cls: Any = type(rec)
    changes: dict[str, Any] = {}
    for f in attrs.fields(cls):
        old = getattr(rec, f.name)
        new = _field(old)
        if new != old:
            changes[f.alias or f.name] = new
    return attrs.evolve(cast(Any, rec), **changes) if changes else rec


class RedactingFilter(logging.Filter):
    """A logging filter that passes every record's message through :func:`redact_text`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def kinds() -> Sequence[str]:
    """Every kind a marker can name, for documentation and tests."""
    fixed = ("aws_secret_access_key", "bearer_token", "basic_auth", "password", "api_key", "secret", "token",
             "private_key")
    return tuple(dict.fromkeys([r.kind for r in RULES] + list(fixed) + list(VENDOR_KINDS)))
