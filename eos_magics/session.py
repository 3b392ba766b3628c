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

``Session`` is the one public entry point, composed of rooms of one concern each
(:mod:`eos_magics.rooms`): the clusters, their topics and clients, producing and transactions,
faults and time, the judge, data out (export, feed, serve), the scenario catalog, and the last
run's service databases.

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

from collections.abc import Callable
from typing import Any

from eos_magics.rooms.catalog import Catalog
from eos_magics.rooms.databases import Databases
from eos_magics.rooms.entries import ClusterEntry, Defaults
from eos_magics.rooms.faults import TimeAndFaults
from eos_magics.rooms.judge import Judge
from eos_magics.rooms.outlets import Outlets
from eos_magics.rooms.producing import Producing

__all__ = ["ClusterEntry", "Defaults", "Session"]


class Session(Producing, TimeAndFaults, Judge, Outlets, Catalog, Databases):
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
        self.say = say
        self.entries: dict[str, ClusterEntry] = {}
        self.current: str | None = None
        self.last_scenario: Any = None

    def __repr__(self) -> str:
        names = ", ".join(self.entries) or "none"
        return f"Session(clusters: {names}; current: {self.current or 'none'})"
