"""Data only: closed record schemas, vocabularies, error codes and message envelopes.

Nothing in this package performs I/O. Everything cairn persists or sends is
defined here, so every other layer agrees on one closed shape per record.
"""
