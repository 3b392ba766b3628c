"""The dashboard's picture of a cluster: frozen rows for brokers, partitions, producers, consumers,
``__transaction_state`` and the partition logs, read from the live engine.

Role
----
A live dashboard and its time-travel recorder (:mod:`engine.views.recorder`) need the same
small set of facts, each cheap to read and cheap to compare: one row per broker, per user-topic
partition, per producer, per consumer and per transactional id, plus the tail of each partition
leader's log. This module names those rows (frozen, slotted dataclasses) and reads each from the
engine (``*_row`` functions). :func:`board_state` reads every row at once; the recorder reads only
the rows an event touched and keeps each row's changes, so both give equal :class:`BoardState`
values for the same moment (tests/unit/views/test_views_recorder.py checks this at every step of
faulty runs).

Rows
----
==================  ============================================================================
row                 what it holds
==================  ============================================================================
``BrokerRow``       status (up, down, paused), fenced by the controller, the ``__transaction_state``
                    and ``__consumer_offsets`` partitions it leads (it coordinates those ids)
``PartitionRow``    leader, leader epoch, ISR and replicas (the controller's), the leader's LEO,
                    HW and LSO, and the leader's producer-state table: per producer id its epoch,
                    coordinator epoch, open transaction's first offset, last timestamp and dedup
                    window (up to 5 batches)
``ProducerRow``     client name, status, transactional id, producer id and epoch, client state,
                    fatal error; per partition the next sequence, the last acknowledged one, the
                    batches in flight (sequences, attempts) and how many batches wait
``ConsumerRow``     client name, status, ``isolation.level``, group, position per partition
``TxnRow``          one ``__transaction_state`` entry as its coordinator holds it: producer id,
                    epoch, state, pending state, partitions, timeout, last update
``GroupRow``        one consumer group as its coordinator holds it (:mod:`engine.views.board_groups`)
``LogTail``         the last :data:`LOG_TAIL` batches of a partition leader's log (engine batches,
                    immutable once appended), summarised with their transaction outcome on demand
==================  ============================================================================

Only user topics have partition rows and log tails: the internal topics' partitions are many
(50 each by default) and are shown through the broker and transaction rows.

The small rows read most often (a producer's partitions and batches in flight, a leader's
producer-state entries, :class:`~engine.views.snapshots.ProducerEntryView`, shared with
:func:`~engine.views.snapshots.producer_state_view`) are named tuples: several are built per
handler while a run is recorded, and a named tuple costs a third of a frozen dataclass to build.

Invariants
----------
* Read-only: nothing here changes the engine, draws randomness or emits a trace event.
* Deterministic order: brokers by id, partitions by (topic, partition), clients by creation order,
  transactional ids sorted.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.config import IsolationLevel
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, partition_for
from engine.views.board_groups import GroupRow, all_group_rows
from engine.views.log_batches import BatchSummary, summarize
from engine.views.snapshots import ProducerEntryView, producer_entries
from engine.views.transactions import loaded_transactions

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.broker.replica import Replica
    from engine.client.consumer import Consumer
    from engine.client.producer import Producer
    from engine.log.records import RecordBatch
    from engine.views.lookup import ClientsCluster


#: How many batches of each partition leader's log a board keeps (the newest ones).
LOG_TAIL = 48

Key = tuple[str, int]


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRow:
    """One broker: status, fencing, and the coordinator partitions it leads."""

    broker_id: int
    status: str
    fenced: bool
    txn_partitions: tuple[int, ...]
    group_partitions: tuple[int, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionRow:
    """One user-topic partition: the controller's view plus its leader's offsets and producers."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    leo: int
    hw: int
    lso: int
    producers: tuple[ProducerEntryView, ...]

    @property
    def key(self) -> Key:
        """Return ``(topic, partition)``."""
        return (self.topic, self.partition)


class InFlight(NamedTuple):
    """One batch a producer sent and has no answer for yet."""

    first_seq: int
    last_seq: int
    attempts: int


class ProducerPartition(NamedTuple):
    """What a producer knows of one partition it writes to."""

    topic: str
    partition: int
    next_seq: int
    last_acked_seq: int
    in_flight: tuple[InFlight, ...]
    queued: int


@dataclasses.dataclass(frozen=True, slots=True)
class ProducerRow:
    """One producer client."""

    name: str
    status: str
    transactional_id: str
    producer_id: int
    epoch: int
    state: str
    error: str | None
    partitions: tuple[ProducerPartition, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerRow:
    """One consumer client."""

    name: str
    status: str
    isolation: IsolationLevel
    group_id: str
    positions: tuple[tuple[str, int, int], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class TxnRow:
    """One ``__transaction_state`` entry, as its coordinator holds it."""

    transactional_id: str
    coordinator: int
    txn_partition: int
    producer_id: int
    epoch: int
    state: str
    pending: str | None
    partitions: tuple[Key, ...]
    timeout_ms: int
    last_update_ms: int


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class LogTail:
    """The newest batches of one partition leader's log (offset order).

    Two tails are equal when their batches hold the same offsets, producer fields and markers
    (engine batches themselves compare by identity, and a replayed run makes new ones).
    """

    topic: str
    partition: int
    batches: tuple[RecordBatch, ...]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LogTail):
            return NotImplemented
        return (self.topic, self.partition) == (other.topic, other.partition) and self.summaries() == other.summaries()

    def __hash__(self) -> int:
        return hash((self.topic, self.partition, len(self.batches)))

    def summaries(self) -> tuple[BatchSummary, ...]:
        """Return the batches summarised, each transactional one with its outcome at this moment.

        A transaction's marker always follows its data, so the outcome of every data batch in
        the tail is decided by the markers in the tail: the summary is exact.
        """
        return summarize(list(self.batches))


@dataclasses.dataclass(frozen=True, slots=True)
class BoardState:
    """Every row of the board after one trace event (see :mod:`engine.views.recorder`).

    ``time_ms`` is the simulated time of that event.

    ``changed`` maps each row's key (``("txn", id)``, ``("partition", (topic, p))``, ...) to the
    trace index of its latest change at or before ``event_index``: views highlight fresh rows.
    """

    event_index: int
    time_ms: int
    controller: str
    brokers: tuple[BrokerRow, ...]
    partitions: tuple[PartitionRow, ...]
    producers: tuple[ProducerRow, ...]
    consumers: tuple[ConsumerRow, ...]
    txns: tuple[TxnRow, ...]
    logs: tuple[LogTail, ...]
    changed: dict[tuple[str, Any], int] = dataclasses.field(default_factory=dict, compare=False, hash=False)
    groups: tuple[GroupRow, ...] = ()

    def partition(self, topic: str, partition: int = 0) -> PartitionRow:
        """Return one partition's row (``KeyError`` naming the ones there are)."""
        return _find(
            self.partitions, (topic, partition), lambda r: (r.topic, r.partition), f"partition {topic}-{partition}"
        )

    def producer(self, name: str) -> ProducerRow:
        """Return one producer's row by client name."""
        return _find(self.producers, name, attrgetter("name"), f"producer {name!r}")

    def txn(self, transactional_id: str) -> TxnRow:
        """Return one ``__transaction_state`` row by transactional id."""
        return _find(
            self.txns, transactional_id, lambda r: r.transactional_id, f"transactional id {transactional_id!r}"
        )

    def group(self, group_id: str) -> GroupRow:
        """Return one consumer group's row by group id."""
        return _find(self.groups, group_id, attrgetter("group_id"), f"group {group_id!r}")

    def log(self, topic: str, partition: int = 0) -> LogTail:
        """Return one partition's log tail."""
        return _find(self.logs, (topic, partition), _TP, f"log of {topic}-{partition}")


_TP = attrgetter("topic", "partition")


def _find(rows: tuple[Any, ...], key: Any, key_of: Callable[[Any], Any], what: str) -> Any:
    """Return the row whose ``key_of`` is ``key``; a ``KeyError`` naming the keys there are."""
    for row in rows:
        if key_of(row) == key:
            return row
    known = ", ".join(str(key_of(r)) for r in rows) or "none"
    raise KeyError(f"no {what} on the board; there are: {known}")


# -- reading rows from the engine -----------------------------------------------------------------


def broker_row(cluster: ClientsCluster, broker_id: int) -> BrokerRow:
    """Read one broker's row."""
    broker = cluster.brokers[broker_id]
    txn: list[int] = []
    group: list[int] = []
    if broker.status.value == "up":
        for (topic, p), r in broker.replicas.items():
            if r.is_leader:
                if topic == TRANSACTION_STATE_TOPIC:
                    txn.append(p)
                elif topic == CONSUMER_OFFSETS_TOPIC:
                    group.append(p)
    return BrokerRow(
        broker_id,
        broker.status.value,
        broker_id in cluster.controller.fenced,
        tuple(sorted(txn)),
        tuple(sorted(group)),
    )


def user_partitions(cluster: ClientsCluster) -> list[Key]:
    """Return every user-topic partition the controller knows, sorted."""
    return sorted(k for k in cluster.controller.partitions if not k[0].startswith("__"))


def leader_replica(cluster: ClientsCluster, key: Key) -> Replica | None:
    """Return the replica that leads ``key`` now, or None (no leader, or it is not up)."""
    state = cluster.controller.partitions.get(key)
    if state is None:
        return None
    broker = cluster.brokers.get(state.leader)
    if broker is None or broker.status.value != "up":
        return None
    r = broker.replicas.get(key)
    return r if r is not None and r.is_leader else None


def partition_row(cluster: ClientsCluster, key: Key) -> PartitionRow:
    """Read one partition's row: the controller's leader, epoch and ISR, the leader's offsets."""
    state = cluster.controller.partitions[key]
    r = leader_replica(cluster, key)
    if r is None:
        return PartitionRow(key[0], key[1], state.leader, state.leader_epoch, state.isr, state.replicas, -1, -1, -1, ())
    entries = producer_entries(r)
    return PartitionRow(
        key[0],
        key[1],
        state.leader,
        state.leader_epoch,
        state.isr,
        state.replicas,
        r.log_end_offset,
        r.high_watermark,
        r.last_stable_offset,
        entries,
    )


def leader_log(cluster: ClientsCluster, key: Key) -> list[RecordBatch]:
    """Return the batches of the log of the broker the controller names leader (the engine's list).

    Read from that broker's disk, so a crashed leader's log still shows (as ``kafka-dump-log.sh``
    reads a stopped broker's files); empty when the partition has no leader at all.
    """
    state = cluster.controller.partitions.get(key)
    broker = cluster.brokers.get(state.leader) if state is not None else None
    if broker is None:
        return []
    log = broker.disk.get(f"log:{key[0]}-{key[1]}")
    return [] if log is None else log.batches


def log_tail(cluster: ClientsCluster, key: Key) -> LogTail:
    """Read the tail of the leader's log."""
    return LogTail(key[0], key[1], tuple(leader_log(cluster, key)[-LOG_TAIL:]))


def producer_row(producer: Producer) -> ProducerRow:
    """Read one producer client's row."""
    txn = getattr(producer, "txn", None)
    if txn is not None:
        state = txn.state.name
    else:
        state = "IDEMPOTENT" if producer.idempotent else "PLAIN"
    parts = []
    for (topic, p), q in sorted(producer.accumulator.queues.items()):
        in_flight = tuple(
            [
                InFlight(
                    b.base_sequence, b.base_sequence + len(b.values) - 1 if b.base_sequence >= 0 else -1, b.attempts
                )
                for b in q.unacked
            ]
        )
        parts.append(ProducerPartition(topic, p, q.next_sequence, q.last_acked_sequence, in_flight, len(q.queue)))
    err = producer.fatal_error
    return ProducerRow(
        producer.name,
        producer.status.value,
        getattr(producer, "transactional_id", "") or "",
        producer.producer_id,
        producer.producer_epoch,
        state,
        None if err is None else type(err).__name__,
        tuple(parts),
    )


def app_signature(client: Any) -> tuple[Any, ...]:
    """Return the few fields of a client that application code (not a handler) changes.

    While an application call runs, the recorder reads the called client's row again only when
    this changes; everything else of the row changes in the client's own handlers.
    """
    fetcher = getattr(client, "fetcher", None)
    if fetcher is not None:  # a consumer
        return (client.status, tuple(client.assigned), tuple(fetcher.positions.values()))
    txn = getattr(client, "txn", None)
    return (
        client.status,
        client.producer_id,
        client.producer_epoch,
        None if txn is None else txn.state,
        id(client.fatal_error),
        client.queued_batches(),
        client.waiting_for_metadata(),
    )


def consumer_row(consumer: Consumer) -> ConsumerRow:
    """Read one consumer client's row."""
    positions = tuple((t, p, o) for (t, p), o in sorted(consumer.fetcher.positions.items()))
    group = consumer.group.group_id if consumer.group is not None else ""
    return ConsumerRow(consumer.name, consumer.status.value, consumer.isolation_level, group, positions)


def all_producer_rows(cluster: ClientsCluster) -> tuple[ProducerRow, ...]:
    """Every producer the cluster knows: its own clients, then the outside ones of a served cluster.

    The one list of which producers exist: an outside client (a real Kafka client on the wire,
    ``engine.wire.clients``) has status ``outside``, and what the wire shows of it.
    """
    rows = tuple(producer_row(p) for p in cluster.producers)
    outside = cluster.outside_clients
    return rows if outside is None else rows + outside.producer_rows()


def all_consumer_rows(cluster: ClientsCluster) -> tuple[ConsumerRow, ...]:
    """Every consumer the cluster knows: its own clients, then the outside ones of a served cluster."""
    rows = tuple(consumer_row(c) for c in cluster.consumers)
    outside = cluster.outside_clients
    return rows if outside is None else rows + outside.consumer_rows()


def all_txn_rows(cluster: ClientsCluster) -> tuple[TxnRow, ...]:
    """Read every up coordinator's loaded entries, one row per transactional id (sorted by id).

    Two brokers may both hold an id for a moment (the old coordinator has not unloaded yet);
    the one that leads the id's ``__transaction_state`` partition in the controller wins.
    """
    n = cluster.config.transaction_state_log_num_partitions
    rows: dict[str, TxnRow] = {}
    for coordinator, md in loaded_transactions(cluster):
        tid = md.transactional_id
        row = TxnRow(
            tid,
            coordinator,
            partition_for(tid, n),
            md.producer_id,
            md.producer_epoch,
            md.state.name,
            None if md.pending_state is None else md.pending_state.name,
            tuple(md.partitions),
            md.txn_timeout_ms,
            md.txn_last_update_ms,
        )
        if tid not in rows or _leads(cluster, row):
            rows[tid] = row
    return tuple(rows[t] for t in sorted(rows))


def _leads(cluster: ClientsCluster, row: TxnRow) -> bool:
    state = cluster.controller.partitions.get((TRANSACTION_STATE_TOPIC, row.txn_partition))
    return state is not None and state.leader == row.coordinator


def event_time(cluster: ClientsCluster, index: int) -> int:
    """Return the simulated time of trace event ``index`` (the clock now when the trace keeps no events)."""
    trace = cluster.world.trace
    if trace.keep and 0 <= index < len(trace.events):
        return trace.events[index].time_ms
    return cluster.now_ms if index >= 0 else 0


def board_state(cluster: ClientsCluster, event_index: int | None = None) -> BoardState:
    """Read the whole board from the live cluster now (``event_index``: the trace's last index)."""
    index = cluster.world.trace.count - 1 if event_index is None else event_index
    keys = user_partitions(cluster)
    return BoardState(
        index,
        event_time(cluster, index),
        cluster.controller.status.value,
        tuple(broker_row(cluster, b) for b in sorted(cluster.brokers)),
        tuple(partition_row(cluster, k) for k in keys),
        all_producer_rows(cluster),
        all_consumer_rows(cluster),
        all_txn_rows(cluster),
        tuple(log_tail(cluster, k) for k in keys),
        groups=all_group_rows(cluster),
    )
