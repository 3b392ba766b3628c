"""Weakened engine behaviours, switched on only on purpose: the mutants the checkers must catch.

Every field's default is Kafka's correct behaviour. A test or ``eos run NAME --mutant M10``
turns one off to show that the judge notices (eos-checking.md §5.1). They are engine options,
not Kafka configs, so they live here and not among the Kafka-named configuration keys.

=================================  ======  ==================================================
field                              mutant  guarantee it removes when weakened
=================================  ======  ==================================================
``dedup_window``                   M2      retries of any of the last 5 batches are answered
                                           from the cache (1: only the very last one)
``fence_epochs``                   M6      a producer with an older epoch cannot write
                                           (partitions) or end transactions (coordinator)
``verify_transactional_produce``   M8      (transaction version 2) a transactional batch is
                                           appended only if the coordinator says its producer
                                           is in a transaction that includes the partition
``replicate_transaction_state``    M9      a coordinator transition counts only once it is
                                           replicated below the HW of ``__transaction_state``
``lso_inclusive``                  M10     read_committed reads stop *before* the LSO
``send_aborted_transactions``      M11     read_committed fetches carry the aborted
                                           transactions of the range
``bump_epoch_on_timeout``          M14     a coordinator abort of an expired transaction
                                           fences the producer by bumping the epoch
``fence_stale_generation``         M15     TxnOffsetCommit from a stale group generation (a
                                           KIP-848 group: a stale member epoch, or a member
                                           the group no longer has) is rejected (KIP-447)
``followers_track_producer_state`` M16     followers rebuild producer state while replicating,
                                           so a new leader deduplicates retries
``abort_on_failed_send``           M17     (client) a record that fails for good makes its
                                           transaction abortable, so commit cannot succeed
                                           without it
``check_init_producer_epoch``      M18     InitProducerId that names a producer id and epoch
                                           (KIP-360) is refused as fenced unless they are the
                                           current ones (or a retry of the last call)
``revoke_before_assign``           M19     (KIP-848) a partition is assigned to its new owner
                                           only once its old owner has revoked it
``reject_unknown_producer_sequence``  -    a producer the broker does not know gets
                                           UNKNOWN_PRODUCER_ID for a non-zero sequence (the
                                           pre-KIP-360 broker rule); off: any sequence is taken
=================================  ======  ==================================================
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class Weakenings:
    """Engine behaviours that a mutant may weaken; the defaults are correct Kafka behaviour."""

    dedup_window: int = 5
    fence_epochs: bool = True
    verify_transactional_produce: bool = True
    replicate_transaction_state: bool = True
    lso_inclusive: bool = False
    send_aborted_transactions: bool = True
    bump_epoch_on_timeout: bool = True
    fence_stale_generation: bool = True
    followers_track_producer_state: bool = True
    abort_on_failed_send: bool = True
    check_init_producer_epoch: bool = True
    reject_unknown_producer_sequence: bool = True
    revoke_before_assign: bool = True

    @property
    def weakened(self) -> list[str]:
        """Return the names of the fields that differ from the defaults."""
        default = Weakenings()
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) != getattr(default, f.name)]


CORRECT = Weakenings()
