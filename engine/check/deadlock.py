"""Diagnose a request-reply deadlock inside a Kafka transaction from the cluster's white-box state.

The pattern: a service opens a transaction, produces a REQUEST inside it and waits for the REPLY
before committing. A responder that reads the request topic with ``isolation.level=read_committed``
fetches only below the partition's last stable offset (LSO), and an open transaction holds the LSO
at or below its first offset on the partition. So the request stays invisible until the
transaction ends, and the transaction waits for the reply: nothing moves until the coordinator
aborts the transaction after ``transaction.timeout.ms`` (:mod:`engine.coordinator.txn_timeout`).

:func:`explain_stall` answers "is this that deadlock?" with one line, or None: a short headline,
then labelled parts a reader (or a notebook's HTML) can find at a glance: ``Who waits for whom:``,
``Since:``, ``Why:``, ``Until:`` and ``Fix:``.
It reads what Kafka's own tools would show: the partition leader's log and LSO
(``kafka-dump-log.sh``, :mod:`engine.views.log_batches`), the producer-state table
(``describe-producers``) and the coordinator's metadata (``kafka-transactions.sh describe``).
:func:`timeout_abort` reads ``__transaction_state`` afterwards to say when and how the
coordinator ended the transaction.

Invariants: read-only; the same cluster state gives the same text. What it does not do: find the
request or the transactional id by itself (the caller names them), or diagnose other stalls (a
hanging transaction of another producer, an unavailable partition): those give None.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from engine.args import check_int, check_str
from engine.cluster import Cluster
from engine.config import IsolationLevel
from engine.coordinator.txn_state import TransactionState
from engine.views import lookup
from engine.views.log_batches import replica_log
from engine.views.transactions import describe_producers_rows, describe_transaction_row, transaction_state_rows

if TYPE_CHECKING:
    from engine.views.log_batches import BatchSummary

#: The fix, in one sentence: Kafka offers no way to read one's own open transaction from elsewhere.
FIX = (
    "Fix: commit the request first and wait for the reply in a new transaction (or outside one), "
    "or let the responder read read_uncommitted (and see aborted data)."
)
#: The diagnosis opens with this headline; its labelled parts follow on the same line.
HEADLINE = "deadlock: request-reply inside a transaction."


@dataclasses.dataclass(frozen=True, slots=True)
class TimeoutAbort:
    """How the coordinator ended a transaction that ran past its ``transaction.timeout.ms``."""

    #: when the coordinator wrote PrepareAbort to ``__transaction_state`` (simulated ms)
    prepare_abort_ms: int
    #: the transaction's start, as the coordinator recorded it
    txn_start_ms: int
    #: the transaction's ``transaction.timeout.ms``
    transaction_timeout_ms: int
    #: the producer epoch after the abort (bumped, so the stalled producer is fenced)
    producer_epoch: int

    def describe(self) -> str:
        """Return one sentence on the abort."""
        open_ms = self.prepare_abort_ms - self.txn_start_ms
        return (
            f"the coordinator aborted the transaction on its timeout: PrepareAbort in __transaction_state at "
            f"t={self.prepare_abort_ms} ms, {open_ms} ms after it began (transaction.timeout.ms "
            f"{self.transaction_timeout_ms} ms), with the producer epoch bumped to {self.producer_epoch}"
        )


def _check_isolation(value: Any) -> IsolationLevel:
    if not isinstance(value, str) or value not in tuple(IsolationLevel):
        msg = f"responder_isolation must be 'read_committed' or 'read_uncommitted', got {value!r}"
        raise ValueError(msg)
    return IsolationLevel(value)


def _check_cluster(cluster: Any) -> Cluster:
    if not isinstance(cluster, Cluster):
        msg = f"cluster must be an engine Cluster, got {type(cluster).__name__}"
        raise TypeError(msg)
    return cluster


def _batch_holding(batches: tuple[BatchSummary, ...], offset: int) -> BatchSummary | None:
    return next((b for b in batches if b.base_offset <= offset <= b.last_offset), None)


def explain_stall(
    cluster: Cluster,
    *,
    transactional_id: str,
    request_topic: str,
    partition: int,
    request_offset: int,
    responder_isolation: str,
) -> str | None:
    """Explain why a responder cannot see a request written inside ``transactional_id``'s transaction.

    Return one line (headline, then ``Who waits for whom:``, ``Since:``, ``Why:``, ``Until:``,
    ``Fix:``) when the request at ``request_topic``-``partition`` offset ``request_offset``
    belongs to that id's Ongoing transaction and sits at or above the partition's LSO while the
    responder reads ``read_committed``: the request-reply deadlock. Return None otherwise (the
    responder reads ``read_uncommitted``, the LSO is above the request, the request's batch is not
    in an open transaction of that id, or the transaction is already ending).

    Raises ``TypeError``/``ValueError`` for bad arguments (an offset past the log end among them),
    ``UnknownTopicOrPartitionException`` for a partition the cluster lacks,
    ``LeaderNotAvailableException`` when it has no leader, and what ``kafka-transactions.sh
    describe`` would answer for the transactional id (``TransactionalIdNotFoundException``, ...).
    """
    _check_cluster(cluster)
    check_str(transactional_id, "transactional_id")
    check_str(request_topic, "request_topic")
    check_int(partition, "partition", minimum=0)
    check_int(request_offset, "request_offset", minimum=0)
    isolation = _check_isolation(responder_isolation)
    lookup.require_partition(cluster, request_topic, partition)
    log = replica_log(cluster, request_topic, partition)
    tp = f"{request_topic}-{partition}"
    if request_offset >= log.log_end_offset:
        msg = f"{tp} has no offset {request_offset}: its log end offset is {log.log_end_offset}"
        raise ValueError(msg)
    txn = describe_transaction_row(cluster, transactional_id)
    if isolation == IsolationLevel.READ_UNCOMMITTED or log.last_stable_offset > request_offset:
        return None  # the responder fetches past the request (read_uncommitted reads up to the HW)
    batch = _batch_holding(log.batches, request_offset)
    if batch is None or batch.kind != "open" or batch.producer_id != txn.producer_id:
        return None  # not in an open transaction of this id: some other stall
    if txn.state != TransactionState.ONGOING.display_name or txn.start_time_ms is None:
        return None  # PrepareCommit/PrepareAbort: the markers are on their way and the LSO will move
    first = next(
        (
            r.current_txn_start_offset
            for r in describe_producers_rows(cluster, request_topic, partition)
            if r.producer_id == txn.producer_id
        ),
        None,
    )
    return _paragraph(cluster, txn, tp, request_offset, log.last_stable_offset, first)


def _paragraph(cluster: Cluster, txn: Any, tp: str, offset: int, lso: int, first: int | None) -> str:
    """Return the explanation of a diagnosed deadlock: the headline, then one short labelled part per question.

    One line, so it travels as a finding (``eos run``, a sweep's failures, a log); the labels are
    what a reader looks for: who waits for whom, since when, why, until when, and the fix.
    """
    start = txn.start_time_ms
    held = ""
    if first is not None and lso < first:
        held = f" (lower still than the transaction's first offset {first}: another open transaction holds it too)"
    interval = cluster.config.transaction_abort_timed_out_transaction_cleanup_interval_ms
    who = (
        f"the requester waits for the reply inside the open transaction of {txn.transactional_id!r} "
        f"(producer id {txn.producer_id}, epoch {txn.producer_epoch}, state {txn.state} since t={start} ms); "
        "the read_committed responder waits for the request, which that transaction hides."
    )
    why = (
        f"The request at {tp} offset {offset} belongs to the open transaction of {txn.transactional_id!r}; "
        f"the partition's LSO is {lso}{held}, and a read_committed consumer stops below the LSO."
    )
    until = (
        f"transaction.timeout.ms ({txn.transaction_timeout_ms} ms) aborts it at about "
        f"t={start + txn.transaction_timeout_ms} ms (the coordinator looks for timed-out transactions every "
        f"{interval} ms)."
    )
    since = f"t={start} ms, open for {cluster.now_ms - start} ms."
    return f"{HEADLINE} Who waits for whom: {who} Since: {since} Why: {why} Until: {until} {FIX}"


def timeout_abort(cluster: Cluster, transactional_id: str, *, txn_start_ms: int) -> TimeoutAbort | None:
    """Return how the coordinator aborted the transaction begun at ``txn_start_ms`` on its timeout.

    Read from ``__transaction_state``: the first PrepareAbort of that transaction written more
    than ``transaction.timeout.ms`` after its start. None when there is none (still open, committed,
    or aborted earlier by its producer).
    """
    _check_cluster(cluster)
    check_str(transactional_id, "transactional_id")
    check_int(txn_start_ms, "txn_start_ms", minimum=0)
    prepare_ms, timeout_ms, epoch = None, 0, -1
    for row in transaction_state_rows(cluster, transactional_id):
        v = row.value
        if v is None or v.txn_start_ms != txn_start_ms:
            continue
        if prepare_ms is None and v.state is TransactionState.PREPARE_ABORT:
            if row.create_time - txn_start_ms <= v.txn_timeout_ms:
                return None  # aborted before its timeout: by its producer (or a new instance of its id)
            prepare_ms, timeout_ms = row.create_time, v.txn_timeout_ms
        if prepare_ms is not None and v.state in (TransactionState.PREPARE_ABORT, TransactionState.COMPLETE_ABORT):
            epoch = max(epoch, v.producer_epoch)  # transaction version 2 bumps it again on completion
    if prepare_ms is None:
        return None
    return TimeoutAbort(prepare_ms, txn_start_ms, timeout_ms, epoch)
