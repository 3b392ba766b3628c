"""The group coordinator: a broker extension that owns the groups of the ``__consumer_offsets`` partitions it leads.

A group ``g`` lives in partition ``partition_for(g, offsets.topic.num.partitions)``; the leader of
that partition is its coordinator (clients find it with FindCoordinator, key type 0).

Life cycle of one partition on this broker
------------------------------------------
=====================  ====================================================================
event                  what happens
=====================  ====================================================================
becomes leader         the partition is *loading*: requests for its groups get
                       COORDINATOR_LOAD_IN_PROGRESS; after :data:`LOAD_DELAY_MS` the log is
                       replayed to its end (:func:`~engine.group.records.replay`: plain offsets,
                       group membership, transactional offsets with their markers) and it is
                       *loaded*; while the high watermark is below the end it loaded (a tail
                       the old leader wrote but never committed), requests still get
                       COORDINATOR_LOAD_IN_PROGRESS (see *Uncommitted tail* below)
becomes follower       unloaded: parked JoinGroup/SyncGroup get NOT_COORDINATOR, groups go Dead
crash                  everything is volatile and forgotten
=====================  ====================================================================

Writes (OffsetCommit, TxnOffsetCommit, the leader's SyncGroup) are appended to the partition
through the leader replica and answered when the high watermark passes them (acks=all, as
``offsets.commit.required.acks=-1``), or after :data:`OFFSETS_COMMIT_TIMEOUT_MS` with
REQUEST_TIMED_OUT. Plain offsets enter the cache when replicated; transactional offsets wait in
``pending_txn`` until a COMMIT marker of their producer id lands in the partition
(:meth:`GroupCoordinator.on_txn_marker`); an ABORT marker discards them. Who may commit, the
pending offsets and OffsetFetch's ``require_stable`` follow the rules of
:mod:`engine.group.txn_offsets` (KIP-447).

Uncommitted tail
----------------
A new leader's log may end with records above its high watermark: written by the old
coordinator, replicated to this broker, never committed (the old coordinator never answered
them). They may still be truncated away if this leader fails before the ISR catches up, so no
answer may be built on them: a group loaded from them could hand out a generation that a later
coordinator, loading a shorter log, never knew, and a member of that phantom generation would
pass KIP-447 fencing once the real group reached the same generation number (seed 740195 of
'copier: static members restart'). Kafka 4.x loads to the log end too
(``CoordinatorLoaderImpl.load``) and, in ``CoordinatorRuntime.CoordinatorWriteEvent``, holds every
response of an operation until the high watermark passes the last written offset
(``deferredEventQueue``). Here the partition stays unavailable with COORDINATOR_LOAD_IN_PROGRESS
(retriable: clients back off and retry) until the high watermark reaches the loaded end; the
client sees an error and a retry where Kafka shows a slower answer.

Membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) is in :mod:`engine.group.membership`;
KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe) in
:mod:`engine.group.consumer_heartbeat` (``self.consumer``), whose commits are validated by member
epoch (:meth:`~engine.group.consumer_group.ConsumerGroup.validate_offset_commit`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine import trace_events as events
from engine.broker.extension import BrokerExtension
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for
from engine.errors import ErrorCode, IllegalStateError
from engine.group import txn_offsets
from engine.group.consumer_heartbeat import ConsumerGroups
from engine.group.membership import Membership
from engine.group.metadata import GroupMetadata, MemberMetadata
from engine.group.records import StoredOffset, offsets_batch, replay
from engine.group.state import GroupState
from engine.log.producer_state import AppendOrigin, LogValidationError
from engine.protocol import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.broker.replica import Replica
    from engine.log.records import RecordBatch
    from engine.protocol import PartitionState
    from engine.sim.network import Message
    from engine.sim.scheduler import Timer

#: How long loading a partition takes (Kafka loads on a background thread; meanwhile requests for
#: its groups are answered COORDINATOR_LOAD_IN_PROGRESS).
LOAD_DELAY_MS = 5
#: Kafka's ``offsets.commit.timeout.ms``: how long a write waits for the ISR.
OFFSETS_COMMIT_TIMEOUT_MS = 5_000

#: Log-append errors as the group coordinator reports them (``GroupMetadataManager.storeOffsets``).
_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}

Done = Callable[[ErrorCode], None]


class _HwWaiter:
    __slots__ = ("done", "end", "timer")

    def __init__(self, end: int, done: Done, timer: Timer) -> None:
        self.end = end
        self.done = done
        self.timer = timer


class GroupCoordinator(BrokerExtension):
    """Coordinates the consumer groups whose ``__consumer_offsets`` partition this broker leads."""

    def __init__(self, weak: Weakenings = CORRECT) -> None:
        #: mutant M15 switches KIP-447 generation fencing of TxnOffsetCommit off
        self.weak = weak
        #: partition -> leader epoch it was loaded (or is loading) in
        self.owned: dict[int, int] = {}
        self.loading: set[int] = set()
        #: partition -> the log end offset it was loaded to, while its high watermark is below it
        self.unsettled: dict[int, int] = {}
        self.groups: dict[str, GroupMetadata] = {}
        self._waiters: dict[int, list[_HwWaiter]] = {}
        self.membership = Membership(self)
        self.consumer = ConsumerGroups(self)

    def install(self, broker: Broker) -> None:
        """Register the group RPC handlers."""
        super().install(broker)
        broker.handlers[OffsetCommitRequest] = self._on_offset_commit
        broker.handlers[OffsetFetchRequest] = self._on_offset_fetch
        broker.handlers[TxnOffsetCommitRequest] = self._on_txn_offset_commit
        self.membership.install(broker)
        self.consumer.install(broker)

    @property
    def now_ms(self) -> int:
        """Return the simulated time."""
        return self.broker.world.now_ms

    def trace(self, name: str, *detail: tuple[str, Any]) -> None:
        """Emit a state event from the broker."""
        self.broker.world.trace.emit(self.broker.name, "state", name, *detail)

    # -- ownership --------------------------------------------------------------------------

    def partition_of(self, group_id: str) -> int:
        """Return the ``__consumer_offsets`` partition of a group."""
        return partition_for(group_id, self.broker.config.offsets_topic_num_partitions)

    def check_coordinator(self, group_id: str) -> ErrorCode:
        """Return NONE if this broker serves ``group_id`` now, else NOT_COORDINATOR or LOAD_IN_PROGRESS."""
        p = self.partition_of(group_id)
        if p not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        if p in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if p in self.unsettled:
            r = self.broker.replicas.get((CONSUMER_OFFSETS_TOPIC, p))
            if r is None or r.high_watermark < self.unsettled[p]:
                return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            del self.unsettled[p]
        return ErrorCode.NONE

    def group(self, group_id: str, *, create: bool) -> GroupMetadata | None:
        """Return the group (the caller checked :meth:`check_coordinator`), making an Empty one if asked."""
        g = self.groups.get(group_id)
        if g is None and create:
            g = GroupMetadata(group_id, self.partition_of(group_id), self.now_ms)
            self.groups[group_id] = g
        return g

    def on_become_leader(self, state: PartitionState) -> None:
        """Start loading a ``__consumer_offsets`` partition."""
        if state.topic != CONSUMER_OFFSETS_TOPIC:
            return
        p = state.partition
        if p in self.owned and p not in self.loading:
            self.owned[p] = state.leader_epoch  # re-elected: the log and the cache are the same
            return
        self.owned[p] = state.leader_epoch
        self.loading.add(p)
        self.broker.set_timer(LOAD_DELAY_MS, self._load, p, state.leader_epoch)

    def _load(self, p: int, epoch: int) -> None:
        r = self.broker.replicas.get((CONSUMER_OFFSETS_TOPIC, p))
        if self.owned.get(p) != epoch or p not in self.loading or r is None or not r.is_leader:
            return
        loaded = replay(r.log.batches)
        for gid in sorted(loaded):
            if self.partition_of(gid) != p:
                continue
            g = GroupMetadata(gid, p, self.now_ms)
            lg = loaded[gid]
            g.committed = lg.committed
            g.pending_txn = lg.pending_txn
            if lg.metadata is not None:
                self._restore_members(g, lg.metadata)
            self.groups[gid] = g
        self.loading.discard(p)
        if r.high_watermark < r.log_end_offset:
            self.unsettled[p] = r.log_end_offset  # an uncommitted tail was loaded: no answers from it yet
        mine = sorted({g for g in loaded if self.partition_of(g) == p} | set(self.consumer.load(p, r.log.batches)))
        if mine:  # 50 partitions load at startup; only loads that found something are traced
            self.trace(events.GROUP_LOAD_DONE, ("partition", p), ("epoch", epoch), ("groups", mine))

    def _restore_members(self, g: GroupMetadata, md: Any) -> None:
        g.generation = md.generation
        g.protocol_type = md.protocol_type
        g.protocol = md.protocol
        for rec in md.members:
            m = MemberMetadata(
                rec.member_id,
                rec.group_instance_id,
                rec.client_id,
                rec.client_host,
                rec.rebalance_timeout_ms,
                rec.session_timeout_ms,
                ((md.protocol or "", rec.subscription),),  # raw bytes and all, as the leader sent them
            )
            m.assignment = rec.assignment
            g.members[m.member_id] = m
            if m.group_instance_id is not None:
                g.static_members[m.group_instance_id] = m.member_id
            # GroupMetadataManager.onLoaded: every loaded member's session runs from the load.
            self.membership.schedule_expiry(g, m)
        g.leader = md.leader if md.leader in g.members else next(iter(g.members), None)
        # Loaded, not a transition: Kafka's GroupMetadata.loadGroup starts in Stable or Empty.
        g.state = GroupState.STABLE if g.members else GroupState.EMPTY

    def on_become_follower(self, state: PartitionState) -> None:
        """Unload a partition this broker no longer leads."""
        if state.topic == CONSUMER_OFFSETS_TOPIC and state.partition in self.owned:
            self._unload(state.partition, answer=True)

    def _unload(self, p: int, *, answer: bool) -> None:
        self.owned.pop(p, None)
        self.loading.discard(p)
        self.unsettled.pop(p, None)
        for w in self._waiters.pop(p, []):
            w.timer.cancel()
            if answer:
                w.done(ErrorCode.NOT_COORDINATOR)
        self.consumer.unload(p)
        gone = sorted(g for g, grp in self.groups.items() if grp.partition == p)
        for gid in gone:
            self.membership.unload(self.groups.pop(gid), answer=answer)
        if gone:
            self.trace(events.GROUP_UNLOAD, ("partition", p), ("groups", gone))

    def on_crash(self) -> None:
        """Forget every group (volatile)."""
        for p in sorted(self.owned):
            self._unload(p, answer=False)
        self.owned = {}
        self.loading = set()
        self.unsettled = {}
        self.groups = {}
        self._waiters = {}

    def describe(self) -> tuple[tuple[str, str, int], ...]:
        """Return ``(group_id, state, generation)`` for every group this broker coordinates now."""
        return tuple((gid, self.groups[gid].state.value, self.groups[gid].generation) for gid in sorted(self.groups))

    # -- writing to __consumer_offsets ------------------------------------------------------

    def append(self, group: GroupMetadata, batch: RecordBatch) -> tuple[int, ErrorCode]:
        """Append ``batch`` to the group's partition as its leader; return ``(base_offset, error)``.

        The caller then waits for replication with :meth:`await_replication`.
        """
        r, code = self.broker.leader_replica(CONSUMER_OFFSETS_TOPIC, group.partition)
        if r is None:
            return -1, _APPEND_ERRORS.get(code, code)
        err = r.check_min_isr(self.broker.min_insync_replicas(CONSUMER_OFFSETS_TOPIC))
        try:
            if err is not None:
                raise err
            if batch.producer_id >= 0:
                base = _append_transactional(r, batch)
            else:
                base = r.append_as_leader(batch, AppendOrigin.COORDINATOR)[0]
        except LogValidationError as exc:
            return -1, _APPEND_ERRORS.get(exc.code, exc.code)
        self.broker.after_append(r)
        return base, ErrorCode.NONE

    def await_replication(self, p: int, end: int, done: Done) -> None:
        """Run ``done(NONE)`` once the HW of partition ``p`` reaches ``end``; an error if it cannot."""
        r = self.broker.replicas.get((CONSUMER_OFFSETS_TOPIC, p))
        if r is None or not r.is_leader or p not in self.owned:
            done(ErrorCode.NOT_COORDINATOR)
            return
        if end <= r.high_watermark:
            done(ErrorCode.NONE)
            return
        timer = self.broker.set_timer(OFFSETS_COMMIT_TIMEOUT_MS, self._append_timed_out, p, end, done)
        self._waiters.setdefault(p, []).append(_HwWaiter(end, done, timer))

    def _append_timed_out(self, p: int, end: int, done: Done) -> None:
        waiters = self._waiters.get(p, [])
        for w in waiters:
            if w.done is done and w.end == end:
                waiters.remove(w)
                done(ErrorCode.REQUEST_TIMED_OUT)
                return

    def on_high_watermark(self, r: Replica) -> None:
        """Answer the writes the high watermark has passed; serve a loaded tail once it is committed."""
        if r.topic != CONSUMER_OFFSETS_TOPIC:
            return
        end = self.unsettled.get(r.partition)
        if end is not None and r.high_watermark >= end:
            del self.unsettled[r.partition]
        if r.partition not in self._waiters:
            return
        hw = r.high_watermark
        waiters = self._waiters[r.partition]
        ready = [w for w in waiters if w.end <= hw]
        if not ready:
            return
        self._waiters[r.partition] = [w for w in waiters if w.end > hw]
        for w in ready:
            w.timer.cancel()
            w.done(ErrorCode.NONE)

    # -- OffsetCommit -----------------------------------------------------------------------

    def validate_commit(
        self,
        g: GroupMetadata,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        *,
        transactional: bool,
        api_version: int | None = None,
    ) -> ErrorCode:
        """Who may commit for this group now (:func:`engine.group.txn_offsets.validate_commit`).

        A KIP-848 group checks the member epoch instead (``ConsumerGroup.validate_offset_commit``).
        """
        cg = self.consumer.groups.get(g.group_id)
        if cg is not None:
            if transactional and not self.weak.fence_stale_generation and generation_id >= 0:
                return ErrorCode.NONE  # M15: no KIP-447 fencing, as for a classic group (any member, any epoch)
            return cg.validate_offset_commit(
                member_id, generation_id, transactional=transactional, api_version=api_version
            )
        return txn_offsets.validate_commit(
            g,
            generation_id,
            member_id,
            instance_id,
            transactional=transactional,
            fence_stale_generation=self.weak.fence_stale_generation,
        )

    def _on_offset_commit(self, m: Message) -> None:
        req: OffsetCommitRequest = m.body
        code = self.check_coordinator(req.group_id)
        g = self.group(req.group_id, create=req.generation_id < 0) if code is ErrorCode.NONE else None
        if code is ErrorCode.NONE and g is None:
            code = ErrorCode.ILLEGAL_GENERATION  # no such group: a commit from an older generation
        if g is not None:
            code = self.validate_commit(
                g,
                req.generation_id,
                req.member_id,
                req.group_instance_id,
                transactional=False,
                api_version=req.api_version,
            )
            if code is ErrorCode.NONE and g.is_(GroupState.COMPLETING_REBALANCE):
                code = ErrorCode.REBALANCE_IN_PROGRESS
        if g is None or code is not ErrorCode.NONE:
            self._count_and_trace(events.OFFSET_COMMIT_ERROR, req.group_id, code)
            self.broker.respond(m, OffsetCommitResponse(code))
            return
        member = g.members.get(req.member_id)
        if member is not None:
            self.membership.schedule_expiry(g, member)
        batch = offsets_batch(req.group_id, req.offsets, self.now_ms)
        base, code = self.append(g, batch)
        if code is not ErrorCode.NONE:
            self._count_and_trace(events.OFFSET_COMMIT_ERROR, req.group_id, code)
            self.broker.respond(m, OffsetCommitResponse(code))
            return
        tps = [(t, p) for t, p, _ in req.offsets]
        for tp in tps:
            g.pending_commits[tp] = g.pending_commits.get(tp, 0) + 1

        def replicated(code: ErrorCode) -> None:
            for tp in tps:
                n = g.pending_commits.get(tp, 0) - 1
                if n > 0:
                    g.pending_commits[tp] = n
                else:
                    g.pending_commits.pop(tp, None)
            if code is ErrorCode.NONE:
                for i, (t, p, o) in enumerate(req.offsets):
                    current = g.committed.get((t, p))
                    if current is None or current.record_offset < base + i:
                        g.committed[(t, p)] = StoredOffset(o, base + i, batch.create_time)
                self.trace(
                    events.OFFSET_COMMIT_DONE,
                    ("group", req.group_id),
                    ("offsets", [f"{t}-{p}@{o}" for t, p, o in req.offsets]),
                )
            else:
                self._count_and_trace(events.OFFSET_COMMIT_ERROR, req.group_id, code)
            self.broker.respond(m, OffsetCommitResponse(code))

        self.await_replication(g.partition, base + batch.count, replicated)

    # -- TxnOffsetCommit (KIP-98, KIP-447) --------------------------------------------------

    def _on_txn_offset_commit(self, m: Message) -> None:
        req: TxnOffsetCommitRequest = m.body
        code = self.check_coordinator(req.group_id)
        g = self.group(req.group_id, create=True) if code is ErrorCode.NONE else None
        if g is not None:
            code = self.validate_commit(g, req.generation_id, req.member_id, req.group_instance_id, transactional=True)
        if g is not None and code is ErrorCode.NONE:
            code = self._check_producer_epoch(g.partition, req.producer_id, req.producer_epoch)
        if g is None or code is not ErrorCode.NONE:
            self._count_and_trace(events.TXN_OFFSET_COMMIT_ERROR, req.group_id, code)
            self.broker.respond(m, TxnOffsetCommitResponse(code))
            return
        batch = offsets_batch(
            req.group_id, req.offsets, self.now_ms, producer_id=req.producer_id, producer_epoch=req.producer_epoch
        )
        base, code = self.append(g, batch)
        if code is not ErrorCode.NONE:
            self._count_and_trace(events.TXN_OFFSET_COMMIT_ERROR, req.group_id, code)
            self.broker.respond(m, TxnOffsetCommitResponse(code))
            return
        # Pending from the append on: the cache mirrors the leader's log, which keeps the record.
        txn_offsets.add_pending(g, req.producer_id, req.offsets, base, batch.create_time)
        self.trace(
            events.TXN_OFFSET_COMMIT_PENDING,
            ("group", req.group_id),
            ("pid", req.producer_id),
            ("offsets", [f"{t}-{p}@{o}" for t, p, o in req.offsets]),
        )
        self.await_replication(
            g.partition, base + batch.count, lambda code: self.broker.respond(m, TxnOffsetCommitResponse(code))
        )

    def _check_producer_epoch(self, p: int, producer_id: int, producer_epoch: int) -> ErrorCode:
        r = self.broker.replicas.get((CONSUMER_OFFSETS_TOPIC, p))
        entry = r.producers.producers.get(producer_id) if r is not None else None
        return txn_offsets.producer_epoch_error(entry.producer_epoch if entry is not None else None, producer_epoch)

    def on_txn_marker(self, r: Replica, batch: RecordBatch) -> None:
        """A COMMIT or ABORT marker landed in a partition this broker leads: settle pending offsets.

        Called right after the marker's append; a batch without an assigned offset is taken to be
        the last one in the log.
        """
        if r.topic != CONSUMER_OFFSETS_TOPIC or r.partition not in self.owned or r.partition in self.loading:
            return
        marker_offset = batch.base_offset if batch.base_offset >= 0 else r.log_end_offset - 1
        commit = batch.control_type == "COMMIT"
        for gid in sorted(self.groups):
            g = self.groups[gid]
            if g.partition != r.partition or batch.producer_id not in g.pending_txn:
                continue
            moved = txn_offsets.settle(g, batch.producer_id, marker_offset, commit=commit)
            self.trace(
                events.TXN_OFFSET_COMMIT_COMPLETED,
                ("group", gid),
                ("pid", batch.producer_id),
                ("result", batch.control_type),
                ("committed", [f"{t}-{p}" for t, p in moved]),
            )

    # -- OffsetFetch ------------------------------------------------------------------------

    def _on_offset_fetch(self, m: Message) -> None:
        req: OffsetFetchRequest = m.body
        code = self.check_coordinator(req.group_id)
        if code is not ErrorCode.NONE:
            self.broker.respond(m, OffsetFetchResponse(code))
            return
        g = self.group(req.group_id, create=False)
        if req.partitions is not None:
            tps = list(req.partitions)
        else:
            tps = sorted(g.committed) if g is not None else []
        out = tuple(txn_offsets.fetch_partition(g, tp, require_stable=req.require_stable) for tp in tps)
        self.broker.respond(m, OffsetFetchResponse(ErrorCode.NONE, out))

    def _count_and_trace(self, name: str, group_id: str, code: ErrorCode) -> None:
        self.broker.error_counts[code.name] = self.broker.error_counts.get(code.name, 0) + 1
        self.trace(name, ("group", group_id), ("error", code.name))


def _append_transactional(r: Replica, batch: RecordBatch) -> int:
    """Append a TxnOffsetCommit batch as the coordinator (origin COORDINATOR, no dedup window).

    ``Replica.append_as_leader`` checks the dedup window for every producer batch; Kafka does that
    for client appends only (``UnifiedLog.analyzeAndValidateProducerState``). A TxnOffsetCommit
    batch carries no sequence, so a second one from the same producer epoch would be taken for a
    duplicate and dropped. Until ``append_as_leader`` skips the window for COORDINATOR appends,
    this does the same staged steps (prepare, append, update) without it.
    """
    if r.state is None:
        raise IllegalStateError(f"{r.tp}: a leader replica without a partition state cannot take an append")
    offset = r.log.log_end_offset
    info = r.producers.prepare_update(batch.producer_id, AppendOrigin.COORDINATOR)
    info.append_data_batch(batch, offset)
    rolled = r.log.append(batch.assigned(offset, r.state.leader_epoch))
    r.producers.update(info)
    if rolled:
        r.take_snapshot()
    return offset
