"""The invoicer under the eos pytest plugin: exactly once through a crash, and the offsets bug caught.

The application module is unchanged confluent-kafka code; the plugin's ``eos_cluster`` fixture
patches ``confluent_kafka`` to a fresh simulated cluster per test. The same module also runs
against ``eos serve`` over the wire (last test), without the patch.
"""

from __future__ import annotations

from typing import Any

import invoicer
import pytest

CONF = {"bootstrap.servers": "localhost:9092"}


class ProcessDiedError(Exception):
    """The copier's process died (raised from a hook between two of its calls)."""


def place_orders(n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({**CONF, "enable.idempotence": True})
    for i in range(n):
        p.produce("orders", key=b"k%d" % i, value=b"order-%d" % i)
    assert p.flush(30) == 0


def invoices() -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**CONF, "group.id": "auditor", "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("invoices", 0, 0)])
    out: list[bytes] = []
    while batch := [m for m in c.consume(100, 2.0) if m.error() is None]:
        out += [m.value() for m in batch]
    c.close()
    return out


def die_once() -> Any:
    state = {"died": False}

    def hook() -> None:
        if not state["died"]:
            state["died"] = True
            raise ProcessDiedError

    return hook


@pytest.mark.eos_cluster(topics={"orders": 1, "invoices": 1})
@pytest.mark.eos_check(mode="eos")
def test_every_order_is_invoiced_once_through_a_crash_after_a_commit(eos_cluster) -> None:
    place_orders(25)
    with pytest.raises(ProcessDiedError):
        invoicer.run(CONF, after_commit=die_once())
    eos_cluster.crash(eos_cluster.leader("invoices", 0))
    invoicer.run(CONF)  # the restarted copier fences the old one and carries on from the committed offsets
    assert sorted(invoices()) == sorted(b"invoice-for-order-%d" % i for i in range(25))


@pytest.mark.eos_cluster(topics={"orders": 1, "invoices": 1})
def test_offsets_committed_outside_the_transaction_invoice_twice_after_a_crash(eos_cluster) -> None:
    place_orders(25)
    with pytest.raises(ProcessDiedError):
        invoicer.run(CONF, offsets_in_transaction=False, after_commit=die_once())
    invoicer.run(CONF, offsets_in_transaction=False)
    got = invoices()
    duplicates = {v for v in got if got.count(v) > 1}
    assert duplicates, "the bug should show: the batch invoiced before the crash is invoiced again"
    assert set(got) == {b"invoice-for-order-%d" % i for i in range(25)}


def test_the_same_module_runs_against_eos_serve_over_the_wire() -> None:
    from engine.serve import ServedCluster
    from engine.wire.journal import ServeSpec

    spec = ServeSpec(7, 3, {}, (("orders", 1, 3), ("invoices", 1, 3)))
    server = ServedCluster(spec.build(), spec=spec).start()
    try:
        from confluent_kafka import Producer  # the real client: no patch in this test

        config = server.client_config()
        p = Producer({**config, "enable.idempotence": True})
        for i in range(10):
            p.produce("orders", value=b"order-%d" % i)
        assert p.flush(30) == 0
        assert invoicer.run(config, idle_polls=3) == 10
    finally:
        server.stop()
