"""L2 (idempotence: contiguous, unique sequences) and L3 (fencing: epochs never go back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
                        f"producer {key[0]} epoch {key[1]}: batch at {b.base_offset} starts at sequence "
                        f"{b.base_sequence}, expected {prev[1] + 1} after the batch at {prev[0]}",
                        offsets=(prev[0], b.base_offset),
                    )
                )
            last[key] = (b.base_offset, b.last_sequence)
            for seq in range(b.base_sequence, b.last_sequence + 1):
                k3 = (*key, seq)
                if k3 in seen:
                    found.append(
                        anomaly(
                            L2_DUPLICATE,
                            tp,
                            f"producer {key[0]} epoch {key[1]} sequence {seq} written at {seen[k3]} and again at "
                            f"{b.base_offset + seq - b.base_sequence}",
                            offsets=(seen[k3], b.base_offset + seq - b.base_sequence),
                        )
                    )
                else:
                    seen[k3] = b.base_offset + seq - b.base_sequence
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
                        f"producer {b.producer_id}: {what} at {b.base_offset} has epoch {b.producer_epoch} after "
                        f"epoch {prev[0]} at {prev[1]}",
                        offsets=(prev[1], b.base_offset),
                    )
                )
            elif prev is None or b.producer_epoch > prev[0]:
                high[b.producer_id] = (b.producer_epoch, b.base_offset)
    return found
