"""A session's named cluster (:class:`ClusterEntry`) and what a new cluster, topic or consumer gets (:class:`Defaults`).

Invariants
----------
An entry keeps how its cluster was built (brokers, seed, config), so a reset rebuilds the same
run; what it started beside the cluster (dashboards, the Spark feed, a wire-protocol server) is
stopped with it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine import Cluster
    from engine.check.client_history import ClientHistory
    from widgets.live import LiveRun

__all__ = ["ClusterEntry", "Defaults", "client_kind", "free_node_name", "stop_feed", "stop_served"]


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


def free_node_name(entry: ClusterEntry, name: str) -> str:
    """``name``, or ``name-2``, ``name-3`` … when the cluster already has a node by that name."""
    nodes = entry.cluster.world.nodes
    if name not in nodes:
        return name
    return next(f"{name}-{i}" for i in range(2, len(nodes) + 3) if f"{name}-{i}" not in nodes)


def client_kind(obj: Any) -> str:
    """``consumer`` or ``producer``: what a named client is."""
    from engine import Consumer

    return "consumer" if isinstance(obj, Consumer) else "producer"


def stop_served(entry: ClusterEntry) -> None:
    """Stop the wire-protocol server of ``entry``'s cluster, if one runs."""
    if entry.served is not None:
        entry.served.stop()
        entry.served = None


def stop_feed(entry: ClusterEntry) -> None:
    """Stop the Spark feed of ``entry``'s cluster, if one runs."""
    if entry.feed is not None:
        entry.feed.stop()
        entry.feed = None
