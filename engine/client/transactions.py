"""The producer's transaction manager: the client-side state machine of KIP-98 / KIP-890.

State table (Kafka's ``TransactionManager.State`` and ``isTransitionValid``)
--------------------------------------------------------------------------
=======================  ======================================================================
state                    entered from
=======================  ======================================================================
UNINITIALIZED            (start); READY, ABORTABLE_ERROR in Kafka (an idempotent reset, unused)
INITIALIZING             UNINITIALIZED (init_transactions, once), ABORTING_TRANSACTION (the
                         epoch bump after an abort, KIP-360)
READY                    INITIALIZING, COMMITTING_TRANSACTION, ABORTING_TRANSACTION
IN_TRANSACTION           READY
COMMITTING_TRANSACTION   IN_TRANSACTION
ABORTING_TRANSACTION     IN_TRANSACTION, ABORTABLE_ERROR
ABORTABLE_ERROR          IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTABLE_ERROR, INITIALIZING
FATAL_ERROR              any state
=======================  ======================================================================

Error classes: *retriable* errors are retried inside the call (NOT_COORDINATOR and
COORDINATOR_NOT_AVAILABLE also look the coordinator up again); *abortable* errors move the
transaction to ABORTABLE_ERROR and the application must call ``abort_transaction``; *fatal*
errors (``ProducerFencedException``, ``OutOfOrderSequenceException``, an invalid epoch or
producer-id mapping from the coordinator) move the producer to FATAL_ERROR: only ``close`` is
left. ``INVALID_PRODUCER_EPOCH`` on a produce is abortable (Kafka 2.7+); the abort that follows is
then refused as fenced. The issue that
asked for this engine names OutOfOrderSequenceException fatal for transactional producers, as
Kafka's producer javadoc does; newer Kafka clients treat it as abortable after KIP-360.
"""

from __future__ import annotations

import enum

from engine.errors import IllegalStateError


class TxnClientState(enum.Enum):
    """The client-side transaction states."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


T = TxnClientState

VALID_PREVIOUS: dict[TxnClientState, frozenset[TxnClientState]] = {
    T.UNINITIALIZED: frozenset({T.READY, T.ABORTABLE_ERROR}),
    T.INITIALIZING: frozenset({T.UNINITIALIZED, T.ABORTING_TRANSACTION}),
    T.READY: frozenset({T.INITIALIZING, T.COMMITTING_TRANSACTION, T.ABORTING_TRANSACTION}),
    T.IN_TRANSACTION: frozenset({T.READY}),
    T.COMMITTING_TRANSACTION: frozenset({T.IN_TRANSACTION}),
    T.ABORTING_TRANSACTION: frozenset({T.IN_TRANSACTION, T.ABORTABLE_ERROR}),
    T.ABORTABLE_ERROR: frozenset({T.IN_TRANSACTION, T.COMMITTING_TRANSACTION, T.ABORTABLE_ERROR, T.INITIALIZING}),
    T.FATAL_ERROR: frozenset(TxnClientState),
}

#: What the application should call to move on from a state it cannot use for an operation.
_HINT = {
    T.UNINITIALIZED: "call init_transactions() first",
    T.READY: "call begin_transaction() first",
    T.IN_TRANSACTION: "commit_transaction() or abort_transaction() the open transaction first",
    T.ABORTABLE_ERROR: "call abort_transaction(), then start a new transaction",
    T.INITIALIZING: "init_transactions() has not finished: call it again to wait for it",
    T.COMMITTING_TRANSACTION: "a commit is under way: call commit_transaction() again to wait for it",
    T.ABORTING_TRANSACTION: "an abort is under way: call abort_transaction() again to wait for it",
    T.FATAL_ERROR: "this producer is unusable; close it and create a new one",
}


class TransactionStateMachine:
    """The client state with one guarded transition method."""

    def __init__(self, transactional_id: str) -> None:
        self.transactional_id = transactional_id
        self.state = T.UNINITIALIZED
        self.history: list[TxnClientState] = [T.UNINITIALIZED]

    def transition_to(self, target: TxnClientState) -> None:
        """Move to ``target`` or raise IllegalStateError naming what to do instead."""
        if self.state not in VALID_PREVIOUS[target]:
            hint = _HINT.get(self.state, "")
            msg = f"transactional producer {self.transactional_id!r} cannot go from {self.state.name} to {target.name}"
            if hint:
                msg += f": {hint}"
            raise IllegalStateError(msg)
        self.state = target
        self.history.append(target)

    def require(self, *states: TxnClientState, action: str) -> None:
        """Raise IllegalStateError unless the state is one of ``states``."""
        if self.state not in states:
            hint = _HINT.get(self.state, "")
            msg = f"cannot {action} while the transaction is {self.state.name}" + (f": {hint}" if hint else "")
            raise IllegalStateError(msg)
