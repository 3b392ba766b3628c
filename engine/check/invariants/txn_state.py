"""L10: ``__transaction_state`` histories: epochs never go back, transitions are legal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.check import messages as m
from engine.check.invariants._common import anomaly, txn_histories
from engine.coordinator.txn_state import VALID_PREVIOUS_STATES, TransactionState

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.ground_truth import GroundTruth

L10_EPOCH = "L10-epoch-regression"
L10_TRANSITION = "L10-illegal-transition"


def check_txn_state(gt: GroundTruth) -> list[Anomaly]:
    """L10: per transactional id, epochs are non-decreasing and every transition is legal.

    The history is a loaded coordinator's (``describe()``), else the authoritative
    ``__transaction_state`` replica's records. While the producer id stays the same its epoch
    must not decrease (a new producer id, after epoch exhaustion, starts again). The first
    record's state must be enterable from EMPTY (a new id starts EMPTY) and each next state
    must list the previous one in ``VALID_PREVIOUS_STATES``.
    """
    found: list[Anomaly] = []
    tp = ("__transaction_state", -1)
    for txn_id, history in txn_histories(gt).items():
        prev = None
        for row in history:
            state = TransactionState[row.state]
            before = TransactionState.EMPTY if prev is None else TransactionState[prev.state]
            if before not in VALID_PREVIOUS_STATES[state]:
                message = m.L10_TRANSITION.format(**row._asdict(), before=before.name)
                found.append(anomaly(L10_TRANSITION, tp, message, offsets=(row.offset,), values=(txn_id,)))
            if prev is not None and row.producer_id == prev.producer_id and row.producer_epoch < prev.producer_epoch:
                message = m.L10_EPOCH.format(**row._asdict(), prev_epoch=prev.producer_epoch)
                found.append(anomaly(L10_EPOCH, tp, message, offsets=(prev.offset, row.offset), values=(txn_id,)))
            prev = row
    return found
