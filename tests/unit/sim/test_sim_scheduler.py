"""Unit tests of ``engine.sim.scheduler``: total order, cancellation, and the bounded run loops.

Each test schedules a handful of callbacks that append to a list, runs one loop, and compares the
list and the clock with what the invariants of the module docstring demand.
"""

from __future__ import annotations

import pytest

from engine.sim import Scheduler, SimulationStalled
from engine.sim.scheduler import StopRun


def test_events_run_in_due_order_and_ties_break_by_scheduling_order() -> None:
    s = Scheduler()
    seen: list[str] = []
    s.call_at(5, seen.append, "b")
    s.call_at(1, seen.append, "a")
    s.call_at(5, seen.append, "c")
    s.call_soon(seen.append, "now")
    s.call_at_fast(5, seen.append, "d")
    s.run_until_idle()
    assert seen == ["now", "a", "b", "c", "d"]
    assert s.now_ms == 5
    assert s.events_run == 5


def test_call_at_in_the_past_runs_now_and_time_never_goes_backwards() -> None:
    s = Scheduler(start_ms=100)
    times: list[int] = []
    s.call_at(3, lambda: times.append(s.now_ms))
    s.call_at_fast(7, lambda: times.append(s.now_ms))
    s.call_later(-5, lambda: times.append(s.now_ms))
    s.run_until_idle()
    assert times == [100, 100, 100]


def test_cancelled_timer_never_runs_and_next_due_skips_it() -> None:
    s = Scheduler()
    seen: list[int] = []
    t = s.call_later(1, seen.append, 1)
    s.call_later(2, seen.append, 2)
    t.cancel()
    t.cancel()
    assert "cancelled" in repr(t)
    assert s.next_due_ms() == 2
    s.run_until_idle()
    assert seen == [2]
    assert s.next_due_ms() is None


def test_step_returns_false_on_an_empty_queue() -> None:
    s = Scheduler()
    assert s.step() is False
    s.call_soon(lambda: None)
    assert s.step() is True
    assert s.step() is False


def test_run_for_runs_what_is_due_within_the_window_and_moves_time_to_its_end() -> None:
    s = Scheduler()
    seen: list[int] = []
    for t in (0, 10, 11):
        s.call_at(t, seen.append, t)
    assert s.run_for(10) == 2
    assert seen == [0, 10]
    assert s.now_ms == 10
    assert s.pending == 1
    assert s.run_for(100) == 1
    assert s.now_ms == 110


def test_run_for_on_an_empty_queue_only_advances_time() -> None:
    s = Scheduler()
    assert s.run_for(250) == 0
    assert s.now_ms == 250


def test_run_for_raises_when_the_budget_is_spent_and_keeps_the_unrun_event() -> None:
    s = Scheduler()

    def again() -> None:
        s.call_later(1, again)

    s.call_soon(again)
    with pytest.raises(SimulationStalled, match="budget of 10 events spent") as info:
        s.run_for(1_000, max_events=10)
    assert info.value.events == 10
    assert s.events_run == 10
    assert s.pending == 1


def test_run_until_returns_once_the_predicate_holds() -> None:
    s = Scheduler()
    seen: list[int] = []
    for t in range(10):
        s.call_at(t, seen.append, t)
    assert s.run_until(lambda: len(seen) == 3) == 3
    assert s.now_ms == 2


def test_run_until_raises_simulation_stalled_when_the_queue_empties() -> None:
    s = Scheduler()
    s.call_later(4, lambda: None)
    with pytest.raises(SimulationStalled, match="the event queue is empty") as info:
        s.run_until(lambda: False)
    assert info.value.reason == "the event queue is empty"
    assert info.value.now_ms == 4
    assert info.value.events == 1


def test_run_until_with_a_deadline_stops_the_clock_at_the_deadline_not_at_the_next_event() -> None:
    s = Scheduler()
    seen: list[int] = []
    s.call_at(30, seen.append, 30)
    s.call_at(500, seen.append, 500)  # a heartbeat far after the caller's timeout
    assert s.run_until(lambda: False, deadline_ms=50) == 1
    assert (s.now_ms, seen) == (50, [30])
    assert s.run_until(lambda: False, deadline_ms=40) == 0  # a deadline in the past moves nothing
    assert s.now_ms == 50
    assert s.run_until(lambda: bool(seen[1:]), deadline_ms=10_000) == 1
    assert s.now_ms == 500


def test_run_until_with_a_deadline_and_nothing_pending_just_lets_time_pass() -> None:
    s = Scheduler()
    assert s.run_until(lambda: False, deadline_ms=70) == 0
    assert s.now_ms == 70


def test_run_until_raises_simulation_stalled_when_the_budget_is_spent() -> None:
    s = Scheduler()

    def again() -> None:
        s.call_later(1, again)

    s.call_soon(again)
    with pytest.raises(SimulationStalled, match="budget of 50 events spent"):
        s.run_until(lambda: False, max_events=50)


def test_run_until_idle_ends_quietly_when_exactly_the_budget_was_needed() -> None:
    s = Scheduler()
    for t in range(5):
        s.call_at(t, lambda: None)
    assert s.run_until_idle(max_events=5) == 5


def test_run_until_idle_raises_when_the_queue_outlives_the_budget() -> None:
    s = Scheduler()
    for t in range(6):
        s.call_at(t, lambda: None)
    with pytest.raises(SimulationStalled):
        s.run_until_idle(max_events=5)


# -- StopRun: an event ends the run_for that runs it ---------------------------------------------


def _stop() -> None:
    raise StopRun


def test_stop_run_ends_run_for_at_its_event_and_leaves_the_rest_queued_in_order() -> None:
    s = Scheduler()
    seen: list[tuple[int, str]] = []
    s.call_at(3, lambda: seen.append((s.now_ms, "a")))
    s.call_at(5, _stop)
    s.call_at(5, lambda: seen.append((s.now_ms, "b")))
    s.call_at(8, lambda: seen.append((s.now_ms, "c")))
    assert s.run_for(100) == 2  # "a" and the stop event ran
    assert s.now_ms == 5  # time stands at the stop, not at the end of the window
    assert seen == [(3, "a")]
    assert s.events_run == 2
    s.run_for(100)
    assert seen == [(3, "a"), (5, "b"), (8, "c")]
    assert s.now_ms == 105


class _Watch:
    def __init__(self) -> None:
        self.stepped_callbacks: list[object] = []

    def advance(self, from_ms: int, to_ms: int) -> None:
        pass

    def stepped(self, callback: object) -> None:
        self.stepped_callbacks.append(callback)


def test_stop_run_ends_the_watched_run_for_too_and_the_watch_is_told_of_the_stop_event() -> None:
    s = Scheduler()
    watch = _Watch()
    s.watch = watch  # type: ignore[assignment]
    seen: list[int] = []
    s.call_at(2, seen.append, 2)
    s.call_at(4, _stop)
    s.call_at(6, seen.append, 6)
    assert s.run_for(50) == 2
    assert (s.now_ms, seen) == (4, [2])
    assert watch.stepped_callbacks[-1] is _stop
