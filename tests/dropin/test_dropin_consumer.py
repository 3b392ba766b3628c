"""The drop-in Consumer behaves as confluent-kafka's on the simulated cluster.

Subscribe with ``on_assign`` (which may move the starting offsets, as confluent-kafka programs
do), committed/position/seek, asynchronous commits reported to ``on_commit``, ``_PARTITION_EOF``
events, librdkafka's batch ``consume``, and a closed consumer.
"""

from __future__ import annotations

from typing import Any

import pytest

from eos_magics.kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)


def fill(n: int, partition: int = 0, topic: str = "t") -> None:
    p = Producer({})
    for i in range(n):
        p.produce(topic, f"r{i}", partition=partition)
    p.flush()


def poll_n(c: Consumer, n: int, limit: int = 50) -> list[Message]:
    out: list[Message] = []
    for _ in range(limit):
        if len(out) == n:
            break
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            out.append(m)
    return out


def test_subscribe_with_on_assign_committed_position_and_seek(cluster: Any) -> None:
    fill(5)
    assigned: list[list[TopicPartition]] = []

    def on_assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assigned.append(partitions)
        for p in partitions:
            p.offset = OFFSET_BEGINNING  # librdkafka's default reset is latest: start over instead
        consumer.assign(partitions)

    c = Consumer({"bootstrap.servers": "localhost:9092", "group.id": "g"})
    c.subscribe(["t"], on_assign=on_assign)
    got = poll_n(c, 5)
    assert [m.value() for m in got] == [f"r{i}".encode() for i in range(5)]
    assert isinstance(got[0], Message) and got[0].offset() == 0 and got[0].latency() is None
    assert assigned and all(isinstance(tp, TopicPartition) for tp in assigned[0])
    assert sorted(tp.partition for tp in c.assignment()) == [0, 1]
    assert c.committed([TopicPartition("t", 0)])[0].offset == OFFSET_INVALID
    c.commit(asynchronous=False)
    assert c.committed([TopicPartition("t", 0)], timeout=5)[0].offset == 5
    assert c.position([TopicPartition("t", 0)])[0].offset == 5
    c.seek(TopicPartition("t", 0, 2))
    assert [m.value() for m in poll_n(c, 3)] == [b"r2", b"r3", b"r4"]
    assert c.memberid()
    assert c.consumer_group_metadata().group_id == "g"
    c.close()


def test_async_and_auto_commits_reach_on_commit_sync_ones_do_not(cluster: Any) -> None:
    fill(3)
    reports: list[tuple[Any, list[TopicPartition]]] = []
    c = Consumer(
        {
            "group.id": "g2",
            "auto.offset.reset": "earliest",
            "on_commit": lambda err, parts: reports.append((err, parts)),
            "auto.commit.interval.ms": 1000,
        }
    )
    c.assign([TopicPartition("t", 0)])
    msgs = poll_n(c, 3)
    c.commit(message=msgs[0], asynchronous=False)
    assert reports == []
    assert c.commit(message=msgs[1]) is None  # asynchronous by default, as in confluent-kafka
    c.poll(1.5)
    assert reports and reports[0][0] is None and reports[0][1][0].offset == 2
    for _ in range(4):
        c.poll(0.5)
    assert any(parts[0].offset == 3 for _, parts in reports)  # auto-commit (on by default in librdkafka)


def test_commit_without_offsets_raises_no_offset(cluster: Any) -> None:
    c = Consumer({"group.id": "g3"})
    with pytest.raises(KafkaException) as caught:
        c.commit()
    assert caught.value.args[0].code() == KafkaError._NO_OFFSET


def test_partition_eof_events_when_enabled(cluster: Any) -> None:
    fill(2, partition=1)
    c = Consumer({"group.id": "g4", "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("t", 1)])
    events = []
    for _ in range(10):
        m = c.poll(0.5)
        if m is not None:
            events.append(m)
        if any(e.error() is not None for e in events):
            break
    assert [e.value() for e in events if e.error() is None] == [b"r0", b"r1"]
    eof = next(e for e in events if e.error() is not None)
    assert eof.error().code() == KafkaError._PARTITION_EOF
    assert (eof.topic(), eof.partition(), eof.offset()) == ("t", 1, 2)
    assert c.poll(0.2) is None  # reported once per end reached


def test_consume_waits_for_the_whole_batch_or_the_timeout(cluster: Any) -> None:
    fill(3, partition=0)
    fill(3, partition=1)
    c = Consumer({"group.id": "g5", "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("t", 0), TopicPartition("t", 1)])
    assert len(c.consume(6, 5.0)) == 6
    start = cluster.now_ms
    assert c.consume(10, 0.3) == []
    assert cluster.now_ms - start >= 300
    assert c.consume(0, 1) == []


def test_get_watermark_offsets_list_topics_and_a_closed_consumer(cluster: Any) -> None:
    fill(4, partition=0)
    with Consumer({"group.id": "g6", "isolation.level": "read_uncommitted"}) as c:
        assert c.get_watermark_offsets(TopicPartition("t", 0), timeout=5) == (0, 4)
        assert "t" in c.list_topics(timeout=5).topics
        c.assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
        c.pause([TopicPartition("t", 0)])
        assert c.poll(0.5) is None
        c.resume([TopicPartition("t", 0)])
        assert poll_n(c, 1)[0].value() == b"r0"
    with pytest.raises(RuntimeError, match="Consumer closed"):
        c.poll(0)
    with pytest.raises(RuntimeError, match="Consumer closed"):
        c.assignment()
    c.close()  # a second close does nothing, as in confluent-kafka
