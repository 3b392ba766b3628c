"""The producer's sender: drains the accumulator, sends Produce requests, handles their answers (Kafka's ``Sender``).

Sending
-------
The sender runs when woken (a batch filled, ``linger.ms`` passed, an answer came, a backoff
ended). Per partition, in ``(topic, partition)`` order, it sends queued batches while fewer than
``max.in.flight.requests.per.connection`` (≤ 5) are in flight. A batch waits for its leader, for
``linger.ms`` (unless full), for its retry backoff, and (idempotent) until every earlier sequence
is acknowledged. Nothing goes before the producer has an id, or while an epoch bump waits for the
in-flight requests to drain; queued batches still expire then (``delivery.timeout.ms``).

Answers (one handler per outcome, :data:`_HANDLERS`)
-----------------------------------------------------
- NONE and DUPLICATE_SEQUENCE_NUMBER: the batch is in the log.
- Any other error, first: a batch proven written by a later acknowledgement of the same epoch is
  complete; a batch past ``delivery.timeout.ms`` fails (and an idempotent producer bumps its epoch).
- OUT_OF_ORDER_SEQUENCE_NUMBER behind an unacknowledged predecessor is that predecessor's doing:
  retried. For the next expected batch the broker lost records (an unclean election): the batch
  and the later batches of the partition fail and the epoch is bumped (KIP-360).
- UNKNOWN_PRODUCER_ID: the broker forgot the producer; see :meth:`Sender._unknown_producer`.
- INVALID_PRODUCER_EPOCH, PRODUCER_FENCED: the transaction manager decides (fatal, or abortable).
- Any other retriable error is retried after ``retry.backoff.ms`` while ``retries`` allow
  (metadata errors refresh the leader first); the rest fail the batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.client.message import Message
from engine.errors import ErrorCode, KafkaError, PurgedException, exception_for
from engine.log.records import RecordBatch, none_keys
from engine.protocol import PartitionProduceResponse, ProducePartition, ProduceRequest, ProduceResponse

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.client.accumulator import PartitionQueue, ProducerBatch, RecordAccumulator
    from engine.client.base import ClientNode
    from engine.client.deliveries import Deliveries
    from engine.client.transaction_manager import TransactionManager
    from engine.config import ProducerConfig

    BatchDone = Callable[[ProducerBatch, int, KafkaError | None], None]

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


class Sender:
    """One producer's sender: the send loop and the handlers of Produce answers.

    Handed what Kafka's ``Sender(client, metadata, accumulator, ..., transactionManager)`` is: the
    network node with its metadata, the accumulator, the transaction manager, the delivery ledger.
    """

    def __init__(
        self,
        client: ClientNode,
        config: ProducerConfig,
        accumulator: RecordAccumulator,
        transaction_manager: TransactionManager,
        deliveries: Deliveries,
        metrics_totals: dict[str, int],
        batch_done: BatchDone,
    ) -> None:
        self.client = client
        self.config = config
        self.accumulator = accumulator
        self.transaction_manager = transaction_manager
        self.deliveries = deliveries
        self.metrics_totals = metrics_totals
        self.batch_done = batch_done
        self.idempotent = config.enable_idempotence
        self._wakeup_at: int | None = None

    # -- the send loop ------------------------------------------------------------------------

    def wake(self) -> None:
        """Run the send loop as soon as possible."""
        self.wake_at(self.client.world.now_ms)

    def wake_at(self, at_ms: int) -> None:
        """Run the send loop at ``at_ms`` (or earlier, if already due earlier)."""
        if self._wakeup_at is not None and self._wakeup_at <= at_ms:
            return
        self._wakeup_at = at_ms
        c = self.client
        c.call_after(at_ms - c.world.now_ms, self._run, at_ms)

    def reset(self) -> None:
        """Forget the pending wake-up (the process crashed)."""
        self._wakeup_at = None

    def _run(self, scheduled_for: int) -> None:
        if self._wakeup_at != scheduled_for:
            return
        self._wakeup_at = None
        now = self.client.world.now_ms
        if not self.transaction_manager.may_send_any():
            self._expire_queued(now)
            return
        next_wake: int | None = None
        ready: dict[int, list[list[tuple[PartitionQueue, ProducerBatch]]]] = {}
        queues = self.accumulator.queues
        for key in sorted(queues):
            wake = self._drain(queues[key], key, now, ready)
            if wake is not None:
                next_wake = wake if next_wake is None else min(next_wake, wake)
        for leader, requests in ready.items():
            for entries in requests:
                self._send(leader, entries)
        if next_wake is not None:
            self.wake_at(next_wake)

    def _drain(
        self,
        q: PartitionQueue,
        key: tuple[str, int],
        now: int,
        ready: dict[int, list[list[tuple[PartitionQueue, ProducerBatch]]]],
    ) -> int | None:
        """Take what may go from one partition into ``ready``; return when to look again (None: next wake).

        ``ready`` maps a leader to its requests: the k-th batch taken from a partition goes into
        that leader's k-th request, so a request carries at most one batch per partition (Kafka's
        ``RecordAccumulator.drain``), and partitions are taken in ``(topic, partition)`` order.
        """
        c = self.client
        tm = self.transaction_manager
        linger = self.config.linger_ms
        k = 0
        while q.queue and q.in_flight < self.config.max_in_flight_requests_per_connection:
            b = q.queue[0]
            if b.deadline_ms <= now:
                self.expire(q, b)
                continue
            if b.retry_after_ms > now:
                return b.retry_after_ms
            if b.wire is None and b.size < self.config.batch_size and len(q.queue) == 1 and now < b.created_ms + linger:
                return b.created_ms + linger
            if self.idempotent and b.base_sequence >= 0 and q.unacked and q.first_unacked_sequence() != b.base_sequence:
                return None  # a retry waits until every earlier sequence is acknowledged
            leader = c.leader_of(*key)
            if leader < 0 or not tm.may_send(b):
                if leader < 0:
                    c.refresh_metadata(self.wake)
                return b.deadline_ms  # nothing else may wake the sender before this batch expires
            q.queue.popleft()
            self._prepare(q, b)
            requests = ready.get(leader)
            if requests is None:
                requests = ready[leader] = []
            if k < len(requests):
                requests[k].append((q, b))
            else:
                requests.append([(q, b)])
            k += 1
        return None

    def _expire_queued(self, now: int) -> None:
        """Expire queued batches past ``delivery.timeout.ms`` while nothing can be sent."""
        next_wake: int | None = None
        queues = self.accumulator.queues
        for key in sorted(queues):
            q = queues[key]
            while q.queue and q.queue[0].deadline_ms <= now:
                self.expire(q, q.queue[0])
            if q.queue:
                d = q.queue[0].deadline_ms
                next_wake = d if next_wake is None else min(next_wake, d)
        if next_wake is not None:
            self.wake_at(next_wake)

    def expire(self, q: PartitionQueue, b: ProducerBatch) -> None:
        """A queued batch's ``delivery.timeout.ms`` ran out (RecordAccumulator.expiredBatches)."""
        q.queue.remove(b)
        waited = self.client.world.now_ms - b.created_ms
        last = f"; last error {b.last_error[0].name}" if b.last_error else ""
        self.fail(
            q,
            b,
            ErrorCode.REQUEST_TIMED_OUT,
            f"expiring {b.count} record(s) for {b.topic}-{b.partition}: {waited} ms has passed since batch "
            f"creation (delivery.timeout.ms){last}",
        )
        if b.base_sequence >= 0:
            self.transaction_manager.bump_epoch()  # its sequences were used: later ones are out of order

    def _prepare(self, q: PartitionQueue, b: ProducerBatch) -> None:
        """Make a batch ready to go: its wire form (sequence stamped once), counters, in flight."""
        totals = self.metrics_totals
        if b.wire is None:
            self.transaction_manager.stamp(q, b)
            b.wire = RecordBatch(
                producer_id=b.producer_id,
                producer_epoch=b.producer_epoch,
                base_sequence=b.base_sequence,
                is_transactional=b.is_transactional,
                create_time=b.created_ms,
                keys=none_keys(len(b.values)) if b.keys is None else tuple(b.keys),
                values=tuple(b.values),
                headers=tuple(b.headers) if b.headers is not None else None,
                timestamps=tuple(b.timestamps) if b.timestamps is not None else None,
                size_bytes=b.size,
            )
        else:
            totals["records_retried"] += len(b.values)
        b.attempts += 1
        q.in_flight += 1
        if self.idempotent:
            q.add_unacked(b)
        totals["records_sent"] += len(b.values)
        totals["batches_sent"] += 1

    def _send(self, leader: int, entries: list[tuple[PartitionQueue, ProducerBatch]]) -> None:
        """Send one request to ``leader`` with one batch per partition."""
        c = self.client
        cfg = self.config
        self.metrics_totals["requests_sent"] += 1
        req = ProduceRequest(
            tuple([ProducePartition(b.topic, b.partition, b.wire) for _q, b in entries]),
            cfg.acks,
            cfg.request_timeout_ms,
            cfg.transactional_id,
        )
        if cfg.acks == 0:
            c.send_oneway(f"broker-{leader}", req)
            for q, b in entries:
                q.in_flight -= 1
                self.complete(q, b, -1, None)
            return
        c.request(
            f"broker-{leader}",
            req,
            lambda resp: self._on_response(entries, resp),
            timeout_ms=cfg.request_timeout_ms,
        )

    # -- answers ------------------------------------------------------------------------------

    def _on_response(self, entries: list[tuple[PartitionQueue, ProducerBatch]], resp: ProduceResponse | None) -> None:
        if resp is None:
            for q, b in entries:
                self._on_partition(q, b, None)
        else:
            for (q, b), answer in zip(entries, resp.partitions, strict=True):
                self._on_partition(q, b, answer)
        self.wake()

    def _on_partition(self, q: PartitionQueue, b: ProducerBatch, resp: PartitionProduceResponse | None) -> None:
        q.in_flight -= 1
        if b.purged:
            return  # purge() already reported it
        if resp is not None and resp.error is ErrorCode.NONE:
            self.complete(q, b, resp.base_offset, None)
            return
        code = self.client.no_answer if resp is None else resp.error
        message = _NO_ANSWER[code] if resp is None else resp.error_message
        b.last_error = (code, message)
        if code in _MAYBE_WRITTEN:
            b.maybe_written = True
        if code is ErrorCode.DUPLICATE_SEQUENCE_NUMBER or not self._settled(q, b, code):
            _HANDLERS.get(code, Sender._on_error)(self, q, b, code, message)

    def _settled(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode) -> bool:
        """Settle an errored batch that is proven written or past its deadline, whatever the error."""
        c = self.client
        if self._proven_written(q, b):
            # A later batch of the same epoch was acknowledged, and the broker accepts sequences only
            # in order, so this one is in the log: its answer was lost. (Kafka's client never meets
            # this case, because TCP cannot lose one answer and deliver the next; our network can.)
            c.world.trace.mark(c.name, "producer: batch proven written by a later acknowledgement")
            self.complete(q, b, -1, None)
            return True
        if c.world.now_ms >= b.deadline_ms:
            self.fail(q, b, ErrorCode.REQUEST_TIMED_OUT, f"delivery.timeout.ms expired; last error {code.name}")
            self.transaction_manager.bump_epoch()
            return True
        return False

    def _on_duplicate(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        self.complete(q, b, -1, None)  # the broker has it already: a retry of an appended batch

    def _on_out_of_order(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        c = self.client
        if self._predecessor_unacked(q, b):
            c.world.trace.mark(c.name, "producer: out-of-order batch retried behind its predecessor")
            self._retry(q, b, code)
        elif self.idempotent:
            self._sequence_lost(q, b, code, message)
        else:
            self._on_error(q, b, code, message)

    def _on_unknown_producer_id(
        self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None
    ) -> None:
        if not self.idempotent:
            self._on_error(q, b, code, message)
        elif self._predecessor_unacked(q, b):
            self._sequence_lost(q, b, code, message)
        else:
            self._unknown_producer(q, b, message)

    def _on_epoch_rejected(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        tm = self.transaction_manager
        if tm.epoch_rejection_is_abortable(code):
            self.fail(q, b, code, message)
        else:
            tm.fatal(code, message)

    def _sequence_lost(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        """A sequence error the producer cannot retry: fatal, or later batches fail and the epoch is bumped."""
        tm = self.transaction_manager
        if tm.sequence_gap_is_fatal():
            tm.fatal(code, message)
            return
        self.fail_later(q, b, code, message)
        tm.bump_epoch()

    def _on_error(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        if code.retriable and b.attempts <= self.config.retries:
            self._retry(q, b, code)
            return
        self.fail(q, b, code, message)
        self.transaction_manager.bump_epoch()

    def _unknown_producer(self, q: PartitionQueue, b: ProducerBatch, message: str | None) -> None:
        """The broker forgot this producer (expired or lost state), KIP-360.

        A batch never answered before cannot be in the log: bump the epoch and send it again from
        sequence 0. A batch whose earlier attempt got no answer may be in the log already: sending
        it again under a new epoch could write it twice, so it fails with an *unknown* outcome.
        """
        c, tm = self.client, self.transaction_manager
        if not b.maybe_written:
            c.world.trace.mark(c.name, "producer: unknown producer id, epoch bumped and batch resent")
            b.retry_after_ms = c.world.now_ms + self.config.retry_backoff_ms
            q.requeue_in_order(b)
            if b in q.unacked:
                q.unacked.remove(b)
            tm.bump_epoch()
            return
        c.world.trace.mark(c.name, "producer: unknown producer id after an unanswered attempt, outcome unknown")
        self.fail(
            q,
            b,
            ErrorCode.REQUEST_TIMED_OUT,
            f"outcome unknown: an earlier attempt got no answer and the broker forgot the producer ({message})",
        )
        tm.bump_epoch()

    def _proven_written(self, q: PartitionQueue, b: ProducerBatch) -> bool:
        return (
            self.idempotent
            and b.base_sequence >= 0
            and b.producer_epoch == self.transaction_manager.producer_epoch
            and b.last_sequence <= q.last_acked_sequence
        )

    @staticmethod
    def _predecessor_unacked(q: PartitionQueue, b: ProducerBatch) -> bool:
        return b.base_sequence >= 0 and b.base_sequence != q.last_acked_sequence + 1

    def _retry(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode) -> None:
        c = self.client
        b.retry_after_ms = c.world.now_ms + self.config.retry_backoff_ms
        q.requeue_in_order(b)
        c.world.trace.emit(
            c.name,
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
            c.forget_leader(b.topic, b.partition)
            c.refresh_metadata(self.wake)
        self.wake_at(b.retry_after_ms)

    # -- completing batches -------------------------------------------------------------------

    def complete(self, q: PartitionQueue, b: ProducerBatch, base_offset: int, err: KafkaError | None) -> None:
        """Settle a batch: written at ``base_offset`` (``err`` None) or failed; queue its reports."""
        c = self.client
        if self.idempotent and b in q.unacked:
            q.unacked.remove(b)
            if err is None:
                q.last_acked_sequence = max(q.last_acked_sequence, b.last_sequence)
        n = len(b.values)
        self.deliveries.outstanding -= n
        self.metrics_totals["records_acked" if err is None else "records_failed"] += n
        c.world.trace.emit(
            c.name,
            "state",
            events.PRODUCE_DONE if err is None else events.PRODUCE_FAILED,
            ("tp", f"{b.topic}-{b.partition}"),
            ("offset", base_offset),
            ("seq", b.base_sequence),
            ("n", n),
            ("error", None if err is None else type(err).__name__),
        )
        self.batch_done(b, base_offset, err)
        if err is not None:
            self.transaction_manager.on_send_error(err)
        if b.callbacks is not None:
            report = self.deliveries.report
            for i, cb in enumerate(b.callbacks):
                if cb is not None:
                    off = base_offset + i if base_offset >= 0 else -1
                    msg = Message(b.topic, b.partition, off, b.key(i), b.values[i], error=err, timestamp=b.timestamp(i))
                    report(cb, err, msg)

    def fail(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        """Fail a batch with the exception of ``code``."""
        self.complete(q, b, -1, exception_for(code, message, topic=b.topic, partition=b.partition))

    def fail_later(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        """A sequence error the producer cannot retry: fail this batch and the later sequenced ones."""
        self.fail(q, b, code, message)
        for other in [x for x in list(q.unacked) + list(q.queue) if x.base_sequence > b.base_sequence]:
            if other in q.queue:
                q.queue.remove(other)
            if other in q.unacked and other.attempts and other.last_error is None:
                continue  # still in flight; its own response will fail it
            self.fail(q, other, code, f"an earlier batch of {b.topic}-{b.partition} failed: {message}")

    def fail_all(self, err: KafkaError) -> None:
        """Fail every queued and unacknowledged batch with ``err`` (the producer's fatal error)."""
        for q in self.accumulator.queues.values():
            for b in list(q.queue) + [x for x in q.unacked if x not in q.queue]:
                self.complete(q, b, -1, err)
            q.queue.clear()
            q.unacked = []

    def purge_in_flight(self) -> int:
        """Fail the batches sent but not answered (their outcome is unknown); return how many."""
        n = 0
        for q in self.accumulator.queues.values():
            for b in [x for x in q.queue if x.wire is not None] + [x for x in q.unacked if x not in q.queue]:
                if b in q.queue:
                    q.queue.remove(b)
                b.purged = True
                self.complete(
                    q, b, -1, PurgedException("purged while in flight: the outcome is unknown", in_flight=True)
                )
                n += 1
                self.transaction_manager.bump_epoch()
        return n

    def drop_queued(self, select: Callable[[ProducerBatch], bool], error: Callable[[], KafkaError]) -> int:
        """Remove the queued batches ``select`` picks and fail each with ``error()``; return how many."""
        n = 0
        for q in self.accumulator.queues.values():
            for b in [x for x in q.queue if select(x)]:
                q.queue.remove(b)
                self.complete(q, b, -1, error())
                n += 1
        return n


#: One handler per answer family; any other code goes to :meth:`Sender._on_error`.
_HANDLERS: dict[ErrorCode, Callable[[Sender, PartitionQueue, ProducerBatch, ErrorCode, str | None], None]] = {
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: Sender._on_duplicate,
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: Sender._on_out_of_order,
    ErrorCode.UNKNOWN_PRODUCER_ID: Sender._on_unknown_producer_id,
    ErrorCode.INVALID_PRODUCER_EPOCH: Sender._on_epoch_rejected,
    ErrorCode.PRODUCER_FENCED: Sender._on_epoch_rejected,
}
