"""The produce path on a partition leader (Kafka's ``ReplicaManager.appendRecords`` and ``DelayedProduce``).

A :class:`~engine.protocol.ProduceRequest` reaches the leader with one batch per partition (the
producer groups the partitions this leader leads, as Kafka's sender does). The request becomes a
:class:`ProduceCall`, a slot per partition, and is answered once, when every slot has its answer.
Each partition is checked, in Kafka's order: leadership (``NOT_LEADER_OR_FOLLOWER`` /
``UNKNOWN_TOPIC_OR_PARTITION``), for ``acks=all`` the ISR against ``min.insync.replicas``
(``NOT_ENOUGH_REPLICAS``), then broker extensions may take the partition first (KIP-890
verification of a transactional produce asks the coordinator and comes back through
:meth:`ProducePath.continue_produce` with ``verified=True``). A batch whose encoded size
(``RecordBatch.size_bytes``: the wire's bytes, compressed as sent, or the engine producer's estimate)
exceeds the topic's ``max.message.bytes`` (else the broker's ``message.max.bytes``) is refused with
``MESSAGE_TOO_LARGE`` before the log sees it (Kafka's ``UnifiedLog.analyzeAndValidateRecords``;
nothing is appended, no sequence is consumed). The replica validates and appends
(:meth:`~engine.broker.replica.Replica.append_as_leader`: the epoch and the 5-batch sequence
window; a duplicate is answered with the offset it first got). ``acks=0`` gets no answer,
``acks=1`` is answered at once, ``acks=all`` waits in the partition's purgatory until the HW
passes its last record, or a leadership change (``NOT_LEADER_OR_FOLLOWER``), or the request's
``timeout_ms`` (``REQUEST_TIMED_OUT``), counted, as Kafka's one ``DelayedProduce`` per request,
from the first partition that waits.

Simplified: Kafka verifies a request's transactional partitions together before appending any;
here each partition is verified on its own and the others append meanwhile (the answer still
waits for every partition).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine import trace_events as events
from engine.broker.purgatory import DelayedProduce
from engine.errors import ErrorCode
from engine.log.producer_state import AppendOrigin, LogValidationError
from engine.protocol import PartitionProduceResponse, ProduceResponse

if TYPE_CHECKING:
    from engine.broker.replica import Replica
    from engine.broker.replica_manager import ReplicaManager
    from engine.protocol import ProducePartition, ProduceRequest
    from engine.rpc import RpcNode
    from engine.sim.network import Message
    from engine.sim.scheduler import Timer

_NONE = ErrorCode.NONE
_CLIENT = AppendOrigin.CLIENT


class ProduceCall:
    """One produce request being answered: a slot per partition, one response once all are filled."""

    __slots__ = ("answers", "request", "timer", "waiting")

    def __init__(self, request: Message, n: int) -> None:
        self.request = request
        self.answers: list[PartitionProduceResponse | None] = [None] * n
        self.waiting = n
        #: the request's timeout while a partition waits in purgatory (set by the first that waits)
        self.timer: Timer | None = None

    def part(self, index: int) -> ProducePartition:
        """Return the request's partition in slot ``index``."""
        return self.request.body.partitions[index]


class ProducePath:
    """Produce handling for every partition one broker leads.

    Handed, as Kafka's ``ReplicaManager.appendRecords`` works with them, the broker's network
    ``node`` (answers, timers, the world's trace and fault sites), its
    :class:`~engine.broker.replica_manager.ReplicaManager`, the broker's extensions (which may
    take a partition first), its error counter, and ``after_append``: what a leader's append
    sets off (followers woken, the HW maybe moved).
    """

    __slots__ = ("after_append", "count_error", "extensions", "manager", "node")

    def __init__(
        self,
        node: RpcNode,
        manager: ReplicaManager,
        extensions: list[Any],
        count_error: Callable[[ErrorCode], None],
        after_append: Callable[[Replica], None],
    ) -> None:
        self.node = node
        self.manager = manager
        self.extensions = extensions
        self.count_error = count_error
        self.after_append = after_append

    def on_produce(self, m: Message) -> None:
        """Handle a produce request: every partition in order (extensions may intercept each)."""
        req: ProduceRequest = m.body
        call = ProduceCall(m, len(req.partitions))
        for i in range(len(req.partitions)):
            self.continue_produce(call, i, verified=False)

    def continue_produce(self, call: ProduceCall, index: int, *, verified: bool) -> None:
        """Validate and append one partition; extensions may intercept it first (``verified=False``)."""
        manager = self.manager
        req: ProduceRequest = call.request.body
        part = req.partitions[index]
        r, code = manager.leader_replica(part.topic, part.partition)
        if r is None:
            self.error(call, index, code, None)
            return
        if req.acks == -1:
            err = r.check_min_isr(manager.min_insync_replicas(part.topic))
            if err is not None:
                self.error(call, index, err.code, err.message)
                return
        if not verified:
            for ext in self.extensions:
                if ext.intercept_produce(call, index, r):
                    return
        batch = part.batch
        limit = manager.max_message_bytes(part.topic)
        if batch.size_bytes > limit:
            # Kafka's UnifiedLog.analyzeAndValidateRecords: before the CRC and producer-state checks.
            self.error(
                call,
                index,
                ErrorCode.MESSAGE_TOO_LARGE,
                f"The record batch size in the append to {part.topic}-{part.partition} is {batch.size_bytes} bytes "
                f"which exceeds the maximum configured value of {limit}.",
            )
            return
        try:
            base_offset, duplicate, _ = r.append_as_leader(batch, _CLIENT)
        except LogValidationError as exc:
            self.error(call, index, exc.code, exc.message)
            return
        node = self.node
        if duplicate:
            node.world.trace.mark(node.name, "dedup: duplicate batch answered from cache")
        if node.world.sites.fire("broker.produce.not_leader_after_append", node.name):
            # BUGGIFY: the batch is in the log, but the answer says it may not be (KAFKA-13574).
            self.after_append(r)
            self.error(call, index, ErrorCode.NOT_LEADER_OR_FOLLOWER, "injected after append")
            return
        self.after_append(r)
        last = base_offset + len(batch.values)
        if req.acks != -1 or last <= r.high_watermark:
            self.answer(
                call,
                index,
                PartitionProduceResponse(part.topic, part.partition, _NONE, base_offset, duplicate=duplicate),
            )
            return
        manager.purgatory[(part.topic, part.partition)].produces.append(
            DelayedProduce(last, call, index, base_offset, duplicate)
        )
        if call.timer is None:
            call.timer = node.set_timer(req.timeout_ms, self._expired, call)

    def answer(self, call: ProduceCall, index: int, answer: PartitionProduceResponse) -> None:
        """Fill one slot; the last one sends the response (none for acks=0)."""
        call.answers[index] = answer
        call.waiting -= 1
        if call.waiting:
            return
        if call.timer is not None:
            call.timer.cancel()
        m = call.request
        if m.body.acks != 0:
            self.node.respond(m, ProduceResponse(tuple(call.answers)))  # type: ignore[arg-type]

    def release(self, r: Replica) -> None:
        """The HW moved: answer the partitions whose records are all below it now."""
        purg = self.manager.purgatory[(r.topic, r.partition)]
        if not purg.produces:
            return
        for p in purg.ready_produces(r.high_watermark):
            self.answer(
                p.call,
                p.index,
                PartitionProduceResponse(r.topic, r.partition, _NONE, p.base_offset, duplicate=p.duplicate),
            )

    def error(self, call: ProduceCall, index: int, code: ErrorCode, message: str | None) -> None:
        """Answer one partition of a produce with an error (traced and counted)."""
        node = self.node
        part = call.part(index)
        self.count_error(code)
        node.world.trace.emit(
            node.name, "state", events.PRODUCE_ERROR, ("tp", f"{part.topic}-{part.partition}"), ("error", code.name)
        )
        self.answer(call, index, PartitionProduceResponse(part.topic, part.partition, code, error_message=message))

    def _expired(self, call: ProduceCall) -> None:
        """The request's timeout passed: its partitions still in purgatory time out."""
        call.timer = None
        purgatory = self.manager.purgatory
        for index, part in enumerate(call.request.body.partitions):
            if call.answers[index] is not None:
                continue
            purg = purgatory.get((part.topic, part.partition))
            if purg is None:
                continue
            for p in purg.produces:
                if p.call is call and p.index == index:
                    purg.produces.remove(p)
                    self.count_error(ErrorCode.REQUEST_TIMED_OUT)
                    self.answer(
                        call,
                        index,
                        PartitionProduceResponse(
                            part.topic,
                            part.partition,
                            ErrorCode.REQUEST_TIMED_OUT,
                            error_message="not replicated to the ISR in time",
                        ),
                    )
                    break
