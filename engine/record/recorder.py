"""Recorder: the client history of real Kafka clients, in the format ``eos check`` reads.

Role
----
:class:`engine.check.ClientHistory` records the simulator's own clients. A :class:`Recorder`
is the same bookkeeping for clients that talk to a real Kafka (a broker, librdkafka's mock
cluster, the wire server): the wrappers of :mod:`engine.record.confluent` and
:mod:`engine.record.kafka_python` call :meth:`Recorder.invoke` when an operation starts and
:meth:`Recorder.complete` when its outcome is known, and :meth:`Recorder.history` gives the
history of ``docs/history-format.md``, judged by :meth:`Recorder.check` or written by
:meth:`Recorder.write` for ``eos check``.

What is recorded (the rules the wrappers follow, as :class:`~engine.check.ClientHistory` does)
-----------------------------------------------------------------------------------------------
* **Processes.** One counter hands out process ids in the order things start: a client takes
  one when it is wrapped, and each non-transactional record takes a fresh one when it is
  produced (a producer has many sends in flight; a process runs one operation at a time).
* **Sends** are ``send`` ops invoked at ``produce()``; a partition the partitioner picks is
  known only when the delivery report comes, so until then the invocation lists no micro-op.
* **Transactions** are ``txn`` ops of the producer's own process, from ``begin_transaction()``
  to the commit (``ok``) or abort (``fail``) that returned; their records join the op.
* **Polls** are ``poll`` ops of the consumer's process; assignments are ``assign`` or
  ``subscribe`` ops with the keys assigned after them.
* **Values** are text, as :func:`engine.check.client_history.record_value` writes them; **keys**
  too (:func:`~engine.check.client_history.record_key`), on sends and polls, and a record without
  a key has none in the file, so ``eos check --promise "IN -> OUT"`` can match by key.
* **Times** are milliseconds since the recorder was made, from :mod:`engine.record.realtime` (the
  one module of ``engine/record/`` that ``tests/test_tidy.py`` lets read the monotonic clock and
  take a lock): real clients run in real time, so these histories are not reproducible.

Invariants
----------
* The history is valid at any moment: operations still in flight stay invocations (read as
  ``info`` by the checker). Index order is the order the recorder saw things, under one lock,
  so a client used from several threads (delivery reports served by another thread's
  ``poll()``) still gives a well-formed history.
* It never raises into the application: a failure of the recorder's own bookkeeping is noted in
  :attr:`Recorder.faults` and the application's call goes on (:func:`guarded`).
* It never changes a record: keys and headers are not recorded, values are only read.

What it does not do
-------------------
It records nothing a wrapper did not see: records produced by an unwrapped client show up only
as reads of values no recorded op wrote, and consumer offset commits, ``send_offsets_to_transaction``
and admin calls are not in the format.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable
from typing import Any

from engine.check.client_history import OpLog, PendingOp, PendingRecord, record_key, record_value
from engine.check.jsonl import save_jsonl
from engine.record.realtime import WallClock, new_lock

__all__ = ["Recorder", "guarded"]


def guarded(hook: Callable[..., Any]) -> Callable[..., Any]:
    """Make a wrapper's hook note its own failure in its recorder's faults instead of raising.

    The decorated method's object must have a ``recorder`` attribute.
    """

    @functools.wraps(hook)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return hook(self, *args, **kwargs)
        except Exception as exc:  # the recorder's bug must not become the application's
            self.recorder.fault(hook.__name__, exc)
            return None

    return run


class Recorder(OpLog):
    """The client history of the real Kafka clients wrapped with it.

    Parameters
    ----------
    path : str or PathLike, optional
        Where :meth:`write` writes when given no path (and ``with Recorder(path):`` at exit).

    Examples
    --------
    >>> rec = Recorder()
    >>> op = rec.invoke(rec.new_process(), "poll")
    >>> rec.complete(op, "ok", ())
    >>> [(o.type, o.f) for o in rec.history()]
    [('invoke', 'poll'), ('ok', 'poll')]
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        super().__init__(new_lock())
        self.path = path
        self._clock = WallClock()
        self._processes = itertools.count()

    # -- reading ----------------------------------------------------------------------------

    def write(self, path: str | os.PathLike[str] | None = None) -> None:
        """Write the history so far as JSON Lines (:func:`engine.check.save_jsonl`) to ``path`` or :attr:`path`.

        Raises
        ------
        ValueError
            If neither ``path`` nor the recorder's :attr:`path` is set.
        """
        target = self.path if path is None else path
        if target is None:
            raise ValueError("Recorder.write needs a path: Recorder(path) or write(path)")
        save_jsonl(self.history(), target)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.path is not None:
            self.write()

    # -- bookkeeping, for the wrappers -----------------------------------------------------------

    def now_ms(self) -> int:
        """Return the milliseconds since the recorder was made (monotonic clock)."""
        return self._clock.now_ms()

    def new_process(self) -> int:
        """Return a process id never used before."""
        return next(self._processes)

    def add_record(
        self, op: PendingOp, topic: str, partition: int | None, value: Any, key: Any = None
    ) -> PendingRecord:
        """Add a record the application produced to ``op`` (its value and key as :func:`record_value` writes them)."""
        with self._lock:
            record = PendingRecord(op, topic, partition, record_value(value), record_key(key))
            op.sends.append(record)
            return record

    def drop_record(self, record: PendingRecord) -> None:
        """Take back a record that never entered the client (its produce call raised)."""
        with self._lock:
            if record in record.op.sends and record.op.announced is None:
                record.op.sends.remove(record)

    def learn(self, record: PendingRecord, partition: int | None, offset: int | None) -> None:
        """Note what a delivery report told of ``record``: its partition, and its offset when it was written."""
        with self._lock:
            if record.partition is None and partition is not None and partition >= 0:
                record.partition = partition
            if offset is not None and offset >= 0:
                record.offset = offset

    def is_open(self, op: PendingOp) -> bool:
        """Return whether ``op`` is still in flight."""
        return self._open.get(op.process) is op
