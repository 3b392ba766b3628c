"""L4 (one marker ends each transaction), L5 (no hanging transaction), L6 (atomicity).

Transaction version 2 writes the marker with the *bumped* epoch (data at epoch e, marker at
e + 1), and so do epoch fences and timeouts in either version; spans are therefore matched by
producer id and position (the data since the producer's previous marker), never by epoch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.check import messages as msg
from engine.check.invariants._common import TP, Decision, TxnSpan, all_decisions, anomaly, txn_spans

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.ground_truth import GroundTruth

L4_MARKER_EPOCH = "L4-marker-epoch"
L4_DATA_AFTER_MARKER = "L4-data-after-marker"
L4_DUPLICATE_MARKER = "L4-duplicate-marker"
L4_NON_TXN_IN_TXN = "L4-non-transactional-in-txn"
L5_HANGING = "L5-hanging-txn"
L5_LSO = "L5-lso-below-hw"
L6_ATOMICITY = "L6-atomicity"
L6_INCOMPLETE = "L6-incomplete"


def _decision_counts(decs: list[Decision]) -> dict[tuple[TP, int, int, str], int]:
    counts: dict[tuple[TP, int, int, str], int] = {}
    for d in decs:
        for tp in d.partitions:
            k = (tp, d.producer_id, d.producer_epoch, d.control_type)
            counts[k] = counts.get(k, 0) + 1
    return counts


def check_markers(gt: GroundTruth) -> list[Anomaly]:
    """L4: every transactional data batch is followed by exactly one marker of its transaction.

    Over the authoritative log of each partition, per producer id:

    * the marker that ends a span must not carry an epoch lower than the span's data
      (``L4-marker-epoch``: an old coordinator epoch closed a newer transaction);
    * transactional data written after a marker with an epoch *lower* than that marker's
      belongs to an ended (fenced) transaction (``L4-data-after-marker``);
    * a transaction gets one marker per partition: more markers of one (producer id, epoch,
      type) than the coordinator decided for that partition is ``L4-duplicate-marker``
      (without coordinator history for the producer: a marker repeating the previous one with
      no data between). Kafka itself tolerates a duplicate after a marker retry (it is a no-op
      for readers); it is reported under its own kind so a harness may allow it;
    * no non-transactional batch of a producer inside its open transaction
      (``L4-non-transactional-in-txn``).

    Data never followed by a marker is L5's.
    """
    found: list[Anomaly] = []
    counts = _decision_counts(all_decisions(gt))
    known_pids = {k[1] for k in counts}
    for tp in gt.partition_keys():
        batches = gt.final_log(tp)
        spans, mixed = txn_spans(batches)
        for offset, pid in mixed:
            found.append(
                anomaly(
                    L4_NON_TXN_IN_TXN,
                    tp,
                    msg.L4_NON_TXN_IN_TXN.format(producer_id=pid, base_offset=offset),
                    offsets=(offset,),
                )
            )
        last_marker: dict[int, tuple[int, int]] = {}
        seen: dict[tuple[int, int, str], list[int]] = {}
        prev_closed: dict[int, TxnSpan] = {}
        for s in sorted(spans, key=lambda s: s.first_offset if s.marker_offset is None else s.marker_offset):
            lm = last_marker.get(s.producer_id)
            if lm is not None:
                stale = [o for o, e in zip(s.data_offsets, s.data_epochs, strict=True) if e < lm[0]]
                if stale:
                    found.append(
                        anomaly(
                            L4_DATA_AFTER_MARKER,
                            tp,
                            msg.L4_DATA_AFTER_MARKER.format(
                                producer_id=s.producer_id, stale=stale, marker_epoch=lm[0], marker_offset=lm[1]
                            ),
                            offsets=(lm[1], *stale),
                        )
                    )
            if s.marker_offset is None:
                continue
            assert s.marker_epoch is not None and s.control_type is not None
            if s.data_epochs and s.marker_epoch < max(s.data_epochs):
                found.append(
                    anomaly(
                        L4_MARKER_EPOCH,
                        tp,
                        msg.L4_MARKER_EPOCH.format(**s._asdict(), data_epoch=max(s.data_epochs)),
                        offsets=(s.data_offsets[0], s.marker_offset),
                    )
                )
            key = (s.producer_id, s.marker_epoch, s.control_type)
            seen.setdefault(key, []).append(s.marker_offset)
            prev = prev_closed.get(s.producer_id)
            if s.producer_id in known_pids:
                pass  # counted against the coordinator's decisions below
            elif (
                prev is not None
                and not s.data_offsets
                and (prev.marker_epoch, prev.control_type) == (s.marker_epoch, s.control_type)
            ):
                message = msg.L4_MARKER_REPEAT.format(**s._asdict(), prev_offset=prev.marker_offset)
                found.append(anomaly(L4_DUPLICATE_MARKER, tp, message, offsets=(prev.marker_offset, s.marker_offset)))
            prev_closed[s.producer_id] = s
            if lm is None or s.marker_epoch >= lm[0]:
                last_marker[s.producer_id] = (s.marker_epoch, s.marker_offset)
        for (pid, epoch, control), offsets in sorted(seen.items()):
            allowed = counts.get((tp, pid, epoch, control), 0)
            if pid in known_pids and allowed and len(offsets) > allowed:
                found.append(
                    anomaly(
                        L4_DUPLICATE_MARKER,
                        tp,
                        msg.L4_MARKERS_OVER.format(
                            producer_id=pid, n=len(offsets), control_type=control, marker_epoch=epoch, allowed=allowed
                        ),
                        offsets=tuple(offsets),
                    )
                )
    return found


def check_no_hanging(gt: GroundTruth) -> list[Anomaly]:
    """L5: at the end no transaction hangs: every transactional batch has a marker; LSO == HW.

    Over the authoritative log: a span of transactional data with no marker after it is
    ``L5-hanging-txn``. On every partition whose leader replica is loaded, ``LSO < HW`` is
    ``L5-lso-below-hw``. Run it after heal and ``transaction.max.timeout.ms`` plus the abort
    interval, when the coordinator has had time to abort whatever was left open.
    """
    found: list[Anomaly] = []
    for tp in gt.partition_keys():
        spans, _ = txn_spans(gt.final_log(tp))
        found.extend(
            anomaly(
                L5_HANGING,
                tp,
                msg.L5_HANGING.format(**s._asdict(), n=len(s.data_offsets)),
                offsets=s.data_offsets[:10],
            )
            for s in spans
            if s.marker_offset is None
        )
        leader = gt.authoritative(tp)
        r = gt.replica(tp, leader) if leader is not None else None
        if r is not None and r.is_leader and r.lso is not None and r.lso != r.hw:
            found.append(
                anomaly(L5_LSO, tp, msg.L5_LSO.format(leader=leader, lso=r.lso, hw=r.hw), offsets=(r.lso, r.hw))
            )
    return found


def check_atomicity(gt: GroundTruth) -> list[Anomaly]:
    """L6: all markers of one transaction agree, and agree with the coordinator's decision.

    For each partition and producer id, the markers in offset order must match, one for one,
    the coordinator's decisions (PREPARE_COMMIT / PREPARE_ABORT in ``__transaction_state``)
    for that producer id that name the partition: same epoch, same type (a duplicate of the
    previous marker is skipped here; L4 reports it). A marker with no such decision, of the
    other type, or a decision whose marker is missing is ``L6-atomicity``; so is, under
    transaction version 2 (one epoch per transaction) and for producers the coordinator
    history does not know, one (producer id, epoch) with COMMIT in one partition and ABORT in
    another. Every decision must be followed by its COMPLETE_* (``L6-incomplete``).
    """
    found: list[Anomaly] = []
    decs = all_decisions(gt)
    by_pid_tp: dict[tuple[int, TP], list[Decision]] = {}
    for d in decs:
        for tp in d.partitions:
            by_pid_tp.setdefault((d.producer_id, tp), []).append(d)
        if not d.completed:
            found.append(
                anomaly(
                    L6_INCOMPLETE,
                    None,
                    msg.L6_INCOMPLETE.format(**d._asdict()),
                    offsets=(d.offset,),
                )
            )
    known_pids = {d.producer_id for d in decs}
    unknown_types: dict[tuple[int, int], dict[str, list[tuple[TP, int]]]] = {}
    for tp in gt.partition_keys():
        spans, _ = txn_spans(gt.final_log(tp))
        markers: dict[int, list[TxnSpan]] = {}
        for s in sorted((s for s in spans if s.marker_offset is not None), key=lambda s: s.marker_offset or 0):
            markers.setdefault(s.producer_id, []).append(s)
        for pid in sorted(markers):
            if pid not in known_pids:
                for s in markers[pid]:
                    assert s.marker_epoch is not None and s.control_type is not None
                    k = (pid, s.marker_epoch)
                    unknown_types.setdefault(k, {}).setdefault(s.control_type, []).append((tp, s.marker_offset or 0))
                continue
            found.extend(_align(tp, pid, markers[pid], by_pid_tp.get((pid, tp), [])))
        for pid in sorted({p for p, t in by_pid_tp if t == tp} - set(markers)):
            found.extend(_missing(tp, d) for d in by_pid_tp[(pid, tp)])
    if gt.transaction_version >= 2:
        for (pid, epoch), types in sorted(unknown_types.items()):
            if len(types) > 1:
                where = sorted((t, tp, o) for t, places in types.items() for tp, o in places)
                found.append(
                    anomaly(
                        L6_ATOMICITY,
                        None,
                        msg.L6_DISAGREE.format(
                            producer_id=pid,
                            marker_epoch=epoch,
                            places=", ".join(f"{t} in {tp[0]}-{tp[1]}@{o}" for t, tp, o in where),
                        ),
                        offsets=tuple(o for _t, _tp, o in where),
                    )
                )
    return found


def _missing(tp: TP, d: Decision) -> Anomaly:
    return anomaly(
        L6_ATOMICITY,
        tp,
        msg.L6_MISSING.format(**d._asdict()),
    )


def _align(tp: TP, pid: int, markers: list[TxnSpan], decs: list[Decision]) -> list[Anomaly]:
    found: list[Anomaly] = []
    i = 0
    for m in markers:
        want = (m.marker_epoch, m.control_type)
        if i < len(decs) and (decs[i].producer_epoch, decs[i].control_type) == want:
            i += 1
            continue
        if i > 0 and (decs[i - 1].producer_epoch, decs[i - 1].control_type) == want:
            continue  # a duplicate of the previous marker (L4)
        ahead = next((j for j in range(i, len(decs)) if (decs[j].producer_epoch, decs[j].control_type) == want), None)
        if ahead is not None:
            found.extend(_missing(tp, d) for d in decs[i:ahead])
            i = ahead + 1
            continue
        decided = ", ".join(f"{d.control_type}@{d.producer_epoch}" for d in decs) or "nothing"
        found.append(
            anomaly(
                L6_ATOMICITY,
                tp,
                msg.L6_UNDECIDED.format(**m._asdict(), decided=decided),
                offsets=(m.marker_offset or 0,),
            )
        )
    found.extend(_missing(tp, d) for d in decs[i:])
    return found
