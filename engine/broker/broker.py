"""A Kafka broker: hosts partition replicas, dispatches requests, follows the controller.

The broker is a node of the simulated world. Each mechanism it runs has its own room:

==================================  =================================================================
module                              mechanism
==================================  =================================================================
:mod:`engine.broker.produce`        the produce path on a leader: checks, append, acks=all purgatory
:mod:`engine.broker.consumer_fetch` consumers' fetches: HW / LSO bounds, the aborted list (read_committed)
:mod:`engine.broker.isr`            followers' fetches on the leader, their progress, the HW, the ISR
:mod:`engine.broker.replica_fetcher` the follower side: one fetch loop per leader (ReplicaFetcherThread)
:mod:`engine.broker.producer_ids`   producer-id blocks
:mod:`engine.broker.replica`        one replica: log, producer state, HW, LSO, role
==================================  =================================================================

What it keeps where:

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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine import trace_events as events
from engine.broker.consumer_fetch import ConsumerFetches
from engine.broker.isr import CONTROLLER, LeaderReplication
from engine.broker.produce import ProduceCall, ProducePath
from engine.broker.producer_ids import MAX_BROKERS, allocate_producer_id
from engine.broker.purgatory import Purgatory
from engine.broker.replica import Replica
from engine.broker.replica_fetcher import ReplicaFetchers
from engine.config import IsolationLevel
from engine.coordinator_lookup import (
    CONSUMER_OFFSETS_TOPIC,
    KEY_TYPE_GROUP,
    TRANSACTION_STATE_TOPIC,
    partition_for,
)
from engine.errors import ErrorCode
from engine.protocol import (
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
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    PartitionProduceResponse,
    PartitionState,
    ProduceRequest,
    ReplicaFetchRequest,
)
from engine.rpc import RpcNode
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from engine.config import BrokerConfig, TopicConfig
    from engine.sim.network import Message
    from engine.sim.world import World

__all__ = ["CONTROLLER", "MAX_BROKERS", "Broker", "broker_name"]


def broker_name(broker_id: int) -> str:
    """Return the node name of a broker id."""
    return f"broker-{broker_id}"


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
        self.error_counts: dict[str, int] = {}
        self.extensions: list[Any] = []
        self.produce = ProducePath(self)
        self.consumer_fetches = ConsumerFetches(self)
        self.replication = LeaderReplication(self)
        self.fetchers = ReplicaFetchers(self)
        self._install_handlers()
        self._start()

    def _install_handlers(self) -> None:
        self.handlers = {
            ProduceRequest: self.produce.on_produce,
            FetchRequest: self.consumer_fetches.on_fetch,
            ReplicaFetchRequest: self.replication.on_fetch,
            ListOffsetsRequest: self._on_list_offsets,
            MetadataRequest: self._on_metadata,
            LeaderAndIsrRequest: self._on_leader_and_isr,
            InitProducerIdRequest: self._on_init_producer_id,
            FindCoordinatorRequest: self._on_find_coordinator,
            OffsetForLeaderEpochRequest: self._on_offset_for_leader_epoch,
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
                    self.name, "state", events.PRODUCER_EXPIRED, ("tp", f"{key[0]}-{key[1]}"), ("pid", pid)
                )
        self.set_timer(self.config.producer_id_expiration_check_interval_ms, self._expire_producers_tick)

    def on_crash(self) -> None:
        """Drop volatile state: roles, producer tables, purgatory, metadata."""
        super().on_crash()
        self.replicas = {}
        self.purgatory = {}
        self.metadata = {}
        self.live_brokers = ()
        self.replication.on_crash()
        self.fetchers = ReplicaFetchers(self)
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
        self.world.trace.emit(self.name, "state", events.BROKER_CLEAN_SHUTDOWN)
        self.world.crash(self.name)

    def _heartbeat(self) -> None:
        self.send_oneway(CONTROLLER, BrokerHeartbeatRequest(self.broker_id, self.incarnation))
        self.set_timer(self.config.broker_heartbeat_interval_ms, self._heartbeat)

    def _flush_tick(self) -> None:
        self.disk.flush()
        self.set_timer(self.config.log_flush_interval_ms, self._flush_tick)

    def _isr_tick(self) -> None:
        self.replication.shrink_lagging()
        self.set_timer(self.config.replica_lag_time_max_ms // 2, self._isr_tick)

    def count_error(self, code: ErrorCode) -> None:
        """Count an error answered (the bench and tests read ``error_counts``)."""
        self.error_counts[code.name] = self.error_counts.get(code.name, 0) + 1

    @staticmethod
    def leader_name(broker_id: int) -> str:
        """Return the node name of a broker id."""
        return broker_name(broker_id)

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
            r = Replica(
                topic,
                partition,
                self.broker_id,
                self.disk,
                segment_bytes=segment_bytes,
                weak=self.weak,
                offset_hooks=self.world.trace.offset_hooks,
                trace=self.world.trace,
                node=self.name,
            )
            self.replicas[key] = r
            self.purgatory[key] = Purgatory()
        return r

    def min_insync_replicas(self, topic: str) -> int:
        """Return the topic's min.insync.replicas."""
        tc = self.topic_configs.get(topic)
        if tc is not None and tc.min_insync_replicas is not None:
            return tc.min_insync_replicas
        return self.config.min_insync_replicas

    def max_message_bytes(self, topic: str) -> int:
        """Return the largest batch the topic's leader appends (``max.message.bytes``, else ``message.max.bytes``)."""
        tc = self.topic_configs.get(topic)
        if tc is not None and tc.max_message_bytes is not None:
            return tc.max_message_bytes
        return self.config.message_max_bytes

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
        for topic, generation in req.deleted:
            self._drop_topic(topic, generation)
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
                self.fetchers.unfollow(key)
                self.replication.wake(key)
                self.world.trace.emit(
                    self.name,
                    "state",
                    events.REPLICA_LEADER,
                    ("tp", r.tp),
                    ("epoch", state.leader_epoch),
                    ("isr", list(state.isr)),
                    ("leo", r.log_end_offset),
                    ("hw", r.high_watermark),
                )
                # Kafka's makeLeader ends with maybeIncrementLeaderHW: with the ISR down to this
                # replica alone, the HW moves to its LEO at once instead of waiting for an append.
                if r.maybe_advance_hw():
                    self.leader_hw_moved(r)
                for ext in self.extensions:
                    ext.on_become_leader(state)
            else:
                r.state = state
                r.pending_isr_change = False
                if r.maybe_advance_hw():
                    self.leader_hw_moved(r)
            return
        was_leader = r.is_leader
        epoch_changed = r.state is None or r.state.leader_epoch != state.leader_epoch
        r.become_follower(state)
        if was_leader:
            self._fail_parked(key, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            self.replication.wake(key)
            for ext in self.extensions:
                ext.on_become_follower(state)
        if epoch_changed or was_leader:
            self.world.trace.emit(
                self.name,
                "state",
                events.REPLICA_FOLLOWER,
                ("tp", r.tp),
                ("leader", state.leader),
                ("epoch", state.leader_epoch),
                ("leo", r.log_end_offset),
            )
            self.fetchers.follow(key, state.leader, state.leader_epoch)

    def _drop_topic(self, topic: str, generation: int) -> None:
        """Forget a deleted topic: its metadata, replicas, fetchers and files (Kafka's stray-log removal).

        ``generation`` counts the deletions of that name; the broker's durable ``deleted-topics``
        file holds the last one it applied, so a deletion is applied once, even after a restart,
        and the files of the name created again later are kept.
        """
        seen: dict[str, int] = self.disk.open("deleted-topics", dict)
        if seen.get(topic, 0) >= generation:
            return
        seen[topic] = generation
        for key in [k for k in sorted(self.metadata) if k[0] == topic]:
            del self.metadata[key]
        for key in [k for k in sorted(self.replicas) if k[0] == topic]:
            self.fetchers.unfollow(key)
            self._fail_parked(key, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            self.replication.wake(key)
            del self.replicas[key]
            del self.purgatory[key]
        prefix = f"{topic}-"
        for name in self.disk.names():
            kind, _, tp = name.partition(":")
            if kind in ("log", "txnindex", "snapshots") and tp.startswith(prefix) and tp[len(prefix) :].isdigit():
                self.disk.remove(name)
        checkpoint = self.disk.get("hw-checkpoint")
        if checkpoint is not None:
            for tp in [t for t in sorted(checkpoint.values) if t.startswith(prefix) and t[len(prefix) :].isdigit()]:
                del checkpoint.values[tp]
        self.world.trace.emit(self.name, "state", events.TOPIC_DELETE, ("topic", topic))

    def _fail_parked(self, key: tuple[str, int], code: ErrorCode) -> None:
        produces, fetches = self.purgatory[key].drain()
        for p in produces:
            self.count_error(code)
            self.produce.answer(
                p.call, p.index, PartitionProduceResponse(key[0], key[1], code, error_message="leadership moved")
            )
        for f in fetches:
            f.timer.cancel()
            req2: FetchRequest = f.request.body
            self.respond(f.request, FetchResponse(req2.topic, req2.partition, code))

    # -- the produce path (engine/broker/produce.py), as extensions call it ---------------

    def continue_produce(self, call: ProduceCall, index: int, *, verified: bool) -> None:
        """Validate and append one partition of a produce; extensions may intercept it first (``verified=False``)."""
        self.produce.continue_produce(call, index, verified=verified)

    def produce_error(self, call: ProduceCall, index: int, code: ErrorCode, message: str | None) -> None:
        """Answer one partition of a produce with an error (for extensions that intercept produces)."""
        self.produce.error(call, index, code, message)

    def after_append(self, r: Replica) -> None:
        """New data in a leader's log: wake followers' parked fetches, maybe move the HW."""
        self.replication.wake((r.topic, r.partition))
        if r.maybe_advance_hw():
            self.leader_hw_moved(r)

    def leader_hw_moved(self, r: Replica) -> None:
        """A leader's HW moved: release produces, wake consumers' fetches, tell the extensions."""
        self.produce.release(r)
        self.consumer_fetches.wake(r)
        for ext in self.extensions:
            ext.on_high_watermark(r)

    def fetch_upper_bound(self, req: FetchRequest, r: Replica) -> int:
        """Return the exclusive upper offset a consumer's fetch may read: the HW, or the LSO."""
        return self.consumer_fetches.upper_bound(req, r)

    # -- small requests ---------------------------------------------------------------------

    def _on_list_offsets(self, m: Message) -> None:
        req: ListOffsetsRequest = m.body
        r, code = self.leader_replica(req.topic, req.partition)
        if r is None:
            self.respond(m, ListOffsetsResponse(req.topic, req.partition, code))
            return
        bound = r.last_stable_offset if req.isolation_level == IsolationLevel.READ_COMMITTED else r.high_watermark
        if req.timestamp == -2:
            offset = r.log.log_start_offset
        elif req.timestamp == -1:
            offset = bound
        else:
            # By timestamp, or -3 (KIP-734's max timestamp): found in the whole log, answered only
            # below the HW (the LSO for read_committed), else -1/-1 (Kafka's ReplicaManager.fetchOffset).
            found = r.log.max_timestamp_offset() if req.timestamp == -3 else r.log.offset_for_timestamp(req.timestamp)
            if found is None or found[1] >= bound:
                self.respond(m, ListOffsetsResponse(req.topic, req.partition, ErrorCode.NONE))
                return
            ts, offset, epoch = found
            self.respond(m, ListOffsetsResponse(req.topic, req.partition, ErrorCode.NONE, offset, ts, epoch))
            return
        self.respond(m, ListOffsetsResponse(req.topic, req.partition, ErrorCode.NONE, offset))

    def _on_offset_for_leader_epoch(self, m: Message) -> None:
        """Answer from the leader's epoch cache; a stale or future ``current_leader_epoch`` is refused."""
        req: OffsetForLeaderEpochRequest = m.body
        r, code = self.leader_replica(req.topic, req.partition)
        if r is None:
            self.respond(m, OffsetForLeaderEpochResponse(req.topic, req.partition, code))
            return
        current = r.state.leader_epoch if r.state else -1
        if req.current_leader_epoch >= 0 and req.current_leader_epoch != current:
            stale = req.current_leader_epoch < current
            code = ErrorCode.FENCED_LEADER_EPOCH if stale else ErrorCode.UNKNOWN_LEADER_EPOCH
            self.respond(m, OffsetForLeaderEpochResponse(req.topic, req.partition, code))
            return
        epoch, end = r.log.end_offset_for_epoch(req.leader_epoch)
        self.respond(m, OffsetForLeaderEpochResponse(req.topic, req.partition, ErrorCode.NONE, epoch, end))

    def _on_metadata(self, m: Message) -> None:
        req: MetadataRequest = m.body
        states = [self.metadata[k] for k in sorted(self.metadata) if req.topics is None or k[0] in req.topics]
        self.respond(m, MetadataResponse(self.live_brokers, tuple(states)))

    # -- producer ids -----------------------------------------------------------------------

    def allocate_producer_id(self) -> int:
        """Hand out a new producer id from this broker's durable block (:mod:`engine.broker.producer_ids`)."""
        return allocate_producer_id(self.disk, self.broker_id)

    def _on_init_producer_id(self, m: Message) -> None:
        req: InitProducerIdRequest = m.body
        if req.transactional_id is not None:
            for ext in self.extensions:
                if ext.handles_init_producer_id(m):
                    return
            self.respond(m, InitProducerIdResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        producer_id = self.allocate_producer_id()
        self.world.trace.emit(self.name, "state", events.PRODUCER_ID_NEW, ("pid", producer_id))
        self.respond(m, InitProducerIdResponse(ErrorCode.NONE, producer_id, 0))

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
