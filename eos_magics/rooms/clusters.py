"""A session's named clusters: build, fork, reset, delete, switch; one is *current*.

Role
----
:class:`Clusters` owns the entries by name, the current one and the namespace names are bound in;
it is handed the session's defaults and its ``say`` hook. The other rooms of
:class:`~eos_magics.session.Session` are handed this room and reach a cluster only through
:meth:`Clusters.entry` and :attr:`Clusters.cluster`, and bind a name only through
:meth:`Clusters.bind`.

Invariants
----------
* A name is either a cluster's or a client's, never both; rebuilding a cluster of a name replaces
  it, and its clients, dashboards and served ports go with it.
* With a ``namespace`` every named object is bound there under its name, and unbound when it goes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from eos_magics.errors import EosUsageError, unknown_name
from eos_magics.rooms.calls import check_int, check_name
from eos_magics.rooms.entries import ClusterEntry, Defaults, client_kind, stop_feed, stop_served

if TYPE_CHECKING:
    from engine import Cluster
    from widgets.live import LiveRun

__all__ = ["Clusters"]


class Clusters:
    """Named clusters, the current one, and where their names are bound.

    Parameters
    ----------
    namespace : dict, optional
        Where every named object is bound under its name (the kernel's ``user_ns``).
    defaults : Defaults
        What a new cluster gets when a call does not say.
    say : callable
        Where a state change that the caller did not ask to see is told, one line each (a
        replaced cluster or client); the magics print, a test may collect.
    """

    def __init__(self, *, namespace: dict[str, Any] | None, defaults: Defaults, say: Callable[[str], None]) -> None:
        self.namespace = namespace
        self.defaults = defaults
        self.say = say
        self.entries: dict[str, ClusterEntry] = {}
        self.current: str | None = None

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
        check_name(name, "cluster")
        owner = self._client_owner(name)
        if owner is not None:
            kind = client_kind(owner.clients[name])
            raise EosUsageError(f"'{name}' names a {kind} of cluster '{owner.name}'; pick another name")
        brokers = self.defaults.brokers if brokers is None else check_int(brokers, "--brokers", 1)
        seed = self.defaults.seed if seed is None else check_int(seed, "--seed")
        if config is not None and not isinstance(config, Mapping):
            raise EosUsageError(f"config must be a dict of Kafka broker settings, got {config!r}")
        from engine.config import cluster_config

        d = self.defaults
        cfg = cluster_config(
            brokers, config, min_insync_replicas=d.min_insync_replicas, replication_factor=d.replication_factor
        )
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
        self.bind(name, cluster)
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
        check_int(event_index, "event index", 0)
        return self.fork_entry(entry, event_index)[1]

    def fork_entry(self, entry: ClusterEntry, event_index: int) -> tuple[LiveRun, int]:
        """Fork ``entry``'s run at ``event_index`` and point the entry and the namespace at it."""
        from engine.check.client_history import ClientHistory

        histories: list[ClientHistory] = []
        run, stop = entry.run.fork(event_index, setup=lambda c: histories.append(ClientHistory.attach(c)))
        old = entry.cluster
        stop_feed(entry)  # it serves the old cluster; the next stream starts one on the fork
        stop_served(entry)  # real clients were talking to the old cluster; serve the fork again to go on
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
            kwargs["rate"] = check_int(rate, "--rate", 1)
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

    def _client_owner(self, name: str) -> ClusterEntry | None:
        return next((e for e in self.entries.values() if name in e.clients), None)

    def bind(self, name: str, obj: Any) -> None:
        """Bind ``obj`` under ``name`` in the namespace, when the session has one."""
        if self.namespace is not None:
            self.namespace[name] = obj

    def _forget(self, entry: ClusterEntry) -> None:
        for dash in entry.dashboards:
            dash.close()
        entry.dashboards.clear()
        stop_feed(entry)
        stop_served(entry)
        if self.namespace is None:
            return
        for name, obj in [(entry.name, entry.cluster), *entry.clients.items()]:
            if self.namespace.get(name) is obj:
                del self.namespace[name]


def _replaced_line(old: ClusterEntry, seed: int) -> str:
    """The one line that says a cluster was replaced, and what went with it."""
    gone = [*old.clients]
    lost = f"; its clients ({', '.join(gone)}) went with it" if gone else ""
    return f"cluster '{old.name}' replaced by a fresh run from seed {seed}{lost}"
