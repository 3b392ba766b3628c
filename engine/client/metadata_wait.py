"""Records waiting for metadata: a topic or partition the producer does not know yet (Kafka's ``waitOnMetadata``).

A record for a topic the producer has no metadata for, or for a partition number at or above
the topic's partition count, waits here while metadata is refreshed (with the client's backoff,
``engine/client/base.py``), for at most ``max.block.ms``; then its delivery report carries
``UnknownTopicOrPartitionException`` saying how long it waited. Each metadata answer, and a timer
at the earliest deadline, looks the waiting records over: those whose partition is now known join
the accumulator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.errors import UnknownTopicOrPartitionException

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.client.accumulator import RecordAccumulator
    from engine.client.base import ClientNode
    from engine.client.deliveries import Deliveries
    from engine.errors import KafkaError

    #: The producer's ``_append`` (the record joins the accumulator) and ``_fail_unsent`` (the record
    #: failed before it joined a batch), handed in as callables.
    Append = Callable[..., None]
    FailUnsent = Callable[..., None]


class MetadataWait:
    """One producer's records waiting for metadata, each with its ``max.block.ms`` deadline.

    Handed the network node that refreshes metadata and sets timers (``client``), the accumulator
    that picks partitions, the delivery ledger, ``max.block.ms``, and the two callables the records
    leave through: ``append`` (partition known) and ``fail_unsent`` (``max.block.ms`` passed, or purged).
    """

    def __init__(
        self,
        client: ClientNode,
        accumulator: RecordAccumulator,
        deliveries: Deliveries,
        max_block_ms: int,
        append: Append,
        fail_unsent: FailUnsent,
    ) -> None:
        self.client = client
        self.accumulator = accumulator
        self.deliveries = deliveries
        self.max_block_ms = max_block_ms
        self.append = append
        self.fail_unsent = fail_unsent
        #: (deadline, topic, value, key, partition, cb, timestamp, headers, observer token)
        self.records: list[tuple[Any, ...]] = []
        self._expiry_at: int | None = None

    def add(
        self, topic: str, value: Any, key: Any, partition: int, cb: Any, ts: int, headers: Any, token: object
    ) -> None:
        """Hold a record until its partition is known or ``max.block.ms`` has passed."""
        c = self.client
        deadline = c.world.now_ms + self.max_block_ms
        self.records.append((deadline, topic, value, key, partition, cb, ts, headers, token))
        self.deliveries.outstanding += 1
        c.refresh_metadata(self.drain)
        self._expire_at(deadline)

    def drain(self) -> None:
        """Send the records whose partition metadata arrived; expire those past ``max.block.ms``."""
        c, deliveries = self.client, self.deliveries
        if not c.is_up:
            return
        waiting, self.records = self.records, []
        now = c.world.now_ms
        for entry in waiting:
            deadline, topic, value, key, partition, cb, ts, headers, token = entry
            count = c.partition_counts.get(topic)
            if count is not None and partition < count:
                deliveries.outstanding -= 1
                part = partition if partition >= 0 else self.accumulator.choose_partition(topic, key, count)
                self.append(topic, part, key, value, headers, ts, cb, token)
            elif now >= deadline:
                deliveries.outstanding -= 1
                what = (
                    f"topic {topic!r} not present in metadata"
                    if count is None
                    else f"partition {partition} of topic {topic!r} (partition count {count}) not present in metadata"
                )
                err = UnknownTopicOrPartitionException(
                    f"{what} after {self.max_block_ms} ms (max.block.ms); create it first, or produce to an "
                    "existing one",
                    topic=topic,
                    partition=partition,
                )
                self.fail_unsent(topic, partition, key, value, ts, cb, err, token)
            else:
                self.records.append(entry)
        if self.records:
            c.refresh_metadata(self.drain)
            self._expire_at(min(e[0] for e in self.records))

    def _expire_at(self, at_ms: int) -> None:
        """Make sure the waiting records are looked at by ``at_ms`` even if no metadata answer comes."""
        if self._expiry_at is not None and self._expiry_at <= at_ms:
            return
        self._expiry_at = at_ms
        c = self.client
        c.set_timer(max(0, at_ms - c.world.now_ms), self._on_expiry, at_ms)

    def _on_expiry(self, at_ms: int) -> None:
        if self._expiry_at == at_ms:
            self._expiry_at = None
            self.drain()

    def fail_all(self, error: Callable[[], KafkaError]) -> int:
        """Fail every waiting record with ``error()``; return how many."""
        waiting, self.records = self.records, []
        for _deadline, topic, value, key, partition, cb, ts, _headers, token in waiting:
            self.deliveries.outstanding -= 1
            self.fail_unsent(topic, partition, key, value, ts, cb, error(), token)
        return len(waiting)

    def reset(self) -> None:
        """Forget every waiting record (the process crashed)."""
        self.records = []
        self._expiry_at = None
