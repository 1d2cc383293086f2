"""aider's ``.aider.conf.yml``: the files its ``read:`` key opens, and the edit that adds ``AGENTS.md`` to them.

aider reads no instruction file by default. Its documented way to load one
in every chat is a ``read:`` entry in ``.aider.conf.yml`` (aider.chat/docs/
config/aider_conf.html, "A note on lists"): a YAML list, block
(``read:`` then ``- CONVENTIONS.md`` lines) or flow (``read: [a, b]``), or
one file name (``read: CONVENTIONS.md``); each file is opened read-only.
How aider takes the file (Aider-AI/aider ``aider/main.py``, ``aider/args.py``;
bw2/ConfigArgParse ``YAMLConfigFileParser``): PyYAML's safe loader, a mapping
at the top; a list's items, a scalar as one item, ``null`` as no key; the
config files of the current folder, the git root and the home are tried in
that order, and the first that sets ``read`` (a non-empty list or a scalar)
wins whole: the others' ``read`` is dropped, never merged. An entry is a path
relative to the folder aider starts in, ``~`` expanded; a folder entry opens
every file under it.

:func:`entries` reads a config as aider does (PyYAML is what aider parses it
with, so the two agree on every file). :func:`add_entries` is the edit: the
bytes of the file with the new entries added to ``read:``, every other byte
kept. It is a text edit, never a re-dump (which would lose the comments and
the layout): the position of the ``read`` key and of its items comes from
PyYAML's node marks, and the entries go after the last item (a block list),
before the closing ``]`` (a flow list), into a flow list holding the scalar
(``read: a`` becomes ``read: [a, AGENTS.md]``, the name quoted when it holds
a ``,``, ``[``, ``]``, ``{`` or ``}``), or as a new ``read:`` block at
the end of the file. The result is parsed again and must be the file's
mapping with exactly those entries added to ``read``, keys in their order;
otherwise, and for any file the edit cannot place safely (not YAML, not a
mapping, a flow mapping, aliases, a ``read`` key set twice, a ``read`` that
is neither ``null``, a file name nor a list of them, a block scalar), nothing
is written: ``E_CONFIG_INVALID``, whose message says to add the entry by hand.

Files aider refuses to start with are ``E_CONFIG_INVALID`` when read and
never edited (the message says to fix the file): whatever PyYAML raises on
them (ConfigArgParse takes any exception of the load as "Couldn't parse
config file": a date that does not exist, a bad ``!!int``, nesting too deep
for the parser, not only a YAML syntax error) and any document that is not a
mapping, an empty one too (an empty file, only comments, ``---`` alone:
``None``, "doesn't appear to contain 'key: value' pairs"). A ``read`` item
that is a list or a mapping (aider would take its whole text as one name;
through aliases that text grows exponentially with the file) is refused
without turning it into text, and a file over :data:`MAX_CONF` is not read
at all (``E_RECORD_TOO_LARGE``), so the work stays bounded by the file's
size: the loader shares an alias's value, never copies it.

Pure: bytes in, bytes out, imports only the protocol.

Imports inside functions: PyYAML (already a dependency, the memory model's
front matter), only where a config is read or edited, so the status counts
(:mod:`.agents`) of a workspace without an aider config never load it;
measured with ``python -X importtime -c "import yaml"``: about 11 ms.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode

#: aider's config file in the workspace (the git root, where aider is started)
CONF = ".aider.conf.yml"
#: what the wiring adds to ``read:``
ENTRY = "AGENTS.md"
#: largest config read or edited (bytes): an aider config is a few lines; PyYAML takes about 2 s per MiB
MAX_CONF = 64 * 1024
#: marks in the workspace that aider is used here (its config, the histories it keeps in the git root)
MARKS = (CONF, ".aider.chat.history.md", ".aider.input.history")

_BY_HAND = f"add {ENTRY} to its `read:` list by hand"
_NOT_MAPPING = "not a YAML mapping of options: aider refuses to start with it too; fix it"
_EMPTY = ("holds no options (empty, only comments or a bare `---`): aider refuses to start with it too; fix it "
          "(`{}` is an empty mapping)")
_PLAIN = re.compile(r"[A-Za-z0-9_./~][A-Za-z0-9_./~+@-]*")
_DASH = re.compile(r"[ ]*-[ ]+")


def _invalid(where: str, why: str) -> CairnError:
    return CairnError(ErrorCode.CONFIG_INVALID, f"{where}: {why}")


def _text(data: bytes | str, where: str) -> str:
    """The config's text, at most :data:`MAX_CONF` bytes of it (module docstring)."""
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    if size > MAX_CONF:
        raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"{where}: over {MAX_CONF // 1024} KiB, more than an aider "
                         f"config holds; cairn neither reads nor edits it")
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CairnError(ErrorCode.MEMORY_NOT_TEXT, f"{where}: not UTF-8 text") from None


def _load(text: str, where: str) -> Any:
    import yaml  # only a workspace with an aider config pays for it (module docstring)

    try:
        return yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise _invalid(where, f"not valid YAML{at}: aider refuses to start with it too; fix it") from None
    except RecursionError:
        raise _invalid(where, "nested too deeply to read: aider refuses to start with it too; fix it") from None
    except Exception:  # ValueError, KeyError, AttributeError…: aider takes any of them as a parse error too
        # the message never quotes the value: the file may hold an API key
        raise _invalid(where, "holds a value YAML cannot construct (a date that does not exist, a bad `!!` tag, a "
                       "number out of range): aider refuses to start with it too; fix it") from None


def _options(text: str, where: str) -> dict[Any, Any]:
    """The config's mapping of options, as aider requires it (module docstring)."""
    value = _load(text, where)
    if not isinstance(value, dict):
        raise _invalid(where, _EMPTY if value is None else _NOT_MAPPING)
    return value


def _name(item: Any, where: str) -> str:
    """One ``read`` item as aider takes it (``str``), never a list or mapping turned into text."""
    if isinstance(item, (list, tuple, dict, set)):
        raise _invalid(where, "a `read:` item is a list or a mapping, not a file name (aider would take its whole "
                       "text as one name); fix it")
    try:
        return str(item)
    except ValueError:  # an integer too long to print: aider fails on it the same way
        raise _invalid(where, "a `read:` item is a number too long to be a file name; fix it") from None


def entries(data: bytes | str, where: str = CONF) -> list[str] | None:
    """The ``read`` entries of a config as aider takes them, each once; None when it sets none (no key,
    ``null``, ``[]``).

    Raises ``E_CONFIG_INVALID`` for a file aider refuses to start with (not
    YAML, not a mapping, empty) and for a ``read`` item that is a list or a
    mapping, ``E_MEMORY_NOT_TEXT`` when not UTF-8, ``E_RECORD_TOO_LARGE``
    over :data:`MAX_CONF`.
    """
    read = _options(_text(data, where), where).get("read")
    if read is None:
        return None
    out = [_name(x, where) for x in (read if isinstance(read, list) else [read])]
    return list(dict.fromkeys(out)) or None  # an alias repeats one name: each is looked at once


def entry_path(workspaces: Iterable[str], entry: str, home: str) -> str | None:
    """The workspace-relative path an entry names, aider started in the workspace (``workspaces``: its path
    as given and as resolved); None when it is outside the workspace or empty."""
    path = home + entry[1:] if entry == "~" or entry.startswith("~/") else entry
    if not path.strip():
        return None
    if posixpath.isabs(path):
        path = posixpath.normpath(path)
        for ws in workspaces:
            ws = posixpath.normpath(ws)
            if path == ws:
                return "."
            if path.startswith(ws.rstrip("/") + "/"):
                return posixpath.relpath(path, ws)
        return None
    rel = posixpath.normpath(path)
    return None if rel == ".." or rel.startswith("../") else rel


def _scalar(entry: str) -> str:
    """``entry`` as a YAML scalar: plain when it reads back as itself, else double-quoted (JSON is valid YAML)."""
    import yaml

    if _PLAIN.fullmatch(entry):
        try:
            if yaml.load(entry, Loader=yaml.SafeLoader) == entry:
                return entry
        except Exception:  # `2024-13-45` reads as no date at all: quoted then
            pass
    return json.dumps(entry)


def _line_end(text: str, at: int) -> int:
    """The index just past the line break of the line holding ``at`` (the text's end when it has none)."""
    n = text.find("\n", at)
    return len(text) if n < 0 else n + 1


def _insert_lines(text: str, at: int, lines: list[str], nl: str) -> str:
    """``lines`` inserted at ``at`` (a line start, or the end of a text without a final line break)."""
    if at == len(text) and text and not text.endswith(("\n", "\r")):
        return text + "".join(nl + line for line in lines)  # a missing final newline stays missing
    return text[:at] + "".join(line + nl for line in lines) + text[at:]


def add_entries(data: bytes | None, new: list[str], where: str = CONF) -> bytes:
    """The config's bytes with ``new`` added at the end of its ``read`` list (module docstring for how).

    ``data`` None: the file does not exist and is created. Raises
    ``E_CONFIG_INVALID`` when the edit cannot be placed or checked safely,
    or the file is one aider refuses to start with (an empty one too).
    """
    import yaml

    text = _text(data, where) if data is not None else ""
    before = _options(text, where) if data is not None else None
    try:
        events = list(yaml.parse(text, Loader=yaml.SafeLoader))
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:  # pragma: no cover - _load parsed it already
        raise _invalid(where, f"not valid YAML; {_BY_HAND}") from None
    if any(isinstance(e, yaml.AliasEvent) for e in events):
        raise _invalid(where, f"uses YAML aliases, which a text edit cannot check; {_BY_HAND}")
    old = (before or {}).get("read")
    if not (old is None or isinstance(old, str) or (isinstance(old, list) and all(isinstance(x, str) for x in old))):
        raise _invalid(where, f"`read:` is neither a file name nor a list of them; {_BY_HAND}")
    nl = "\r\n" if "\r\n" in text else "\n"
    items = ", ".join(_scalar(e) for e in new)
    # root: None (no file yet) or the mapping node of `before` (a dict is made of nothing else)
    if isinstance(root, yaml.MappingNode) and root.flow_style:
        raise _invalid(where, f"a flow mapping (`{{...}}`), which a line edit cannot extend; {_BY_HAND}")
    keys = [(k, v) for k, v in (root.value if root is not None else []) if isinstance(k, yaml.ScalarNode)
            and k.value == "read"]
    if len(keys) > 1:
        raise _invalid(where, f"`read:` is set {len(keys)} times; {_BY_HAND}")
    if not keys:  # a new block at the end, at the column of the file's keys
        col = " " * (root.start_mark.column if root is not None else 0)
        after = _insert_lines(text, len(text), [f"{col}read:", *(f"{col}  - {_scalar(e)}" for e in new)], nl)
    else:
        key, value = keys[0]
        start, end = value.start_mark.index, value.end_mark.index
        if isinstance(value, yaml.ScalarNode):
            token = text[start:end]
            if value.style in ("|", ">") or "\n" in token or "\r" in token:
                raise _invalid(where, f"`read:` is a multi-line scalar; {_BY_HAND}")
            if old is None and not token.strip():  # `read:` and nothing: a block list under the key
                col = " " * (key.start_mark.column + 2)
                after = _insert_lines(text, _line_end(text, key.end_mark.index),
                                      [f"{col}- {_scalar(e)}" for e in new], nl)
            elif old is None:  # `read: ~` / `read: null`
                after = text[:start] + f"[{items}]" + text[end:]
            else:  # a plain name holding a flow indicator would read otherwise inside brackets: quoted then
                name = json.dumps(old) if value.style is None and any(c in token for c in ",[]{}") else token
                after = text[:start] + f"[{name}, {items}]" + text[end:]
        elif isinstance(value, yaml.SequenceNode) and value.flow_style:
            if not text[:end].endswith("]"):  # pragma: no cover - a flow sequence ends with its bracket
                raise _invalid(where, f"`read:` does not end where expected; {_BY_HAND}")
            if value.value:
                at = value.value[-1].end_mark.index
                after = text[:at] + f", {items}" + text[at:]
            else:
                after = text[:end - 1] + items + text[end - 1:]
        elif isinstance(value, yaml.SequenceNode):
            last = value.value[-1]
            line = text.rfind("\n", 0, last.start_mark.index) + 1
            prefix = text[line:last.start_mark.index]
            if not _DASH.fullmatch(prefix) or getattr(last, "style", None) in ("|", ">"):
                raise _invalid(where, f"the last `read:` item is not a `- file` line; {_BY_HAND}")
            after = _insert_lines(text, _line_end(text, last.end_mark.index),
                                  [f"{prefix}{_scalar(e)}" for e in new], nl)
        else:  # pragma: no cover - excluded by the type check of `old`
            raise _invalid(where, f"`read:` is neither a file name nor a list of them; {_BY_HAND}")
    expected = dict(before or {})
    listed = [] if old is None else [old] if isinstance(old, str) else list(old)
    expected["read"] = [*listed, *new]
    try:
        got = yaml.load(after, Loader=yaml.SafeLoader)
    except Exception:  # whatever the loader raises (module docstring): the edit is refused below
        got = None
    if not isinstance(got, dict) or got != expected or list(got) != list(expected):
        raise _invalid(where, f"adding {', '.join(new)} to `read:` would change more than that list; {_BY_HAND}")
    return after.encode("utf-8")
