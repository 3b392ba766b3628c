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
"""

from __future__ import annotations

from typing import Any

from engine.broker.broker import Broker, broker_name
from engine.broker.controller import Controller
from engine.client.consumer import Consumer
from engine.client.producer import Producer
from engine.client.transactional_producer import TransactionalProducer
from engine.config import BrokerConfig, TopicConfig, parse_config
from engine.coordinator.txn_coordinator import TransactionCoordinator
from engine.errors import ConfigError
from engine.group import GroupCoordinator
from engine.sim.faults import FaultPlan
from engine.sim.network import MessageRule, NetworkOptions
from engine.sim.sites import SiteOptions
from engine.sim.world import World
from engine.views import snapshots
from engine.weakenings import CORRECT, Weakenings

#: Time given to a new cluster for brokers to register and leaders to be elected.
STARTUP_MS = 100


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
    ) -> None:
        if brokers < 1:
            raise ConfigError("brokers", brokers, "a cluster needs at least one broker")
        self.world = World(seed, network=network, sites=sites, keep_trace=keep_trace)
        self.config: BrokerConfig = parse_config(BrokerConfig, config, what="broker")
        self.topic_configs: dict[str, TopicConfig] = {}
        self.topics: dict[str, int] = {}
        self.weakenings = weakenings
        self.controller = Controller(self.world, self.config, self.topic_configs)
        self.brokers: dict[int, Broker] = {
            b: Broker(self.world, b, self.config, self.topic_configs, weakenings) for b in range(1, brokers + 1)
        }
        for broker in self.brokers.values():
            broker.add_extension(TransactionCoordinator(weakenings))
            broker.add_extension(GroupCoordinator(weakenings))
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []
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

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        config: dict[str, Any] | None = None,
        *,
        assignments: list[tuple[int, ...]] | None = None,
    ) -> None:
        """Create a topic; replicas are spread round-robin, as Kafka's default placement does."""
        if name in self.topics:
            msg = f"topic {name!r} already exists"
            raise ValueError(msg)
        rf = replication_factor or min(self.config.default_replication_factor, len(self.brokers))
        if not 1 <= rf <= len(self.brokers):
            raise ConfigError("replication.factor", rf, f"must be between 1 and the broker count {len(self.brokers)}")
        self.topic_configs[name] = parse_config(TopicConfig, config, what="topic")
        ids = sorted(self.brokers)
        if assignments is None:
            assignments = [tuple(ids[(p + i) % len(ids)] for i in range(rf)) for p in range(partitions)]
        self.topics[name] = len(assignments)
        self.controller.create_partitions(name, assignments)
        self.world.run_for(10)

    # -- clients ----------------------------------------------------------------------------

    def producer(self, config: dict[str, Any] | None = None) -> Producer:
        """Create a producer with Kafka-named config (idempotent by default)."""
        if config and config.get("transactional.id") is not None:
            p: Producer = TransactionalProducer(
                self.world,
                self.bootstrap(),
                config,
                transaction_version=self.config.transaction_version,
                weakenings=self.weakenings,
            )
        else:
            p = Producer(self.world, self.bootstrap(), config)
        self.producers.append(p)
        return p

    def consumer(self, config: dict[str, Any] | None = None) -> Consumer:
        """Create a consumer with Kafka-named config."""
        c = Consumer(self.world, self.bootstrap(), config)
        self.consumers.append(c)
        return c

    # -- time -------------------------------------------------------------------------------

    def run_for(self, ms: int) -> int:
        """Let ``ms`` simulated milliseconds pass; return the events run."""
        return self.world.run_for(ms)

    def run_until(self, predicate: Any, max_events: int = 10_000_000) -> int:
        """Run until ``predicate()`` is true (raises SimulationStalled if it cannot be)."""
        return self.world.run_until(predicate, max_events)

    # -- faults -----------------------------------------------------------------------------

    def _node_name(self, node: int | str) -> str:
        return broker_name(node) if isinstance(node, int) else node

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
        """Cut the network between two groups of nodes."""
        self.world.network.partition([self._node_name(x) for x in a], [self._node_name(x) for x in b], one_way=one_way)

    def isolate(self, node: int | str) -> None:
        """Cut a node from every other node."""
        self.world.network.isolate(self._node_name(node))

    def heal(self) -> None:
        """End every fault."""
        self.world.heal()

    def add_rule(self, action: str, **fields: Any) -> int:
        """Install a message fault (drop, delay, hold, duplicate); return its id."""
        for k in ("src", "dst"):
            if k in fields and fields[k] is not None:
                fields[k] = self._node_name(fields[k])
        return self.world.network.add_rule(MessageRule(action=action, **fields))

    def schedule_faults(self, plan: FaultPlan) -> None:
        """Schedule a fault plan."""
        self.world.schedule_faults(plan)

    def leader(self, topic: str, partition: int = 0) -> int:
        """Return the current leader id of a partition according to the controller (-1: none)."""
        return self.controller.partitions[(topic, partition)].leader

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
