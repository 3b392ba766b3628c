"""ListOffsets by timestamp (``offsets_for_times``) and by max timestamp (KIP-734) against a served cluster.

Goal: as Kafka's ``ReplicaManager.fetchOffset`` answers them: the first record whose timestamp is at
least the target, with that record's timestamp; -1/-1 past the last record; for read_committed,
-1/-1 for a record at or past the LSO (an open transaction); -3 (``OffsetSpec.max_timestamp``, v7)
names the first record of the largest timestamp, even when timestamps go back in offset order.

Method: records produced with explicit timestamps by confluent-kafka, looked up with its
``Consumer.offsets_for_times`` and ``AdminClient.list_offsets``.
"""

from __future__ import annotations

from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

BASE = 1_700_000_000_000
#: Timestamps of offsets 0..4: the largest (offset 2) comes before a smaller one (offset 3).
STAMPS = (BASE, BASE + 1_000, BASE + 5_000, BASE + 2_000, BASE + 3_000)


def _produce(config, topic="t") -> None:
    p = Producer(config)
    for i, ts in enumerate(STAMPS):
        p.produce(topic, value=b"v%d" % i, timestamp=ts)
        p.flush(10)  # one batch per record: each keeps its own timestamp order in the log
    assert p.flush(10) == 0


def _lookup(config, targets, **extra):
    c = Consumer({**config, "group.id": "times", **extra})
    try:
        found = c.offsets_for_times([TopicPartition("t", 0, t) for t in targets], timeout=10)
    finally:
        c.close()
    return [tp.offset for tp in found]


def test_offsets_for_times_finds_the_first_record_at_or_after_each_timestamp(served, ck) -> None:
    server = served([("t", 1, 3)])
    _produce(ck(server))
    assert _lookup(ck(server), [0]) == [0]
    assert _lookup(ck(server), [BASE + 1]) == [1]
    assert _lookup(ck(server), [BASE + 1_500]) == [2]  # offset 2 (BASE+5000) is the first at or after
    assert _lookup(ck(server), [BASE + 5_000]) == [2]
    assert _lookup(ck(server), [BASE + 9_000]) == [-1]  # none: Kafka answers -1


def test_admin_list_offsets_gives_the_record_timestamp_and_the_max_timestamp(served, ck) -> None:
    server = served([("t", 1, 3)])
    _produce(ck(server))
    admin = AdminClient(ck(server))
    tp = TopicPartition("t", 0)
    by_time = admin.list_offsets({tp: OffsetSpec.for_timestamp(BASE + 1_500)})[tp].result(10)
    assert (by_time.offset, by_time.timestamp) == (2, BASE + 5_000)
    biggest = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(10)
    assert (biggest.offset, biggest.timestamp) == (2, BASE + 5_000)
    latest = admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(10)
    assert latest.offset == len(STAMPS)


def test_read_committed_lookups_stop_at_the_last_stable_offset(served, ck, txn_producer) -> None:
    server = served([("t", 1, 3)])
    _produce(ck(server))
    p = txn_producer(ck(server), "open-tx")
    p.begin_transaction()
    p.produce("t", value=b"pending", timestamp=BASE + 20_000)
    p.flush(10)  # offset 5, in a transaction left open
    assert _lookup(ck(server), [BASE + 10_000], **{"isolation.level": "read_uncommitted"}) == [5]
    assert _lookup(ck(server), [BASE + 10_000], **{"isolation.level": "read_committed"}) == [-1]
    assert _lookup(ck(server), [BASE + 1], **{"isolation.level": "read_committed"}) == [1]
    admin = AdminClient(ck(server))
    tp = TopicPartition("t", 0)
    committed_max = admin.list_offsets({tp: OffsetSpec.max_timestamp()}, isolation_level=IsolationLevel.READ_COMMITTED)[
        tp
    ].result(10)
    assert committed_max.offset == -1  # the largest timestamp is past the LSO
    p.abort_transaction(10)
