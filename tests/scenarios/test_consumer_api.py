"""The confluent-kafka Consumer surface: assignment(), pause/resume, watermarks, list_topics, stored offsets.

Goal: code written against confluent-kafka's ``Consumer`` runs here unchanged for the calls people
reach for first, bad arguments are refused with a ``TypeError``/``ValueError`` that says what to
pass, and a consumer assigned a partition that does not exist tells the application once (a
``Message`` whose ``error()`` is ``UnknownTopicOrPartitionException``), keeps looking in the
background without flooding the cluster with metadata requests, and starts reading when the
topic is created. Method: small clusters on fixed seeds with real producers and consumers; the
tests check returned values, committed offsets (``committed()``, the group view) and the trace
(which requests were sent, and when).
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster, Consumer, Message, TopicPartition
from engine.errors import (
    ErrorCode,
    IllegalStateError,
    UnknownTopicOrPartitionException,
)

GROUP = "g"


def _cluster(seed: int = 5, partitions: int = 2) -> Cluster:
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=partitions, replication_factor=3)
    return c


def _produce(c: Cluster, values_by_partition: dict[int, list[bytes]], topic: str = "t") -> None:
    p = c.producer({"linger.ms": 0})
    for part, values in values_by_partition.items():
        for v in values:
            p.produce(topic, value=v, partition=part)
    assert p.flush(timeout=10) == 0


def _drain(consumer: Consumer, timeout: float = 1.0) -> list[Message]:
    out: list[Message] = []
    while got := consumer.consume(1_000, timeout=timeout):
        out.extend(got)
    return out


def _values(msgs: list[Message]) -> list[Any]:
    return [m.value() for m in msgs]


def _sent(c: Cluster, node: str, msg: str, since_ms: int = 0) -> list[Any]:
    return [
        e
        for e in c.world.trace.select(node=node, kind="send", name="request")
        if e.get("msg") == msg and e.time_ms >= since_ms
    ]


def _works(c: Cluster, consumer: Consumer) -> None:
    """After a refused call, the consumer still reads."""
    _produce(c, {0: [b"after"]})
    consumer.assign([("t", 0)])
    assert b"after" in _values(_drain(consumer))


# -- assignment() -------------------------------------------------------------------------------


def test_assignment_is_a_method_returning_topic_partitions_as_in_confluent_kafka() -> None:
    c = _cluster()
    consumer = c.consumer()
    assert consumer.assignment() == []
    consumer.assign([("t", 1), TopicPartition("t", 0, 5)])
    got = consumer.assignment()
    assert got == [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert all(isinstance(tp, TopicPartition) for tp in got)
    assert consumer.position(consumer.assignment())[0].offset == 5
    consumer.unassign()
    assert consumer.assignment() == []


# -- argument validation ------------------------------------------------------------------------

ASSIGN_CASES: list[tuple[str, Any, type[BaseException], str]] = [
    ("None", None, TypeError, "a list of TopicPartition"),
    ("a str", "t", TypeError, "a list of TopicPartition"),
    ("a bare pair", ("t", 0), TypeError, r"wrap it in a list: \[\('t', 0\)\]"),
    ("a bare TopicPartition", TopicPartition("t", 0), TypeError, "wrap it in a list"),
    ("a dict", {"t": 0}, TypeError, "a list of TopicPartition"),
    ("a one-tuple", [("t",)], TypeError, r"\(topic, partition\) pairs"),
    ("a triple", [("t", 0, 5)], TypeError, r"\(topic, partition\) pairs"),
    ("an int", [3], TypeError, r"\(topic, partition\) pairs"),
    ("topic int", [(1, 0)], TypeError, "topic must be a non-empty str"),
    ("topic empty", [("", 0)], ValueError, "topic must be a non-empty str"),
    ("partition str", [("t", "0")], TypeError, "partition must be an int"),
    ("partition bool", [("t", True)], TypeError, "partition must be an int"),
    ("partition negative", [("t", -1)], ValueError, "partition must be >= 0"),
    ("partition unset", [TopicPartition("t")], ValueError, "partition must be >= 0"),
    ("bad offset", [TopicPartition("t", 0, -7)], ValueError, "offset -7"),
    ("duplicate", [("t", 0), TopicPartition("t", 0)], ValueError, "t-0 twice"),
]


@pytest.mark.parametrize(("arg", "error", "match"), [c[1:] for c in ASSIGN_CASES], ids=[c[0] for c in ASSIGN_CASES])
def test_assign_rejects_malformed_partitions_saying_what_to_pass(arg: Any, error: type, match: str) -> None:
    c = _cluster()
    consumer = c.consumer()
    with pytest.raises(error, match=match) as exc:
        consumer.assign(arg)
    assert not isinstance(exc.value, (AttributeError, KeyError, IndexError))
    assert "assign()" in str(exc.value)
    assert consumer.assignment() == []
    _works(c, consumer)


OTHER_CASES: list[tuple[str, Any, type[BaseException], str]] = [
    ("seek a pair", lambda k: k.seek(("t", 0)), TypeError, "seek.. takes a TopicPartition"),
    ("seek invalid offset", lambda k: k.seek(TopicPartition("t", 0)), ValueError, "offset -1001"),
    ("position a str", lambda k: k.position("t"), TypeError, "position"),
    ("pause None", lambda k: k.pause(None), TypeError, "pause"),
    ("pause unassigned", lambda k: k.pause([("t", 1)]), IllegalStateError, "t-1 is not assigned"),
    ("resume unassigned", lambda k: k.resume([TopicPartition("t", 1)]), IllegalStateError, "t-1 is not assigned"),
    ("consume zero", lambda k: k.consume(0), ValueError, "between 1 and 1000000"),
    ("consume too many", lambda k: k.consume(1_000_001), ValueError, "between 1 and 1000000"),
    ("consume str", lambda k: k.consume("5"), TypeError, "num_messages must be an int"),
    ("consume negative timeout", lambda k: k.consume(1, timeout=-0.5), ValueError, "None/-1 for no limit"),
    ("poll negative timeout", lambda k: k.poll(-2), ValueError, "None/-1 for no limit"),
    ("poll str timeout", lambda k: k.poll("1"), TypeError, "timeout must be a number"),
    ("watermarks a pair", lambda k: k.get_watermark_offsets(("t", 0)), TypeError, "TopicPartition"),
    ("list_topics int", lambda k: k.list_topics(5), TypeError, "topic must be a topic name"),
    ("incremental_assign twice", lambda k: k.incremental_assign([("t", 0)]), IllegalStateError, "already assigned"),
    ("incremental_unassign", lambda k: k.incremental_unassign([("t", 1)]), IllegalStateError, "not assigned"),
]


@pytest.mark.parametrize(("call", "error", "match"), [c[1:] for c in OTHER_CASES], ids=[c[0] for c in OTHER_CASES])
def test_other_consumer_calls_reject_malformed_arguments(call: Any, error: type, match: str) -> None:
    c = _cluster()
    consumer = c.consumer()
    consumer.assign([("t", 0)])
    with pytest.raises(error, match=match) as exc:
        call(consumer)
    assert not isinstance(exc.value, (AttributeError, KeyError, IndexError))
    _works(c, consumer)


def test_subscribe_refuses_a_bare_topic_name_that_it_would_split_into_letters() -> None:
    c = _cluster()
    consumer = c.consumer({"group.id": GROUP})
    with pytest.raises(TypeError, match=r"wrap it in a list: \['orders'\]"):
        consumer.subscribe("orders")
    with pytest.raises(TypeError, match="topic names must be non-empty str"):
        consumer.subscribe(["t", None])
    with pytest.raises(TypeError, match="on_assign must be a function"):
        consumer.subscribe(["t"], on_assign="print")
    assert consumer.group.subscription == ()
    consumer.subscribe(["t"])
    c.run_until(lambda: len(consumer.assignment()) == 2 or c.now_ms > 30_000)
    assert consumer.assignment() == [TopicPartition("t", 0), TopicPartition("t", 1)]


def test_poll_with_timeout_none_or_minus_one_waits_until_a_record_arrives() -> None:
    c = _cluster()
    consumer = c.consumer()
    consumer.assign([("t", 0)])
    p = c.producer({"linger.ms": 0})
    start = c.now_ms
    c.world.scheduler.call_later(30_000, lambda: p.produce("t", value=b"late", partition=0))
    m = consumer.poll(timeout=None)
    assert m is not None
    assert m.value() == b"late"
    assert c.now_ms - start >= 30_000
    c.world.scheduler.call_later(20_000, lambda: p.produce("t", value=b"later", partition=0))
    assert _values(consumer.consume(10, timeout=-1)) == [b"later"]
    assert consumer.poll(timeout=0) is None  # 0: do not wait


def test_poll_with_a_timeout_returns_when_the_timeout_ends_not_at_the_next_event_of_a_quiet_cluster() -> None:
    c = _cluster()
    consumer = c.consumer({"fetch.max.wait.ms": 500})
    consumer.assign([("t", 0)])
    consumer.consume(1, timeout=1.0)  # positioned; its next fetch waits on the leader for 500 ms
    for timeout_s in (0.05, 0.2, 0.03):
        start = c.now_ms
        assert consumer.consume(10, timeout=timeout_s) == []
        assert c.now_ms - start == round(timeout_s * 1000)


# -- pause / resume -----------------------------------------------------------------------------


def test_paused_partitions_are_not_fetched_and_their_buffered_records_wait_for_resume() -> None:
    c = _cluster()
    _produce(c, {0: [b"a0", b"a1"], 1: [b"b0", b"b1"]})
    consumer = c.consumer()
    consumer.assign([("t", 0), ("t", 1)])
    c.run_for(200)  # both partitions fetched: their records sit in the consumer's buffer
    consumer.pause([TopicPartition("t", 0)])
    assert consumer.paused() == [TopicPartition("t", 0)]
    paused_at = c.now_ms
    assert _values(_drain(consumer)) == [b"b0", b"b1"]
    _produce(c, {0: [b"a2"], 1: [b"b2"]})
    assert _values(_drain(consumer)) == [b"b2"]
    fetches = _sent(c, consumer.name, "FetchRequest", since_ms=paused_at + 1)
    assert fetches
    assert {e.get("tp") for e in fetches} == {"t-1"}, "a paused partition is not fetched"
    assert consumer.position([("t", 0)])[0].offset == 0  # nothing of t-0 was handed out
    consumer.resume([("t", 0)])
    assert consumer.paused() == []
    assert _values(_drain(consumer)) == [b"a0", b"a1", b"a2"]


# -- get_watermark_offsets ----------------------------------------------------------------------


def test_get_watermark_offsets_is_low_and_high_and_high_is_the_lso_for_read_committed() -> None:
    c = _cluster()
    txn = c.producer({"transactional.id": "tx", "linger.ms": 0})
    txn.init_transactions()
    txn.begin_transaction()
    txn.produce("t", value=b"c0", partition=0)
    txn.produce("t", value=b"c1", partition=0)
    txn.commit_transaction()  # offsets 0, 1 and the COMMIT marker at 2
    txn.begin_transaction()
    txn.produce("t", value=b"open", partition=0)
    txn.flush()  # offset 3, in a transaction still open: HW 4, LSO 3
    uncommitted = c.consumer()
    committed = c.consumer({"isolation.level": "read_committed"})
    tp = TopicPartition("t", 0)
    assert uncommitted.get_watermark_offsets(tp, timeout=5) == (0, 4)
    assert committed.get_watermark_offsets(tp, timeout=5) == (0, 3)
    assert committed.get_watermark_offsets(tp, cached=True) == (-1001, -1001)  # nothing fetched yet
    committed.assign([tp])
    assert _values(_drain(committed)) == [b"c0", b"c1"]
    assert committed.get_watermark_offsets(tp, cached=True) == (0, 3)
    with pytest.raises(UnknownTopicOrPartitionException, match="nope-0"):
        uncommitted.get_watermark_offsets(TopicPartition("nope", 0), timeout=5)
    with pytest.raises(UnknownTopicOrPartitionException, match="t-7"):
        uncommitted.get_watermark_offsets(TopicPartition("t", 7), timeout=5)


# -- list_topics --------------------------------------------------------------------------------


def test_list_topics_returns_cluster_metadata_shaped_like_confluent_kafkas() -> None:
    c = _cluster()
    consumer = c.consumer()
    md = consumer.list_topics(timeout=5)
    assert sorted(md.brokers) == [1, 2, 3]
    assert md.brokers[2].id == 2
    topic = md.topics["t"]
    assert topic.topic == "t"
    assert topic.error is None
    assert sorted(topic.partitions) == [0, 1]
    p0 = topic.partitions[0]
    view = c.describe_partition("t", 0)
    assert (p0.id, p0.leader, p0.replicas, p0.isrs) == (0, view.leader, list(view.replicas), list(view.isr))
    only = consumer.list_topics("t", timeout=5)
    assert list(only.topics) == ["t"]
    missing = consumer.list_topics("nope", timeout=5).topics["nope"]
    assert missing.partitions == {}
    assert isinstance(missing.error, UnknownTopicOrPartitionException)
    assert missing.error.code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- commit and store_offsets -------------------------------------------------------------------


def test_commit_takes_a_message_or_offsets_but_not_both_and_refuses_wrong_types() -> None:
    c = _cluster()
    _produce(c, {0: [b"m0", b"m1", b"m2"]})
    consumer = c.consumer({"group.id": GROUP})
    consumer.assign([("t", 0)])
    msgs = _drain(consumer)
    assert consumer.commit(message=msgs[0]) == [TopicPartition("t", 0, 1)]
    assert consumer.commit(offsets=[TopicPartition("t", 0, 2)]) == [TopicPartition("t", 0, 2)]
    with pytest.raises(ValueError, match="message or offsets, not both"):
        consumer.commit(message=msgs[1], offsets=[TopicPartition("t", 0, 3)])
    with pytest.raises(TypeError, match="message must be a Message"):
        consumer.commit(message="m1")
    with pytest.raises(TypeError, match="offsets must be a list of TopicPartition"):
        consumer.commit(offsets=[("t", 0, 3)])
    assert consumer.committed([("t", 0)], timeout=5) == [TopicPartition("t", 0, 2)]


def test_with_auto_offset_store_off_commit_sends_the_stored_offsets_not_the_position() -> None:
    c = _cluster()
    _produce(c, {0: [b"m0", b"m1", b"m2"]})
    consumer = c.consumer({"group.id": GROUP, "enable.auto.offset.store": False})
    consumer.assign([("t", 0)])
    msgs = _drain(consumer)
    assert len(msgs) == 3
    assert consumer.commit() == []  # nothing stored yet: nothing to commit
    consumer.store_offsets(message=msgs[0])
    assert consumer.commit() == [TopicPartition("t", 0, 1)]
    consumer.store_offsets(offsets=[TopicPartition("t", 0, 2)])
    consumer.commit(asynchronous=False)
    assert consumer.committed([("t", 0)], timeout=5)[0].offset == 2


def test_auto_commit_commits_the_stored_offsets_when_auto_offset_store_is_off() -> None:
    c = _cluster()
    _produce(c, {0: [b"m0", b"m1", b"m2"]})
    consumer = c.consumer(
        {
            "group.id": GROUP,
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 1_000,
            "enable.auto.offset.store": False,
        }
    )
    consumer.assign([("t", 0)])
    msgs = _drain(consumer)
    consumer.store_offsets(msgs[1])
    c.run_for(3_000)
    view = c.group_view(GROUP)
    assert view is not None
    assert view.committed_offset("t", 0) == 2  # the stored offset, not the position 3


def test_store_offsets_is_an_illegal_state_while_auto_offset_store_is_on() -> None:
    c = _cluster()
    _produce(c, {0: [b"m0"]})
    consumer = c.consumer({"group.id": GROUP})
    consumer.assign([("t", 0)])
    [m] = _drain(consumer)
    with pytest.raises(IllegalStateError, match=r"'enable\.auto\.offset\.store': False"):
        consumer.store_offsets(m)


def test_store_offsets_refuses_an_unassigned_partition_and_bad_arguments() -> None:
    c = _cluster()
    consumer = c.consumer({"group.id": GROUP, "enable.auto.offset.store": False})
    consumer.assign([("t", 0)])
    with pytest.raises(IllegalStateError, match="t-1 is not assigned"):
        consumer.store_offsets(offsets=[TopicPartition("t", 1, 3)])
    with pytest.raises(ValueError, match="message or offsets"):
        consumer.store_offsets()
    with pytest.raises(ValueError, match="offset -1001"):
        consumer.store_offsets(offsets=[TopicPartition("t", 0)])


def test_consumer_group_metadata_and_memberid_are_confluent_kafkas_names() -> None:
    c = _cluster()
    consumer = c.consumer({"group.id": GROUP})
    assert consumer.memberid() is None
    consumer.subscribe(["t"])
    c.run_until(lambda: len(consumer.assignment()) == 2 or c.now_ms > 30_000)
    assert consumer.consumer_group_metadata() == consumer.group_metadata()
    assert consumer.memberid() == consumer.group_metadata().member_id != ""


# -- incremental assign -------------------------------------------------------------------------


def test_incremental_assign_adds_partitions_and_incremental_unassign_removes_them() -> None:
    c = _cluster()
    _produce(c, {0: [b"a0"], 1: [b"b0"]})
    consumer = c.consumer()
    consumer.assign([("t", 0)])
    assert _values(_drain(consumer)) == [b"a0"]
    consumer.incremental_assign([TopicPartition("t", 1)])
    assert consumer.assignment() == [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert _values(_drain(consumer)) == [b"b0"]  # t-0 kept its position; t-1 starts at auto.offset.reset
    consumer.incremental_unassign([("t", 0)])
    assert consumer.assignment() == [TopicPartition("t", 1)]
    _produce(c, {0: [b"a1"], 1: [b"b1"]})
    assert _values(_drain(consumer)) == [b"b1"]
    consumer.incremental_assign([TopicPartition("t", 0, 1)])  # with an offset, as assign() takes it
    assert _values(_drain(consumer)) == [b"a1"]


# -- unknown topics and partitions --------------------------------------------------------------


def test_a_consumer_assigned_an_unknown_topic_gets_one_error_then_reads_once_the_topic_exists() -> None:
    c = _cluster()
    consumer = c.consumer()
    consumer.assign([("later", 0)])
    start = c.now_ms
    got = consumer.consume(10, timeout=2)
    assert len(got) == 1
    [err] = got
    assert isinstance(err.error(), UnknownTopicOrPartitionException)
    assert err.error().code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (err.topic(), err.partition()) == ("later", 0)
    assert "later" in str(err.error())
    assert consumer.consume(10, timeout=5) == []  # reported once per assignment, not on every poll
    assert consumer.poll(1.0) is None
    # It keeps looking, with a backoff: a handful of metadata requests, not one every round trip.
    metadata = _sent(c, consumer.name, "MetadataRequest", since_ms=start)
    assert 2 <= len(metadata) <= 30, len(metadata)
    c.create_topic("later", partitions=1, replication_factor=3)
    _produce(c, {0: [b"finally"]}, topic="later")
    assert _values(_drain(consumer, timeout=3)) == [b"finally"]


def test_an_unknown_partition_of_an_existing_topic_is_reported_once_per_assignment() -> None:
    c = _cluster()
    _produce(c, {0: [b"a0"]})
    consumer = c.consumer()
    consumer.assign([("t", 0), ("t", 5)])
    got = _drain(consumer)
    errors = [m for m in got if m.error() is not None]
    assert [(m.topic(), m.partition()) for m in errors] == [("t", 5)]
    assert "partition 5" in str(errors[0].error())
    assert "2 partitions" in str(errors[0].error())
    assert _values([m for m in got if m.error() is None]) == [b"a0"]
    consumer.assign([("t", 5)])  # a new assignment: told again
    assert [m.partition() for m in consumer.consume(10, timeout=2) if m.error() is not None] == [5]


def test_an_unknown_partition_never_blocks_the_group_path_or_commits() -> None:
    c = _cluster()
    consumer = c.consumer({"group.id": GROUP})
    consumer.assign([("ghost", 0)])
    got = consumer.consume(10, timeout=3)
    assert [type(m.error()) for m in got] == [UnknownTopicOrPartitionException]
    assert consumer.commit() == []


@pytest.mark.parametrize("reset", ["latest", "earliest"])
def test_offset_beginning_given_to_assign_before_metadata_arrives_is_kept(reset: str) -> None:
    # A new consumer knows no leader yet: the requested start waits for metadata, and must not be
    # replaced by the group's committed offset or auto.offset.reset meanwhile (Kafka keeps a
    # requested reset in SubscriptionState until ListOffsets answers).
    c = _cluster()
    _produce(c, {0: [b"a", b"b"]})
    consumer = c.consumer({"group.id": GROUP, "auto.offset.reset": reset})
    consumer.assign([TopicPartition("t", 0, -2)])  # OFFSET_BEGINNING
    assert _values(_drain(consumer)) == [b"a", b"b"]
