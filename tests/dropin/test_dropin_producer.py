"""The drop-in Producer behaves as confluent-kafka's on the simulated cluster.

Each test writes confluent-kafka code against ``eos_magics.kafka`` (bound to the ``cluster``
fixture) and checks what a confluent-kafka program would see: delivery reports with confluent's
types, read_committed isolation of committed and aborted transactions, a zombie fenced with a fatal
``_FENCED`` error, offsets committed through ``send_offsets_to_transaction``.
"""

from __future__ import annotations

from typing import Any

import pytest

import eos_magics.kafka as kafka
from eos_magics.kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)


def read_all(topic: str, partitions: int, isolation: str = "read_committed") -> list[bytes]:
    """Read every record a consumer of that isolation level may see, from the beginning."""
    c = Consumer({"group.id": f"reader-{isolation}", "isolation.level": isolation, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out = [m.value() for m in c.consume(1000, 2.0) if m.error() is None]
    c.close()
    return out


def test_idempotent_produce_flush_delivers_every_record_with_confluent_types(cluster: Any) -> None:
    reports: list[tuple[Any, Any]] = []
    p = Producer({"bootstrap.servers": "localhost:9092", "enable.idempotence": True, "linger.ms": 5})
    for i in range(20):
        p.produce("t", f"v{i}", key=f"k{i}", on_delivery=lambda err, msg: reports.append((err, msg)))
    assert len(p) == 20
    assert p.flush(10) == 0
    assert len(reports) == 20
    assert all(err is None for err, _ in reports)
    msg = reports[0][1]
    assert isinstance(msg, Message)
    assert msg.topic() == "t" and msg.partition() in (0, 1) and msg.offset() >= 0
    assert msg.value().startswith(b"v") and msg.key().startswith(b"k")  # str is encoded, as librdkafka does
    assert msg.timestamp()[0] == kafka.TIMESTAMP_CREATE_TIME
    assert len(msg) == len(msg.value())
    offsets = sorted((m.partition(), m.offset()) for _, m in reports)
    assert len(set(offsets)) == 20
    assert p.engine.idempotent


def test_config_on_delivery_and_delivery_report_only_error(cluster: Any) -> None:
    seen: list[Any] = []
    p = Producer({"on_delivery": lambda e, m: seen.append(e), "delivery.report.only.error": True})
    p.produce("t", b"x")
    p.flush()
    assert seen == []
    q = Producer({"on_delivery": lambda e, m: seen.append(m.value())})
    q.produce("t", b"y", headers={"h": "v"})
    q.flush()
    assert seen == [b"y"]


def test_poll_returns_as_soon_as_a_report_is_ready(cluster: Any) -> None:
    got: list[Any] = []
    p = Producer({"linger.ms": 0})
    p.produce("t", b"a", callback=lambda e, m: got.append(m))
    start = cluster.now_ms
    served = 0
    while not served:
        served = p.poll(1.0)
    assert served == 1 and got
    assert cluster.now_ms - start < 1000  # not the whole second


def test_transactional_commit_and_abort_with_read_committed_consumer(cluster: Any) -> None:
    p = Producer({"transactional.id": "app", "bootstrap.servers": "eos://dropin"})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("t", b"committed-1", partition=0)
    p.produce("t", b"committed-2", partition=1)
    p.commit_transaction()
    p.begin_transaction()
    p.produce("t", b"aborted", partition=0)
    p.flush()
    p.abort_transaction()
    assert sorted(read_all("t", 2)) == [b"committed-1", b"committed-2"]
    assert b"aborted" in read_all("t", 2, "read_uncommitted")


def test_a_zombie_is_fenced_with_a_fatal_fenced_error(cluster: Any) -> None:
    errors: list[Any] = []
    zombie = Producer({"transactional.id": "app", "error_cb": errors.append})
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.produce("t", b"zombie", partition=0)
    fresh = Producer({"transactional.id": "app"})
    fresh.init_transactions()
    with pytest.raises(KafkaException) as caught:
        zombie.commit_transaction()
    err = caught.value.args[0]
    assert isinstance(err, KafkaError)
    assert err.code() == KafkaError._FENCED and err.name() == "_FENCED"
    assert err.fatal() and not err.txn_requires_abort()
    with pytest.raises(KafkaException) as again:
        zombie.abort_transaction()  # fatal: nothing but close() is left
    assert again.value.args[0].fatal()
    zombie.poll(0)
    assert [(e.code(), e.fatal()) for e in errors] == [(KafkaError._FATAL, True)]
    fresh.begin_transaction()
    fresh.produce("t", b"fresh", partition=0)
    fresh.commit_transaction()
    assert read_all("t", 2) == [b"fresh"]
    assert zombie.close() is True


def test_send_offsets_to_transaction_commits_the_consumers_offsets(cluster: Any) -> None:
    seed = Producer({})
    for i in range(4):
        seed.produce("t", f"in-{i}", partition=0)
    seed.flush()
    consumer = Consumer({"group.id": "copier", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["t"])
    copier = Producer({"transactional.id": "copier"})
    copier.init_transactions()
    records = []
    while len(records) < 4:
        m = consumer.poll(1.0)
        if m is not None and m.error() is None:
            records.append(m)
    copier.begin_transaction()
    for m in records:
        copier.produce("out", m.value(), partition=0)
    positions = consumer.position(consumer.assignment())
    copier.send_offsets_to_transaction(positions, consumer.consumer_group_metadata())
    copier.commit_transaction()
    committed = {tp.partition: tp.offset for tp in consumer.committed([TopicPartition("t", 0), TopicPartition("t", 1)])}
    assert committed[0] == 4
    assert read_all("out", 1) == [b"in-0", b"in-1", b"in-2", b"in-3"]


def test_abortable_error_carries_txn_requires_abort(cluster: Any) -> None:
    p = Producer({"transactional.id": "big", "message.max.bytes": 1000})
    p.init_transactions()
    p.begin_transaction()
    reports: list[Any] = []
    p.produce("t", b"x" * 5000, partition=0, on_delivery=lambda e, m: reports.append(e))
    p.poll(1)
    assert reports and reports[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    with pytest.raises(KafkaException) as caught:
        p.commit_transaction()
    err = caught.value.args[0]
    assert err.txn_requires_abort() and not err.fatal()
    p.abort_transaction()
    p.begin_transaction()
    p.produce("t", b"ok", partition=0)
    p.commit_transaction()
    assert read_all("t", 2) == [b"ok"]


def test_transactional_api_without_transactional_id_is_not_configured(cluster: Any) -> None:
    p = Producer({})
    with pytest.raises(KafkaException) as caught:
        p.begin_transaction()
    assert caught.value.args[0].code() == KafkaError._NOT_CONFIGURED


def test_produce_batch_purge_list_topics_and_close(cluster: Any) -> None:
    p = Producer({"linger.ms": 100})
    msgs = [{"value": b"a"}, {"value": "b", "key": "k"}]
    assert p.produce_batch("t", msgs, partition=1) == 2
    reports: list[Any] = []
    p.produce("t", b"c", on_delivery=lambda e, m: reports.append(e))
    p.purge(in_flight=False)
    p.poll(0)
    assert reports and reports[0].code() == KafkaError._PURGE_QUEUE
    md = p.list_topics(timeout=5)
    assert set(md.topics) >= {"t", "out"} and len(md.topics["t"].partitions) == 2
    assert md.topics["t"].partitions[0].leader in md.brokers
    assert p.list_topics("nope", timeout=5).topics["nope"].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert p.cluster_id() == "eos-magics-sim"
    with Producer({}) as q:
        q.produce("t", b"d")
    assert p.close() and p.close()
    with pytest.raises(RuntimeError, match="closed"):
        p.produce("t", b"after close")
