"""The single-threaded discrete-event scheduler.

Invariants (house style R11):

- Simulated time is an integer number of milliseconds and never goes backwards.
- Events run in the total order ``(due_ms, seq)``; ``seq`` comes from one counter, so equal
  deadlines break ties by scheduling order, the same in every process.
- Every run loop is bounded: :meth:`Scheduler.run_until` takes ``max_events`` and raises
  :class:`SimulationStalled` when the queue empties or the budget is spent.
- An event whose callback raises :class:`StopRun` ends the :meth:`Scheduler.run_for` running it:
  time stands at that event, and every event after it stays queued in order (a driver's way to
  wake at a moment the simulation decides, e.g. when a delivery report is queued).

There are no threads, no asyncio and no wall clock here. Cancelled timers stay in the heap and
are skipped when popped (cheaper than removing them), until they make up most of it: then the
heap is rebuilt without them (:meth:`Scheduler._compact`), so a run that cancels almost every
timer (request timeouts) keeps a small heap and frees what the cancelled callbacks held. The
order of the live events is the same either way: it is the total order ``(due_ms, seq)``.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Any, Protocol

#: The default bound on events for one ``run_until`` or ``run_for`` call. A run that needs more
#: passes its own ``max_events``; the bound exists so that a livelock ends in a named error.
DEFAULT_MAX_EVENTS = 50_000_000
#: Rebuild the heap when more than this many cancelled entries are in it and they are the majority.
COMPACT_MIN_CANCELLED = 512


class StopRun(Exception):  # noqa: N818 - a signal, not an error
    """Raised by an event's callback to end the :meth:`Scheduler.run_for` that runs it.

    The event counts as run; time stands at its due time instead of moving on to the end of the
    window. Only ``run_for`` catches it: a callback raises it only while the caller that asked
    for the stop is the one running the events (the harness's driver, see
    :meth:`engine.scenarios.harness.Run.wake`).
    """


class SimulationStalled(RuntimeError):  # noqa: N818 - the name says what happened to the run
    """The simulation cannot reach what was asked: the queue emptied or the budget ran out."""

    def __init__(self, reason: str, now_ms: int, events: int) -> None:
        super().__init__(f"simulation stalled at t={now_ms} ms after {events} events: {reason}")
        self.reason = reason
        self.now_ms = now_ms
        self.events = events


class Timer:
    """A handle on one scheduled callback; :meth:`cancel` stops it from running."""

    __slots__ = ("_sched", "cancelled", "due_ms", "seq")

    def __init__(self, due_ms: int, seq: int, sched: Scheduler | None = None) -> None:
        self.due_ms = due_ms
        self.seq = seq
        self.cancelled = False
        #: The scheduler whose heap still holds this timer (None once it ran or was dropped).
        self._sched = sched

    def cancel(self) -> None:
        """Cancel the callback; cancelling twice or after it ran is harmless."""
        if not self.cancelled:
            self.cancelled = True
            sched = self._sched
            if sched is not None:
                self._sched = None
                sched.timer_cancelled()

    def taken(self) -> None:
        """The scheduler took this timer out of its heap to run it: a later cancel has nothing to tell it."""
        self._sched = None

    def __repr__(self) -> str:
        state = " cancelled" if self.cancelled else ""
        return f"<Timer due_ms={self.due_ms} seq={self.seq}{state}>"


class Watch(Protocol):
    """What the scheduler tells an observed run (the world builds one from its observers' hooks)."""

    def advance(self, from_ms: int, to_ms: int) -> None:
        """Simulated time is about to move from ``from_ms`` to ``to_ms`` (nothing at ``to_ms`` ran yet)."""
        ...

    def stepped(self, callback: Callable[..., Any]) -> None:
        """One event ran; ``callback`` is what ran (a node's bound method tells which node)."""
        ...


class Scheduler:
    """A heap of ``(due_ms, seq, timer, callback, args)`` with a total order.

    Parameters
    ----------
    start_ms
        The simulated time at which the run begins.
    """

    __slots__ = ("_cancelled", "_heap", "_seq", "events_run", "now_ms", "watch")

    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms
        self.events_run = 0
        self._heap: list[tuple[int, int, Timer | None, Callable[..., Any], tuple[Any, ...]]] = []
        self._seq = 0
        #: Cancelled timers still in the heap.
        self._cancelled = 0
        #: Who is told when time moves and after each event (:class:`Watch`); None: nobody, and
        #: the run loops take their unobserved fast path.
        self.watch: Watch | None = None

    # -- scheduling -------------------------------------------------------------------------

    def call_at(self, due_ms: int, callback: Callable[..., Any], *args: Any) -> Timer:
        """Run ``callback(*args)`` at simulated time ``due_ms`` (not before now)."""
        now = self.now_ms
        if due_ms < now:
            due_ms = now
        seq = self._seq = self._seq + 1
        timer = Timer(due_ms, seq, self)
        heappush(self._heap, (due_ms, seq, timer, callback, args))
        return timer

    def call_later(self, delay_ms: int, callback: Callable[..., Any], *args: Any) -> Timer:
        """Run ``callback(*args)`` after ``delay_ms`` simulated milliseconds (negative means now)."""
        due_ms = self.now_ms + (delay_ms if delay_ms > 0 else 0)
        seq = self._seq = self._seq + 1
        timer = Timer(due_ms, seq, self)
        heappush(self._heap, (due_ms, seq, timer, callback, args))
        return timer

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` at the current time, after what is already due now.

        This is the hot path for message hops: it allocates no :class:`Timer`.
        """
        seq = self._seq = self._seq + 1
        heappush(self._heap, (self.now_ms, seq, None, callback, args))

    def call_at_fast(self, due_ms: int, callback: Callable[..., Any], *args: Any) -> None:
        """Like :meth:`call_at` without a cancellable handle; the network's hot path uses it."""
        now = self.now_ms
        seq = self._seq = self._seq + 1
        heappush(self._heap, (due_ms if due_ms > now else now, seq, None, callback, args))

    def call_later_with_timer(self, delay_ms: int, callback: Callable[..., Any], *args: Any) -> Timer:
        """Like :meth:`call_later`, and the callback is given the returned :class:`Timer` last.

        ``callback(*args, timer)``: a caller that runs the callback later itself (a node holding it
        through a pause, :meth:`engine.sim.node.Node.set_timer`) can still tell it was cancelled.
        """
        due_ms = self.now_ms + (delay_ms if delay_ms > 0 else 0)
        seq = self._seq = self._seq + 1
        timer = Timer(due_ms, seq, self)
        heappush(self._heap, (due_ms, seq, timer, callback, (*args, timer)))
        return timer

    # -- cancelled entries ------------------------------------------------------------------

    def timer_cancelled(self) -> None:
        """A timer in the heap was cancelled (:meth:`Timer.cancel` says so); compact when cancelled entries dominate."""
        n = self._cancelled = self._cancelled + 1
        if n > COMPACT_MIN_CANCELLED and 2 * n > len(self._heap):
            self._compact()

    def _compact(self) -> None:
        """Rebuild the heap (in place: run loops hold it) without its cancelled entries."""
        heap = self._heap
        heap[:] = [e for e in heap if e[2] is None or not e[2].cancelled]
        heapify(heap)
        self._cancelled = 0

    # -- running ----------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Return the number of entries in the queue, cancelled ones included."""
        return len(self._heap)

    def next_due_ms(self) -> int | None:
        """Return the due time of the next live event, or None when nothing is pending."""
        heap = self._heap
        while heap and heap[0][2] is not None and heap[0][2].cancelled:
            heappop(heap)
            self._cancelled -= 1
        return heap[0][0] if heap else None

    def step(self) -> bool:
        """Run one event. Return False when the queue holds nothing to run."""
        heap = self._heap
        while heap:
            due_ms, _seq, timer, callback, args = heappop(heap)
            if timer is not None:
                if timer.cancelled:
                    self._cancelled -= 1
                    continue
                timer.taken()
            watch = self.watch
            if watch is not None and due_ms != self.now_ms:
                watch.advance(self.now_ms, due_ms)
            self.now_ms = due_ms
            self.events_run += 1
            try:
                callback(*args)
            except StopRun:
                if watch is not None:
                    watch.stepped(callback)  # the stopping event was run: the watch is told of it too
                raise
            if watch is not None:
                watch.stepped(callback)
            return True
        return False

    def run_for(self, duration_ms: int, max_events: int = DEFAULT_MAX_EVENTS) -> int:
        """Run every event due within ``duration_ms`` from now; time then stands at the end.

        Returns the number of events run. An empty queue is not an error here: time simply
        advances. Raises :class:`SimulationStalled` if ``max_events`` is spent first.
        """
        if self.watch is not None:
            return self._run_for_watched(duration_ms, max_events)
        end_ms = self.now_ms + duration_ms
        heap = self._heap
        pop, push = heappop, heappush
        ran = 0
        # The hot loop: pop first and push back the one entry that is past the window, which
        # saves a peek per event (bench/bench_scheduler.py measures this loop).
        try:
            while heap:
                entry = pop(heap)
                due_ms, _seq, timer, callback, args = entry
                if due_ms > end_ms:
                    push(heap, entry)
                    break
                if timer is not None:
                    if timer.cancelled:
                        self._cancelled -= 1
                        continue
                    if ran >= max_events:
                        push(heap, entry)
                        raise SimulationStalled(f"budget of {max_events} events spent", self.now_ms, ran)
                    timer.taken()
                elif ran >= max_events:
                    push(heap, entry)
                    raise SimulationStalled(f"budget of {max_events} events spent", self.now_ms, ran)
                self.now_ms = due_ms
                ran += 1
                callback(*args)
        except StopRun:
            return ran  # time stands at the event that stopped the run
        finally:
            self.events_run += ran
        if end_ms > self.now_ms:
            self.now_ms = end_ms
        return ran

    def _advance_to(self, at_ms: int) -> None:
        """Move the clock forward to ``at_ms`` with no event run (never backwards)."""
        if at_ms > self.now_ms:
            watch = self.watch
            if watch is not None:
                watch.advance(self.now_ms, at_ms)
            self.now_ms = at_ms

    def _run_for_watched(self, duration_ms: int, max_events: int) -> int:
        """:meth:`run_for` with the :attr:`watch` told of every time move and every event."""
        end_ms = self.now_ms + duration_ms
        ran = 0
        while True:
            due = self.next_due_ms()
            if due is None or due > end_ms:
                break
            if ran >= max_events:
                raise SimulationStalled(f"budget of {max_events} events spent", self.now_ms, ran)
            ran += 1
            try:
                self.step()  # counts the event and tells the watch
            except StopRun:
                return ran  # time stands at the event that stopped the run
        self._advance_to(end_ms)
        return ran

    def run_until(
        self, predicate: Callable[[], bool], max_events: int = DEFAULT_MAX_EVENTS, deadline_ms: int | None = None
    ) -> int:
        """Run events until ``predicate()`` is true; return the number of events run.

        With ``deadline_ms`` the wait is bounded in simulated time as a blocking client call is:
        when the next event is due after the deadline (or none is pending), time moves to the
        deadline and the run stops there, instead of jumping to whatever comes next (a poll with a
        50 ms timeout returns after 50 ms, not at the next heartbeat).

        Raises
        ------
        SimulationStalled
            When the queue empties (without a deadline) or ``max_events`` events ran and the
            predicate still fails.
        """
        ran = 0
        while not predicate():
            if deadline_ms is not None:
                due = self.next_due_ms()
                if due is None or due > deadline_ms:
                    self._advance_to(deadline_ms)
                    return ran
            if ran >= max_events:
                raise SimulationStalled(f"budget of {max_events} events spent", self.now_ms, ran)
            if not self.step():
                raise SimulationStalled("the event queue is empty", self.now_ms, ran)
            ran += 1
        return ran

    def run_until_idle(self, max_events: int = DEFAULT_MAX_EVENTS) -> int:
        """Run until the queue is empty; raise :class:`SimulationStalled` if the budget runs out first."""
        ran = 0
        while self.next_due_ms() is not None:
            if ran >= max_events:
                raise SimulationStalled(f"budget of {max_events} events spent", self.now_ms, ran)
            self.step()
            ran += 1
        return ran
