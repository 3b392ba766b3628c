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
:mod:`engine.broker.replica_manager` the hosted replicas, their purgatories, pushed partition states
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
from engine.broker.isr import LeaderReplication
from engine.broker.names import CONTROLLER, broker_name
from engine.broker.produce import ProduceCall, ProducePath
from engine.broker.producer_ids import MAX_BROKERS, allocate_producer_id
from engine.broker.replica_fetcher import ReplicaFetchers
from engine.broker.replica_manager import ReplicaManager
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
    CreateTopicRequest,
    CreateTopicResponse,
    CreateTopicsRequest,
    DescribeProducersRequest,
    DescribeProducersResponse,
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
    from engine.broker.purgatory import Purgatory
    from engine.broker.replica import Replica
    from engine.config import BrokerConfig, TopicConfig
    from engine.sim.network import Message
    from engine.sim.world import World

__all__ = ["CONTROLLER", "MAX_BROKERS", "Broker", "broker_name"]


class Broker(RpcNode):
    """One broker of the simulated cluster (Kafka's ``KafkaBroker``).

    It holds its :class:`~engine.broker.replica_manager.ReplicaManager` and hands it, with itself
    as the network node, the scheduler and its config, to each room it builds: the produce path,
    the consumer fetches, the leader's replication (followers' fetches, HW, ISR) and the replica
    fetchers. No room holds the broker; what a room's event sets off in the others comes back
    through the callbacks it was given (:meth:`after_append`, :meth:`leader_hw_moved`).
    """

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
        self.replica_manager = ReplicaManager(broker_id, self.name, config, topic_configs, self.disk, world.trace, weak)
        self.live_brokers: tuple[int, ...] = ()
        self.error_counts: dict[str, int] = {}
        self.extensions: list[Any] = []
        manager = self.replica_manager
        self.produce = ProducePath(self, manager, self.extensions, self.count_error, self.after_append)
        self.consumer_fetches = ConsumerFetches(self, manager, weak, self.count_error)
        self.replication = LeaderReplication(self, world.scheduler, manager, config, self.leader_hw_moved)
        self.fetchers = self._new_fetchers()
        self._install_handlers()
        self._start()

    def _new_fetchers(self) -> ReplicaFetchers:
        return ReplicaFetchers(self, self.world.scheduler, self.replica_manager, self.config)

    @property
    def replicas(self) -> dict[tuple[str, int], Replica]:
        """The replicas hosted here, by (topic, partition) (the replica manager's)."""
        return self.replica_manager.replicas

    @property
    def purgatory(self) -> dict[tuple[str, int], Purgatory]:
        """Each hosted replica's purgatory (the replica manager's)."""
        return self.replica_manager.purgatory

    @property
    def metadata(self) -> dict[tuple[str, int], PartitionState]:
        """The partition states the controller pushed, by (topic, partition)."""
        return self.replica_manager.metadata

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
            DescribeProducersRequest: self._on_describe_producers,
            CreateTopicRequest: self._forward_to_controller,
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
        self.replica_manager.on_crash()
        self.live_brokers = ()
        self.replication.on_crash()
        self.fetchers = self._new_fetchers()
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

    # -- replicas ---------------------------------------------------------------------------

    def replica(self, topic: str, partition: int) -> Replica:
        """Return the replica of a partition hosted here, creating it from disk if needed."""
        return self.replica_manager.replica(topic, partition)

    def leader_replica(self, topic: str, partition: int) -> tuple[Replica | None, ErrorCode]:
        """Return the replica if this broker leads the partition, else the error to answer."""
        return self.replica_manager.leader_replica(topic, partition)

    def min_insync_replicas(self, topic: str) -> int:
        """Return the topic's min.insync.replicas."""
        return self.replica_manager.min_insync_replicas(topic)

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
            self.replica_manager.drop(key)
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

    def _on_describe_producers(self, m: Message) -> None:
        """Answer from the hosted replica's producer state (``ReplicaManager.activeProducerState``)."""
        req: DescribeProducersRequest = m.body
        code, producers = self.replica_manager.active_producers(req.topic, req.partition)
        self.respond(m, DescribeProducersResponse(req.topic, req.partition, code, producers))

    def _forward_to_controller(self, m: Message) -> None:
        """Forward a client's CreateTopics to the controller and relay its answer (KIP-590's forwarding).

        No answer within the request's ``timeout_ms`` (the controller down or cut off) is
        ``REQUEST_TIMED_OUT``, as Kafka's ``ForwardingManager`` answers a forwarded request it
        could not deliver.
        """

        def relay(resp: CreateTopicResponse | None) -> None:
            if resp is None:
                resp = CreateTopicResponse(
                    ErrorCode.REQUEST_TIMED_OUT, "The controller did not answer the forwarded request in time."
                )
            self.respond(m, resp)

        self.request(CONTROLLER, m.body, relay, timeout_ms=m.body.timeout_ms)

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
