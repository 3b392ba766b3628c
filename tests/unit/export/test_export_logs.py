"""The brokers' state as Arrow tables (``engine.export.logs``): schemas, round trip, errors."""

from __future__ import annotations

import dataclasses
from typing import Any

import pyarrow as pa
import pytest

from engine.check.ground_truth import BatchRow, GroundTruth, LeaderAndIsrRow, ReplicaRow, export_ground_truth
from engine.check.invariants import check_ground_truth
from engine.export.common import RUN_FIELDS, RunId
from engine.export.logs import (
    LOG_FIELDS,
    LOG_TABLES,
    ground_truth_from_tables,
    log_tables,
    partition_state_table,
    samples_from_table,
)
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from engine.scenarios.mutants import get_mutant

EMPTY = GroundTruth(7, 0, 2, (), (), (), (), (), (), (), ())

#: The exact column types the export promises (``eos-checking.md`` §5.5 and the module docstring).
EXPECTED_TYPES = {
    "records": "topic:string partition:int32 broker_id:int32 offset:int64 leader_epoch:int32 producer_id:int64 "
    "producer_epoch:int32 base_sequence:int32 sequence:int32 is_transactional:bool is_control:bool "
    "control_type:string coordinator_epoch:int32 key:string value:string batch_base_offset:int64 "
    "batch_last_offset:int64 create_time_ms:int64 final_leader:bool",
    "partitions": "topic:string partition:int32 leader:int32 leader_epoch:int32 isr:list<item: int32> "
    "replicas:list<item: int32> transaction_version:int32 snapshot_ms:int64",
    "txn_state": "source:string broker_id:int32 transactional_id:string index:int32 offset:int64 "
    "producer_id:int64 producer_epoch:int32 state:string "
    "partitions:list<item: struct<topic: string, partition: int32>> txn_start_ms:int64 update_ms:int64",
    "partition_state": "index:int64 time_ms:int64 topic:string partition:int32 broker_id:int32 "
    "leader_epoch:int32 leo:int64 hw:int64 lso:int64",
}


def _types(schema: pa.Schema) -> str:
    return " ".join(f"{f.name}:{f.type}" for f in schema)


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    """Real runs with faults: a replicated log under a leader crash, transactions, and a fenced zombie (M6)."""
    out = {}
    for label, name, mutant in (
        ("crash", "replication: leader crash with acks=all", None),
        ("failover", "coordinator: failover", None),
        ("zombie-M6", "transactions: zombie fencing", "M6"),
    ):
        r = run_spec(BY_NAME[name], 1, mutant=get_mutant(mutant) if mutant else None)
        out[label] = (r, export_ground_truth(r.cluster), RunId(label, name, 1))
    return out


def test_every_table_has_the_exact_schema_with_rows_and_without(runs: dict[str, Any]) -> None:
    _, gt, run = runs["failover"]
    for source in (gt, EMPTY):
        tables = log_tables(source, run)
        assert list(tables) == list(LOG_TABLES)
        for name, t in tables.items():
            assert t.schema == pa.schema([*RUN_FIELDS, *LOG_FIELDS[name]]), name
    empty = log_tables(EMPTY, run)
    assert all(t.num_rows == 0 for t in empty.values())
    for name, want in EXPECTED_TYPES.items():
        fields = LOG_FIELDS[name]
        assert _types(pa.schema(fields)) == want, name
    ps = partition_state_table([], run)
    assert ps.num_rows == 0 and ps.schema == pa.schema([*RUN_FIELDS, *LOG_FIELDS["partition_state"]])


def test_rows_match_the_ground_truth(runs: dict[str, Any]) -> None:
    _, gt, run = runs["failover"]
    tables = log_tables(gt, run)
    assert tables["records"].num_rows == sum(len(b.values) for b in gt.batches)
    assert tables["batches"].num_rows == len(gt.batches)
    assert tables["txn_state"].num_rows == len(gt.txn_history) > 0
    assert tables["replicas"].num_rows == len(gt.replicas)
    assert set(tables["records"]["run_id"].to_pylist()) == {"failover"}
    assert set(tables["records"]["seed"].to_pylist()) == {1}
    # final_leader marks exactly the authoritative replica's copies
    recs = tables["records"].to_pylist()
    for r in recs:
        assert r["final_leader"] == (gt.authoritative((r["topic"], r["partition"])) == r["broker_id"])
    # __transaction_state holds objects: they are exported as their text
    internal = [r for r in recs if r["topic"] == "__transaction_state"]
    assert internal and all(isinstance(r["value"], str) for r in internal)
    control = [r for r in recs if r["is_control"]]
    assert control and all(r["control_type"] in ("COMMIT", "ABORT") for r in control)
    assert all(r["control_type"] is None for r in recs if not r["is_control"])


@pytest.mark.parametrize("label", ["crash", "failover", "zombie-M6"])
def test_round_trip_gives_the_same_ground_truth_and_the_same_anomalies(runs: dict[str, Any], label: str) -> None:
    result, gt, run = runs[label]
    tables = log_tables(gt, run)
    back = ground_truth_from_tables(tables)
    assert back.seed == gt.seed and back.time_ms == gt.time_ms
    assert back.transaction_version == gt.transaction_version
    for name in ("replicas", "partitions", "txn_history", "aborted_index", "producers", "fetches"):
        assert getattr(back, name) == getattr(gt, name), name
    text_topics = [b for b in gt.batches if not b.topic.startswith("__")]
    assert [b for b in back.batches if not b.topic.startswith("__")] == text_topics
    assert [b._replace(keys=(), values=()) for b in back.batches] == [
        b._replace(keys=(), values=()) for b in gt.batches
    ]
    samples = result.timeline.samples
    assert samples_from_table(partition_state_table(samples, run)) == samples
    assert check_ground_truth(back, samples) == check_ground_truth(gt, samples)


def test_round_trip_keeps_the_anomalies_a_mutant_causes(runs: dict[str, Any]) -> None:
    _, gt, run = runs["zombie-M6"]
    found = check_ground_truth(ground_truth_from_tables(log_tables(gt, run)))
    assert {"L3-epoch-regression", "L4-data-after-marker"} <= {a.kind for a in found}


def test_corrupted_copies_round_trip_exactly() -> None:
    gt = dataclasses.replace(EMPTY, transaction_version=1, time_ms=55)
    b = BatchRow("t", 0, 1, 0, 1, 3, 9, 2, 0, 1, True, False, None, -1, 17, ("k", None), ("a", "b"))
    dup = b._replace(base_offset=1, last_offset=1, keys=(), values=("c",))
    gt = dataclasses.replace(
        gt,
        batches=(b, dup, b._replace(broker_id=2)),
        replicas=(
            ReplicaRow("t", 0, 1, "up", True, 3, 2, 2, None),
            ReplicaRow("t", 0, 2, "down", False, None, 2, 1, 1),
        ),
        partitions=(LeaderAndIsrRow("t", 0, 1, 3, (1,), (1, 2)),),
    )
    back = ground_truth_from_tables(log_tables(gt, RunId("c", "", 0)))
    assert back.batches[0] == b
    assert back.batches[1] == dup._replace(keys=(None,))
    assert back.transaction_version == 1 and back.time_ms == 55
    assert back.replicas == gt.replicas and back.partitions == gt.partitions
    assert check_ground_truth(back) == check_ground_truth(gt) != []


def test_tables_of_several_runs_need_a_run_id(runs: dict[str, Any]) -> None:
    parts = [log_tables(gt, run) for _, gt, run in runs.values()]
    merged = {name: pa.concat_tables([p[name] for p in parts]) for name in LOG_TABLES}
    with pytest.raises(ValueError, match="pass run_id="):
        ground_truth_from_tables(merged)
    _, gt, _ = runs["crash"]
    back = ground_truth_from_tables(merged, run_id="crash")
    assert back.replicas == gt.replicas and len(back.batches) == len(gt.batches)
    samples = {label: r.timeline.samples for label, (r, _, _) in runs.items()}
    stacked = pa.concat_tables([partition_state_table(samples[label], run) for label, (_, _, run) in runs.items()])
    assert samples_from_table(stacked, run_id="failover") == samples["failover"]
    with pytest.raises(ValueError, match="pass run_id="):
        samples_from_table(stacked)


def test_bad_inputs_raise_one_clear_error(runs: dict[str, Any]) -> None:
    _, gt, run = runs["crash"]
    tables = log_tables(gt, run)
    with pytest.raises(ValueError, match="needs a GroundTruth"):
        log_tables({}, run)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a RunId"):
        log_tables(gt, "crash")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="TimelineSample"):
        partition_state_table([(1, 2)], run)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no 'fetches' table"):
        ground_truth_from_tables({k: v for k, v in tables.items() if k != "fetches"})
    with pytest.raises(ValueError, match="has no column 'hw'"):
        ground_truth_from_tables({**tables, "replicas": tables["replicas"].drop_columns(["hw"])})
    with pytest.raises(ValueError, match=r"pyarrow\.Table"):
        ground_truth_from_tables({**tables, "records": tables["records"].to_pylist()})
    with pytest.raises(ValueError, match="mapping"):
        ground_truth_from_tables([])  # type: ignore[arg-type]
