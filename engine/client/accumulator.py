"""The producer's record accumulator: open batches per partition, and the in-flight ledger.

A record joins the open batch of its partition; the batch closes when adding a record would
pass ``batch.size`` and becomes sendable when closed or ``linger.ms`` after it opened.

Per partition, an idempotent producer keeps its *unacknowledged* batches ordered by sequence
(Kafka's ``inflightBatchesBySequence``). A batch coming back for a retry is put back into the
queue in sequence order, and may be sent again only when it is the lowest unacknowledged
sequence: that is how a producer with 5 requests in flight keeps the log in send order after
an OUT_OF_ORDER_SEQUENCE_NUMBER caused by an earlier batch's failure.
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import TYPE_CHECKING, Any

from engine.client.partitioner import partition_for_key
from engine.log.records import NO_SEQUENCE, estimate_size

if TYPE_CHECKING:
    import random

#: Per-record overhead used for ``batch.size`` accounting.
RECORD_OVERHEAD_BYTES = 8

#: The types a record's key and value may have (confluent-kafka takes bytes or str; None is a null).
VALUE_TYPES = frozenset({bytes, bytearray, str, type(None)})


def record_size(key: Any, value: Any) -> int:
    """Return a record's size as ``batch.size`` and ``max.request.size`` count it."""
    return RECORD_OVERHEAD_BYTES + (len(key) if key is not None else 0) + (len(value) if value is not None else 0)


def check_record(topic: Any, value: Any, key: Any, partition: Any, cb: Any, timestamp: Any, headers: Any) -> None:
    """Reject a bad produce() argument with a one-line TypeError/ValueError that says what to pass."""
    if not isinstance(topic, str) or not topic:
        raise TypeError(f"produce: topic must be a non-empty str, not {topic!r}")
    for name, x in (("value", value), ("key", key)):
        if type(x) not in VALUE_TYPES:
            msg = f"produce: {name} must be bytes, str or None, not {type(x).__name__}; encode it first"
            raise TypeError(msg)
    if isinstance(partition, bool) or not isinstance(partition, int):
        raise TypeError(f"produce: partition must be an int (-1 lets the partitioner choose), not {partition!r}")
    if partition < -1:
        raise ValueError(f"produce: partition must be >= 0, or -1 to let the partitioner choose; got {partition}")
    if cb is not None and not callable(cb):
        raise TypeError("produce: on_delivery must be a function (err, msg) or None")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0:
        raise ValueError(f"produce: timestamp must be an int >= 0 in ms (0: now), not {timestamp!r}")
    if headers is not None:
        pairs = headers.items() if isinstance(headers, dict) else headers
        if not isinstance(headers, (dict, list, tuple)) or not all(
            isinstance(h, tuple) and len(h) == 2 and isinstance(h[0], str) and type(h[1]) in VALUE_TYPES
            for h in (tuple(x) if isinstance(x, list) else x for x in pairs)
        ):
            msg = "produce: headers must be a dict or a list of (str, bytes|str|None) pairs"
            raise TypeError(msg)


class ProducerBatch:
    """A batch on the producer side: mutable until sent, then retried as is."""

    __slots__ = (
        "attempts",
        "base_sequence",
        "callbacks",
        "created_ms",
        "deadline_ms",
        "headers",
        "is_transactional",
        "keys",
        "last_error",
        "maybe_written",
        "partition",
        "producer_epoch",
        "producer_id",
        "purged",
        "retry_after_ms",
        "size",
        "timestamps",
        "topic",
        "values",
        "wire",
    )

    def __init__(self, topic: str, partition: int, now_ms: int, deadline_ms: int) -> None:
        self.topic = topic
        self.partition = partition
        #: sparse columns (see :func:`_extend_sparse`): None while every key is None, every
        #: timestamp is ``created_ms``, every header list and callback is None (the common case
        #: costs no list per batch)
        self.keys: list[Any] | None = None
        self.values: list[Any] = []
        self.headers: list[Any] | None = None
        self.timestamps: list[int] | None = None
        self.callbacks: list[Any] | None = None
        self.size = 61
        self.created_ms = now_ms
        self.deadline_ms = deadline_ms
        self.base_sequence = NO_SEQUENCE
        self.producer_id = -1
        self.producer_epoch = -1
        self.attempts = 0
        self.is_transactional = False
        self.last_error: Any = None
        #: an attempt got no definite answer (timeout, NOT_LEADER after append...): it may be in a log
        self.maybe_written = False
        self.retry_after_ms = 0
        self.wire: Any = None
        #: Producer.purge() reported it already; its answer, if one comes, is ignored
        self.purged = False

    @property
    def count(self) -> int:
        """Return the number of records."""
        return len(self.values)

    @property
    def last_sequence(self) -> int:
        """Return the sequence of the last record, or -1 before one is assigned."""
        return self.base_sequence + len(self.values) - 1 if self.base_sequence >= 0 else NO_SEQUENCE

    def add(self, key: Any, value: Any, headers: Any, timestamp: int, callback: Any, size: int) -> None:
        """Append one record."""
        n = len(self.values)
        self.keys = _extend_sparse(self.keys, key, n)
        self.values.append(value)
        self.timestamps = _extend_sparse(self.timestamps, timestamp, n, default=self.created_ms)
        self.headers = _extend_sparse(self.headers, headers, n)
        self.callbacks = _extend_sparse(self.callbacks, callback, n)
        self.size += size

    def add_many(self, keys: list[Any] | None, values: list[Any], timestamp: int, callback: Any) -> None:
        """Append several records at once (``produce_batch``)."""
        n = len(self.values)
        m = len(values)
        if keys is not None and keys.count(None) < m:
            if self.keys is None:
                self.keys = [None] * n
            self.keys.extend(keys)
        elif self.keys is not None:
            self.keys.extend([None] * m)
        self.values.extend(values)
        self.timestamps = _extend_sparse(self.timestamps, timestamp, n, m, default=self.created_ms)
        self.headers = _extend_sparse(self.headers, None, n, m)
        self.callbacks = _extend_sparse(self.callbacks, callback, n, m)
        self.size = estimate_size(self.keys or (), self.values)

    def key(self, i: int) -> Any:
        """Return record ``i``'s key."""
        return None if self.keys is None else self.keys[i]

    def timestamp(self, i: int) -> int:
        """Return record ``i``'s timestamp."""
        return self.created_ms if self.timestamps is None else self.timestamps[i]

    def __repr__(self) -> str:
        return (
            f"<ProducerBatch {self.topic}-{self.partition} n={self.count} seq={self.base_sequence} "
            f"attempts={self.attempts}>"
        )


def _extend_sparse(column: list[Any] | None, item: Any, n: int, m: int = 1, default: Any = None) -> list[Any] | None:
    """Return ``column`` (``n`` items so far) with ``item`` added ``m`` times; None while every item is ``default``."""
    if item != default:
        if column is None:
            column = [default] * n
        column.extend([item] * m)
    elif column is not None:
        column.extend([default] * m)
    return column


class PartitionQueue:
    """The batches of one partition: queued (not yet sent, or back for retry) and unacknowledged."""

    __slots__ = ("in_flight", "last_acked_sequence", "next_sequence", "queue", "unacked")

    def __init__(self) -> None:
        self.queue: deque[ProducerBatch] = deque()
        self.unacked: list[ProducerBatch] = []
        self.in_flight = 0
        self.next_sequence = 0
        self.last_acked_sequence = -1

    def open_batch(self) -> ProducerBatch | None:
        """Return the last queued batch if it was never sent (records may still join it)."""
        if self.queue:
            b = self.queue[-1]
            if b.attempts == 0 and b.wire is None:
                return b
        return None

    def requeue_in_order(self, batch: ProducerBatch) -> None:
        """Put a batch back for retry, before later sequences (insertInSequenceOrder)."""
        if batch.base_sequence < 0:
            self.queue.appendleft(batch)
            return
        items = list(self.queue)
        seqs = [b.base_sequence if b.base_sequence >= 0 else 1 << 62 for b in items]
        i = bisect.bisect_left(seqs, batch.base_sequence)
        items.insert(i, batch)
        self.queue = deque(items)

    def add_unacked(self, batch: ProducerBatch) -> None:
        """Track a sent batch until it is acknowledged or fails for good."""
        if batch in self.unacked:
            return
        seqs = [b.base_sequence for b in self.unacked]
        self.unacked.insert(bisect.bisect_left(seqs, batch.base_sequence), batch)

    def first_unacked_sequence(self) -> int:
        """Return the lowest unacknowledged sequence, or -1."""
        return self.unacked[0].base_sequence if self.unacked else NO_SEQUENCE


class RecordAccumulator:
    """The batches of every partition, and how a record joins one (Kafka's ``RecordAccumulator``).

    A record without a key goes to its topic's *sticky* partition until that partition's batch
    is full; then the sticky partition moves on (KIP-480). A keyed record goes by murmur2.
    """

    def __init__(self, rng: random.Random, batch_size: int, delivery_timeout_ms: int) -> None:
        self.rng = rng
        self.batch_size = batch_size
        self.delivery_timeout_ms = delivery_timeout_ms
        self.queues: dict[tuple[str, int], PartitionQueue] = {}
        self.sticky: dict[str, int] = {}

    def queue(self, topic: str, partition: int) -> PartitionQueue:
        """Return the queue of ``(topic, partition)``, made on first use."""
        key = (topic, partition)
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = PartitionQueue()
        return q

    def choose_partition(self, topic: str, key: Any, partitions: int) -> int:
        """Return the partition of a record (murmur2 of the key, else the sticky partition)."""
        if key is not None:
            return partition_for_key(key, partitions)
        p = self.sticky.get(topic)
        if p is None:
            p = self.sticky[topic] = self.rng.randrange(partitions)
        return p

    def append(
        self, topic: str, p: int, partitions: int, key: Any, value: Any, headers: Any, ts: int, cb: Any, now_ms: int
    ) -> ProducerBatch:
        """Add one record to the open batch of ``(topic, p)`` (or of the next sticky partition); return it."""
        q = self.queue(topic, p)
        size = record_size(key, value)
        b = q.open_batch()
        if b is None or (b.size + size > self.batch_size and b.count > 0):
            if b is not None and key is None:
                self.sticky.pop(topic, None)  # KIP-480: a full batch moves the sticky partition on
                p2 = self.choose_partition(topic, None, partitions)
                if p2 != p:
                    return self.append(topic, p2, partitions, key, value, headers, ts, cb, now_ms)
            b = ProducerBatch(topic, p, now_ms, now_ms + self.delivery_timeout_ms)
            q.queue.append(b)
        b.add(key, value, headers, ts, cb, size)
        return b
