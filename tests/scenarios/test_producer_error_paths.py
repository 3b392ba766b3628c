"""Producer error paths as Kafka defines them: failed sends, expiry, retriable timeouts, bad arguments.

Each test drives the public, confluent-kafka-shaped API on a small fixed-seed cluster and checks
what the application sees (exceptions, delivery reports) and what read_committed consumers see.
Every test here failed on the engine before the error-paths issue: a transaction committed
although one of its sends failed, a timed-out commit could not be retried, records that could
not be sent never expired while metadata requests ran every round trip, and bad arguments
escaped as internal errors.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster
from engine.client.message import TopicPartition
from engine.errors import (
    IllegalStateError,
    KafkaError,
    PurgedException,
    RecordTooLargeException,
    TimeoutException,
    TransactionAbortedException,
    UnknownTopicOrPartitionException,
)


def _cluster(seed: int = 3, partitions: int = 2) -> Cluster:
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=partitions, replication_factor=3)
    return c


def _txn(c: Cluster, txn_id: str = "app", **config: Any) -> Any:
    p = c.producer({"transactional.id": txn_id, "linger.ms": 0, **config})
    p.init_transactions()
    return p


def _read_committed(c: Cluster, partitions: tuple[int, ...] = (0, 1)) -> list[Any]:
    consumer = c.consumer({"isolation.level": "read_committed"})
    consumer.assign([("t", p) for p in partitions])
    out: list[Any] = []
    while got := consumer.consume(1000, timeout=1.0):
        out.extend(m.value() for m in got)
    return out


def _reports(box: list[Any]) -> Any:
    return lambda err, msg: box.append((err, msg))


def _works_afterwards(c: Cluster) -> None:
    """The cluster still serves a fresh producer and consumer."""
    p = c.producer({"linger.ms": 0})
    p.produce("t", value=b"still-works", partition=1)
    assert p.flush() == 0
    assert b"still-works" in _read_committed(c, (1,))


# -- a failed send makes the transaction abortable ------------------------------------------


def test_a_transaction_with_a_send_to_a_missing_topic_cannot_commit_and_only_abort_is_left() -> None:
    c = _cluster()
    p = _txn(c)
    box: list[Any] = []
    p.begin_transaction()
    p.produce("t", value=b"good", partition=0, on_delivery=_reports(box))
    p.produce("no-such-topic", value=b"lost", on_delivery=_reports(box))
    with pytest.raises(UnknownTopicOrPartitionException, match=r"call abort_transaction\(\)"):
        p.commit_transaction()
    assert [type(e).__name__ if e else None for e, _ in box] == [None, "UnknownTopicOrPartitionException"]
    with pytest.raises(UnknownTopicOrPartitionException):
        p.produce("t", value=b"more", partition=0)  # still abortable: no new sends
    with pytest.raises(IllegalStateError, match="abort_transaction"):
        p.begin_transaction()
    p.abort_transaction()
    assert _read_committed(c) == []
    p.begin_transaction()  # a new transaction works after the abort
    p.produce("t", value=b"next", partition=0)
    p.commit_transaction()
    assert _read_committed(c) == [b"next"]


def test_a_failed_send_without_a_delivery_callback_fails_the_commit_not_flush() -> None:
    c = _cluster()
    p = _txn(c)
    p.begin_transaction()
    p.produce("t", value=b"good", partition=0)
    p.produce("no-such-topic", value=b"lost")
    assert p.flush() == 0  # the failed record is resolved; no callback, nothing to call
    with pytest.raises(UnknownTopicOrPartitionException):
        p.commit_transaction()
    p.abort_transaction()
    assert _read_committed(c) == []


def test_a_record_too_large_is_reported_and_makes_the_transaction_abortable() -> None:
    c = _cluster()
    p = _txn(c, **{"max.request.size": 1_000})
    box: list[Any] = []
    p.begin_transaction()
    p.produce("t", value=b"x" * 2_000, partition=0, on_delivery=_reports(box))
    p.poll(0)
    assert isinstance(box[0][0], RecordTooLargeException)
    assert "max.request.size=1000" in str(box[0][0])
    with pytest.raises(RecordTooLargeException):
        p.commit_transaction()
    p.abort_transaction()


def test_a_batch_over_the_topic_s_max_message_bytes_is_refused_by_the_leader() -> None:
    # The broker's check (UnifiedLog.analyzeAndValidateRecords) on the producer's estimated batch
    # size: the idempotent producer reports MESSAGE_TOO_LARGE, bumps its epoch and carries on.
    c = Cluster(seed=3, brokers=3)
    c.create_topic("big", partitions=1, replication_factor=3, config={"max.message.bytes": 2_000})
    p = c.producer({"linger.ms": 0})
    box: list[Any] = []
    p.produce("big", value=b"x" * 5_000, partition=0, on_delivery=_reports(box))
    p.flush()
    p.produce("big", value=b"small", partition=0, on_delivery=_reports(box))
    p.flush()
    (too_large, _), (ok, small) = box
    assert isinstance(too_large, RecordTooLargeException)
    assert "exceeds the maximum configured value of 2000" in str(too_large)
    assert (ok, small.offset()) == (None, 0)


def test_purge_reports_every_queued_record_and_makes_the_transaction_abortable() -> None:
    c = _cluster()
    p = _txn(c, **{"linger.ms": 1_000})
    box: list[Any] = []
    p.begin_transaction()
    for i in range(3):
        p.produce("t", value=f"v{i}".encode(), partition=0, on_delivery=_reports(box))
    p.purge(in_queue=True, in_flight=False)
    assert p.flush() == 0
    assert [type(e) for e, _ in box] == [PurgedException] * 3
    with pytest.raises(PurgedException):
        p.commit_transaction()
    p.abort_transaction()
    assert _read_committed(c) == []


def test_abort_fails_records_still_waiting_for_metadata_as_aborted() -> None:
    c = _cluster()
    p = _txn(c)
    box: list[Any] = []
    p.begin_transaction()
    p.produce("later-topic", value=b"w", on_delivery=_reports(box))
    p.abort_transaction()
    p.poll(0)
    assert isinstance(box[0][0], TransactionAbortedException)
    assert len(p) == 0


# -- a call that timed out can be called again ------------------------------------------------


def test_a_commit_that_timed_out_can_be_retried_after_the_network_heals() -> None:
    c = _cluster()
    p = _txn(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.flush()
    c.isolate(p.name)
    with pytest.raises(TimeoutException) as exc:
        p.commit_transaction(timeout=2)
    assert "within 2000 ms" in str(exc.value)
    assert "-" not in str(exc.value).split("within ")[1].split(" ms")[0]
    with pytest.raises(IllegalStateError, match=r"commit_transaction\(\) timed out"):
        p.abort_transaction()  # the commit may already be completing: it cannot become an abort
    with pytest.raises(IllegalStateError, match=r"commit_transaction\(\) again"):
        p.begin_transaction()
    c.heal()
    p.commit_transaction()
    assert _read_committed(c) == [b"a"]
    p.begin_transaction()  # and the producer carries on
    p.produce("t", value=b"b", partition=1)
    p.commit_transaction()
    assert sorted(_read_committed(c)) == [b"a", b"b"]


def test_an_abort_that_timed_out_can_be_retried() -> None:
    c = _cluster()
    p = _txn(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.flush()
    c.isolate(p.name)
    with pytest.raises(TimeoutException):
        p.abort_transaction(timeout=1)
    c.heal()
    p.abort_transaction()
    p.begin_transaction()
    p.produce("t", value=b"b", partition=0)
    p.commit_transaction()
    assert _read_committed(c) == [b"b"]


def test_init_transactions_that_timed_out_can_be_retried() -> None:
    c = _cluster()
    p = c.producer({"transactional.id": "late"})
    c.isolate(p.name)
    with pytest.raises(TimeoutException, match=r"init_transactions\(\) again"):
        p.init_transactions(timeout=1)
    c.heal()
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"x", partition=0)
    p.commit_transaction()
    assert _read_committed(c) == [b"x"]


# -- records that cannot be sent expire, and metadata requests back off ------------------------


def test_a_record_for_a_missing_partition_gets_a_report_after_max_block_ms() -> None:
    c = _cluster()
    p = c.producer({"max.block.ms": 5_000})
    box: list[Any] = []
    start = c.now_ms
    p.produce("t", value=b"x", partition=99, on_delivery=_reports(box))
    assert p.flush() == 0
    ((err, msg),) = box
    assert isinstance(err, UnknownTopicOrPartitionException)
    assert "partition 99" in str(err) and "partition count 2" in str(err)
    assert 5_000 <= c.now_ms - start < 6_000
    assert msg.offset() == -1 and msg.value() == b"x"


def test_a_record_for_a_partition_without_a_leader_expires_after_delivery_timeout_ms() -> None:
    c = _cluster()
    p = c.producer({"linger.ms": 0, "request.timeout.ms": 1_000, "delivery.timeout.ms": 4_000})
    box: list[Any] = []
    c.run_for(500)  # metadata and a producer id first
    for b in (1, 2, 3):
        c.crash(b)
    c.run_for(12_000)  # the controller fences them: no partition has a leader
    start = c.now_ms
    p.produce("t", value=b"x", partition=0, on_delivery=_reports(box))
    assert p.flush() == 0
    ((err, _),) = box
    assert isinstance(err, TimeoutException)
    assert "delivery.timeout.ms" in str(err)
    assert c.now_ms - start <= 4_000 + 1_000


def test_metadata_requests_back_off_exponentially_while_a_topic_is_missing() -> None:
    c = _cluster()
    p = c.producer()
    before = p.metadata_refreshes
    p.produce("no-such-topic", value=b"x")
    p.flush()  # waits max.block.ms = 60 s for metadata
    asked = p.metadata_refreshes - before
    # retry.backoff.ms=100 doubling to retry.backoff.max.ms=1000: 100+200+400+800, then once a second.
    assert 55 <= asked <= 70, asked


def test_a_consumer_survives_a_producer_that_waited_for_a_topic_created_later() -> None:
    c = _cluster()
    p = c.producer({"linger.ms": 0})
    box: list[Any] = []
    p.produce("late", value=b"x", on_delivery=_reports(box))
    p.poll(3)
    c.create_topic("late", partitions=1, replication_factor=3)
    assert p.flush() == 0
    assert box[0][0] is None and box[0][1].offset() == 0


# -- bad arguments are rejected at once, and nothing breaks ---------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"value": 42}, TypeError, "value must be bytes, str or None"),
        ({"value": {"a": 1}}, TypeError, "value must be bytes, str or None"),
        ({"key": 7, "value": b"v"}, TypeError, "key must be bytes, str or None"),
        ({"value": b"v", "partition": -5}, ValueError, "partition must be >= 0"),
        ({"value": b"v", "partition": "0"}, TypeError, "partition must be an int"),
        ({"value": b"v", "headers": 5}, TypeError, "headers must be"),
        ({"value": b"v", "headers": [("k", 1)]}, TypeError, "headers must be"),
        ({"value": b"v", "on_delivery": "not-callable"}, TypeError, "on_delivery"),
        ({"value": b"v", "timestamp": -1}, ValueError, "timestamp"),
    ],
)
def test_produce_rejects_bad_arguments_with_a_one_line_error(kwargs: dict[str, Any], error: type, text: str) -> None:
    c = _cluster()
    p = c.producer()
    with pytest.raises(error, match=text):
        p.produce("t", **kwargs)
    assert len(p) == 0
    p.produce("t", value=b"ok", key="k", partition=0, headers={"h": b"1"})
    assert p.flush() == 0
    _works_afterwards(c)


def test_produce_rejects_a_topic_that_is_not_a_string() -> None:
    c = _cluster()
    p = c.producer()
    for topic in (None, 3, ""):
        with pytest.raises(TypeError, match="topic must be a non-empty str"):
            p.produce(topic, value=b"v")
    _works_afterwards(c)


def test_transactional_methods_on_a_non_transactional_producer_raise_illegal_state() -> None:
    c = _cluster()
    p = c.producer()
    for call in (
        p.init_transactions,
        p.begin_transaction,
        p.commit_transaction,
        p.abort_transaction,
        lambda: p.send_offsets_to_transaction([], "g"),
    ):
        with pytest.raises(IllegalStateError, match=r"transactional\.id"):
            call()
    _works_afterwards(c)


def test_send_offsets_to_transaction_rejects_tuples_and_bad_offsets_and_leaves_the_transaction_usable() -> None:
    c = _cluster()
    p = _txn(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    bad: list[Any] = [
        [("t", 0, 5)],
        "t",
        [TopicPartition("t", 0, -1001)],
        [TopicPartition("t", -1, 3)],
    ]
    for offsets in bad:
        with pytest.raises((TypeError, ValueError), match="TopicPartition"):
            p.send_offsets_to_transaction(offsets, "group")
    with pytest.raises(IllegalStateError, match="group_metadata"):
        p.send_offsets_to_transaction([TopicPartition("t", 0, 1)], 42)
    p.commit_transaction()
    assert _read_committed(c) == [b"a"]


@pytest.mark.parametrize("timeout", [-2, "soon", float("nan")])
def test_negative_or_non_numeric_timeouts_are_rejected(timeout: Any) -> None:
    c = _cluster()
    p = _txn(c)
    p.begin_transaction()
    for call in (p.flush, p.poll, p.commit_transaction, p.abort_transaction, lambda t: p.list_topics(timeout=t)):
        with pytest.raises((TypeError, ValueError), match="timeout"):
            call(timeout)
    p.commit_transaction()


def test_minus_one_means_the_default_wait_as_in_confluent_kafka() -> None:
    c = _cluster()
    p = _txn(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    assert p.flush(-1) == 0
    p.commit_transaction(-1)
    assert _read_committed(c) == [b"a"]


def test_every_failed_send_error_is_a_named_kafka_error() -> None:
    c = _cluster()
    p = c.producer({"max.block.ms": 1_000, "max.request.size": 100})
    box: list[Any] = []
    p.produce("nope", value=b"1", on_delivery=_reports(box))
    p.produce("t", value=b"1", partition=7, on_delivery=_reports(box))
    p.produce("t", value=b"x" * 500, partition=0, on_delivery=_reports(box))
    p.flush()
    assert len(box) == 3
    assert all(isinstance(e, KafkaError) for e, _ in box)


def test_list_topics_names_brokers_topics_partitions_and_flags_an_unknown_topic() -> None:
    c = _cluster()
    p = c.producer()
    md = p.list_topics(timeout=5)
    assert sorted(md.brokers) == [1, 2, 3]
    parts = md.topics["t"].partitions
    assert sorted(parts) == [0, 1]
    assert parts[0].leader == c.leader("t", 0)
    assert sorted(parts[0].replicas) == sorted(parts[0].isrs) == [1, 2, 3]
    only = p.list_topics("missing", timeout=5)
    assert list(only.topics) == ["missing"]
    assert isinstance(only.topics["missing"].error, UnknownTopicOrPartitionException)
    c.isolate(p.name)
    with pytest.raises(TimeoutException, match="no broker answered"):
        p.list_topics(timeout=1)
    with pytest.raises(ValueError, match="timeout"):
        p.list_topics(timeout=-5)


def test_a_copied_confluent_config_with_bootstrap_servers_is_accepted() -> None:
    c = _cluster()
    p = c.producer({"bootstrap.servers": "localhost:9092", "linger.ms": 0})
    p.produce("t", value=b"v", partition=0)
    assert p.flush() == 0
    consumer = c.consumer({"bootstrap.servers": "localhost:9092", "group.id": "g"})
    consumer.assign([("t", 0)])
    assert [m.value() for m in consumer.consume(10, timeout=1)] == [b"v"]
