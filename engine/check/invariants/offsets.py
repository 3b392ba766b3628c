"""L7 (HW and LSO monotonic per leader epoch; LSO ≤ HW ≤ LEO) and L8 (read_committed stays below the LSO)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.check import messages as m
from engine.check.invariants._common import anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.ground_truth import GroundTruth
    from engine.check.timeline import TimelineSample

L7_HW = "L7-hw-regression"
L7_LSO = "L7-lso-regression"
L7_ORDER = "L7-offset-order"
L8_BEYOND_LSO = "L8-read-beyond-lso"


def check_offsets_monotonic(samples: Iterable[TimelineSample]) -> list[Anomaly]:
    """L7: on a leader, within one leader epoch, HW and LSO never decrease; always LSO ≤ HW ≤ LEO.

    Reads :class:`~engine.check.timeline.PartitionTimeline` samples (a step invariant checked
    after the run over the recorded series). Samples are grouped by (partition, broker, leader
    epoch) in trace order. A broker that leads the same epoch again after a restart is the
    same group on purpose: committed offsets must not go back across a restart either.
    """
    found: list[Anomaly] = []
    last: dict[tuple[str, int, int, int], TimelineSample] = {}
    for s in samples:
        tp = (s.topic, s.partition)
        if not s.lso <= s.hw <= s.leo:
            found.append(anomaly(L7_ORDER, tp, m.L7_ORDER.format(**s._asdict()), offsets=(s.lso, s.hw, s.leo)))
        key = (s.topic, s.partition, s.broker_id, s.leader_epoch)
        prev = last.get(key)
        if prev is not None:
            for kind, name, before, after in ((L7_HW, "HW", prev.hw, s.hw), (L7_LSO, "LSO", prev.lso, s.lso)):
                if after < before:
                    change = {"name": name, "before": before, "after": after, "prev_time": prev.time_ms}
                    message = m.L7_BACK.format(**s._asdict(), **change)
                    found.append(anomaly(kind, tp, message, offsets=(before, after)))
        last[key] = s
    return found


def check_read_committed_fetches(gt: GroundTruth) -> list[Anomaly]:
    """L8: a read_committed fetch never returns a batch at or beyond the LSO of its response.

    Checked from the consumers' ``consumer.fetched`` trace events (the fetch offset, the next
    offset the consumer moved to, i.e. the end of the last batch returned, and the response's
    HW and LSO, which the leader computed when it answered): a read_committed fetch must have
    ``next ≤ LSO`` and ``LSO ≤ HW``. This is the weaker, black-box form: it bounds the
    *batches* returned, not the records handed to the application (control records and aborted
    data are dropped client side and not logged; the history checkers' G1a covers those).
    Without a kept trace only ``LSO ≤ HW`` can be checked, from ``Consumer.fetch_log``.
    """
    found: list[Anomaly] = []
    for f in gt.fetches:
        tp = (f.topic, f.partition)
        if f.lso > f.hw:
            message = m.L8_LSO_ABOVE_HW.format(**f._asdict())
            found.append(anomaly(L8_BEYOND_LSO, tp, message, offsets=(f.fetch_offset, f.lso, f.hw)))
        if f.isolation != "read_committed" or f.next_offset is None:
            continue
        if f.next_offset > max(f.lso, f.fetch_offset):
            message = m.L8_BEYOND_LSO.format(**f._asdict())
            found.append(anomaly(L8_BEYOND_LSO, tp, message, offsets=(f.fetch_offset, f.next_offset, f.lso)))
    return found
