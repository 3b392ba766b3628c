"""The bookkeeping of one producer or one consumer, whatever client library it comes from.

Role
----
The wrappers of :mod:`engine.record.confluent` and :mod:`engine.record.kafka_python` translate
their library's calls and callbacks into the few events a history is made of; a
:class:`ProducerBook` or :class:`ConsumerBook` turns those events into operations of a
:class:`~engine.record.recorder.Recorder`, following the rules of
:class:`engine.check.ClientHistory` (see :mod:`engine.record.recorder`).

Invariants
----------
* Every public method is :func:`~engine.record.recorder.guarded`: a bookkeeping failure is noted
  in the recorder's faults, never raised into the application.
* A consumer's positions are forgotten exactly when the client resets them: an assignment that
  restarts keys already assigned is recorded as an op without those keys, then one with them
  (the checker forgets the position of a key it sees leave), so a deliberate rewind is no
  ``nonmonotonic-poll``.

What it does not do
-------------------
It calls no client and decides no outcome: the wrappers map their library's errors to
``ok``/``fail``/``info`` and say when a transaction ended.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Self

from engine.check.client_history import PendingOp, PendingRecord
from engine.check.history import Key, Poll
from engine.record.recorder import Recorder, guarded

__all__ = ["ConsumerBook", "ConsumerCalls", "Passthrough", "ProducerBook", "key_of", "keys_of"]


def key_of(tp: Any) -> Key:
    """Return a client's TopicPartition (confluent-kafka's or kafka-python's) as a history key."""
    return (tp.topic, tp.partition)


def keys_of(pairs: Iterable[tuple[str, int]]) -> tuple[Key, ...]:
    """Return the ``(topic, partition)`` pairs as a sorted tuple without repeats."""
    return tuple(sorted(set(pairs)))


class ProducerBook:
    """The operations of one producer: one send op per record outside a transaction, one txn op per transaction.

    Parameters
    ----------
    recorder : Recorder
        Where the operations go; the producer takes a process id from it now.
    """

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.process = recorder.new_process()
        #: the open transaction op (from begin to the commit or abort that decides it)
        self.txn: PendingOp | None = None

    @guarded
    def produced(self, topic: str, partition: int | None, value: object, key: object = None) -> PendingRecord | None:
        """A record is being produced: it joins the open transaction, or starts its own send op."""
        rec = self.recorder
        if self.txn is not None and rec.is_open(self.txn):
            op = self.txn
        else:
            op = rec.invoke(rec.new_process(), "send")
        known = partition if partition is not None and partition >= 0 else None
        return rec.add_record(op, topic, known, value, key)

    @guarded
    def not_queued(self, record: PendingRecord | None, error: str) -> None:
        """The produce call refused the record: a send op fails; a transaction forgets the record."""
        if record is None:
            return
        if record.op.f == "send":
            self.recorder.complete(record.op, "fail", record.op.sent(offsets=False), error=error)
        else:
            self.recorder.drop_record(record)

    @guarded
    def delivered(
        self, record: PendingRecord | None, partition: int | None, offset: int | None, outcome: str, error: str | None
    ) -> None:
        """The record's delivery report: learn its partition and offset; a send op completes with ``outcome``."""
        if record is None:
            return
        self.recorder.learn(record, partition, offset if outcome == "ok" else None)
        if record.op.f == "send":
            self.recorder.complete(record.op, outcome, record.op.sent(offsets=outcome == "ok"), error=error)

    @guarded
    def begun(self) -> None:
        """A transaction began: invoke its txn op."""
        self.txn = self.recorder.invoke(self.process, "txn")

    @guarded
    def ended(self, outcome: str, error: str | None = None) -> None:
        """The open transaction is decided: ``ok`` committed, ``fail`` aborted, ``info`` unknown."""
        op, self.txn = self.txn, None
        if op is not None:
            self.recorder.complete(op, outcome, op.sent(offsets=True), error=error)


class ConsumerBook:
    """The operations of one consumer: polls, assignments, rebalances and seeks.

    Parameters
    ----------
    recorder : Recorder
        Where the operations go; the consumer takes a process id from it now.
    keys : iterable of (topic, partition)
        What the consumer is already assigned when it is wrapped (recorded as an ``assign``).
    """

    def __init__(self, recorder: Recorder, keys: Iterable[Key] = ()) -> None:
        self.recorder = recorder
        self.process = recorder.new_process()
        #: the keys of the last assign/subscribe op recorded
        self.keys: tuple[Key, ...] = ()
        #: whether the group assigns the partitions (assignment changes are then ``subscribe`` ops)
        self.subscribed = False
        #: the poll op of the poll call running now
        self.poll: PendingOp | None = None
        initial = keys_of(keys)
        if initial:
            self.assigned(initial)

    @property
    def mode(self) -> str:
        """The op an assignment change is recorded as: ``subscribe`` when the group assigns."""
        return "subscribe" if self.subscribed else "assign"

    def _record(self, ops: list[tuple[str, tuple[Key, ...]]]) -> None:
        """Record instant ops in order; a poll running now ends before them and goes on after."""
        rec = self.recorder
        running = self.poll is not None
        if self.poll is not None:
            rec.complete(self.poll, "ok", ())
        for f, keys in ops:
            rec.instant(self.process, f, keys)
            self.keys = keys
        if running:
            self.poll = rec.invoke(self.process, "poll")

    @guarded
    def assigned(self, keys: Iterable[Key], restarted: Iterable[Key] = ()) -> None:
        """The application changed the assignment to ``keys``; ``restarted`` keys lose their position first."""
        new = keys_of(keys)
        again = set(restarted) & set(self.keys)
        ops = []
        if again:
            ops.append((self.mode, tuple(k for k in self.keys if k not in again)))
        ops.append((self.mode, new))
        self._record(ops)

    @guarded
    def subscription(self, subscribed: bool) -> None:
        """``subscribe()`` (True) or ``unsubscribe()`` (False): a ``subscribe`` op with what is assigned after."""
        self.subscribed = subscribed
        self._record([("subscribe", self.keys if subscribed else ())])

    @guarded
    def rebalanced(self, keys: Iterable[Key]) -> None:
        """The group changed the assignment to ``keys``: a ``subscribe`` op if it differs."""
        new = keys_of(keys)
        if new != self.keys:
            self._record([("subscribe", new)])

    @guarded
    def partitions_moved(self, partitions: Iterable[Any], *, gained: bool) -> None:
        """The group gave (``gained``) or took back ``partitions`` (the client's TopicPartitions) in a rebalance."""
        changed = {key_of(tp) for tp in partitions}
        current = set(self.keys)
        self.rebalanced(current | changed if gained else current - changed)

    @guarded
    def seeked(self, keys: Iterable[Key]) -> None:
        """A seek of ``keys``: the assignment without them, then with them (their positions are forgotten)."""
        moved = set(keys) & set(self.keys)
        if moved:
            self._record([(self.mode, tuple(k for k in self.keys if k not in moved)), (self.mode, self.keys)])

    @guarded
    def poll_started(self) -> None:
        """A poll call starts: invoke a poll op."""
        self.poll = self.recorder.invoke(self.process, "poll")

    @guarded
    def poll_ended(self, polls: Iterable[Poll], error: str | None = None) -> None:
        """The poll call returned these records (``ok``) or raised ``error`` (``fail``, nothing read)."""
        op, self.poll = self.poll, None
        if op is None:
            return
        if error is not None:
            self.recorder.complete(op, "fail", (), error=error)
        else:
            self.recorder.complete(op, "ok", tuple(polls))


class Passthrough:
    """Attribute passthrough to the wrapped client (``_client``)."""

    _client: Any

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_client":
            raise AttributeError(name)
        return getattr(self._client, name)


class ConsumerCalls(Passthrough):
    """The consumer calls both clients' recording wrappers share: wrap, unsubscribe, assign."""

    book: ConsumerBook
    recorder: Recorder

    @classmethod
    def wrap(cls, consumer: Any, recorder: Recorder) -> Self:
        """Record an existing consumer from now on (its current assignment as an ``assign`` op)."""
        self = cls.__new__(cls)
        self._setup(consumer, recorder, [key_of(tp) for tp in consumer.assignment()])
        return self

    def _setup(self, consumer: Any, recorder: Recorder, keys: Iterable[Key]) -> None:
        self._client = consumer
        self.recorder = recorder
        self.book = ConsumerBook(recorder, keys)

    def unsubscribe(self) -> None:
        """Unsubscribe: a ``subscribe`` op with no keys."""
        self._client.unsubscribe()
        self.book.subscription(False)

    def assign(self, partitions: list[Any]) -> None:
        """Replace the assignment; every key named restarts from its given or committed offset.

        (kafka-python: an empty assignment unsubscribes, as the client does.)
        """
        self._client.assign(partitions)
        keys = keys_of(key_of(tp) for tp in partitions)
        self.book.assigned(keys, restarted=keys)

    def close(self, *args: Any, **kwargs: Any) -> None:
        """Close the consumer; a revocation inside is recorded as any rebalance is."""
        self._client.close(*args, **kwargs)


def wrap_client(client: Any, recorder: Recorder, wrappers: dict[type, Any], library: str) -> Any:
    """Wrap ``client`` with the recording wrapper of its type in ``wrappers`` (``recording()`` of each library).

    Raises
    ------
    TypeError
        If ``client`` is none of ``wrappers``' types.
    """
    for client_type, wrapper in wrappers.items():
        if isinstance(client, client_type):
            return wrapper.wrap(client, recorder)
    names = " or ".join(t.__name__ for t in wrappers)
    raise TypeError(f"recording() wraps a {library} {names}, not {type(client).__name__}")
