"""The event publisher under the eos pytest plugin: lost acks and a leader crash, no duplicate, no loss.

Unchanged confluent-kafka code; the ``eos_cluster`` fixture patches ``confluent_kafka`` to a fresh
simulated cluster, and ``eos_check`` judges everything the clients did at the end. The last test runs
the same module with the real client against a served cluster (the ``eos_server`` fixture), with the
same faults made from the test over the wire; under ``pytest --eos-server=kafka`` it runs against
Kafka 4.4 itself, with the leader crash only (a real broker has no wire faults).
"""

from __future__ import annotations

import publisher
import pytest

CONF = {"bootstrap.servers": "localhost:9092"}
EVENTS = [b"event-%d" % i for i in range(40)]


@pytest.mark.eos_cluster(topics={"events": 2})
@pytest.mark.eos_check(mode="eos")
def test_lost_acks_and_a_leader_crash_neither_duplicate_nor_lose_an_event(eos_cluster) -> None:
    eos_cluster.lose_next_ack("events")
    first = publisher.publish(CONF, EVENTS[:20])
    eos_cluster.crash(eos_cluster.leader("events", 0))
    second = publisher.publish(CONF, EVENTS[20:])
    assert first["delivered"] + second["delivered"] == 40 and first["failed"] == second["failed"] == 0
    assert sorted(publisher.read_all(CONF, 40)) == sorted(EVENTS)


@pytest.mark.eos_server(topics={"events": 2}, config={"broker.session.timeout.ms": 2000})
def test_over_the_wire_a_dropped_ack_and_a_leader_crash_neither_duplicate_nor_lose_an_event(eos_server) -> None:
    config = eos_server.config(**{"socket.timeout.ms": 5000})  # a lost ack is retried after 5 s, not 60
    if eos_server.kind == "served":  # a real Kafka (--eos-server=kafka) has no wire faults: the crash alone there
        eos_server.drop_response("Produce")  # the first write happens; its acknowledgement never comes
    first = publisher.publish(config, EVENTS[:20])
    eos_server.crash(eos_server.leader("events", 0))
    second = publisher.publish(config, EVENTS[20:])
    assert first["delivered"] + second["delivered"] == 40 and first["failed"] == second["failed"] == 0
    assert sorted(publisher.read_all(config, 40)) == sorted(EVENTS)
