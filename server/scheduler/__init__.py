"""When and how jobs run: the pure coordinator and the processes it starts.

:mod:`.coordinator` is the scheduling policy, a pure function of state,
event and time (numbered rules, no I/O); :mod:`.events` are its inputs;
:mod:`.adapter` carries its actions out on asyncio (clock, timer, worker
processes) and persists through :mod:`.jobstore`; :mod:`.runner` runs one
job as a ``python -m cairn.worker`` subprocess that may die at any instant;
:mod:`.inprocess` runs one job in this process (the CLI, the MCP endpoint)
under the same claims.
"""
