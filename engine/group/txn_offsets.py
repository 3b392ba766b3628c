"""KIP-447: transactional offset commits and their fencing.

A consume-transform-produce loop is exactly-once when the consumer's offsets are committed in
the same transaction as the records it produced (KIP-98): the producer sends AddOffsetsToTxn to
its transaction coordinator, then TxnOffsetCommit to the group coordinator, which appends the
offsets to ``__consumer_offsets`` as a transactional batch. They stay *pending* until the
transaction's COMMIT marker lands in that partition (an ABORT marker discards them).

Before KIP-447 that was only safe with one transactional producer per input partition: the
producer's epoch fenced a zombie *producer*, but nothing fenced a zombie *consumer* whose
partitions the group had given to another member. KIP-447 closes the gap with two rules, both
held here:

1. **Fencing by group generation.** The producer passes the consumer's group metadata (group id,
   generation, member id: :class:`ConsumerGroupMetadata`) to ``send_offsets_to_transaction``,
   and the TxnOffsetCommit carries it. The group coordinator checks it as it checks a plain
   OffsetCommit (:func:`validate_commit`): a member the group no longer has gets
   UNKNOWN_MEMBER_ID, an older generation ILLEGAL_GENERATION. The producer reports either as
   ``CommitFailedException``, an abortable error (:func:`fenced_commit_error`), so the zombie
   aborts and its offsets never count. The producer's epoch is still checked too
   (:func:`producer_epoch_error`).
2. **Stable offsets.** A consumer that takes over a partition must not start from an offset
   that a pending transaction is about to move. Under read_committed its OffsetFetch sets
   ``require_stable`` (:func:`require_stable`); the coordinator answers UNSTABLE_OFFSET_COMMIT
   for a partition with an offset in flight or in an undecided transaction (:func:`is_unstable`,
   :func:`fetch_partition`), and the consumer retries until the transaction is decided.

The marker rule itself (offsets written before a marker belong to the transaction it ends) is
:func:`engine.group.records.complete_txn`, shared with the replay of the log on load;
:func:`settle` applies it to a group on its coordinator.

Callers: :class:`~engine.group.coordinator.GroupCoordinator` (TxnOffsetCommit, OffsetFetch,
markers), :class:`~engine.client.group_member.GroupMember` (OffsetFetch) and
:class:`~engine.client.transactional_calls.TransactionalCalls`
(``send_offsets_to_transaction``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from engine.config import IsolationLevel
from engine.errors import CommitFailedException, ErrorCode, IllegalStateError
from engine.group.records import StoredOffset, complete_txn
from engine.group.state import GroupState
from engine.protocol import OffsetFetchPartition

if TYPE_CHECKING:
    from engine.group.metadata import GroupMetadata

Key = tuple[str, int]

#: TxnOffsetCommit answers that mean the consumer is no longer the member it claims to be.
GROUP_FENCED = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID})

#: The coverage mark hit when an OffsetFetch with require_stable finds an unstable offset.
UNSTABLE_OFFSET_RETRIED = "consumer: committed offset unstable, retrying (KIP-447)"


# ==========================================================================================
# client side
# ==========================================================================================


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What ``send_offsets_to_transaction`` needs to fence a zombie (KIP-447)."""

    #: The consumer's ``group.id``.
    group_id: str
    #: The generation the consumer believes it is in (-1: not in a generation).
    generation_id: int
    #: The member id the coordinator gave it ("" before the first join).
    member_id: str
    #: ``group.instance.id`` (static membership, KIP-345; None for a dynamic member).
    group_instance_id: str | None = None


def group_fields(group_metadata: Any) -> tuple[str, int, str, str | None]:
    """Return ``(group_id, generation_id, member_id, group_instance_id)`` for a TxnOffsetCommit.

    ``group_metadata`` is what ``consumer.group_metadata()`` returned, or a bare group id (the
    pre-KIP-447 form: generation -1 and no member, which the coordinator does not fence).
    """
    if isinstance(group_metadata, str):
        return group_metadata, -1, "", None
    try:
        return (
            group_metadata.group_id,
            group_metadata.generation_id,
            group_metadata.member_id,
            getattr(group_metadata, "group_instance_id", None),
        )
    except AttributeError:
        msg = "group_metadata must come from consumer.group_metadata() (or be a group id string)"
        raise IllegalStateError(msg) from None


def fenced_commit_error(
    code: ErrorCode, group_id: str, generation_id: int, transactional_id: str
) -> CommitFailedException | None:
    """The abortable error a fenced TxnOffsetCommit raises (Kafka's ``TxnOffsetCommitHandler``); None if not fenced."""
    if code not in GROUP_FENCED:
        return None
    return CommitFailedException(
        f"offsets for group {group_id} were rejected ({code.name}): this consumer is no longer "
        f"in generation {generation_id}; abort the transaction and rejoin the group",
        transactional_id=transactional_id,
    )


def require_stable(isolation: IsolationLevel) -> bool:
    """Whether a consumer's OffsetFetch waits for pending transactional offsets: under read_committed."""
    return isolation is IsolationLevel.READ_COMMITTED


def any_unstable(partitions: Iterable[OffsetFetchPartition]) -> bool:
    """Return True when an OffsetFetch answer has a partition whose offset is not stable yet."""
    return any(p.error is ErrorCode.UNSTABLE_OFFSET_COMMIT for p in partitions)


# ==========================================================================================
# coordinator side
# ==========================================================================================


def validate_commit(
    g: GroupMetadata,
    generation_id: int,
    member_id: str,
    instance_id: str | None,
    *,
    transactional: bool,
    fence_stale_generation: bool = True,
) -> ErrorCode:
    """Kafka's ``validateOffsetCommit``: may this (Txn)OffsetCommit commit for the group now?

    A commit that names a member (or a generation) must name a current member and the current
    generation; KIP-447 applies the same check to TxnOffsetCommit. A commit that names none is an
    admin or pre-KIP-447 commit: a plain one is taken only while the group is empty, a
    transactional one always. ``fence_stale_generation`` False is mutant M15 (no KIP-447 fencing
    of transactional commits).
    """
    if g.is_(GroupState.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    unfenced = transactional and not fence_stale_generation
    if generation_id >= 0 or member_id != "" or instance_id is not None:
        known = g.validate_member(member_id, instance_id)  # FENCED_INSTANCE_ID for a replaced static member
        if known is not ErrorCode.NONE and not unfenced:
            return known
        if generation_id != g.generation and not unfenced:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE
    if not transactional and not g.is_(GroupState.EMPTY):
        return ErrorCode.UNKNOWN_MEMBER_ID  # a non-empty group takes commits from members only
    return ErrorCode.NONE


def producer_epoch_error(known_epoch: int | None, producer_epoch: int) -> ErrorCode:
    """INVALID_PRODUCER_EPOCH when the partition already saw a newer epoch of the producer, else NONE."""
    if known_epoch is not None and producer_epoch < known_epoch:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return ErrorCode.NONE


def add_pending(
    g: GroupMetadata, producer_id: int, offsets: Iterable[tuple[str, int, int]], base_offset: int, create_time: int
) -> None:
    """Hold a TxnOffsetCommit's offsets (appended from ``base_offset`` on) until the producer's marker."""
    pending = g.pending_txn.setdefault(producer_id, {})
    for i, (t, p, o) in enumerate(offsets):
        pending[(t, p)] = StoredOffset(o, base_offset + i, create_time)


def settle(g: GroupMetadata, producer_id: int, marker_offset: int, *, commit: bool) -> list[Key]:
    """A marker of ``producer_id`` landed at ``marker_offset``: commit or drop its pending offsets.

    Returns the partitions whose committed offset the marker moved.
    """
    return complete_txn(g.committed, g.pending_txn, producer_id, marker_offset, commit=commit)


def is_unstable(g: GroupMetadata, tp: Key) -> bool:
    """Return True when ``tp`` has an offset in flight (a plain commit not replicated) or in a pending transaction."""
    if g.pending_commits.get(tp, 0) > 0:
        return True
    return any(tp in offsets for offsets in g.pending_txn.values())


def fetch_partition(g: GroupMetadata | None, tp: Key, *, require_stable: bool) -> OffsetFetchPartition:
    """One partition of an OffsetFetch answer: the committed offset (-1: none), or UNSTABLE_OFFSET_COMMIT."""
    if g is not None and require_stable and is_unstable(g, tp):
        return OffsetFetchPartition(tp[0], tp[1], -1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
    stored = g.committed.get(tp) if g is not None else None
    return OffsetFetchPartition(tp[0], tp[1], stored.offset if stored is not None else -1)
