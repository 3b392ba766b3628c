"""read_committed on the client: which fetched batches the application may see (KIP-98).

What Kafka does
---------------
The broker does half of the work. For a ``read_committed`` fetch it stops at the partition's
*last stable offset* (LSO): the first offset of the oldest transaction still open, so nothing of
an undecided transaction is ever returned. Below the LSO every transaction is decided, but the
log still holds the data of the aborted ones. Rather than rewrite the log, the broker answers
with the list of *aborted transactions* that overlap the fetched range (from each replica's
``.txnindex``: producer id and first offset), and the consumer drops their batches itself.

The consumer's half (Java's ``CompletedFetch.nextFetchedBatch``) walks the batches in offset
order with the aborted list as a queue sorted by first offset:

* when a batch's last offset reaches the first offset of the queue's head, that producer id joins
  the set of *aborted producers* (its aborted transaction has begun);
* a transactional data batch of a producer in that set belongs to the aborted transaction and is
  dropped;
* the producer's ABORT marker (a control batch) ends that transaction: the producer id leaves the
  set, so its later transactions are read again;
* control batches (COMMIT and ABORT markers) are never given to the application, in either
  isolation level.

The position still moves past every dropped batch and marker, so the offsets an application sees
have gaps exactly where markers and aborted records sit. ``read_uncommitted`` only skips the
control batches; the broker then reads up to the high watermark and sends no aborted list.

:func:`visible_batches` is that walk as a pure function: no node, no clock, no trace.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from engine.config import IsolationLevel
from engine.log.records import ABORT

if TYPE_CHECKING:
    from engine.log.records import RecordBatch
    from engine.log.txn_index import AbortedTxn


@dataclasses.dataclass(frozen=True, slots=True)
class VisibleBatches:
    """What one fetched partition gives the application."""

    #: The data batches the application may see, in offset order (markers and aborted data removed).
    batches: tuple[RecordBatch, ...]
    #: The position after the fetched range: past the last batch, returned or dropped.
    next_offset: int
    #: How many transactional batches were dropped as part of an aborted transaction.
    aborted_dropped: int


def visible_batches(
    batches: Sequence[RecordBatch],
    fetch_offset: int,
    aborted: Iterable[AbortedTxn] | None,
    isolation: IsolationLevel,
) -> VisibleBatches:
    """Filter one partition's fetched ``batches`` for ``isolation`` (see the module docstring).

    ``fetch_offset`` is where the fetch started: batches that end before it are skipped (a batch
    may start below it; the caller trims its records). ``aborted`` is the fetch response's
    aborted-transactions list (None or empty for read_uncommitted). With no batch past
    ``fetch_offset``, ``next_offset`` is ``fetch_offset``.
    """
    read_committed = isolation is IsolationLevel.READ_COMMITTED
    queue: list[tuple[int, int]] = []
    if read_committed and aborted:
        queue = [(t.first_offset, t.producer_id) for t in aborted]
        heapq.heapify(queue)
    aborted_producers: set[int] = set()
    kept: list[RecordBatch] = []
    dropped = 0
    next_offset = fetch_offset
    for b in batches:
        if b.next_offset <= fetch_offset:
            continue
        next_offset = b.next_offset
        if read_committed:
            while queue and queue[0][0] <= b.last_offset:
                aborted_producers.add(heapq.heappop(queue)[1])
            if b.is_control:
                if b.control_type == ABORT:
                    aborted_producers.discard(b.producer_id)
                continue
            if b.is_transactional and b.producer_id in aborted_producers:
                dropped += 1
                continue
        elif b.is_control:
            continue
        kept.append(b)
    return VisibleBatches(tuple(kept), next_offset, dropped)
