"""Events per second of the engine's Scheduler, next to a bare heapq loop measured in the same run.

Shape (performance.md §1, "hold"): 1,000 events pending; every no-op event schedules exactly one
successor, so the heap stays 1,000 deep; 1,000,000 events in all. Each figure is the best of 3.

- ``bare heapq``: an inline loop over ``(t, seq, cb, args)`` tuples: pop, call, push.
- ``Scheduler.call_at_fast``: the engine's hot path (what the network uses for every hop); the
  callback schedules its successor, and ``Scheduler.run_for`` runs the loop.
- ``Scheduler.call_later``: the same with a cancellable :class:`~engine.sim.scheduler.Timer`
  per event (what ``Node.set_timer`` uses).

Figures only; nothing is asserted. The target is a ratio of at least 0.5 for the hot path.
Run with ``python bench/bench_scheduler.py [events]``.
"""

from __future__ import annotations

import heapq
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.sim.scheduler import Scheduler

PENDING = 1_000
REPEATS = 3


def _noop() -> None:
    pass


def bare_heapq(events: int) -> float:
    """Return the seconds a bare heapq hold loop takes to run ``events`` events."""
    heap = [(i % 10, i, _noop, ()) for i in range(PENDING)]
    heapq.heapify(heap)
    seq = PENDING
    pop, push = heapq.heappop, heapq.heappush
    start = time.perf_counter()
    for _ in range(events):
        t, _s, cb, args = pop(heap)
        cb(*args)
        seq += 1
        push(heap, (t + 1 + (seq & 7), seq, cb, args))
    return time.perf_counter() - start


def engine_fast(events: int) -> float:
    """Return the seconds the Scheduler takes with ``call_at_fast`` successors."""
    sched = Scheduler()
    left = [events]
    call_at_fast = sched.call_at_fast

    def tick(n: int) -> None:
        left[0] -= 1
        if left[0] >= PENDING:
            call_at_fast(sched.now_ms + 1 + (n & 7), tick, n + 1)

    for i in range(PENDING):
        call_at_fast(i % 10, tick, i)
    start = time.perf_counter()
    sched.run_for(10**12, max_events=events + 1)
    elapsed = time.perf_counter() - start
    assert sched.events_run == events, sched.events_run
    return elapsed


def engine_timer(events: int) -> float:
    """Return the seconds the Scheduler takes with ``call_later`` (Timer-carrying) successors."""
    sched = Scheduler()
    left = [events]
    call_later = sched.call_later

    def tick(n: int) -> None:
        left[0] -= 1
        if left[0] >= PENDING:
            call_later(1 + (n & 7), tick, n + 1)

    for i in range(PENDING):
        sched.call_at(i % 10, tick, i)
    start = time.perf_counter()
    sched.run_for(10**12, max_events=events + 1)
    elapsed = time.perf_counter() - start
    assert sched.events_run == events, sched.events_run
    return elapsed


def best(fn, events: int) -> float:
    """Return the best events/s of ``REPEATS`` runs of ``fn``."""
    return max(events / fn(events) for _ in range(REPEATS))


def main(argv: list[str]) -> int:
    """Print the figures."""
    events = int(argv[1]) if len(argv) > 1 else 1_000_000
    print(f"scheduler hold benchmark: {PENDING:,} pending, {events:,} events, best of {REPEATS}")
    bare = best(bare_heapq, events)
    fast = best(engine_fast, events)
    timer = best(engine_timer, events)
    print(f"  bare heapq (t, seq, cb, args)   {bare / 1e6:6.2f}M events/s   ratio 1.00")
    print(f"  Scheduler.call_at_fast + run_for {fast / 1e6:6.2f}M events/s   ratio {fast / bare:.2f}")
    print(f"  Scheduler.call_later + run_for   {timer / 1e6:6.2f}M events/s   ratio {timer / bare:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
