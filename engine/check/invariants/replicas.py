"""L1: replicas agree below the final high watermark; offsets are unique in every replica."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.check import messages as m
from engine.check.invariants._common import anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.ground_truth import BatchRow, GroundTruth

L1_DIVERGENCE = "L1-replica-divergence"
L1_OFFSETS = "L1-offset-order"


def _records(batches: list[BatchRow], limit: int) -> dict[int, tuple[Any, ...]]:
    out: dict[int, tuple[Any, ...]] = {}
    for b in batches:
        if b.base_offset >= limit:
            break
        for i, value in enumerate(b.values):
            o = b.base_offset + i
            if o >= limit:
                break
            key = b.keys[i] if i < len(b.keys) else None
            out[o] = (
                b.leader_epoch,
                b.producer_id,
                b.producer_epoch,
                b.base_sequence + i if b.base_sequence >= 0 else -1,
                b.is_transactional,
                b.is_control,
                b.control_type,
                key,
                value,
            )
    return out


def check_replica_agreement(gt: GroundTruth) -> list[Anomaly]:
    """L1: below the final HW all replicas hold identical records at identical offsets.

    The reference is the authoritative replica (the final leader) and the final HW is its HW.
    Each other replica is compared on the offsets below ``min(final HW, its LEO)`` if it is in
    the final ISR, else below ``min(final HW, its own HW)`` (a replica outside the ISR may
    still carry an uncommitted tail it has not truncated yet; anything it believes committed
    must match). Within every replica, each batch must start where the previous one ended
    (no offset held twice, no hole).
    """
    found: list[Anomaly] = []
    logs = gt.logs()
    for (topic, partition, broker_id), batches in logs.items():
        tp = (topic, partition)
        expected = None
        for b in batches:
            if expected is not None and b.base_offset != expected:
                found.append(
                    anomaly(
                        L1_OFFSETS,
                        tp,
                        m.L1_OFFSET_ORDER.format(
                            broker_id=broker_id,
                            base_offset=b.base_offset,
                            expected=expected,
                            how="offsets held twice" if b.base_offset < expected else "hole",
                        ),
                        offsets=(expected, b.base_offset),
                    )
                )
            expected = b.next_offset
    for tp in gt.partition_keys():
        leader = gt.authoritative(tp)
        if leader is None:
            continue
        final_hw = gt.final_hw(tp)
        part = gt.partition(tp)
        isr = part.isr if part is not None else ()
        ref = _records(logs.get((*tp, leader), []), final_hw)
        for r in gt.replicas_of(tp):
            if r.broker_id == leader:
                continue
            limit = min(final_hw, r.leo if r.broker_id in isr else r.hw)
            mine = _records(logs.get((*tp, r.broker_id), []), limit)
            bad = [o for o in range(limit) if mine.get(o) != ref.get(o)]
            if bad:
                o = bad[0]
                theirs, ours = ref.get(o), mine.get(o)
                where = {"broker_id": r.broker_id, "auth_broker": leader, "final_hw": final_hw, "offset": o}
                found.append(
                    anomaly(
                        L1_DIVERGENCE,
                        tp,
                        m.L1_DIVERGENCE.format(**where, n=len(bad), ours=ours, theirs=theirs),
                        offsets=tuple(bad[:10]),
                        values=(ours[-1] if ours else None, theirs[-1] if theirs else None),
                    )
                )
    return found
