"""L2 (idempotence: contiguous, unique sequences) and L3 (fencing: epochs never go back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.check import messages as m
from engine.check.invariants._common import anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.ground_truth import GroundTruth

L2_GAP = "L2-sequence-gap"
L2_DUPLICATE = "L2-sequence-duplicate"
L3_EPOCH = "L3-epoch-regression"


def check_sequences(gt: GroundTruth) -> list[Anomaly]:
    """L2: per (partition, producer id, epoch), sequences are contiguous and increase with offsets.

    Over the authoritative log, the data batches of one (producer id, producer epoch) with a
    sequence (``base_sequence >= 0``), in offset order, must each start at the previous
    batch's last sequence + 1; and no (producer id, epoch, sequence) may be written twice.
    The first batch of an epoch may start anywhere (a log may begin mid-epoch).
    """
    found: list[Anomaly] = []
    for tp in gt.partition_keys():
        last: dict[tuple[int, int], tuple[int, int]] = {}
        seen: dict[tuple[int, int, int], int] = {}
        for b in gt.final_log(tp):
            if b.producer_id < 0 or b.is_control or b.base_sequence < 0:
                continue
            key = (b.producer_id, b.producer_epoch)
            prev = last.get(key)
            if prev is not None and b.base_sequence != prev[1] + 1:
                found.append(
                    anomaly(
                        L2_GAP,
                        tp,
                        m.L2_GAP.format(**b._asdict(), expected=prev[1] + 1, prev_offset=prev[0]),
                        offsets=(prev[0], b.base_offset),
                    )
                )
            last[key] = (b.base_offset, b.last_sequence)
            for seq in range(b.base_sequence, b.last_sequence + 1):
                k3, offset = (*key, seq), b.base_offset + seq - b.base_sequence
                first = seen.get(k3)
                if first is None:
                    seen[k3] = offset
                else:
                    message = m.L2_DUPLICATE.format(**b._asdict(), seq=seq, first_offset=first, offset=offset)
                    found.append(anomaly(L2_DUPLICATE, tp, message, offsets=(first, offset)))
    return found


def check_epochs(gt: GroundTruth) -> list[Anomaly]:
    """L3: per (partition, producer id), the producer epoch never decreases in offset order.

    Over the authoritative log, data batches and markers alike: a lower epoch after a higher
    one means a fenced (zombie) producer or coordinator wrote after its successor.
    """
    found: list[Anomaly] = []
    for tp in gt.partition_keys():
        high: dict[int, tuple[int, int]] = {}
        for b in gt.final_log(tp):
            if b.producer_id < 0:
                continue
            prev = high.get(b.producer_id)
            if prev is not None and b.producer_epoch < prev[0]:
                what = f"{b.control_type} marker" if b.is_control else "data batch"
                found.append(
                    anomaly(
                        L3_EPOCH,
                        tp,
                        m.L3_EPOCH.format(**b._asdict(), what=what, high_epoch=prev[0], high_offset=prev[1]),
                        offsets=(prev[1], b.base_offset),
                    )
                )
            elif prev is None or b.producer_epoch > prev[0]:
                high[b.producer_id] = (b.producer_epoch, b.base_offset)
    return found
