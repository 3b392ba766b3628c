"""Transaction states of the coordinator, with Kafka's names, ids and legal predecessors.

Follows ``TransactionState`` of Kafka 4.x (``transaction-coordinator`` module) including the
transaction-version-2 addition that PREPARE_ABORT may also be entered from EMPTY,
COMPLETE_COMMIT and COMPLETE_ABORT (a v2 client may abort without knowing whether the server
has an open transaction; apache/kafka#19568).

==================  ==  =================================================  ======================
state               id  entered from                                       display name
==================  ==  =================================================  ======================
EMPTY               0   EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT             Empty
ONGOING             1   EMPTY, ONGOING, COMPLETE_COMMIT, COMPLETE_ABORT    Ongoing
PREPARE_COMMIT      2   ONGOING                                            PrepareCommit
PREPARE_ABORT       3   ONGOING, PREPARE_EPOCH_FENCE, (v2) EMPTY,          PrepareAbort
                        COMPLETE_COMMIT, COMPLETE_ABORT
COMPLETE_COMMIT     4   PREPARE_COMMIT                                     CompleteCommit
COMPLETE_ABORT      5   PREPARE_ABORT                                      CompleteAbort
DEAD                6   EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT             Dead
PREPARE_EPOCH_FENCE 7   ONGOING                                            PrepareEpochFence
==================  ==  =================================================  ======================

A brand-new transactional id starts in EMPTY (its first record moves EMPTY → EMPTY).
"""

from __future__ import annotations

import enum


class TransactionState(enum.Enum):
    """A coordinator-side transaction state: ``(id, display name)``."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        """Return the byte Kafka writes to ``__transaction_state``."""
        return self.value[0]

    @property
    def display_name(self) -> str:
        """Return the name ``kafka-transactions.sh`` prints."""
        return self.value[1]

    @property
    def is_complete(self) -> bool:
        """Return True for COMPLETE_COMMIT and COMPLETE_ABORT."""
        return self in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @property
    def is_prepare(self) -> bool:
        """Return True for PREPARE_COMMIT and PREPARE_ABORT."""
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)


S = TransactionState

VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.EMPTY, S.ONGOING, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

#: The largest producer epoch (Java's Short.MAX_VALUE). An epoch bump past it gets a new producer id.
MAX_PRODUCER_EPOCH = 32767


def by_id(state_id: int) -> TransactionState:
    """Return the state with Kafka's byte id."""
    for s in TransactionState:
        if s.id == state_id:
            return s
    msg = f"no transaction state has id {state_id}"
    raise ValueError(msg)
