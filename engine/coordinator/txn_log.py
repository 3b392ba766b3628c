"""Records of ``__transaction_state``: one value per transition of a transactional id.

The key is the transactional id; the value follows ``TransactionLogValue.json`` (ProducerId,
PreviousProducerId, NextProducerId, ProducerEpoch, TransactionTimeoutMs, TransactionStatus,
TransactionPartitions, TransactionLastUpdateTimestampMs, TransactionStartTimestampMs,
ClientTransactionVersion). The simulation stores the value object itself in the batch (no
bytes); :func:`decode_line` prints it as ``kafka-dump-log.sh --transaction-log-decoder`` does on
2024 trunk (``key: transaction_metadata::transactionalId=… payload: producerId:…,…``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from engine.coordinator.txn_state import TransactionState

if TYPE_CHECKING:
    from engine.log.records import RecordBatch


@dataclasses.dataclass(frozen=True, slots=True)
class TxnLogValue:
    """One ``__transaction_state`` value (also the staged transition, Kafka's TxnTransitMetadata)."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: tuple[tuple[str, int], ...]
    txn_start_ms: int
    txn_last_update_ms: int
    client_transaction_version: int

    def partitions_text(self) -> str:
        """Return the partitions as ``t-0,t-1``."""
        return ",".join(f"{t}-{p}" for t, p in self.partitions)


def decode_line(transactional_id: str, value: TxnLogValue | None) -> str:
    """Return the decoder's text for one record (``<DELETE>`` for a tombstone)."""
    key = f"key: transaction_metadata::transactionalId={transactional_id}"
    if value is None:
        return f"{key} payload: <DELETE>"
    return (
        f"{key} payload: producerId:{value.producer_id},producerEpoch:{value.producer_epoch},"
        f"state={value.state.display_name},partitions=[{value.partitions_text()}],"
        f"txnLastUpdateTimestamp={value.txn_last_update_ms},txnTimeoutMs={value.txn_timeout_ms}"
    )


def records_of(batches: list[RecordBatch]) -> list[tuple[int, str, TxnLogValue | None]]:
    """Return ``(offset, transactional_id, value)`` for every record in ``__transaction_state`` batches."""
    out = []
    for b in batches:
        if b.is_control:
            continue
        for i, value in enumerate(b.values):
            out.append((b.base_offset + i, b.keys[i], value))
    return out
