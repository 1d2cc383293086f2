"""Data only: closed record schemas, vocabularies, error codes and message envelopes.

Nothing in this package performs I/O, and it imports nothing from the other
layers (state, worker, server all import it). Everything cairn persists or
sends is defined here, so every other layer agrees on one closed shape per
record; :mod:`.codec` is the one canonical encoding, and
:mod:`.errors` holds the fixed ``E_...`` codes every failure is reported by.
"""
