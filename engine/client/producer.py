"""The producer: confluent-kafka's API over a simulated sender with Kafka's retry rules.

Public API (as in confluent-kafka): ``produce``, ``poll``, ``flush``, ``len(producer)``, plus
``produce_batch`` (many values in one call, for benchmarks) and ``metrics()``. Times given to
``poll`` and ``flush`` are *simulated* seconds: waiting is what moves the simulation on.

Idempotence (``enable.idempotence``, on by default as in Kafka ≥ 3.0)
---------------------------------------------------------------------
- The producer gets a producer id and epoch (InitProducerId) before it sends anything.
- Each partition has a sequence; a batch gets its base sequence when first sent and keeps it
  across retries, so the broker can recognise a retry (dedup window of 5 batches).
- At most ``max.in.flight.requests.per.connection`` (≤ 5) batches per partition are in flight.
- A retriable error puts the batch back *in sequence order*; it is resent only when it is the
  lowest unacknowledged sequence, so later batches wait and the log keeps send order.
- OUT_OF_ORDER_SEQUENCE_NUMBER for a batch whose predecessor is not yet acknowledged is a
  consequence of that predecessor's failure: retried. For the next expected batch it means the
  broker lost records (e.g. an unclean election): the batch and the later batches of the
  partition fail with ``OutOfOrderSequenceException`` and the producer bumps its epoch and
  restarts sequences (Kafka ≥ 2.5, KIP-360), once nothing else is in flight.

When a record cannot be sent (Kafka's ``RecordAccumulator`` and ``KafkaProducer.waitOnMetadata``)
----------------------------------------------------------------------------------------------
- A record for a topic the producer has no metadata for, or for a partition number at or above
  the topic's partition count, waits for metadata (refreshed with exponential backoff, see
  ``engine/client/base.py``) for at most ``max.block.ms``; then its delivery report carries
  ``UnknownTopicOrPartitionException`` saying how long it waited. (Kafka's ``send()`` blocks for
  that time and throws ``TimeoutException``; confluent-kafka reports ``UNKNOWN_TOPIC_OR_PART``
  in the delivery report, as here.)
- A batch that waits in the queue (no leader, no producer id, a retry behind its predecessor)
  expires ``delivery.timeout.ms`` after it was created, with ``TimeoutException``.
- A record larger than ``max.request.size`` fails at once with ``RecordTooLargeException``.
- Every failed record reaches its ``on_delivery`` callback (if one was given) on the next
  ``poll``/``flush``; a transactional producer's transaction becomes abortable.
- Bad arguments (a value that is not bytes, str or None, a negative partition, headers of the
  wrong shape) raise ``TypeError``/``ValueError`` at once and change nothing.

What is simplified: one partition per produce request; ``max.in.flight.requests.per.connection``
is enforced per partition; no compression, no ``buffer.memory`` back-pressure. Values and keys
are kept as given (``str`` stays ``str``; confluent-kafka encodes it as UTF-8 bytes).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from engine.args import call_wait_ms, wait_ms
from engine.client.accumulator import RECORD_OVERHEAD_BYTES, PartitionQueue, ProducerBatch
from engine.client.base import ClientNode
from engine.client.message import Message
from engine.client.partitioner import partition_for_key
from engine.config import IGNORED_CLIENT_KEYS, ProducerConfig, parse_config
from engine.errors import (
    ErrorCode,
    IllegalStateError,
    KafkaError,
    PurgedException,
    RecordTooLargeException,
    UnknownTopicOrPartitionException,
    exception_for,
)
from engine.log.records import RecordBatch, none_keys
from engine.protocol import InitProducerIdRequest, InitProducerIdResponse, ProduceRequest, ProduceResponse
from engine.sim import events
from engine.sim.node import NodeStatus
from engine.sim.scheduler import SimulationStalled

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.client.observer import ProducerObserver
    from engine.sim.world import World

#: Errors after which the client refreshes metadata before retrying.
_METADATA_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)


#: What the application reads when a produce request got no answer (``RpcNode.no_answer``).
_NO_ANSWER = {
    ErrorCode.REQUEST_TIMED_OUT: "no response within request.timeout.ms",
    ErrorCode.NETWORK_EXCEPTION: "the connection to the leader closed before it answered (its process died)",
}


#: Answers after which an attempt may still have been appended (KAFKA-13574): its outcome is unknown.
_MAYBE_WRITTEN = frozenset(
    {
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.UNKNOWN_SERVER_ERROR,
    }
)


class Producer(ClientNode):
    """A simulated Kafka producer (see the module docstring)."""

    def __init__(self, world: World, bootstrap: list[str], config: dict[str, Any] | None = None) -> None:
        self.config: ProducerConfig = parse_config(
            ProducerConfig, config, what="producer", extra_keys=IGNORED_CLIENT_KEYS
        )
        name = self.config.client_id or f"producer-{len([n for n in world.nodes if n.startswith('producer-')]) + 1}"
        super().__init__(world, name, bootstrap, self.config)
        self._rng = world.rng.stream(f"{name}:partitioner")
        #: An optional watcher of what the application does (engine/client/observer.py); None: no cost.
        self.observer: ProducerObserver | None = None
        self.idempotent = self.config.enable_idempotence
        self.producer_id = -1
        self.producer_epoch = -1
        self.fatal_error: KafkaError | None = None
        self._queues: dict[tuple[str, int], PartitionQueue] = {}
        #: records waiting for metadata: (deadline, topic, value, key, partition, cb, timestamp, headers,
        #: observer token)
        self._waiting_metadata: list[tuple[Any, ...]] = []
        self._waiting_expiry_at: int | None = None
        self._sticky: dict[str, int] = {}
        self._reports: deque[tuple[Any, KafkaError | None, Message]] = deque()
        self._outstanding = 0
        self._wakeup_at: int | None = None
        self._init_in_flight = False
        self._epoch_bump_pending = False
        self.metrics_totals = {
            "records_sent": 0,
            "records_retried": 0,
            "records_failed": 0,
            "records_acked": 0,
            "requests_sent": 0,
            "batches_sent": 0,
        }
        self._started_ms = world.now_ms
        self.refresh_metadata(self._wake)
        if self.idempotent and self.config.transactional_id is None:
            self._init_producer_id()

    # ======================================================================================
    # public API (confluent-kafka shaped)
    # ======================================================================================

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int = -1,
        on_delivery: Callable[[KafkaError | None, Message], None] | None = None,
        timestamp: int = 0,
        headers: Any = None,
        callback: Callable[[KafkaError | None, Message], None] | None = None,
    ) -> None:
        """Queue one record for ``topic``; the delivery report comes through ``poll``/``flush``.

        Raises ``TypeError``/``ValueError`` for bad arguments (nothing is queued), the producer's
        fatal error, or ``IllegalStateError`` when the producer cannot send now. Every other
        failure arrives as the record's delivery report.
        """
        cb = on_delivery if on_delivery is not None else callback
        _check_record(topic, value, key, partition, cb, timestamp, headers)
        self._check_usable()
        self.before_produce(topic)
        obs = self.observer
        token = None if obs is None else obs.on_produce(self, topic, partition, value)
        ts = timestamp or self.world.now_ms
        size = _record_size(key, value)
        if size > self.config.max_request_size:
            err = RecordTooLargeException(
                f"the record is {size} bytes, more than max.request.size={self.config.max_request_size}; "
                "send a smaller record or raise max.request.size",
                topic=topic,
            )
            self._fail_unsent(topic, partition, key, value, ts, cb, err, token)
            return
        count = self.partition_counts.get(topic)
        if count is None or partition >= count:
            self._waiting_metadata.append(
                (self.world.now_ms + self.config.max_block_ms, topic, value, key, partition, cb, ts, headers, token)
            )
            self._outstanding += 1
            self.refresh_metadata(self._drain_waiting_metadata)
            self._expire_waiting_at(self.world.now_ms + self.config.max_block_ms)
            return
        p = partition if partition >= 0 else self._choose_partition(topic, key)
        self._append(topic, p, key, value, headers, ts, cb, token)

    def produce_batch(
        self,
        topic: str,
        values: list[Any],
        *,
        partition: int,
        keys: list[Any] | None = None,
        on_delivery: Callable[[KafkaError | None, Message], None] | None = None,
    ) -> None:
        """Queue many records for one partition as one batch (an extension of the confluent API).

        The partition must be given; a partition past the topic's known count is refused.
        """
        if not isinstance(values, list) or not values:
            raise TypeError("produce_batch: values must be a non-empty list of bytes, str or None")
        if not set(map(type, values)) <= _VALUE_TYPES:
            raise TypeError("produce_batch: every value must be bytes, str or None; encode other objects first")
        if keys is not None and (not isinstance(keys, list) or len(keys) != len(values)):
            raise TypeError("produce_batch: keys must be None or a list as long as values")
        if keys is not None and not set(map(type, keys)) <= _VALUE_TYPES:
            raise TypeError("produce_batch: every key must be bytes, str or None")
        _check_record(topic, None, None, partition, on_delivery, 0, None)
        count = self.partition_counts.get(topic)
        if partition < 0 or (count is not None and partition >= count):
            msg = f"produce_batch: topic {topic!r} has no partition {partition} (it has {count}); name one that exists"
            raise ValueError(msg)
        self._check_usable()
        self.before_produce(topic)
        q = self._queue(topic, partition)
        now = self._sched.now_ms
        b = ProducerBatch(topic, partition, now, now + self.config.delivery_timeout_ms)
        b.add_many(keys, values, now, on_delivery)
        obs = self.observer
        if obs is not None:
            obs.on_produce_batch(self, b)
        q.queue.append(b)
        self._outstanding += len(values)
        self._wake()

    def poll(self, timeout: float | None = 0) -> int:
        """Let ``timeout`` simulated seconds pass, then serve delivery reports; return how many."""
        ms = wait_ms(timeout, "poll", default="no wait")
        if ms:
            self.world.run_for(ms)
        return self._serve_reports()

    def flush(self, timeout: float | None = None, max_events: int = 50_000_000) -> int:
        """Run the simulation until every queued record is delivered or failed; return those left.

        With ``timeout`` (simulated seconds) stop after that long; None or -1 wait until
        ``delivery.timeout.ms`` has resolved every record.
        """
        # Without a timeout, delivery.timeout.ms bounds the wait: every record is resolved by then.
        end = self.world.now_ms + call_wait_ms(
            timeout, "flush", self.config.delivery_timeout_ms + self.config.request_timeout_ms
        )
        sched = self.world.scheduler
        # world.run_until(lambda: outstanding == 0 or fatal or not up, deadline_ms=end), inlined.
        step = sched.step
        heap = sched._heap
        ran = 0
        while self._outstanding and self.fatal_error is None and self.status is NodeStatus.UP:
            top = heap[0] if heap else None
            if top is None or top[0] > end or (top[2] is not None and top[2].cancelled and _due_after(sched, end)):
                sched._advance_to(end)  # nothing left to run before the deadline
                break
            if ran >= max_events:
                raise SimulationStalled(f"budget of {max_events} events spent", sched.now_ms, ran)
            if not step():
                raise SimulationStalled("the event queue is empty", sched.now_ms, ran)
            ran += 1
        self._serve_reports()
        return self._outstanding

    def __len__(self) -> int:
        return self._outstanding + len(self._reports)

    def request_timeout_ms(self) -> int:
        """Return the producer's ``request.timeout.ms``."""
        return self.config.request_timeout_ms

    def metrics(self) -> dict[str, float]:
        """Return Kafka's producer metrics: rates per simulated second, and totals."""
        elapsed_s = max(1, self.world.now_ms - self._started_ms) / 1000
        t = self.metrics_totals
        return {
            "record-send-rate": t["records_sent"] / elapsed_s,
            "record-retry-rate": t["records_retried"] / elapsed_s,
            "record-error-rate": t["records_failed"] / elapsed_s,
            "record-send-total": t["records_sent"],
            "record-retry-total": t["records_retried"],
            "record-error-total": t["records_failed"],
            "batch-send-total": t["batches_sent"],
        }

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Drop records not yet delivered (confluent-kafka's ``purge``); their reports say so.

        ``in_queue``: records never sent fail with ``PurgedException`` (definitely not written).
        ``in_flight``: records sent but not yet answered fail too; they may still be written, the
        report says "outcome unknown", and an idempotent producer bumps its epoch once their
        answers are in (its sequences can no longer be trusted). ``blocking`` is accepted for
        compatibility; the engine never blocks here. A transactional producer's transaction
        becomes abortable if it lost any record.
        """
        for name, flag in (("in_queue", in_queue), ("in_flight", in_flight), ("blocking", blocking)):
            if not isinstance(flag, bool):
                raise TypeError(f"purge: {name} must be True or False")
        purged = 0
        if in_queue:
            waiting, self._waiting_metadata = self._waiting_metadata, []
            for _deadline, topic, value, key, partition, cb, ts, _headers, token in waiting:
                self._outstanding -= 1
                purged_err = PurgedException("purged from the queue")
                self._fail_unsent(topic, partition, key, value, ts, cb, purged_err, token)
                purged += 1
            for q in self._queues.values():
                for b in [x for x in q.queue if x.wire is None]:
                    q.queue.remove(b)
                    self._complete(q, b, -1, PurgedException("purged from the queue before it was sent"))
                    purged += 1
        if in_flight:
            for q in self._queues.values():
                for b in [x for x in q.queue if x.wire is not None] + [x for x in q.unacked if x not in q.queue]:
                    if b in q.queue:
                        q.queue.remove(b)
                    b.purged = True
                    self._complete(
                        q, b, -1, PurgedException("purged while in flight: the outcome is unknown", in_flight=True)
                    )
                    purged += 1
                    if self.idempotent:
                        self._bump_epoch()
        self.world.trace.emit(self.name, "state", events.PRODUCER_PURGE, ("batches", purged))

    # -- transactions belong to a producer with transactional.id ------------------------------

    def init_transactions(self, timeout: float | None = None) -> None:
        """Raise: only a producer created with ``transactional.id`` has transactions."""
        self._not_transactional("init_transactions")

    def begin_transaction(self) -> None:
        """Raise: only a producer created with ``transactional.id`` has transactions."""
        self._not_transactional("begin_transaction")

    def send_offsets_to_transaction(self, offsets: Any, group_metadata: Any, timeout: float | None = None) -> None:
        """Raise: only a producer created with ``transactional.id`` has transactions."""
        self._not_transactional("send_offsets_to_transaction")

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Raise: only a producer created with ``transactional.id`` has transactions."""
        self._not_transactional("commit_transaction")

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Raise: only a producer created with ``transactional.id`` has transactions."""
        self._not_transactional("abort_transaction")

    def _not_transactional(self, action: str) -> None:
        msg = (
            f"{action}() needs a transactional producer; {self.name} has no 'transactional.id': "
            "create it with producer({'transactional.id': 'my-app'})"
        )
        raise IllegalStateError(msg)

    # -- hooks for the transactional layer ----------------------------------------------------

    def before_produce(self, topic: str) -> None:
        """Check the client state before a record is queued (the transactional layer overrides it)."""

    def batch_is_transactional(self) -> bool:
        """Return True when new batches belong to a transaction."""
        return False

    def may_send(self, batch: ProducerBatch) -> bool:
        """Return True when a batch may go now (the transactional layer waits for AddPartitions)."""
        return True

    def on_send_error(self, err: KafkaError) -> None:
        """A record failed for good (the transactional layer makes its transaction abortable)."""

    # ======================================================================================
    # internals
    # ======================================================================================

    def _check_usable(self) -> None:
        if self.fatal_error is not None:
            raise self.fatal_error
        if not self.is_up:
            msg = f"producer {self.name} is not running ({self.status.value}); create a new producer"
            raise IllegalStateError(msg)

    def _queue(self, topic: str, partition: int) -> PartitionQueue:
        key = (topic, partition)
        q = self._queues.get(key)
        if q is None:
            q = self._queues[key] = PartitionQueue()
        return q

    def _choose_partition(self, topic: str, key: Any) -> int:
        n = self.partition_counts[topic]
        if key is not None:
            return partition_for_key(key, n)
        p = self._sticky.get(topic)
        if p is None:
            p = self._sticky[topic] = self._rng.randrange(n)
        return p

    def _append(
        self, topic: str, p: int, key: Any, value: Any, headers: Any, ts: int, cb: Any, token: object = None
    ) -> None:
        """Add one record to the open batch of ``(topic, p)``; ``token`` is the observer's (None: no observer)."""
        q = self._queue(topic, p)
        size = _record_size(key, value)
        b = q.open_batch()
        if b is None or (b.size + size > self.config.batch_size and b.count > 0):
            if b is not None and key is None:
                self._sticky.pop(topic, None)  # KIP-480: a full batch moves the sticky partition on
                p2 = self._choose_partition(topic, None)
                if p2 != p:
                    return self._append(topic, p2, key, value, headers, ts, cb, token)
            now = self.world.now_ms
            b = ProducerBatch(topic, p, now, now + self.config.delivery_timeout_ms)
            q.queue.append(b)
        b.add(key, value, headers, ts, cb, size)
        if token is not None:
            self.observer.on_record_queued(self, token, b, len(b.values) - 1)  # type: ignore[union-attr]
        self._outstanding += 1
        if b.size >= self.config.batch_size:
            self._wake()
        else:
            self._wake_at(b.created_ms + self.config.linger_ms)
        return None

    def _drain_waiting_metadata(self) -> None:
        """Send the records whose partition metadata arrived; expire those past ``max.block.ms``."""
        if not self.is_up:
            return
        waiting, self._waiting_metadata = self._waiting_metadata, []
        now = self.world.now_ms
        for entry in waiting:
            deadline, topic, value, key, partition, cb, ts, headers, token = entry
            count = self.partition_counts.get(topic)
            if count is not None and partition < count:
                self._outstanding -= 1
                p = partition if partition >= 0 else self._choose_partition(topic, key)
                self._append(topic, p, key, value, headers, ts, cb, token)
            elif now >= deadline:
                self._outstanding -= 1
                waited = self.config.max_block_ms
                what = (
                    f"topic {topic!r} not present in metadata"
                    if count is None
                    else f"partition {partition} of topic {topic!r} (partition count {count}) not present in metadata"
                )
                err = UnknownTopicOrPartitionException(
                    f"{what} after {waited} ms (max.block.ms); create it first, or produce to an existing one",
                    topic=topic,
                    partition=partition,
                )
                self._fail_unsent(topic, partition, key, value, ts, cb, err, token)
            else:
                self._waiting_metadata.append(entry)
        if self._waiting_metadata:
            self.refresh_metadata(self._drain_waiting_metadata)
            self._expire_waiting_at(min(e[0] for e in self._waiting_metadata))

    def _expire_waiting_at(self, at_ms: int) -> None:
        """Make sure the waiting records are looked at by ``at_ms`` even if no metadata answer comes."""
        if self._waiting_expiry_at is not None and self._waiting_expiry_at <= at_ms:
            return
        self._waiting_expiry_at = at_ms
        self.set_timer(max(0, at_ms - self.world.now_ms), self._on_waiting_expiry, at_ms)

    def _on_waiting_expiry(self, at_ms: int) -> None:
        if self._waiting_expiry_at == at_ms:
            self._waiting_expiry_at = None
            self._drain_waiting_metadata()

    def _fail_unsent(
        self, topic: str, partition: int, key: Any, value: Any, ts: int, cb: Any, err: KafkaError, token: object = None
    ) -> None:
        """A record that never joined a batch failed: report it, count it, tell the transactional layer.

        ``token`` is the observer's for this record (None: no observer).
        """
        self.metrics_totals["records_failed"] += 1
        self.world.trace.emit(
            self.name,
            "state",
            events.PRODUCE_FAILED,
            ("tp", f"{topic}-{partition}"),
            ("offset", -1),
            ("seq", -1),
            ("n", 1),
            ("error", type(err).__name__),
        )
        if token is not None:
            self.observer.on_record_failed(self, token, partition, err)  # type: ignore[union-attr]
        self.on_send_error(err)
        if cb is not None:
            self._report(cb, err, Message(topic, partition, -1, key, value, error=err, timestamp=ts))

    # -- producer id ------------------------------------------------------------------------

    def _init_producer_id(self) -> None:
        if self._init_in_flight:
            return
        self._init_in_flight = True
        self.request(
            self._pick_broker(),
            InitProducerIdRequest(),
            self._on_init_producer_id,
            timeout_ms=self.config.request_timeout_ms,
        )

    def _on_init_producer_id(self, resp: InitProducerIdResponse | None) -> None:
        self._init_in_flight = False
        if resp is None or resp.error is not ErrorCode.NONE:
            self.set_timer(self.config.retry_backoff_ms, self._init_producer_id)
            return
        self.producer_id, self.producer_epoch = resp.producer_id, resp.producer_epoch
        self.world.trace.emit(
            self.name, "state", events.PRODUCER_ID, ("pid", self.producer_id), ("epoch", self.producer_epoch)
        )
        self._wake()

    def _has_producer_id(self) -> bool:
        return not self.idempotent or self.producer_id >= 0

    # -- sender -----------------------------------------------------------------------------

    def _wake(self) -> None:
        self._wake_at(self._sched.now_ms)

    def _wake_at(self, at_ms: int) -> None:
        if self._wakeup_at is not None and self._wakeup_at <= at_ms:
            return
        self._wakeup_at = at_ms
        self.call_after(at_ms - self._sched.now_ms, self._run_sender, at_ms)

    def _run_sender(self, scheduled_for: int) -> None:
        if self._wakeup_at != scheduled_for:
            return
        self._wakeup_at = None
        now = self._sched.now_ms
        if not self._has_producer_id() or self._epoch_bump_pending:
            self._expire_queued(now)
            return
        next_wake: int | None = None
        linger = self.config.linger_ms
        max_in_flight = self.config.max_in_flight_requests_per_connection
        for key in sorted(self._queues):
            q = self._queues[key]
            while q.queue and q.in_flight < max_in_flight:
                b = q.queue[0]
                if b.deadline_ms <= now:
                    self._expire(q, b)
                    continue
                if b.retry_after_ms > now:
                    next_wake = b.retry_after_ms if next_wake is None else min(next_wake, b.retry_after_ms)
                    break
                if (
                    b.wire is None
                    and b.size < self.config.batch_size
                    and len(q.queue) == 1
                    and now < b.created_ms + linger
                ):
                    wake = b.created_ms + linger
                    next_wake = wake if next_wake is None else min(next_wake, wake)
                    break
                if (
                    self.idempotent
                    and b.base_sequence >= 0
                    and q.unacked
                    and q.first_unacked_sequence() != b.base_sequence
                ):
                    break  # a retry waits until every earlier sequence is acknowledged
                leader = self.leader_of(*key)
                if leader < 0 or not self.may_send(b):
                    if leader < 0:
                        self.refresh_metadata(self._wake)
                    # nothing else may wake the sender before this batch expires
                    next_wake = b.deadline_ms if next_wake is None else min(next_wake, b.deadline_ms)
                    break
                q.queue.popleft()
                self._send_batch(q, b, leader)
        if next_wake is not None:
            self._wake_at(next_wake)

    def _expire_queued(self, now: int) -> None:
        """Expire queued batches past ``delivery.timeout.ms`` while nothing can be sent."""
        next_wake: int | None = None
        for key in sorted(self._queues):
            q = self._queues[key]
            while q.queue and q.queue[0].deadline_ms <= now:
                self._expire(q, q.queue[0])
            if q.queue:
                d = q.queue[0].deadline_ms
                next_wake = d if next_wake is None else min(next_wake, d)
        if next_wake is not None:
            self._wake_at(next_wake)

    def _expire(self, q: PartitionQueue, b: ProducerBatch) -> None:
        """A queued batch's ``delivery.timeout.ms`` ran out (RecordAccumulator.expiredBatches)."""
        q.queue.remove(b)
        waited = self.world.now_ms - b.created_ms
        last = f"; last error {b.last_error[0].name}" if b.last_error else ""
        self._fail(
            q,
            b,
            ErrorCode.REQUEST_TIMED_OUT,
            f"expiring {b.count} record(s) for {b.topic}-{b.partition}: {waited} ms has passed since batch "
            f"creation (delivery.timeout.ms){last}",
        )
        if self.idempotent and b.base_sequence >= 0:
            self._bump_epoch()  # its sequences were used: the ones after it would be out of order

    def _send_batch(self, q: PartitionQueue, b: ProducerBatch, leader: int) -> None:
        if b.wire is None:
            if self.idempotent:
                b.base_sequence = q.next_sequence
                q.next_sequence += len(b.values)
                b.producer_id, b.producer_epoch = self.producer_id, self.producer_epoch
            b.is_transactional = self.batch_is_transactional()
            keys = b.keys
            b.wire = RecordBatch(
                producer_id=b.producer_id,
                producer_epoch=b.producer_epoch,
                base_sequence=b.base_sequence,
                is_transactional=b.is_transactional,
                create_time=b.created_ms,
                keys=none_keys(len(keys)) if keys.count(None) == len(keys) else tuple(keys),
                values=tuple(b.values),
                headers=tuple(b.headers) if b.headers is not None else None,
                size_bytes=b.size,
            )
        else:
            self.metrics_totals["records_retried"] += len(b.values)
        b.attempts += 1
        q.in_flight += 1
        if self.idempotent:
            q.add_unacked(b)
        self.metrics_totals["records_sent"] += len(b.values)
        self.metrics_totals["batches_sent"] += 1
        req = ProduceRequest(
            b.topic,
            b.partition,
            b.wire,
            self.config.acks,
            self.config.request_timeout_ms,
            self.config.transactional_id,
        )
        if self.config.acks == 0:
            self.send_oneway(f"broker-{leader}", req)
            q.in_flight -= 1
            self._complete(q, b, -1, None)
            return
        self.request(
            f"broker-{leader}",
            req,
            lambda resp: self._on_produce_response(q, b, resp),
            timeout_ms=self.config.request_timeout_ms,
        )

    # -- responses --------------------------------------------------------------------------

    def _on_produce_response(self, q: PartitionQueue, b: ProducerBatch, resp: ProduceResponse | None) -> None:
        q.in_flight -= 1
        if b.purged:
            self._wake()
            return  # purge() already reported it
        if resp is not None and resp.error is ErrorCode.NONE:
            self._complete(q, b, resp.base_offset, None)
            self._wake()
            return
        code = self.no_answer if resp is None else resp.error
        message = _NO_ANSWER[code] if resp is None else resp.error_message
        b.last_error = (code, message)
        if code in _MAYBE_WRITTEN:
            b.maybe_written = True
        if code is ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
            self._complete(q, b, -1, None)
        elif self._proven_written(q, b):
            # A later batch of the same epoch was acknowledged, and the broker accepts sequences only
            # in order, so this one is in the log: its answer was lost. (Kafka's client never meets
            # this case, because TCP cannot lose one answer and deliver the next; our network can.)
            self.world.trace.mark(self.name, "producer: batch proven written by a later acknowledgement")
            self._complete(q, b, -1, None)
        elif self.world.now_ms >= b.deadline_ms:
            self._fail(q, b, ErrorCode.REQUEST_TIMED_OUT, f"delivery.timeout.ms expired; last error {code.name}")
            if self.idempotent:
                self._bump_epoch()
        elif code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and self._predecessor_unacked(q, b):
            self.world.trace.mark(self.name, "producer: out-of-order batch retried behind its predecessor")
            self._retry(q, b, code)
        elif code is ErrorCode.UNKNOWN_PRODUCER_ID and self.idempotent and not self._predecessor_unacked(q, b):
            self._unknown_producer(q, b, message)
        elif code in (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID) and self.idempotent:
            self._fail_partition(q, b, code, message)
        elif code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED):
            self._epoch_rejected(q, b, code, message)
        elif code.retriable and b.attempts <= self.config.retries and self.world.now_ms < b.deadline_ms:
            self._retry(q, b, code)
        else:
            if code.retriable and self.world.now_ms >= b.deadline_ms:
                code, message = ErrorCode.REQUEST_TIMED_OUT, "delivery.timeout.ms expired"
            self._fail(q, b, code, message)
            if self.idempotent:
                self._bump_epoch()
        self._wake()

    def _unknown_producer(self, q: PartitionQueue, b: ProducerBatch, message: str | None) -> None:
        """The broker forgot this producer (expired or lost state), KIP-360.

        A batch never answered before cannot be in the log: bump the epoch and send it again from
        sequence 0. A batch whose earlier attempt got no answer may be in the log already: sending
        it again under a new epoch could write it twice, so it fails with an *unknown* outcome.
        """
        if not b.maybe_written:
            self.world.trace.mark(self.name, "producer: unknown producer id, epoch bumped and batch resent")
            b.retry_after_ms = self.world.now_ms + self.config.retry_backoff_ms
            q.requeue_in_order(b)
            if b in q.unacked:
                q.unacked.remove(b)
            self._bump_epoch()
            return
        self.world.trace.mark(self.name, "producer: unknown producer id after an unanswered attempt, outcome unknown")
        self._fail(
            q,
            b,
            ErrorCode.REQUEST_TIMED_OUT,
            f"outcome unknown: an earlier attempt got no answer and the broker forgot the producer ({message})",
        )
        self._bump_epoch()

    def _proven_written(self, q: PartitionQueue, b: ProducerBatch) -> bool:
        return (
            self.idempotent
            and b.base_sequence >= 0
            and b.producer_epoch == self.producer_epoch
            and b.last_sequence <= q.last_acked_sequence
        )

    def _predecessor_unacked(self, q: PartitionQueue, b: ProducerBatch) -> bool:
        return b.base_sequence >= 0 and b.base_sequence != q.last_acked_sequence + 1

    def _retry(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode) -> None:
        b.retry_after_ms = self.world.now_ms + self.config.retry_backoff_ms
        q.requeue_in_order(b)
        self.world.trace.emit(
            self.name,
            "state",
            events.PRODUCE_RETRY,
            ("tp", f"{b.topic}-{b.partition}"),
            ("seq", b.base_sequence),
            ("error", code.name),
            ("attempt", b.attempts),
        )
        if code in _METADATA_ERRORS:
            # The leader we knew may be gone: wait for fresh metadata before resending (Kafka marks
            # the partition's leader unknown and requests an update).
            self.forget_leader(b.topic, b.partition)
            self.refresh_metadata(self._wake)
        self._wake_at(b.retry_after_ms)

    def _complete(self, q: PartitionQueue, b: ProducerBatch, base_offset: int, err: KafkaError | None) -> None:
        if self.idempotent and b in q.unacked:
            q.unacked.remove(b)
            if err is None:
                q.last_acked_sequence = max(q.last_acked_sequence, b.last_sequence)
        n = len(b.values)
        self._outstanding -= n
        if err is None:
            self.metrics_totals["records_acked"] += n
        else:
            self.metrics_totals["records_failed"] += n
        self.world.trace.emit(
            self.name,
            "state",
            events.PRODUCE_DONE if err is None else events.PRODUCE_FAILED,
            ("tp", f"{b.topic}-{b.partition}"),
            ("offset", base_offset),
            ("seq", b.base_sequence),
            ("n", n),
            ("error", None if err is None else type(err).__name__),
        )
        obs = self.observer
        if obs is not None:
            obs.on_batch_done(self, b, base_offset, err)
        if err is not None:
            self.on_send_error(err)
        if b.callbacks is not None:
            for i, cb in enumerate(b.callbacks):
                if cb is not None:
                    off = base_offset + i if base_offset >= 0 else -1
                    self._report(
                        cb,
                        err,
                        Message(
                            b.topic,
                            b.partition,
                            off,
                            b.keys[i],
                            b.values[i],
                            error=err,
                            timestamp=b.timestamps[i],
                        ),
                    )

    def _epoch_rejected(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        """The broker refused the batch's epoch: an idempotent producer cannot go on."""
        self._fatal(code, message)

    def _fail(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        err = exception_for(code, message, topic=b.topic, partition=b.partition)
        self._complete(q, b, -1, err)

    def _fail_partition(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        """A sequence error the producer cannot retry: fail this and later sequenced batches."""
        self._fail(q, b, code, message)
        for other in [x for x in list(q.unacked) + list(q.queue) if x.base_sequence > b.base_sequence]:
            if other in q.queue:
                q.queue.remove(other)
            if other in q.unacked and other.attempts and other.last_error is None:
                continue  # still in flight; its own response will fail it
            self._fail(q, other, code, f"an earlier batch of {b.topic}-{b.partition} failed: {message}")
        self._bump_epoch()

    def _bump_epoch(self) -> None:
        """Bump the epoch and restart sequences once nothing is in flight (KIP-360)."""
        if self._epoch_bump_pending:
            return
        self._epoch_bump_pending = True
        self._try_bump_epoch()

    def _try_bump_epoch(self) -> None:
        if any(q.in_flight for q in self._queues.values()):
            self.set_timer(self.config.retry_backoff_ms, self._try_bump_epoch)
            return
        self._epoch_bump_pending = False
        self.producer_epoch += 1
        for q in self._queues.values():
            q.next_sequence = 0
            q.last_acked_sequence = -1
            for x in q.queue:
                if x.wire is not None:
                    x.wire = None  # re-stamped with the new epoch and sequences
                    x.base_sequence = -1
            q.unacked = []
        self.world.trace.emit(
            self.name,
            "state",
            events.PRODUCER_EPOCH_BUMP,
            ("pid", self.producer_id),
            ("epoch", self.producer_epoch),
        )
        self._wake()

    def _fatal(self, code: ErrorCode, message: str | None, *, context: bool = True) -> None:
        """Fail every batch with the fatal error; ``context`` adds ``[producer_id=… producer_epoch=…]``."""
        ids = {"producer_id": self.producer_id, "producer_epoch": self.producer_epoch} if context else {}
        err = exception_for(code, message, **ids)
        self.fatal_error = err
        for q in self._queues.values():
            for b in list(q.queue) + [x for x in q.unacked if x not in q.queue]:
                self._complete(q, b, -1, err)
            q.queue.clear()
            q.unacked = []

    def _report(self, cb: Any, err: KafkaError | None, msg: Message) -> None:
        if cb is not None:
            self._reports.append((cb, err, msg))

    def _serve_reports(self) -> int:
        n = 0
        while self._reports:
            cb, err, msg = self._reports.popleft()
            cb(err, msg)
            n += 1
        return n

    def on_crash(self) -> None:
        """A crashed client process loses everything it had not delivered."""
        super().on_crash()
        self._queues = {}
        self._waiting_metadata = []
        self._waiting_expiry_at = None
        self._wakeup_at = None
        self._outstanding = 0
        obs = self.observer
        if obs is not None:
            obs.on_crash(self)


#: The types a record's key and value may have (confluent-kafka takes bytes or str; None is a null).
_VALUE_TYPES = frozenset({bytes, bytearray, str, type(None)})


def _record_size(key: Any, value: Any) -> int:
    return RECORD_OVERHEAD_BYTES + (len(key) if key is not None else 0) + (len(value) if value is not None else 0)


def _check_record(topic: Any, value: Any, key: Any, partition: Any, cb: Any, timestamp: Any, headers: Any) -> None:
    """Reject a bad produce() argument with a one-line TypeError/ValueError that says what to pass."""
    if not isinstance(topic, str) or not topic:
        raise TypeError(f"produce: topic must be a non-empty str, not {topic!r}")
    for name, x in (("value", value), ("key", key)):
        if type(x) not in _VALUE_TYPES:
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
            isinstance(h, tuple) and len(h) == 2 and isinstance(h[0], str) and type(h[1]) in _VALUE_TYPES
            for h in (tuple(x) if isinstance(x, list) else x for x in pairs)
        ):
            msg = "produce: headers must be a dict or a list of (str, bytes|str|None) pairs"
            raise TypeError(msg)


def _due_after(sched: Any, end_ms: int) -> bool:
    """Return True when no live event is due by ``end_ms`` (cancelled timers on top are dropped)."""
    due = sched.next_due_ms()
    return due is None or due > end_ms
