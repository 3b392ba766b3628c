"""EndTxn's decision tables: what the coordinator does with a commit or an abort, per state.

Kafka's ``TransactionCoordinator.handleEndTransaction``, for transaction version 1 (the client's
epoch must be the current one) and version 2 (KIP-890: every end bumps the epoch, and a retry is
recognised by the epoch before the bump). A decision is either the PREPARE_* value to write (staged
on the metadata) or the answer to send at once; the coordinator carries it out. Mutant M6 lets an
older epoch pass (``fence_epochs=False``). Owns no state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.coordinator.txn_metadata import NO_PRODUCER_ID
from engine.coordinator.txn_state import MAX_PRODUCER_EPOCH, TransactionState
from engine.errors import ErrorCode
from engine.protocol import EndTxnResponse

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.coordinator.txn_log import TxnLogValue
    from engine.coordinator.txn_metadata import TransactionMetadata
    from engine.protocol import EndTxnRequest

    #: The PREPARE_* value to write, or the answer to send without writing.
    Decision = TxnLogValue | EndTxnResponse

S = TransactionState


def decide_v1(broker: Broker, md: TransactionMetadata, req: EndTxnRequest, *, fence_epochs: bool = True) -> Decision:
    """EndTxn under transaction version 1: the client's epoch must be the current one.

    ==============  ========================  ========================
    state           commit                    abort
    ==============  ========================  ========================
    Ongoing         PREPARE_COMMIT            PREPARE_ABORT
    PrepareCommit   CONCURRENT_TRANSACTIONS   INVALID_TXN_STATE
    PrepareAbort    INVALID_TXN_STATE         CONCURRENT_TRANSACTIONS
    CompleteCommit  NONE (a retry)            INVALID_TXN_STATE
    CompleteAbort   INVALID_TXN_STATE         NONE (a retry)
    Empty           INVALID_TXN_STATE         INVALID_TXN_STATE
    ==============  ========================  ========================
    """
    if md.producer_id != req.producer_id:
        text = f"transactional.id {md.transactional_id} has no producer id {req.producer_id}"
        return EndTxnResponse(ErrorCode.INVALID_PRODUCER_ID_MAPPING, error_message=text)
    stale = req.producer_epoch < md.producer_epoch and not fence_epochs  # mutant M6 lets it pass
    if req.producer_epoch != md.producer_epoch and not stale:
        return EndTxnResponse(ErrorCode.PRODUCER_FENCED, error_message=_fenced_text(md, req))
    if md.pending_state is not None:
        return EndTxnResponse(ErrorCode.CONCURRENT_TRANSACTIONS)
    state, commit = md.state, req.committed
    if state is S.ONGOING:
        target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        return md.prepare_abort_or_commit(target, 1, broker.world.now_ms)
    if (state, commit) in ((S.COMPLETE_COMMIT, True), (S.COMPLETE_ABORT, False)):
        return EndTxnResponse(ErrorCode.NONE, md.producer_id, md.producer_epoch)
    if (state, commit) in ((S.PREPARE_COMMIT, True), (S.PREPARE_ABORT, False)):
        return EndTxnResponse(ErrorCode.CONCURRENT_TRANSACTIONS)
    return _invalid_state(md, req)


def decide_v2(broker: Broker, md: TransactionMetadata, req: EndTxnRequest, *, fence_epochs: bool = True) -> Decision:
    """EndTxn under transaction version 2 (KIP-890): every end bumps the epoch.

    A *retry* carries the epoch before the bump (or, when the bump moved the id to a new
    producer id, the previous producer id at epoch ``Short.MAX_VALUE - 1``); a *current* call
    carries the stored epoch. Kafka's table, for the states a current or retried call meets:

    ==============  =================  ================  =================  ================
    state           abort, retry       abort, current    commit, retry      commit, current
    ==============  =================  ================  =================  ================
    Ongoing         PRODUCER_FENCED    PREPARE_ABORT     PRODUCER_FENCED    PREPARE_COMMIT
    PrepareCommit   INVALID_TXN_STATE  PRODUCER_FENCED   CONCURRENT_TXNS    PRODUCER_FENCED
    PrepareAbort    CONCURRENT_TXNS    PRODUCER_FENCED   INVALID_TXN_STATE  PRODUCER_FENCED
    Empty           PRODUCER_FENCED    PREPARE_ABORT     PRODUCER_FENCED    INVALID_TXN_STATE
    CompleteAbort   NONE               PREPARE_ABORT     PRODUCER_FENCED    INVALID_TXN_STATE
    CompleteCommit  INVALID_TXN_STATE  PREPARE_ABORT     NONE               INVALID_TXN_STATE
    ==============  =================  ================  =================  ================

    While a transition is pending, and while a Prepare* state writes its markers (Kafka's
    pending Complete*), any call is answered CONCURRENT_TRANSACTIONS first, whatever its epoch
    (KAFKA-18464); the table's other answers are for calls that meet no transition in flight.

    An abort from Empty or Complete* marks nothing: a client may abort without knowing
    whether anything was added (apache/kafka#19568). A commit that meets CompleteAbort at the
    retry epoch raced a coordinator-side abort (``transaction.timeout.ms``, or a fence): only
    the coordinator can have ended that transaction, so the producer is fenced, which it can
    recover from by starting over, rather than told INVALID_TXN_STATE (KAFKA-20785,
    apache/kafka#23204).
    """
    epoch = req.producer_epoch
    if not fence_epochs and epoch < md.producer_epoch:
        epoch = md.producer_epoch  # mutant M6: an older epoch passes as the current one
    retry_on_overflow = (
        md.prev_producer_id == req.producer_id and epoch == MAX_PRODUCER_EPOCH - 1 and md.producer_epoch == 0
    )
    retry_on_bump = md.producer_epoch == epoch + 1
    state = md.state
    if state in (S.ONGOING, S.EMPTY, S.DEAD, S.PREPARE_EPOCH_FENCE):
        valid = epoch == md.producer_epoch
    elif state.is_prepare:
        valid = retry_on_bump
    else:
        valid = retry_on_bump or retry_on_overflow or epoch == md.producer_epoch
    is_retry = retry_on_bump or retry_on_overflow
    if md.producer_id != req.producer_id and not retry_on_overflow:
        text = f"transactional.id {md.transactional_id} has no producer id {req.producer_id}"
        return EndTxnResponse(ErrorCode.INVALID_PRODUCER_ID_MAPPING, error_message=text)
    # KAFKA-18464 (apache/kafka#18467): a transition in flight answers CONCURRENT_TRANSACTIONS
    # before the epoch is judged, so an abort sent while the previous commit still writes its
    # markers waits and retries instead of fencing its own producer. Kafka holds a pending
    # Complete* for as long as a Prepare* writes its markers; here that is the Prepare* state
    # itself with nothing pending. An epoch fence in flight is the exception: the epoch decides.
    marking = state.is_prepare and md.pending_state is None
    if marking or (md.pending_state is not None and md.pending_state is not S.PREPARE_EPOCH_FENCE):
        return EndTxnResponse(ErrorCode.CONCURRENT_TRANSACTIONS)
    if not valid:
        return EndTxnResponse(ErrorCode.PRODUCER_FENCED, error_message=_fenced_text(md, req))
    if md.pending_state is not None:
        return EndTxnResponse(ErrorCode.CONCURRENT_TRANSACTIONS)
    commit, now = req.committed, broker.world.now_ms
    if state is S.ONGOING:
        target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        next_pid = broker.allocate_producer_id() if md.is_producer_epoch_exhausted else NO_PRODUCER_ID
        if next_pid != NO_PRODUCER_ID:
            broker.world.trace.mark(broker.name, "coordinator: epoch exhausted at EndTxn, new id")
        return md.prepare_abort_or_commit(target, 2, now, next_producer_id=next_pid)
    if state.is_complete or state is S.EMPTY:
        done = (state, commit) in ((S.COMPLETE_COMMIT, True), (S.COMPLETE_ABORT, False))
        if is_retry and done:
            return EndTxnResponse(ErrorCode.NONE, md.producer_id, md.producer_epoch)
        if is_retry and state is S.COMPLETE_ABORT and commit:
            text = (
                f"the transaction of {md.transactional_id} was aborted by the coordinator (timeout or fence) "
                f"before this commit arrived: " + _fenced_text(md, req)
            )
            return EndTxnResponse(ErrorCode.PRODUCER_FENCED, error_message=text)
        if not is_retry and not commit:
            next_pid = broker.allocate_producer_id() if md.is_producer_epoch_exhausted else NO_PRODUCER_ID
            return md.prepare_abort_or_commit(
                S.PREPARE_ABORT, 2, now, next_producer_id=next_pid, no_partition_added=True
            )
        return _invalid_state(md, req)
    if (state, commit) in ((S.PREPARE_COMMIT, True), (S.PREPARE_ABORT, False)):
        return EndTxnResponse(ErrorCode.CONCURRENT_TRANSACTIONS)
    return _invalid_state(md, req)


def _fenced_text(md: TransactionMetadata, req: EndTxnRequest) -> str:
    return (
        f"There is a newer producer with the same transactionalId which fences the current one: "
        f"transactional.id={md.transactional_id} producerId={req.producer_id} epoch={req.producer_epoch} "
        f"(current epoch {md.producer_epoch})"
    )


def _invalid_state(md: TransactionMetadata, req: EndTxnRequest) -> EndTxnResponse:
    text = f"cannot {'commit' if req.committed else 'abort'} {md.transactional_id}: it is {md.state.display_name}"
    return EndTxnResponse(ErrorCode.INVALID_TXN_STATE, error_message=text)
