"""The idempotent consumer: a database sink that applies each event once and stores its own offsets.

For every record it reads, one SQLite transaction (per poll's batch) does three things together:

1. skip the record if its event id (the ``id`` header) is already in ``processed_messages``;
2. otherwise apply the effect (a ``shipments`` row for the order) and record the event id;
3. store the next offset of the record's partition in ``consumer_offsets``.

Because the effect, the dedup memory and the position commit together, a sink that crashes
anywhere either did all three or none; a new instance seeks to the offsets it stored (Kafka's
committed offsets are never read, so they are not needed for correctness), and the copies an
at-least-once relay sends are dropped by event id.

``dedup=False`` is the contrast: the effect is applied for every record, so each copy a relay
re-sent after a crash becomes a second shipment.

Crash points (``step(crash_at=…)``): ``after-poll`` (records read, nothing applied),
``before-commit`` (the effects written but not committed: rolled back). A crash closes the
sink's consumer and database connection; the caller restarts the database node and starts a
new sink.
"""

from __future__ import annotations

import json
from typing import Any

from engine.check.history import Poll
from engine.client.message import TopicPartition
from engine.db.database import Database, DatabaseFolder
from engine.errors import IllegalStateError
from engine.outbox import schema
from engine.outbox.event import ID_HEADER, header

__all__ = ["CRASH_POINTS", "IdempotentSink", "SinkCrashed", "sink_database"]

CRASH_POINTS = ("after-poll", "before-commit")


class SinkCrashed(Exception):  # noqa: N818 - it says what happened
    """The sink died at a named crash point; restart its database node and start a new sink."""


def sink_database(world: Any, name: str = "shipping", folder: DatabaseFolder | None = None) -> Database:
    """Return the sink's database node (``db-<name>``) with the sink tables."""
    return Database(world, name, folder, schema.SINK)


class IdempotentSink:
    """Read order events and apply each once (a shipment per order), in the sink's database.

    Parameters
    ----------
    db
        The sink's database (:func:`sink_database`).
    consumer
        A consumer (``isolation.level`` as the caller likes; the relay's writes are not transactional).
    partitions
        The topic partitions to read, as ``(topic, partition)`` pairs; the sink assigns them itself.
    dedup
        Drop an event id seen before (the idempotent consumer); False is the contrast.
    history
        ``(recorder, process)``: record each poll as a history op for the black-box checker.
    """

    def __init__(
        self,
        db: Database,
        consumer: Any,
        partitions: list[tuple[str, int]],
        *,
        dedup: bool = True,
        history: tuple[Any, int] | None = None,
    ) -> None:
        if not partitions:
            raise ValueError("partitions must list the (topic, partition) pairs the sink reads")
        self.db = db
        self.consumer = consumer
        self.partitions = sorted(partitions)
        self.dedup = dedup
        self.history = history
        self.applied = 0
        self.skipped = 0
        self.crashed = False
        stored = self.stored_offsets()
        consumer.assign([TopicPartition(t, p, stored.get((t, p), 0)) for t, p in self.partitions])
        if history is not None:
            recorder, proc = history
            op = recorder.invoke(proc, "assign", (), db.world.now_ms, keys=self.partitions)
            recorder.complete(op, "ok", (), db.world.now_ms)

    def stored_offsets(self) -> dict[tuple[str, int], int]:
        """Return the next offset per partition, as stored in the sink's database."""
        return {(t, p): o for t, p, o in self.db.query("SELECT topic, partition, next_offset FROM consumer_offsets")}

    def _crash(self, where: str) -> None:
        self.crashed = True
        world = self.db.world
        for node in (self.consumer, self.db):
            if node.is_up:
                world.crash(node.name)
        raise SinkCrashed(f"sink crashed {where}")

    def step(self, max_records: int = 50, timeout: float = 0.05, crash_at: str | None = None) -> int:
        """Read one batch and apply it in one transaction; return how many records were read."""
        if crash_at is not None and crash_at not in CRASH_POINTS:
            raise ValueError(f"unknown crash point {crash_at!r}; use one of {', '.join(CRASH_POINTS)}")
        if self.crashed:
            raise IllegalStateError("this sink crashed; restart its database and start a new sink")
        op = None
        if self.history is not None:
            recorder, proc = self.history
            op = recorder.invoke(proc, "poll", (), self.db.world.now_ms)
        msgs = [m for m in self.consumer.consume(max_records, timeout=timeout) if m.error() is None]
        if op is not None:
            polls = [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs]
            recorder.complete(op, "ok", polls, self.db.world.now_ms)
        if not msgs:
            return 0
        if crash_at == "after-poll":
            self._crash("after reading a batch, before applying it")
        with self.db.transaction("sink-apply") as txn:
            for m in msgs:
                self._apply(txn, m)
            if crash_at == "before-commit":
                self._crash("after applying a batch, before the commit")
        return len(msgs)

    def _apply(self, txn: Any, m: Any) -> None:
        event_id = header(m.headers(), ID_HEADER)
        now = self.db.world.now_ms
        txn.execute(
            "INSERT INTO consumer_offsets (topic, partition, next_offset) VALUES (?, ?, ?)"
            " ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset",
            (m.topic(), m.partition(), m.offset() + 1),
        )
        if event_id is None:  # not an outbox event (e.g. the harness's sentinel records)
            return
        if self.dedup and txn.query("SELECT 1 FROM processed_messages WHERE event_id = ?", (event_id,)):
            self.skipped += 1
            return
        order_id = json.loads(m.value()).get("order_id")
        txn.execute(
            "INSERT INTO shipments (order_id, event_id, created_ms) VALUES (?, ?, ?)", (order_id, event_id, now)
        )
        txn.execute(
            'INSERT OR IGNORE INTO processed_messages (event_id, topic, partition, "offset", processed_ms)'
            " VALUES (?, ?, ?, ?, ?)",
            (event_id, m.topic(), m.partition(), m.offset(), now),
        )
        self.applied += 1

    def shipments(self) -> list[tuple[str, str]]:
        """Return every effect as ``(event_id, order_id)``, in the order applied."""
        return [(e, o) for e, o in self.db.query("SELECT event_id, order_id FROM shipments ORDER BY shipment_id")]
