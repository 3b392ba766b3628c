"""Topics and named clients of the current cluster: create them, find them by name, consume.

Invariants
----------
* A client's name is a Python identifier and never a cluster's; a name may come back, and its
  variable then names the new client (the old one is let go, said in one line).
* A new client is a new node of the simulated world: ``p1-2`` when ``p1`` is taken.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from eos_magics.errors import EosUsageError, unknown_name
from eos_magics.rooms.calls import call_engine, check_int, check_name
from eos_magics.rooms.entries import ClusterEntry, client_kind, free_node_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine import Consumer, Producer
    from eos_magics.rooms.clusters import Clusters
    from eos_magics.rooms.entries import Defaults

__all__ = ["Clients"]


class Clients:
    """Topics, producers and consumers of the current cluster, by name.

    Parameters
    ----------
    clusters : Clusters
        The session's clusters: the current one, and where a client's name is bound.
    defaults : Defaults
        What a new topic or consumer gets when a call does not say.
    say : callable
        Where a replaced client is told, in one line.
    """

    def __init__(self, clusters: Clusters, defaults: Defaults, say: Callable[[str], None]) -> None:
        self.clusters = clusters
        self.defaults = defaults
        self.say = say

    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        replication_factor: int | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Create a topic on the current cluster (Kafka's topic config names)."""
        c = self.clusters.cluster
        partitions = self.defaults.partitions if partitions is None else check_int(partitions, "--partitions", 1)
        if replication_factor is None:
            replication_factor = min(self.defaults.replication_factor, len(c.brokers))
        call_engine(c.create_topic, name, partitions, replication_factor, dict(config or {}))

    def require_topic(self, topic: str) -> str:
        """Return ``topic`` if it exists, else a usage error with the nearest name."""
        topics = self.clusters.cluster.topics
        if topic not in topics:
            raise unknown_name("topic", topic, topics, how="create it with %eos_topic create NAME")
        return topic

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
        entry = self.clusters.entry()
        self._new_client_name(entry, name)
        cfg = dict(config or {})
        if transactional_id is not None:
            cfg["transactional.id"] = transactional_id
        cfg.setdefault("client.id", free_node_name(entry, name))
        p = call_engine(entry.cluster.producer, cfg)
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
        from engine.config import IsolationLevel

        entry = self.clusters.entry()
        self._new_client_name(entry, name)
        level = self.defaults.isolation_level if isolation_level is None else isolation_level
        if level not in tuple(IsolationLevel):
            levels = ", ".join(tuple(IsolationLevel))
            raise EosUsageError(f"isolation level must be one of {levels}, got {level!r}")
        if assign and subscribe:
            raise EosUsageError("pass --assign or --subscribe, not both")
        if subscribe and group_id is None:
            raise EosUsageError("--subscribe needs a consumer group: add --group NAME")
        for t, p in assign or ():
            self.require_topic(t)
            if not 0 <= p < self.clusters.cluster.topics[t]:
                raise EosUsageError(f"topic '{t}' has partitions 0..{self.clusters.cluster.topics[t] - 1}, not {p}")
        for t in subscribe or ():
            self.require_topic(t)
        cfg = {"isolation.level": level, "auto.offset.reset": "earliest", "client.id": free_node_name(entry, name)}
        if group_id is not None:
            cfg["group.id"] = group_id
        cfg.update(config or {})
        c = call_engine(entry.cluster.consumer, cfg)
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
            entry = self.clusters.entry()
            obj = entry.clients.get(name)
            if obj is None:
                names = [n for n, o in entry.clients.items() if kind is None or client_kind(o) == kind]
                what = kind or "client"
                raise unknown_name(what, name, names, how=f"create one with %eos_{what if kind else 'producer'} NAME")
        if kind is not None and client_kind(obj) != kind:
            raise EosUsageError(f"'{name}' is a {client_kind(obj)}, not a {kind}")
        return obj

    def consume(self, consumer: Any, max_messages: int = 100, timeout: float = 1.0) -> Any:
        """Poll up to ``max_messages`` records, waiting at most ``timeout`` simulated seconds."""
        from eos_magics.views import kafka as views

        c = self.client(consumer, "consumer")
        check_int(max_messages, "--max", 1)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise EosUsageError(f"--timeout is simulated seconds >= 0, got {timeout!r}")
        return views.messages(c.consume(max_messages, timeout=timeout))

    def _new_client_name(self, entry: ClusterEntry, name: str) -> None:
        check_name(name, "client")
        # A name may come back, on this cluster or another (its variable then names the new
        # client: see _put_client), but never a cluster's name.
        if name in self.clusters.entries:
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
        self.clusters.bind(name, client)
        if old is None:
            return
        close = getattr(old, "close", None)
        if close is not None:
            call_engine(close)
        fate = "closed" if close is not None else "left as it is: it gets no more calls"
        self.say(
            f"'{name}' now names a new {client_kind(client)} (node {client.name}); "
            f"the old {client_kind(old)} (node {old.name}) is {fate}"
        )
