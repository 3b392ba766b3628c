"""The dashboard's rows list a served cluster's outside clients (issue 42, item 1).

Goal: a confluent-kafka transactional producer and a read_committed consumer in this process,
talking to a served cluster over real sockets, show up where the engine's own clients do: a
producer row with the producer id and epoch its InitProducerId got and its sequences, a consumer
row with its isolation level, group and positions, its transactions as ``txn.begin``/``txn.commit``
/``txn.abort`` that the sequence chart reads, and ``__transaction_state`` at the same epoch.

Method: a :class:`~engine.views.recorder.Recorder` attached to the served cluster (as the
dashboard attaches one) and :func:`~engine.views.board.board_state` read live must agree; both
are read under ``server.locked()``. Real clients, no mocks.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer

from engine.views.board import board_state
from engine.views.recorder import Recorder
from engine.views.sequence_chart import transaction_chart

pytestmark = pytest.mark.slow


def test_an_outside_transactional_producer_and_its_read_committed_consumer_are_on_the_board(
    served, ck, txn_producer
) -> None:
    server = served([("orders", 2, 3)])
    with server.locked() as cluster:
        recorder = Recorder.attach(cluster)
    p = txn_producer(ck(server, **{"client.id": "orders-app-client"}), "orders-app")
    for t in range(3):
        p.begin_transaction()
        for i in range(4):
            p.produce("orders", value=f"o{t}-{i}".encode(), partition=i % 2)
        if t == 1:
            p.flush(10)
            p.abort_transaction(15)
        else:
            p.commit_transaction(15)
    c = Consumer(
        ck(
            server,
            **{"group.id": "order-readers", "isolation.level": "read_committed", "auto.offset.reset": "earliest"},
        )
    )
    c.subscribe(["orders"])
    seen = 0
    for _ in range(60):
        seen += sum(1 for m in c.consume(20, 0.2) if not m.error())
        if seen >= 8:
            break
    c.close()
    assert seen == 8
    with server.locked() as cluster:
        live = board_state(cluster)
        recorded = recorder.latest()
        events = list(cluster.world.trace)
    for b in (live, recorded):
        (prod,) = [r for r in b.producers if r.transactional_id == "orders-app"]
        assert prod.status == "outside" and prod.producer_id >= 0 and prod.epoch >= 0
        assert prod.state == "READY"
        assert {(pp.topic, pp.partition, pp.next_seq) for pp in prod.partitions} == {("orders", 0, 6), ("orders", 1, 6)}
        txn = b.txn("orders-app")
        assert (txn.producer_id, txn.epoch) == (prod.producer_id, prod.epoch), "__transaction_state at its real epoch"
        (cons,) = [r for r in b.consumers if r.group_id == "order-readers"]
        assert cons.isolation.value == "read_committed"
        # it read everything: its position is past the last marker, at the log end (2 records + 1 marker each)
        assert {(t, p): o for t, p, o in cons.positions} == {("orders", 0): 9, ("orders", 1): 9}
        assert b.partition("orders", 0).leo == 9
    chart = transaction_chart(events, "orders-app")
    assert chart.count == 3 and chart.outcome == "COMMIT"
    assert "EndTxn" in chart.text() and "WriteTxnMarkers" in chart.text()
