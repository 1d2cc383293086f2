"""Untrusted text: the one rule for control characters.

Much of what cairn handles comes from outside it: transcripts and the turns
an editor sends, a provider's digest notes and review replies, remembered
texts, working notes, file and folder names. Such text may hold control
characters — a colour escape pasted into a prompt, a BEL, a NUL, an OSC 52
sequence that writes the clipboard of whoever prints it. Memory files refuse
them (a topic's front matter must be text), terminals obey them and editors
show them as junk, so they are dealt with once, where text enters or leaves:

* :func:`clean_text` where untrusted text **enters** cairn (a captured turn,
  every digest note, every review reply, every note a review reads, a
  remembered text). It keeps the words and drops the controls:

  - ANSI escape sequences are removed whole: CSI (``ESC [`` or U+009B,
    parameters, final byte: ``\\x1b[31m`` goes, ``red`` stays), strings
    (OSC ``ESC ]``, DCS ``ESC P``, SOS ``ESC X``, PM ``ESC ^``, APC ``ESC _``
    or their C1 forms) up to and with their terminator (BEL, ``ESC \\`` or
    U+009C), payload included, and two-character escapes (``ESC 7``,
    ``ESC (B`` …). A string introducer without a terminator is removed
    alone: what follows stays as plain text rather than swallowing the rest;
  - CRLF, and a lone CR, VT, FF or NEL (U+0085), become LF (line breaks
    stay line breaks);
  - every other C0 control (U+0000–U+001F) except tab and LF, DEL (U+007F)
    and C1 control (U+0080–U+009F) is removed;
  - a lone surrogate (which no UTF-8 file can hold) becomes U+FFFD.

  Tab and LF are kept: they are text. Nothing else is changed; the result is
  a fixed point (cleaning it again changes nothing).

* :func:`memory_text` where a note is about to become memory (a review's
  notes): :func:`clean_text`, and without the bidirectional controls that
  reorder what is shown.

* :func:`printable` where the CLI **prints** untrusted text (journal notes
  and titles, proposal titles, file names, error messages): nothing is
  removed, each control character is shown visibly as ``\\xNN`` (``\\t``,
  ``\\n``, ``\\r`` for tab, LF, CR; ``\\u…`` for a lone surrogate, a line or
  paragraph separator or a bidirectional override, which can reorder what a
  terminal shows), so a name with an ESC in it reads ``\\x1b`` and still says
  which file it is. Display only: the escaping is not meant to be reversed.

Pure: no I/O.
"""

from __future__ import annotations

import re

#: any character :func:`clean_text` changes (the fast path: text without one is returned as is)
_SUSPECT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_ANSI = re.compile(
    r"""
      (?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?                 # CSI: parameters, intermediates, final
    | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])                             # a string: OSC DCS SOS PM APC …
      [^\x07\x1b\x90\x98\x9c-\x9f]*(?:\x07|\x1b\\|\x9c)                   # … up to its terminator (BEL or ST)
    | \x1b[\x20-\x2f]*[\x30-\x7e]?                                        # other escapes (and a lone ESC)
    """,
    re.X,
)
_BREAK = re.compile(r"\r\n?|[\x0b\x0c\x85]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
#: what :func:`printable` escapes: controls, lone surrogates, line/paragraph separators, bidi controls
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str) -> str:
    """``text`` without control characters other than tab and LF; see the module docstring."""
    if not _SUSPECT.search(text):
        return text
    text = _ANSI.sub("", text)
    text = _BREAK.sub("\n", text)
    text = _CONTROL.sub("", text)
    return _SURROGATE.sub("\ufffd", text)


#: bidirectional embeddings, overrides and isolates: they reorder what an editor or a terminal shows
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")
#: characters that show nothing and join or separate nothing a reader sees: zero width space, word joiner and
#: the invisible operators, byte order mark, soft hyphen (a ZWJ or ZWNJ shapes some scripts and emoji: kept)
_INVISIBLE = re.compile(r"[\u200b\u2060-\u2064\ufeff\u00ad]")
#: what counts as no text at all: the above, the joiners and marks, and the fillers that render as blanks
_BLANK = re.compile(r"[\s\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad\u034f\u115f\u1160"
                    r"\u180e\u3164\uffa0]")


def blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only white space and characters that render as nothing (a zero width
    space, a joiner, a bidirectional control, a Hangul filler …)."""
    return not _BLANK.sub("", text)


def memory_text(text: str) -> str:
    """:func:`clean_text`, and without bidirectional embedding, override and isolate controls (U+202A–U+202E,
    U+2066–U+2069): text bound for a memory file, which every agent loads and a person reviews as a diff,
    must read in the order it is stored ("Trojan Source"). The marks U+200E and U+200F stay: they order
    nothing beyond themselves. Zero width spaces, word joiners, byte order marks and soft hyphens go too: a
    word with one inside reads whole and is found by no search for it."""
    return _INVISIBLE.sub("", _BIDI.sub("", clean_text(text)))


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    n = ord(ch)
    return _NAMED.get(ch) or (f"\\x{n:02x}" if n <= 0xFF else f"\\u{n:04x}")


def printable(text: str, *, keep: str = "") -> str:
    """``text`` with every control character escaped visibly (``ESC`` → ``\\x1b``), for a terminal.

    ``keep``: characters left as they are (``"\\n"`` for several lines of
    text, ``"\\t\\n"`` for a diff); by default tab and LF are escaped too, as
    in a name.
    """
    if not _UNPRINTABLE.search(text):
        return text
    if not keep:
        return _UNPRINTABLE.sub(_escape, text)
    return _UNPRINTABLE.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)
