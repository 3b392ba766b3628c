"""L13: a leader's in-memory producer table equals the one rebuilt from its log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.check.invariants._common import anomaly
from engine.log.producer_state import ProducerStateManager
from engine.log.records import RecordBatch

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.ground_truth import BatchRow, GroundTruth

L13_PRODUCER_STATE = "L13-producer-state"


def _batch(b: BatchRow) -> RecordBatch:
    """Return a copy of ``b`` as a :class:`RecordBatch`: the fields both have, the leader epoch, size 1."""
    return RecordBatch(
        base_offset=b.base_offset,
        producer_id=b.producer_id,
        producer_epoch=b.producer_epoch,
        base_sequence=b.base_sequence,
        is_transactional=b.is_transactional,
        is_control=b.is_control,
        create_time=b.create_time,
        keys=b.keys,
        values=b.values,
        control_type=b.control_type,
        coordinator_epoch=b.coordinator_epoch,
        partition_leader_epoch=b.leader_epoch,
        size_bytes=1,
    )


def check_producer_state(gt: GroundTruth) -> list[Anomaly]:
    """L13: per leader replica, producer id → (epoch, last sequence, open txn start) matches a replay.

    A fresh :class:`~engine.log.producer_state.ProducerStateManager` replays the leader's whole
    log (bookkeeping only, as a follower or a restart does, but from offset 0 without
    snapshots); for every producer id in either table, the epoch, the last sequence and the
    first offset of its open transaction must be equal. Only loaded leaders are exported, so
    only they are checked. The replay works on copies built from the exported rows.
    """
    found: list[Anomaly] = []
    tables: dict[tuple[str, int, int], dict[int, tuple[int, int, int | None]]] = {}
    for p in gt.producers:
        tables.setdefault((p.topic, p.partition, p.broker_id), {})[p.producer_id] = (
            p.producer_epoch,
            p.last_sequence,
            p.current_txn_first_offset,
        )
    logs = gt.logs()
    for r in gt.replicas:
        if not r.is_leader:
            continue
        key = (r.topic, r.partition, r.broker_id)
        rebuilt = ProducerStateManager(f"{r.topic}-{r.partition}")
        rebuilt.replay([_batch(b) for b in logs.get(key, [])], r.hw)
        replay = {
            pid: (e.producer_epoch, e.last_seq, e.current_txn_first_offset) for pid, e in rebuilt.producers.items()
        }
        memory = tables.get(key, {})
        found.extend(
            anomaly(
                L13_PRODUCER_STATE,
                (r.topic, r.partition),
                f"leader {r.broker_id}: producer {pid} in memory (epoch, last seq, txn start) = "
                f"{memory.get(pid)}, rebuilt from the log = {replay.get(pid)}",
            )
            for pid in sorted(set(replay) | set(memory))
            if replay.get(pid) != memory.get(pid)
        )
    return found
