"""Recorder: the board (:mod:`engine.views.board`) after any trace event, exact, without re-running.

Role
----
Time travel for the dashboard. A :class:`Recorder` watches a run and keeps, for every row of the
board, the list of its changes with the trace index at which each happened (copy on change:
a row that did not change costs nothing). :meth:`Recorder.at` rebuilds the whole board as it was
after any event by a binary search per row, so a scrubber can jump anywhere in a run of millions
of events without re-running it. The partition logs are kept as one list of batches per
partition, each with the index that added it and the index that truncated it away.

What "after event i" means
--------------------------
The engine changes state only inside a scheduled event (one handler of one node, which may emit
several trace events) or inside an application call between events. The board after event ``i``
is the state when the handler (or the call) that emitted event ``i`` returned, together with
the application calls that emitted no event before event ``i + 1`` (a ``produce`` that only
queued a record). Events emitted by one handler share one board; that is the finest grain at
which the engine's state is ever whole. Two rules keep this the same as a replay stopped after
event ``i`` (:meth:`engine.journal.Journal.fork`): a handler that emits no event shows its
changes with the next event, and so does the part of a waiting call (``commit_transaction``)
that ran before the call's first event.

How it knows what changed
-------------------------
* ``after_step(world, callback)``: the node whose handler ran (``callback.__self__``) is dirty.
* ``on_event``: a client's event makes the client dirty; a fault makes everything dirty;
  leadership, ISR, topic and broker-registration events make every partition and broker row
  dirty; ``__transaction_state`` writes, loads and completions make the transaction rows dirty;
  the coordinators' group and offset-commit events, and leadership moves, the group rows.
* The outside clients of a served cluster (``cluster.outside_clients``): read again at a flush
  when their version moved (a connection's request was answered).
* ``on_offsets(replica)``: that partition is dirty (an append, truncation, HW, LSO or
  leader-epoch move); for a ``__transaction_state`` replica, the transaction rows; the group
  rows for any replica (a HW move changes a group's lag).
* Application calls (``produce``, ``commit_transaction``, ``crash`` ...) change clients between
  events, also in the middle of a call that waits. Given as a listener to the cluster's
  :class:`~engine.journal.Journal`, the recorder follows the called client while the call runs
  (``on_call_start``: after each handler it compares the few fields application code changes,
  :func:`~engine.views.board.app_signature`), reads the client a callback calls
  (``on_nested_call``), and everything dirty when the call ends (``on_call_end``);
  :meth:`Recorder.sync` does the latter by hand.

After each handler the dirty rows are read again (:mod:`engine.views.board`) and stored only if
they differ from their last value. tests/unit/views/test_views_recorder.py reads the whole board
live after every handler of faulty runs and checks it equals :meth:`Recorder.at`.

Invariants
----------
* Watching never changes the run: same trace, same fingerprint with or without a recorder.
* It reads no clock and draws nothing; its memory grows with the number of row changes.

What it does not do
-------------------
It does not record before it is bound to its cluster (``Cluster(observers=[Recorder()])`` binds
before the startup; ``Recorder.attach(cluster)`` binds later and starts from that moment).
Internal topics' partitions are not recorded (see :mod:`engine.views.board`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING, Any

from engine import trace_events as events
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from engine.views import board
from engine.views.board import LOG_TAIL, BoardState, LogTail

if TYPE_CHECKING:
    from engine.broker.replica import Replica
    from engine.log.records import RecordBatch
    from engine.sim.trace import TraceEvent
    from engine.sim.world import World
    from engine.views.lookup import ClientsCluster

_INTERNAL = (TRANSACTION_STATE_TOPIC, CONSUMER_OFFSETS_TOPIC)

#: Events after which every partition row is read again (leadership, ISR, topics, brokers).
_PARTITION_EVENTS = frozenset(
    {
        events.TOPIC_CREATE,
        events.ELECTION_CLEAN,
        events.ELECTION_UNCLEAN,
        events.ELECTION_NONE,
        events.ISR_CHANGE,
        events.REPLICA_LEADER,
        events.REPLICA_FOLLOWER,
        events.REPLICA_TRUNCATE,
        events.BROKER_FENCE,
        events.BROKER_REGISTER,
        events.BROKER_REREGISTER,
        events.PRODUCER_EXPIRED,
    }
)
#: Events after which the ``__transaction_state`` rows are read again.
_TXN_EVENTS = frozenset(
    {
        events.TXN_STATE_WRITE,
        events.COORDINATOR_LOADED,
        events.TXN_COMPLETE,
        events.REPLICA_LEADER,
        events.REPLICA_FOLLOWER,
    }
)

#: A transactional client's own events: where each of its transactions begins and ends.
CLIENT_TXN_EVENTS = frozenset({events.TXN_INIT, events.TXN_BEGIN, events.TXN_COMMIT, events.TXN_ABORT})

#: Event name prefixes after which the consumer group rows are read again (the coordinators' group,
#: offset-commit and KIP-848 events).
_GROUP_PREFIXES = ("group.", "offset_commit", "txn_offset_commit", "consumer_group")

_MISSING = object()


class Series:
    """The changes of one value: ``(index, value)`` pairs, index ascending, no repeats."""

    __slots__ = ("indexes", "values")

    def __init__(self) -> None:
        self.indexes: list[int] = []
        self.values: list[Any] = []

    def set(self, index: int, value: Any) -> None:
        """Record ``value`` as of ``index`` if it differs from the last one recorded."""
        values = self.values
        if values and values[-1] == value:
            return
        if self.indexes and self.indexes[-1] == index:
            values[-1] = value  # a later read within the same index wins
            if len(values) > 1 and values[-2] == value:
                values.pop()
                self.indexes.pop()
            return
        self.indexes.append(index)
        values.append(value)

    def at(self, index: int) -> tuple[Any, int]:
        """Return ``(value, changed_at)`` as of ``index``, or ``(_MISSING, -1)`` before the first."""
        i = bisect_right(self.indexes, index)
        if i == 0:
            return _MISSING, -1
        return self.values[i - 1], self.indexes[i - 1]

    def __len__(self) -> int:
        return len(self.indexes)


class _LogTrack:
    """One partition's leader log over time: every batch with the index that added and removed it."""

    __slots__ = ("_last", "added", "batches", "live", "removals", "removed")

    def __init__(self) -> None:
        self.added: list[int] = []
        self.removed: list[int] = []
        self.batches: list[RecordBatch] = []
        #: Positions (into the lists above) of the batches in the log now, in offset order.
        self.live: list[int] = []
        #: The index of every truncation, in order.
        self.removals: list[int] = []
        #: The last tail read: (position, truncations up to its index, the tail); see :meth:`tail`.
        self._last: tuple[int, int, tuple[RecordBatch, ...]] = (-1, -1, ())

    def reconcile(self, index: int, now: list[RecordBatch]) -> None:
        """Make the live batches equal ``now``: truncate where they part, then append the rest."""
        live, batches = self.live, self.batches
        k = min(len(live), len(now))
        while k > 0 and batches[live[k - 1]] is not now[k - 1]:
            k -= 1
        if k == len(live) == len(now):
            return
        if k < len(live):
            self.removals.append(index)
        for pos in live[k:]:
            self.removed[pos] = index
        del live[k:]
        for b in now[k:]:
            live.append(len(batches))
            batches.append(b)
            self.added.append(index)
            self.removed.append(1 << 62)

    def tail(self, index: int) -> tuple[RecordBatch, ...]:
        """Return the newest :data:`LOG_TAIL` batches of the log as of ``index``."""
        top = pos = bisect_right(self.added, index) - 1
        cut = bisect_right(self.removals, index)
        last_top, last_cut, last = self._last
        if top == last_top and cut == last_cut:  # the same batches added and removed by then: the same tail
            return last
        out: list[RecordBatch] = []
        removed, batches = self.removed, self.batches
        while pos >= 0 and len(out) < LOG_TAIL:
            if removed[pos] > index:
                out.append(batches[pos])
            pos -= 1
        out.reverse()
        tail = tuple(out)
        self._last = (top, cut, tail)
        return tail


class Recorder:
    """Keep every board row's changes; rebuild the board after any event (see the module docstring).

    Use ``Cluster(observers=[Recorder()])`` to record from the first event, or
    ``Recorder.attach(cluster)`` to start now.
    """

    def __init__(self) -> None:
        self.cluster: ClientsCluster | None = None
        self._series: dict[tuple[str, Any], Series] = {}
        self._logs: dict[tuple[str, int], _LogTrack] = {}
        #: client name -> "producer" or "consumer" (a broker's changes come through its events)
        self._kind: dict[str, str] = {}
        self._clients_seen = (0, 0)
        self._dirty_nodes: set[str] = set()
        self._dirty_partitions: set[tuple[str, int]] = set()
        self._all_partitions = False
        self._brokers = False
        self._txns = False
        self._groups = False
        self._controller = False
        #: The version of the cluster's outside clients last read (-1: none yet).
        self._outside_seen = -1
        #: The trace index at which the running application call started (-1: none running),
        #: the client it runs on, and that client's :func:`~engine.views.board.app_signature`.
        self._call_start = -1
        self._call_target = ""
        self._call_sig: tuple[Any, ...] | None = None
        #: The index of every flush that recorded a board, ascending (handler and call ends).
        self._flushes: list[int] = []
        #: The index of the first board this recorder holds.
        self.first_index = -1
        #: The index of the latest board.
        self.last_index = -1
        #: The clients' transaction events (init, begin, commit, abort) and every fault event seen,
        #: in trace order: the dashboard reads these, not the whole trace, every tick.
        self.txn_events: list[TraceEvent] = []
        self.fault_events: list[TraceEvent] = []
        #: The index of the first event this recorder saw (:meth:`attach` starts later than 0).
        self.seen_from = 0

    # -- binding ------------------------------------------------------------------------------

    @classmethod
    def attach(cls, cluster: ClientsCluster) -> Recorder:
        """Start recording ``cluster`` now (its board from this moment on)."""
        rec = cls()
        rec.seen_from = cluster.world.trace.count
        cluster.world.attach(rec)
        rec.on_cluster(cluster)
        return rec

    def detach(self) -> None:
        """Stop watching (what was recorded stays readable)."""
        if self.cluster is not None and self in self.cluster.world.trace.observers:
            self.cluster.world.detach(self)

    def on_cluster(self, cluster: ClientsCluster) -> None:
        """Bind to the cluster (called by ``Cluster`` before its startup runs) and read everything."""
        if self.cluster is not None:
            msg = "this recorder already records a cluster; make a new Recorder for another"
            raise ValueError(msg)
        self.cluster = cluster
        self.first_index = cluster.world.trace.count - 1
        self._everything_dirty()
        self._flush()

    # -- observer hooks ----------------------------------------------------------------------

    def on_event(self, event: TraceEvent) -> None:
        """Mark what the event says changed."""
        if event.node in self._kind:
            self._dirty_nodes.add(event.node)
        name = event.name
        if event.kind == "fault":
            self.fault_events.append(event)
            self._everything_dirty()
            return
        if name in CLIENT_TXN_EVENTS:
            self.txn_events.append(event)
        if name in _PARTITION_EVENTS:
            self._all_partitions = self._brokers = True
        if name in _TXN_EVENTS:
            self._txns = True
        if name in _PARTITION_EVENTS or name.startswith(_GROUP_PREFIXES):
            self._groups = True

    def after_step(self, world: World, callback: Any) -> None:
        """A handler ran: mark its node, then read what is dirty (if it emitted an event)."""
        owner = getattr(callback, "__self__", None)
        name = getattr(owner, "name", None)
        if name in self._kind:
            self._dirty_nodes.add(name)
        index = world.trace.count - 1
        if index == self.last_index:
            return  # no event: what it changed shows with the next event
        if self._call_start >= 0:
            if index < self._call_start:
                return  # a waiting call before its first event: shows with that event
            self._watch_call()
        self._flush()

    def on_offsets(self, replica: Replica) -> None:
        """A replica's offsets moved: its partition is dirty (for ``__transaction_state``, the txn rows)."""
        topic = replica.topic
        self._groups = True  # a HW move changes a group's lag; __consumer_offsets, its offsets
        if topic not in _INTERNAL:
            self._dirty_partitions.add((topic, replica.partition))
        elif topic == TRANSACTION_STATE_TOPIC:
            self._txns = True

    def on_call_start(self, entry: Any) -> None:
        """An application call starts (:class:`~engine.journal.Journal` listener)."""
        self._call_start = entry.start_index
        self._call_target = entry.target
        self._call_sig = None

    def on_nested_call(self, target: str) -> None:
        """A call made inside the running one (a callback producing, a consumer committing)."""
        if target in self._kind:
            self._dirty_nodes.add(target)

    def _watch_call(self) -> None:
        """Read the called client again if its application code changed it since the last handler."""
        cluster = self.cluster
        target = self._call_target
        if cluster is None or target not in self._kind:
            return
        sig = board.app_signature(cluster.world.nodes[target])
        if sig != self._call_sig:
            self._call_sig = sig
            self._dirty_nodes.add(target)

    def on_call_end(self, entry: Any) -> None:
        """An application call returned or raised: read what it changed.

        Its client's row; what it did to brokers, partitions and transactions came with events.
        """
        self._call_start = -1
        self._call_target = ""
        if entry.target in self._kind:
            self._dirty_nodes.add(entry.target)
        self._flush()

    def sync(self) -> None:
        """Read the clients and everything marked dirty now (after an application call)."""
        if self.cluster is None:
            return
        self._clients_dirty()
        self._brokers = self._txns = self._groups = True
        self._flush()

    def _clients_dirty(self) -> None:
        cluster = self.cluster
        if cluster is not None:
            self._dirty_nodes.update(p.name for p in cluster.producers)
            self._dirty_nodes.update(c.name for c in cluster.consumers)

    # -- reading -----------------------------------------------------------------------------

    def at(self, index: int) -> BoardState:
        """Return the board after event ``index`` (clamped to what this recorder holds)."""
        cluster = self._bound()
        if isinstance(index, bool) or not isinstance(index, int):
            msg = f"at() takes a trace event index (int), got {index!r}"
            raise TypeError(msg)
        index = max(self.first_index, min(index, self.last_index))
        # an event inside a handler shows the board recorded when the handler returned
        flushes = self._flushes
        k = bisect_left(flushes, index)
        board_index = flushes[k] if k < len(flushes) else self.last_index
        changed: dict[tuple[str, Any], int] = {}

        def rows(kind: str, keys: Any) -> tuple[Any, ...]:
            out = []
            for key in keys:
                s = self._series.get((kind, key))
                if s is None:
                    continue
                value, when = s.at(board_index)
                if value is _MISSING or value is None:
                    continue
                changed[(kind, key)] = when
                out.append(value)
            return tuple(out)

        # list() copies a dict in one step: another thread may add rows while a view reads
        series = list(self._series)
        keys = sorted(k for (kind, k) in series if kind == "partition")
        partitions = rows("partition", keys)
        live_keys = [(r.topic, r.partition) for r in partitions]
        controller, _ = self._series[("controller", None)].at(board_index)
        return BoardState(
            index,
            board.event_time(cluster, index),
            controller,
            rows("broker", sorted(cluster.brokers)),
            partitions,
            rows("producer", [n for n, k in list(self._kind.items()) if k == "producer"]),
            rows("consumer", [n for n, k in list(self._kind.items()) if k == "consumer"]),
            rows("txn", sorted(k for (kind, k) in series if kind == "txn")),
            tuple(LogTail(t, p, self._logs[(t, p)].tail(board_index)) for t, p in live_keys if (t, p) in self._logs),
            changed,
            groups=rows("group", sorted(k for (kind, k) in series if kind == "group")),
        )

    def rows(self, kind: str, key: Any) -> list[tuple[int, Any]]:
        """Return every change of one row as ``(index, row)``: e.g. ``rows("txn", "orders-app")``.

        ``kind`` is broker (key: id), partition (key: ``(topic, partition)``), producer or
        consumer (key: client name), txn (key: transactional id), group (key: group id) or
        controller (key: None). A
        row that disappeared has None as its value from then on.
        """
        kinds = ("broker", "partition", "producer", "consumer", "txn", "group", "controller")
        if kind not in kinds:
            msg = f"rows() takes one of {', '.join(kinds)} as kind, got {kind!r}"
            raise ValueError(msg)
        s = self._series.get((kind, key))
        if s is None:
            known = sorted(repr(k) for (k_kind, k) in list(self._series) if k_kind == kind)
            msg = f"no {kind} row {key!r} was recorded; recorded: {', '.join(known) or 'none'}"
            raise KeyError(msg)
        return list(zip(s.indexes, s.values, strict=True))

    def latest(self) -> BoardState:
        """Return the board now."""
        return self.at(self.last_index)

    def changes(self) -> int:
        """Return how many row changes are stored (a measure of memory)."""
        return sum(len(s) for s in self._series.values()) + sum(len(t.batches) for t in self._logs.values())

    # -- internals ---------------------------------------------------------------------------

    def _bound(self) -> ClientsCluster:
        if self.cluster is None:
            msg = "this recorder is not bound to a cluster: use Recorder.attach(cluster) or Cluster(observers=[...])"
            raise ValueError(msg)
        return self.cluster

    def _everything_dirty(self) -> None:
        self._brokers = self._txns = self._groups = self._controller = self._all_partitions = True
        self._clients_dirty()

    def _new_clients(self, cluster: ClientsCluster) -> None:
        seen = (len(cluster.producers), len(cluster.consumers))
        if seen == self._clients_seen:
            return
        for p in cluster.producers[self._clients_seen[0] :]:
            self._kind[p.name] = "producer"
            self._dirty_nodes.add(p.name)
        for c in cluster.consumers[self._clients_seen[1] :]:
            self._kind[c.name] = "consumer"
            self._dirty_nodes.add(c.name)
        self._clients_seen = seen

    def _set(self, kind: str, key: Any, index: int, value: Any) -> None:
        s = self._series.get((kind, key))
        if s is None:
            s = self._series[(kind, key)] = Series()
        s.set(index, value)

    def _flush(self) -> None:
        cluster = self.cluster
        if cluster is None:
            return
        index = cluster.world.trace.count - 1
        self.last_index = index
        if not self._flushes or self._flushes[-1] != index:
            self._flushes.append(index)
        self._new_clients(cluster)
        if self._controller:
            self._controller = False
            self._set("controller", None, index, cluster.controller.status.value)
        if self._brokers:
            self._brokers = False
            for b in cluster.brokers:
                self._set("broker", b, index, board.broker_row(cluster, b))
        if self._all_partitions:
            self._all_partitions = False
            self._dirty_partitions.update(board.user_partitions(cluster))
        if self._dirty_partitions:
            parts = cluster.controller.partitions
            for key in sorted(self._dirty_partitions):
                if key not in parts:
                    continue
                self._set("partition", key, index, board.partition_row(cluster, key))
                track = self._logs.get(key)
                if track is None:
                    track = self._logs[key] = _LogTrack()
                track.reconcile(index, board.leader_log(cluster, key))
            self._dirty_partitions.clear()
        if self._dirty_nodes:
            producers = {p.name: p for p in cluster.producers}
            consumers = {c.name: c for c in cluster.consumers}
            for name in sorted(self._dirty_nodes):
                p = producers.get(name)
                if p is not None:
                    self._set("producer", name, index, board.producer_row(p))
                    continue
                c = consumers.get(name)
                if c is not None:
                    self._set("consumer", name, index, board.consumer_row(c))
            self._dirty_nodes.clear()
        outside = cluster.outside_clients
        if outside is not None and outside.version != self._outside_seen:
            self._outside_seen = outside.version
            for kind, rows in (("producer", outside.producer_rows()), ("consumer", outside.consumer_rows())):
                for r in rows:
                    self._kind.setdefault(r.name, kind)
                    self._set(kind, r.name, index, r)
        if self._txns:
            self._txns = False
            rows = board.all_txn_rows(cluster)
            present = {r.transactional_id for r in rows}
            for r in rows:
                self._set("txn", r.transactional_id, index, r)
            for kind, key in list(self._series):
                if kind == "txn" and key not in present:
                    self._set("txn", key, index, None)
        if self._groups:
            self._groups = False
            groups = board.all_group_rows(cluster)
            present = {r.group_id for r in groups}
            for r in groups:
                self._set("group", r.group_id, index, r)
            for kind, key in list(self._series):
                if kind == "group" and key not in present:
                    self._set("group", key, index, None)
