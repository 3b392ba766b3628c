"""L9: each replica's aborted-transaction index is exactly its non-empty aborted transactions."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from engine.check import messages as m
from engine.check.invariants._common import anomaly, txn_spans

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.ground_truth import GroundTruth

L9_INDEX = "L9-aborted-index"


def check_aborted_index(gt: GroundTruth) -> list[Anomaly]:
    """L9: per replica, the aborted index holds one entry per non-empty aborted transaction, and nothing else.

    From the replica's own log, each ABORT marker that follows transactional data of its
    producer (since the producer's previous marker) ends a transaction ``(producer id, first
    offset, marker offset)``, the first offset being that first transactional batch. An ABORT
    with no such data is an empty transaction and has no entry (Kafka's ``appendEndTxnMarker``
    completes no transaction for it). That multiset must equal the index entries'
    ``(producer_id, first_offset, last_offset)``. Every replica is checked, down brokers
    included (the index is durable).
    """
    found: list[Anomaly] = []
    entries: dict[tuple[str, int, int], Counter[tuple[int, int, int]]] = {}
    for e in gt.aborted_index:
        entries.setdefault((e.topic, e.partition, e.broker_id), Counter())[
            (e.producer_id, e.first_offset, e.last_offset)
        ] += 1
    logs = gt.logs()
    for key in sorted(set(logs) | set(entries)):
        spans, _ = txn_spans(logs.get(key, []))
        want: Counter[tuple[int, int, int]] = Counter(
            (s.producer_id, s.first_offset, s.marker_offset)
            for s in spans
            if s.control_type == "ABORT" and s.marker_offset is not None and s.data_offsets
        )
        have = entries.get(key, Counter())
        tp = (key[0], key[1])
        for sentence, extra in ((m.L9_MISSING, want - have), (m.L9_UNMATCHED, have - want)):
            found.extend(
                anomaly(
                    L9_INDEX,
                    tp,
                    sentence.format(broker_id=key[2], producer_id=t[0], first_offset=t[1], last_offset=t[2]),
                    offsets=(t[1], t[2]),
                )
                for t in sorted(extra.elements())
            )
    return found
