"""L14: liveness at the end of a run: every partition has a leader and its LSO reached its HW."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.check import messages as m
from engine.check.invariants._common import anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.ground_truth import GroundTruth

L14_NO_LEADER = "L14-no-leader"
L14_LSO = "L14-lso-below-hw"


def check_liveness(gt: GroundTruth) -> list[Anomaly]:
    """L14: after heal and the liveness phase, each partition has a live leader and LSO == HW.

    A partition is led when the controller names a leader whose replica is up and loaded as
    leader. The LSO part overlaps L5 on purpose (L5 is the safety reading, L14 the liveness
    one); the copier-finishes and visibility-lag parts of ``eos-checking.md`` §5.3 are left to
    the workload checkers (sentinel probe X4).
    """
    found: list[Anomaly] = []
    for part in gt.partitions:
        tp = (part.topic, part.partition)
        r = gt.replica(tp, part.leader) if part.leader >= 0 else None
        if r is None or r.status != "up" or not r.is_leader:
            status = r.status if r else "no replica"
            why = "none" if part.leader < 0 else m.L14_LEADER.format(leader=part.leader, status=status)
            found.append(anomaly(L14_NO_LEADER, tp, m.L14_NO_LEADER.format(why=why)))
            continue
        if r.lso is not None and r.lso != r.hw:
            found.append(
                anomaly(L14_LSO, tp, m.L14_LSO.format(leader=r.broker_id, lso=r.lso, hw=r.hw), offsets=(r.lso, r.hw))
            )
    return found
