"""Scenarios of the idempotent producer: what the dedup window, sequences and epochs guarantee.

Each test builds a small cluster on a fixed seed, injects one precise fault with a message rule
or a node crash, and checks the partition log itself (every replica's batches), the delivery
reports and the trace. They are the "must show" list of the idempotent-producer issue.
"""

from __future__ import annotations

from typing import Any

from engine import Cluster
from engine.errors import OutOfOrderSequenceException
from tests.scenarios.conftest import log_values


def _cluster(seed: int = 1, **config: Any) -> Cluster:
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2, **config})
    c.create_topic("t", partitions=1, replication_factor=3)
    return c


def _reports() -> tuple[list[tuple[Any, Any]], Any]:
    got: list[tuple[Any, Any]] = []
    return got, lambda err, msg: got.append((err, msg))


def test_inflight_reorder_is_rejected_out_of_order_then_retried_in_send_order() -> None:
    c = _cluster()
    p = c.producer({"linger.ms": 0, "retry.backoff.ms": 10})
    for i in range(3):  # sequences 0, 1, 2
        p.produce_batch("t", [f"r{i}".encode()], partition=0)
    p.flush()
    # The request carrying sequence 4 is delayed, so sequences 3, 5, 4 reach the leader in that order.
    c.add_rule(
        "delay",
        body_type="ProduceRequest",
        delay_ms=5,
        where=lambda m: any(x.batch.base_sequence == 4 for x in m.body.partitions),
    )
    for i in range(3, 6):
        p.produce_batch("t", [f"r{i}".encode()], partition=0)
    assert p.flush() == 0
    arrivals = [
        e.get("seq") for e in c.world.trace.select(kind="send", name="request") if e.get("msg") == "ProduceRequest"
    ]
    assert arrivals[:3] == [0, 1, 2]
    errors = c.world.trace.select(name="produce.error")
    assert [e.get("error") for e in errors] == ["OUT_OF_ORDER_SEQUENCE_NUMBER"]
    assert c.world.trace.marks["producer: out-of-order batch retried behind its predecessor"] == 1
    expected = [f"r{i}".encode() for i in range(6)]
    for b in c.brokers:
        assert log_values(c, "t", 0, broker=b) == expected  # once each, in send order, on every replica


def _lost_ack_run(idempotence: bool) -> tuple[Cluster, list[tuple[Any, Any]]]:
    c = _cluster()
    p = c.producer(
        {
            "enable.idempotence": idempotence,
            "acks": "all",
            "linger.ms": 0,
            "max.in.flight.requests.per.connection": 1,
            "request.timeout.ms": 1_000,
        }
    )
    p.produce("t", value=b"a")
    p.flush()
    # The leader appends "b"; its answer is dropped after the handler ran (a lost ack).
    c.add_rule("drop", kind="response", body_type="ProduceResponse", count=1)
    got, report = _reports()
    p.produce("t", value=b"b", on_delivery=report)
    p.flush()
    return c, got


def test_lost_ack_retry_is_deduplicated_and_answered_with_the_original_offset() -> None:
    c, got = _lost_ack_run(idempotence=True)
    assert log_values(c, "t") == [b"a", b"b"]
    [(err, msg)] = got
    assert err is None
    assert msg.offset() == 1  # the offset the first, unanswered append gave it
    assert c.world.trace.marks["dedup: duplicate batch answered from cache"] == 1
    assert len(c.world.trace.select(name="produce.retry")) == 1


def test_lost_ack_retry_without_idempotence_writes_a_duplicate() -> None:
    c, got = _lost_ack_run(idempotence=False)
    assert log_values(c, "t") == [b"a", b"b", b"b"]  # the broker cannot tell the retry apart
    [(err, msg)] = got
    assert err is None
    assert msg.offset() == 2
    assert "dedup: duplicate batch answered from cache" not in c.world.trace.marks


def test_leader_crash_after_replicating_before_acking_new_leader_deduplicates_the_retry() -> None:
    c = _cluster()
    p = c.producer({"linger.ms": 0, "request.timeout.ms": 2_000, "retry.backoff.ms": 100})
    p.produce("t", value=b"a")
    p.flush()
    old_leader = c.leader("t")
    # The leader's answer never leaves: the leader crashes once both followers have the batch.
    c.add_rule("drop", kind="response", body_type="ProduceResponse", src=f"broker-{old_leader}", count=None)
    got, report = _reports()
    p.produce("t", value=b"b", on_delivery=report)
    followers = [b for b in c.brokers if b != old_leader]
    c.run_until(lambda: all(c.brokers[b].replicas[("t", 0)].log_end_offset == 2 for b in followers))
    c.crash(old_leader)
    p.flush()
    new_leader = c.leader("t")
    assert new_leader in followers
    [(err, msg)] = got
    assert err is None
    assert msg.offset() == 1
    assert log_values(c, "t") == [b"a", b"b"]
    dedups = [e for e in c.world.trace.select(kind="mark") if e.get("label").startswith("dedup")]
    assert [e.node for e in dedups] == [f"broker-{new_leader}"]  # the state it replicated knew the batch


def _unclean_run(unclean: bool) -> tuple[Cluster, dict[bytes, Any], list[tuple[Any, Any]]]:
    c = Cluster(
        seed=3,
        brokers=3,
        config={
            "min.insync.replicas": 1,
            "unclean.leader.election.enable": unclean,
            "replica.lag.time.max.ms": 1_000,
        },
    )
    c.create_topic("t", partitions=1, assignments=[(1, 2)])
    p = c.producer(
        {
            "linger.ms": 0,
            "request.timeout.ms": 1_000,
            "delivery.timeout.ms": 30_000,
            "max.in.flight.requests.per.connection": 1,
        }
    )
    acked: dict[bytes, Any] = {}

    def report(err: Any, msg: Any) -> None:
        acked[msg.value()] = err

    for i in range(3):  # sequences 0..2 reach both replicas
        p.produce("t", value=f"r{i}".encode(), on_delivery=report)
        p.flush()
    c.run_for(100)
    c.partition([1], [2])  # broker 2 can no longer fetch from broker 1 and falls out of the ISR
    c.run_for(3_000)
    assert c.controller.partitions[("t", 0)].isr == (1,)
    for i in range(3, 27):  # sequences 3..26, acknowledged with the ISR at [1]
        p.produce("t", value=f"r{i}".encode(), on_delivery=report)
        p.flush()
    c.crash(1)
    c.heal()
    c.world.crash("broker-1")  # heal restarted it; keep it down: only broker 2 is left
    last: list[tuple[Any, Any]] = []
    p.produce("t", value=b"r27", on_delivery=lambda e, m: last.append((e, m)))
    p.flush(timeout=20)
    return c, acked, last


def test_unclean_election_loses_acknowledged_records_and_the_next_batch_gets_out_of_order_sequence() -> None:
    c, acked, last = _unclean_run(unclean=True)
    assert all(acked[f"r{i}".encode()] is None for i in range(27))  # all 27 were acknowledged
    assert c.leader("t") == 2
    [(err, _msg)] = last
    assert isinstance(err, OutOfOrderSequenceException)
    assert "27 (incoming seq. number), 2 (current end sequence number)" in str(err)
    survivors = log_values(c, "t", 0, broker=2)
    lost = [f"r{i}".encode() for i in range(3, 27)]
    assert survivors[:3] == [b"r0", b"r1", b"r2"]
    assert not set(lost) & set(survivors)  # records 3..26 were acknowledged and are gone
    assert c.world.trace.marks["controller: unclean leader election"] == 1


def test_clean_election_only_keeps_the_partition_unavailable_and_loses_nothing_acknowledged() -> None:
    c, _acked, last = _unclean_run(unclean=False)
    assert c.leader("t") == -1  # no ISR member is alive: no leader rather than a lossy one
    assert last == []  # r27 is neither acknowledged nor failed yet: the partition is unavailable
    c.restart(1)
    c.producers[0].flush()
    assert c.leader("t") == 1
    [(err, msg)] = last
    assert err is None
    assert msg.offset() == 27
    values = log_values(c, "t", 0, broker=1)
    assert values == [f"r{i}".encode() for i in range(28)]  # nothing acknowledged was lost


def test_producer_restart_without_transactional_id_gets_a_new_producer_id_and_duplicates_undetected() -> None:
    c = _cluster()
    first = c.producer({"linger.ms": 0})
    for i in range(5):
        first.produce("t", value=f"v{i}".encode())
    first.flush()
    c.world.crash(first.name)  # the application dies; its replacement sends the same records again
    second = c.producer({"linger.ms": 0})
    for i in range(5):
        second.produce("t", value=f"v{i}".encode())
    second.flush()
    assert second.producer_id != first.producer_id
    values = log_values(c, "t")
    assert values == [f"v{i}".encode() for i in range(5)] * 2  # the idempotent producer's stated limit
    table = c.producer_state("t")
    assert [e.producer_id for e in table.producers] == sorted([first.producer_id, second.producer_id])
