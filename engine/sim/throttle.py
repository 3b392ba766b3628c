"""Throttled: hand an observer the run in ticks of simulated time, the same ticks in every process.

Role
----
A live view cannot redraw at every event (a busy run emits hundreds of thousands), and a
wall-clock throttle would make what it sees depend on the machine. :class:`Throttled` wraps an
observer and calls its ``on_tick(world, tick_ms, events)`` once per ``every_ms`` of *simulated*
time in which something happened, with the events of that span whose names it asked for. The
ticks depend only on the run, so a test, a notebook and a benchmark see the same ones.

When a tick fires
-----------------
Ticks sit on the grid ``0, every_ms, 2*every_ms, ...``. When simulated time is about to move
past a grid point (``on_advance``), the world is exactly as the last instant before that point
left it: the tick fires then, with ``tick_ms`` the grid point it closes, and hands over the
events collected since the previous tick. Time that stays inside one grid span gives no tick;
a jump over several grid points gives one tick (the last point passed). :meth:`Throttled.flush`
delivers what happened since the last tick at the end of a run, or whenever a caller wants the
latest state now.

Invariants
----------
* It only reads: the wrapped observer is told, never the engine changed, so a run's trace and
  fingerprint are the same with or without it (tests/unit/sim/test_sim_throttle.py).
* Deterministic: ticks and their events are a function of the trace and the clock.

What it does not do
-------------------
It does not throttle against wall time: a 10 Hz publisher (``widgets.pacer``) does that above
the engine, where threads are allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.sim.trace import TraceEvent
    from engine.sim.world import World


class Throttled:
    """Call ``observer.on_tick(world, tick_ms, events)`` at most once per ``every_ms`` simulated ms.

    Parameters
    ----------
    observer
        Any object with an ``on_tick(world, tick_ms, events)`` method.
    every_ms
        The tick period in simulated milliseconds (>= 1).
    names
        Event names to collect for the tick (None: every event; empty: none, ticks only).
    """

    def __init__(self, observer: Any, every_ms: int, *, names: Iterable[str] | None = None) -> None:
        if isinstance(every_ms, bool) or not isinstance(every_ms, int) or every_ms < 1:
            msg = f"every_ms must be a whole number of simulated milliseconds >= 1, got {every_ms!r}"
            raise ValueError(msg)
        if not callable(getattr(observer, "on_tick", None)):
            msg = f"{observer!r} has no on_tick(world, tick_ms, events) method to throttle"
            raise TypeError(msg)
        self.observer = observer
        self.every_ms = every_ms
        self.names = None if names is None else frozenset(names)
        self.ticks = 0
        self._pending: list[TraceEvent] = []
        self._dirty = False

    def on_event(self, event: TraceEvent) -> None:
        """Collect the event for the next tick if its name was asked for."""
        self._dirty = True
        if self.names is None or event.name in self.names:
            self._pending.append(event)

    def on_advance(self, world: World, from_ms: int, to_ms: int) -> None:
        """Fire a tick when time is about to pass a grid point."""
        every = self.every_ms
        if to_ms // every > from_ms // every:
            self._fire(world, (to_ms // every) * every)

    def flush(self, world: World) -> None:
        """Deliver a tick now if anything happened since the last one."""
        if self._dirty:
            self._fire(world, world.now_ms)

    def _fire(self, world: World, tick_ms: int) -> None:
        events, self._pending = self._pending, []
        self._dirty = False
        self.ticks += 1
        self.observer.on_tick(world, tick_ms, events)
