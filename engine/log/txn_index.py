"""The aborted-transaction index of one partition replica (Kafka's ``.txnindex``).

Every ABORT marker that ends a non-empty transaction adds one entry: the producer id, the
first and last offsets of the aborted transaction, and the LSO when the marker was written. A
marker whose producer has no transaction open in the partition (an empty transaction, such as
a retried or fencing ABORT) adds nothing, as in Kafka, where ``appendEndTxnMarker`` completes no
transaction for it. A read_committed fetch returns the entries that overlap the fetched range,
and the consumer drops the batches of those producers inside those ranges (KIP-98).

Invariant (L9): the entries are exactly the non-empty aborted transactions of the partition
(transactional data ended by an ABORT marker), in marker order. The index is durable (it lives
on the node's disk) and is cut back with the log on truncation.
"""

from __future__ import annotations

from typing import NamedTuple

from engine.sim.disk import DurableList


class AbortedTxn(NamedTuple):
    """One aborted transaction, as a ``.txnindex`` line shows it."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def dump(self) -> str:
        """Return the line ``kafka-dump-log.sh`` prints for a ``.txnindex`` entry."""
        return (
            f"version: 0 producerId: {self.producer_id} firstOffset: {self.first_offset} "
            f"lastOffset: {self.last_offset} lastStableOffset: {self.last_stable_offset}"
        )


class TransactionIndex(DurableList):
    """The aborted transactions of one partition replica, in marker order: a durable list with a flush mark.

    ``append``, ``flush`` and ``lose_unflushed`` (power loss) are :class:`~engine.sim.disk.DurableList`'s.
    """

    __slots__ = ()

    @property
    def entries(self) -> list[AbortedTxn]:
        """The aborted transactions, flushed or not, in marker order."""
        return self.items

    def collect(self, fetch_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Return the aborted transactions overlapping ``[fetch_offset, upper_offset)``."""
        return [t for t in self.items if t.last_offset >= fetch_offset and t.first_offset < upper_offset]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or above ``offset``."""
        self.items = [t for t in self.items if t.last_offset < offset]
        self.flushed = min(self.flushed, len(self.items))

    def dump(self) -> str:
        """Return the whole index as ``kafka-dump-log.sh`` prints it."""
        return "\n".join(t.dump() for t in self.items)
