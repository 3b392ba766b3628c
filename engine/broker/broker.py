"""A Kafka broker: hosts partition replicas, answers produce, fetch and metadata, replicates.

The broker is a node of the simulated world. Its handlers follow Kafka's request handling,
simplified to one partition per request. What it keeps where:

=====================  ==========  ==========================================================
state                  kind        notes
=====================  ==========  ==========================================================
partition logs         durable     one :class:`~engine.log.partition_log.PartitionLog` each
txn index, snapshots   durable     aborted transactions; producer-state snapshots
HW checkpoint          durable     written on every HW move (Kafka: periodically)
producer-id block      durable     the next block of producer ids this broker hands out
replicas' roles, ISR   volatile    re-learnt from the controller after a restart
producer-state tables  volatile    rebuilt from snapshot + log on restart
purgatory, fetchers    volatile    parked requests are lost in a crash, as in Kafka
metadata cache         volatile    pushed by the controller
=====================  ==========  ==========================================================

Replication: a follower replica fetches from its leader with ``replica.fetch.wait.max.ms``
long polls; the leader answers with batches, or with a diverging epoch when the follower's
tail does not match its leader-epoch history, and the follower truncates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.broker.purgatory import DelayedFetch, DelayedProduce, Purgatory
from engine.broker.replica import Replica
from engine.coordinator_lookup import (
    CONSUMER_OFFSETS_TOPIC,
    KEY_TYPE_GROUP,
    TRANSACTION_STATE_TOPIC,
    partition_for,
)
from engine.errors import ErrorCode
from engine.log.producer_state import AppendOrigin, LogValidationError
from engine.protocol import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    CreateTopicsRequest,
    FetchRequest,
    FetchResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    LeaderAndIsrRequest,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    PartitionState,
    ProduceRequest,
    ProduceResponse,
)
from engine.rpc import RpcNode
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from engine.config import BrokerConfig, TopicConfig
    from engine.sim.network import Message
    from engine.sim.world import World

CONTROLLER = "controller"
#: Producer ids are handed out in blocks, like Kafka's AllocateProducerIds; a broker's blocks
#: are interleaved with the other brokers' so ids never collide.
PRODUCER_ID_BLOCK_SIZE = 1000
MAX_BROKERS = 100


def broker_name(broker_id: int) -> str:
    """Return the node name of a broker id."""
    return f"broker-{broker_id}"


class ProducerIdBlock:
    """The durable producer-id allocator of one broker."""

    __slots__ = ("end_id", "next_block", "next_id")

    def __init__(self) -> None:
        self.next_block = 0
        self.next_id = 0
        self.end_id = 0


class Broker(RpcNode):
    """One broker of the simulated cluster."""

    def __init__(
        self,
        world: World,
        broker_id: int,
        config: BrokerConfig,
        topic_configs: dict[str, TopicConfig],
        weak: Weakenings = CORRECT,
    ) -> None:
        self.weak = weak
        super().__init__(world, broker_name(broker_id))
        self.broker_id = broker_id
        self.config = config
        self.topic_configs = topic_configs
        self.replicas: dict[tuple[str, int], Replica] = {}
        self.purgatory: dict[tuple[str, int], Purgatory] = {}
        self.metadata: dict[tuple[str, int], PartitionState] = {}
        self.live_brokers: tuple[int, ...] = ()
        self._fetch_generation: dict[tuple[str, int], int] = {}
        self.error_counts: dict[str, int] = {}
        self.extensions: list[Any] = []
        self._install_handlers()
        self._start()

    def _install_handlers(self) -> None:
        self.handlers = {
            ProduceRequest: self._on_produce,
            FetchRequest: self._on_fetch,
            ListOffsetsRequest: self._on_list_offsets,
            MetadataRequest: self._on_metadata,
            LeaderAndIsrRequest: self._on_leader_and_isr,
            InitProducerIdRequest: self._on_init_producer_id,
            FindCoordinatorRequest: self._on_find_coordinator,
        }
        for ext in self.extensions:
            ext.install(self)

    def add_extension(self, ext: Any) -> None:
        """Add a component (e.g. a transaction coordinator) that installs its own handlers."""
        self.extensions.append(ext)
        ext.install(self)

    # -- life cycle -------------------------------------------------------------------------

    def _start(self) -> None:
        self._heartbeat()
        self.set_timer(self.config.log_flush_interval_ms, self._flush_tick)
        self.set_timer(self.config.replica_lag_time_max_ms // 2, self._isr_tick)
        self.set_timer(self.config.producer_id_expiration_check_interval_ms, self._expire_producers_tick)

    def _expire_producers_tick(self) -> None:
        """Forget producers idle for ``producer.id.expiration.ms`` (Kafka's removeExpiredProducers)."""
        cutoff = self.world.now_ms - self.config.producer_id_expiration_ms
        for key in sorted(self.replicas):
            for pid in self.replicas[key].producers.expire(cutoff):
                self.world.trace.emit(
                    self.name, "state", "producer.expired", ("tp", f"{key[0]}-{key[1]}"), ("pid", pid)
                )
        self.set_timer(self.config.producer_id_expiration_check_interval_ms, self._expire_producers_tick)

    def on_crash(self) -> None:
        """Drop volatile state: roles, producer tables, purgatory, metadata."""
        super().on_crash()
        self.replicas = {}
        self.purgatory = {}
        self.metadata = {}
        self.live_brokers = ()
        self._fetch_generation = {}
        for ext in self.extensions:
            ext.on_crash()

    def on_restart(self) -> None:
        """Come back: register with the controller, which sends the partition states."""
        self._install_handlers()
        self._start()
        for ext in self.extensions:
            ext.on_restart()

    def clean_shutdown(self) -> None:
        """Shut down cleanly: snapshot producer state and flush, then stop (a crash without loss)."""
        for key in sorted(self.replicas):
            self.replicas[key].take_snapshot()
        self.disk.flush()
        self.world.trace.emit(self.name, "state", "broker.clean_shutdown")
        self.world.crash(self.name)

    def _heartbeat(self) -> None:
        self.send_oneway(CONTROLLER, BrokerHeartbeatRequest(self.broker_id, self.incarnation))
        self.set_timer(self.config.broker_heartbeat_interval_ms, self._heartbeat)

    def _flush_tick(self) -> None:
        self.disk.flush()
        self.set_timer(self.config.log_flush_interval_ms, self._flush_tick)

    def _count_error(self, code: ErrorCode) -> None:
        self.error_counts[code.name] = self.error_counts.get(code.name, 0) + 1

    # -- replicas ---------------------------------------------------------------------------

    def replica(self, topic: str, partition: int) -> Replica:
        """Return the replica of a partition hosted here, creating it from disk if needed."""
        key = (topic, partition)
        r = self.replicas.get(key)
        if r is None:
            seg = self.topic_configs.get(topic)
            segment_bytes = (
                seg.segment_bytes if seg is not None and seg.segment_bytes else self.config.log_segment_bytes
            )
            r = Replica(topic, partition, self.broker_id, self.disk, segment_bytes=segment_bytes, weak=self.weak)
            self.replicas[key] = r
            self.purgatory[key] = Purgatory()
        return r

    def min_insync_replicas(self, topic: str) -> int:
        """Return the topic's min.insync.replicas."""
        tc = self.topic_configs.get(topic)
        if tc is not None and tc.min_insync_replicas is not None:
            return tc.min_insync_replicas
        return self.config.min_insync_replicas

    def leader_replica(self, topic: str, partition: int) -> tuple[Replica | None, ErrorCode]:
        """Return the replica if this broker leads the partition, else the error to answer."""
        r = self.replicas.get((topic, partition))
        if r is None:
            known = (topic, partition) in self.metadata
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not r.is_leader:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return r, ErrorCode.NONE

    # -- controller -------------------------------------------------------------------------

    def _on_leader_and_isr(self, m: Message) -> None:
        req: LeaderAndIsrRequest = m.body
        self.live_brokers = req.live_brokers
        for state in req.states:
            key = (state.topic, state.partition)
            old = self.metadata.get(key)
            if old is not None and (state.leader_epoch, state.partition_epoch) < (
                old.leader_epoch,
                old.partition_epoch,
            ):
                continue
            self.metadata[key] = state
            if self.broker_id in state.replicas:
                self._apply_partition_state(state)

    def _apply_partition_state(self, state: PartitionState) -> None:
        r = self.replica(state.topic, state.partition)
        key = (state.topic, state.partition)
        now = self.world.now_ms
        if state.leader == self.broker_id:
            if not r.is_leader or r.state is None or r.state.leader_epoch != state.leader_epoch:
                r.become_leader(state, now)
                self._fetch_generation[key] = self._fetch_generation.get(key, 0) + 1
                self.world.trace.emit(
                    self.name,
                    "state",
                    "replica.leader",
                    ("tp", r.tp),
                    ("epoch", state.leader_epoch),
                    ("isr", list(state.isr)),
                    ("leo", r.log_end_offset),
                    ("hw", r.high_watermark),
                )
                for ext in self.extensions:
                    ext.on_become_leader(state)
            else:
                r.state = state
                r.pending_isr_change = False
                self._leader_hw_moved(r) if r.maybe_advance_hw() else None
            return
        was_leader = r.is_leader
        epoch_changed = r.state is None or r.state.leader_epoch != state.leader_epoch
        r.become_follower(state)
        if was_leader:
            self._fail_parked(key, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            for ext in self.extensions:
                ext.on_become_follower(state)
        if epoch_changed or was_leader:
            self.world.trace.emit(
                self.name,
                "state",
                "replica.follower",
                ("tp", r.tp),
                ("leader", state.leader),
                ("epoch", state.leader_epoch),
                ("leo", r.log_end_offset),
            )
            gen = self._fetch_generation.get(key, 0) + 1
            self._fetch_generation[key] = gen
            if state.leader >= 0:
                self._fetch_from_leader(key, gen)

    def _fail_parked(self, key: tuple[str, int], code: ErrorCode) -> None:
        produces, fetches = self.purgatory[key].drain()
        for p in produces:
            p.timer.cancel()
            req: ProduceRequest = p.request.body
            self._count_error(code)
            self.respond(p.request, ProduceResponse(req.topic, req.partition, code, error_message="leadership moved"))
        for f in fetches:
            f.timer.cancel()
            req2: FetchRequest = f.request.body
            self.respond(f.request, FetchResponse(req2.topic, req2.partition, code))

    # -- produce ----------------------------------------------------------------------------

    def _on_produce(self, m: Message) -> None:
        self.continue_produce(m, verified=False)

    def continue_produce(self, m: Message, *, verified: bool) -> None:
        """Validate and append a produce; extensions may intercept it first (``verified=False``)."""
        req: ProduceRequest = m.body
        r, code = self.leader_replica(req.topic, req.partition)
        if r is None:
            self._produce_error(m, req, code, None)
            return
        if req.acks == -1:
            err = r.check_min_isr(self.min_insync_replicas(req.topic))
            if err is not None:
                self._produce_error(m, req, err.code, err.message)
                return
        if not verified:
            for ext in self.extensions:
                if ext.intercept_produce(m, r, req):
                    return
        try:
            base_offset, duplicate, _ = r.append_as_leader(req.batch, AppendOrigin.CLIENT)
        except LogValidationError as exc:
            self._produce_error(m, req, exc.code, exc.message)
            return
        if duplicate:
            self.world.trace.mark(self.name, "dedup: duplicate batch answered from cache")
        if self.world.sites.fire("broker.produce.not_leader_after_append", self.name):
            # BUGGIFY: the batch is in the log, but the answer says it may not be (KAFKA-13574).
            self._after_append(r)
            self._produce_error(m, req, ErrorCode.NOT_LEADER_OR_FOLLOWER, "injected after append")
            return
        self._after_append(r)
        if req.acks == 0:
            return
        self.await_replication(m, r, base_offset, len(req.batch.values), duplicate)

    def await_replication(self, m: Message, r: Replica, base_offset: int, count: int, duplicate: bool) -> None:
        """Answer a produce once ``count`` records from ``base_offset`` are below the HW (acks=all)."""
        req: ProduceRequest = m.body
        last = base_offset + count
        if req.acks == 1 or last <= r.high_watermark:
            self.respond(m, ProduceResponse(req.topic, req.partition, ErrorCode.NONE, base_offset, duplicate=duplicate))
            return
        key = (req.topic, req.partition)
        timer = self.set_timer(req.timeout_ms, self._produce_expired, key, m)
        self.purgatory[key].produces.append(DelayedProduce(last, m, base_offset, duplicate, timer))

    def produce_error(self, m: Message, code: ErrorCode, message: str | None) -> None:
        """Answer a produce request with an error (for extensions that intercept produces)."""
        self._produce_error(m, m.body, code, message)

    def _produce_error(self, m: Message, req: ProduceRequest, code: ErrorCode, message: str | None) -> None:
        self._count_error(code)
        self.world.trace.emit(
            self.name, "state", "produce.error", ("tp", f"{req.topic}-{req.partition}"), ("error", code.name)
        )
        if req.acks != 0:
            self.respond(m, ProduceResponse(req.topic, req.partition, code, error_message=message))

    def _produce_expired(self, key: tuple[str, int], m: Message) -> None:
        purg = self.purgatory.get(key)
        if purg is None:
            return
        for p in purg.produces:
            if p.request is m:
                purg.produces.remove(p)
                req: ProduceRequest = m.body
                self._count_error(ErrorCode.REQUEST_TIMED_OUT)
                self.respond(
                    m,
                    ProduceResponse(
                        req.topic,
                        req.partition,
                        ErrorCode.REQUEST_TIMED_OUT,
                        error_message="not replicated to the ISR in time",
                    ),
                )
                return

    def after_append(self, r: Replica) -> None:
        """New data in a leader's log (public for extensions that append, e.g. markers)."""
        self._after_append(r)

    def _after_append(self, r: Replica) -> None:
        """New data in a leader's log: wake parked follower fetches, maybe move the HW."""
        key = (r.topic, r.partition)
        purg = self.purgatory[key]
        if purg.follower_fetches:
            parked, purg.follower_fetches = purg.follower_fetches, []
            for f in parked:
                f.timer.cancel()
                self._answer_fetch(f.request, r)
        if r.maybe_advance_hw():
            self._leader_hw_moved(r)

    def _leader_hw_moved(self, r: Replica) -> None:
        key = (r.topic, r.partition)
        purg = self.purgatory[key]
        hw = r.high_watermark
        for p in purg.ready_produces(hw):
            p.timer.cancel()
            req: ProduceRequest = p.request.body
            self.respond(
                p.request,
                ProduceResponse(req.topic, req.partition, ErrorCode.NONE, p.base_offset, duplicate=p.duplicate),
            )
        if purg.consumer_fetches:
            parked, purg.consumer_fetches = purg.consumer_fetches, []
            for f in parked:
                if self._has_data_for(f.request.body, r):
                    f.timer.cancel()
                    self._answer_fetch(f.request, r)
                else:
                    purg.consumer_fetches.append(f)
        for ext in self.extensions:
            ext.on_high_watermark(r)

    # -- fetch (leader side) ---------------------------------------------------------------

    def _on_fetch(self, m: Message) -> None:
        req: FetchRequest = m.body
        r, code = self.leader_replica(req.topic, req.partition)
        if r is None:
            self._count_error(code)
            self.respond(m, FetchResponse(req.topic, req.partition, code))
            return
        if req.replica_id >= 0:
            if 0 <= req.current_leader_epoch < (r.state.leader_epoch if r.state else -1):
                # A follower still following an older leader epoch: its offsets prove nothing here.
                self.respond(m, FetchResponse(req.topic, req.partition, ErrorCode.FENCED_LEADER_EPOCH))
                return
            if req.last_fetched_epoch >= 0:
                epoch, end = r.log.end_offset_for_epoch(req.last_fetched_epoch)
                if epoch != req.last_fetched_epoch or end < req.fetch_offset:
                    self.respond(m, self._fetch_response(req, r, ErrorCode.NONE, diverging_epoch=(epoch, end)))
                    return
            # Only a fetch whose tail matches this leader's epoch history counts as progress: a
            # divergent follower's offset must never move the HW or earn it a place in the ISR.
            self._follower_progress(r, req)
        elif req.fetch_offset > r.log_end_offset or req.fetch_offset < r.log.log_start_offset:
            self._count_error(ErrorCode.OFFSET_OUT_OF_RANGE)
            self.respond(m, self._fetch_response(req, r, ErrorCode.OFFSET_OUT_OF_RANGE, leader_epoch=-1))
            return
        if req.max_wait_ms > 0 and not self._has_data_for(req, r):
            key = (req.topic, req.partition)
            purg = self.purgatory[key]
            holder: list[DelayedFetch] = []
            timer = self.set_timer(req.max_wait_ms, self._fetch_expired, key, holder)
            parked = DelayedFetch(m, timer)
            holder.append(parked)
            (purg.follower_fetches if req.replica_id >= 0 else purg.consumer_fetches).append(parked)
            return
        self._answer_fetch(m, r)

    def _fetch_expired(self, key: tuple[str, int], holder: list[DelayedFetch]) -> None:
        purg = self.purgatory.get(key)
        r = self.replicas.get(key)
        if purg is None or r is None or not purg.remove_fetch(holder[0]):
            return
        if r.is_leader:
            self._answer_fetch(holder[0].request, r)
        else:
            req: FetchRequest = holder[0].request.body
            self.respond(holder[0].request, FetchResponse(req.topic, req.partition, ErrorCode.NOT_LEADER_OR_FOLLOWER))

    def _fetch_response(self, req: FetchRequest, r: Replica, code: ErrorCode, **fields: Any) -> FetchResponse:
        """A fetch answer carrying the partition's HW, LSO and leader epoch as of now."""
        fields.setdefault("leader_epoch", r.state.leader_epoch if r.state else -1)
        return FetchResponse(req.topic, req.partition, code, r.high_watermark, r.last_stable_offset, **fields)

    def fetch_upper_bound(self, req: FetchRequest, r: Replica) -> int:
        """Return the exclusive upper offset a fetch may read: LEO, HW or LSO."""
        if req.replica_id >= 0:
            return r.log_end_offset
        if req.isolation_level == "read_committed":
            lso = r.last_stable_offset
            if self.weak.lso_inclusive and lso < r.high_watermark:
                return lso + 1  # mutant M10: the LSO read as an inclusive bound (Redpanda #3036)
            return lso
        return r.high_watermark

    def _has_data_for(self, req: FetchRequest, r: Replica) -> bool:
        return self.fetch_upper_bound(req, r) > req.fetch_offset

    def _answer_fetch(self, m: Message, r: Replica) -> None:
        req: FetchRequest = m.body
        upper = self.fetch_upper_bound(req, r)
        batches = tuple(r.log.read(req.fetch_offset, req.max_bytes, upper)) if upper > req.fetch_offset else ()
        aborted = None
        if (
            req.replica_id < 0
            and req.isolation_level == "read_committed"
            and batches
            and self.weak.send_aborted_transactions
        ):
            aborted = tuple(r.txn_index.collect(req.fetch_offset, upper))
        self.respond(
            m,
            self._fetch_response(
                req,
                r,
                ErrorCode.NONE,
                log_start_offset=r.log.log_start_offset,
                batches=batches,
                aborted_transactions=aborted,
            ),
        )

    def _follower_progress(self, r: Replica, req: FetchRequest) -> None:
        follower = req.replica_id
        if follower not in r.follower_leo:
            return
        leo = r.log_end_offset
        r.follower_leo[follower] = min(req.fetch_offset, leo)
        if req.fetch_offset >= leo:
            r.follower_caught_up_ms[follower] = self._sched.now_ms
        assert r.state is not None
        if (
            follower not in r.state.isr
            and req.fetch_offset >= max(r.high_watermark, r.leader_epoch_start_offset)
            and not r.pending_isr_change
        ):
            self._propose_isr(r, (*r.state.isr, follower))
        elif r.maybe_advance_hw():
            self._leader_hw_moved(r)

    # -- ISR changes ------------------------------------------------------------------------

    def _isr_tick(self) -> None:
        now = self.world.now_ms
        lag_max = self.config.replica_lag_time_max_ms
        for key in sorted(self.replicas):
            r = self.replicas[key]
            if not r.is_leader or r.state is None or r.pending_isr_change:
                continue
            lagging = [
                b for b in r.state.isr if b != self.broker_id and now - r.follower_caught_up_ms.get(b, now) > lag_max
            ]
            if lagging:
                self._propose_isr(r, tuple(b for b in r.state.isr if b not in lagging))
        self.set_timer(lag_max // 2, self._isr_tick)

    def _propose_isr(self, r: Replica, new_isr: tuple[int, ...]) -> None:
        assert r.state is not None
        r.pending_isr_change = True
        r.joining_isr = tuple(b for b in new_isr if b not in r.state.isr)
        self.world.trace.emit(self.name, "state", "isr.propose", ("tp", r.tp), ("isr", list(new_isr)))
        req = AlterPartitionRequest(
            self.broker_id,
            r.topic,
            r.partition,
            r.state.leader_epoch,
            r.state.partition_epoch,
            tuple(sorted(new_isr)),
        )
        self.request(
            CONTROLLER,
            req,
            lambda resp, r=r: self._isr_answer(r, resp),
            timeout_ms=self.config.broker_session_timeout_ms,
        )

    def _isr_answer(self, r: Replica, resp: AlterPartitionResponse | None) -> None:
        r.pending_isr_change = False
        r.joining_isr = ()
        if resp is None or resp.error is not ErrorCode.NONE or resp.state is None:
            return
        key = (r.topic, r.partition)
        self.metadata[key] = resp.state
        if r.is_leader and r.state is not None and resp.state.leader_epoch == r.state.leader_epoch:
            r.state = resp.state
            if r.maybe_advance_hw():
                self._leader_hw_moved(r)

    # -- fetch (follower side) -------------------------------------------------------------

    def _fetch_from_leader(self, key: tuple[str, int], gen: int) -> None:
        if self._fetch_generation.get(key) != gen:
            return
        r = self.replicas[key]
        if r.state is None or r.is_leader or r.state.leader < 0:
            return
        req = FetchRequest(
            key[0],
            key[1],
            r.log_end_offset,
            replica_id=self.broker_id,
            max_bytes=self.config.replica_fetch_max_bytes,
            max_wait_ms=self.config.replica_fetch_wait_max_ms,
            last_fetched_epoch=r.log.latest_epoch(),
            current_leader_epoch=r.state.leader_epoch,
        )
        timeout = self.config.replica_fetch_wait_max_ms + self.config.broker_session_timeout_ms
        self.request(broker_name(r.state.leader), req, lambda resp: self._fetched(key, gen, resp), timeout_ms=timeout)

    def _fetched(self, key: tuple[str, int], gen: int, resp: FetchResponse | None) -> None:
        if self._fetch_generation.get(key) != gen:
            return
        r = self.replicas[key]
        if resp is None or resp.error is not ErrorCode.NONE:
            self.set_timer(self.config.replica_fetch_backoff_ms, self._fetch_from_leader, key, gen)
            return
        if resp.diverging_epoch is not None:
            epoch, end = resp.diverging_epoch
            cut = end if epoch >= 0 else 0
            removed = r.truncate_to(min(cut, r.log_end_offset))
            self.world.trace.emit(
                self.name,
                "state",
                "replica.truncate",
                ("tp", r.tp),
                ("to", r.log_end_offset),
                ("removed", removed),
            )
            self._fetch_from_leader(key, gen)
            return
        if resp.batches:
            r.append_as_follower(resp.batches)
        r.set_high_watermark(min(resp.high_watermark, r.log_end_offset))
        self._fetch_from_leader(key, gen)

    # -- small requests ---------------------------------------------------------------------

    def _on_list_offsets(self, m: Message) -> None:
        req: ListOffsetsRequest = m.body
        r, code = self.leader_replica(req.topic, req.partition)
        if r is None:
            self.respond(m, ListOffsetsResponse(req.topic, req.partition, code))
            return
        if req.timestamp == -2:
            offset = r.log.log_start_offset
        elif req.isolation_level == "read_committed":
            offset = r.last_stable_offset
        else:
            offset = r.high_watermark
        self.respond(m, ListOffsetsResponse(req.topic, req.partition, ErrorCode.NONE, offset))

    def _on_metadata(self, m: Message) -> None:
        req: MetadataRequest = m.body
        states = [self.metadata[k] for k in sorted(self.metadata) if req.topics is None or k[0] in req.topics]
        self.respond(m, MetadataResponse(self.live_brokers, tuple(states)))

    # -- producer ids -----------------------------------------------------------------------

    def allocate_producer_id(self) -> int:
        """Hand out a new producer id from this broker's durable block."""
        block: ProducerIdBlock = self.disk.open("producer-id-block", ProducerIdBlock)
        if block.next_id >= block.end_id:
            index = block.next_block * MAX_BROKERS + self.broker_id
            block.next_block += 1
            block.next_id = index * PRODUCER_ID_BLOCK_SIZE
            block.end_id = block.next_id + PRODUCER_ID_BLOCK_SIZE
        pid = block.next_id
        block.next_id += 1
        return pid

    def _on_init_producer_id(self, m: Message) -> None:
        req: InitProducerIdRequest = m.body
        if req.transactional_id is not None:
            for ext in self.extensions:
                if ext.handles_init_producer_id(m):
                    return
            self.respond(m, InitProducerIdResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        pid = self.allocate_producer_id()
        self.world.trace.emit(self.name, "state", "producer_id.new", ("pid", pid))
        self.respond(m, InitProducerIdResponse(ErrorCode.NONE, pid, 0))

    # -- coordinators -----------------------------------------------------------------------

    def internal_topic_partitions(self, topic: str) -> int:
        """Return the configured partition count of an internal topic."""
        if topic == TRANSACTION_STATE_TOPIC:
            return self.config.transaction_state_log_num_partitions
        return self.config.offsets_topic_num_partitions

    def coordinator_for(self, key: str, key_type: int) -> tuple[int, ErrorCode]:
        """Return the coordinator broker id for a group or transactional id, creating the topic on first use."""
        topic = CONSUMER_OFFSETS_TOPIC if key_type == KEY_TYPE_GROUP else TRANSACTION_STATE_TOPIC
        n = self.internal_topic_partitions(topic)
        state = self.metadata.get((topic, partition_for(key, n)))
        if state is None:
            rf = (
                self.config.offsets_topic_replication_factor
                if topic == CONSUMER_OFFSETS_TOPIC
                else self.config.transaction_state_log_replication_factor
            )
            self.send_oneway(CONTROLLER, CreateTopicsRequest(topic, n, rf))
            return -1, ErrorCode.COORDINATOR_NOT_AVAILABLE
        if state.leader < 0:
            return -1, ErrorCode.COORDINATOR_NOT_AVAILABLE
        return state.leader, ErrorCode.NONE

    def _on_find_coordinator(self, m: Message) -> None:
        req: FindCoordinatorRequest = m.body
        node, code = self.coordinator_for(req.key, req.key_type)
        self.respond(m, FindCoordinatorResponse(code, node))
