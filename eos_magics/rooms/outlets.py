"""Data out of a cluster: Arrow tables of the run, the Spark feed, the wire-protocol server.

Invariants
----------
Each reads the cluster under its run's lock and changes nothing of the run; the feed and the
server are started once per cluster and stopped with it (a fork or a reset stops them too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eos_magics.rooms.entries import stop_served

if TYPE_CHECKING:
    from eos_magics.rooms.clusters import Clusters

__all__ = ["Outlets"]


class Outlets:
    """A cluster as Arrow tables, as Spark's streaming source, and served to real Kafka clients.

    Parameters
    ----------
    clusters : Clusters
        The session's clusters; what each started beside it is kept on its entry.
    """

    def __init__(self, clusters: Clusters) -> None:
        self.clusters = clusters

    def export(self, name: str | None = None) -> Any:
        """The cluster as it is now, with its client history, as Arrow tables (``engine.export.RunExport``).

        Every replica's log, ``__transaction_state``, group offsets, HW/LSO over time (rebuilt from
        the trace), faults and the trace itself; ``docs/export-schema.md`` names every column.
        """
        from engine.export import export_cluster

        entry = self.clusters.entry(name)
        with entry.run.lock:
            return export_cluster(entry.cluster, entry.history.history(), run_id=f"{entry.name}-s{entry.seed}")

    def feed(self, name: str | None = None) -> Any:
        """The loopback feed of a cluster for Spark's ``eos`` streaming source (started once, stopped with the cluster).

        It listens on 127.0.0.1 with a random token and reads the cluster under its lock, as a
        consumer at the asked isolation level would see it, without changing the run.
        """
        from eos_magics.spark.feed import Feed

        entry = self.clusters.entry(name)
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

        entry = self.clusters.entry(name)
        if entry.served is None:
            entry.served = ServedCluster(
                entry.cluster, host=host, port=port, auth=auth, rate=rate, guard=entry.run.lock
            ).start()
        return entry.served

    def stop_serving(self, name: str | None = None) -> bool:
        """Stop serving a cluster; return False when it was not served."""
        entry = self.clusters.entry(name)
        served = entry.served is not None
        stop_served(entry)
        return served
