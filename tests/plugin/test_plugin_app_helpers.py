"""The plugin's helpers for the application's own clients: pause, resume, kill, restart.

Goal: the helpers take the objects an application holds (the drop-in's ``Producer`` and
``Consumer``, and the engine's clients): ``pause_producer(app.producer)`` works with the drop-in
(it raised ``TypeError`` before); ``pause``/``resume`` freeze and thaw them; ``kill`` is a process
crash (no EndTxn: the open transaction stays open until a replacement fences it; no LeaveGroup),
after which the client's calls raise and healing does not bring a consumer back into its group;
``restart`` returns a new client of the same kind and configuration that carries on;
``restart(broker)`` still restarts a broker; anything else is one ``TypeError`` line.

Method: the tests take the fixture themselves and drive ``confluent_kafka`` through the patch,
then look at the engine's own views (node status, the transaction coordinator, the group).
"""

from __future__ import annotations

import pytest

from engine.sim.node import NodeStatus
from eos_magics.pytest_plugin import EosTestCluster

CONF = {"bootstrap.servers": "localhost:9092"}


def status(eos: EosTestCluster, client) -> NodeStatus:
    return eos.world.nodes[client.engine.name].status


@pytest.mark.eos_cluster(topics={"ledger": 1})
def test_pause_producer_takes_the_drop_in_producer(eos_cluster: EosTestCluster) -> None:
    from confluent_kafka import Producer

    p = Producer({**CONF, "transactional.id": "app"})
    assert eos_cluster.pause_producer(p) == p.engine.name
    assert status(eos_cluster, p) is NodeStatus.PAUSED
    eos_cluster.resume(p)
    assert status(eos_cluster, p) is NodeStatus.UP


@pytest.mark.eos_cluster(topics={"ledger": 1})
def test_pause_and_resume_take_clients_names_and_brokers(eos_cluster: EosTestCluster) -> None:
    from confluent_kafka import Consumer, Producer

    p, c = Producer(CONF), Consumer({**CONF, "group.id": "g"})
    eos_cluster.pause(p, c, 1)
    assert status(eos_cluster, p) is status(eos_cluster, c) is NodeStatus.PAUSED
    assert eos_cluster.world.nodes["broker-1"].status is NodeStatus.PAUSED
    eos_cluster.resume(p, c.engine, "broker-1")
    assert status(eos_cluster, p) is status(eos_cluster, c) is NodeStatus.UP
    with pytest.raises(TypeError, match=r"pause\(\) takes the application's clients"):
        eos_cluster.pause(object())


@pytest.mark.eos_cluster(topics={"ledger": 1})
def test_kill_leaves_the_transaction_open_and_a_restart_fences_it(eos_cluster: EosTestCluster) -> None:
    from confluent_kafka import KafkaException, Producer

    p = Producer({**CONF, "transactional.id": "app", "client.id": "ledger-app"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("ledger", key=b"k", value=b"v")
    p.flush()
    eos_cluster.kill(p)
    assert eos_cluster.killed(p) and status(eos_cluster, p) is NodeStatus.DOWN
    with pytest.raises((KafkaException, RuntimeError)):
        p.produce("ledger", value=b"after death")
        p.flush(1)
    before = eos_cluster.transactions().client.describe_transaction("app")
    assert before.state == "Ongoing"  # no EndTxn: the dead producer's transaction is still open
    again = eos_cluster.restart(p)
    assert type(again) is type(p) and again.config == p.config
    assert again.engine.name != p.engine.name  # a new client.id: node names are unique
    again.init_transactions()  # same transactional.id: the coordinator aborts the old one
    after = eos_cluster.transactions().client.describe_transaction("app")
    assert after.state != "Ongoing" and after.producer_epoch > before.producer_epoch
    again.begin_transaction()
    again.produce("ledger", key=b"k", value=b"v2")
    again.commit_transaction()
    report = eos_cluster.check()
    assert report.ok, report


@pytest.mark.eos_cluster(topics={"payments": 1})
def test_a_killed_consumer_does_not_come_back_and_its_replacement_gets_the_partitions(
    eos_cluster: EosTestCluster,
) -> None:
    from confluent_kafka import Consumer, Producer

    p = Producer(CONF)
    p.produce("payments", value=b"pay-1")
    p.flush()
    conf = {**CONF, "group.id": "ledger", "auto.offset.reset": "earliest", "session.timeout.ms": 6000}
    c = Consumer(conf)
    c.subscribe(["payments"])
    assert [m.value() for m in c.consume(10, 5.0)] == [b"pay-1"]
    eos_cluster.kill(c)
    with pytest.raises(RuntimeError):
        c.poll(1.0)
    again = eos_cluster.restart(c)
    assert again.config == conf
    again.subscribe(["payments"])
    got = []
    for _ in range(30):  # the dead member holds its partition until its session times out
        got += [m.value() for m in again.consume(10, 1.0) if m.error() is None]
        if got:
            break
    assert got == [b"pay-1"]  # nothing committed: the replacement reads it again
    eos_cluster.settle()  # heals: the killed consumer's node restarts, but it does not rejoin
    members = eos_cluster.group_view("ledger").members
    assert [m.client_id for m in members] == [again.engine.name]


@pytest.mark.eos_cluster(topics={"ledger": 1})
def test_restart_of_an_engine_client_and_of_a_broker(eos_cluster: EosTestCluster) -> None:
    p = eos_cluster.producer({"transactional.id": "t", "client.id": "app", "linger.ms": 7})
    again = eos_cluster.restart(p)
    assert type(again) is type(p) and again.config.transactional_id == "t" and again.config.linger_ms == 7
    assert again.name == "app-2"
    eos_cluster.crash(1)
    assert eos_cluster.restart(1) is None
    assert eos_cluster.world.nodes["broker-1"].status is NodeStatus.UP
    with pytest.raises(TypeError, match=r"restart\(\) takes a client the application holds"):
        eos_cluster.restart(object())
