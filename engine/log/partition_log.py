"""One replica's log of one partition: a durable list of whole batches and its leader-epoch cache.

Invariants
----------
- Batches are contiguous: each batch's ``base_offset`` is the previous batch's ``next_offset``.
- ``log_end_offset`` (LEO) is the offset the next appended record will get.
- The leader-epoch cache holds ``(leader_epoch, start_offset)`` pairs with both strictly
  increasing; it answers "where does epoch e end?" for truncation (KIP-101/KIP-279), so a
  follower that comes back after a leader change cuts its divergent tail exactly.
- Segments roll when the active segment passes ``segment_bytes``; ``append`` reports each roll
  to the owner so it can write a producer-state snapshot (as Kafka does on roll).

This object lives on a node's :class:`~engine.sim.disk.Disk` and survives crashes. ``flush``
and ``lose_unflushed`` model the page cache (see ``engine/sim/disk.py``).

Not modelled: retention and deletion, compaction, indexes other than the transaction index,
bytes on disk (sizes are estimates).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from engine.log.records import RecordBatch

#: Default segment size; Kafka's ``log.segment.bytes`` is 1 GiB, far beyond simulated runs, so
#: the simulation rolls at 1 MiB to exercise snapshots.
DEFAULT_SEGMENT_BYTES = 1 << 20


class PartitionLog:
    """The batches of one partition replica."""

    __slots__ = (
        "_bases",
        "batches",
        "epoch_cache",
        "flushed_batches",
        "log_end_offset",
        "log_start_offset",
        "segment_bases",
        "segment_bytes",
        "segment_size",
        "topic_partition",
    )

    def __init__(self, topic_partition: str, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> None:
        self.topic_partition = topic_partition
        self.batches: list[RecordBatch] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.epoch_cache: list[tuple[int, int]] = []
        self.flushed_batches = 0
        self.segment_bytes = segment_bytes
        self.segment_size = 0
        self.segment_bases: list[int] = [0]

    # -- writing ----------------------------------------------------------------------------

    def append(self, batch: RecordBatch) -> bool:
        """Append a batch whose offsets are already assigned (leader) or copied (follower).

        Returns True when the append rolled the segment: the owner then writes a producer-state
        snapshot *after* it has applied this batch's producer state (so the snapshot covers it).
        """
        if batch.base_offset != self.log_end_offset:
            msg = (
                f"{self.topic_partition}: batch at {batch.base_offset} does not follow "
                f"the log end {self.log_end_offset}"
            )
            raise ValueError(msg)
        epoch = batch.partition_leader_epoch
        cache = self.epoch_cache
        if epoch >= 0 and (not cache or epoch > cache[-1][0]):
            cache.append((epoch, batch.base_offset))
        self.batches.append(batch)
        self._bases.append(batch.base_offset)
        self.log_end_offset = batch.base_offset + len(batch.values)
        self.segment_size += batch.size_bytes
        if self.segment_size >= self.segment_bytes:
            self.segment_size = 0
            self.segment_bases.append(self.log_end_offset)
            return True
        return False

    def append_slice(self, batches: Sequence[RecordBatch]) -> bool:
        """Append a follower's fetched slice at once; return False, appending nothing, if it would roll.

        The batches carry the leader's offsets and must follow each other from the log end (as
        :meth:`append` checks one by one; a gap raises ``ValueError`` before anything changes).
        A slice that would roll the segment is left to :meth:`append`, batch by batch, so the
        owner still snapshots producer state exactly where the roll happened. Kafka's follower
        appends a fetched batch set the same way, as one ``LogAppendInfo``
        (``UnifiedLog.appendAsFollower``).
        """
        end = self.log_end_offset
        size = self.segment_size
        cache = self.epoch_cache
        last_epoch = cache[-1][0] if cache else -1
        new_epochs: list[tuple[int, int]] = []
        bases: list[int] = []
        for b in batches:
            base = b.base_offset
            if base != end:
                msg = f"{self.topic_partition}: batch at {base} does not follow the log end {end}"
                raise ValueError(msg)
            epoch = b.partition_leader_epoch
            if epoch > last_epoch:  # a negative epoch never is (last_epoch starts at -1)
                new_epochs.append((epoch, base))
                last_epoch = epoch
            bases.append(base)
            end = base + len(b.values)
            size += b.size_bytes
        if size >= self.segment_bytes:
            return False
        cache.extend(new_epochs)
        self.batches.extend(batches)
        self._bases.extend(bases)
        self.log_end_offset = end
        self.segment_size = size
        return True

    def truncate_to(self, offset: int) -> int:
        """Remove every batch at or above ``offset``; return how many records were removed.

        ``offset`` must fall on a batch boundary (Kafka truncates whole batches too).
        """
        if offset >= self.log_end_offset:
            return 0
        i = bisect.bisect_left(self._bases, offset)
        removed = self.log_end_offset - offset
        del self.batches[i:]
        del self._bases[i:]
        self.log_end_offset = self.batches[-1].next_offset if self.batches else self.log_start_offset
        self.flushed_batches = min(self.flushed_batches, len(self.batches))
        self.epoch_cache = [(e, s) for e, s in self.epoch_cache if s < self.log_end_offset]
        self.segment_bases = [b for b in self.segment_bases if b <= self.log_end_offset] or [0]
        return removed

    # -- durability (called through the node's Disk) ----------------------------------------

    def flush(self) -> None:
        """Make every batch durable."""
        self.flushed_batches = len(self.batches)

    def lose_unflushed(self) -> int:
        """Drop the unflushed tail (power loss); return the number of records lost."""
        if self.flushed_batches >= len(self.batches):
            return 0
        cut = self.batches[self.flushed_batches].base_offset
        return self.truncate_to(cut)

    # -- reading ----------------------------------------------------------------------------

    def read(self, fetch_offset: int, max_bytes: int, upper_offset: int | None = None) -> list[RecordBatch]:
        """Return whole batches from the one holding ``fetch_offset`` on.

        At least one batch is returned when any exists (as Kafka does, so a large batch can
        always make progress). ``upper_offset`` excludes batches starting at or beyond it.
        """
        bases = self._bases
        i = bisect.bisect_right(bases, fetch_offset) - 1
        i = max(i, 0)
        out: list[RecordBatch] = []
        size = 0
        n = len(self.batches)
        while i < n:
            b = self.batches[i]
            if upper_offset is not None and b.base_offset >= upper_offset:
                break
            if b.next_offset <= fetch_offset:
                i += 1
                continue
            if out and size + b.size_bytes > max_bytes:
                break
            out.append(b)
            size += b.size_bytes
            i += 1
        return out

    def batch_at(self, offset: int) -> RecordBatch | None:
        """Return the batch holding ``offset``, or None."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return None
        b = self.batches[i]
        return b if b.base_offset <= offset < b.next_offset else None

    def offset_for_timestamp(self, target: int) -> tuple[int, int, int] | None:
        """Return ``(timestamp, offset, leader_epoch)`` of the first record whose timestamp is >= ``target``.

        In offset order from the log start, control records included, as Kafka's
        ``UnifiedLog.fetchOffsetByTimestamp`` finds it (its time index only skips ahead to the
        same record); None when no record qualifies.
        """
        for b in self.batches:
            if b.next_offset <= self.log_start_offset:
                continue
            stamps = b.timestamps or (b.create_time,) * b.count
            for i, ts in enumerate(stamps):
                if ts >= target and b.base_offset + i >= self.log_start_offset:
                    return ts, b.base_offset + i, b.partition_leader_epoch
        return None

    def max_timestamp_offset(self) -> tuple[int, int, int] | None:
        """Return ``(timestamp, offset, leader_epoch)`` of the first record with the largest timestamp (KIP-734).

        None for an empty log.
        """
        best: tuple[int, int, int] | None = None
        for b in self.batches:
            stamps = b.timestamps or (b.create_time,) * b.count
            for i, ts in enumerate(stamps):
                if best is None or ts > best[0]:
                    best = (ts, b.base_offset + i, b.partition_leader_epoch)
        return best

    def latest_epoch(self) -> int:
        """Return the leader epoch of the last batch, or -1 for an empty log."""
        return self.epoch_cache[-1][0] if self.epoch_cache else -1

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """Answer OffsetsForLeaderEpoch: the largest epoch ≤ ``epoch`` and where it ends.

        Returns ``(epoch_found, end_offset)``; ``(-1, -1)`` when no epoch ≤ ``epoch`` exists.
        The end of an epoch is the start of the next larger epoch, or the log end.
        """
        cache = self.epoch_cache
        found = -1
        for i, (e, _start) in enumerate(cache):
            if e > epoch:
                return (found, cache[i][1]) if found >= 0 else (-1, -1)
            found = e
        return (found, self.log_end_offset) if found >= 0 else (-1, -1)

    def __len__(self) -> int:
        return len(self.batches)
