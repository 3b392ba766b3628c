"""Recording wrappers for confluent-kafka's ``Producer`` and ``Consumer`` (librdkafka).

Role
----
:class:`RecordingProducer` and :class:`RecordingConsumer` have the public methods of
``confluent_kafka.Producer`` and ``Consumer``; each call goes to the real client unchanged and
what it did goes to a shared :class:`~engine.record.recorder.Recorder`, so that ``eos check``
can judge an application run against any Kafka. Methods not listed here pass through
(``__getattr__``) and are not recorded.

Outcomes
--------
* **Delivery reports** decide a record's send op (:func:`delivery_outcome`): no error is ``ok``
  with the offset; ``fail`` only for the errors of :data:`NOT_WRITTEN`, which prove the record
  was not written: never queued or purged from the queue (``_PURGE_QUEUE``,
  ``MSG_SIZE_TOO_LARGE``, ``INVALID_MSG_SIZE``, ``RECORD_LIST_TOO_LARGE``, ``INVALID_RECORD``,
  ``UNKNOWN_TOPIC_OR_PART``, ``_UNKNOWN_TOPIC``, ``_UNKNOWN_PARTITION``,
  ``TOPIC_AUTHORIZATION_FAILED``) or refused for the producer's identity (``INVALID_PRODUCER_EPOCH``,
  ``PRODUCER_FENCED``, ``OUT_OF_ORDER_SEQUENCE_NUMBER``); ``info`` for every other error
  (``_MSG_TIMED_OUT``, ``_TIMED_OUT``, ``_TRANSPORT``, ``_PURGE_INFLIGHT``, ``NOT_LEADER_FOR_PARTITION``,
  ``_FENCED``, ``_FATAL``...), because a wrong ``fail`` becomes a false ``G1a``. A ``produce()``
  that raises (``BufferError``, ``KafkaException``) never queued its record: its send op fails.
* **Transactions.** ``begin_transaction()`` that returns invokes a ``txn`` op; the records
  produced until its end join it (a delivery error does not decide it). ``commit_transaction()``
  that returns completes it ``ok``, ``abort_transaction()`` that returns ``fail`` (error
  ``aborted``). A commit or abort raising a ``KafkaException`` whose error is ``fatal()``
  completes it ``info``; any other (``txn_requires_abort()``, ``retriable()``) leaves it open for
  the abort or the retry that follows. A transaction never decided (the producer closed or
  dropped) stays an invocation, read as ``info``. ``send_offsets_to_transaction`` is not
  recorded (the format has no micro-op for it).
* **Consumers.** Each ``poll()``/``consume()`` is a ``poll`` op: ``ok`` with one read per
  message (error events and partition EOFs left out), ``fail`` when the call raised.
  ``assign``, ``incremental_assign``, ``incremental_unassign`` and ``unassign`` record ``assign``
  ops (``subscribe`` ones while subscribed); librdkafka restarts every key an ``assign()``
  names, so those lose their position first; ``seek()`` does the same for its key.
  ``subscribe()``/``unsubscribe()`` record ``subscribe`` ops, and the group's rebalances are
  seen through ``on_assign``/``on_revoke``/``on_lost`` callbacks chained before the
  application's own (which receive the wrapper, so an ``assign()`` inside them is recorded).

What it does not do
-------------------
It records nothing for headers, consumer offset commits, or admin calls. A producer configured
with ``delivery.report.only.error`` never reports success: its sends stay ``info``. A producer
wrapped after the fact (:meth:`RecordingProducer.wrap`) cannot see a global ``on_delivery`` set
in its config: pass it to ``wrap``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from engine.check.client_history import record_key, record_value
from engine.check.history import Poll
from engine.record.books import ConsumerCalls, Passthrough, ProducerBook, key_of, keys_of, wrap_client
from engine.record.recorder import PendingRecord, Recorder, guarded

__all__ = [
    "NOT_WRITTEN",
    "RecordingConsumer",
    "RecordingProducer",
    "delivery_outcome",
    "error_name",
    "recording",
    "transaction_outcome",
]

E = KafkaError
#: Delivery errors that prove the record was not written: its send op completes ``fail``.
NOT_WRITTEN = frozenset(
    {
        E._PURGE_QUEUE,
        E.MSG_SIZE_TOO_LARGE,
        E.INVALID_MSG_SIZE,
        E.RECORD_LIST_TOO_LARGE,
        E.INVALID_RECORD,
        E.UNKNOWN_TOPIC_OR_PART,
        E._UNKNOWN_TOPIC,
        E._UNKNOWN_PARTITION,
        E.TOPIC_AUTHORIZATION_FAILED,
        E.INVALID_PRODUCER_EPOCH,
        E.PRODUCER_FENCED,
        E.OUT_OF_ORDER_SEQUENCE_NUMBER,
    }
)

DeliveryCallback = Callable[[Any, Any], Any]


def delivery_outcome(err: KafkaError | None) -> str:
    """Return the send op's completion type for a delivery report's error: ``ok``, ``fail`` or ``info``."""
    if err is None:
        return "ok"
    return "fail" if err.code() in NOT_WRITTEN else "info"


def transaction_outcome(err: KafkaError) -> str | None:
    """Return how a commit or abort that raised ``err`` completes the txn op: ``info`` if fatal, else None (open)."""
    return "info" if err.fatal() else None


def error_name(exc: BaseException | KafkaError) -> str:
    """Return the name an error is recorded with: the KafkaError's code name, else the exception's type."""
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
    if isinstance(err, KafkaError):
        return str(err.name())
    return type(exc).__name__


def _reads(messages: Iterable[Message]) -> Iterable[Poll]:
    """The reads of a poll: one per message, error events and EOFs left out."""
    for m in messages:
        if m.error() is None and m.offset() >= 0:
            yield Poll(m.topic(), m.partition(), m.offset(), record_value(m.value()), record_key(m.key()))


class _Wrapper(Passthrough):
    """Attribute passthrough to the wrapped client, and its context manager."""

    def __enter__(self) -> Any:
        self._client.__enter__()
        return self

    def __exit__(self, *exc: object) -> Any:
        return self._client.__exit__(*exc)


class RecordingProducer(_Wrapper):
    """A ``confluent_kafka.Producer`` whose sends and transactions go to ``recorder``.

    Parameters
    ----------
    config : dict
        The producer's configuration, as for ``confluent_kafka.Producer``.
    recorder : Recorder
        The history this producer records into.
    **kwargs
        Passed to ``confluent_kafka.Producer`` (e.g. ``logger``).
    """

    def __init__(self, config: dict[str, Any], recorder: Recorder, **kwargs: Any) -> None:
        self._setup(Producer(config, **kwargs), recorder, config.get("on_delivery"))

    @classmethod
    def wrap(
        cls, producer: Producer, recorder: Recorder, on_delivery: DeliveryCallback | None = None
    ) -> RecordingProducer:
        """Record an existing producer from now on (``on_delivery``: its config's global callback, if any)."""
        self = cls.__new__(cls)
        self._setup(producer, recorder, on_delivery)
        return self

    def _setup(self, producer: Producer, recorder: Recorder, on_delivery: DeliveryCallback | None) -> None:
        self._client = producer
        self.recorder = recorder
        self.book = ProducerBook(recorder)
        self._default_delivery = on_delivery

    @property
    def producer(self) -> Producer:
        """The wrapped ``confluent_kafka.Producer``."""
        return self._client

    def __len__(self) -> int:
        return len(self._client)

    def __bool__(self) -> bool:
        return True

    # -- sends ------------------------------------------------------------------------------

    def _report(self, record: PendingRecord | None, user: DeliveryCallback | None) -> DeliveryCallback:
        """The delivery callback of one record: record its outcome, then call the application's."""
        chained = user if user is not None else self._default_delivery

        def report(err: KafkaError | None, msg: Message) -> None:
            self._delivered(record, err, msg)
            if chained is not None:
                chained(err, msg)

        return report

    @guarded
    def _delivered(self, record: PendingRecord | None, err: KafkaError | None, msg: Message) -> None:
        outcome = delivery_outcome(err)
        self.book.delivered(record, msg.partition(), msg.offset(), outcome, None if err is None else error_name(err))

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int = -1,
        on_delivery: DeliveryCallback | None = None,
        timestamp: int = 0,
        headers: Any = None,
        *,
        callback: DeliveryCallback | None = None,
    ) -> None:
        """Produce one record (``Producer.produce``); its send op, or the open transaction, records it."""
        record = self.book.produced(topic, partition, value, key)
        kwargs: dict[str, Any] = {"value": value, "key": key, "partition": partition}
        kwargs["on_delivery"] = self._report(record, on_delivery if on_delivery is not None else callback)
        if timestamp:
            kwargs["timestamp"] = timestamp
        if headers is not None:
            kwargs["headers"] = headers
        try:
            self._client.produce(topic, **kwargs)
        except Exception as exc:  # BufferError, KafkaException, TypeError: the record was never queued
            self.book.not_queued(record, error_name(exc))
            raise

    def produce_batch(
        self,
        topic: str,
        messages: list[dict[str, Any]],
        partition: int = -1,
        on_delivery: DeliveryCallback | None = None,
        *,
        callback: DeliveryCallback | None = None,
    ) -> int:
        """Produce a batch (``Producer.produce_batch``): one record each, as ``produce`` does."""
        batch_cb = on_delivery if on_delivery is not None else callback
        records: list[PendingRecord | None] = []
        copies: list[dict[str, Any]] = []
        for m in messages:
            record = self.book.produced(topic, m.get("partition", partition), m.get("value"), m.get("key"))
            records.append(record)
            copies.append({**m, "callback": self._report(record, m.get("callback", batch_cb))})
        try:
            queued = self._client.produce_batch(topic, copies, partition=partition)
        except Exception as exc:
            for record in records:
                self.book.not_queued(record, error_name(exc))
            raise
        for m, copy, record in zip(messages, copies, records, strict=True):
            if "_error" in copy:
                m["_error"] = copy["_error"]
                self.book.not_queued(record, error_name(copy["_error"]))
        return int(queued)

    def poll(self, *args: Any, **kwargs: Any) -> int:
        """Serve delivery reports (``Producer.poll``)."""
        return int(self._client.poll(*args, **kwargs))

    def flush(self, *args: Any, **kwargs: Any) -> int:
        """Wait for outstanding deliveries (``Producer.flush``)."""
        return int(self._client.flush(*args, **kwargs))

    def purge(self, *args: Any, **kwargs: Any) -> None:
        """Purge queued or in-flight records (``Producer.purge``); their reports say ``_PURGE_*``."""
        self._client.purge(*args, **kwargs)

    def list_topics(self, *args: Any, **kwargs: Any) -> Any:
        """The cluster's metadata (``Producer.list_topics``)."""
        return self._client.list_topics(*args, **kwargs)

    # -- transactions ---------------------------------------------------------------------------

    def init_transactions(self, *args: Any, **kwargs: Any) -> None:
        """Initialise the transactional producer (not recorded)."""
        self._client.init_transactions(*args, **kwargs)

    def begin_transaction(self) -> None:
        """Begin a transaction; a ``txn`` op starts when the call returns."""
        self._client.begin_transaction()
        self.book.begun()

    def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> None:
        """Add consumer offsets to the transaction (not recorded: the format has no micro-op for it)."""
        self._client.send_offsets_to_transaction(*args, **kwargs)

    def commit_transaction(self, *args: Any, **kwargs: Any) -> None:
        """Commit: the txn op completes ``ok`` when this returns (see the module docstring on errors)."""
        self._end("commit", "ok", *args, **kwargs)

    def abort_transaction(self, *args: Any, **kwargs: Any) -> None:
        """Abort: the txn op completes ``fail`` when this returns (see the module docstring on errors)."""
        self._end("abort", "fail", *args, **kwargs)

    def _end(self, action: str, outcome: str, *args: Any, **kwargs: Any) -> None:
        call = self._client.commit_transaction if action == "commit" else self._client.abort_transaction
        try:
            call(*args, **kwargs)
        except KafkaException as exc:
            self._raised(exc)
            raise
        self.book.ended(outcome, None if outcome == "ok" else "aborted")

    @guarded
    def _raised(self, exc: KafkaException) -> None:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and transaction_outcome(err) is not None:
            self.book.ended("info", error_name(err))

    def close(self, *args: Any, **kwargs: Any) -> Any:
        """Close the producer; an undecided transaction stays open (``info``)."""
        return self._client.close(*args, **kwargs)


class RecordingConsumer(ConsumerCalls, _Wrapper):
    """A ``confluent_kafka.Consumer`` whose polls and assignments go to ``recorder``.

    Parameters
    ----------
    config : dict
        The consumer's configuration, as for ``confluent_kafka.Consumer``.
    recorder : Recorder
        The history this consumer records into.
    **kwargs
        Passed to ``confluent_kafka.Consumer`` (e.g. ``logger``).
    """

    def __init__(self, config: dict[str, Any], recorder: Recorder, **kwargs: Any) -> None:
        self._setup(Consumer(config, **kwargs), recorder, ())

    @property
    def consumer(self) -> Consumer:
        """The wrapped ``confluent_kafka.Consumer``."""
        return self._client

    # -- polls ----------------------------------------------------------------------------------

    def poll(self, *args: Any, **kwargs: Any) -> Message | None:
        """Poll one message (``Consumer.poll``): a ``poll`` op with its read, if it is a record."""
        self.book.poll_started()
        try:
            msg = self._client.poll(*args, **kwargs)
        except Exception as exc:
            self.book.poll_ended((), error_name(exc))
            raise
        self.book.poll_ended(_reads([] if msg is None else [msg]))
        return msg

    def consume(self, *args: Any, **kwargs: Any) -> list[Message]:
        """Consume messages (``Consumer.consume``): a ``poll`` op with one read per record."""
        self.book.poll_started()
        try:
            messages = self._client.consume(*args, **kwargs)
        except Exception as exc:
            self.book.poll_ended((), error_name(exc))
            raise
        self.book.poll_ended(_reads(messages))
        return messages

    # -- assignment -----------------------------------------------------------------------------

    def subscribe(
        self,
        topics: list[str],
        on_assign: Callable[..., Any] | None = None,
        on_revoke: Callable[..., Any] | None = None,
        on_lost: Callable[..., Any] | None = None,
    ) -> None:
        """Subscribe (``Consumer.subscribe``); rebalances are recorded through chained callbacks."""
        lost = on_lost if on_lost is not None else on_revoke  # confluent-kafka's own fallback
        self._client.subscribe(
            topics,
            on_assign=self._rebalance(on_assign, gained=True),
            on_revoke=self._rebalance(on_revoke, gained=False),
            on_lost=self._rebalance(lost, gained=False),
        )
        self.book.subscription(True)

    def _rebalance(self, user: Callable[..., Any] | None, *, gained: bool) -> Callable[[Any, list[Any]], None]:
        """A rebalance callback: the application's first (given this wrapper), then the new assignment."""

        def callback(_consumer: Any, partitions: list[TopicPartition]) -> None:
            try:
                if user is not None:
                    user(self, partitions)
            finally:
                self.book.partitions_moved(partitions, gained=gained)

        return callback

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Add partitions to the assignment."""
        self._client.incremental_assign(partitions)
        added = keys_of(key_of(tp) for tp in partitions)
        self.book.assigned((*self.book.keys, *added), restarted=added)

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Take partitions out of the assignment."""
        self._client.incremental_unassign(partitions)
        gone = {key_of(tp) for tp in partitions}
        self.book.assigned(k for k in self.book.keys if k not in gone)

    def unassign(self) -> None:
        """Drop the whole assignment."""
        self._client.unassign()
        self.book.assigned(())

    def seek(self, partition: TopicPartition) -> None:
        """Move a partition's position: the checker forgets its position (no ``nonmonotonic-poll``)."""
        self._client.seek(partition)
        self.book.seeked([key_of(partition)])

    # -- passthrough, listed for readers --------------------------------------------------------

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        """Commit offsets (not recorded)."""
        return self._client.commit(*args, **kwargs)

    def committed(self, *args: Any, **kwargs: Any) -> Any:
        """The committed offsets (not recorded)."""
        return self._client.committed(*args, **kwargs)

    def position(self, *args: Any, **kwargs: Any) -> Any:
        """The positions (not recorded)."""
        return self._client.position(*args, **kwargs)

    def list_topics(self, *args: Any, **kwargs: Any) -> Any:
        """The cluster's metadata (``Consumer.list_topics``)."""
        return self._client.list_topics(*args, **kwargs)


def recording(client: Producer | Consumer, recorder: Recorder) -> RecordingProducer | RecordingConsumer:
    """Wrap an existing confluent-kafka ``Producer`` or ``Consumer`` so that ``recorder`` records it.

    Raises
    ------
    TypeError
        If ``client`` is neither.
    """
    return wrap_client(client, recorder, {Producer: RecordingProducer, Consumer: RecordingConsumer}, "confluent_kafka")
