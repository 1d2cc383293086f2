"""Test doubles for the server layer; production code never imports this module.

:class:`FakeClock` stands in for :class:`server.scheduler.adapter.SystemClock`: time
moves only when a test says so, so every timing decision (retry deadlines,
idle sealing, quiet periods) is exercised without sleeping.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from cairn.server.scheduler.adapter import TimerHandle


class _FakeHandle:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """Time moves only when :meth:`advance` says so; due callbacks run in time order."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._now = start
        self._heap: list[tuple[float, int, _FakeHandle, Callable[[], None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        handle = _FakeHandle()
        heapq.heappush(self._heap, (when, next(self._seq), handle, callback))
        return handle

    def pending(self) -> list[float]:
        return sorted(w for w, _, h, _ in self._heap if not h.cancelled)

    def advance(self, seconds: float) -> None:
        target = self._now + seconds
        while self._heap and self._heap[0][0] <= target:
            when, _, handle, callback = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            self._now = max(self._now, when)
            callback()
        self._now = target
