"""The produce path on a partition leader (Kafka's ``ReplicaManager.appendRecords`` and ``DelayedProduce``).

A :class:`~engine.protocol.ProduceRequest` reaches the leader, which checks, in Kafka's order:
leadership (``NOT_LEADER_OR_FOLLOWER`` / ``UNKNOWN_TOPIC_OR_PARTITION``), for ``acks=all`` the
ISR against ``min.insync.replicas`` (``NOT_ENOUGH_REPLICAS``), then lets broker extensions take
the request first (KIP-890 verification of a transactional produce asks the coordinator and
comes back through :meth:`ProducePath.continue_produce` with ``verified=True``). The replica
validates and appends (:meth:`~engine.broker.replica.Replica.append_as_leader`: the epoch and
the 5-batch sequence window; a duplicate is answered with the offset it first got). ``acks=0``
gets no answer, ``acks=1`` is answered at once, ``acks=all`` waits in the partition's
purgatory until the HW passes its last record, or ``timeout_ms`` (``REQUEST_TIMED_OUT``), or a
leadership change (``NOT_LEADER_OR_FOLLOWER``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.broker.purgatory import DelayedProduce
from engine.errors import ErrorCode
from engine.log.producer_state import AppendOrigin, LogValidationError
from engine.protocol import ProduceRequest, ProduceResponse

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.broker.replica import Replica
    from engine.sim.network import Message

_NONE = ErrorCode.NONE
_CLIENT = AppendOrigin.CLIENT


class ProducePath:
    """Produce handling for every partition one broker leads."""

    __slots__ = ("broker",)

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def on_produce(self, m: Message) -> None:
        """Handle a produce request (extensions may intercept it)."""
        self.continue_produce(m, verified=False)

    def continue_produce(self, m: Message, *, verified: bool) -> None:
        """Validate and append a produce; extensions may intercept it first (``verified=False``)."""
        broker = self.broker
        req: ProduceRequest = m.body
        r, code = broker.leader_replica(req.topic, req.partition)
        if r is None:
            self.error(m, code, None)
            return
        if req.acks == -1:
            err = r.check_min_isr(broker.min_insync_replicas(req.topic))
            if err is not None:
                self.error(m, err.code, err.message)
                return
        if not verified:
            for ext in broker.extensions:
                if ext.intercept_produce(m, r, req):
                    return
        try:
            base_offset, duplicate, _ = r.append_as_leader(req.batch, _CLIENT)
        except LogValidationError as exc:
            self.error(m, exc.code, exc.message)
            return
        if duplicate:
            broker.world.trace.mark(broker.name, "dedup: duplicate batch answered from cache")
        if broker.world.sites.fire("broker.produce.not_leader_after_append", broker.name):
            # BUGGIFY: the batch is in the log, but the answer says it may not be (KAFKA-13574).
            broker.after_append(r)
            self.error(m, ErrorCode.NOT_LEADER_OR_FOLLOWER, "injected after append")
            return
        broker.after_append(r)
        if req.acks == 0:
            return
        self.await_replication(m, r, base_offset, len(req.batch.values), duplicate)

    def await_replication(self, m: Message, r: Replica, base_offset: int, count: int, duplicate: bool) -> None:
        """Answer a produce once ``count`` records from ``base_offset`` are below the HW (acks=all)."""
        req: ProduceRequest = m.body
        last = base_offset + count
        broker = self.broker
        if req.acks == 1 or last <= r.high_watermark:
            broker.respond(m, ProduceResponse(req.topic, req.partition, _NONE, base_offset, duplicate=duplicate))
            return
        key = (req.topic, req.partition)
        timer = broker.set_timer(req.timeout_ms, self._expired, key, m)
        broker.purgatory[key].produces.append(DelayedProduce(last, m, base_offset, duplicate, timer))

    def release(self, r: Replica) -> None:
        """The HW moved: answer the produces whose records are all below it now."""
        broker = self.broker
        purg = broker.purgatory[(r.topic, r.partition)]
        if not purg.produces:
            return
        for p in purg.ready_produces(r.high_watermark):
            p.timer.cancel()
            req: ProduceRequest = p.request.body
            broker.respond(
                p.request, ProduceResponse(req.topic, req.partition, _NONE, p.base_offset, duplicate=p.duplicate)
            )

    def error(self, m: Message, code: ErrorCode, message: str | None) -> None:
        """Answer a produce request with an error (traced and counted)."""
        broker = self.broker
        req: ProduceRequest = m.body
        broker.count_error(code)
        broker.world.trace.emit(
            broker.name, "state", events.PRODUCE_ERROR, ("tp", f"{req.topic}-{req.partition}"), ("error", code.name)
        )
        if req.acks != 0:
            broker.respond(m, ProduceResponse(req.topic, req.partition, code, error_message=message))

    def _expired(self, key: tuple[str, int], m: Message) -> None:
        broker = self.broker
        purg = broker.purgatory.get(key)
        if purg is None:
            return
        for p in purg.produces:
            if p.request is m:
                purg.produces.remove(p)
                req: ProduceRequest = m.body
                broker.count_error(ErrorCode.REQUEST_TIMED_OUT)
                broker.respond(
                    m,
                    ProduceResponse(
                        req.topic,
                        req.partition,
                        ErrorCode.REQUEST_TIMED_OUT,
                        error_message="not replicated to the ISR in time",
                    ),
                )
                return
