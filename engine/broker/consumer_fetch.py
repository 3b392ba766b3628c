"""Serving consumers' fetches: the HW bound, read_committed's LSO bound and the aborted list.

This is the broker's half of ``isolation.level`` (Kafka's ``ReplicaManager.fetchMessages`` and
``UnifiedLog.read`` with ``FetchIsolation``): a ``read_uncommitted`` consumer may read up to
the high watermark, a ``read_committed`` one only up to the last stable offset (LSO, the first
offset of the earliest open transaction, capped by the HW). With the batches a read_committed
fetch also gets the aborted transactions that overlap the range, from the ``.txnindex``
(``AbortedTxn`` entries); the consumer drops those transactions' batches itself when it meets
the ABORT marker (the client's half lives in the consumer). A fetch with ``max_wait_ms`` and
nothing to read waits in the partition's purgatory until the HW (or LSO) moves past its offset,
or its deadline passes.

Mutants M10 (the LSO taken as an inclusive bound) and the one that withholds the aborted list
(``send_aborted_transactions=False``) are switched here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.broker.purgatory import DelayedFetch
from engine.config import IsolationLevel
from engine.errors import ErrorCode
from engine.protocol import FetchRequest, FetchResponse

if TYPE_CHECKING:
    from engine.broker.replica import Replica
    from engine.broker.replica_manager import ReplicaManager
    from engine.rpc import RpcNode
    from engine.sim.network import Message
    from engine.weakenings import Weakenings


class ConsumerFetches:
    """Consumer fetch handling for every partition one broker leads.

    Handed, as Kafka's ``DelayedFetch`` is, what it reads and answers through: the broker's
    network ``node`` (answers, timers), its :class:`~engine.broker.replica_manager.ReplicaManager`,
    the switched weakenings and the broker's error counter.
    """

    __slots__ = ("count_error", "manager", "node", "weak")

    def __init__(
        self, node: RpcNode, manager: ReplicaManager, weak: Weakenings, count_error: Callable[[ErrorCode], None]
    ) -> None:
        self.node = node
        self.manager = manager
        self.weak = weak
        self.count_error = count_error

    def on_fetch(self, m: Message) -> None:
        """Answer a consumer's fetch now, or park it until data is readable under its isolation level."""
        node = self.node
        req: FetchRequest = m.body
        r, code = self.manager.leader_replica(req.topic, req.partition)
        if r is None:
            self.count_error(code)
            node.respond(m, FetchResponse(req.topic, req.partition, code))
            return
        if req.fetch_offset > r.log_end_offset or req.fetch_offset < r.log.log_start_offset:
            self.count_error(ErrorCode.OFFSET_OUT_OF_RANGE)
            node.respond(m, self._response(req, r, ErrorCode.OFFSET_OUT_OF_RANGE, leader_epoch=-1))
            return
        if req.max_wait_ms > 0 and not self.has_data_for(req, r):
            key = (req.topic, req.partition)
            holder: list[DelayedFetch] = []
            timer = node.set_timer(req.max_wait_ms, self._expired, key, holder)
            parked = DelayedFetch(m, timer)
            holder.append(parked)
            self.manager.purgatory[key].consumer_fetches.append(parked)
            return
        self.answer(m, r)

    def upper_bound(self, req: FetchRequest, r: Replica) -> int:
        """Return the exclusive upper offset a consumer's fetch may read: the HW, or the LSO."""
        if req.isolation_level == IsolationLevel.READ_COMMITTED:
            lso = r.last_stable_offset
            if self.weak.lso_inclusive and lso < r.high_watermark:
                return lso + 1  # mutant M10: the LSO read as an inclusive bound (Redpanda #3036)
            return lso
        return r.high_watermark

    def has_data_for(self, req: FetchRequest, r: Replica) -> bool:
        """Return True when the fetch would read at least one offset now."""
        return self.upper_bound(req, r) > req.fetch_offset

    def answer(self, m: Message, r: Replica) -> None:
        """Answer with the readable batches (and, for read_committed, the aborted transactions among them)."""
        req: FetchRequest = m.body
        upper = self.upper_bound(req, r)
        batches = tuple(r.log.read(req.fetch_offset, req.max_bytes, upper)) if upper > req.fetch_offset else ()
        aborted = None
        if req.isolation_level == IsolationLevel.READ_COMMITTED and batches and self.weak.send_aborted_transactions:
            aborted = tuple(r.txn_index.collect(req.fetch_offset, upper))
        self.node.respond(
            m,
            self._response(
                req,
                r,
                ErrorCode.NONE,
                log_start_offset=r.log.log_start_offset,
                batches=batches,
                aborted_transactions=aborted,
            ),
        )

    def wake(self, r: Replica) -> None:
        """The HW (and maybe the LSO) moved: answer the parked fetches that can read now."""
        purg = self.manager.purgatory[(r.topic, r.partition)]
        if not purg.consumer_fetches:
            return
        parked, purg.consumer_fetches = purg.consumer_fetches, []
        for f in parked:
            if self.has_data_for(f.request.body, r):
                f.timer.cancel()
                self.answer(f.request, r)
            else:
                purg.consumer_fetches.append(f)

    def _response(self, req: FetchRequest, r: Replica, code: ErrorCode, **fields: object) -> FetchResponse:
        """A fetch answer carrying the partition's HW, LSO and leader epoch as of now."""
        fields.setdefault("leader_epoch", r.state.leader_epoch if r.state else -1)
        return FetchResponse(req.topic, req.partition, code, r.high_watermark, r.last_stable_offset, **fields)  # type: ignore[arg-type]

    def _expired(self, key: tuple[str, int], holder: list[DelayedFetch]) -> None:
        purg = self.manager.purgatory.get(key)
        r = self.manager.replicas.get(key)
        if purg is None or r is None or not purg.remove_fetch(holder[0]):
            return
        if r.is_leader:
            self.answer(holder[0].request, r)
        else:
            req: FetchRequest = holder[0].request.body
            self.node.respond(
                holder[0].request, FetchResponse(req.topic, req.partition, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            )
