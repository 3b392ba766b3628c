"""The invoicer under the eos pytest plugin: exactly once through a crash, and the offsets bug caught.

The application module is unchanged confluent-kafka code; the plugin's ``eos_cluster`` fixture
patches ``confluent_kafka`` to a fresh simulated cluster per test. The same module also runs over
the wire with the real client against the ``eos_server`` fixture's served cluster (last test),
with the crash made from the test.
"""

from __future__ import annotations

from typing import Any

import invoicer
import pytest

CONF = {"bootstrap.servers": "localhost:9092"}


class ProcessDiedError(Exception):
    """The copier's process died (raised from a hook between two of its calls)."""


def place_orders(n: int, conf: dict[str, Any] = CONF) -> None:
    from confluent_kafka import Producer

    p = Producer({**conf, "enable.idempotence": True})
    for i in range(n):
        p.produce("orders", key=b"k%d" % i, value=b"order-%d" % i)
    assert p.flush(30) == 0


def invoices(conf: dict[str, Any] = CONF) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**conf, "group.id": "auditor", "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
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


@pytest.mark.eos_server(topics={"orders": 1, "invoices": 1}, config={"broker.session.timeout.ms": 2000})
def test_over_the_wire_every_order_is_invoiced_once_through_a_crash_after_a_commit(eos_server) -> None:
    config = eos_server.config()  # the real confluent-kafka client: no patch with this fixture
    place_orders(10, config)
    with pytest.raises(ProcessDiedError):
        invoicer.run(config, after_commit=die_once())
    eos_server.crash(eos_server.leader("invoices", 0))
    invoicer.run(config)  # the restarted copier fences the old one and carries on from the committed offsets
    assert sorted(invoices(config)) == sorted(b"invoice-for-order-%d" % i for i in range(10))
