"""kafka-python clients recorded against librdkafka's mock cluster, in one history with confluent-kafka.

Goal: :mod:`engine.record.kafka_python` records sends (their futures' outcomes), transactions
and polls the way :mod:`engine.record.confluent` does, so clients of both libraries share one
:class:`Recorder` and one verdict. Method: kafka-python 3 producers (idempotent, transactional)
write to the mock; a kafka-python consumer reads the idempotent topic back; the transactional
topic is read by a confluent-kafka read_committed consumer, because kafka-python rejects the
mock's control batches (their CRC is 0). kafka-python must be told ``api_version=(2, 3)``: it
cannot decode the mock's reply to a newer ApiVersions request (``reach.md`` §1).
"""

from __future__ import annotations

import pytest

pytest.importorskip("kafka")

from confluent_kafka import OFFSET_BEGINNING, TopicPartition
from kafka import TopicPartition as KafkaTopicPartition
from kafka import errors as kafka_errors

from engine.record import Recorder, RecordingConsumer
from engine.record.kafka_python import RecordingKafkaConsumer, RecordingKafkaProducer, send_outcome
from engine.record.workloads import read_to_end


def test_kafka_python_sends_and_transactions_are_recorded_and_judged_with_confluent_reads(mock_cluster, topic):
    rec = Recorder()
    kp = {"bootstrap_servers": mock_cluster.bootstrap_servers.split(","), "api_version": (2, 3)}
    plain, txn_topic = f"{topic}-plain", f"{topic}-txn"

    producer = RecordingKafkaProducer(rec, enable_idempotence=True, **kp)
    futures = [producer.send(plain, f"i-{i}".encode(), partition=0) for i in range(3)]
    producer.flush(10)
    assert [f.get(1).offset for f in futures] == [0, 1, 2]
    tx = RecordingKafkaProducer(rec, transactional_id=f"{topic}-t", **kp)
    tx.init_transactions()
    tx.begin_transaction()
    for i in range(3):
        tx.send(txn_topic, f"c-{i}".encode(), partition=0)
    tx.commit_transaction()
    tx.begin_transaction()
    for i in range(3):
        tx.send(txn_topic, f"a-{i}".encode(), partition=0)
    tx.flush()
    tx.abort_transaction()

    consumer = RecordingKafkaConsumer(recorder=rec, auto_offset_reset="earliest", enable_auto_commit=False, **kp)
    consumer.assign([KafkaTopicPartition(plain, 0)])
    read = 0
    for _ in range(20):
        read += sum(len(records) for records in consumer.poll(500).values())
        if read >= 3:
            break
    committed = RecordingConsumer(
        mock_cluster.config(**{"group.id": f"{topic}-r", "isolation.level": "read_committed"}), rec
    )
    committed.assign([TopicPartition(txn_topic, 0, OFFSET_BEGINNING)])
    read_to_end(committed, txn_topic, ["c-0", "c-1", "c-2"], rec)
    for client in (committed, consumer, tx, producer):
        client.close()

    history = list(rec.history())
    assert [(op.type, [m.offset for m in op.mops]) for op in history if op.f == "send" and op.type != "invoke"] == [
        ("ok", [0]),
        ("ok", [1]),
        ("ok", [2]),
    ]
    assert [op.type for op in history if op.f == "txn" and op.type != "invoke"] == ["ok", "fail"]
    assert [(m.offset, m.value) for op in history if op.f == "poll" for m in op.mops if m.topic == plain] == [
        (0, "i-0"),
        (1, "i-1"),
        (2, "i-2"),
    ]
    report = rec.check()
    assert report.kinds() == {"G1a": 3}  # the mock's read_committed hands out the aborted records
    assert sorted(a.values[0] for a in report.forbidden) == ["a-0", "a-1", "a-2"]
    assert rec.faults == ()


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (None, "ok"),
        (kafka_errors.KafkaTimeoutError(), "info"),
        (kafka_errors.NotLeaderForPartitionError(), "info"),
        (kafka_errors.MessageSizeTooLargeError(), "fail"),
        (kafka_errors.OutOfOrderSequenceNumberError(), "fail"),
        (kafka_errors.ProducerFencedError(), "fail"),
        (kafka_errors.TransactionAbortedError(), "fail"),
    ],
)
def test_a_kafka_python_send_error_maps_as_confluent_delivery_errors_do(error, outcome):
    assert send_outcome(error) == outcome


def test_a_kafka_python_group_assignment_is_recorded_through_the_rebalance_listener(mock_cluster, topic):
    """The group's assignment reaches the history by the listener chained before the application's."""
    rec = Recorder()
    kp = {"bootstrap_servers": mock_cluster.bootstrap_servers.split(","), "api_version": (2, 3)}
    producer = RecordingKafkaProducer(rec, **kp)
    producer.send(topic, b"g-0", partition=0).get(10)
    producer.close()

    assigned: list[object] = []

    class Listener:
        def on_partitions_revoked(self, revoked):
            pass

        def on_partitions_assigned(self, partitions):
            assigned.append(sorted((tp.topic, tp.partition) for tp in partitions))

    consumer = RecordingKafkaConsumer(
        recorder=rec, group_id=f"{topic}-g", auto_offset_reset="earliest", enable_auto_commit=False, **kp
    )
    consumer.subscribe([topic], listener=Listener())
    for _ in range(40):
        if sum(len(records) for records in consumer.poll(250).values()):
            break
    consumer.close()

    keys = [(topic, p) for p in range(4)]  # the mock creates a topic with four partitions
    assert assigned == [keys]  # the application's listener still hears of it
    subscribes = [op.keys for op in rec.history() if op.f == "subscribe" and op.type == "ok"]
    assert subscribes[:2] == [(), tuple(keys)]  # subscribe() with nothing yet, then the group's assignment
    assert rec.faults == ()
