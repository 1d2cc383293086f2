"""The memory model: a root's ``MEMORY.md`` index and its topic files, byte-exact.

A memory root is a directory holding ``MEMORY.md`` (:mod:`.index`) and
topic files ``*.md`` with YAML front matter (:mod:`.topics`, which also
edits instruction files such as ``AGENTS.md``); :mod:`.root` observes one
root, :mod:`.lines` is the line layer all edits share. Contract: nothing
here reformats what it does not change. Edits work on lines with their
exact endings (LF, CRLF, or a missing final newline is kept); an index edit
touches only the affected entry lines, and freshness is checked per entry,
so an unrelated manual edit never blocks a change and a change to the
affected entry always does (``E_INDEX_ENTRY_CHANGED``). Everything is pure
except :func:`read_root`, a read-only observation that never follows a
symlink. Imports only the protocol and :mod:`state.fsdir`; callers import
the names below from this package, not from its modules.
"""

from cairn.worker.memory.model.index import (
    INDEX_BUDGET,
    INDEX_MAX_BYTES,
    INDEX_MAX_LINES,
    INDEX_NAME,
    Index,
    IndexBudget,
    IndexEditTuple,
    IndexEntry,
    apply_index_edits,
    check_topic_file,
    entry_line,
    format_entry,
    over_budget,
    parse_index,
    with_confirmed,
)
from cairn.worker.memory.model.lines import one_line
from cairn.worker.memory.model.rewrite import replace_line, set_front_matter
from cairn.worker.memory.model.root import (
    FILE_MAX_BYTES,
    MemorySnapshot,
    TopicFile,
    empty_snapshot,
    read_root,
)
from cairn.worker.memory.model.topics import (
    FILENAME_MAX,
    Topic,
    add_working_agreements,
    append_to_topic,
    parse_topic,
    render_topic,
    topic_filename,
)

__all__ = [
    "FILENAME_MAX",
    "FILE_MAX_BYTES",
    "INDEX_BUDGET",
    "INDEX_MAX_BYTES",
    "INDEX_MAX_LINES",
    "INDEX_NAME",
    "Index",
    "IndexBudget",
    "IndexEditTuple",
    "IndexEntry",
    "MemorySnapshot",
    "Topic",
    "TopicFile",
    "add_working_agreements",
    "append_to_topic",
    "apply_index_edits",
    "check_topic_file",
    "empty_snapshot",
    "entry_line",
    "format_entry",
    "one_line",
    "over_budget",
    "parse_index",
    "parse_topic",
    "read_root",
    "render_topic",
    "replace_line",
    "set_front_matter",
    "topic_filename",
    "with_confirmed",
]
