"""The event publisher under the eos pytest plugin: lost acks and a leader crash, no duplicate, no loss.

Unchanged confluent-kafka code; the ``eos_cluster`` fixture patches ``confluent_kafka`` to a fresh
simulated cluster, and ``eos_check`` judges everything the clients did at the end. The last test runs
the same module against ``eos serve`` with the real client.
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


def test_the_same_module_runs_against_eos_serve_over_the_wire() -> None:
    from engine.serve import ServedCluster
    from engine.wire.journal import ServeSpec

    spec = ServeSpec(11, 3, {}, (("events", 2, 3),))
    server = ServedCluster(spec.build(), spec=spec).start()
    try:
        config = server.client_config()
        assert publisher.publish(config, EVENTS) == {"delivered": 40, "failed": 0}
        assert sorted(publisher.read_all(config, 40)) == sorted(EVENTS)
    finally:
        server.stop()
