"""The plain-Python API: build a simulated cluster, produce, consume, inject faults, look inside.

>>> from engine import Cluster
>>> c = Cluster(seed=7, brokers=3)
>>> c.create_topic("orders", partitions=1, replication_factor=3, config={"min.insync.replicas": 2})
>>> p = c.producer({"acks": "all"})
>>> p.produce("orders", value=b"v0")
>>> p.flush()
0

Everything runs inside one :class:`~engine.sim.world.World`: nothing happens between calls
unless a call waits (``flush``, ``poll``, ``run_for``), and the same seed gives the same run.
Node names are ``broker-1`` …, ``controller``, ``producer-1`` …, ``consumer-1`` ….

Two clusters can share one world (a source and the target of a mirror): ``Cluster.beside(source,
"target")`` builds the second one in a region of the source's world (:meth:`World.region
<engine.sim.world.World.region>`): one clock and one seed, its own node names, network and faults;
its trace events also appear in the source's trace as ``target/broker-1``, and its
:meth:`~Cluster.fingerprint` is the whole run's.

Every entry point checks its arguments before it changes anything (:mod:`engine.views.lookup`):
a refused call raises the catalogue's named exception or a ``TypeError``/``ValueError`` saying
what exists or what to pass, and leaves the cluster as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine import args
from engine.broker.broker import MAX_BROKERS, Broker, broker_name
from engine.broker.controller import Controller
from engine.client.consumer import Consumer
from engine.client.observer import NewClientObserver
from engine.client.producer import Producer
from engine.config import BrokerConfig, TopicConfig, parse_config
from engine.coordinator.txn_coordinator import TransactionCoordinator
from engine.errors import (
    ConfigError,
    ErrorCode,
    InvalidPartitionsException,
    InvalidReplicaAssignmentException,
    InvalidReplicationFactorException,
    InvalidRequestException,
    KafkaError,
)
from engine.group import GroupCoordinator
from engine.protocol import CreateTopicRequest, CreateTopicResponse
from engine.sim.faults import FaultPlan
from engine.sim.network import MessageRule, NetworkOptions
from engine.sim.observer import OBSERVER_HOOKS, Observer
from engine.sim.sites import SiteOptions
from engine.sim.world import World
from engine.views import configs, lookup, snapshots
from engine.weakenings import CORRECT, Weakenings

#: Time given to a new cluster for brokers to register and leaders to be elected.
STARTUP_MS = 100


def _check_client_config(config: Any, what: str) -> None:
    if config is not None and not isinstance(config, Mapping):
        msg = f"{what} config must be a dict of Kafka-named keys (e.g. {{'linger.ms': 5}}), got {config!r}"
        raise TypeError(msg)


def _check_cluster_args(seed: Any, brokers: Any, config: Any) -> None:
    """Check ``Cluster(seed, brokers, config)`` before anything is built."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        msg = f"seed must be an int (the run's only source of randomness), got {seed!r}"
        raise TypeError(msg)
    if isinstance(brokers, bool) or not isinstance(brokers, int):
        msg = f"brokers must be an int (how many brokers, ids 1..n), got {brokers!r}"
        raise TypeError(msg)
    if brokers < 1:
        raise ConfigError("brokers", brokers, "a cluster needs at least one broker")
    if brokers > MAX_BROKERS:
        # Producer-id blocks are numbered per broker id modulo MAX_BROKERS (engine/broker/broker.py).
        raise ConfigError("brokers", brokers, f"a cluster has at most {MAX_BROKERS} brokers here")
    if config is not None and not isinstance(config, Mapping):
        msg = f"config must be a dict of broker configuration (e.g. {{'min.insync.replicas': 2}}), got {config!r}"
        raise TypeError(msg)


def _check_name(name: Any) -> None:
    """Check a cluster's display name (a region name for :meth:`Cluster.beside`)."""
    if not isinstance(name, str) or not name or "/" in name or name != name.strip():
        msg = f"a cluster name must be a non-empty str without '/' or surrounding spaces, got {name!r}"
        raise ValueError(msg)


def _check_observers(observers: Any) -> tuple[Observer, ...]:
    if isinstance(observers, (str, bytes)) or not isinstance(observers, Iterable):
        msg = f"observers must be a list of observer objects (engine.sim.observer), got {observers!r}"
        raise TypeError(msg)
    out = tuple(observers)
    for o in out:
        if not any(callable(getattr(o, h, None)) for h in OBSERVER_HOOKS):
            msg = f"{o!r} is not an observer: it defines none of {', '.join(OBSERVER_HOOKS)}"
            raise TypeError(msg)
    return out


class Cluster:
    """A simulated Kafka cluster in one world.

    Parameters
    ----------
    seed
        The run's seed.
    brokers
        How many brokers (ids 1..n).
    config
        Broker configuration with Kafka's names (``min.insync.replicas``, ...).
    network
        The latency model.
    sites
        Named fault sites (BUGGIFY) options.
    keep_trace
        Keep every trace event (default); benchmarks turn it off.
    observers
        Observers (:mod:`engine.sim.observer`) attached before anything happens, so they see the
        startup too (brokers registering, leaders elected); ``cluster.world.attach`` adds one later.
    name
        The cluster's name, for display (a cluster built by :meth:`beside` has its region's name).
    world
        Build in this world instead of a new one (:meth:`beside` passes a region of its source's
        world); ``seed``, ``network``, ``sites`` and ``keep_trace`` are then the world's own.
    """

    def __init__(
        self,
        seed: int = 0,
        brokers: int = 3,
        config: dict[str, Any] | None = None,
        *,
        network: NetworkOptions | None = None,
        sites: SiteOptions | None = None,
        keep_trace: bool = True,
        weakenings: Weakenings = CORRECT,
        observers: Iterable[Observer] = (),
        name: str = "cluster",
        world: World | None = None,
    ) -> None:
        _check_cluster_args(seed, brokers, config)
        _check_name(name)
        observers = _check_observers(observers)
        if world is None:
            world = World(seed, network=network, sites=sites, keep_trace=keep_trace, observers=observers)
        self._build(world, name, brokers, parse_config(BrokerConfig, config, what="broker"), weakenings, observers)

    @classmethod
    def beside(
        cls,
        source: Cluster,
        name: str = "target",
        brokers: int = 3,
        config: dict[str, Any] | None = None,
        *,
        network: NetworkOptions | None = None,
        sites: SiteOptions | None = None,
        weakenings: Weakenings = CORRECT,
        observers: Iterable[Observer] = (),
    ) -> Cluster:
        """Build a second cluster in a region ``name`` of ``source``'s world: same clock and seed.

        Its nodes have their own names (its ``broker-1`` is not the source's), network (by default
        with the source's latency model), fault sites and faults; crashing one of its brokers does
        nothing to the source. Observers with ``on_advance``/``after_step`` hooks can only watch
        the source's (root) world. Building it takes :data:`STARTUP_MS` of the shared clock.
        """
        if not isinstance(source, Cluster):
            msg = f"Cluster.beside() takes the source Cluster first, got {source!r}"
            raise TypeError(msg)
        _check_cluster_args(source.seed, brokers, config)
        _check_name(name)
        if name in source.world.regions:
            msg = f"a cluster named {name!r} already runs beside {source.name!r}"
            raise ValueError(msg)
        observers = _check_observers(observers)
        parse_config(BrokerConfig, config, what="broker")  # a bad config fails before the region is made
        world = source.world.region(
            name, network=network or source.world.network.options, sites=sites, observers=observers
        )
        return cls(source.seed, brokers, config, weakenings=weakenings, observers=observers, name=name, world=world)

    def _build(
        self,
        world: World,
        name: str,
        brokers: int,
        config: BrokerConfig,
        weakenings: Weakenings,
        observers: tuple[Observer, ...],
    ) -> None:
        """Build the controller, brokers and coordinators in ``world``, and let them start up."""
        self.world = world
        self.name = name
        self.config: BrokerConfig = config
        self.topic_configs: dict[str, TopicConfig] = {}
        self.topics: dict[str, int] = {}
        self.weakenings = weakenings
        self.controller = Controller(self.world, self.config, self.topic_configs, self.answer_create_topic)
        self.brokers: dict[int, Broker] = {
            b: Broker(self.world, b, self.config, self.topic_configs, weakenings) for b in range(1, brokers + 1)
        }
        for broker in self.brokers.values():
            broker.add_extension(TransactionCoordinator(weakenings))
            broker.add_extension(GroupCoordinator(weakenings))
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []
        #: The clients outside the engine that talk to this cluster over the wire, when it is
        #: served (an ``engine.wire.clients.OutsideClients``, set by the wire service; None: not
        #: served). ``engine.views.board`` lists them with the engine's own clients.
        self.outside_clients: Any = None
        #: Told of every producer and consumer created from now on (``engine.check.ClientHistory``
        #: sets it); None: nobody watches. See engine/client/observer.py.
        self.client_observer: NewClientObserver | None = None
        for o in observers:
            bind = getattr(o, "on_cluster", None)
            if bind is not None:
                bind(self)
        self.world.run_for(STARTUP_MS)

    # -- shape ------------------------------------------------------------------------------

    @property
    def seed(self) -> int:
        """Return the run's seed."""
        return self.world.seed

    @property
    def now_ms(self) -> int:
        """Return the simulated time."""
        return self.world.now_ms

    def bootstrap(self) -> list[str]:
        """Return the broker node names clients bootstrap from."""
        return [broker_name(b) for b in self.brokers]

    def add_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        config: dict[str, Any] | None = None,
        *,
        assignments: list[tuple[int, ...]] | None = None,
    ) -> None:
        """Create a topic now, without running the world; replicas are spread round-robin, as Kafka's
        default placement does. The controller elects the leaders in the next events.

        Checked first, as Kafka's controller checks a CreateTopics request, and nothing changes when
        a check fails: the name (``TypeError``; ``InvalidTopicException`` for Kafka's ``Topic.validate``
        rules, the internal topics and a '.'/'_' collision; ``TopicExistsException``), ``partitions``
        >= 1 (``InvalidPartitionsException``), ``replication_factor`` between 1 and the broker count,
        or None/-1 for ``default.replication.factor`` (``InvalidReplicationFactorException``), the
        topic ``config`` (``ConfigError``), and ``assignments``: one replica list per partition, each
        naming existing brokers once, all of one length (``InvalidReplicaAssignmentException``). With
        ``assignments`` they
        set the partition count and replication factor; a ``partitions`` other than the default 1, or
        a ``replication_factor``, must agree with them.
        """
        lookup.check_new_topic(name, self.topics)
        args.check_int(partitions, "partitions")
        if partitions < 1:
            msg = f"Number of partitions must be at least 1, got {partitions}"
            raise InvalidPartitionsException(msg, topic=name)
        if replication_factor is not None:
            args.check_int(replication_factor, "replication_factor")
        if config is not None and not isinstance(config, Mapping):
            msg = f"config must be a dict of topic configuration (e.g. {{'min.insync.replicas': 2}}), got {config!r}"
            raise TypeError(msg)
        topic_config = parse_config(TopicConfig, config, what="topic")
        if assignments is None:
            rf = self._replication_factor(replication_factor)
            ids = sorted(self.brokers)
            assignments = [tuple(ids[(p + i) % len(ids)] for i in range(rf)) for p in range(partitions)]
        else:
            assignments = self._check_assignments(assignments, partitions, replication_factor)
        self.topic_configs[name] = topic_config
        self.topics[name] = len(assignments)
        self.controller.create_partitions(name, assignments)

    def answer_create_topic(self, req: CreateTopicRequest) -> CreateTopicResponse:
        """Check and create a client's topic as the controller answers a forwarded CreateTopics.

        The checks of :meth:`add_topic` (``validate_only``: nothing is created); a refusal is
        answered with its Kafka error, a bad config value with ``INVALID_CONFIG``.
        """
        config = dict(req.config) if req.config else None
        assignments = [tuple(a) for a in req.assignments] if req.assignments else None
        try:
            if req.validate_only:
                lookup.check_new_topic(req.name, self.topics)
                if assignments is None:
                    self._replication_factor(req.replication_factor)
                else:
                    self._check_assignments(assignments, req.partitions, req.replication_factor)
                parse_config(TopicConfig, config, what="topic")
            else:
                self.add_topic(req.name, req.partitions, req.replication_factor, config, assignments=assignments)
        except KafkaError as exc:
            return CreateTopicResponse(exc.code, str(exc))
        except (TypeError, ValueError) as exc:
            return CreateTopicResponse(ErrorCode.INVALID_CONFIG, str(exc))
        rf = len(assignments[0]) if assignments else self._replication_factor(req.replication_factor)
        rows = () if req.validate_only else tuple(configs.topic_configs(self, req.name))
        return CreateTopicResponse(ErrorCode.NONE, None, len(assignments) if assignments else req.partitions, rf, rows)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        config: dict[str, Any] | None = None,
        *,
        assignments: list[tuple[int, ...]] | None = None,
    ) -> None:
        """Create a topic (see :meth:`add_topic` for the checks), and give its leaders 10 ms to be elected."""
        self.add_topic(name, partitions, replication_factor, config, assignments=assignments)
        self.world.run_for(10)

    def delete_topic(self, name: str) -> None:
        """Delete a topic now, without running the world (Kafka's DeleteTopics, as its controller does it).

        The controller drops the partitions and tells the live brokers, which drop their replicas
        and files in the next events; a broker down now drops them when it registers again.
        Clients of the topic then get ``UNKNOWN_TOPIC_OR_PARTITION``, and the name can be created
        again (empty). Raises ``UnknownTopicOrPartitionException`` for a topic the cluster does
        not have, and ``InvalidRequestException`` for an internal topic: Kafka 4.4 deletes
        ``__consumer_offsets`` when asked, but the engine's coordinators cannot lose their
        partitions, so that is not served. Committed offsets of the topic's partitions stay in
        their group (Kafka removes them; see docs/wire.md).
        """
        lookup.require_topic(self, name)
        if name in lookup.INTERNAL_TOPICS:
            msg = f"deleting the internal topic {name!r} is not served by the simulation"
            raise InvalidRequestException(msg, topic=name)
        self.topics.pop(name, None)
        self.topic_configs.pop(name, None)
        self.controller.delete_topic(name)

    def _replication_factor(self, replication_factor: int | None) -> int:
        n = len(self.brokers)
        if replication_factor is None or replication_factor == -1:
            return min(self.config.default_replication_factor, n)
        if not 1 <= replication_factor <= n:
            msg = (
                f"Replication factor must be between 1 and {n} (the broker count), or -1 for the default; "
                f"got {replication_factor}"
            )
            raise InvalidReplicationFactorException(msg, replication_factor=replication_factor)
        return replication_factor

    def _check_assignments(
        self, assignments: Any, partitions: int, replication_factor: int | None
    ) -> list[tuple[int, ...]]:
        """Check a manual assignment as Kafka's controller does; return it as a list of tuples."""
        usage = "assignments must be a list of replica lists, one per partition, e.g. [(1, 2), (2, 3)]"
        if isinstance(assignments, (str, bytes, Mapping)) or not isinstance(assignments, (list, tuple)):
            raise TypeError(f"{usage}; got {assignments!r}")
        if not assignments:
            raise InvalidPartitionsException("Number of partitions must be at least 1: assignments is empty")
        out: list[tuple[int, ...]] = []
        for p, replicas in enumerate(assignments):
            if not isinstance(replicas, (list, tuple)):
                raise TypeError(f"{usage}; partition {p} has {replicas!r}")
            if not replicas:
                msg = f"The manual partition assignment includes an empty replica list (partition {p})"
                raise InvalidReplicaAssignmentException(msg)
            for b in replicas:
                if isinstance(b, bool) or not isinstance(b, int):
                    raise TypeError(f"{usage}: replicas are broker ids (int); partition {p} has {b!r}")
                if b not in self.brokers:
                    known = ", ".join(str(x) for x in sorted(self.brokers))
                    msg = f"The manual partition assignment includes broker {b}, but no such broker exists: {known}"
                    raise InvalidReplicaAssignmentException(msg)
            if len(set(replicas)) != len(replicas):
                msg = f"The manual partition assignment includes a broker more than once (partition {p}: {replicas!r})"
                raise InvalidReplicaAssignmentException(msg)
            if len(replicas) != len(assignments[0]):
                msg = "All partitions in the manual partition assignment must have the same number of replicas"
                raise InvalidReplicaAssignmentException(msg)
            out.append(tuple(replicas))
        if partitions != 1 and partitions != len(out):
            msg = f"{partitions} partitions asked for, but the assignments list {len(out)}; pass one or the other"
            raise ValueError(msg)
        if replication_factor is not None and replication_factor not in (-1, len(out[0])):
            msg = (
                f"replication factor {replication_factor} but the assignments list {len(out[0])} replicas per "
                "partition; pass one or the other"
            )
            raise ValueError(msg)
        return out

    # -- clients ----------------------------------------------------------------------------

    def producer(self, config: dict[str, Any] | None = None) -> Producer:
        """Create a producer with Kafka-named config (idempotent by default)."""
        _check_client_config(config, "producer")
        p = Producer(
            self.world,
            self.bootstrap(),
            config,
            transaction_version=self.config.transaction_version,
            weakenings=self.weakenings,
        )
        self.producers.append(p)
        if self.client_observer is not None:
            self.client_observer.on_new_client(p)
        return p

    def consumer(self, config: dict[str, Any] | None = None) -> Consumer:
        """Create a consumer with Kafka-named config."""
        _check_client_config(config, "consumer")
        c = Consumer(self.world, self.bootstrap(), config)
        self.consumers.append(c)
        if self.client_observer is not None:
            self.client_observer.on_new_client(c)
        return c

    # -- time -------------------------------------------------------------------------------

    def run_for(self, ms: int) -> int:
        """Let ``ms`` simulated milliseconds pass; return the events run."""
        args.check_int(ms, "run_for(ms)", minimum=0)
        return self.world.run_for(ms)

    def step(self, events: int = 1) -> int:
        """Run the next ``events`` scheduled events; return how many ran (fewer if nothing was due)."""
        args.check_int(events, "step(events)", minimum=1)
        world = self.world
        ran = 0
        while ran < events and world.step():
            ran += 1
        return ran

    def run_until(self, predicate: Any, max_events: int = 10_000_000, *, max_ms: int | None = None) -> int:
        """Run until ``predicate()`` is true, or for at most ``max_ms`` of simulated time.

        Raises SimulationStalled if the predicate cannot become true (nothing left to run and no
        ``max_ms``, or ``max_events`` spent).
        """
        if not callable(predicate):
            msg = f"run_until() takes a function of no arguments that returns True when done, got {predicate!r}"
            raise TypeError(msg)
        args.check_int(max_events, "max_events", minimum=1)
        if max_ms is None:
            return self.world.run_until(predicate, max_events)
        args.check_int(max_ms, "max_ms", minimum=0)
        return self.world.run_until(predicate, max_events, deadline_ms=self.now_ms + max_ms)

    # -- faults -----------------------------------------------------------------------------
    #
    # A node is a broker id (int) or any node's name (``broker-1``, ``controller``,
    # ``producer-1``, ``consumer-1``, ``admin-1`` ...). An id or name that does not exist is a
    # ValueError naming the ones that do; a crash of a crashed node, a resume of a running one and
    # the like raise the world's ``IllegalNodeTransitionError``.

    def _node_name(self, node: int | str) -> str:
        return lookup.node_name(self, node)

    def _node_group(self, nodes: Any, side: str) -> list[str]:
        if isinstance(nodes, (str, int, bytes)) or not isinstance(nodes, (list, tuple, set, frozenset)):
            msg = (
                f"partition(a, b) takes two lists of broker ids or node names, e.g. ([1], [2, 3]); {side} is {nodes!r}"
            )
            raise TypeError(msg)
        return [self._node_name(x) for x in nodes]

    def crash(self, node: int | str, *, lose_unflushed_tail: bool = False) -> None:
        """Crash a broker (by id) or any node (by name)."""
        self.world.crash(self._node_name(node), lose_unflushed_tail=lose_unflushed_tail)

    def restart(self, node: int | str) -> None:
        """Restart a crashed node."""
        self.world.restart(self._node_name(node))

    def pause(self, node: int | str) -> None:
        """Pause a node (it becomes a zombie until resumed)."""
        self.world.pause(self._node_name(node))

    def resume(self, node: int | str) -> None:
        """Resume a paused node."""
        self.world.resume(self._node_name(node))

    def partition(self, a: list[int | str], b: list[int | str], *, one_way: bool = False) -> None:
        """Cut the network between two groups of nodes (``one_way``: only messages from ``a`` to ``b``)."""
        left, right = self._node_group(a, "a"), self._node_group(b, "b")
        both = sorted(set(left) & set(right))
        if both:
            msg = f"a node cannot be cut from itself: {', '.join(both)} in both groups"
            raise ValueError(msg)
        self.world.network.partition(left, right, one_way=one_way)

    def isolate(self, node: int | str) -> None:
        """Cut a node from every other node."""
        self.world.network.isolate(self._node_name(node))

    def heal(self) -> None:
        """End every fault at once, and the safety phase with it (:meth:`World.heal <engine.sim.world.World.heal>`).

        - the network: partitions and clogs end, every message fault rule is removed, and held
          messages are delivered;
        - every **paused** node (broker or client) is resumed: what queued up for it runs now;
        - every **crashed** node (broker or client, a closed one included) is restarted, and
          rebuilds from its disk as after :meth:`restart` (a tail lost with
          ``lose_unflushed_tail=True`` stays lost);
        - the world enters the ``heal`` phase and the fault injector stops: entries of a plan given
          to :meth:`schedule_faults` that are not due yet never apply. :meth:`crash`, :meth:`pause`,
          :meth:`partition` and :meth:`add_rule` still work after it.

        It returns at once: restarted brokers register, catch up and rejoin ISRs as simulated
        time passes (``run_for``), as after any restart.
        """
        self.world.heal()

    def add_rule(self, action: str, **fields: Any) -> int:
        """Install a message fault (drop, delay, hold, duplicate); return its id.

        ``fields`` are :class:`~engine.sim.network.MessageRule`'s: ``src``, ``dst`` (a broker id or a
        node name), ``kind`` (request, response, oneway), ``body_type`` (e.g. ``"ProduceRequest"``),
        ``skip``, ``count`` (None: every match), ``delay_ms``, ``where``. A broker id that does not
        exist is a ValueError; a node name is taken as given, so a rule can name a client before it
        is created.
        """
        unknown = sorted(set(fields) - set(MessageRule.FIELDS))
        if unknown:
            msg = f"unknown rule field {unknown[0]!r}; the fields are {', '.join(MessageRule.FIELDS)}"
            raise TypeError(msg)
        for k in ("src", "dst"):
            value = fields.get(k)
            if value is not None and not isinstance(value, str):
                fields[k] = self._node_name(value)
        return self.world.network.add_rule(MessageRule(action=action, **fields))

    def remove_rule(self, rule_id: int) -> None:
        """Remove one message fault rule (the id :meth:`add_rule` returned).

        Messages the rule holds stay held: :meth:`release` them. A rule that already acted on its
        ``count`` messages is gone by itself, and removing it again does nothing; an id that
        :meth:`add_rule` never returned is a ValueError.
        """
        self._check_rule_id(rule_id)
        self.world.network.remove_rule(rule_id)

    def release(self, rule_id: int | None = None, *, msg_id: int | None = None) -> list[int]:
        """Deliver held messages: those of one ``hold`` rule, one message by ``msg_id``, or (no argument) all.

        Returns the ids of the messages released, in the order they go out (each after the network
        latency, outside its connection's FIFO order). An unknown rule id, or a ``msg_id`` that is
        not held (the trace's ``hold`` events name them), is a ValueError.
        """
        net = self.world.network
        if rule_id is not None and msg_id is not None:
            msg = "release() takes a rule id or a msg_id, not both"
            raise ValueError(msg)
        if rule_id is not None:
            self._check_rule_id(rule_id)
            return net.release(rule_id=rule_id)
        if msg_id is not None:
            args.check_int(msg_id, "msg_id")
            if msg_id not in net.held:
                held = ", ".join(str(i) for i in sorted(net.held)) or "none"
                msg = f"no held message {msg_id}; held: {held}"
                raise ValueError(msg)
            return net.release(msg_id)
        return net.release()

    def _check_rule_id(self, rule_id: Any) -> None:
        args.check_int(rule_id, "rule id")
        if not self.world.network.rule_was_added(rule_id):
            active = ", ".join(str(r) for r in self.world.network.active_rule_ids()) or "none"
            msg = f"no message fault rule {rule_id}: add_rule() returns the ids; active rules: {active}"
            raise ValueError(msg)

    def schedule_faults(self, plan: FaultPlan) -> None:
        """Schedule a fault plan."""
        if not isinstance(plan, FaultPlan):
            msg = f"schedule_faults() takes a FaultPlan (engine.sim.faults), got {plan!r}"
            raise TypeError(msg)
        self.world.schedule_faults(plan)

    def leader(self, topic: str, partition: int = 0) -> int:
        """Return the current leader id of a partition according to the controller (-1: none)."""
        return lookup.require_partition(self, topic, partition).leader

    # -- views ------------------------------------------------------------------------------

    def describe_partition(self, topic: str, partition: int = 0) -> snapshots.PartitionView:
        """Return a frozen snapshot of a partition: leader, ISR, LEO, HW, LSO, leader epoch."""
        return snapshots.partition_view(self, topic, partition)

    def describe_brokers(self) -> list[snapshots.BrokerView]:
        """Return a frozen snapshot of every broker."""
        return snapshots.broker_views(self)

    def producer_state(self, topic: str, partition: int = 0, broker: int | None = None) -> snapshots.ProducerStateView:
        """Return the producer-state table of a partition replica (the leader's by default)."""
        return snapshots.producer_state_view(self, topic, partition, broker)

    def dump_log(self, topic: str, partition: int = 0, broker: int | None = None) -> str:
        """Return a replica's log as ``kafka-dump-log.sh --print-data-log`` prints it."""
        from engine.views.dump import dump_log

        return dump_log(self, topic, partition, broker)

    def describe_group(
        self, group_id: str, *, members: bool = False, state: bool = False, verbose: bool = False
    ) -> str:
        """Return ``kafka-consumer-groups.sh --describe --group <id>`` (plus LSO and LAG-TO-LSO columns)."""
        from engine.views.consumer_groups import describe_group

        return describe_group(self, group_id, members=members, state=state, verbose=verbose)

    def group_view(self, group_id: str) -> Any:
        """Return a frozen :class:`~engine.views.consumer_groups.GroupView` of a consumer group, or None."""
        from engine.views.consumer_groups import group_view

        return group_view(self, group_id)

    def fingerprint(self) -> str:
        """Return the run fingerprint."""
        return self.world.fingerprint()

    # -- kafka-transactions.sh (engine/views/transactions.py, engine/admin.py) ----------------

    def transactions(self) -> TransactionsAdmin:  # noqa: F821 - imported on use (engine.admin imports cluster views)
        """Return ``kafka-transactions.sh`` bound to this cluster (list, describe, ..., abort)."""
        from engine.admin import TransactionsAdmin

        admin = self.__dict__.get("_transactions_admin")
        if admin is None:
            admin = self.__dict__["_transactions_admin"] = TransactionsAdmin(self)
        return admin

    def admin(self) -> AdminClient:  # noqa: F821 - see transactions()
        """Return the admin client node (``abort_transaction`` and the rows of every subcommand)."""
        return self.transactions().client

    def dump_txn_index(self, topic: str, partition: int = 0, broker: int | None = None) -> str:
        """Return a replica's ``.txnindex`` as ``kafka-dump-log.sh`` prints it."""
        from engine.views.transactions import dump_txn_index

        return dump_txn_index(self, topic, partition, broker)

    def dump_transaction_state(self, transactional_id: str | None = None) -> str:
        """Return ``__transaction_state`` as ``kafka-dump-log.sh --transaction-log-decoder`` prints it."""
        from engine.views.transactions import dump_transaction_state

        return dump_transaction_state(self, transactional_id)
