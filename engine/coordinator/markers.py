"""Transaction markers on the partition side: append COMMIT/ABORT and answer once replicated.

Installed on every broker by the transaction coordinator extension. A WriteTxnMarkersRequest is
answered only when the marker is below the partition's high watermark (Kafka writes markers
with acks=all): if the leader crashed before replicating it, the coordinator must not believe
the marker is safe, or the transaction could end COMPLETE while a partition never learns its
outcome (a hanging transaction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.errors import ErrorCode
from engine.log.producer_state import AppendOrigin, LogValidationError
from engine.log.records import ABORT, COMMIT, RecordBatch
from engine.protocol import WriteTxnMarkersRequest, WriteTxnMarkersResponse

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.broker.replica import Replica
    from engine.sim.network import Message
    from engine.sim.scheduler import Timer

#: How long a partition leader waits for a marker to replicate before answering REQUEST_TIMED_OUT.
MARKER_REPLICATION_TIMEOUT_MS = 5_000


class MarkerWriter:
    """The partition-leader side of WriteTxnMarkers on one broker."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.waiting: dict[tuple[str, int], list[tuple[int, Message, Timer]]] = {}

    def reset(self) -> None:
        """Forget waiting markers (crash)."""
        self.waiting = {}

    def handle(self, m: Message) -> None:
        """Append the marker to the partition this broker leads; answer when it is replicated."""
        broker = self.broker
        req: WriteTxnMarkersRequest = m.body
        r, code = broker.leader_replica(req.topic, req.partition)
        if r is None:
            broker.respond(m, WriteTxnMarkersResponse(code, req.topic, req.partition))
            return
        batch = RecordBatch.control(
            COMMIT if req.committed else ABORT,
            producer_id=req.producer_id,
            producer_epoch=req.producer_epoch,
            coordinator_epoch=req.coordinator_epoch,
            create_time=broker.world.now_ms,
        )
        try:
            offset, _dup, _done = r.append_as_leader(batch, AppendOrigin.COORDINATOR)
        except LogValidationError as exc:
            broker.world.trace.emit(
                broker.name, "state", events.MARKER_REJECTED, ("tp", r.tp), ("error", exc.code.name)
            )
            broker.respond(m, WriteTxnMarkersResponse(exc.code, req.topic, req.partition, exc.message))
            return
        broker.world.trace.emit(
            broker.name,
            "state",
            events.MARKER_APPEND,
            ("tp", r.tp),
            ("offset", offset),
            ("marker", batch.control_type),
            ("pid", req.producer_id),
            ("epoch", req.producer_epoch),
        )
        appended = r.log.batch_at(offset)
        for ext in broker.extensions:
            ext.on_txn_marker(r, appended)
        broker.after_append(r)
        if offset < r.high_watermark:
            broker.respond(m, WriteTxnMarkersResponse(ErrorCode.NONE, req.topic, req.partition))
            return
        key = (req.topic, req.partition)
        timer = broker.set_timer(MARKER_REPLICATION_TIMEOUT_MS, self._expired, key, m)
        self.waiting.setdefault(key, []).append((offset + 1, m, timer))

    def on_high_watermark(self, r: Replica) -> None:
        """Answer the markers now below the HW."""
        key = (r.topic, r.partition)
        waiting = self.waiting.get(key)
        if not waiting:
            return
        hw = r.high_watermark
        keep = []
        for required, m, timer in waiting:
            if required <= hw:
                timer.cancel()
                self.broker.respond(m, WriteTxnMarkersResponse(ErrorCode.NONE, key[0], key[1]))
            else:
                keep.append((required, m, timer))
        self.waiting[key] = keep

    def on_leadership_lost(self, key: tuple[str, int]) -> None:
        """Answer NOT_LEADER_OR_FOLLOWER for markers waiting on a partition this broker stopped leading."""
        for _required, m, timer in self.waiting.pop(key, []):
            timer.cancel()
            self.broker.respond(m, WriteTxnMarkersResponse(ErrorCode.NOT_LEADER_OR_FOLLOWER, key[0], key[1]))

    def _expired(self, key: tuple[str, int], m: Message) -> None:
        waiting = self.waiting.get(key, [])
        for item in waiting:
            if item[1] is m:
                waiting.remove(item)
                self.broker.respond(m, WriteTxnMarkersResponse(ErrorCode.REQUEST_TIMED_OUT, key[0], key[1]))
                return
