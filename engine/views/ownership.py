"""Who owned each partition of a consumer group, when, and when nobody did: read from the trace.

Role
----
:func:`ownership` turns the consumers' own assignment events into, per group and partition, the
intervals of simulated time each member owned the partition and the **gaps** when no member did.
It is how a notebook or a test measures what a rebalance costs (eager against cooperative
against KIP-848) from the engine's record, not from its own bookkeeping.

What counts as owning
---------------------
A subscribed consumer traces ``consumer.assignment`` (:mod:`engine.trace_events`) whenever its
group changes what it reads: the full list of partitions it owns from then on (an eager rebalance
revokes everything and assigns anew, a cooperative one and a KIP-848 reconciliation only move
what moves). A member owns a partition from the event that adds it to the event that takes it
away, and only while its process runs:

==================  ========================================================================
event               effect on the member's ownership
==================  ========================================================================
assignment          owns exactly the listed partitions from now on (shrinking it is a
                    *revocation*, listed in :attr:`Ownership.revocations`)
``crash``           owns nothing from now on (a crashed consumer forgets its assignment)
``pause``           stops serving what it owns (a paused process reads nothing) until
``resume``          it serves its assignment again, whatever the group did meanwhile (a zombie
                    may then overlap the partition's new owner until it learns it was fenced)
==================  ========================================================================

A **gap** is a stretch of time, after the partition was first owned in the group (or from
``start_ms``) up to ``end_ms``, with no member owning it. A partition no member of the group ever
owned is not listed.

Invariants
----------
Pure: it reads trace events (:class:`engine.sim.trace.TraceEvent`) and nothing else; the same
events give the same answer, sorted by group, topic and partition. Intervals are half-open,
``[start_ms, end_ms)``; an empty one (owned and given up at the same instant) is dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from engine import trace_events as events

__all__ = ["Interval", "Ownership", "PartitionOwnership", "Revocation", "ownership"]


@dataclasses.dataclass(frozen=True, slots=True)
class Interval:
    """``[start_ms, end_ms)`` of simulated time; ``member`` owned the partition then (None: a gap)."""

    member: str | None
    start_ms: int
    end_ms: int

    @property
    def ms(self) -> int:
        """The interval's length in simulated milliseconds."""
        return self.end_ms - self.start_ms


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionOwnership:
    """One partition of one group: who owned it when, and the gaps when nobody did."""

    group: str
    topic: str
    partition: int
    #: Every member's ownership intervals, by start time (they may overlap: a zombie and its successor).
    owned: tuple[Interval, ...]
    #: The stretches with no owner, by start time (``member`` is None).
    gaps: tuple[Interval, ...]

    @property
    def gap_ms(self) -> int:
        """The partition's total time without an owner."""
        return sum(g.ms for g in self.gaps)

    @property
    def owners(self) -> tuple[str, ...]:
        """The members that owned it, in the order they started to (each once)."""
        return tuple(dict.fromkeys(i.member for i in self.owned if i.member is not None))


@dataclasses.dataclass(frozen=True, slots=True)
class Revocation:
    """A member's assignment shrank while it ran: ``partitions`` were taken from it at ``time_ms``."""

    group: str
    member: str
    time_ms: int
    partitions: tuple[tuple[str, int], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Ownership:
    """Every partition's ownership over ``[start_ms, end_ms)``, and the revocations in that window."""

    start_ms: int
    end_ms: int
    partitions: tuple[PartitionOwnership, ...]
    revocations: tuple[Revocation, ...]

    def group(self, group: str) -> tuple[PartitionOwnership, ...]:
        """The partitions of one group, by topic and partition."""
        return tuple(p for p in self.partitions if p.group == group)

    def gap_ms(self, group: str) -> dict[tuple[str, int], int]:
        """Per partition of ``group``, its time without an owner (0 for one never without)."""
        return {(p.topic, p.partition): p.gap_ms for p in self.group(group)}

    def revoked_from(self, group: str, topic: str, partition: int) -> tuple[str, ...]:
        """The members of ``group`` the partition was revoked from in the window, in time order."""
        tp = (topic, partition)
        return tuple(r.member for r in self.revocations if r.group == group and tp in r.partitions)

    def revoked(self, group: str) -> dict[str, tuple[tuple[str, int], ...]]:
        """Per member of ``group``, every partition revoked from it in the window, sorted."""
        out: dict[str, set[tuple[str, int]]] = {}
        for r in self.revocations:
            if r.group == group:
                out.setdefault(r.member, set()).update(r.partitions)
        return {m: tuple(sorted(tps)) for m, tps in sorted(out.items())}


def _partition(name: str) -> tuple[str, int]:
    topic, _, number = name.rpartition("-")
    return topic, int(number)


def ownership(
    trace: Iterable[Any],
    *,
    end_ms: int,
    start_ms: int | None = None,
    groups: Iterable[str] | None = None,
) -> Ownership:
    """Read ownership intervals and gaps from ``trace`` (see the module docstring).

    Parameters
    ----------
    trace
        Trace events in order (``cluster.world.trace``, or any iterable of them).
    end_ms
        Where the window ends: intervals still open are closed here (``cluster.now_ms``).
    start_ms
        Where the window starts: intervals and gaps are clipped to it, revocations before it are
        left out. Default: each partition's window starts when it was first owned in its group.
    groups
        Only these groups (default: every group whose consumers traced an assignment).

    Returns
    -------
    Ownership
        The intervals, gaps and revocations, sorted by group, topic and partition.
    """
    wanted = None if groups is None else set(groups)
    group_of: dict[str, str] = {}  # member (consumer node) -> its group
    holding: dict[str, frozenset[tuple[str, int]]] = {}  # member -> its assignment
    running: dict[str, bool] = {}
    opened: dict[tuple[str, tuple[str, int]], int] = {}  # (member, tp) -> since when it serves tp
    owned: dict[tuple[str, tuple[str, int]], list[Interval]] = {}  # (group, tp) -> intervals
    revocations: list[Revocation] = []

    def close(member: str, tp: tuple[str, int], t: int) -> None:
        since = opened.pop((member, tp), None)
        if since is not None and t > since:
            owned.setdefault((group_of[member], tp), []).append(Interval(member, since, t))

    for e in trace:
        if e.name == events.CONSUMER_ASSIGNMENT:
            group = e.get("group")
            if wanted is not None and group not in wanted:
                continue
            member, t = e.node, e.time_ms
            group_of[member] = group
            running.setdefault(member, True)
            now = frozenset(_partition(name) for name in e.get("assignment"))
            before = holding.get(member, frozenset())
            for tp in sorted(before - now):
                close(member, tp, t)
            gone = tuple(sorted(before - now))
            if gone and (start_ms is None or t >= start_ms):
                revocations.append(Revocation(group, member, t, gone))
            for tp in sorted(now - before):
                owned.setdefault((group, tp), [])
                if running[member]:
                    opened[(member, tp)] = t
            holding[member] = now
        elif e.kind == "fault" and e.node in group_of:
            member, t = e.node, e.time_ms
            if e.name in (events.CRASH, events.PAUSE):
                for tp in sorted(holding.get(member, frozenset())):
                    close(member, tp, t)
                running[member] = False
                if e.name == events.CRASH:
                    holding[member] = frozenset()
            elif e.name in (events.RESUME, events.RESTART) and not running[member]:
                running[member] = True
                for tp in sorted(holding.get(member, frozenset())):
                    opened[(member, tp)] = t
    for member, tp in sorted(opened):
        close(member, tp, end_ms)

    partitions = []
    for (group, tp), intervals in sorted(owned.items()):
        first = min((i.start_ms for i in intervals), default=end_ms)
        lo = first if start_ms is None else start_ms
        clipped = sorted(
            (Interval(i.member, max(i.start_ms, lo), min(i.end_ms, end_ms)) for i in intervals),
            key=lambda i: (i.start_ms, i.end_ms, i.member or ""),
        )
        clipped = [i for i in clipped if i.end_ms > i.start_ms]
        gaps, covered = [], lo
        for i in clipped:
            if i.start_ms > covered:
                gaps.append(Interval(None, covered, i.start_ms))
            covered = max(covered, i.end_ms)
        if end_ms > covered:
            gaps.append(Interval(None, covered, end_ms))
        partitions.append(PartitionOwnership(group, tp[0], tp[1], tuple(clipped), tuple(gaps)))
    return Ownership(
        start_ms if start_ms is not None else min((p.owned[0].start_ms for p in partitions if p.owned), default=0),
        end_ms,
        tuple(partitions),
        tuple(revocations),
    )
