"""Client workloads for differential tests: one scenario, any Kafka, the same checker.

Role
----
Each ``run_*`` function drives real confluent-kafka clients, wrapped by
:mod:`engine.record.confluent`, against whatever ``bootstrap_config`` points at (librdkafka's
in-process mock cluster, a served simulated cluster, a real broker) and records into a
:class:`~engine.record.recorder.Recorder`; the caller judges the history with
:meth:`Recorder.check`. The same function against two brokers is a differential test: the
checker's verdicts must differ exactly where the brokers do. :class:`MockCluster` starts
librdkafka's mock cluster and gives its bootstrap address to other clients.

Invariants
----------
* ``bootstrap_config`` is merged into every client's config (bootstrap servers, SASL, short
  timeouts), so only it changes from one Kafka to another.
* Only partition 0 of ``topic`` is used, so the offsets are the same on every correct broker;
  the topic must exist or be auto-created. Transactional ids and group ids derive from the
  topic: give each run its own topic.
* A workload raises only when a client call does (a failed init or commit); it never asserts
  what it read: what a broker got wrong is the checker's to say.

What it does not do
-------------------
No fault injection: the broker under test decides what happens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Producer, TopicPartition

from engine.record.confluent import RecordingConsumer, RecordingProducer
from engine.record.recorder import Recorder

__all__ = ["MockCluster", "read_to_end", "run_commit_abort_read", "run_committed_read"]

#: How long a workload reads before it gives up on reaching the end (milliseconds).
READ_TIMEOUT_MS = 15_000
#: How long a transactional call may block (seconds).
TXN_TIMEOUT_S = 15.0


class MockCluster:
    """librdkafka's in-process mock cluster, for other clients to connect to.

    A producer configured with ``test.mock.num.brokers`` starts the mock inside itself and
    lists its brokers in its metadata; this object holds that producer (the mock lives as long
    as it does) and gives the brokers' addresses as ``bootstrap.servers``.

    Parameters
    ----------
    brokers : int
        How many mock brokers.
    """

    def __init__(self, brokers: int = 3) -> None:
        self._holder = Producer({"test.mock.num.brokers": brokers})
        metadata = self._holder.list_topics(timeout=10)
        self.bootstrap_servers = ",".join(f"{b.host}:{b.port}" for b in sorted(metadata.brokers.values(), key=_id))

    def config(self, **extra: Any) -> dict[str, Any]:
        """Return a client config for the mock (``bootstrap.servers`` and ``extra``)."""
        return {"bootstrap.servers": self.bootstrap_servers, **extra}

    def close(self) -> None:
        """Stop the mock cluster."""
        self._holder.close()

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _id(broker: Any) -> int:
    return int(broker.id)


def _send_idempotent(bootstrap_config: dict[str, Any], topic: str, recorder: Recorder, values: Iterable[str]) -> None:
    """Send ``values`` to partition 0 with an idempotent producer and wait for their delivery."""
    producer = RecordingProducer({**bootstrap_config, "enable.idempotence": True}, recorder)
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
    producer.flush(TXN_TIMEOUT_S)


def _transactional(bootstrap_config: dict[str, Any], topic: str, recorder: Recorder) -> RecordingProducer:
    producer = RecordingProducer({**bootstrap_config, "transactional.id": f"{topic}-txn"}, recorder)
    producer.init_transactions(TXN_TIMEOUT_S)
    return producer


def _transaction(producer: RecordingProducer, topic: str, values: Iterable[str], *, commit: bool) -> None:
    """One transaction of ``values`` to partition 0; an aborted one is flushed first, so its records reach the log."""
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
    if commit:
        producer.commit_transaction(TXN_TIMEOUT_S)
    else:
        producer.flush(TXN_TIMEOUT_S)
        producer.abort_transaction(TXN_TIMEOUT_S)


#: The values every workload first sends with an idempotent producer.
_IDEMPOTENT = tuple(f"i-{i}" for i in range(5))


def _write(
    bootstrap_config: dict[str, Any], topic: str, recorder: Recorder, transactions: Iterable[tuple[list[str], bool]]
) -> None:
    """Send :data:`_IDEMPOTENT` idempotently, then each (values, commit) transaction from one transactional producer."""
    _send_idempotent(bootstrap_config, topic, recorder, _IDEMPOTENT)
    producer = _transactional(bootstrap_config, topic, recorder)
    try:
        for values, commit in transactions:
            _transaction(producer, topic, values, commit=commit)
    finally:
        producer.close()


def _read(
    bootstrap_config: dict[str, Any],
    topic: str,
    recorder: Recorder,
    config: dict[str, Any],
    expected: Iterable[str],
    *,
    subscribe: bool,
) -> None:
    """Read partition 0 to its end with a consumer of ``config`` (no auto commit), subscribed or assigned."""
    consumer = RecordingConsumer({**bootstrap_config, **config, "enable.auto.commit": False}, recorder)
    try:
        if subscribe:
            consumer.subscribe([topic])
        else:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        read_to_end(consumer, topic, expected, recorder)
    finally:
        consumer.close()


def read_to_end(consumer: RecordingConsumer, topic: str, expected: Iterable[str], recorder: Recorder) -> None:
    """Consume partition 0 until every ``expected`` value was read and the position reached the log's end.

    The end is the high watermark asked once the reading starts (the writers are done by then).
    Gives up after :data:`READ_TIMEOUT_MS` without raising: what is missing is the checker's to
    report (``unseen``, ``lost-write``).
    """
    tp = TopicPartition(topic, 0)
    missing = set(expected)
    deadline = recorder.now_ms() + READ_TIMEOUT_MS
    end: int | None = None
    while recorder.now_ms() < deadline:
        if end is None:
            end = consumer.get_watermark_offsets(tp, timeout=5, cached=False)[1]
        for m in consumer.consume(100, 0.2):
            if m.error() is None and m.topic() == topic:
                missing.discard(m.value().decode("utf-8", "replace"))
        positions = consumer.position([tp])
        if not missing and positions and positions[0].offset >= end:
            return


def run_commit_abort_read(bootstrap_config: dict[str, Any], topic: str, recorder: Recorder) -> None:
    """Idempotent sends, a committed and an aborted transaction, then a read_committed reader.

    Writes ``i-0``..``i-4`` (idempotent, no transaction), ``c-0``..``c-4`` (committed) and
    ``a-0``..``a-4`` (aborted, flushed to the log first) to partition 0 of ``topic``, then reads
    it from the start with ``isolation.level=read_committed`` (assigned, not subscribed) until
    the ``i-`` and ``c-`` values are read and the position reached the end. A correct broker
    passes the checker; one that hands aborted records to read_committed readers (librdkafka's
    mock) gives one ``G1a`` per ``a-`` value read.
    """
    committed = [f"c-{i}" for i in range(5)]
    _write(bootstrap_config, topic, recorder, [(committed, True), ([f"a-{i}" for i in range(5)], False)])
    reader = {"group.id": f"{topic}-reader", "isolation.level": "read_committed"}
    _read(bootstrap_config, topic, recorder, reader, [*_IDEMPOTENT, *committed], subscribe=False)


def run_committed_read(bootstrap_config: dict[str, Any], topic: str, recorder: Recorder) -> None:
    """Idempotent sends and two committed transactions, read by a subscribed read_uncommitted consumer.

    Nothing is aborted, so every correct broker (librdkafka's mock included) passes the checker.
    The reader joins a group (``subscribe``), so its assignment is recorded through the rebalance
    callbacks.
    """
    transactions = [([f"c-{i}" for i in range(3)], True), ([f"d-{i}" for i in range(3)], True)]
    _write(bootstrap_config, topic, recorder, transactions)
    reader = {"group.id": f"{topic}-group", "isolation.level": "read_uncommitted", "auto.offset.reset": "earliest"}
    expected = [*_IDEMPOTENT, *(value for values, _ in transactions for value in values)]
    _read(bootstrap_config, topic, recorder, reader, expected, subscribe=True)
