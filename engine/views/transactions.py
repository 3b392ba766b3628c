"""``kafka-transactions.sh`` and the transaction dumps of ``kafka-dump-log.sh``, read from the engine.

Each subcommand has two forms: a ``*_rows`` function returning frozen dataclass rows (for widgets
and tests) and a function returning the text the real tool prints (views.md §3.1, §3.2):

=========================  ===================================================================
function                   real command
=========================  ===================================================================
``list_transactions``      ``kafka-transactions.sh list [--duration-filter MS]``
``describe_transaction``   ``kafka-transactions.sh describe --transactional-id ID``
``describe_producers``     ``kafka-transactions.sh describe-producers --topic T --partition P
                           [--broker-id B]``
``find_hanging``           ``kafka-transactions.sh find-hanging (--broker-id B | --topic T
                           [--partition P]) [--max-transaction-timeout MIN]``
``dump_txn_index``         ``kafka-dump-log.sh --files …/T-P/00000000000000000000.txnindex``
``dump_transaction_state`` ``kafka-dump-log.sh --transaction-log-decoder --files
                           …/__transaction_state-P/00000000000000000000.log``
=========================  ===================================================================

Tables are printed by :func:`format_table`, Kafka's ``ToolsUtils.prettyPrintTable``: every cell
left-aligned, right-padded to its column's width and followed by one TAB (also the last one);
a table without rows is its header alone. Text results carry no trailing newline.

Where the tool sends a request, the view reads the state the broker would answer from:
ListTransactions / DescribeTransactions read each coordinator's loaded metadata (a coordinator
still loading its partition, or a broker that is down, lists nothing, as it would answer with an
error); DescribeProducers reads a replica's producer-state table. Times are simulated ms.
``--duration-filter`` follows the broker's rule ``now - TransactionStartTimestamp > MS``, applied
to the start the coordinator holds (-1 for an Empty id, which therefore always passes; the
coordinator keeps the start of a completed transaction).

Views only read: nothing here changes the engine or adds a node to the world.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from engine import args
from engine.coordinator.txn_coordinator import TransactionCoordinator
from engine.coordinator.txn_log import decode_line
from engine.coordinator.txn_state import TransactionState
from engine.coordinator_lookup import TRANSACTION_STATE_TOPIC, partition_for
from engine.errors import (
    CoordinatorLoadInProgressException,
    CoordinatorNotAvailableException,
    KafkaError,
    LeaderNotAvailableException,
    NotLeaderOrFollowerException,
    TransactionalIdNotFoundException,
)
from engine.sim.node import NodeStatus
from engine.views import lookup
from engine.views.dump import batch_line

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.broker.broker import Broker
    from engine.coordinator.txn_log import TxnLogValue
    from engine.coordinator.txn_metadata import TransactionMetadata
    from engine.log.records import RecordBatch
    from engine.log.txn_index import AbortedTxn
    from engine.views.lookup import ClusterState


LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)
PRODUCERS_HEADERS = (
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)
#: ``find-hanging --max-transaction-timeout`` default, in minutes (Kafka's default
#: ``transaction.max.timeout.ms`` of 15 minutes).
DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN = 15
MS_PER_MIN = 60_000


# -- the table printer ----------------------------------------------------------------------


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Return a table as Kafka's ``ToolsUtils.prettyPrintTable`` prints it.

    Every cell is left-aligned and right-padded with spaces to its column's width (the longest
    of the header and the values) and followed by one TAB, the last cell of a row included.
    No rows: the header line alone.

    >>> format_table(["Id", "State"], [["tx-1", "Ongoing"]]).split("\\n")
    ['Id  \\tState  \\t', 'tx-1\\tOngoing\\t']
    """
    table = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    for row in table:
        if len(row) != len(headers):
            msg = f"row {row!r} has {len(row)} cells for {len(headers)} columns"
            raise ValueError(msg)
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    return "\n".join("".join(cell.ljust(widths[i]) + "\t" for i, cell in enumerate(row)) for row in table)


def _none(value: int | None) -> str:
    return "None" if value is None else str(value)


# -- rows -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class TransactionListing:
    """One row of ``list``."""

    transactional_id: str
    coordinator_id: int
    producer_id: int
    state: str

    def cells(self) -> tuple[str, ...]:
        """Return the printed cells."""
        return (self.transactional_id, str(self.coordinator_id), str(self.producer_id), self.state)


@dataclasses.dataclass(frozen=True, slots=True)
class TransactionDescription:
    """The row of ``describe``; ``start_time_ms``/``duration_ms`` are None when the start is -1."""

    coordinator_id: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    transaction_timeout_ms: int
    start_time_ms: int | None
    duration_ms: int | None
    topic_partitions: tuple[tuple[str, int], ...]

    def cells(self) -> tuple[str, ...]:
        """Return the printed cells."""
        return (
            str(self.coordinator_id),
            self.transactional_id,
            str(self.producer_id),
            str(self.producer_epoch),
            self.state,
            str(self.transaction_timeout_ms),
            _none(self.start_time_ms),
            _none(self.duration_ms),
            ",".join(f"{t}-{p}" for t, p in self.topic_partitions),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ProducerStateRow:
    """One active producer of a partition replica (``describe-producers``).

    ``coordinator_epoch`` is None when the replica has seen no marker from the producer (printed
    ``-1``); ``current_txn_start_offset`` is None when no transaction is open (printed ``None``).
    """

    topic: str
    partition: int
    broker_id: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int | None
    last_sequence: int
    last_timestamp: int
    current_txn_start_offset: int | None

    def cells(self) -> tuple[str, ...]:
        """Return the printed cells."""
        return (
            str(self.producer_id),
            str(self.producer_epoch),
            str(-1 if self.coordinator_epoch is None else self.coordinator_epoch),
            str(self.last_sequence),
            str(self.last_timestamp),
            _none(self.current_txn_start_offset),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class HangingTransaction:
    """One row of ``find-hanging``: an open transaction its coordinator does not account for."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp: int
    duration_min: int
    #: Why it hangs: ``no transactional id``, ``not found`` or ``partition not in the transaction``.
    reason: str

    def cells(self) -> tuple[str, ...]:
        """Return the printed cells."""
        return (
            self.topic,
            str(self.partition),
            str(self.producer_id),
            str(self.producer_epoch),
            str(self.coordinator_epoch),
            str(self.start_offset),
            str(self.last_timestamp),
            str(self.duration_min),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class TxnLogRecord:
    """One record of ``__transaction_state`` (``value`` None: a tombstone)."""

    partition: int
    offset: int
    create_time: int
    transactional_id: str
    value: TxnLogValue | None

    @property
    def state(self) -> str:
        """Return the state's display name (``<DELETE>`` for a tombstone)."""
        return "<DELETE>" if self.value is None else self.value.state.display_name

    def decoded(self) -> str:
        """Return the ``--transaction-log-decoder`` text (``key: … payload: …``)."""
        return decode_line(self.transactional_id, self.value)


# -- coordinators ---------------------------------------------------------------------------


def _up(broker: Broker) -> bool:
    return broker.status is NodeStatus.UP


def _coordinator(broker: Broker) -> TransactionCoordinator | None:
    for ext in broker.extensions:
        if isinstance(ext, TransactionCoordinator):
            return ext
    return None


def loaded_transactions(cluster: ClusterState) -> list[tuple[int, TransactionMetadata]]:
    """Return ``(coordinator id, metadata)`` of every loaded id, by coordinator then id."""
    out = []
    for b in sorted(cluster.brokers):
        broker = cluster.brokers[b]
        tc = _coordinator(broker)
        if tc is None or not _up(broker):
            continue
        described = tc.describe()
        out.extend((b, described[txn_id]) for txn_id in sorted(described))
    return out


def _find(cluster: ClusterState, transactional_id: str) -> tuple[int, TransactionMetadata] | None:
    """Return the coordinator and metadata of an id, as DescribeTransactions would answer."""
    try:
        return _describe(cluster, transactional_id)
    except KafkaError:
        return None


def _describe(cluster: ClusterState, transactional_id: str) -> tuple[int, TransactionMetadata]:
    """Return the coordinator and metadata of an id, or raise what DescribeTransactions would answer.

    ``TransactionalIdNotFoundException`` when the coordinator is up and does not know the id (or no
    id was ever initialised, so ``__transaction_state`` does not exist), ``CoordinatorNotAvailableException``
    when the id's coordinator is down or there is none, ``CoordinatorLoadInProgressException`` while it
    loads its partition.
    """
    n = cluster.config.transaction_state_log_num_partitions
    p = partition_for(transactional_id, n)
    state = cluster.controller.partitions.get((TRANSACTION_STATE_TOPIC, p))
    not_found = (
        f"The transactional id {transactional_id!r} was not found: its coordinator does not know it (never "
        "initialised with init_transactions(), or expired)"
    )
    if state is None:
        raise TransactionalIdNotFoundException(not_found, transactional_id=transactional_id)
    broker = cluster.brokers.get(state.leader)
    tc = _coordinator(broker) if broker is not None else None
    if broker is None or tc is None or not _up(broker):
        where = f"broker {state.leader} is {broker.status.value}" if broker is not None else "it has no leader now"
        msg = (
            f"The coordinator of transactional id {transactional_id!r} ({TRANSACTION_STATE_TOPIC}-{p}) is not "
            f"available: {where}; retry when it is back or another broker leads the partition"
        )
        raise CoordinatorNotAvailableException(msg, transactional_id=transactional_id)
    if p in tc.loading:
        msg = f"broker {state.leader} is still loading {TRANSACTION_STATE_TOPIC}-{p}; retry shortly"
        raise CoordinatorLoadInProgressException(msg, transactional_id=transactional_id)
    md = tc.describe().get(transactional_id)
    if md is None:
        raise TransactionalIdNotFoundException(not_found, transactional_id=transactional_id)
    return state.leader, md


def _current_partitions(md: TransactionMetadata) -> tuple[tuple[str, int], ...]:
    """Return the partitions of the transaction in progress (none once it is complete).

    Kafka's coordinator empties the set when it completes a transaction (``prepareComplete``);
    the engine keeps it in COMPLETE_* states, so it is ignored there.
    """
    if md.state in (TransactionState.ONGOING, TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
        return md.partitions
    return ()


# -- list -----------------------------------------------------------------------------------


def list_transactions_rows(
    cluster: ClusterState, duration_filter_ms: int | None = None, *, producer_ids: Sequence[int] | None = None
) -> tuple[TransactionListing, ...]:
    """Return every transactional id known to a coordinator, by coordinator id then id.

    ``duration_filter_ms``: keep ids with ``now - start > MS`` (``--duration-filter``);
    ``producer_ids``: keep those producer ids (the request's ProducerIdFilters, used by find-hanging).
    """
    now = cluster.now_ms
    if duration_filter_ms is not None:
        args.check_int(duration_filter_ms, "duration filter", minimum=0)
    rows = []
    for coordinator, md in loaded_transactions(cluster):
        if md.state is TransactionState.DEAD:
            continue  # the broker never lists DEAD (an id being expired)
        if producer_ids is not None and md.producer_id not in producer_ids:
            continue
        if duration_filter_ms is not None and duration_filter_ms >= 0 and now - md.txn_start_ms <= duration_filter_ms:
            continue
        rows.append(TransactionListing(md.transactional_id, coordinator, md.producer_id, md.state.display_name))
    return tuple(rows)


def list_transactions(cluster: ClusterState, duration_filter_ms: int | None = None) -> str:
    """Return ``kafka-transactions.sh list [--duration-filter MS]``."""
    return format_table(LIST_HEADERS, [r.cells() for r in list_transactions_rows(cluster, duration_filter_ms)])


# -- describe -------------------------------------------------------------------------------


def describe_transaction_row(cluster: ClusterState, transactional_id: str) -> TransactionDescription:
    """Return the ``describe`` row of an id; raise as DescribeTransactions answers (see :func:`_describe`)."""
    args.check_str(transactional_id, "transactional id")
    coordinator, md = _describe(cluster, transactional_id)
    start = None if md.txn_start_ms < 0 else md.txn_start_ms
    return TransactionDescription(
        coordinator,
        transactional_id,
        md.producer_id,
        md.producer_epoch,
        md.state.display_name,
        md.txn_timeout_ms,
        start,
        None if start is None else cluster.now_ms - start,
        tuple(sorted(md.partitions)),
    )


def describe_transaction(cluster: ClusterState, transactional_id: str) -> str:
    """Return ``kafka-transactions.sh describe --transactional-id ID``."""
    return format_table(DESCRIBE_HEADERS, [describe_transaction_row(cluster, transactional_id).cells()])


# -- describe-producers ---------------------------------------------------------------------


def _replica_broker(cluster: ClusterState, topic: str, partition: int, broker_id: int | None) -> int:
    """Return the broker DescribeProducers goes to; raise what it would answer.

    ``UnknownTopicOrPartitionException`` (no such partition), ``ValueError`` (no such broker),
    ``LeaderNotAvailableException`` (no leader and no ``broker_id``), ``NotLeaderOrFollowerException``
    (the broker is down, not a replica, or has not loaded the partition).
    """
    b = lookup.hosting_broker(cluster, topic, partition, broker_id)
    broker = cluster.brokers[b]
    if not _up(broker) or (topic, partition) not in broker.replicas:
        which = f"broker {b}" if broker_id is not None else f"the leader (broker {b})"
        msg = f"{which} has no readable replica of {topic}-{partition} now ({broker.status.value})"
        raise NotLeaderOrFollowerException(msg, topic=topic, partition=partition)
    return b


def describe_producers_rows(
    cluster: ClusterState, topic: str, partition: int = 0, broker_id: int | None = None
) -> tuple[ProducerStateRow, ...]:
    """Return the active producers of a replica (the leader's unless ``broker_id``), by producer id."""
    b = _replica_broker(cluster, topic, partition, broker_id)
    r = cluster.brokers[b].replicas[(topic, partition)]
    rows = []
    for pid in sorted(r.producers.producers):
        e = r.producers.producers[pid]
        rows.append(
            ProducerStateRow(
                topic,
                partition,
                b,
                pid,
                e.producer_epoch,
                None if e.coordinator_epoch < 0 else e.coordinator_epoch,
                e.last_seq,
                e.last_timestamp,
                e.current_txn_first_offset,
            )
        )
    return tuple(rows)


def describe_producers(cluster: ClusterState, topic: str, partition: int = 0, broker_id: int | None = None) -> str:
    """Return ``kafka-transactions.sh describe-producers --topic T --partition P [--broker-id B]``."""
    return format_table(
        PRODUCERS_HEADERS, [r.cells() for r in describe_producers_rows(cluster, topic, partition, broker_id)]
    )


# -- find-hanging ---------------------------------------------------------------------------


def _partitions_to_search(
    cluster: ClusterState, broker_id: int | None, topic: str | None, partition: int | None
) -> list[tuple[str, int]]:
    keys = sorted(cluster.controller.partitions)
    if broker_id is not None:
        if topic is not None or partition is not None:
            msg = "find-hanging takes --broker-id or --topic [--partition], not both"
            raise ValueError(msg)
        lookup.require_broker(cluster, broker_id)
        return [k for k in keys if broker_id in cluster.controller.partitions[k].replicas]
    if topic is None:
        msg = "find-hanging needs --broker-id or --topic"
        raise ValueError(msg)
    if partition is not None:
        lookup.require_partition(cluster, topic, partition)
        return [(topic, partition)]
    lookup.require_topic(cluster, topic)
    return [k for k in keys if k[0] == topic]


def find_hanging_rows(
    cluster: ClusterState,
    broker_id: int | None = None,
    topic: str | None = None,
    partition: int | None = None,
    max_transaction_timeout_min: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
) -> tuple[HangingTransaction, ...]:
    """Return the hanging transactions, with the real tool's logic.

    Candidates: producers with an open transaction in a searched partition (DescribeProducers,
    sent to ``broker_id`` if given, else to each leader) whose ``now - LastTimestamp`` exceeds the
    max timeout. A candidate hangs if ListTransactions filtered by its producer id finds no
    transactional id, or DescribeTransactions does not find that id, or the partition is not
    among the transaction's current partitions.
    """
    now = cluster.now_ms
    args.check_int(max_transaction_timeout_min, "max transaction timeout (minutes)", minimum=0)
    max_ms = max_transaction_timeout_min * MS_PER_MIN
    candidates: list[ProducerStateRow] = []
    for t, p in _partitions_to_search(cluster, broker_id, topic, partition):
        try:
            producers = describe_producers_rows(cluster, t, p, broker_id)
        except (NotLeaderOrFollowerException, LeaderNotAvailableException):
            if topic is not None and partition is not None:
                raise
            continue  # the real tool fails the whole call; a view skips an unreadable partition
        candidates.extend(
            s for s in producers if s.current_txn_start_offset is not None and now - s.last_timestamp > max_ms
        )
    if not candidates:
        return ()
    listed = list_transactions_rows(cluster, producer_ids=sorted({c.producer_id for c in candidates}))
    txn_ids = {row.producer_id: row.transactional_id for row in listed}
    rows = []
    for c in candidates:
        txn_id = txn_ids.get(c.producer_id)
        found = _find(cluster, txn_id) if txn_id is not None else None
        if txn_id is None:
            reason = "no transactional id"
        elif found is None:
            reason = "not found"
        elif (c.topic, c.partition) not in _current_partitions(found[1]):
            reason = "partition not in the transaction"
        else:
            continue
        rows.append(
            HangingTransaction(
                c.topic,
                c.partition,
                c.producer_id,
                c.producer_epoch,
                -1 if c.coordinator_epoch is None else c.coordinator_epoch,
                c.current_txn_start_offset if c.current_txn_start_offset is not None else -1,
                c.last_timestamp,
                (now - c.last_timestamp) // MS_PER_MIN,
                reason,
            )
        )
    return tuple(rows)


def find_hanging(
    cluster: ClusterState,
    broker_id: int | None = None,
    topic: str | None = None,
    partition: int | None = None,
    max_transaction_timeout_min: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
) -> str:
    """Return ``kafka-transactions.sh find-hanging (--broker-id B | --topic T [--partition P])``."""
    rows = find_hanging_rows(cluster, broker_id, topic, partition, max_transaction_timeout_min)
    return format_table(HANGING_HEADERS, [r.cells() for r in rows])


# -- dumps ----------------------------------------------------------------------------------


def _segment_path(broker_id: int, tp: str, suffix: str) -> str:
    return f"/var/lib/kafka/data-{broker_id}/{tp}/00000000000000000000.{suffix}"


def txn_index_rows(
    cluster: ClusterState, topic: str, partition: int = 0, broker_id: int | None = None
) -> tuple[AbortedTxn, ...]:
    """Return the aborted-transaction index of a replica (the leader's unless ``broker_id``), read from its disk."""
    b = lookup.hosting_broker(cluster, topic, partition, broker_id)
    index = cluster.brokers[b].disk.get(f"txnindex:{topic}-{partition}")
    return tuple(index.entries) if index is not None else ()


def dump_txn_index(cluster: ClusterState, topic: str, partition: int = 0, broker_id: int | None = None) -> str:
    """Return ``kafka-dump-log.sh --files …/T-P/00000000000000000000.txnindex``.

    ``Dumping <file>``, then one ``version: 0 producerId: … firstOffset: … lastOffset: …
    lastStableOffset: …`` line per aborted transaction, in marker order.
    """
    b = lookup.hosting_broker(cluster, topic, partition, broker_id)
    lines = [f"Dumping {_segment_path(b, f'{topic}-{partition}', 'txnindex')}"]
    lines.extend(t.dump() for t in txn_index_rows(cluster, topic, partition, b))
    return "\n".join(lines)


def _txn_state_logs(cluster: ClusterState, transactional_id: str | None) -> list[tuple[int, int, list[RecordBatch]]]:
    """Return ``(partition, leader, batches)`` of the ``__transaction_state`` partitions to read."""
    n = cluster.config.transaction_state_log_num_partitions
    wanted = range(n) if transactional_id is None else [partition_for(transactional_id, n)]
    out = []
    for p in wanted:
        state = cluster.controller.partitions.get((TRANSACTION_STATE_TOPIC, p))
        if state is None or state.leader not in cluster.brokers:
            continue
        log = cluster.brokers[state.leader].disk.get(f"log:{TRANSACTION_STATE_TOPIC}-{p}")
        if log is not None and log.batches:
            out.append((p, state.leader, list(log.batches)))
    return out


def transaction_state_rows(cluster: ClusterState, transactional_id: str | None = None) -> tuple[TxnLogRecord, ...]:
    """Return every ``__transaction_state`` record (of one id if given), oldest first.

    Read from each partition leader's log on disk: the whole history, not only the latest state.
    Records of different partitions are ordered by append time, then partition, then offset.
    """
    if transactional_id is not None:
        args.check_str(transactional_id, "transactional id")
    rows = []
    for p, _leader, batches in _txn_state_logs(cluster, transactional_id):
        for b in batches:
            if b.is_control:
                continue
            for i, value in enumerate(b.values):
                key = b.keys[i]
                if transactional_id is None or key == transactional_id:
                    rows.append(TxnLogRecord(p, b.base_offset + i, b.record_timestamp(i), key, value))
    rows.sort(key=lambda r: (r.create_time, r.partition, r.offset))
    return tuple(rows)


def _key_size(transactional_id: str) -> int:
    # TransactionLogKey v0: version (int16), TransactionalId (int16 length + UTF-8).
    return 2 + 2 + len(transactional_id.encode())


def _value_size(value: TxnLogValue | None) -> int:
    # TransactionLogValue v0: version, ProducerId, ProducerEpoch, TransactionTimeoutMs,
    # TransactionStatus, TransactionPartitions [Topic, PartitionIds], last-update and start times.
    if value is None:
        return -1
    size = 2 + 8 + 2 + 4 + 1 + 4 + 8 + 8
    topics: dict[str, int] = {}
    for t, _p in value.partitions:
        topics[t] = topics.get(t, 0) + 1
    for t in sorted(topics):
        size += 2 + len(t.encode()) + 4 + 4 * topics[t]
    return size


def dump_transaction_state(cluster: ClusterState, transactional_id: str | None = None) -> str:
    """Return ``kafka-dump-log.sh --transaction-log-decoder`` on the ``__transaction_state`` partitions.

    One file per non-empty partition (only the id's partition, and only its records, when
    ``transactional_id`` is given), in partition order; inside a file, batches in offset order,
    each batch line followed by its records' ``| offset: … key: transaction_metadata::… payload:
    …`` lines. ``keySize``/``valueSize`` are the sizes of the version-0 encoding.
    """
    if transactional_id is not None:
        args.check_str(transactional_id, "transactional id")
    lines: list[str] = []
    for p, leader, batches in _txn_state_logs(cluster, transactional_id):
        lines.append(f"Dumping {_segment_path(leader, f'{TRANSACTION_STATE_TOPIC}-{p}', 'log')}")
        lines.append(f"Log starting offset: {batches[0].base_offset}")
        position = 0
        for b in batches:
            records = []
            for i, value in enumerate(b.values):
                key = b.keys[i]
                if b.is_control or (transactional_id is not None and key != transactional_id):
                    continue
                records.append(
                    f"| offset: {b.base_offset + i} CreateTime: {b.record_timestamp(i)} keySize: {_key_size(key)} "
                    f"valueSize: {_value_size(value)} sequence: -1 headerKeys: [] {decode_line(key, value)}"
                )
            if records:
                lines.append(batch_line(b, position))
                lines.extend(records)
            position += b.size_bytes
    return "\n".join(lines)
