"""The test suite, one folder per area of the code it checks.

``state``, ``worker``, ``importers``, ``providers``, ``journal``, ``memory``,
``coordinator`` and ``server`` follow the layers; ``editors`` drives the
Emacs and Neovim clients, ``security``, ``packaging`` and ``quality`` check
the whole. Shared helpers are in :mod:`tests.support` (plain functions) and
``conftest.py`` files (fixtures only); ``fixtures/`` holds transcripts and sweep inputs.
Crash sweeps and races are marked ``slow``; the real language server is the
``client`` fixture of ``tests/server``. No test sleeps: fake clocks and
events decide when things happen.
"""
