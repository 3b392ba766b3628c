"""Shared helpers of the white-box invariants: anomaly construction, transaction spans, decisions.

A *transaction span* is what one producer id wrote in one partition between two markers: its
transactional data batches and the marker that ended them (or None: still open). A *decision* is
one PREPARE_COMMIT / PREPARE_ABORT of a transactional id in ``__transaction_state`` (rewrites of
the same prepare, left in the log by a failed write, are one decision), with whether a matching
COMPLETE_* followed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.check.anomaly import Anomaly

if TYPE_CHECKING:
    from engine.check.ground_truth import BatchRow, GroundTruth, TxnTransitionRow

TP = tuple[str, int]

PREPARE_TO_MARKER = {"PREPARE_COMMIT": "COMMIT", "PREPARE_ABORT": "ABORT"}
COMPLETE_TO_MARKER = {"COMPLETE_COMMIT": "COMMIT", "COMPLETE_ABORT": "ABORT"}


def show(v: Any) -> str:
    """Return a value as readable text (bytes decoded, invalid bytes escaped)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    return str(v)


def anomaly(kind: str, tp: TP | None, message: str, offsets: Iterable[int] = (), values: Iterable[Any] = ()) -> Anomaly:
    """Build an :class:`Anomaly` of a white-box kind."""
    return Anomaly(kind, key=tp, offsets=tuple(offsets), values=tuple(show(v) for v in values), message=message)


class TxnSpan(NamedTuple):
    """A producer's transactional data in one partition up to its marker (None: still open)."""

    producer_id: int
    first_offset: int
    marker_offset: int | None
    marker_epoch: int | None
    control_type: str | None
    data_offsets: tuple[int, ...]
    data_epochs: tuple[int, ...]


def txn_spans(batches: list[BatchRow]) -> tuple[list[TxnSpan], list[tuple[int, int]]]:
    """Split one log into transaction spans (closed in marker order, then open ones by first offset).

    Also return ``(offset, producer_id)`` of every non-transactional data batch written while
    its producer had a transaction open in the partition (the broker must refuse those).
    """
    open_: dict[int, tuple[int, list[int], list[int]]] = {}
    spans: list[TxnSpan] = []
    mixed: list[tuple[int, int]] = []
    for b in batches:
        pid = b.producer_id
        if pid < 0:
            continue
        if b.is_control:
            first, offs, epochs = open_.pop(pid, (b.base_offset, [], []))
            spans.append(
                TxnSpan(pid, first, b.base_offset, b.producer_epoch, b.control_type, tuple(offs), tuple(epochs))
            )
        elif b.is_transactional:
            entry = open_.setdefault(pid, (b.base_offset, [], []))
            entry[1].append(b.base_offset)
            entry[2].append(b.producer_epoch)
        elif pid in open_:
            mixed.append((b.base_offset, pid))
    for pid, (first, offs, epochs) in sorted(open_.items(), key=lambda kv: kv[1][0]):
        spans.append(TxnSpan(pid, first, None, None, None, tuple(offs), tuple(epochs)))
    return spans, mixed


class Decision(NamedTuple):
    """One end of a transaction decided by the coordinator."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    control_type: str
    partitions: tuple[TP, ...]
    offset: int
    completed: bool


def txn_histories(gt: GroundTruth) -> dict[str, list[TxnTransitionRow]]:
    """Return one history per transactional id: a loaded coordinator's, else the log's.

    When several coordinators describe the same id (they should not), the longest history is
    used (lowest broker id on ties).
    """
    by_source: dict[tuple[str, str, int], list[TxnTransitionRow]] = {}
    for row in gt.txn_history:
        by_source.setdefault((row.transactional_id, row.source, row.broker_id), []).append(row)
    out: dict[str, list[TxnTransitionRow]] = {}
    for txn_id in sorted({k[0] for k in by_source}):
        coord = sorted(
            ((k, rows) for k, rows in by_source.items() if k[0] == txn_id and k[1] == "coordinator"),
            key=lambda kr: (-len(kr[1]), kr[0][2]),
        )
        log = [rows for k, rows in sorted(by_source.items()) if k[0] == txn_id and k[1] == "log"]
        chosen = coord[0][1] if coord else (log[0] if log else [])
        out[txn_id] = sorted(chosen, key=lambda r: r.index)
    return out


def decisions(history: list[TxnTransitionRow]) -> list[Decision]:
    """Return the decisions of one transactional id's history, in order."""
    out: list[Decision] = []
    for row in history:
        marker = PREPARE_TO_MARKER.get(row.state)
        if marker is not None:
            d = Decision(
                row.transactional_id, row.producer_id, row.producer_epoch, marker, row.partitions, row.offset, False
            )
            last = out[-1] if out else None
            if last is not None and not last.completed and last[1:5] == d[1:5]:
                continue  # the same prepare written again after a failed write
            out.append(d)
            continue
        marker = COMPLETE_TO_MARKER.get(row.state)
        if marker is not None:
            for i in range(len(out) - 1, -1, -1):
                d = out[i]
                if (d.producer_id, d.producer_epoch, d.control_type) == (row.producer_id, row.producer_epoch, marker):
                    out[i] = d._replace(completed=True)
                    break
    return out


def all_decisions(gt: GroundTruth) -> list[Decision]:
    """Return every transactional id's decisions (ids sorted, each in history order)."""
    out: list[Decision] = []
    for history in txn_histories(gt).values():
        out.extend(decisions(history))
    return out
