"""Following live session files while the user works.

:mod:`.core` is the sans-I/O core (events in, actions out: which file to
import, which session to seal after how long idle); :mod:`.files` is its
file-system side (watchfiles, or polling) used by ``cairn serve`` and
``cairn watch``.
"""
