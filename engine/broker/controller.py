"""The controller: broker liveness, partition leader election, ISR changes.

What this simplifies compared with KRaft
----------------------------------------
- The controller is **one node**, not a Raft quorum, and it has no metadata log: its state is
  in memory and it is never crashed by the fault kinds that target brokers (a test may still
  partition it away). KRaft's quorum, snapshots and controller failover are out of scope.
- Brokers register by heartbeating (``broker.heartbeat.interval.ms``); a broker silent for
  ``broker.session.timeout.ms`` is *fenced*, as in KRaft. A heartbeat from a new incarnation
  (a restart) registers it again.
- Partition state changes reach brokers as a push (``LeaderAndIsrRequest``) to every live
  broker, standing in for brokers replaying the metadata log.
- Election is Kafka's default: the first replica in assignment order that is in the ISR and not
  fenced. With ``unclean.leader.election.enable`` and no such replica, the first live replica
  is elected and becomes the only ISR member: what it lacks is lost. Without it the partition
  stays leaderless (leader -1) and its ISR keeps the last members, so one of them is elected
  when it comes back. KIP-966's eligible leader replicas are not modelled.
- A fenced broker is removed from the ISR of partitions it follows (KRaft does the same).
- A client's CreateTopics reaches the controller forwarded by the broker it was sent to (KIP-590).
  The checks are the cluster's (``Cluster.add_topic``'s, Kafka's
  ``ReplicationControlManager.createTopic``): the controller is handed them as ``create_topic``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.config import TopicConfig
from engine.coordinator_lookup import TRANSACTION_STATE_TOPIC
from engine.errors import ErrorCode
from engine.protocol import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    CreateTopicRequest,
    CreateTopicResponse,
    CreateTopicsRequest,
    LeaderAndIsrRequest,
    PartitionState,
)
from engine.rpc import RpcNode

if TYPE_CHECKING:
    from engine.config import BrokerConfig
    from engine.sim.network import Message
    from engine.sim.world import World

NO_LEADER = -1


class Controller(RpcNode):
    """The cluster controller node (named ``controller``)."""

    def __init__(
        self,
        world: World,
        config: BrokerConfig,
        topic_configs: dict[str, TopicConfig],
        create_topic: Callable[[CreateTopicRequest], CreateTopicResponse] | None = None,
    ) -> None:
        super().__init__(world, "controller")
        self.config = config
        #: checks and creates a client's topic (the cluster's ``add_topic``), or None: not served.
        self.create_topic = create_topic
        self.topic_configs = topic_configs
        self.brokers: dict[int, int] = {}  # broker id -> last heartbeat ms
        self.incarnations: dict[int, int] = {}
        self.fenced: set[int] = set()
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.controller_epoch = 1
        #: topic name -> how many times it was deleted (sent to restarting brokers; see delete_topic)
        self.deleted: dict[str, int] = {}
        self.handlers = {
            BrokerHeartbeatRequest: self._on_heartbeat,
            AlterPartitionRequest: self._on_alter_partition,
            CreateTopicsRequest: self._on_create_topics,
            CreateTopicRequest: self._on_create_topic,
        }
        self.set_timer(config.broker_heartbeat_interval_ms, self._liveness_tick)

    # -- topics -----------------------------------------------------------------------------

    def create_partitions(self, topic: str, assignments: list[tuple[int, ...]]) -> None:
        """Create a topic's partitions with these replica assignments; leaders are elected now."""
        changed = []
        for p, replicas in enumerate(assignments):
            live = [b for b in replicas if self.is_live(b)]
            leader = live[0] if live else NO_LEADER
            isr = tuple(live) if live else tuple(replicas)
            state = PartitionState(topic, p, leader, 0, isr, tuple(replicas), 0)
            self.partitions[(topic, p)] = state
            changed.append(state)
        self.world.trace.emit(
            self.name, "state", events.TOPIC_CREATE, ("topic", topic), ("partitions", len(assignments))
        )
        self._push(changed)

    def delete_topic(self, topic: str) -> None:
        """Delete a topic's partitions and tell every live broker (KRaft's RemoveTopicRecord).

        A broker down now learns it when it registers again (the full push carries every deletion),
        before it opens any partition, so a name created again never finds the old files.
        """
        keys = [k for k in sorted(self.partitions) if k[0] == topic]
        for k in keys:
            del self.partitions[k]
        self.deleted[topic] = self.deleted.get(topic, 0) + 1
        self.world.trace.emit(self.name, "state", events.TOPIC_DELETE, ("topic", topic), ("partitions", len(keys)))
        req = LeaderAndIsrRequest(self.controller_epoch, (), self.live_brokers(), ((topic, self.deleted[topic]),))
        for b in self.live_brokers():
            self.send_oneway(f"broker-{b}", req)

    def _on_create_topics(self, m: Message) -> None:
        """Create an internal topic that a broker found missing (first use), once."""
        req: CreateTopicsRequest = m.body
        if (req.topic, 0) in self.partitions:
            return
        live = list(self.live_brokers())
        if not live:
            return
        rf = min(req.replication_factor, len(live))
        if req.topic == TRANSACTION_STATE_TOPIC:
            self.topic_configs[req.topic] = TopicConfig(
                min_insync_replicas=min(self.config.transaction_state_log_min_isr, rf)
            )
        assignments = [tuple(live[(p + i) % len(live)] for i in range(rf)) for p in range(req.partitions)]
        self.create_partitions(req.topic, assignments)

    def _on_create_topic(self, m: Message) -> None:
        """Check and create a client's topic (forwarded by a broker), and answer."""
        if self.create_topic is None:
            self.respond(m, CreateTopicResponse(ErrorCode.INVALID_REQUEST, "topic creation is not served here"))
            return
        self.respond(m, self.create_topic(m.body))

    def unclean_allowed(self, topic: str) -> bool:
        """Return the topic's unclean.leader.election.enable."""
        tc = self.topic_configs.get(topic)
        if tc is not None and tc.unclean_leader_election_enable is not None:
            return tc.unclean_leader_election_enable
        return self.config.unclean_leader_election_enable

    def is_live(self, broker_id: int) -> bool:
        """Return True when the broker is registered and not fenced."""
        return broker_id in self.brokers and broker_id not in self.fenced

    def live_brokers(self) -> tuple[int, ...]:
        """Return the ids of live brokers, sorted."""
        return tuple(sorted(b for b in self.brokers if b not in self.fenced))

    # -- liveness ---------------------------------------------------------------------------

    def _on_heartbeat(self, m: Message) -> None:
        hb: BrokerHeartbeatRequest = m.body
        b = hb.broker_id
        known = b in self.incarnations
        new_incarnation = self.incarnations.get(b) != hb.incarnation
        self.brokers[b] = self.world.now_ms
        self.incarnations[b] = hb.incarnation
        if known and new_incarnation and b not in self.fenced:
            # It restarted before its session expired: its old registration is gone, and so may be
            # an unflushed tail. Move leadership away first (bumping leader epochs), as KRaft fences a
            # re-registering broker until it has caught up.
            self.world.trace.emit(
                self.name, "state", events.BROKER_REREGISTER, ("broker", b), ("incarnation", hb.incarnation)
            )
            self.fenced.add(b)
            self._on_broker_down(b)
        if b in self.fenced or new_incarnation:
            self.fenced.discard(b)
            self.world.trace.emit(
                self.name, "state", events.BROKER_REGISTER, ("broker", b), ("incarnation", hb.incarnation)
            )
            self._on_broker_up(b)

    def _liveness_tick(self) -> None:
        now = self.world.now_ms
        timeout = self.config.broker_session_timeout_ms
        for b in sorted(self.brokers):
            if b not in self.fenced and now - self.brokers[b] > timeout:
                self.fenced.add(b)
                self.world.trace.emit(self.name, "state", events.BROKER_FENCE, ("broker", b))
                self._on_broker_down(b)
        self.set_timer(self.config.broker_heartbeat_interval_ms, self._liveness_tick)

    def _on_broker_down(self, b: int) -> None:
        changed = []
        for key in sorted(self.partitions):
            s = self.partitions[key]
            if b not in s.replicas:
                continue
            if s.leader == b:
                changed.append(self._elect(s, exclude=b))
            elif b in s.isr and len(s.isr) > 1:
                changed.append(self._with(s, isr=tuple(x for x in s.isr if x != b)))
        self._push(changed)

    def _on_broker_up(self, b: int) -> None:
        changed = []
        for key in sorted(self.partitions):
            s = self.partitions[key]
            if b in s.replicas and s.leader == NO_LEADER:
                new = self._elect(s, exclude=None)
                if new.leader != NO_LEADER:
                    changed.append(new)
        self._push(changed)
        # The restarted broker learns every partition it hosts (and the rest, for metadata).
        everything = [self.partitions[k] for k in sorted(self.partitions)]
        deleted = tuple(sorted(self.deleted.items()))
        if everything or deleted:
            self.send_oneway(
                f"broker-{b}",
                LeaderAndIsrRequest(self.controller_epoch, tuple(everything), self.live_brokers(), deleted),
            )

    # -- election ---------------------------------------------------------------------------

    def _with(
        self, s: PartitionState, *, leader: int | None = None, isr: tuple[int, ...] | None = None
    ) -> PartitionState:
        new_leader = s.leader if leader is None else leader
        epoch = s.leader_epoch + 1 if new_leader != s.leader else s.leader_epoch
        new = PartitionState(
            s.topic,
            s.partition,
            new_leader,
            epoch,
            s.isr if isr is None else isr,
            s.replicas,
            s.partition_epoch + 1,
        )
        self.partitions[(s.topic, s.partition)] = new
        return new

    def _elect(self, s: PartitionState, exclude: int | None) -> PartitionState:
        candidates = [r for r in s.replicas if r in s.isr and r != exclude and self.is_live(r)]
        if candidates:
            leader = candidates[0]
            isr = tuple(r for r in s.isr if r != exclude) if exclude is not None else s.isr
            new = self._with(s, leader=leader, isr=isr)
            self.world.trace.emit(
                self.name,
                "state",
                events.ELECTION_CLEAN,
                ("tp", f"{s.topic}-{s.partition}"),
                ("leader", leader),
                ("epoch", new.leader_epoch),
                ("isr", list(new.isr)),
            )
            return new
        if self.unclean_allowed(s.topic):
            live = [r for r in s.replicas if r != exclude and self.is_live(r)]
            if live:
                new = self._with(s, leader=live[0], isr=(live[0],))
                self.world.trace.emit(
                    self.name,
                    "state",
                    events.ELECTION_UNCLEAN,
                    ("tp", f"{s.topic}-{s.partition}"),
                    ("leader", live[0]),
                    ("epoch", new.leader_epoch),
                )
                self.world.trace.mark(self.name, "controller: unclean leader election")
                return new
        # No eligible leader: keep the ISR (its members may come back) and go offline.
        new = self._with(s, leader=NO_LEADER)
        self.world.trace.emit(
            self.name, "state", events.ELECTION_NONE, ("tp", f"{s.topic}-{s.partition}"), ("isr", list(new.isr))
        )
        return new

    def _push(self, changed: list[PartitionState]) -> None:
        if not changed:
            return
        req = LeaderAndIsrRequest(self.controller_epoch, tuple(changed), self.live_brokers())
        for b in self.live_brokers():
            self.send_oneway(f"broker-{b}", req)

    # -- ISR changes from leaders -------------------------------------------------------------

    def _on_alter_partition(self, m: Message) -> None:
        req: AlterPartitionRequest = m.body
        s = self.partitions.get((req.topic, req.partition))
        if s is None:
            self.respond(m, AlterPartitionResponse(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            return
        if s.leader != req.broker_id or s.leader_epoch != req.leader_epoch or s.partition_epoch != req.partition_epoch:
            self.respond(m, AlterPartitionResponse(ErrorCode.FENCED_LEADER_EPOCH, s))
            return
        new_isr = tuple(b for b in req.new_isr if b == s.leader or self.is_live(b))
        new = self._with(s, isr=new_isr)
        self.world.trace.emit(
            self.name, "state", events.ISR_CHANGE, ("tp", f"{s.topic}-{s.partition}"), ("isr", list(new_isr))
        )
        self.respond(m, AlterPartitionResponse(ErrorCode.NONE, new))
        self._push([new])
