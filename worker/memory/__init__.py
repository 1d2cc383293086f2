"""Memory consolidation: the memory model, the review engine and proposal diffs.

``model`` reads and edits memory roots byte-exactly (``MEMORY.md`` index
entries, topic files with YAML front matter, instruction files);
``engine`` turns journal digests into proposal drafts deterministically and
offline; ``diff`` renders a proposal's change as a unified diff. These parts
are pure: claims, storage, decisions and checked application live beside
them.
"""
