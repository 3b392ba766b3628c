"""The relays that move outbox events into Kafka: a polling relay and a log tailer.

Both publish with the idempotent producer (``enable.idempotence``: a retried batch is written
once) and are **at-least-once by design**: they learn that an event is in Kafka from the
acknowledgement and only then record it (the polling relay sets ``sent_ms``, the log tailer
stores its position), so a relay that dies between the two publishes the same events again when
its next instance starts. The event id in the ``id`` header lets the consumer drop the copies
(:mod:`engine.outbox.sink`).

:class:`PollingRelay`
    ``SELECT … FROM outbox WHERE sent_ms IS NULL ORDER BY created_ms, id LIMIT n``, produce
    each, flush, then ``UPDATE outbox SET sent_ms`` for the acknowledged ones.
:class:`LogTailer`
    reads ``outbox_changes`` (the trigger-fed change log) after its stored position, produce,
    flush, then stores the position of the last event acknowledged in order (Debezium's way:
    the outbox table itself stays empty).

Crash points (``step(crash_at=…)``): ``after-read`` (nothing sent), ``after-produce`` (batches
queued or in flight: some may land), ``after-ack`` (all acknowledged, nothing recorded: every
one is sent again). A crash closes the relay's producer (its node is crashed) and the relay
object is done; the caller starts a new one, as a restarted process would.

Every publish can be recorded in a client history (``history=(recorder, process, recorded)``), so
the black-box checker judges the topic alongside the database checker. The checker assumes each
value is written by one send op, and a re-sent event is the same bytes: so only an event's first
send is recorded (``recorded`` is the set of event ids already in the history, shared by every
relay instance of a run), and its copies surface in the reads as duplicates, which an
at-least-once topic allows.
"""

from __future__ import annotations

from typing import Any

from engine.check.history import Send
from engine.client.partitioner import partition_for_key
from engine.db.database import Database
from engine.errors import IllegalStateError, KafkaError
from engine.outbox.event import OutboxEvent, Routes, record_of

__all__ = ["CRASH_POINTS", "LogTailer", "PollingRelay", "RelayCrashed"]

CRASH_POINTS = ("after-read", "after-produce", "after-ack")


class RelayCrashed(Exception):  # noqa: N818 - it says what happened
    """The relay died at a named crash point; start a new one."""


class _Relay:
    """What both relays share: the producer, the publish, the history and the crash points."""

    label = "relay"

    def __init__(
        self,
        db: Database,
        producer: Any,
        routes: Routes,
        partitions: dict[str, int],
        *,
        batch: int = 20,
        flush_timeout: float = 10.0,
        history: tuple[Any, int, set[str]] | None = None,
    ) -> None:
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ValueError(f"batch must be a positive int (events per poll), got {batch!r}")
        self.db = db
        self.producer = producer
        self.routes = routes
        missing = [t for t in routes.topics() if t not in partitions]
        if missing:
            raise ValueError(f"partitions must give the partition count of every routed topic; missing {missing}")
        self.partitions = dict(partitions)
        self.batch = batch
        self.flush_timeout = flush_timeout
        self.history = history
        self.published = 0
        self.crashed = False

    def _check_alive(self) -> None:
        if self.crashed:
            raise IllegalStateError(f"this {self.label} crashed; start a new one (a new producer) to go on")

    def _crash(self, where: str) -> None:
        self.crashed = True
        world = self.db.world
        if self.producer.is_up:
            world.crash(self.producer.name)
        raise RelayCrashed(f"{self.label} crashed {where}")

    def _publish(self, events: list[OutboxEvent], crash_at: str | None) -> list[bool]:
        """Produce ``events`` and wait; return, per event, whether Kafka acknowledged it."""
        if crash_at is not None and crash_at not in CRASH_POINTS:
            raise ValueError(f"unknown crash point {crash_at!r}; use one of {', '.join(CRASH_POINTS)}")
        if crash_at == "after-read":
            self._crash("after reading the events, before producing them")
        results: dict[str, Any] = {}
        op = None
        sends = [Send(*self._place(e), e.payload) for e in events]
        first = [e for e in events if self.history is not None and e.id not in self.history[2]]
        if first:
            recorder, proc, recorded = self.history  # type: ignore[misc]
            recorded.update(e.id for e in first)
            op = recorder.invoke(
                proc, "send", tuple(Send(*self._place(e), e.payload) for e in first), self.db.world.now_ms
            )
        try:
            for e, s in zip(events, sends, strict=True):
                self.producer.produce(
                    s.topic,
                    partition=s.partition,
                    on_delivery=lambda err, msg, e=e: results.__setitem__(e.id, (err, msg)),
                    **record_of(e),
                )
            if crash_at == "after-produce":
                self._complete(op, first, {}, "info", "crash")
                self._crash("after producing, before the acknowledgements")
            self.producer.flush(timeout=self.flush_timeout)
        except (KafkaError, IllegalStateError) as exc:
            self._complete(op, first, results, "info", type(exc).__name__)
            return [False] * len(events)
        acked = [e.id in results and results[e.id][0] is None for e in events]
        self._complete(op, first, results, "ok" if all(acked) else "info", None if all(acked) else "not acked")
        if crash_at == "after-ack":
            self._crash("after the acknowledgements, before recording them")
        return acked

    def _place(self, event: OutboxEvent) -> tuple[str, int]:
        """Return the topic and partition of an event: its route, and the default partitioner's choice for its key."""
        topic = self.routes.topic(event.aggregate_type)
        return topic, partition_for_key(event.aggregate_id, self.partitions[topic])

    def _complete(self, op: Any, events: list[OutboxEvent], results: dict[str, Any], outcome: str, error: Any) -> None:
        if op is None:
            return
        recorder = self.history[0]  # type: ignore[index]
        done = []
        for e in events:
            err, msg = results.get(e.id, (True, None))
            ok = err is None and msg is not None
            topic, partition = self._place(e)
            done.append(Send(topic, partition, e.payload, msg.offset() if ok else None))
        recorder.complete(op, outcome, tuple(done), self.db.world.now_ms, error=error)


class PollingRelay(_Relay):
    """Poll the ``outbox`` table for unsent events, publish them, mark them sent after the ack."""

    label = "polling relay"

    def pending(self) -> int:
        """Return how many events wait to be sent."""
        return self.db.query("SELECT COUNT(*) FROM outbox WHERE sent_ms IS NULL")[0][0]

    def step(self, crash_at: str | None = None) -> int:
        """Publish one batch of unsent events; return how many were marked sent."""
        self._check_alive()
        rows = self.db.query(
            "SELECT id, aggregate_type, aggregate_id, event_type, payload, created_ms FROM outbox"
            " WHERE sent_ms IS NULL ORDER BY created_ms, id LIMIT ?",
            (self.batch,),
        )
        if not rows:
            return 0
        events = [OutboxEvent(*r) for r in rows]
        acked = self._publish(events, crash_at)
        done = [e.id for e, ok in zip(events, acked, strict=True) if ok]
        if done:
            with self.db.transaction("relay-mark-sent") as txn:
                for event_id in done:
                    txn.execute("UPDATE outbox SET sent_ms = ? WHERE id = ?", (self.db.world.now_ms, event_id))
        self.published += len(done)
        return len(done)


class LogTailer(_Relay):
    """Tail the change log (``outbox_changes``) from the stored position, publish, store the new position."""

    label = "log tailer"

    def __init__(
        self,
        db: Database,
        producer: Any,
        routes: Routes,
        partitions: dict[str, int],
        *,
        name: str = "tailer",
        **kw: Any,
    ) -> None:
        super().__init__(db, producer, routes, partitions, **kw)
        self.name = name

    def position(self) -> int:
        """Return the stored position: the change-log sequence number of the last event published."""
        rows = self.db.query("SELECT seq FROM relay_position WHERE relay = ?", (self.name,))
        return rows[0][0] if rows else 0

    def pending(self) -> int:
        """Return how many change-log events lie after the stored position."""
        return self.db.query("SELECT COUNT(*) FROM outbox_changes WHERE seq > ?", (self.position(),))[0][0]

    def step(self, crash_at: str | None = None) -> int:
        """Publish the next batch of the change log; return how many events the stored position moved past."""
        self._check_alive()
        rows = self.db.query(
            "SELECT seq, id, aggregate_type, aggregate_id, event_type, payload, created_ms FROM outbox_changes"
            " WHERE seq > ? ORDER BY seq LIMIT ?",
            (self.position(), self.batch),
        )
        if not rows:
            return 0
        events = [OutboxEvent(*r[1:]) for r in rows]
        acked = self._publish(events, crash_at)
        moved = 0
        for ok in acked:  # the position moves past the acknowledged prefix only
            if not ok:
                break
            moved += 1
        if moved:
            with self.db.transaction("tailer-store-position") as txn:
                txn.execute(
                    "INSERT INTO relay_position (relay, seq) VALUES (?, ?)"
                    " ON CONFLICT (relay) DO UPDATE SET seq = excluded.seq",
                    (self.name, rows[moved - 1][0]),
                )
        self.published += moved
        return moved
