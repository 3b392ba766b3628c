"""Views of logs and cluster shape: ``kafka-dump-log.sh``, producer state, partitions, topics, brokers.

Role
----
Factories that read a :class:`engine.Cluster` once and return a :class:`~.base.View` or
:class:`~.base.TableView`. Text comes from the engine's own text views, unchanged
(``Cluster.dump_log``, ``dump_txn_index``, ``dump_transaction_state``, ``PartitionView.__str__``,
``ProducerStateView.__str__``); ``topics`` prints ``kafka-topics.sh --describe`` (Kafka's
``TopicCommand``: a topic line, then one tab-indented line per partition; no ``TopicId`` since
the simulation has none, which is what the tool prints for a zero id; ``Elr``/``LastKnownElr``
print ``N/A`` as for brokers without ELR).

Invariants
----------
* A bad topic, partition or broker raises the engine's own error (``UnknownTopicOrPartitionException``,
  ``LeaderNotAvailableException``, ``NotLeaderOrFollowerException``, ``ValueError``, ``TypeError``),
  before anything is built; nothing is caught and re-worded.
* Reading never changes the cluster: no node is added, no time passes.

What it does not do
-------------------
No Kafka text format is re-implemented here except ``kafka-topics.sh``, which the engine lacks.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from engine.errors import LeaderNotAvailableException
from engine.views import lookup
from engine.views import transactions as txn_views
from engine.views.log_batches import ReplicaLog, replica_log
from eos_magics.views.base import TableView, View, plain_table
from widgets import svg

if TYPE_CHECKING:
    from engine import Cluster

__all__ = [
    "brokers",
    "cluster_summary",
    "clusters",
    "dump_log",
    "partition",
    "producer_state",
    "strip",
    "topics",
    "transaction_state",
    "txn_index",
]

BATCH_COLUMNS = (
    "baseOffset",
    "lastOffset",
    "count",
    "producerId",
    "producerEpoch",
    "baseSequence",
    "lastSequence",
    "partitionLeaderEpoch",
    "isTransactional",
    "isControl",
    "endTxnMarker",
    "coordinatorEpoch",
    "CreateTime",
    "position",
    "size",
    "kind",
)


def strip(log: ReplicaLog, *, max_batches: int = svg.DEFAULT_MAX_BATCHES) -> str:
    """Return the log strip SVG of a :class:`~engine.views.log_batches.ReplicaLog`."""
    return svg.log_strip(
        log.batches,
        high_watermark=log.high_watermark,
        last_stable_offset=log.last_stable_offset,
        log_end_offset=log.log_end_offset,
        max_batches=max_batches,
        label=f"{log.topic}-{log.partition} on broker {log.broker_id}: {len(log.batches)} batches",
    )


def _offsets_line(log: ReplicaLog) -> str:
    role = "leader" if log.is_leader else "replica"
    cursors = f"LEO {log.log_end_offset}"
    if log.high_watermark >= 0:
        cursors += f" · HW {log.high_watermark} · LSO {log.last_stable_offset}"
    else:
        cursors += " · HW/LSO unknown (partition not loaded)"
    return f"broker {log.broker_id} ({role}, {log.status}) · {len(log.batches)} batches · {cursors}"


# -- kafka-dump-log.sh ------------------------------------------------------------------------------


def dump_log(
    cluster: Cluster,
    topic: str,
    partition: int = 0,
    broker: int | None = None,
    *,
    max_batches: int = svg.DEFAULT_MAX_BATCHES,
) -> TableView:
    """``kafka-dump-log.sh --print-data-log`` of a replica (the leader's by default), with its log strip.

    Text: ``cluster.dump_log(...)`` exactly. Rows: one per batch (:data:`BATCH_COLUMNS`, the
    dump's field names plus ``kind``: plain, open, committed, aborted, commit-marker,
    abort-marker). HTML: the strip (HW, LSO, LEO; last ``max_batches`` batches), then the text.
    """
    text = cluster.dump_log(topic, partition, broker)
    log = replica_log(cluster, topic, partition, broker)
    rows = [
        (
            b.base_offset,
            b.last_offset,
            b.count,
            b.producer_id,
            b.producer_epoch,
            b.base_sequence,
            b.last_sequence,
            b.partition_leader_epoch,
            b.is_transactional,
            b.is_control,
            b.control_type,
            b.coordinator_epoch if b.is_control else None,
            b.create_time,
            b.position,
            b.size_bytes,
            b.kind,
        )
        for b in log.batches
    ]
    return TableView(
        text,
        BATCH_COLUMNS,
        rows,
        show_table=False,
        title=f"kafka-dump-log.sh --print-data-log · {topic}-{partition}",
        summary=_offsets_line(log),
        picture=strip(log, max_batches=max_batches),
        data=log,
    )


def txn_index(cluster: Cluster, topic: str, partition: int = 0, broker: int | None = None) -> TableView:
    """``kafka-dump-log.sh`` on a replica's ``.txnindex``: one row per aborted transaction, with the log strip."""
    text = cluster.dump_txn_index(topic, partition, broker)
    entries = txn_views.txn_index_rows(cluster, topic, partition, broker)
    log = replica_log(cluster, topic, partition, broker)
    return TableView(
        text,
        ("producerId", "firstOffset", "lastOffset", "lastStableOffset"),
        [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries],
        title=f"aborted-transaction index (.txnindex) · {topic}-{partition}",
        summary=_offsets_line(log),
        picture=strip(log),
        text_label="kafka-dump-log.sh output",
        data=entries,
    )


def transaction_state(cluster: Cluster, transactional_id: str | None = None) -> TableView:
    """``kafka-dump-log.sh --transaction-log-decoder`` on ``__transaction_state`` (one id's records if given).

    Rows: every record, oldest first, with the decoded value's fields (None for a tombstone).
    """
    text = cluster.dump_transaction_state(transactional_id)
    records = txn_views.transaction_state_rows(cluster, transactional_id)
    rows = []
    for r in records:
        v = r.value
        rows.append(
            (
                r.partition,
                r.offset,
                r.create_time,
                r.transactional_id,
                r.state,
                None if v is None else v.producer_id,
                None if v is None else v.producer_epoch,
                None if v is None else v.partitions_text(),
                None if v is None else v.txn_timeout_ms,
                None if v is None else v.txn_start_ms,
                None if v is None else v.txn_last_update_ms,
            )
        )
    which = f"transactional id {transactional_id}" if transactional_id is not None else "every transactional id"
    return TableView(
        text,
        (
            "partition",
            "offset",
            "CreateTime",
            "transactionalId",
            "state",
            "producerId",
            "producerEpoch",
            "partitions",
            "txnTimeoutMs",
            "txnStartTimestamp",
            "txnLastUpdateTimestamp",
        ),
        rows,
        title=f"__transaction_state records · {which}",
        text_label="kafka-dump-log.sh --transaction-log-decoder output",
        data=records,
    )


# -- producer state ---------------------------------------------------------------------------------

#: How to read the ``window`` column, said under the title: its notation is the engine's, not Kafka's.
WINDOW_LEGEND = "window: [first..last sequence]@first offset of each cached batch, oldest first"


def producer_state(cluster: Cluster, topic: str, partition: int = 0, broker: int | None = None) -> TableView:
    """A replica's producer-state table: one row per producer, and each dedup window as a picture.

    Text: ``str(cluster.producer_state(...))``. Columns: producerId, producerEpoch, lastSequence,
    lastOffset (-1 with an empty window), coordinatorEpoch (-1: no marker seen),
    currentTxnFirstOffset (None: no open transaction), lastTimestamp, cachedBatches, window
    (``[first..last]@offset`` per cached batch, oldest first).
    """
    view = cluster.producer_state(topic, partition, broker)
    rows = []
    pictures = []
    for p in view.producers:
        rows.append(
            (
                p.producer_id,
                p.producer_epoch,
                p.last_sequence,
                p.window[-1].last_offset if p.window else -1,
                p.coordinator_epoch,
                p.current_txn_first_offset,
                p.last_timestamp,
                len(p.window),
                " ".join(f"[{w.first_sequence}..{w.last_sequence}]@{w.first_offset}" for w in p.window),
            )
        )
        pictures.append(svg.producer_window(p, window_size=view.window_size))
    summary = f"broker {view.broker_id} · {len(view.producers)} producers · window of {view.window_size} batches"
    if not view.producers:
        summary += " · no producer state (none wrote here, or the broker has not loaded the partition)"
    else:
        summary += f"\n{WINDOW_LEGEND}"
    return TableView(
        str(view),
        (
            "producerId",
            "producerEpoch",
            "lastSequence",
            "lastOffset",
            "coordinatorEpoch",
            "currentTxnFirstOffset",
            "lastTimestamp",
            "cachedBatches",
            "window",
        ),
        rows,
        title=f"producer state · {topic}-{partition}",
        summary=summary,
        picture="".join(pictures),
        text_label="text",
        data=view,
    )


# -- partitions, topics, brokers --------------------------------------------------------------------


def partition(cluster: Cluster, topic: str, partition: int = 0) -> TableView:
    """One partition: leader, epoch, ISR, replicas, LEO, HW, LSO; a row per replica; the leader's log strip.

    Text: ``str(cluster.describe_partition(...))``, a blank line, then the replica table. With no
    leader there is no strip (each replica's log is still readable with ``dump_log(broker=...)``).
    """
    pv = cluster.describe_partition(topic, partition)
    columns = ("broker", "status", "isLeader", "inIsr", "leaderEpoch", "LEO", "HW", "LSO", "batches")
    rows = [
        (
            r.broker_id,
            r.status,
            r.is_leader,
            r.broker_id in pv.isr,
            r.leader_epoch,
            r.log_end_offset,
            r.high_watermark,
            r.last_stable_offset,
            r.batches,
        )
        for r in pv.replica_views
    ]
    try:
        picture = strip(replica_log(cluster, topic, partition))
    except LeaderNotAvailableException:
        picture = ""
    return TableView(
        f"{pv}\n\n{plain_table(columns, rows)}",
        columns,
        rows,
        title=f"partition {topic}-{partition}",
        summary=str(pv),
        picture=picture,
        data=pv,
    )


def _topic_configs(cluster: Cluster, topic: str) -> str:
    config = cluster.topic_configs.get(topic)
    if config is None:
        return ""
    pairs = [
        (f.name.replace("_", "."), getattr(config, f.name))
        for f in dataclasses.fields(config)
        if getattr(config, f.name) is not None
    ]
    return ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in sorted(pairs))


def topics(cluster: Cluster, topic: str | None = None, *, include_internal: bool = False) -> TableView:
    """``kafka-topics.sh --describe [--topic T]``: every topic (or one), a row per partition.

    Rows add the leader's LEO, HW and LSO to the tool's columns. Internal topics
    (``__transaction_state``, ``__consumer_offsets``) are left out unless named or
    ``include_internal``. An unknown topic raises ``UnknownTopicOrPartitionException``.
    """
    counts = lookup.partition_counts(cluster)
    if topic is not None:
        lookup.require_topic(cluster, topic)
        names = [topic]
    else:
        names = [t for t in sorted(counts) if include_internal or t not in lookup.INTERNAL_TOPICS]
    lines = []
    rows = []
    for name in names:
        views = [cluster.describe_partition(name, p) for p in range(counts[name])]
        rf = len(views[0].replicas) if views else 0
        configs = _topic_configs(cluster, name)
        lines.append(f"Topic: {name}\tPartitionCount: {len(views)}\tReplicationFactor: {rf}\tConfigs: {configs}")
        for pv in views:
            leader = pv.leader if pv.leader in cluster.brokers else None
            replicas = ",".join(str(b) for b in pv.replicas)
            isr = ",".join(str(b) for b in pv.isr)
            lines.append(
                f"\tTopic: {name}\tPartition: {pv.partition}\tLeader: {'none' if leader is None else leader}"
                f"\tReplicas: {replicas}\tIsr: {isr}\tElr: N/A\tLastKnownElr: N/A"
            )
            rows.append(
                (name, pv.partition, leader, replicas, isr, pv.log_end_offset, pv.high_watermark, pv.last_stable_offset)
            )
    return TableView(
        "\n".join(lines),
        ("Topic", "Partition", "Leader", "Replicas", "Isr", "LEO", "HW", "LSO"),
        rows,
        title="kafka-topics.sh --describe" + (f" --topic {topic}" if topic is not None else ""),
        text_label="kafka-topics.sh output",
        data=names,
    )


def _user_partitions(names: tuple[str, ...]) -> str:
    return ",".join(n for n in names if not n.startswith("__"))


def brokers(cluster: Cluster) -> TableView:
    """Every broker: status (up, paused, down = crashed), fenced, the partitions it leads and follows, error counts."""
    views = cluster.describe_brokers()
    columns = ("broker", "status", "fenced", "leads", "follows", "leaderOf", "errors")
    rows = [
        (
            b.broker_id,
            b.status,
            b.fenced,
            len(b.leader_of),
            len(b.follower_of),
            _user_partitions(b.leader_of),
            ",".join(f"{k}={n}" for k, n in b.error_counts),
        )
        for b in views
    ]
    return TableView(
        plain_table(columns, rows),
        columns,
        rows,
        title=f"brokers · t={cluster.now_ms} ms",
        picture=svg.broker_row(views),
        data=views,
    )


def _summary_lines(cluster: Cluster, name: str | None) -> list[str]:
    views = cluster.describe_brokers()
    counts = lookup.partition_counts(cluster)
    user = [t for t in sorted(counts) if t not in lookup.INTERNAL_TOPICS]
    lines = [f"cluster: {name}"] if name else []
    lines.append(f"seed: {cluster.seed}")
    lines.append(f"simulated time: {cluster.now_ms} ms")
    lines.append("brokers: " + ", ".join(f"{b.broker_id} {b.status}{' (fenced)' if b.fenced else ''}" for b in views))
    lines.append("topics: " + (", ".join(f"{t} ({counts[t]} partitions)" for t in user) or "none"))
    lines.append(f"fingerprint: {cluster.fingerprint()}")
    return lines


def cluster_summary(cluster: Cluster, name: str | None = None) -> View:
    """One cluster: its name, seed, simulated time, brokers (up, paused, down = crashed), topics, fingerprint."""
    if name is not None and not isinstance(name, str):
        msg = f"name must be a str or None, got {name!r}"
        raise TypeError(msg)
    lines = _summary_lines(cluster, name)
    return View(
        "\n".join(lines),
        title=f"cluster {name}" if name else "cluster",
        picture=svg.broker_row(cluster.describe_brokers()),
        data=cluster,
    )


def clusters(session: Any) -> TableView:
    """Every cluster of a session (``eos_magics.Session``): name, current, seed, brokers, time, topics, clients."""
    columns = ("name", "current", "seed", "brokers", "simulated_ms", "topics", "clients")
    rows = []
    for name, entry in session.entries.items():
        c = entry.cluster
        rows.append(
            (
                name,
                name == session.current,
                c.seed,
                len(c.brokers),
                c.now_ms,
                ",".join(sorted(c.topics)),
                ",".join(entry.clients),
            )
        )
    return TableView(plain_table(columns, rows), columns, rows, title=f"{len(rows)} clusters", data=session)
