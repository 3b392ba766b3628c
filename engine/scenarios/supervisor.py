"""The supervisor of a workload's processes: crash and restart, and read a topic to its end.

A workload's process is a generator the harness steps (:meth:`~engine.scenarios.harness.Run.drive`);
it yields :class:`Sleep` to wait simulated time, or :class:`Await` to wait for a delivery report
(:class:`ReportWaits` wakes it the moment the report is queued, instead of a poll every simulated
millisecond). Two loops recur in every workload, and live here once:

- :func:`supervise`: a client that may crash at its named crash points and is restarted. Each step
  first draws whether to crash (``rng.random() < crash_p``, then the point with ``rng.choice``),
  then steps the worker; a step that did work sleeps 1 ms, an idle one ``poll_ms``. A crash counts,
  sleeps 50-300 ms, restarts the worker's database if it is down, and builds the next worker: a new
  generation and a new process number (a restarted client instance is a new process, as in Jepsen).
- :func:`poll_until_idle`: poll until ``idle_polls`` polls in a row return nothing, with a callback per
  message (the final reads, the judges' read_committed reads of an output topic).
- :func:`final_read`: every partition of every topic read to its end (``%eos_check``, the pytest plugin).

Invariant: both loops make the same calls, in the same order, as the copies they replaced, so the
runs (and their fingerprints) are the same; where the copies differed, the difference is a parameter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from engine.errors import IllegalStateError, KafkaError
from engine.outbox.relay import RelayCrashed

if TYPE_CHECKING:
    from engine.cluster import Cluster
    from engine.scenarios.harness import Run

__all__ = [
    "CHECK_READER",
    "CLIENT_ERRORS",
    "REPORT_AWAIT",
    "REPORT_BACKSTOP_MS",
    "Await",
    "Crashes",
    "Process",
    "ReportWaits",
    "Sleep",
    "Worker",
    "await_report",
    "check_reader_id",
    "counter",
    "final_read",
    "is_check_reader",
    "poll_until_idle",
    "read_until_idle",
    "relay_crashes",
    "supervise",
    "supervise_consumer",
    "take_skipped",
]


class Sleep:
    """Yielded by a process: do not run me again for ``ms`` simulated milliseconds."""

    __slots__ = ("ms",)

    def __init__(self, ms: int) -> None:
        self.ms = ms


class Await:
    """Yielded by a process: do not run me again for ``ms`` simulated ms, unless I am woken sooner.

    :meth:`~engine.scenarios.harness.Run.wake` wakes the process at once (a :class:`ReportWaits`
    does, when the report the process waits on is queued); ``ms`` is the backstop for what sends
    no wake (the producer crashed: its reports are gone).
    """

    __slots__ = ("ms",)

    def __init__(self, ms: int) -> None:
        self.ms = ms


#: How long a process waiting on a delivery report sleeps at most before it looks again (a
#: crashed producer queues no report; every other outcome, success or error, queues one).
REPORT_BACKSTOP_MS = 100

Process = Generator[Any, None, None]


class ReportWaits:
    """Wake the process waiting on a record's delivery report when that report is queued.

    It sets the producer's ``deliveries.on_queued`` hook, so one serves a producer at a time (a
    new one for the same producer takes the hook over, and the waits the old one held are
    dropped; the request-reply workload makes one per record its single process waits on).
    A process calls
    :meth:`expect` with the record's ``on_delivery`` callback before it produces the record,
    then yields :data:`REPORT_AWAIT` until ``poll`` has served the report. The report is served
    exactly as before (by ``poll``); only the moment the process looks changes.
    """

    def __init__(self, run: Run, producer: Any) -> None:
        self._run = run
        #: on_delivery callback -> the process number waiting on it (looked up, never iterated)
        self._waiting: dict[Any, int] = {}
        producer.deliveries.on_queued = self._queued

    def expect(self, cb: Any, proc: int) -> None:
        """Wake ``proc`` when the report of the record produced with callback ``cb`` is queued."""
        self._waiting[cb] = proc

    def forget(self, cb: Any) -> None:
        """Stop waiting on ``cb`` (its produce raised, so no report will come)."""
        self._waiting.pop(cb, None)

    def _queued(self, cb: Any) -> None:
        proc = self._waiting.pop(cb, None)
        if proc is not None:
            self._run.wake(proc)


#: What a process waiting on a delivery report yields (immutable, so one instance serves all).
REPORT_AWAIT = Await(REPORT_BACKSTOP_MS)


def await_report(producer: Any, box: list[Any]) -> Generator[Any, None, bool]:
    """Wait until ``box`` holds a delivery report (``poll`` serves it); return False if the producer crashed.

    The record's callback appends to ``box`` and was registered with :meth:`ReportWaits.expect`.
    """
    while True:
        producer.poll(0)
        if box:
            return True
        if not producer.is_up:
            return False
        yield REPORT_AWAIT


class Worker(Protocol):
    """A supervised client: one step does a bounded piece of work, or raises its crash at ``crash_at``."""

    def step(self, *, crash_at: str | None = None) -> int:
        """Do one step; return how much work it did (0: idle)."""
        ...


W = TypeVar("W", bound=Worker)

#: What a consumer's step may raise that only makes the step idle (a fetch or a commit that failed).
CLIENT_ERRORS: tuple[type[Exception], ...] = (KafkaError, IllegalStateError)


@dataclasses.dataclass(frozen=True)
class Crashes:
    """How a supervised worker crashes: its exception, the points to draw from, the chance a step crashes.

    ``on_crash`` is called with the crashed worker: count it (:func:`counter`); a relay also takes
    its database connection down (:func:`relay_crashes`).
    """

    error: type[Exception]
    points: Sequence[str]
    p: float
    on_crash: Callable[[Any], None]


def supervise(
    run: Run,
    proc: int,
    make: Callable[[int, int], W],
    crashes: Crashes,
    *,
    restart: Any,
    poll_ms: int,
    errors: tuple[type[Exception], ...] = (),
    after_step: Callable[[W], None] | None = None,
    done: Callable[[W, int], bool] | None = None,
) -> Process:
    """Run a worker that may crash, restarting it, until ``done`` says so (or for ever: a service).

    Parameters
    ----------
    run : Run
        The run: its ``workload`` random stream draws the crashes and the restart delays.
    proc : int
        The process number of the first worker.
    make : callable
        ``make(generation, proc)`` builds a worker (its clients named after the generation).
    crashes : Crashes
        How the worker crashes, and what a crash does besides restarting it.
    restart : Node
        The node restarted after a crash when it is down (the worker's database).
    poll_ms : int
        How long an idle step sleeps (a step that did work sleeps 1 ms).
    errors : tuple of types
        Errors a step may raise that count as an idle step (a consumer's); a relay's propagate.
    after_step : callable, optional
        Called with the worker after every step that did not crash (e.g. to count its skipped duplicates).
    done : callable, optional
        ``done(worker, idle_steps)`` after each step: True ends the process. None: it serves for ever.
    """
    rng = run.rng
    gen = 0
    while True:
        worker = make(gen, proc)
        idle = 0
        while True:
            point = rng.choice(crashes.points) if rng.random() < crashes.p else None
            try:
                n = worker.step(crash_at=point)
            except crashes.error:
                crashes.on_crash(worker)
                break
            except errors:
                n = 0
            if after_step is not None:
                after_step(worker)
            idle = 0 if n else idle + 1
            if done is not None and done(worker, idle):
                return
            yield Sleep(1 if n else poll_ms)
        yield Sleep(rng.randint(50, 300))
        run.restart_if_down(restart)
        gen += 1
        proc = run.new_process()


def supervise_consumer(
    run: Run,
    proc: int,
    make: Callable[[int, int], W],
    crashes: Crashes,
    *,
    db: Any,
    state: object,
    poll_ms: int,
    done: Callable[[W, int], bool] | None = None,
) -> Process:
    """:func:`supervise` a consumer that applies what it reads to ``db``, skipping what it applied before.

    A failed client call makes a step idle (:data:`CLIENT_ERRORS`); the duplicates each step
    skipped are counted in ``state.duplicates_dropped``; ``db`` is restarted after a crash.
    """
    return supervise(
        run,
        proc,
        make,
        crashes,
        restart=db,
        poll_ms=poll_ms,
        errors=CLIENT_ERRORS,
        after_step=take_skipped(state),
        done=done,
    )


def counter(state: object, key: str) -> Callable[[Any], None]:
    """Return an ``on_crash`` that counts the crash in the workload state's ``key`` field."""

    def count(_worker: Any) -> None:
        setattr(state, key, getattr(state, key) + 1)

    return count


def relay_crashes(run: Run, db: Any, state: object, points: Sequence[str], p: float) -> Crashes:
    """Return how a relay crashes: at ``points``, taking its database connection ``db`` down with it.

    Each crash is counted in ``state.relay_crashes``.
    """
    count = counter(state, "relay_crashes")

    def crash(relay: Any) -> None:
        count(relay)
        if db.is_up:
            run.world.crash(db.name)

    return Crashes(RelayCrashed, points, p, crash)


def take_skipped(state: object, key: str = "duplicates_dropped") -> Callable[[Any], None]:
    """Return an ``after_step`` that moves a consumer's count of skipped duplicates into the state's ``key``."""

    def take(worker: Any) -> None:
        setattr(state, key, getattr(state, key) + worker.skipped)
        worker.skipped = 0

    return take


#: The ``client.id`` prefix of the checker's own final readers (``eos-check-reader-1``, ...):
#: clients the checker makes, never the user, so views that name the user's clients leave them out.
CHECK_READER = "eos-check-reader"


def check_reader_id(n: int) -> str:
    """Return the ``client.id`` of a session's ``n``-th final reader (``eos-check-reader-N``)."""
    return f"{CHECK_READER}-{n}"


def is_check_reader(client_id: str) -> bool:
    """Tell whether ``client_id`` is one of the checker's final readers (:data:`CHECK_READER`)."""
    return client_id.startswith(f"{CHECK_READER}-")


def poll_until_idle(
    poll: Callable[[], Sequence[Any]], *, idle_polls: int, on_message: Callable[[Any], None] | None = None
) -> None:
    """Call ``poll`` until ``idle_polls`` polls in a row return nothing; hand each message to ``on_message``."""
    idle = 0
    while idle < idle_polls:
        msgs = poll()
        idle = 0 if msgs else idle + 1
        if on_message is not None:
            for m in msgs:
                on_message(m)


def read_until_idle(
    cluster: Cluster,
    keys: Iterable[tuple[str, int]],
    client_id: str,
    on_message: Callable[[Any], None] | None = None,
    *,
    max_records: int = 2_000,
    timeout_s: float = 0.5,
    idle_polls: int = 2,
    close: bool = True,
) -> None:
    """Read ``keys`` from the start with a read_committed consumer until it is quiet (:func:`poll_until_idle`).

    ``close``: close the reader afterwards (the copier's judge leaves it open, as it always has).
    """
    reader = cluster.consumer({"isolation.level": "read_committed", "client.id": client_id})
    reader.assign(list(keys))
    poll_until_idle(
        lambda: reader.consume(max_records, timeout=timeout_s),
        idle_polls=idle_polls,
        on_message=on_message,
    )
    if close:
        reader.close()


def final_read(cluster: Cluster, client_id: str, on_message: Callable[[Any], None] | None = None) -> None:
    """Read every partition of every topic to its end with a read_committed consumer.

    Jepsen's final reads: without them an acknowledged record that no consumer has read yet is
    reported ``unseen``. The reader is a real client of the cluster (so a cluster's
    ``ClientHistory`` records it) and moves simulated time on by its polls: it stops after three
    empty polls of one simulated second each, then closes. ``Session.check`` (``%eos_check``) and
    the pytest plugin's ``eos_cluster.check`` both read so.

    Parameters
    ----------
    cluster : Cluster
        The cluster to read; nothing happens when it has no topic.
    client_id : str
        The reader's ``client.id`` (:func:`check_reader_id`).
    on_message : callable, optional
        Called with each record read (the engine's message), in the order read: the committed
        records an end-to-end promise is judged on (:mod:`engine.check.promises`).
    """
    keys = [(t, p) for t in sorted(cluster.topics) for p in range(cluster.topics[t])]
    if keys:
        read_until_idle(cluster, keys, client_id, on_message, max_records=1000, timeout_s=1.0, idle_polls=3)
