"""The producer: confluent-kafka's API over a simulated sender with Kafka's retry rules.

Public API (as in confluent-kafka): ``produce``, ``poll``, ``flush``, ``len(producer)``, plus
``produce_batch`` (many values in one call, for benchmarks) and ``metrics()``. Times given to
``poll`` and ``flush`` are *simulated* seconds: waiting is what moves the simulation on.

Composed as Kafka's ``KafkaProducer`` is: it builds its accumulator, transaction manager, sender
(:mod:`engine.client.sender`), records waiting for metadata and delivery ledger, and hands each the
collaborators it needs; no part holds the producer (drawn in ``docs/engine.md``, "The producer, as
Kafka's is drawn"). Whether it is transactional is decided once: ``ProducerConfig.transactional``.

Idempotence (``enable.idempotence``, on by default as in Kafka ≥ 3.0)
---------------------------------------------------------------------
- The producer gets a producer id and epoch (InitProducerId) before it sends anything.
- Each partition has a sequence; a batch gets its base sequence when first sent and keeps it
  across retries, so the broker can recognise a retry (dedup window of 5 batches).
- A retriable error puts the batch back *in sequence order*; it is resent only when it is the
  lowest unacknowledged sequence, so later batches wait and the log keeps send order (the
  answers and what each leads to: :mod:`engine.client.sender`).

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

What is simplified: ``max.in.flight.requests.per.connection`` is enforced per partition (a
request to a leader holds the k-th batch taken from each of its partitions); no compression, no
``buffer.memory`` back-pressure. Values and keys are kept as given (``str`` stays ``str``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine import trace_events as events
from engine.args import call_wait_ms, wait_ms
from engine.client.accumulator import VALUE_TYPES, ProducerBatch, RecordAccumulator, check_record, record_size
from engine.client.base import ClientNode
from engine.client.deliveries import Deliveries
from engine.client.message import Message
from engine.client.metadata_wait import MetadataWait
from engine.client.sender import Sender
from engine.client.transaction_manager import TransactionManager
from engine.client.transactional_calls import TransactionalCalls
from engine.config import IGNORED_CLIENT_KEYS, ProducerConfig, parse_config
from engine.errors import (
    IllegalStateError,
    KafkaError,
    PurgedException,
    RecordTooLargeException,
)
from engine.sim.node import NodeStatus
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.client.accumulator import ProducerBatch
    from engine.client.observer import ProducerObserver
    from engine.client.transactions import TransactionStateMachine
    from engine.sim.world import World


#: The producer's metric totals (Kafka's ``record-send-total`` ...), counted by the producer and its sender.
_TOTALS = ("records_sent", "records_retried", "records_failed", "records_acked", "requests_sent", "batches_sent")


class Producer(ClientNode):
    """A simulated Kafka producer (see the module docstring)."""

    def __init__(
        self,
        world: World,
        bootstrap: list[str],
        config: dict[str, Any] | None = None,
        *,
        transaction_version: int = 2,
        weakenings: Weakenings = CORRECT,
    ) -> None:
        self.config: ProducerConfig = parse_config(
            ProducerConfig, config, what="producer", extra_keys=IGNORED_CLIENT_KEYS
        )
        name = self.config.client_id or f"producer-{len([n for n in world.nodes if n.startswith('producer-')]) + 1}"
        super().__init__(world, name, bootstrap, self.config)
        self._rng = world.rng.stream(f"{name}:partitioner")
        #: An optional watcher of what the application does (engine/client/observer.py); None: no cost.
        self.observer: ProducerObserver | None = None
        cfg = self.config
        self.idempotent = cfg.enable_idempotence
        self.transactional = cfg.transactional  # decided by the config, once
        self.accumulator = acc = RecordAccumulator(self._rng, cfg.batch_size, cfg.delivery_timeout_ms)
        self.deliveries = Deliveries()
        self.metadata_wait = MetadataWait(self, acc, self.deliveries, cfg.max_block_ms, self._append, self._fail_unsent)
        self.metrics_totals = dict.fromkeys(_TOTALS, 0)
        self._started_ms = world.now_ms
        self.transaction_manager = tm = TransactionManager(
            self,
            cfg,
            acc,
            wake_sender=self._wake_sender,
            abort_batches=self._abort_batches,
            transaction_version=transaction_version,
            weakenings=weakenings,
        )
        self.sender = Sender(self, cfg, acc, tm, self.deliveries, self.metrics_totals, self._batch_done)
        self.transactional_calls = (
            TransactionalCalls(self, cfg, tm, self.sender, self.metadata_wait, self.deliveries, self._transaction_done)
            if self.transactional
            else None
        )
        self.refresh_metadata(self.sender.wake)
        tm.start()

    # -- what the transaction manager holds, as the producer's attributes ---------------------

    @property
    def producer_id(self) -> int:
        """Return the producer id (-1 before InitProducerId answered)."""
        return self.transaction_manager.producer_id

    @property
    def producer_epoch(self) -> int:
        """Return the producer epoch (-1 before InitProducerId answered)."""
        return self.transaction_manager.producer_epoch

    @property
    def fatal_error(self) -> KafkaError | None:
        """Return the error that left the producer unusable (None: usable)."""
        return self.transaction_manager.fatal_error

    @property
    def txn(self) -> TransactionStateMachine | None:
        """Return the transaction's state machine (None without ``transactional.id``)."""
        return self.transaction_manager.txn

    @property
    def transactional_id(self) -> str | None:
        """Return ``transactional.id`` (None: not a transactional producer)."""
        return self.transaction_manager.transactional_id if self.transactional else None

    @property
    def txn_metrics(self) -> dict[str, int]:
        """Return Kafka's txn-*-time-ns-total (in simulated nanoseconds; empty without transactions)."""
        calls = self.transactional_calls
        return {} if calls is None else calls.txn_metrics

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
        check_record(topic, value, key, partition, cb, timestamp, headers)
        self._check_usable()
        calls = self.transactional_calls
        if calls is not None:
            calls.check_produce()
        obs = self.observer
        token = None if obs is None else obs.on_produce(self, topic, partition, value)
        ts = timestamp or self.world.now_ms
        size = record_size(key, value)
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
            self.metadata_wait.add(topic, value, key, partition, cb, ts, headers, token)
            return
        p = partition if partition >= 0 else self.accumulator.choose_partition(topic, key, count)
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
        if not set(map(type, values)) <= VALUE_TYPES:
            raise TypeError("produce_batch: every value must be bytes, str or None; encode other objects first")
        if keys is not None and (not isinstance(keys, list) or len(keys) != len(values)):
            raise TypeError("produce_batch: keys must be None or a list as long as values")
        if keys is not None and not set(map(type, keys)) <= VALUE_TYPES:
            raise TypeError("produce_batch: every key must be bytes, str or None")
        check_record(topic, None, None, partition, on_delivery, 0, None)
        count = self.partition_counts.get(topic)
        if partition < 0 or (count is not None and partition >= count):
            msg = f"produce_batch: topic {topic!r} has no partition {partition} (it has {count}); name one that exists"
            raise ValueError(msg)
        self._check_usable()
        calls = self.transactional_calls
        if calls is not None:
            calls.check_produce()
        q = self.accumulator.queue(topic, partition)
        now = self.world.now_ms
        b = ProducerBatch(topic, partition, now, now + self.config.delivery_timeout_ms)
        b.add_many(keys, values, now, on_delivery)
        obs = self.observer
        if obs is not None:
            obs.on_produce_batch(self, b)
        q.queue.append(b)
        self.deliveries.outstanding += len(values)
        self.sender.wake()

    def poll(self, timeout: float | None = 0) -> int:
        """Let ``timeout`` simulated seconds pass, then serve delivery reports; return how many."""
        ms = wait_ms(timeout, "poll", default="no wait")
        if ms:
            self.world.run_for(ms)
        return self.deliveries.serve()

    def flush(self, timeout: float | None = None, max_events: int = 50_000_000) -> int:
        """Run the simulation until every queued record is delivered or failed; return those left.

        With ``timeout`` (simulated seconds) stop after that long; None or -1 wait until
        ``delivery.timeout.ms`` has resolved every record.
        """
        # Without a timeout, delivery.timeout.ms bounds the wait: every record is resolved by then.
        end = self.world.now_ms + call_wait_ms(
            timeout, "flush", self.config.delivery_timeout_ms + self.config.request_timeout_ms
        )
        deliveries, tm = self.deliveries, self.transaction_manager
        self.world.run_until(
            lambda: not deliveries.outstanding or tm.fatal_error is not None or self.status is not NodeStatus.UP,
            max_events,
            deadline_ms=end,
        )
        self.deliveries.serve()
        return self.deliveries.outstanding

    def __len__(self) -> int:
        return self.deliveries.outstanding + self.deliveries.ready()

    # -- what views ask (the drop-in reads ``deliveries``) --------------------------------------

    def queued_batches(self) -> int:
        """Return how many batches wait in the accumulator (not yet sent, or back for a retry)."""
        return sum(len(q.queue) for q in self.accumulator.queues.values())

    def waiting_for_metadata(self) -> int:
        """Return how many records wait for metadata (a topic or partition not known yet)."""
        return len(self.metadata_wait.records)

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
            **self.txn_metrics,
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
            purged += self.metadata_wait.fail_all(lambda: PurgedException("purged from the queue"))
            purged += self.sender.drop_queued(
                lambda b: b.wire is None, lambda: PurgedException("purged from the queue before it was sent")
            )
        if in_flight:
            purged += self.sender.purge_in_flight()
        self.world.trace.emit(self.name, "state", events.PRODUCER_PURGE, ("batches", purged))

    # -- transactions belong to a producer with transactional.id ------------------------------

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get the producer id and epoch for ``transactional.id``, fencing older instances."""
        self._transactions("init_transactions").init_transactions(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction (local: nothing is sent until the first record or offsets)."""
        self._transactions("begin_transaction").begin_transaction()

    def send_offsets_to_transaction(self, offsets: Any, group_metadata: Any, timeout: float | None = None) -> None:
        """Commit consumer offsets as part of the transaction (AddOffsetsToTxn, then TxnOffsetCommit).

        ``group_metadata`` (``consumer.group_metadata()``) lets the group coordinator fence a consumer
        that is no longer in that generation: the call then raises ``CommitFailedException``, an
        abortable error (KIP-447, :mod:`engine.group.txn_offsets`).
        """
        calls = self._transactions("send_offsets_to_transaction")
        calls.send_offsets_to_transaction(offsets, group_metadata, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit: EndTxn(COMMIT).

        Raises the fatal error (fencing), the abortable error that any failed record or call of
        this transaction left (then call ``abort_transaction``), or ``TimeoutException`` (then call
        ``commit_transaction`` again: the commit may already be under way).
        """
        self._transactions("commit_transaction").commit_transaction(timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: drop unsent records, wait for in-flight ones, then EndTxn(ABORT).

        After ``TimeoutException``, call ``abort_transaction`` again to wait for the same abort.
        """
        self._transactions("abort_transaction").abort_transaction(timeout)

    def _transactions(self, action: str) -> TransactionalCalls:
        calls = self.transactional_calls
        if calls is None:
            msg = (
                f"{action}() needs a transactional producer; {self.name} has no 'transactional.id': "
                "create it with producer({'transactional.id': 'my-app'})"
            )
            raise IllegalStateError(msg)
        return calls

    # ======================================================================================
    # internals
    # ======================================================================================

    def _check_usable(self) -> None:
        if self.fatal_error is not None:
            raise self.fatal_error
        if not self.is_up:
            msg = f"producer {self.name} is not running ({self.status.value}); create a new producer"
            raise IllegalStateError(msg)

    def _append(
        self, topic: str, p: int, key: Any, value: Any, headers: Any, ts: int, cb: Any, token: object = None
    ) -> None:
        """Add one record to the accumulator; ``token`` is the observer's (None: no observer)."""
        n = self.partition_counts[topic]
        b = self.accumulator.append(topic, p, n, key, value, headers, ts, cb, self.world.now_ms)
        if token is not None:
            self.observer.on_record_queued(self, token, b, len(b.values) - 1)  # type: ignore[union-attr]
        self.deliveries.outstanding += 1
        if b.size >= self.config.batch_size:
            self.sender.wake()
        else:
            self.sender.wake_at(b.created_ms + self.config.linger_ms)

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
        self.transaction_manager.on_send_error(err)
        if cb is not None:
            self.deliveries.report(cb, err, Message(topic, partition, -1, key, value, error=err, timestamp=ts))

    # -- what the parts tell the producer (handed to them as callables) -----------------------

    def _wake_sender(self) -> None:  # the transaction manager has a producer id, a new epoch or new partitions
        self.sender.wake()

    def _abort_batches(self, err: KafkaError) -> None:  # the transaction manager entered a fatal state
        self.sender.fail_all(err)

    def _batch_done(self, b: ProducerBatch, base_offset: int, err: KafkaError | None) -> None:  # the sender's
        obs = self.observer
        if obs is not None:
            obs.on_batch_done(self, b, base_offset, err)

    def _transaction_done(self, action: str, exc: BaseException | None) -> None:  # the transactional calls'
        obs = self.observer
        if obs is not None:
            obs.on_transaction(self, action, exc)

    def on_crash(self) -> None:
        """A crashed client process loses everything it had not delivered."""
        super().on_crash()
        self.accumulator.queues.clear()
        self.metadata_wait.reset()
        self.sender.reset()
        self.deliveries.outstanding = 0
        obs = self.observer
        if obs is not None:
            obs.on_crash(self)
