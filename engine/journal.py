"""Journal: every application call on a cluster, with the moment it applied; replay and fork.

Role
----
A notebook session drives a cluster by hand: magics, dashboard buttons, plain Python calls on
the producers and consumers. The run then depends on *when* each call happened, not only on the
seed. A :class:`Journal` records each call the application makes on the cluster and its clients
(the target, the method, the arguments, the trace index and simulated time at which it started
and ended, and the exception it raised, if any). :meth:`Journal.replay` builds a new cluster with
the same seed and configuration and makes the same calls at the same trace indexes: the run is
rebuilt event for event, with the same fingerprint. :meth:`Journal.fork` replays only up to an
event, so a user who scrubbed back can act from there (the dashboard's "acting while rewound").

How calls are seen
------------------
:meth:`Journal.new_cluster` builds the cluster and wraps, on the instance only, every
application call (:data:`API`) of the cluster, of each client it creates (producers, consumers,
the admin client) and of ``cluster.transactions()``. A wrapper records the outermost call only:
calls a method makes on other wrapped methods (``commit_transaction`` flushing, a delivery callback producing) happen
again by themselves on replay. ``run_until(predicate)`` is replayed as "run until the trace holds
as many events as it did", so the predicate, which may name objects of the old run, is never
called again. Every wrapped call runs inside :attr:`Journal.guard`, a context manager the
notebook layer sets to its lock so a pacer thread and the kernel's cells never drive the engine
at once, and tells :attr:`Journal.listeners` when it starts and ends (a recorder follows the
client the call changes between events).

Invariants
----------
* Recording never changes the run: same trace and fingerprint with or without a journal.
* Replay checks itself: each call must start at its recorded trace index and end at its recorded
  index with the same outcome, or :class:`ReplayDiverged` says which call parted and how.
* Deterministic: no clock, no randomness; entries are kept in call order.

What it does not do
-------------------
Calls made on engine objects it did not wrap (``cluster.world``, a broker node) are not recorded,
so a run driven that way does not replay. A callback that closes over a client of the recorded
run (``lambda err, msg: p.produce(...)``) cannot be pointed at the new run's client: replay refuses
that call, changes nothing of the recorded run, and raises :class:`ReplayDiverged` saying so.
Arguments are kept as the objects passed (callbacks included); the journal is replayed in the
same process, not written to a file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from engine import args as argcheck

if TYPE_CHECKING:
    from engine.cluster import Cluster

#: The application calls recorded, per kind of object: every call that can change the cluster or
#: move time. Reads of local state (views, metrics, assignment) are left out: they change nothing.
API: dict[str, frozenset[str]] = {
    "cluster": frozenset(
        {
            "create_topic",
            "producer",
            "consumer",
            "run_for",
            "run_until",
            "step",
            "crash",
            "restart",
            "pause",
            "resume",
            "partition",
            "isolate",
            "heal",
            "add_rule",
            "remove_rule",
            "release",
            "schedule_faults",
            "transactions",
            "admin",
        }
    ),
    "producer": frozenset(
        {
            "produce",
            "produce_batch",
            "poll",
            "flush",
            "purge",
            "close",
            "init_transactions",
            "begin_transaction",
            "send_offsets_to_transaction",
            "commit_transaction",
            "abort_transaction",
        }
    ),
    "consumer": frozenset(
        {
            "assign",
            "incremental_assign",
            "incremental_unassign",
            "unassign",
            "seek",
            "position",
            "pause",
            "resume",
            "poll",
            "consume",
            "get_watermark_offsets",
            "close",
            "subscribe",
            "unsubscribe",
            "commit",
            "store_offsets",
            "committed",
        }
    ),
    # Describing and listing cross the simulated network to the node that answers (a request moves
    # time), so they are recorded like any call that changes the run.
    "admin": frozenset(
        {
            "abort_transaction",
            "abort_spec",
            "list_transactions",
            "describe_transaction",
            "describe_producers",
            "find_hanging",
        }
    ),
    "transactions": frozenset({"abort", "list", "describe", "describe_producers", "find_hanging"}),
}
#: The target name of ``cluster.transactions()``'s admin client (made on first use, so found by path).
TRANSACTIONS_CLIENT = "transactions.client"
#: Cluster calls whose result is an object to record calls on as well.
_ADOPTS = frozenset({"producer", "consumer", "transactions", "admin"})


class ReplayDiverged(RuntimeError):  # noqa: N818 - says what happened to the replay
    """A replayed call did not start, end or fail as it did in the recorded run."""


@dataclasses.dataclass(slots=True)
class Entry:
    """One application call: where it went, and the trace index and time it started and ended."""

    target: str
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    start_index: int
    start_ms: int
    end_index: int = -1
    end_ms: int = -1
    #: The name of the exception the call raised, or None.
    error: str | None = None

    def describe(self) -> str:
        """Return the call as one line, e.g. ``producer-1.produce('orders', value=b'v') @ event 812``."""
        shown = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        text = ", ".join(shown)
        if len(text) > 80:
            text = text[:77] + "..."
        return f"{self.target}.{self.method}({text}) @ event {self.start_index}, t={self.start_ms} ms"


class Journal:
    """The calls made on one cluster (see the module docstring); build one with :meth:`new_cluster`.

    Parameters
    ----------
    cluster
        The cluster whose calls are recorded from now on (its application calls are wrapped here).
    cluster_kwargs
        The arguments it was built with, which :meth:`replay` builds the new run's cluster from.
    replayable
        False for a cluster built elsewhere (:meth:`attach`): its calls are recorded, not replayed.
    """

    def __init__(self, cluster: Cluster, cluster_kwargs: dict[str, Any], *, replayable: bool = True) -> None:
        self.cluster_kwargs = dict(cluster_kwargs)
        self.entries: list[Entry] = []
        self.cluster = cluster
        #: Entered around every recorded call (the notebook layer sets a lock here).
        self.guard: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        #: Told of every outermost call: ``on_call_start(entry)`` before it runs and
        #: ``on_call_end(entry)`` after it returns or raises (a recorder follows the client
        #: a call changes between events); a listener with ``on_nested_call(target)`` also
        #: hears of the calls made inside one (callbacks), which are not recorded.
        self.listeners: list[Any] = []
        self._depth = 0
        self._wrapped: dict[int, Any] = {}
        #: Set while this journal is being replayed: a call on its objects then comes from a
        #: replayed callback that closes over them (see :meth:`_replay`).
        self._replaying = False
        self._foreign_call: str | None = None
        #: False for a journal attached to a cluster it did not build (:meth:`attach`).
        self.replayable = replayable
        self._wrap(cluster, "cluster", "cluster")

    # -- building ----------------------------------------------------------------------------

    @classmethod
    def new_cluster(cls, *, observers: Iterable[Any] = (), **cluster_kwargs: Any) -> tuple[Cluster, Journal]:
        """Build ``Cluster(**cluster_kwargs)`` with a journal recording it from its first call."""
        from engine.cluster import Cluster

        if "observers" in cluster_kwargs:  # pragma: no cover - keyword-only above
            raise TypeError("pass observers to new_cluster() itself")
        cluster = Cluster(**cluster_kwargs, observers=observers)
        return cluster, cls(cluster, cluster_kwargs)

    @classmethod
    def attach(cls, cluster: Cluster) -> Journal:
        """Record the calls on a cluster built elsewhere (a scenario's), from now on.

        Such a journal tells its listeners of every call, but cannot replay: it does not know the
        arguments the cluster was built with (:meth:`new_cluster` does).
        """
        return cls(cluster, {}, replayable=False)

    def _wrap(self, obj: Any, target: str, kind: str) -> None:
        if id(obj) in self._wrapped:
            return
        self._wrapped[id(obj)] = obj
        for name in sorted(API[kind]):
            bound = getattr(obj, name, None)
            if bound is not None:
                setattr(obj, name, self._wrapper(target, name, bound))

    def _wrapper(self, target: str, method: str, bound: Callable[..., Any]) -> Callable[..., Any]:
        adopts = target == "cluster" and method in _ADOPTS

        @functools.wraps(bound)
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._replaying:
                self._foreign_call = f"{target}.{method}()"
                msg = f"{target}.{method}() of the recorded run was called while replaying it"
                raise ReplayDiverged(msg)
            if self._depth:
                for listener in self.listeners:
                    nested = getattr(listener, "on_nested_call", None)
                    if nested is not None:
                        nested(target)
                result = bound(*args, **kwargs)
            else:
                with self.guard:
                    result = self._record(target, method, bound, args, kwargs)
            return self.adopt(result) if adopts else result

        return call

    def _record(self, target: str, method: str, bound: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        cluster = self.cluster
        trace = cluster.world.trace
        entry = Entry(target, method, args, kwargs, trace.count, cluster.now_ms)
        for listener in self.listeners:
            listener.on_call_start(entry)
        self._depth += 1
        try:
            return bound(*args, **kwargs)
        except BaseException as exc:
            entry.error = type(exc).__name__
            raise
        finally:
            self._depth -= 1
            entry.end_index, entry.end_ms = trace.count, cluster.now_ms
            self.entries.append(entry)
            for listener in self.listeners:
                listener.on_call_end(entry)

    def adopt(self, result: Any) -> Any:
        """Wrap a client or admin object of this journal's cluster, so its calls are recorded too; return it.

        The cluster's calls that return one (:data:`API`'s ``producer``, ``consumer``, ``admin``,
        ``transactions``) adopt it themselves; anything else is returned as it is.
        """
        from engine.admin import AdminClient, TransactionsAdmin
        from engine.client.consumer import Consumer
        from engine.client.producer import Producer

        if isinstance(result, Producer):
            self._wrap(result, result.name, "producer")
        elif isinstance(result, Consumer):
            self._wrap(result, result.name, "consumer")
        elif isinstance(result, AdminClient):
            self._wrap(result, result.name, "admin")
        elif isinstance(result, TransactionsAdmin):
            self._wrap(result, "transactions", "transactions")
            client = result.existing_client
            if client is not None:
                self._adopt_transactions_client(client)
            else:  # made later, on first use: wrapped then
                result.on_client_made = self._adopt_transactions_client
        return result

    def _adopt_transactions_client(self, client: Any) -> Any:
        """Wrap the admin client of ``cluster.transactions()``, named by how a replay finds it again."""
        self._wrap(client, TRANSACTIONS_CLIENT, "admin")
        return client

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.entries)

    def lines(self) -> list[str]:
        """Return every entry as one line (see :meth:`Entry.describe`)."""
        return [e.describe() + (f" -> {e.error}" if e.error else "") for e in self.entries]

    # -- replay and fork ---------------------------------------------------------------------

    def replay(
        self,
        *,
        observers: Iterable[Any] = (),
        listeners: Iterable[Any] = (),
        setup: Callable[[Cluster], Any] | None = None,
    ) -> tuple[Cluster, Journal]:
        """Rebuild the whole run in a new cluster (with its own journal); same fingerprint.

        ``observers`` watch the new cluster from its first event, ``listeners`` are the new
        journal's from its first call (a recorder is both); ``setup(cluster)`` runs once it is
        built, before the first call is replayed (a client history attaches there).
        """
        return self._replay(None, observers, listeners, setup)

    def fork(
        self,
        event_index: int,
        *,
        observers: Iterable[Any] = (),
        listeners: Iterable[Any] = (),
        setup: Callable[[Cluster], Any] | None = None,
    ) -> tuple[Cluster, Journal, int]:
        """Rebuild the run up to the board after ``event_index`` and stop there.

        Returns the new cluster, its journal and the index it stopped after. The stop is the end
        of the handler that emitted ``event_index`` (see :mod:`engine.views.recorder`), so the
        new cluster's board equals the recorded board at that index. An event inside a client
        call that waits (``flush``, ``commit_transaction`` ...) cannot be stopped at: the fork
        then stops before that call, at the index it started from.
        """
        argcheck.check_int(event_index, "event_index", minimum=0)
        return self._replay(event_index, observers, listeners, setup)  # type: ignore[return-value]

    def _replay(
        self,
        stop: int | None,
        observers: Iterable[Any],
        listeners: Iterable[Any],
        setup: Callable[[Cluster], Any] | None,
    ) -> Any:
        if not self.replayable:
            msg = "this journal was attached to a cluster built elsewhere: it records calls but cannot replay them"
            raise ReplayDiverged(msg)
        cluster, journal = Journal.new_cluster(observers=observers, **self.cluster_kwargs)
        journal.listeners.extend(listeners)
        if setup is not None:
            setup(cluster)
        self._replaying, self._foreign_call = True, None
        try:
            return self._replay_entries(cluster, journal, stop)
        finally:
            self._replaying = False

    def _replay_entries(self, cluster: Cluster, journal: Journal, stop: int | None) -> Any:
        trace = cluster.world.trace
        for entry in self.entries:
            if stop is not None and entry.start_index > stop + 1:
                break
            if stop is not None and entry.end_index > stop + 1:  # the call runs past the stop
                if entry.method in ("run_for", "run_until", "step") and entry.target == "cluster":
                    _catch_up(cluster, journal, stop + 1, entry)
                    return cluster, journal, trace.count - 1
                _catch_up(cluster, journal, entry.start_index, entry)
                return cluster, journal, trace.count - 1
            _catch_up(cluster, journal, entry.start_index, entry)
            try:
                _replay_entry(journal, entry)
            finally:
                self._check_foreign(entry)
        if stop is not None:
            return cluster, journal, trace.count - 1
        return cluster, journal

    def _check_foreign(self, entry: Entry) -> None:
        """Raise if a replayed callback reached for an object of the recorded run (refused, nothing changed)."""
        if self._foreign_call is not None:
            msg = (
                f"replay stopped at {entry.describe()}: a callback it runs called {self._foreign_call} on an "
                "object of the recorded run (the callback closes over it), and a replay cannot point it at the "
                "new run's objects; nothing of the recorded run was changed. Let callbacks use what they are "
                "given (the message, the consumer), or look clients up by name"
            )
            self._foreign_call = None
            raise ReplayDiverged(msg)


def _replay_entry(journal: Journal, entry: Entry) -> None:
    """Make one recorded call on the cluster of ``journal`` (the new run's) and check it ended as recorded."""
    cluster = journal.cluster
    trace = cluster.world.trace
    if entry.method == "run_until" and entry.target == "cluster":
        _catch_up(cluster, journal, entry.end_index, entry)
        return
    target = _resolve(cluster, entry.target, journal)
    error = None
    try:
        getattr(target, entry.method)(*entry.args, **entry.kwargs)
    except Exception as exc:
        error = type(exc).__name__
    if error != entry.error or trace.count != entry.end_index or cluster.now_ms != entry.end_ms:
        msg = (
            f"replay diverged at {entry.describe()}: recorded end event {entry.end_index} at "
            f"{entry.end_ms} ms ({entry.error or 'no error'}), replayed {trace.count} at {cluster.now_ms} ms "
            f"({error or 'no error'})"
        )
        raise ReplayDiverged(msg)


def _resolve(cluster: Cluster, target: str, journal: Journal) -> Any:
    if target == "cluster":
        return cluster
    if target in ("transactions", TRANSACTIONS_CLIENT):
        # the unwrapped call: the lookup itself is no call of the replayed run
        admin = journal.adopt(getattr(cluster.transactions, "__wrapped__", cluster.transactions)())
        return admin if target == "transactions" else admin.client
    return cluster.world.node(target)


def _catch_up(cluster: Cluster, journal: Journal, count: int, entry: Entry) -> None:
    """Run scheduled events until the trace holds ``count`` events (recorded as ``run_until``)."""
    trace = cluster.world.trace
    if trace.count > count:
        msg = f"replay diverged before {entry.describe()}: the trace already holds {trace.count} events"
        raise ReplayDiverged(msg)
    if trace.count < count:
        cluster.run_until(lambda: trace.count >= count)
