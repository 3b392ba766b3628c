"""The outbox pieces on a real cluster and real SQLite files: service, relays, sink, crash points, bad input.

Goal: each promise of ``engine.outbox`` holds when driven call by call, so the scenarios built on
it stand on checked parts. Method: a 3-broker cluster and a fresh database folder per test; the
service writes orders, a relay publishes, a sink applies; crash points are taken on purpose and
the tables are read back with plain SQL.
"""

from __future__ import annotations

import sqlite3

import pytest

from engine import Cluster
from engine.check.effects import check_effects
from engine.db.database import Database, DatabaseFolder
from engine.errors import DatabaseUnavailableError, InvalidEventError
from engine.outbox import LogTailer, OrderService, PollingRelay, Routes, schema
from engine.outbox.relay import RelayCrashed
from engine.outbox.service import ServiceCrashed
from engine.outbox.sink import IdempotentSink, SinkCrashed, sink_database

ROUTES = Routes({"order": "orders"})
PARTS = {"orders": 2}


@pytest.fixture
def world(tmp_path):
    c = Cluster(seed=3, brokers=3)
    c.create_topic("orders", partitions=2, replication_factor=3)
    return c, DatabaseFolder(tmp_path)


def _count(path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def _relay(c, folder, cls=PollingRelay, name="relay-1"):
    db = Database(c.world, "orders", folder, schema.SERVICE, client=name)
    return cls(db, c.producer({"client.id": name, "linger.ms": 0}), ROUTES, PARTS)


def _sink(c, db, *, dedup=True, name="sink-1"):
    consumer = c.consumer({"client.id": name, "isolation.level": "read_committed"})
    return IdempotentSink(db, consumer, [("orders", 0), ("orders", 1)], dedup=dedup)


def _drain(sink) -> None:
    idle = 0
    while idle < 3:
        idle = 0 if sink.step(timeout=0.2) else idle + 1


BAD = [
    ({"aggregate_type": "invoice"}, "unknown aggregate type 'invoice'"),
    ({"amount": -5}, "amount must be a positive int"),
    ({"customer": ""}, "customer must be a non-empty str"),
    ({"extra": {"tags": {1, 2}}}, "payload.extra.tags is a set"),
    ({"extra": float("nan")}, "JSON has no NaN"),
    ({"extra": {1: "x"}}, "JSON object keys are strings"),
]


@pytest.mark.parametrize("mode", ["polling", "log-tailing"])
@pytest.mark.parametrize(("bad", "says"), BAD, ids=[b[1] for b in BAD])
def test_bad_input_is_refused_and_nothing_is_written(world, mode, bad, says) -> None:
    c, folder = world
    svc = OrderService(c.world, "orders", folder, ROUTES, mode)
    svc.place_order("o-1", "ada", 100)
    args = {"customer": "bob", "amount": 250, **bad}
    with pytest.raises(InvalidEventError, match=says) as info:
        svc.place_order("o-2", **args)
    assert "\n" not in str(info.value)
    assert svc.committed_orders() == ["o-1"]  # the order row of o-2 was written, then rolled back
    assert _count(svc.db.path, "orders") == 1
    assert _count(svc.db.path, "outbox") == (1 if mode == "polling" else 0)
    assert _count(svc.db.path, "outbox_changes") == 1
    assert svc.db.rollbacks == 1
    rollback = c.world.trace.select(name="db.rollback")
    assert [e.get("reason") for e in rollback] == ["InvalidEventError"]


def test_the_log_tailing_outbox_stays_empty_and_the_change_log_keeps_every_insert(world) -> None:
    c, folder = world
    svc = OrderService(c.world, "orders", folder, ROUTES, "log-tailing")
    for i in range(4):
        svc.place_order(f"o-{i}", "ada", 100 + i)
    assert _count(svc.db.path, "outbox") == 0
    assert _count(svc.db.path, "outbox_changes") == 4
    tailer = _relay(c, folder, LogTailer)
    assert tailer.pending() == 4
    assert tailer.step() == 4
    assert tailer.position() == 4
    assert tailer.pending() == 0


def test_a_service_crash_inside_the_transaction_keeps_neither_row(world) -> None:
    c, folder = world
    svc = OrderService(c.world, "orders", folder, ROUTES)
    for point in ("after-business-row", "after-outbox-row"):
        with pytest.raises(ServiceCrashed):
            svc.place_order("o-9", "ada", 100, crash_at=point)
        with pytest.raises(DatabaseUnavailableError, match="restart it"):
            svc.place_order("o-9", "ada", 100)
        c.restart(svc.db.name)
    assert _count(svc.db.path, "orders") == 0
    assert _count(svc.db.path, "outbox") == 0
    svc.place_order("o-9", "ada", 100)
    assert svc.committed_orders() == ["o-9"]


def test_relay_crash_after_ack_resends_and_the_sink_applies_each_event_once(world) -> None:
    c, folder = world
    svc = OrderService(c.world, "orders", folder, ROUTES)
    for i in range(5):
        svc.place_order(f"o-{i}", "ada", 100 + i)
    relay = _relay(c, folder)
    with pytest.raises(RelayCrashed):
        relay.step(crash_at="after-ack")  # all 5 are in Kafka, none marked sent
    assert relay.pending() == 5
    relay2 = _relay(c, folder, name="relay-2")
    assert relay2.step() == 5
    assert relay2.pending() == 0
    sink_db = sink_database(c.world, "shipping", folder)
    sink = _sink(c, sink_db)
    _drain(sink)
    assert sink.applied == 5
    assert sink.skipped == 5  # the copies the crashed relay sent
    assert check_effects(svc.committed_orders(), [o for _e, o in sink.shipments()]) == []
    # the same topic read by a sink without deduplication: every copy is a second shipment
    naive = _sink(c, sink_database(c.world, "naive", folder), dedup=False, name="sink-2")
    _drain(naive)
    kinds = [a.kind for a in check_effects(svc.committed_orders(), [o for _e, o in naive.shipments()])]
    assert kinds == ["effect-duplicate"] * 5


def test_a_sink_crash_before_commit_applies_nothing_and_the_next_sink_resumes_from_its_stored_offsets(world) -> None:
    c, folder = world
    svc = OrderService(c.world, "orders", folder, ROUTES)
    for i in range(6):
        svc.place_order(f"o-{i}", "ada", 100 + i)
    _relay(c, folder).step()
    sink_db = sink_database(c.world, "shipping", folder)
    sink = _sink(c, sink_db)
    with pytest.raises(SinkCrashed):
        while True:
            sink.step(timeout=0.2, crash_at="before-commit")
    assert _count(sink_db.path, "shipments") == 0
    assert not sink_db.is_up
    c.restart(sink_db.name)
    assert sink.stored_offsets() == {}
    sink2 = _sink(c, sink_db, name="sink-2")
    _drain(sink2)
    assert sorted(o for _e, o in sink2.shipments()) == [f"o-{i}" for i in range(6)]
    ends = sink2.stored_offsets()
    assert sum(ends.values()) == 6
    sink3 = _sink(c, sink_db, name="sink-3")  # a restart reads nothing twice: it starts at the stored offsets
    assert sink3.step(timeout=0.3) == 0
    positions = sink3.consumer.position([("orders", 0), ("orders", 1)])
    assert {("orders", tp.partition): tp.offset for tp in positions} == ends


def test_the_dual_writes_lose_or_invent_an_event_when_the_service_crashes_between(world) -> None:
    c, folder = world
    svc = OrderService(c.world, "orders", folder, ROUTES)
    p = c.producer({"client.id": "publisher", "linger.ms": 0})
    svc.place_order_dual_write(p, "o-1", "ada", 100)
    with pytest.raises(ServiceCrashed):
        svc.place_order_dual_write(p, "o-2", "ada", 200, crash_at="between-commit-and-publish")
    c.restart(svc.db.name)
    with pytest.raises(ServiceCrashed):
        svc.place_order_dual_write(p, "o-3", "ada", 300, publish_first=True, crash_at="after-publish-before-commit")
    c.restart(svc.db.name)
    assert svc.committed_orders() == ["o-1", "o-2"]
    sink = _sink(c, sink_database(c.world, "shipping", folder))
    _drain(sink)
    found = check_effects(svc.committed_orders(), [o for _e, o in sink.shipments()], row="order", effect="shipment")
    assert [(a.kind, a.values) for a in found] == [("effect-lost", ("o-2",)), ("effect-phantom", ("o-3",))]
    assert found[0].message == "committed order o-2 has no shipment"


def test_bad_arguments_are_one_line_errors(world, tmp_path) -> None:
    c, folder = world
    with pytest.raises(ValueError, match="unknown outbox mode"):
        OrderService(c.world, "orders", folder, ROUTES, "carrier-pigeon")
    with pytest.raises(ValueError, match="service must be a name"):
        Database(c.world, "../etc", folder)
    with pytest.raises(TypeError, match="routes must be a non-empty dict"):
        Routes({})
    svc = OrderService(c.world, "orders", folder, ROUTES)
    with pytest.raises(ValueError, match="unknown crash point"):
        svc.place_order("o-1", "ada", 1, crash_at="somewhere")
    with pytest.raises(ValueError, match="missing"):
        PollingRelay(svc.db, c.producer(), ROUTES, {})
    with pytest.raises(ValueError, match="has no table 'nope'"):
        svc.db.rows("nope")
    assert svc.committed_orders() == []
