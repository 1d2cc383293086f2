"""cairn state layer."""
