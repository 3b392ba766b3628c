"""Recording wrappers for kafka-python's ``KafkaProducer`` and ``KafkaConsumer``.

Role
----
The kafka-python counterpart of :mod:`engine.record.confluent`, with the same rules (see there
and :mod:`engine.record.recorder`): :class:`RecordingKafkaProducer` records ``send()`` and the
transaction calls, :class:`RecordingKafkaConsumer` records ``poll()``, iteration, assignments,
seeks and the group's rebalances (through a listener chained before the application's).
Everything else passes through unrecorded.

Outcomes
--------
* A send's future decides its send op (:func:`send_outcome`): success is ``ok`` with the offset;
  ``fail`` for the errors of :data:`NOT_WRITTEN` (the record was refused for its size, topic or
  authorisation, for the producer's epoch or sequence, or its transaction aborted before it
  was sent); ``info`` for every other error (``KafkaTimeoutError``, lost connections...). A
  ``send()`` that raises never queued its record: its send op fails.
* Transactions: ``commit_transaction()`` that returns completes the ``txn`` op ``ok``,
  ``abort_transaction()`` ``fail``; one that raises completes it ``info`` when the producer's
  transaction manager is now fatally failed, and leaves it open otherwise.

What it does not do
-------------------
Values and keys are recorded as the application passes and receives them (before a serializer,
after a deserializer): give both sides the same form (bytes or str) or the checker cannot match
a read to its send, nor a promise an input's key to its output's. kafka-python runs the
callbacks on its I/O thread; the recorder's lock keeps the history well-formed, but a rebalance
seen while a poll is running is placed by arrival, not by the poll's own order. An
``AsyncConsumerRebalanceListener`` is not supported (the chained listener calls it
synchronously).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka import errors as kerrors
from kafka.consumer.subscription_state import ConsumerRebalanceListener

from engine.check.client_history import record_key, record_value
from engine.check.history import Poll
from engine.record.books import ConsumerBook, ConsumerCalls, Passthrough, ProducerBook, key_of, wrap_client
from engine.record.recorder import PendingRecord, Recorder, guarded

__all__ = ["NOT_WRITTEN", "RecordingKafkaConsumer", "RecordingKafkaProducer", "recording", "send_outcome"]

#: Send errors that prove the record was not written: its send op completes ``fail``.
NOT_WRITTEN: tuple[type[BaseException], ...] = (
    kerrors.MessageSizeTooLargeError,
    kerrors.RecordListTooLargeError,
    kerrors.InvalidRecordError,
    kerrors.UnknownTopicOrPartitionError,
    kerrors.TopicAuthorizationFailedError,
    kerrors.InvalidProducerEpochError,
    kerrors.ProducerFencedError,
    kerrors.OutOfOrderSequenceNumberError,
    kerrors.TransactionAbortedError,
)


def send_outcome(error: BaseException | None) -> str:
    """Return the send op's completion type for a send future's exception: ``ok``, ``fail`` or ``info``."""
    if error is None:
        return "ok"
    return "fail" if isinstance(error, NOT_WRITTEN) else "info"


class RecordingKafkaProducer(Passthrough):
    """A ``kafka.KafkaProducer`` whose sends and transactions go to ``recorder``.

    Parameters
    ----------
    recorder : Recorder
        The history this producer records into.
    **configs
        Passed to ``kafka.KafkaProducer``.
    """

    def __init__(self, recorder: Recorder, **configs: Any) -> None:
        self._setup(KafkaProducer(**configs), recorder)

    @classmethod
    def wrap(cls, producer: KafkaProducer, recorder: Recorder) -> RecordingKafkaProducer:
        """Record an existing producer from now on."""
        self = cls.__new__(cls)
        self._setup(producer, recorder)
        return self

    def _setup(self, producer: KafkaProducer, recorder: Recorder) -> None:
        self._client = producer
        self.recorder = recorder
        self.book = ProducerBook(recorder)

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> Any:
        """Send one record (``KafkaProducer.send``); its future's outcome completes its op."""
        record = self.book.produced(topic, partition, value, key)
        try:
            future = self._client.send(
                topic, value=value, key=key, headers=headers, partition=partition, timestamp_ms=timestamp_ms
            )
        except Exception as exc:
            self.book.not_queued(record, type(exc).__name__)
            raise
        future.add_callback(self._succeeded, record)
        future.add_errback(self._failed, record)
        return future

    @guarded
    def _succeeded(self, record: PendingRecord | None, metadata: Any) -> None:
        self.book.delivered(record, metadata.partition, metadata.offset, "ok", None)

    @guarded
    def _failed(self, record: PendingRecord | None, error: BaseException) -> None:
        self.book.delivered(record, None, None, send_outcome(error), type(error).__name__)

    def init_transactions(self) -> None:
        """Initialise the transactional producer (not recorded)."""
        self._client.init_transactions()

    def begin_transaction(self) -> None:
        """Begin a transaction; a ``txn`` op starts when the call returns."""
        self._client.begin_transaction()
        self.book.begun()

    def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> None:
        """Add consumer offsets to the transaction (not recorded)."""
        self._client.send_offsets_to_transaction(*args, **kwargs)

    def commit_transaction(self) -> None:
        """Commit: the txn op completes ``ok`` when this returns."""
        self._end(self._client.commit_transaction, "ok")

    def abort_transaction(self) -> None:
        """Abort: the txn op completes ``fail`` when this returns."""
        self._end(self._client.abort_transaction, "fail")

    def _end(self, call: Any, outcome: str) -> None:
        try:
            call()
        except Exception as exc:
            self._raised(exc)
            raise
        self.book.ended(outcome, None if outcome == "ok" else "aborted")

    @guarded
    def _raised(self, exc: Exception) -> None:
        manager = getattr(self._client, "_transaction_manager", None)
        if manager is not None and manager.has_fatal_error():
            self.book.ended("info", type(exc).__name__)

    def flush(self, *args: Any, **kwargs: Any) -> None:
        """Wait for outstanding sends (``KafkaProducer.flush``)."""
        self._client.flush(*args, **kwargs)

    def close(self, *args: Any, **kwargs: Any) -> None:
        """Close the producer; an undecided transaction stays open (``info``)."""
        self._client.close(*args, **kwargs)


class _Listener(ConsumerRebalanceListener):
    """The rebalance listener given to kafka-python: the application's first, then the recorder."""

    def __init__(self, book: ConsumerBook, user: ConsumerRebalanceListener | None) -> None:
        self.book = book
        self.user = user

    def on_partitions_revoked(self, revoked: Any) -> None:
        self._call("on_partitions_revoked", revoked, gained=False)

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._call("on_partitions_assigned", assigned, gained=True)

    def on_partitions_lost(self, lost: Any) -> None:
        self._call("on_partitions_lost", lost, gained=False)

    def _call(self, callback: str, partitions: Any, *, gained: bool) -> None:
        """Call the application's ``callback``, then record the change even when it raised."""
        try:
            if self.user is not None:
                getattr(self.user, callback)(partitions)
        finally:
            self.book.partitions_moved(partitions, gained=gained)


def _reads(batches: dict[Any, list[Any]]) -> Iterable[Poll]:
    for records in batches.values():
        for r in records:
            yield Poll(r.topic, r.partition, r.offset, record_value(r.value), record_key(r.key))


class RecordingKafkaConsumer(ConsumerCalls):
    """A ``kafka.KafkaConsumer`` whose polls and assignments go to ``recorder``.

    Parameters
    ----------
    *topics : str
        Topics to subscribe to at once, as ``KafkaConsumer(*topics)`` does.
    recorder : Recorder
        The history this consumer records into.
    **configs
        Passed to ``kafka.KafkaConsumer``.
    """

    def __init__(self, *topics: str, recorder: Recorder, **configs: Any) -> None:
        self._setup(KafkaConsumer(**configs), recorder, ())
        if topics:
            self.subscribe(list(topics))

    def poll(self, *args: Any, **kwargs: Any) -> dict[Any, list[Any]]:
        """Poll (``KafkaConsumer.poll``): a ``poll`` op with one read per record returned."""
        self.book.poll_started()
        try:
            batches = self._client.poll(*args, **kwargs)
        except Exception as exc:
            self.book.poll_ended((), type(exc).__name__)
            raise
        self.book.poll_ended(_reads(batches))
        return batches

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        """The next record of the iterator: a ``poll`` op with that one read."""
        self.book.poll_started()
        try:
            r = next(self._client)
        except StopIteration:
            self.book.poll_ended(())
            raise
        except Exception as exc:
            self.book.poll_ended((), type(exc).__name__)
            raise
        self.book.poll_ended(_reads({None: [r]}))
        return r

    def subscribe(self, topics: Any = (), pattern: str | None = None, listener: Any = None) -> None:
        """Subscribe; rebalances are recorded through a listener chained before ``listener``."""
        self._client.subscribe(topics=topics, pattern=pattern, listener=_Listener(self.book, listener))
        self.book.subscription(True)

    def seek(self, partition: Any, offset: int) -> None:
        """Move a partition's position: the checker forgets it."""
        self._client.seek(partition, offset)
        self.book.seeked([key_of(partition)])

    def seek_to_beginning(self, *partitions: Any) -> None:
        """Move positions to the log start (all assigned partitions when none are named)."""
        self._client.seek_to_beginning(*partitions)
        self.book.seeked([key_of(tp) for tp in partitions] if partitions else self.book.keys)

    def seek_to_end(self, *partitions: Any) -> None:
        """Move positions to the log end (all assigned partitions when none are named)."""
        self._client.seek_to_end(*partitions)
        self.book.seeked([key_of(tp) for tp in partitions] if partitions else self.book.keys)


def recording(client: KafkaProducer | KafkaConsumer, recorder: Recorder) -> Any:
    """Wrap an existing kafka-python producer or consumer so that ``recorder`` records it.

    Raises
    ------
    TypeError
        If ``client`` is neither.
    """
    wrappers = {KafkaProducer: RecordingKafkaProducer, KafkaConsumer: RecordingKafkaConsumer}
    return wrap_client(client, recorder, wrappers, "kafka-python")
