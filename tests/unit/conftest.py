"""Fixtures shared by the unit tests of the journal and the recorder: a small fast cluster config and
one hand-driven session (as a notebook would drive a cluster) that replay and time travel both use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine.cluster import Cluster
from engine.errors import KafkaError, TopicExistsException
from engine.journal import Journal

BROKER_CONFIG: dict[str, Any] = {
    "min.insync.replicas": 2,
    "transaction.state.log.num.partitions": 3,
    "offsets.topic.num.partitions": 3,
    "broker.session.timeout.ms": 2_000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 1_500,
}
TXN_PRODUCER = {"transactional.id": "app", "linger.ms": 0, "request.timeout.ms": 1_500, "delivery.timeout.ms": 5_000}


def hand_session(
    seed: int, observers: tuple[Any, ...] = (), listeners: tuple[Any, ...] = ()
) -> tuple[Cluster, Journal]:
    """Drive a cluster by hand through the journal, as a notebook would."""
    cluster, journal = Journal.new_cluster(seed=seed, brokers=3, config=BROKER_CONFIG, observers=observers)
    journal.listeners += listeners
    cluster.create_topic("orders", partitions=2, replication_factor=3)
    with pytest.raises(TopicExistsException):
        cluster.create_topic("orders")
    app = cluster.producer(TXN_PRODUCER)
    app.init_transactions()
    for txn in range(3):
        app.begin_transaction()
        for k in range(4):
            app.produce("orders", value=f"txn{txn}-{k}".encode(), partition=k % 2)
        if txn == 1:
            app.abort_transaction()
        else:
            app.commit_transaction()
    plain = cluster.producer({"linger.ms": 2})
    for k in range(5):
        plain.produce("orders", value=f"plain-{k}".encode(), key=f"k{k}".encode())
    with pytest.raises(TypeError, match="non-empty list"):
        plain.produce_batch("orders", [], partition=0)
    plain.flush()
    reader = cluster.consumer(
        {"group.id": "readers", "isolation.level": "read_committed", "auto.offset.reset": "earliest"}
    )
    reader.subscribe(["orders"])
    reader.consume(50, timeout=3.0)
    reader.commit(asynchronous=False)
    # A broker crash: the leader of orders-0 goes down, the controller elects another, it comes back.
    old = cluster.leader("orders", 0)
    cluster.crash(old)
    app.begin_transaction()
    app.produce("orders", value=b"during-crash", partition=0)
    cluster.run_for(3_000)
    app.commit_transaction()
    cluster.restart(old)
    cluster.run_for(2_000)
    # A lost ProduceResponse: the producer retries and the leader deduplicates.
    cluster.add_rule("drop", dst="producer-1", body_type="ProduceResponse", count=1)
    app.begin_transaction()
    app.produce("orders", value=b"retried", partition=1)
    app.commit_transaction()
    # A zombie: producer-1 pauses mid-transaction, a new instance with its transactional.id fences it.
    app.begin_transaction()
    app.produce("orders", value=b"zombie", partition=1)
    cluster.pause("producer-1")
    successor = cluster.producer(TXN_PRODUCER)
    successor.init_transactions()
    cluster.resume("producer-1")
    with pytest.raises(KafkaError):
        app.commit_transaction()
    successor.begin_transaction()
    successor.produce("orders", value=b"successor", partition=0)
    successor.commit_transaction()
    reader.consume(50, timeout=2.0)
    cluster.run_for(500)
    return cluster, journal


@pytest.fixture(scope="session")
def broker_config() -> dict[str, Any]:
    """Short timeouts and few internal partitions, so faulty runs stay small."""
    return dict(BROKER_CONFIG)


@pytest.fixture(scope="session", name="hand_session")
def hand_session_fixture() -> Callable[..., tuple[Cluster, Journal]]:
    """``hand_session(seed, observers=(), listeners=())``: the hand-driven session, run through a journal."""
    return hand_session
