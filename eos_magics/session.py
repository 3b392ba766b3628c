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

``Session`` is the one public entry point. It is composed of rooms it holds (:mod:`eos_magics.rooms`),
each an object that owns its state and is handed the rooms it needs when it is built:

* ``Clusters`` (the named clusters, the current one, the namespace): the room every other is handed;
* ``Clients`` (topics and named clients) and ``Producing`` (records and transactions);
* ``TimeAndFaults`` (faults and simulated time), ``Judge`` (histories and the EOS check),
  ``Outlets`` (export, the Spark feed, serving);
* ``Catalog`` (scenarios and sweeps; it keeps the last run) and ``Databases`` (that run's
  service databases, handed the catalog).

Each public method of a ``Session`` names the room that answers it (the table in the class body);
nothing is forwarded by name at run time.

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

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from eos_magics.rooms.calls import call_engine
from eos_magics.rooms.catalog import Catalog
from eos_magics.rooms.clients import Clients
from eos_magics.rooms.clusters import Clusters
from eos_magics.rooms.databases import Databases
from eos_magics.rooms.entries import ClusterEntry, Defaults
from eos_magics.rooms.faults import TimeAndFaults
from eos_magics.rooms.judge import Judge
from eos_magics.rooms.outlets import Outlets
from eos_magics.rooms.producing import Producing

__all__ = ["ClusterEntry", "Defaults", "Session"]

P = ParamSpec("P")
R = TypeVar("R")


def _answered_by(room: str, method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Session, P], R]:
    """A method of :class:`Session` that calls ``method`` on the room the session holds as ``room``.

    The room's docstring and signature are the method's (``help(Session.produce)`` shows them).
    """

    @functools.wraps(method)
    def call(self: Session, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, room), *args, **kwargs)

    return call


class Session:
    """Named clusters, their named clients and histories; what every magic calls.

    Parameters
    ----------
    namespace : dict, optional
        The kernel's ``user_ns``: every named object is bound there under its name.
    defaults : Defaults, optional
        What a new cluster, topic or consumer gets when a call does not say.
    say : callable
        Where a state change the caller did not ask to see is told, one line each.
    """

    def __init__(
        self,
        *,
        namespace: dict[str, Any] | None = None,
        defaults: Defaults | None = None,
        say: Callable[[str], None] = print,
    ) -> None:
        self.defaults = defaults if defaults is not None else Defaults()
        self.say = say
        self._clusters = Clusters(namespace=namespace, defaults=self.defaults, say=say)
        self._clients = Clients(self._clusters, self.defaults, say)
        self._producing = Producing(self._clusters, self._clients, say)
        self._faults = TimeAndFaults(self._clusters)
        self._judge = Judge(self._clusters)
        self._outlets = Outlets(self._clusters)
        self._catalog = Catalog()
        self._databases = Databases(self._catalog)

    def __repr__(self) -> str:
        names = ", ".join(self.entries) or "none"
        return f"Session(clusters: {names}; current: {self.current or 'none'})"

    #: Call the engine; its argument errors become one-line usage errors (:mod:`eos_magics.rooms.calls`).
    call_engine = staticmethod(call_engine)

    @property
    def namespace(self) -> dict[str, Any] | None:
        """Where every named object is bound (the kernel's ``user_ns``), or None."""
        return self._clusters.namespace

    @property
    def entries(self) -> dict[str, ClusterEntry]:
        """The named clusters' entries, by name."""
        return self._clusters.entries

    @property
    def current(self) -> str | None:
        """The current cluster's name, or None before the first."""
        return self._clusters.current

    @property
    def cluster(self) -> Any:
        """The current cluster (``engine.Cluster``)."""
        return self._clusters.cluster

    @property
    def last_scenario(self) -> Any:
        """The last catalog scenario run (``%eos_db`` reads its databases), or None."""
        return self._catalog.last_scenario

    # -- which room answers each call ---------------------------------------------------------

    create_cluster = _answered_by("_clusters", Clusters.create_cluster)
    fork = _answered_by("_clusters", Clusters.fork)
    fork_entry = _answered_by("_clusters", Clusters.fork_entry)
    dashboard = _answered_by("_clusters", Clusters.dashboard)
    reset_cluster = _answered_by("_clusters", Clusters.reset_cluster)
    delete_cluster = _answered_by("_clusters", Clusters.delete_cluster)
    use = _answered_by("_clusters", Clusters.use)
    entry = _answered_by("_clusters", Clusters.entry)
    bind = _answered_by("_clusters", Clusters.bind)
    close = _answered_by("_clusters", Clusters.close)

    create_topic = _answered_by("_clients", Clients.create_topic)
    require_topic = _answered_by("_clients", Clients.require_topic)
    producer = _answered_by("_clients", Clients.producer)
    consumer = _answered_by("_clients", Clients.consumer)
    client = _answered_by("_clients", Clients.client)
    consume = _answered_by("_clients", Clients.consume)

    produce = _answered_by("_producing", Producing.produce)
    transactional = _answered_by("_producing", Producing.transactional)
    transaction = _answered_by("_producing", Producing.transaction)

    node = _answered_by("_faults", TimeAndFaults.node)
    fault = _answered_by("_faults", TimeAndFaults.fault)
    cut = _answered_by("_faults", TimeAndFaults.cut)
    message_rule = _answered_by("_faults", TimeAndFaults.message_rule)
    release = _answered_by("_faults", TimeAndFaults.release)
    run = _answered_by("_faults", TimeAndFaults.run)
    step = _answered_by("_faults", TimeAndFaults.step)
    until = _answered_by("_faults", TimeAndFaults.until)

    history = _answered_by("_judge", Judge.history)
    save_history = _answered_by("_judge", Judge.save_history)
    check = _answered_by("_judge", Judge.check)

    export = _answered_by("_outlets", Outlets.export)
    feed = _answered_by("_outlets", Outlets.feed)
    serve = _answered_by("_outlets", Outlets.serve)
    stop_serving = _answered_by("_outlets", Outlets.stop_serving)

    scenario_names = _answered_by("_catalog", Catalog.scenario_names)
    run_scenario = _answered_by("_catalog", Catalog.run_scenario)
    sweep = _answered_by("_catalog", Catalog.sweep)

    databases = _answered_by("_databases", Databases.databases)
    database = _answered_by("_databases", Databases.database)
    sql = _answered_by("_databases", Databases.sql)
    database_tables = _answered_by("_databases", Databases.database_tables)
    check_effects = _answered_by("_databases", Databases.check_effects)
