"""L12: every acknowledged value is in the final leader's log."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine.check.invariants._common import TP, anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.ground_truth import GroundTruth

L12_LOST = "L12-lost-ack"


def check_acked_present(gt: GroundTruth, acked_values: Mapping[TP, Iterable[Any]]) -> list[Anomaly]:
    """L12: each value acknowledged to a producer (acks=all) is in its partition's final leader log.

    ``acked_values`` is client ground truth, ``{(topic, partition): values}``. The final log
    is the authoritative replica's (the controller's leader, else the longest replica, so a
    partition left without a leader is still judged on what survives). Transactional values
    count only if they are in the log at all; whether they were committed is L6's and the
    history checkers' business.
    """
    found: list[Anomaly] = []
    for tp in sorted(acked_values):
        present = set()
        for b in gt.final_log(tp):
            if not b.is_control:
                present.update(b.values)
        lost = sorted((v for v in acked_values[tp] if v not in present), key=repr)
        if lost:
            found.append(
                anomaly(
                    L12_LOST,
                    tp,
                    f"{len(lost)} acknowledged value(s) missing from the final log of broker {gt.authoritative(tp)}",
                    values=lost,
                )
            )
    return found
