"""Structural cues of the extractive engine: project facts said by the *shape* of a message, not a sentence.

Users describe their project in forms no sentence rule sees: a lead-in line
over a list ("Tech stack:" then "Vite.js", "Terraform" on their own lines;
"The MVP is:" then what it does), or labelled lines ("Framework: Next.js",
"Database: Postgres"). Split into sentences, each item is a fragment with no
verb. Read as a block, the lead-in names what the items are.

Contract: :func:`blocks` takes a turn's user text and returns the blocks it
finds, each as the one-line statement a note quotes ("Tech stack: Amazon
cloud (s3; Terraform; Vite.js"). Only two shapes count:

``list``   a line that is a lead-in (a project aspect such as "tech stack",
           "conventions", "our setup", or "the app/project is/uses") ending
           in ``:`` and followed by 1-12 short item lines; the block ends at
           a blank line or the next lead-in.
``label``  a line "<attribute>: <value>" whose attribute names a part of a
           project's stack or setup (framework, language, database, hosting,
           package manager, …) and whose value is short; the colon is
           followed by a space ("node:events:502" is where a log was raised),
           and the value is no template's blank ("[Your specific framework]").

The lead-in is a closed set of *aspect* nouns, never a topic, so the rule
reads any project's description. Lists of work are not facts: a lead-in of
tasks, steps, changes or errors is not in the set, nor are "Requirements:",
"Constraints:", "Scope:" and "The MVP is:" (the specification of what is
being built: "REQUIREMENTS: Connect to Kalshi's live API …; Pull all currently
active markets …", "Requirements: Debounce 400ms after last input …"), nor is a bare "Context:" or
"Background:" (the situation of the work asked for: "Context: We need to
improve the initial state of the page …"; "Project context:" is in), and a block any of whose
items starts with a task verb ("add", "fix", "create" …) is a specification of
work to do ("Requirements: Add X as a new option …"), so it is dropped. Fenced
code, quoted lines and indented lines (a pasted YAML file's "environment:" over
"PMA_HOST: mysql") are skipped; items that look like code (a CSS custom
property, "--accent: #1D9E75") or logs end the block.
"""

from __future__ import annotations

import re

MAX_ITEMS = 12
MAX_ITEM = 160
MAX_VALUE = 100
MAX_HEAD = 60  # a lead-in or a label's colon comes early in its line

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_MARKUP = re.compile(r"^[#>*_\s]+|[*_\s]+$")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_ASPECT = (
    r"(?:tech(?:nology|nical)?\ stack|stack|tech|technologies|tools|tooling|libraries|dependencies|frameworks?"
    r"|languages?|platforms?|infrastructure|infra|architecture|setup|environment|dev(?:elopment)?\ environment"
    r"|conventions|coding\ (?:standards|style|conventions)|code\ style|style\ guide|rules"
    r"|guidelines|project\ (?:structure|layout|rules|conventions|context|overview|description)|(?:folder|directory)"
    r"\ structure|design\ system|target(?:\ (?:platforms?|users|audience))?|audience"
    r"|about(?:\ (?:me|the\ project|this\ project))?|deployment|hosting)"
)
_LEAD = re.compile(
    rf"""^(?:(?:our|my|the|current|project|technical|non-functional|functional)\ )*{_ASPECT}$
    |^(?:the|our|my|this)\ (?:project|app|application|site|website|product|platform|tool|stack|setup)
      \ (?:is|are|will\ be|includes?|uses|has|needs|should\ be)$
    |^(?:we|i)\ (?:use|are\ using|'re\ using|am\ using)$|^built\ (?:with|on|using)$""",
    re.I | re.X,
)
_ATTRIBUTES = r"""(?:tech(?:nology)?\ stack|stack|framework|frontend(?:\ framework)?|backend(?:\ framework)?|language|languages
    |database|db|orm|runtime|platform|hosting|host|hosted\ on|deploy(?:ment|ed\ (?:on|to))?|cloud|package\ manager
    |build\ tool|bundler|test(?:ing)?\ framework|test\ runner|styling|css(?:\ framework)?|ui(?:\ (?:library|framework|kit))?
    |component\ library|state\ management|auth(?:entication)?|node(?:\ version)?|python(?:\ version)?|target
    |target\ platforms?|os|operating\ system|editor|ide|ci|ci/cd|repo(?:sitory)?|license|project\ name|app\ name)"""
_ATTRIBUTE = re.compile(rf"^{_ATTRIBUTES}$", re.I | re.X)
_TASK_ITEM = re.compile(
    r"^(?:add|fix|create|implement|update|remove|delete|make|build|write|change|move|rename|refactor|replace|test"
    r"|check|investigate|debug|set\ up|install|run|deploy|migrate|integrate|improve|optimi[sz]e|clean|convert|finish"
    r"|complete|review|todo)\b",
    re.I,
)
# code, not prose: a statement's end, a closing bracket, a keyword, an arrow, a CSS custom property ("--accent: #1D9E75")
_CODEISH = re.compile(
    r"[;{}]\s*$|^\s*[})\]<]|^\s*(?:def|class|import|from|function|const|let|var|return)\b|=>|\(\)\s*\{|^\s*--[\w-]+\s*:"
)
# a template's blank ("Framework: [Your specific framework]", "Database: <your database>"): nothing is stated
_PLACEHOLDER = re.compile(r"^[\[<{][^\]>}]*\b(?:your|specific|insert|placeholder|tbd|todo)\b|\byour\b", re.I)
_MOMENT = re.compile(r"\b(?:error|errors|exception|traceback|failed|failing|broken|bug|todo|tasks?|steps?|changes?)\b", re.I)


def _clean(line: str) -> str:
    return _MARKUP.sub("", _BULLET.sub("", line.strip())).strip()


def _item(line: str) -> str | None:
    """A list item's text, or None when the line cannot be one (code, a log, too long)."""
    text = _clean(line)
    if not text or len(text) > MAX_ITEM or _CODEISH.search(text) or text.endswith(":"):
        return None
    return text


def _label(head: str, value: str) -> str | None:
    value = _MARKUP.sub("", value).strip()
    if not value or len(value) > MAX_VALUE or value.startswith("//") or not _ATTRIBUTE.match(head):
        return None
    if _MOMENT.search(value) or _CODEISH.search(value) or value.endswith("?") or _PLACEHOLDER.search(value):
        return None
    return f"{head}: {value}"


def blocks(text: str) -> list[str]:
    """The project facts ``text`` states as a lead-in over a list or as labelled lines (module docstring)."""
    found: list[str] = []
    if ":" not in text:
        return found
    lines = text.splitlines()
    fence: str | None = None
    i = 0
    while i < len(lines):
        raw = lines[i]
        i += 1
        opening = raw.lstrip()[:3]
        if opening[:1] in ("`", "~"):
            m = _FENCE.match(raw)
            if m and fence is None:
                fence = m.group(1)
                continue
            if m and fence is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
                continue
        # an indented line is part of a pasted file (a YAML mapping's "environment:" over "PMA_HOST: mysql"), as
        # the sentence reader treats it
        if raw.startswith(("    ", "\t")):
            continue
        colon = raw.find(":")
        # most lines: inside a fence, quoted, or no colon early in the line (neither a lead-in nor a label)
        if fence is not None or not 0 < colon <= MAX_HEAD or opening[:1] == ">":
            continue
        head = _MARKUP.sub("", _BULLET.sub("", raw[:colon])).strip()
        rest = raw[colon + 1 :]
        if not rest.strip(" \t*_"):
            if not _LEAD.match(head):
                continue
            items: list[str] = []
            while i < len(lines) and len(items) < MAX_ITEMS:
                item = _item(lines[i]) if lines[i].strip() else None
                if item is None:
                    break
                items.append(item)
                i += 1
            tasks = sum(1 for item in items if _TASK_ITEM.match(item))
            if items and not tasks:
                found.append(f"{head}: {'; '.join(items)}")
            continue
        # a label's colon is followed by a space ("Framework: Next.js"); "node:events:502" is a log's location
        label = _label(head, rest) if rest.lstrip("*_")[:1].isspace() else None
        if label is not None:
            found.append(label)
    return found
