"""Ground truth of a run: every replica's log, offsets, transaction state and faults, frozen.

Role
----
The white-box invariants (``eos-checking.md`` §5.3, :mod:`engine.check.invariants`) read broker
state, not client histories. :func:`export_ground_truth` copies what they need out of a
:class:`~engine.cluster.Cluster` into plain, immutable rows, so a checker never touches the
engine, a test can corrupt a *copy* (``dataclasses.replace``) and Spark or pandas can load the
same data later through :meth:`GroundTruth.to_tables` (``eos-checking.md`` §5.5).

What is exported
----------------
=================  ==========================================================================
field              one row per
=================  ==========================================================================
``batches``        batch of every replica's log (down brokers too: read from their disk)
``records()``      record of every replica's log (derived from ``batches``)
``replicas``       replica: status, role, leader epoch, LEO, HW, LSO (None when not loaded)
``partitions``     partition: the controller's final leader, leader epoch, ISR and replicas
``txn_history``    ``__transaction_state`` transition per transactional id, from two sources:
                   ``"coordinator"`` (each loaded coordinator's ``describe()`` history) and
                   ``"log"`` (the authoritative ``__transaction_state`` replica's records)
``aborted_index``  entry of every replica's aborted-transaction index
``producers``      producer of every *leader* replica's in-memory producer table (L13)
``fetches``        consumer fetch (trace event ``consumer.fetched``, or ``fetch_log``)
``faults``         applied fault (``world.faults.applied``) and trace event of kind ``fault``
=================  ==========================================================================

Invariants
----------
* Export only reads: no engine object is mutated, no random stream is drawn from.
* Rows are sorted deterministically (topic, partition, broker, offset ...), never in hash order.
* The *authoritative* replica of a partition (:meth:`GroundTruth.authoritative`) is the
  controller's leader when its log is known, else the replica with the longest log (lowest
  broker id on ties).

Rows, and why they are not the views' rows
------------------------------------------
Each row here is one row of an exported table (:mod:`engine.export.logs` writes them to Parquet
and reads them back): a named tuple whose fields are that table's columns, flat, keyed by broker,
and read once at the end of a run. The views' rows (:mod:`engine.views.board`,
:mod:`engine.views.transactions`) are a different thing: what a dashboard or a Kafka tool shows
of the live cluster at one instant (a producer *client*, a coordinator's current entry, the
admin tool's columns). So these carry their own names: :class:`LeaderAndIsrRow` (the
controller's final LeaderAndIsr of a partition), :class:`TxnTransitionRow` (one transition of a
``__transaction_state`` history, not the entry now held) and :class:`ProducerEntryRow` (the
exported columns of one entry of a leader's producer-state table; ``describe-producers`` shows
more of it as :class:`~engine.views.transactions.ProducerStateRow`).

What it does not do
-------------------
No checking; no pyarrow or pandas (``to_tables`` returns plain column lists).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.coordinator_lookup import TRANSACTION_STATE_TOPIC
from engine.log.flatten import records_of

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.broker.replica import Replica
    from engine.cluster import Cluster
    from engine.log.partition_log import PartitionLog
    from engine.log.records import RecordBatch

__all__ = [
    "AbortedRow",
    "BatchRow",
    "FaultRow",
    "FetchRow",
    "GroundTruth",
    "LeaderAndIsrRow",
    "ProducerEntryRow",
    "RecordRow",
    "ReplicaRow",
    "TxnTransitionRow",
    "export_ground_truth",
]

TP = tuple[str, int]


class BatchRow(NamedTuple):
    """One batch of one replica's log."""

    topic: str
    partition: int
    broker_id: int
    base_offset: int
    last_offset: int
    leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    is_transactional: bool
    is_control: bool
    control_type: str | None
    coordinator_epoch: int
    create_time: int
    keys: tuple[Any, ...]
    values: tuple[Any, ...]

    @property
    def tp(self) -> TP:
        """Return ``(topic, partition)``."""
        return (self.topic, self.partition)

    @property
    def count(self) -> int:
        """Return the number of records."""
        return len(self.values)

    @property
    def next_offset(self) -> int:
        """Return the offset after the batch."""
        return self.last_offset + 1


class RecordRow(NamedTuple):
    """One record of one replica's log (``eos-checking.md`` §5.5 ``records``)."""

    topic: str
    partition: int
    broker_id: int
    offset: int
    leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    sequence: int
    is_transactional: bool
    is_control: bool
    control_type: str | None
    key: Any
    value: Any
    batch_base_offset: int
    final_leader: bool


class ReplicaRow(NamedTuple):
    """One replica's final offsets; ``lso`` and ``leader_epoch`` are None when not loaded."""

    topic: str
    partition: int
    broker_id: int
    status: str
    is_leader: bool
    leader_epoch: int | None
    leo: int
    hw: int
    lso: int | None


class LeaderAndIsrRow(NamedTuple):
    """The controller's final decision for one partition."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


class TxnTransitionRow(NamedTuple):
    """One ``__transaction_state`` transition of one transactional id."""

    source: str
    broker_id: int
    transactional_id: str
    index: int
    offset: int
    producer_id: int
    producer_epoch: int
    state: str
    partitions: tuple[TP, ...]
    txn_start_ms: int
    update_ms: int


class AbortedRow(NamedTuple):
    """One entry of one replica's aborted-transaction index."""

    topic: str
    partition: int
    broker_id: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class ProducerEntryRow(NamedTuple):
    """One producer in a leader replica's in-memory producer table."""

    topic: str
    partition: int
    broker_id: int
    producer_id: int
    producer_epoch: int
    last_sequence: int
    current_txn_first_offset: int | None


class FetchRow(NamedTuple):
    """One consumer fetch answered without error; ``next_offset`` None when only ``fetch_log`` is known."""

    time_ms: int
    consumer: str
    isolation: str
    topic: str
    partition: int
    fetch_offset: int
    next_offset: int | None
    records: int | None
    hw: int
    lso: int


class FaultRow(NamedTuple):
    """One fault: ``source`` is ``"plan"`` (``faults.applied``) or ``"trace"`` (a fault event)."""

    time_ms: int
    source: str
    kind: str
    node: str
    params: tuple[tuple[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class GroundTruth:
    """Everything the white-box invariants read, as sorted immutable rows."""

    seed: int
    time_ms: int
    transaction_version: int
    batches: tuple[BatchRow, ...]
    replicas: tuple[ReplicaRow, ...]
    partitions: tuple[LeaderAndIsrRow, ...]
    txn_history: tuple[TxnTransitionRow, ...]
    aborted_index: tuple[AbortedRow, ...]
    producers: tuple[ProducerEntryRow, ...]
    fetches: tuple[FetchRow, ...]
    faults: tuple[FaultRow, ...]

    # -- indexes (cached on first use; ``dataclasses.replace`` gives a fresh cache) --------

    @functools.cached_property
    def _logs(self) -> dict[tuple[str, int, int], list[BatchRow]]:
        out: dict[tuple[str, int, int], list[BatchRow]] = {}
        for b in self.batches:
            out.setdefault((b.topic, b.partition, b.broker_id), []).append(b)
        for rows in out.values():
            rows.sort(key=lambda r: r.base_offset)
        return dict(sorted(out.items()))

    @functools.cached_property
    def _partition_index(self) -> dict[TP, LeaderAndIsrRow]:
        return {(p.topic, p.partition): p for p in self.partitions}

    @functools.cached_property
    def _replica_index(self) -> dict[tuple[str, int, int], ReplicaRow]:
        return {(r.topic, r.partition, r.broker_id): r for r in self.replicas}

    @functools.cached_property
    def _authoritative(self) -> dict[TP, int | None]:
        by_tp: dict[TP, list[ReplicaRow]] = {}
        for r in self.replicas:
            by_tp.setdefault((r.topic, r.partition), []).append(r)
        out: dict[TP, int | None] = {}
        for tp in self.partition_keys():
            rows = by_tp.get(tp, [])
            part = self._partition_index.get(tp)
            if not rows:
                out[tp] = None
            elif part is not None and part.leader >= 0 and any(r.broker_id == part.leader for r in rows):
                out[tp] = part.leader
            else:
                out[tp] = sorted(rows, key=lambda r: (-r.leo, r.broker_id))[0].broker_id
        return out

    def logs(self) -> dict[tuple[str, int, int], list[BatchRow]]:
        """Return ``{(topic, partition, broker_id): batches in offset order}`` (do not mutate)."""
        return self._logs

    def partition_keys(self) -> list[TP]:
        """Return every partition, sorted."""
        keys = {(p.topic, p.partition) for p in self.partitions}
        keys.update((r.topic, r.partition) for r in self.replicas)
        return sorted(keys)

    def partition(self, tp: TP) -> LeaderAndIsrRow | None:
        """Return the controller's row for a partition."""
        return self._partition_index.get(tp)

    def replica(self, tp: TP, broker_id: int) -> ReplicaRow | None:
        """Return one replica's row."""
        return self._replica_index.get((tp[0], tp[1], broker_id))

    def replicas_of(self, tp: TP) -> list[ReplicaRow]:
        """Return the rows of every replica of a partition, by broker id."""
        return [r for k, r in sorted(self._replica_index.items()) if (k[0], k[1]) == tp]

    def authoritative(self, tp: TP) -> int | None:
        """Return the broker whose log stands for the partition (see the module docstring)."""
        return self._authoritative.get(tp)

    def final_log(self, tp: TP) -> list[BatchRow]:
        """Return the authoritative replica's batches of a partition."""
        b = self.authoritative(tp)
        if b is None:
            return []
        return self._logs.get((tp[0], tp[1], b), [])

    def final_hw(self, tp: TP) -> int:
        """Return the authoritative replica's high watermark (0 when unknown)."""
        b = self.authoritative(tp)
        r = self.replica(tp, b) if b is not None else None
        return r.hw if r is not None else 0

    def records(self) -> list[RecordRow]:
        """Return one row per record of every replica's log."""
        leaders = {tp: self.authoritative(tp) for tp in self.partition_keys()}
        out = []
        for b in self.batches:
            final = leaders.get(b.tp) == b.broker_id
            head = (b.topic, b.partition, b.broker_id)
            flags = (b.is_transactional, b.is_control, b.control_type)
            producer = (b.leader_epoch, b.producer_id, b.producer_epoch, b.base_sequence)
            out.extend(
                RecordRow(*head, offset, *producer, seq, *flags, key, value, b.base_offset, final)
                for offset, seq, key, value in zip(*records_of(b), strict=True)
            )
        return out

    def to_tables(self) -> dict[str, dict[str, list[Any]]]:
        """Return ``{table: {column: values}}`` (plain lists) for pandas or Spark.

        Tables: ``records``, ``batches``, ``replicas``, ``partitions``, ``txn_state``,
        ``aborted_index``, ``producers``, ``fetches``, ``faults``. Every table carries ``seed``.
        Tuples (ISR, partitions, params) become lists; ``values`` and ``keys`` of batches are
        left out of ``batches`` (they are in ``records``).
        """
        tables: dict[str, dict[str, list[Any]]] = {}

        def put(name: str, fields: tuple[str, ...], rows: list[tuple[Any, ...]], skip: tuple[str, ...] = ()) -> None:
            cols: dict[str, list[Any]] = {"seed": [self.seed] * len(rows)}
            for i, f in enumerate(fields):
                if f in skip:
                    continue
                cols[f] = [_plain(r[i]) for r in rows]
            tables[name] = cols

        put("records", RecordRow._fields, self.records())
        put("batches", BatchRow._fields, list(self.batches), skip=("keys", "values"))
        put("replicas", ReplicaRow._fields, list(self.replicas))
        put("partitions", LeaderAndIsrRow._fields, list(self.partitions))
        put("txn_state", TxnTransitionRow._fields, list(self.txn_history))
        put("aborted_index", AbortedRow._fields, list(self.aborted_index))
        put("producers", ProducerEntryRow._fields, list(self.producers))
        put("fetches", FetchRow._fields, list(self.fetches))
        put("faults", FaultRow._fields, list(self.faults))
        return tables


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


# -- export ----------------------------------------------------------------------------------


def _batch_row(tp: TP, broker_id: int, b: RecordBatch) -> BatchRow:
    return BatchRow(
        tp[0],
        tp[1],
        broker_id,
        b.base_offset,
        b.last_offset,
        b.partition_leader_epoch,
        b.producer_id,
        b.producer_epoch,
        b.base_sequence,
        b.last_sequence,
        b.is_transactional,
        b.is_control,
        b.control_type,
        b.coordinator_epoch,
        b.create_time,
        tuple(b.keys),
        tuple(b.values),
    )


def _replica_sources(broker: Broker, tp: TP) -> tuple[Replica | None, PartitionLog | None, Any, int]:
    """Return (live replica or None, log, txn index, hw) of one partition on one broker."""
    name = f"{tp[0]}-{tp[1]}"
    live = broker.replicas.get(tp) if broker.status.name != "DOWN" else None
    if live is not None:
        return live, live.log, live.txn_index, live.high_watermark
    log = broker.disk.get(f"log:{name}")
    index = broker.disk.get(f"txnindex:{name}")
    ckpt = broker.disk.get("hw-checkpoint")
    hw = ckpt.values.get(name, 0) if ckpt is not None else 0
    if log is not None:
        hw = min(hw, log.log_end_offset)
    return None, log, index, hw


def _coordinator_rows(cluster: Cluster) -> list[TxnTransitionRow]:
    rows: list[TxnTransitionRow] = []
    for bid in sorted(cluster.brokers):
        broker = cluster.brokers[bid]
        if broker.status.name == "DOWN":
            continue
        for ext in broker.extensions:
            if type(ext).__name__ != "TransactionCoordinator":
                continue
            described = ext.describe()
            for txn_id in sorted(described):
                for i, (offset, v) in enumerate(described[txn_id].history):
                    rows.append(_txn_row("coordinator", bid, txn_id, i, offset, v))
    return rows


def _txn_row(source: str, broker_id: int, txn_id: str, index: int, offset: int, v: Any) -> TxnTransitionRow:
    return TxnTransitionRow(
        source,
        broker_id,
        txn_id,
        index,
        offset,
        v.producer_id,
        v.producer_epoch,
        v.state.name,
        tuple(v.partitions),
        v.txn_start_ms,
        v.txn_last_update_ms,
    )


def _log_txn_rows(gt_batches: list[BatchRow], leaders: dict[TP, int | None]) -> list[TxnTransitionRow]:
    rows: list[TxnTransitionRow] = []
    counters: dict[str, int] = {}
    for b in gt_batches:
        if b.topic != TRANSACTION_STATE_TOPIC or b.is_control or leaders.get(b.tp) != b.broker_id:
            continue
        for i, v in enumerate(b.values):
            txn_id = b.keys[i]
            if v is None:  # tombstone
                continue
            n = counters.get(txn_id, 0)
            counters[txn_id] = n + 1
            rows.append(_txn_row("log", b.broker_id, txn_id, n, b.base_offset + i, v))
    return rows


def _fetch_rows(cluster: Cluster) -> list[FetchRow]:
    iso = {c.name: c.config.isolation_level.value for c in cluster.consumers}
    rows: list[FetchRow] = []
    if cluster.world.trace.keep:
        for e in cluster.world.trace.events:
            if e.kind != "state" or e.name != "consumer.fetched":
                continue
            tp = e.get("tp", "")
            topic, _, part = tp.rpartition("-")
            rows.append(
                FetchRow(
                    e.time_ms,
                    e.node,
                    iso.get(e.node, "unknown"),
                    topic,
                    int(part),
                    e.get("from"),
                    e.get("next"),
                    e.get("records"),
                    e.get("hw"),
                    e.get("lso"),
                )
            )
        return rows
    for c in cluster.consumers:
        for t, topic, part, offset, hw, lso in c.fetch_log:
            rows.append(FetchRow(t, c.name, iso[c.name], topic, part, offset, None, None, hw, lso))
    return sorted(rows)


def _fault_rows(cluster: Cluster) -> list[FaultRow]:
    rows = [FaultRow(f.at_ms, "plan", f.kind, "", tuple(f.params)) for f in cluster.world.faults.applied]
    if cluster.world.trace.keep:
        rows.extend(
            FaultRow(e.time_ms, "trace", e.name, e.node, tuple(e.detail))
            for e in cluster.world.trace.events
            if e.kind == "fault"
        )
    return rows


def export_ground_truth(cluster: Cluster) -> GroundTruth:
    """Copy a cluster's final white-box state into a frozen :class:`GroundTruth` (read only)."""
    controller = cluster.controller
    partitions = [
        LeaderAndIsrRow(tp[0], tp[1], s.leader, s.leader_epoch, tuple(s.isr), tuple(s.replicas))
        for tp, s in sorted(controller.partitions.items())
    ]
    batches: list[BatchRow] = []
    replicas: list[ReplicaRow] = []
    aborted: list[AbortedRow] = []
    producers: list[ProducerEntryRow] = []
    for part in partitions:
        tp = (part.topic, part.partition)
        for bid in sorted(part.replicas):
            broker = cluster.brokers.get(bid)
            if broker is None:
                continue
            live, log, index, hw = _replica_sources(broker, tp)
            if log is None:
                continue
            batches.extend(_batch_row(tp, bid, b) for b in log.batches)
            is_leader = live is not None and live.is_leader
            replicas.append(
                ReplicaRow(
                    tp[0],
                    tp[1],
                    bid,
                    broker.status.name.lower(),
                    is_leader,
                    live.state.leader_epoch if live is not None and live.state is not None else None,
                    log.log_end_offset,
                    hw,
                    live.last_stable_offset if live is not None else None,
                )
            )
            if index is not None:
                aborted.extend(
                    AbortedRow(tp[0], tp[1], bid, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                    for t in index.entries
                )
            if is_leader and live is not None:
                for pid in sorted(live.producers.producers):
                    e = live.producers.producers[pid]
                    producers.append(
                        ProducerEntryRow(
                            tp[0], tp[1], bid, pid, e.producer_epoch, e.last_seq, e.current_txn_first_offset
                        )
                    )
    gt = GroundTruth(
        seed=cluster.seed,
        time_ms=cluster.now_ms,
        transaction_version=cluster.config.transaction_version,
        batches=tuple(batches),
        replicas=tuple(replicas),
        partitions=tuple(partitions),
        txn_history=(),
        aborted_index=tuple(aborted),
        producers=tuple(producers),
        fetches=tuple(_fetch_rows(cluster)),
        faults=tuple(_fault_rows(cluster)),
    )
    leaders = {tp: gt.authoritative(tp) for tp in gt.partition_keys() if tp[0] == TRANSACTION_STATE_TOPIC}
    history = _coordinator_rows(cluster) + _log_txn_rows(batches, leaders)
    return dataclasses.replace(gt, txn_history=tuple(history))
