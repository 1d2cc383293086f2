"""Registrations of the CLI subcommands beyond ``doctor`` (kept apart so each
command's imports stay lazy and the CLI starts fast)."""
