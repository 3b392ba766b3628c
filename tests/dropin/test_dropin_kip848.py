"""The drop-in's consumers with ``group.protocol=consumer`` (KIP-848), against Kafka 4.4's behaviour.

:func:`share_then_leave` is one confluent-kafka program; it runs through the drop-in on the
simulated cluster and, in the slow test, with real confluent-kafka 2.16.1 against Kafka 4.4
(:class:`~engine.conform.realtime_reference.KafkaReference`), and both must give
:data:`KAFKA_44_CALLBACKS`: the rebalance callbacks as librdkafka calls them for this protocol
(incremental: a revocation is followed by an ``on_assign`` of what was added, even nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import eos_magics.kafka as kafka
from engine import Cluster
from engine.conform.realtime_reference import KafkaReference, ReferenceClusterError, find_libs
from engine.errors import ErrorCode

#: What confluent-kafka 2.16.1 called on Kafka 4.4.0 (recorded with the slow test below).
KAFKA_44_CALLBACKS = {
    "a": [["assign", [0, 1, 2, 3]], ["revoke", [2, 3]], ["assign", []], ["assign", [2, 3]], ["revoke", [0, 1, 2, 3]]],
    "b": [["assign", [2, 3]], ["revoke", [2, 3]]],
}
#: Kafka 4.4 settings for the reference run: a KIP-848 session of 6 s, heartbeats every second.
KIP848_BROKER_SETTINGS = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}


def _poll_until(consumers: list[Any], done: Callable[[], bool], polls: int = 300) -> bool:
    for _ in range(polls):
        for c in consumers:
            c.poll(0.1)
        if done():
            return True
    return False


def share_then_leave(
    mod: Any, conf: dict[str, Any], topic: str, group: str, *, incremental: bool = False
) -> dict[str, Any]:
    """Member a owns 4 partitions, b joins (2 and 2), b closes, a owns all 4; return the callbacks.

    With ``incremental`` the callbacks make the change themselves (``incremental_assign`` /
    ``incremental_unassign``, as confluent-kafka's examples do); otherwise the client makes it.
    """
    events: dict[str, list[list[Any]]] = {"a": [], "b": []}

    def member(name: str) -> Any:
        c = mod.Consumer({**conf, "group.id": group, "group.protocol": "consumer", "auto.offset.reset": "earliest"})
        log = events[name]

        def callback(kind: str, change: str | None) -> Callable[[Any, list[Any]], None]:
            def cb(consumer: Any, tps: list[Any]) -> None:
                log.append([kind, sorted(tp.partition for tp in tps)])
                if incremental and change is not None:
                    getattr(consumer, change)(tps)

            return cb

        c.subscribe(
            [topic],
            on_assign=callback("assign", "incremental_assign"),
            on_revoke=callback("revoke", "incremental_unassign"),
            on_lost=callback("lost", "incremental_unassign"),
        )
        return c

    def owns(c: Any) -> int:
        return len(c.assignment())

    a = member("a")
    alone = _poll_until([a], lambda: owns(a) == 4)
    b = member("b")
    shared = _poll_until([a, b], lambda: owns(a) == 2 and owns(b) == 2)
    b_id = b.memberid()
    b.close()
    back = _poll_until([a], lambda: owns(a) == 4)
    a.close()
    return {"steps": [alone, shared, back], "callbacks": events, "member_id": b_id}


@pytest.mark.parametrize("incremental", [False, True], ids=["client-assigns", "callbacks-assign"])
def test_two_members_share_four_partitions_and_the_survivor_takes_all_after_a_leave(
    cluster: Cluster, incremental: bool
) -> None:
    cluster.create_topic("four", partitions=4)
    out = share_then_leave(kafka, {"bootstrap.servers": "dropin"}, "four", "g848", incremental=incremental)
    assert out["steps"] == [True, True, True]
    assert out["callbacks"] == KAFKA_44_CALLBACKS
    # KIP-1082: the member id is the client's own UUID, as Kafka's Uuid.toString writes it.
    assert isinstance(out["member_id"], str) and len(out["member_id"]) == 22


@pytest.mark.slow
def test_the_same_program_gives_the_same_callbacks_on_kafka_44() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    try:
        find_libs()
    except ReferenceClusterError as exc:
        pytest.skip(str(exc))
    from confluent_kafka.admin import AdminClient, NewTopic

    with KafkaReference(brokers=3, settings=KIP848_BROKER_SETTINGS) as ref:
        conf = ref.client_config()
        admin = AdminClient(conf)
        for f in admin.create_topics([NewTopic("four", 4, 3)]).values():
            f.result()
        out = share_then_leave(confluent_kafka, conf, "four", "g848")
        by_callbacks = share_then_leave(confluent_kafka, conf, "four", "g848-incremental", incremental=True)
    assert out["steps"] == [True, True, True]
    assert out["callbacks"] == KAFKA_44_CALLBACKS
    assert by_callbacks["steps"] == [True, True, True]
    assert by_callbacks["callbacks"] == KAFKA_44_CALLBACKS


def test_classic_only_settings_are_refused_with_librdkafkas_text(cluster: Cluster) -> None:
    for key, value in (("partition.assignment.strategy", "range"), ("session.timeout.ms", 10_000)):
        with pytest.raises(kafka.KafkaException) as err:
            kafka.Consumer({"bootstrap.servers": "dropin", "group.id": "g", "group.protocol": "consumer", key: value})
        assert err.value.args[0].code() == kafka.KafkaError._INVALID_ARG
        assert f"`{key}` is not supported for `group.protocol=consumer`" in err.value.args[0].str()
    # group.remote.assignor is taken (librdkafka checks it only on the broker's answer).
    c = kafka.Consumer({"bootstrap.servers": "dropin", "group.id": "g", "group.remote.assignor": "range"})
    c.close()


def test_the_drop_in_has_no_rebalance_protocol_method_as_confluent_kafka_2_16(cluster: Cluster) -> None:
    c = kafka.Consumer({"bootstrap.servers": "dropin", "group.id": "g", "group.protocol": "consumer"})
    assert not hasattr(c, "rebalance_protocol")
    c.close()


def test_a_member_paused_past_its_session_is_fenced_and_the_survivor_gets_its_partitions(cluster: Cluster) -> None:
    cluster.create_topic("four", partitions=4)
    conf = {"bootstrap.servers": "dropin", "group.id": "gc", "group.protocol": "consumer"}
    events: list[list[Any]] = []
    a = kafka.Consumer(conf)
    a.subscribe(["four"], on_lost=lambda _c, tps: events.append(["lost", sorted(tp.partition for tp in tps)]))
    b = kafka.Consumer(conf)
    b.subscribe(["four"])
    assert _poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
    owned = sorted(tp.partition for tp in a.assignment())
    zombie_epoch = a._c.group.member_epoch
    cluster.pause(a._c.name)
    assert _poll_until([b], lambda: len(b.assignment()) == 4, polls=600)
    cluster.resume(a._c.name)
    assert a._c.group.member_epoch == zombie_epoch  # it still believes in its membership
    assert _poll_until([a, b], lambda: events != [])
    assert events == [["lost", owned]]
    assert a._c.group.fenced_by in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH)
    # It rejoins with epoch 0 and the same member id, and the two share the partitions again.
    assert _poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
    a.close()
    b.close()


def test_a_fenced_zombies_txn_offset_commit_is_refused_and_read_committed_sees_no_duplicate(cluster: Cluster) -> None:
    cluster.create_topic("src", partitions=1)
    cluster.create_topic("dst", partitions=1)
    feed = kafka.Producer({"bootstrap.servers": "dropin"})
    for i in range(10):
        feed.produce("src", value=f"r{i}".encode())
    feed.flush(10)
    conf = {
        "bootstrap.servers": "dropin",
        "group.id": "copy",
        "group.protocol": "consumer",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }

    def copier(tid: str) -> tuple[Any, Any]:
        c = kafka.Consumer(conf)
        c.subscribe(["src"])
        p = kafka.Producer({"bootstrap.servers": "dropin", "transactional.id": tid})
        p.init_transactions(10)
        return c, p

    def read(c: Any, n: int, polls: int = 300) -> list[Any]:
        got: list[Any] = []
        for _ in range(polls):
            got += [m for m in c.consume(n - len(got), 0.1) if m.error() is None]
            if len(got) >= n:
                break
        return got

    zombie, zp = copier("copy-a")
    records = read(zombie, 5)
    assert len(records) == 5
    stale = zombie.consumer_group_metadata()  # the epoch it will commit with
    cluster.pause(zombie._c.name)
    survivor, sp = copier("copy-b")
    rest = read(survivor, 10, polls=800)  # the zombie's partition comes after its session (45 s)
    assert [m.value() for m in rest] == [f"r{i}".encode() for i in range(10)]
    sp.begin_transaction()
    for m in rest:
        sp.produce("dst", value=m.value())
    sp.send_offsets_to_transaction(survivor.position(survivor.assignment()), survivor.consumer_group_metadata())
    sp.commit_transaction(10)
    cluster.resume(zombie._c.name)
    zp.begin_transaction()
    for m in records:
        zp.produce("dst", value=m.value())
    with pytest.raises(kafka.KafkaException) as err:
        offsets = [kafka.TopicPartition("src", 0, records[-1].offset() + 1)]
        zp.send_offsets_to_transaction(offsets, stale)
    assert err.value.args[0].txn_requires_abort()
    zp.abort_transaction(10)
    check = kafka.Consumer({"bootstrap.servers": "dropin", "group.id": "check", "auto.offset.reset": "earliest"})
    check.assign([kafka.TopicPartition("dst", 0)])
    seen = [m.value() for m in read(check, 15)]
    assert seen == [f"r{i}".encode() for i in range(10)]
    for c in (zombie, survivor, check):
        c.close()
