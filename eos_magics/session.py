"""The plain-Python session: everything the ``%eos`` magics do, without magics.

>>> from eos_magics import Session
>>> s = Session()
>>> c = s.create_cluster(brokers=3, seed=42)
>>> s.create_topic("orders", partitions=2)
>>> p = s.producer("p1")
>>> s.produce("p1", "orders", ["o-1", "o-2"], partition=0).column("offset")
[0, 1]
>>> s.check().ok
True

Role
----
A :class:`Session` owns named clusters (one is *current*), the named clients made on each, and a
client history per cluster (:class:`engine.check.client_history.ClientHistory`), so
:meth:`Session.check` judges what the user just did. The magics (``eos_magics.commands``) parse a
line and call one method here; tests and people who dislike magics call the same methods.

Invariants
----------
* Objects are the engine's own (``engine.Cluster``, ``Producer``, ``Consumer``): Python and
  magics mix freely. With a ``namespace`` (the kernel's ``user_ns``) every named object is also
  bound there under its name.
* Every entry point checks its arguments before it changes anything; bad arguments and wrong
  state raise :class:`~eos_magics.errors.EosUsageError` (one line, "did you mean"). Kafka errors
  are the engine's named exceptions and pass through. Nothing the user built is lost by an error.
* Nothing here reads wall time or draws randomness: a session is as deterministic as its seeds.

What it does not do
-------------------
It draws nothing itself: every result is a view from :mod:`eos_magics.views`. It runs no thread:
simulated time moves only inside a call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import keyword
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from eos_magics.errors import EosUsageError, did_you_mean, require, unknown_name

if TYPE_CHECKING:
    from engine import Cluster, Consumer, Producer
    from engine.check.client_history import ClientHistory
    from widgets.live import LiveRun

__all__ = ["ClusterEntry", "Defaults", "Session", "cluster_config", "final_read"]

ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
CHECK_MODES = ("eos", "subscribe", "at-least-once")


@dataclasses.dataclass
class Defaults:
    """What a new cluster, topic or consumer gets when a call does not say (``%config EosMagics``)."""

    brokers: int = 3
    seed: int = 42
    replication_factor: int = 3
    min_insync_replicas: int = 2
    partitions: int = 1
    isolation_level: str = "read_committed"


@dataclasses.dataclass
class ClusterEntry:
    """One named cluster of a session: how it was built (for reset), its clients and its history."""

    name: str
    cluster: Cluster
    brokers: int
    seed: int
    config: dict[str, Any]
    history: ClientHistory
    #: The cluster with its journal, recorder and lock (``widgets.live``): what the dashboard shows.
    run: LiveRun
    clients: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: final readers made by :meth:`Session.check` so far
    readers: int = 0
    #: Dashboards showing this cluster (closed with it).
    dashboards: list[Any] = dataclasses.field(default_factory=list)
    #: The loopback feed of Spark's streaming source (``eos_magics.spark.feed``), once asked for.
    feed: Any = None
    #: The wire-protocol server of this cluster (``engine.serve.ServedCluster``), once served.
    served: Any = None


def _check_name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise EosUsageError(
            f"{what} name must be a Python identifier such as 'p1' (it becomes a variable), got {name!r}"
        )
    return name


def _check_int(value: Any, what: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise EosUsageError(f"{what} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise EosUsageError(f"{what} must be at least {minimum}, got {value}")
    return value


class Session:
    """Named clusters, their named clients and histories; what every magic calls."""

    def __init__(
        self,
        *,
        namespace: dict[str, Any] | None = None,
        defaults: Defaults | None = None,
        say: Callable[[str], None] = print,
    ) -> None:
        self.namespace = namespace
        self.defaults = defaults if defaults is not None else Defaults()
        #: Where a state change that the caller did not ask to see is told, one line each (a
        #: replaced cluster or client); the magics print, a test may collect.
        self.say = say
        self.entries: dict[str, ClusterEntry] = {}
        self.current: str | None = None
        #: the last scenario run (registry ScenarioResult): ``%eos_db`` reads its databases
        self.last_scenario: Any = None

    def __repr__(self) -> str:
        names = ", ".join(self.entries) or "none"
        return f"Session(clusters: {names}; current: {self.current or 'none'})"

    # -- clusters ---------------------------------------------------------------------------

    def create_cluster(
        self,
        name: str = "cluster",
        *,
        brokers: int | None = None,
        seed: int | None = None,
        config: Mapping[str, Any] | None = None,
        announce: bool = True,
    ) -> Cluster:
        """Build a cluster, make it current, bind it under ``name``; return it.

        A cluster of that name is replaced, as re-running a notebook from the top expects: its
        clients, dashboards and served ports go with it, and :attr:`say` tells so in one line
        (unless ``announce`` is false: a reset was asked for, and its summary says enough).
        """
        _check_name(name, "cluster")
        owner = self._client_owner(name)
        if owner is not None:
            kind = _kind(owner.clients[name])
            raise EosUsageError(f"'{name}' names a {kind} of cluster '{owner.name}'; pick another name")
        brokers = self.defaults.brokers if brokers is None else _check_int(brokers, "--brokers", 1)
        seed = self.defaults.seed if seed is None else _check_int(seed, "--seed")
        if config is not None and not isinstance(config, Mapping):
            raise EosUsageError(f"config must be a dict of Kafka broker settings, got {config!r}")
        cfg = cluster_config(brokers, config, self.defaults)
        run = self._build(brokers, seed, cfg)
        cluster = run.cluster
        if name in self.entries:
            old = self.entries.pop(name)
            self._forget(old)
            if announce:
                self.say(_replaced_line(old, seed))
        from engine.check.client_history import ClientHistory

        entry = ClusterEntry(name, cluster, brokers, seed, cfg, ClientHistory.attach(cluster), run)
        self.entries[name] = entry
        self.current = name
        self._bind(name, cluster)
        return cluster

    @staticmethod
    def _build(brokers: int, seed: int, config: dict[str, Any]) -> LiveRun:
        from widgets.live import LiveRun

        try:
            return LiveRun.start(seed=seed, brokers=brokers, config=config)
        except (TypeError, ValueError) as exc:
            raise EosUsageError(str(exc)) from None

    def fork(self, event_index: int, name: str | None = None) -> int:
        """Replay a cluster's run up to the board after ``event_index`` and carry on from there.

        The cluster and its clients are rebuilt by replaying the journal (same seed, same calls at
        the same events); the names in the namespace then point at the new objects and the client
        history is the replayed one. Returns the event the new run stopped after (see
        ``engine.journal.Journal.fork``).
        """
        entry = self.entry(name)
        _check_int(event_index, "event index", 0)
        return self.fork_entry(entry, event_index)[1]

    def fork_entry(self, entry: ClusterEntry, event_index: int) -> tuple[LiveRun, int]:
        """Fork ``entry``'s run at ``event_index`` and point the entry and the namespace at it."""
        from engine.check.client_history import ClientHistory

        histories: list[ClientHistory] = []
        run, stop = entry.run.fork(event_index, setup=lambda c: histories.append(ClientHistory.attach(c)))
        old = entry.cluster
        _stop_feed(entry)  # it serves the old cluster; the next stream starts one on the fork
        _stop_served(entry)  # real clients were talking to the old cluster; serve the fork again to go on
        entry.run, entry.cluster = run, run.cluster
        entry.history = histories[0]
        if self.namespace is not None and self.namespace.get(entry.name) is old:
            self.namespace[entry.name] = run.cluster
        for cname, obj in list(entry.clients.items()):
            fresh = run.cluster.world.nodes.get(getattr(obj, "name", ""))
            if fresh is None:  # created after the fork point: gone in the new run
                del entry.clients[cname]
                if self.namespace is not None and self.namespace.get(cname) is obj:
                    del self.namespace[cname]
                continue
            entry.clients[cname] = fresh
            if self.namespace is not None and self.namespace.get(cname) is obj:
                self.namespace[cname] = fresh
        for dash in entry.dashboards:
            if dash.run is not run:
                dash.follow(run)
        return run, stop

    def dashboard(self, name: str | None = None, *, play: bool = False, rate: int | None = None) -> Any:
        """Return a live dashboard of a cluster (``widgets.dashboard.Dashboard``); forks rebind the names."""
        entry = self.entry(name)
        from widgets.dashboard import Dashboard

        kwargs: dict[str, Any] = {}
        if rate is not None:
            kwargs["rate"] = _check_int(rate, "--rate", 1)
        dash = Dashboard(entry.run, title=entry.name, fork=lambda i: self.fork_entry(entry, i), **kwargs)
        entry.dashboards.append(dash)
        if play:
            dash.playing = True
        return dash

    def reset_cluster(self, name: str | None = None) -> Cluster:
        """Rebuild a cluster from its seed and settings: same seed, same run; its clients are gone."""
        entry = self.entry(name)
        current = self.current
        cluster = self.create_cluster(
            entry.name, brokers=entry.brokers, seed=entry.seed, config=dict(entry.config), announce=False
        )
        self.current = current
        return cluster

    def delete_cluster(self, name: str | None = None) -> None:
        """Forget a cluster, its clients and their variables."""
        entry = self.entry(name)
        self._forget(self.entries.pop(entry.name))
        if self.current == entry.name:
            self.current = next(iter(self.entries), None)

    def use(self, name: str) -> Cluster:
        """Make another cluster current."""
        entry = self.entry(name)
        self.current = entry.name
        return entry.cluster

    def entry(self, name: str | None = None) -> ClusterEntry:
        """Return a cluster's entry (the current one by default)."""
        if name is None:
            if self.current is None:
                raise EosUsageError("no cluster yet; create one first: %eos_cluster create --brokers 3 --seed 42")
            name = self.current
        entry = self.entries.get(name)
        if entry is None:
            raise unknown_name("cluster", name, self.entries, how="create it with %eos_cluster create --name NAME")
        return entry

    @property
    def cluster(self) -> Cluster:
        """The current cluster."""
        return self.entry().cluster

    def close(self) -> None:
        """Forget every cluster (``%unload_ext``)."""
        for name in list(self.entries):
            self._forget(self.entries.pop(name))
        self.current = None

    def _bind(self, name: str, obj: Any) -> None:
        if self.namespace is not None:
            self.namespace[name] = obj

    def _forget(self, entry: ClusterEntry) -> None:
        for dash in entry.dashboards:
            dash.close()
        entry.dashboards.clear()
        _stop_feed(entry)
        _stop_served(entry)
        if self.namespace is None:
            return
        for name, obj in [(entry.name, entry.cluster), *entry.clients.items()]:
            if self.namespace.get(name) is obj:
                del self.namespace[name]

    # -- topics -----------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        replication_factor: int | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Create a topic on the current cluster (Kafka's topic config names)."""
        c = self.cluster
        partitions = self.defaults.partitions if partitions is None else _check_int(partitions, "--partitions", 1)
        if replication_factor is None:
            replication_factor = min(self.defaults.replication_factor, len(c.brokers))
        self.call_engine(c.create_topic, name, partitions, replication_factor, dict(config or {}))

    def require_topic(self, topic: str) -> str:
        """Return ``topic`` if it exists, else a usage error with the nearest name."""
        if topic not in self.cluster.topics:
            raise unknown_name("topic", topic, self.cluster.topics, how="create it with %eos_topic create NAME")
        return topic

    # -- clients ----------------------------------------------------------------------------

    def producer(
        self,
        name: str,
        *,
        transactional_id: str | None = None,
        config: Mapping[str, Any] | None = None,
        init: bool = True,
    ) -> Producer:
        """Create a producer (idempotent by default), bind it under ``name``, return it.

        With a ``transactional_id`` it is transactional and, unless ``init=False``, has run
        ``init_transactions()`` (which fences any older instance with the same id).
        """
        entry = self.entry()
        self._new_client_name(entry, name)
        cfg = dict(config or {})
        if transactional_id is not None:
            cfg["transactional.id"] = transactional_id
        cfg.setdefault("client.id", _free_node_name(entry, name))
        p = self.call_engine(entry.cluster.producer, cfg)
        self._put_client(entry, name, p)
        if transactional_id is not None and init:
            p.init_transactions()
        return p

    def consumer(
        self,
        name: str,
        *,
        group_id: str | None = None,
        isolation_level: str | None = None,
        assign: Sequence[tuple[str, int]] | None = None,
        subscribe: Sequence[str] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> Consumer:
        """Create a consumer, bind it under ``name``, assign or subscribe it; return it.

        ``auto.offset.reset`` defaults to ``earliest`` here (Kafka's default is ``latest``) so that a
        new consumer reads what the notebook just wrote; pass it in ``config`` to choose.
        """
        entry = self.entry()
        self._new_client_name(entry, name)
        level = self.defaults.isolation_level if isolation_level is None else isolation_level
        if level not in ISOLATION_LEVELS:
            raise EosUsageError(f"isolation level must be one of {', '.join(ISOLATION_LEVELS)}, got {level!r}")
        if assign and subscribe:
            raise EosUsageError("pass --assign or --subscribe, not both")
        if subscribe and group_id is None:
            raise EosUsageError("--subscribe needs a consumer group: add --group NAME")
        for t, p in assign or ():
            self.require_topic(t)
            if not 0 <= p < self.cluster.topics[t]:
                raise EosUsageError(f"topic '{t}' has partitions 0..{self.cluster.topics[t] - 1}, not {p}")
        for t in subscribe or ():
            self.require_topic(t)
        cfg = {"isolation.level": level, "auto.offset.reset": "earliest", "client.id": _free_node_name(entry, name)}
        if group_id is not None:
            cfg["group.id"] = group_id
        cfg.update(config or {})
        c = self.call_engine(entry.cluster.consumer, cfg)
        self._put_client(entry, name, c)
        if assign:
            c.assign(list(assign))
        elif subscribe:
            c.subscribe(list(subscribe))
        return c

    def client(self, name: Any, kind: str | None = None) -> Any:
        """Return a named client of the current cluster (a Producer or Consumer object is taken as is)."""
        from engine import Consumer, Producer

        if isinstance(name, (Producer, Consumer)):
            obj = name
        else:
            entry = self.entry()
            obj = entry.clients.get(name)
            if obj is None:
                names = [n for n, o in entry.clients.items() if kind is None or _kind(o) == kind]
                what = kind or "client"
                raise unknown_name(what, name, names, how=f"create one with %eos_{what if kind else 'producer'} NAME")
        if kind is not None and _kind(obj) != kind:
            raise EosUsageError(f"'{name}' is a {_kind(obj)}, not a {kind}")
        return obj

    def _client_owner(self, name: str) -> ClusterEntry | None:
        return next((e for e in self.entries.values() if name in e.clients), None)

    def _new_client_name(self, entry: ClusterEntry, name: str) -> None:
        _check_name(name, "client")
        # A name may come back, on this cluster or another (its variable then names the new
        # client: see _put_client), but never a cluster's name.
        if name in self.entries:
            which = "the cluster" if name == entry.name else "another cluster"
            raise EosUsageError(f"'{name}' names {which}; pick another name for the client")

    def _put_client(self, entry: ClusterEntry, name: str, client: Any) -> None:
        """Bind a new client under ``name``; one this name had on the cluster is let go, said in one line.

        As re-running a cell restarts an application: the new instance is a new node of the
        simulated world (``p1-2`` when ``p1`` is taken: node names are unique, client.id need not
        be). A replaced consumer is closed (it leaves its group); a replaced producer cannot be
        closed on Kafka without flushing, so it simply gets no more calls: a transaction it left
        open ends as on Kafka, fenced by a newer instance with its transactional.id or aborted at
        ``transaction.timeout.ms``.
        """
        old = entry.clients.get(name)
        entry.clients[name] = client
        self._bind(name, client)
        if old is None:
            return
        close = getattr(old, "close", None)
        if close is not None:
            self.call_engine(close)
        fate = "closed" if close is not None else "left as it is: it gets no more calls"
        self.say(
            f"'{name}' now names a new {_kind(client)} (node {client.name}); "
            f"the old {_kind(old)} (node {old.name}) is {fate}"
        )

    # -- producing --------------------------------------------------------------------------

    def produce(
        self,
        producer: Any,
        topic: str,
        values: Sequence[Any],
        *,
        key: Any = None,
        partition: int | None = None,
        headers: Mapping[str, Any] | None = None,
        wait: bool = True,
    ) -> Any:
        """Produce ``values`` (one record each); with ``wait``, flush and return the delivery reports, else None."""
        from eos_magics.views import kafka as views

        p = self.client(producer, "producer")
        self.require_topic(topic)
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise EosUsageError(f"values must be a list of record values, got {values!r}")
        if not values:
            raise EosUsageError("nothing to produce: give at least one value")
        if partition is not None:
            n = self.cluster.topics[topic]
            if not 0 <= _check_int(partition, "--partition") < n:
                raise EosUsageError(f"topic '{topic}' has partitions 0..{n - 1}, not {partition}")
        reports: list[tuple[Any, Any]] = []
        hdrs = list(headers.items()) if headers else None
        for v in values:
            self.call_engine(
                p.produce,
                topic,
                value=v,
                key=key,
                partition=-1 if partition is None else partition,
                headers=hdrs,
                on_delivery=lambda err, msg: reports.append((err, msg)),
            )
        if not wait:
            return None  # the reports arrive with a later flush() or poll(); on_delivery of p.produce sees them
        p.flush()
        return views.deliveries(reports)

    def transactional(self, producer: Any) -> Producer:
        """Return a named producer that has a ``transactional.id``, else a usage error."""
        from engine.client.transactional_producer import TransactionalProducer

        p = self.client(producer, "producer")
        if not isinstance(p, TransactionalProducer):
            raise EosUsageError(f"'{producer}' has no transactional.id; create a producer with --transactional-id ID")
        return p

    @contextlib.contextmanager
    def transaction(self, producer: Any, *, offsets_from: Any = None, abort: bool = False) -> Iterator[Producer]:
        """Run the ``with`` body inside ``begin_transaction()`` … ``commit_transaction()``.

        An exception in the body aborts the transaction and propagates; ``abort=True`` aborts at the
        end on purpose. With ``offsets_from`` (a consumer), its positions on its assignment are
        sent with ``send_offsets_to_transaction`` before the commit (or the deliberate abort, which
        discards them): consume-transform-produce.
        """
        __tracebackhide__ = True
        p = self.transactional(producer)
        consumer = None if offsets_from is None else self.client(offsets_from, "consumer")
        if consumer is not None and not consumer.config.group_id:
            msg = f"--offsets-from {offsets_from}: the consumer has no group.id; create it with --group GROUP"
            raise EosUsageError(msg)
        p.begin_transaction()
        try:
            yield p
            if consumer is not None:
                # Only positions the consumer knows: one that read nothing from a partition yet has
                # nothing of it to commit (its position there is still the -1001 "invalid" mark).
                known = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
                if known:
                    p.send_offsets_to_transaction(known, consumer.consumer_group_metadata())
                else:
                    self.say(f"--offsets-from {offsets_from}: it has read nothing yet, so no offsets were sent")
        except BaseException:
            with contextlib.suppress(Exception):  # the body's error is the one to show
                p.abort_transaction()
            raise
        if abort:
            p.abort_transaction()
        else:
            p.commit_transaction()

    # -- consuming --------------------------------------------------------------------------

    def consume(self, consumer: Any, max_messages: int = 100, timeout: float = 1.0) -> Any:
        """Poll up to ``max_messages`` records, waiting at most ``timeout`` simulated seconds."""
        from eos_magics.views import kafka as views

        c = self.client(consumer, "consumer")
        _check_int(max_messages, "--max", 1)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise EosUsageError(f"--timeout is simulated seconds >= 0, got {timeout!r}")
        return views.messages(c.consume(max_messages, timeout=timeout))

    # -- faults -----------------------------------------------------------------------------

    def node(self, node: Any) -> int | str:
        """A broker id (``2``, ``"2"``) or any node name (``broker-2``, ``producer-1``, a client's name)."""
        c = self.cluster
        if isinstance(node, str) and node.isdigit():
            node = int(node)
        if isinstance(node, str) and node in self.entry().clients:
            return self.entry().clients[node].name
        if isinstance(node, int) and node not in c.brokers:
            raise EosUsageError(f"no broker {node}; brokers are {', '.join(str(b) for b in sorted(c.brokers))}")
        if isinstance(node, str) and node not in c.world.nodes:
            names = sorted({*c.world.nodes, *self.entry().clients})
            raise unknown_name("node", node, names, how="name a broker id (1, 2, …) or a node name")
        return node

    def fault(self, action: str, *nodes: Any, power: bool = False) -> None:
        """``crash``, ``restart``, ``pause``, ``resume``, ``isolate`` a node; ``heal`` everything.

        ``power`` (crash only): the machine loses power, not just the process: the unflushed tail
        is lost and nobody is told (peers time out), where a process crash closes its connections.
        """
        c = self.cluster
        if power and action != "crash":
            raise EosUsageError("--power goes with crash: %eos_fault crash 2 --power")
        actions: dict[str, Callable[..., None]] = {
            "crash": c.crash,
            "restart": c.restart,
            "pause": c.pause,
            "resume": c.resume,
            "isolate": c.isolate,
        }
        if action == "heal":
            if nodes:
                raise EosUsageError("heal takes no node: it ends every fault at once")
            c.heal()
            return
        fn = actions.get(action)
        if fn is None:
            raise EosUsageError(f"unknown fault '{action}'{did_you_mean(action, [*actions, 'heal'])}")
        if len(nodes) != 1:
            raise EosUsageError(f"{action} takes one node: a broker id or a node name")
        if power:
            self.call_engine(c.crash, self.node(nodes[0]), lose_unflushed_tail=True)
            return
        self.call_engine(fn, self.node(nodes[0]))

    def cut(self, a: Sequence[Any], b: Sequence[Any], *, one_way: bool = False) -> None:
        """Cut the network between two groups of nodes."""
        self.call_engine(self.cluster.partition, [self.node(x) for x in a], [self.node(x) for x in b], one_way=one_way)

    def message_rule(
        self,
        action: str,
        body_type: str | None = None,
        *,
        kind: str | None = None,
        src: Any = None,
        dst: Any = None,
        count: int | None = 1,
        skip: int = 0,
        delay_ms: int | None = None,
    ) -> int:
        """Drop, delay, hold or duplicate the next ``count`` messages of a type; return the rule id."""
        from engine import protocol

        if body_type is not None:
            names = sorted(n for n in vars(protocol) if n.endswith(("Request", "Response")) and n[0].isupper())
            if body_type not in names:
                raise unknown_name("message type", body_type, names, how="e.g. ProduceResponse, EndTxnRequest")
        if body_type is not None:
            natural = "response" if body_type.endswith("Response") else "request"
            if kind is not None and kind != natural and not (kind == "oneway" and natural == "request"):
                raise EosUsageError(f"{body_type} is a {natural}, so --kind {kind} would never match; drop --kind")
            kind = kind or natural
        if delay_ms is not None and action != "delay":
            raise EosUsageError(f"--ms is for delay, not {action}")
        fields: dict[str, Any] = {"kind": kind, "body_type": body_type, "count": count, "skip": skip}
        if src is not None:
            fields["src"] = self.node(src)
        if dst is not None:
            fields["dst"] = self.node(dst)
        if delay_ms is not None:
            fields["delay_ms"] = delay_ms
        return self.call_engine(self.cluster.add_rule, action, **fields)

    def release(self, rule_id: int | None = None) -> list[int]:
        """Deliver held messages (of one rule, or all)."""
        return self.call_engine(self.cluster.release, rule_id)

    # -- time -------------------------------------------------------------------------------

    def run(self, ms: int) -> int:
        """Let ``ms`` simulated milliseconds pass; return how many events ran."""
        return self.call_engine(self.cluster.run_for, _check_int(ms, "milliseconds", 0))

    def step(self, events: int = 1) -> int:
        """Run the next ``events`` events; return how many ran (fewer if the world went idle)."""
        return self.call_engine(self.cluster.step, _check_int(events, "events", 1))

    def until(self, predicate: Callable[[], bool], max_ms: int = 60_000) -> int:
        """Run until ``predicate()`` is true; a usage error if it is still false after ``max_ms``."""
        c = self.cluster
        _check_int(max_ms, "--max-ms", 1)
        try:
            predicate()
        except Exception as exc:  # the condition itself is broken: say so before time moves
            raise EosUsageError(f"until: the condition raised {type(exc).__name__}: {exc}") from None
        c.run_until(lambda: bool(predicate()), max_ms=max_ms)
        if not predicate():
            raise EosUsageError(f"still false after {max_ms} simulated ms (now {c.now_ms} ms); raise --max-ms?")
        return c.now_ms

    # -- history and the judge --------------------------------------------------------------

    def history(self, name: str | None = None) -> Any:
        """The client history of a cluster so far (``engine.check.History``)."""
        return self.entry(name).history.history()

    def save_history(self, path: str, name: str | None = None) -> str:
        """Write the history as JSON Lines (``eos check PATH`` reads it); return the path."""
        entry = self.entry(name)
        _check_writable(path)
        entry.history.write_jsonl(path)
        return path

    def check(
        self, mode: str = "eos", name: str | None = None, *, final_read: bool = True, save: str | None = None
    ) -> Any:
        """Judge the session's history with the EOS checkers; return the report view.

        With ``final_read`` (the default) a read_committed consumer first reads every partition of
        every topic to its end, as Jepsen's final reads do: without it, an acknowledged record that
        no consumer of yours has read yet is reported ``unseen``. It is a real client of the
        cluster (``eos-check-reader-N``, recorded in the history) and moves simulated time on by
        its polls. ``save`` writes the judged history (final reads included) as JSON Lines, so
        ``eos check FILE`` gives the same verdict.
        """
        from eos_magics.views import kafka as views

        if mode not in CHECK_MODES:
            raise EosUsageError(f"mode must be one of {', '.join(CHECK_MODES)}{did_you_mean(mode, CHECK_MODES)}")
        entry = self.entry(name)
        if entry.history.ops == 0:
            raise EosUsageError("nothing to judge yet: produce or consume something first")
        if save is not None:
            _check_writable(save)
        if final_read:
            self._final_read(entry)
        if save is not None:
            entry.history.write_jsonl(save)
        return views.check_report(entry.history.check(mode))

    # -- data out: export and the Spark feed --------------------------------------------------

    def export(self, name: str | None = None) -> Any:
        """The cluster as it is now, with its client history, as Arrow tables (``engine.export.RunExport``).

        Every replica's log, ``__transaction_state``, group offsets, HW/LSO over time (rebuilt from
        the trace), faults and the trace itself; ``docs/export-schema.md`` names every column.
        """
        from engine.export import export_cluster

        entry = self.entry(name)
        with entry.run.lock:
            return export_cluster(entry.cluster, entry.history.history(), run_id=f"{entry.name}-s{entry.seed}")

    def feed(self, name: str | None = None) -> Any:
        """The loopback feed of a cluster for Spark's ``eos`` streaming source (started once, stopped with the cluster).

        It listens on 127.0.0.1 with a random token and reads the cluster under its lock, as a
        consumer at the asked isolation level would see it, without changing the run.
        """
        from eos_magics.spark.feed import Feed

        entry = self.entry(name)
        if entry.feed is None or not entry.feed.running:
            entry.feed = Feed.start(entry.run)
        return entry.feed

    def serve(
        self, name: str | None = None, *, host: str = "127.0.0.1", port: int = 0, auth: bool = True, rate: float = 1.0
    ) -> Any:
        """Serve a cluster to real Kafka clients over the wire protocol (started once; see ``engine.serve``).

        The server drives the cluster in real time under the run's lock, so cells, the dashboard and
        outside clients take turns on it; faults and views work on it as on any cluster.
        """
        from engine.serve import ServedCluster

        entry = self.entry(name)
        if entry.served is None:
            entry.served = ServedCluster(
                entry.cluster, host=host, port=port, auth=auth, rate=rate, guard=entry.run.lock
            ).start()
        return entry.served

    def stop_serving(self, name: str | None = None) -> bool:
        """Stop serving a cluster; return False when it was not served."""
        entry = self.entry(name)
        served = entry.served is not None
        _stop_served(entry)
        return served

    def _final_read(self, entry: ClusterEntry) -> None:
        if entry.cluster.topics:
            entry.readers += 1
            final_read(entry.cluster, f"eos-check-reader-{entry.readers}")

    # -- the catalog ------------------------------------------------------------------------

    def scenario_names(self) -> list[str]:
        """Every scenario ``eos run`` knows."""
        from engine.scenarios.registry import SCENARIOS, load_all

        load_all()
        return sorted(SCENARIOS)

    def run_scenario(self, name: str, seed: int = 7, *, mutant: str | None = None, swarm: bool = False) -> Any:
        """Run one catalog scenario; return its result view (verdict, short log, fingerprint, replay)."""
        from engine.scenarios.registry import get_scenario
        from eos_magics.views import kafka as views

        _check_int(seed, "--seed")
        if name not in self.scenario_names():
            raise unknown_name("scenario", name, self.scenario_names(), how="list them with %eos_scenario list")
        fn = get_scenario(name)
        kwargs: dict[str, Any] = {}
        if mutant or swarm:
            if not hasattr(fn, "spec"):
                raise EosUsageError(f"'{name}' takes no --mutant/--swarm; pick a catalog scenario")
            kwargs["swarm"] = swarm
            if mutant:
                kwargs["mutant"] = self._mutant(mutant)
        self.last_scenario = fn(seed, **kwargs)
        return views.scenario_result(self.last_scenario)

    # -- service databases (the outbox, sinks, sagas) --------------------------------------------

    def databases(self) -> dict[str, Any]:
        """Return the last scenario run's database files by service name (``%eos_db``)."""
        from engine.db import databases_of

        run = getattr(self.last_scenario, "extra", None)
        found = databases_of(getattr(run, "extra", None))
        if not found:
            what = "no scenario has run yet" if self.last_scenario is None else "the last scenario kept no database"
            raise EosUsageError(f"{what}; run one with a database, e.g. %eos_scenario run outbox: polling relay")
        return found

    def database(self, name: str | None) -> Any:
        """Return one database file of the last run (the only one, or by ``name``)."""
        found = self.databases()
        if name is None:
            if len(found) != 1:
                raise EosUsageError(f"the last run has {len(found)} databases; pick one with --db ({', '.join(found)})")
            return next(iter(found.values()))
        if name not in found:
            raise unknown_name("database", name, found, how="list them with %eos_db tables")
        return found[name]

    def sql(self, query: str, db: str | None = None) -> Any:
        """Run a read-only SQL query on one of the last run's databases; return a pandas DataFrame."""
        import sqlite3

        pd = require("pandas", "%eos_db sql (a pandas DataFrame)")
        if not query.strip():
            raise EosUsageError("give a query, e.g. %eos_db sql --db orders SELECT * FROM orders LIMIT 5")
        path = self.database(db)
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return pd.read_sql_query(query, conn)
        except (pd.errors.DatabaseError, sqlite3.Error) as exc:
            raise EosUsageError(f"{path.stem}: {str(exc).splitlines()[0]}") from None
        finally:
            conn.close()

    def database_tables(self) -> Any:
        """Return every table of the last run's databases with its row count (``%eos_db tables``)."""
        import sqlite3

        from eos_magics.views.base import TableView

        rows = []
        for name, path in self.databases().items():
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                query = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                for (t,) in conn.execute(query).fetchall():
                    if t.startswith("sqlite_"):
                        continue
                    n = conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
                    rows.append((name, t, n))
            finally:
                conn.close()
        text = "\n".join(f"{d:<12} {t:<20} {n:>7}" for d, t, n in rows)
        return TableView(text, ("database", "table", "rows"), rows, title="service databases of the last run")

    def check_effects(self, committed: str, effects: str) -> Any:
        """Run the database checker on ``DB:TABLE.COLUMN`` specs of the last run's databases."""
        from engine.check.effects import check_effects, read_column, summary
        from eos_magics.views.base import TableView

        def column(spec: str) -> list[Any]:
            if ":" not in spec:
                raise EosUsageError(f"expected DB:TABLE.COLUMN (e.g. orders:orders.order_id), got {spec!r}")
            name, where = spec.split(":", 1)
            try:
                return read_column(f"{self.database(name)}:{where}")
            except ValueError as exc:
                raise EosUsageError(str(exc)) from None

        committed_keys, effect_keys = column(committed), column(effects)
        try:
            found = check_effects(committed_keys, effect_keys)
        except ValueError as exc:  # two committed rows with one key: the check has no single answer
            raise EosUsageError(" ".join(str(exc).split())) from None
        counts = summary(found)
        notes = [n for n in (getattr(committed_keys, "note", ""), getattr(effect_keys, "note", "")) if n]
        head = "database side: " + ", ".join(f"{k} {n}" for k, n in counts.items())
        head += "".join(f" ({n})" for n in notes)
        rows = [(a.kind, a.values[0] if a.values else "", a.message) for a in found]
        text = "\n".join([head, *(f"  {k}: {m}" for k, _v, m in rows)])
        return TableView(text, ("kind", "key", "message"), rows, title="effects check", summary=head)

    def sweep(
        self,
        name: str,
        seeds: int = 10,
        *,
        first_seed: int = 1,
        mutant: str | None = None,
        swarm: bool = False,
        progress: Callable[[int, int, Any], None] | None = None,
    ) -> Any:
        """Run a catalog scenario (or ``all``) on many seeds; return the table of verdicts."""
        from engine.commands.sweep import run_one
        from engine.scenarios.catalog import BY_NAME, SPECS
        from eos_magics.views import kafka as views

        _check_int(seeds, "--seeds", 1)
        _check_int(first_seed, "--first-seed")
        if name == "all":
            names = [s.name for s in SPECS]
        elif name in BY_NAME:
            names = [name]
        else:
            raise unknown_name("catalog scenario", name, BY_NAME, how="or 'all'; list them with %eos_scenario list")
        if mutant:
            self._mutant(mutant)
        tasks = [
            (n, s, mutant.upper() if mutant else None, swarm)
            for n in names
            for s in range(first_seed, first_seed + seeds)
        ]
        rows = []
        for i, task in enumerate(tasks):
            rows.append(run_one(task))
            if progress is not None:
                progress(i + 1, len(tasks), rows[-1])
        return views.sweep(rows)

    @staticmethod
    def _mutant(mutant: str) -> Any:
        from engine.scenarios.mutants import MUTANTS, get_mutant

        try:
            return get_mutant(mutant)
        except KeyError:
            raise unknown_name("mutant", mutant, MUTANTS, how="list them with %eos_scenario mutants") from None

    # -- engine calls -----------------------------------------------------------------------

    @staticmethod
    def call_engine(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call the engine; its argument errors (TypeError, ValueError) become one-line usage errors.

        Kafka's named errors (``KafkaError``) and the engine's ``IllegalStateError`` pass through:
        they already render as one named line. A node fault in the wrong state (restart a running
        broker, pause a paused one) is a usage error too.
        """
        from engine.errors import ConfigError, IllegalStateError, KafkaError
        from engine.sim.node import IllegalNodeTransitionError

        try:
            return fn(*args, **kwargs)
        except (KafkaError, IllegalStateError):
            raise
        except IllegalNodeTransitionError as exc:
            raise EosUsageError(" ".join(str(exc).split())) from None
        except ConfigError as exc:
            raise EosUsageError(" ".join(str(exc).split())) from None
        except (TypeError, ValueError) as exc:
            raise EosUsageError(" ".join(str(exc).split())) from None


def cluster_config(
    brokers: int, config: Mapping[str, Any] | None = None, defaults: Defaults | None = None
) -> dict[str, Any]:
    """Return the broker configuration a new cluster gets.

    Parameters
    ----------
    brokers : int
        How many brokers the cluster has.
    config : mapping, optional
        Kafka broker settings; they win over the defaults.
    defaults : Defaults, optional
        Where ``min.insync.replicas`` and ``default.replication.factor`` come from (each at most
        ``brokers``); ``Defaults()`` when not given.

    Returns
    -------
    dict
        The configuration to build the cluster with.
    """
    d = defaults if defaults is not None else Defaults()
    cfg: dict[str, Any] = {
        "min.insync.replicas": min(d.min_insync_replicas, brokers),
        "default.replication.factor": min(d.replication_factor, brokers),
    }
    cfg.update(config or {})
    return cfg


def final_read(cluster: Cluster, client_id: str) -> None:
    """Read every partition of every topic to its end with a read_committed consumer.

    Jepsen's final reads: without them an acknowledged record that no consumer has read yet is
    reported ``unseen``. The reader is a real client of the cluster (so a cluster's
    ``ClientHistory`` records it) and moves simulated time on by its polls: it stops after three
    empty polls of one simulated second each, then closes.

    Parameters
    ----------
    cluster : Cluster
        The cluster to read; nothing happens when it has no topic.
    client_id : str
        The reader's ``client.id`` (``eos-check-reader-N`` for :meth:`Session.check`).
    """
    keys = [(t, p) for t in sorted(cluster.topics) for p in range(cluster.topics[t])]
    if not keys:
        return
    reader = cluster.consumer({"isolation.level": "read_committed", "client.id": client_id})
    reader.assign(keys)
    idle = 0
    while idle < 3:
        idle = 0 if reader.consume(1000, timeout=1.0) else idle + 1
    reader.close()


def _check_writable(path: Any) -> None:
    import os

    if not isinstance(path, (str, os.PathLike)):
        raise EosUsageError(f"a history file is a path such as 'history.jsonl', got {path!r}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise EosUsageError(f"cannot write {path}: no directory {folder}")
    if os.path.isdir(path):
        raise EosUsageError(f"cannot write {path}: it is a directory; name a file such as {path}/history.jsonl")


def _replaced_line(old: ClusterEntry, seed: int) -> str:
    """The one line that says a cluster was replaced, and what went with it."""
    gone = [*old.clients]
    lost = f"; its clients ({', '.join(gone)}) went with it" if gone else ""
    return f"cluster '{old.name}' replaced by a fresh run from seed {seed}{lost}"


def _free_node_name(entry: ClusterEntry, name: str) -> str:
    """``name``, or ``name-2``, ``name-3`` … when the cluster already has a node by that name."""
    nodes = entry.cluster.world.nodes
    if name not in nodes:
        return name
    return next(f"{name}-{i}" for i in range(2, len(nodes) + 3) if f"{name}-{i}" not in nodes)


def _kind(obj: Any) -> str:
    from engine import Consumer

    return "consumer" if isinstance(obj, Consumer) else "producer"


def _stop_served(entry: ClusterEntry) -> None:
    """Stop the wire-protocol server of ``entry``'s cluster, if one runs."""
    if entry.served is not None:
        entry.served.stop()
        entry.served = None


def _stop_feed(entry: ClusterEntry) -> None:
    """Stop the Spark feed of ``entry``'s cluster, if one runs."""
    if entry.feed is not None:
        entry.feed.stop()
        entry.feed = None
