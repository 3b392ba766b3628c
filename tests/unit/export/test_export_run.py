"""Tests of ``engine.export``: a run as the tables of the export schema, in memory.

Goal: every export holds every table of ``TABLES`` with its exact schema; the rows match what
the cluster holds (records, batches, trace, history, faults, timeline samples); the
``group_offsets`` outcomes follow the markers in ``__consumer_offsets`` and agree with the
engine's own replay; the same seed gives identical tables; a hand-driven cluster exports too,
with ``partition_state`` rebuilt from the trace matching the timeline; and
``docs/export-schema.md`` lists exactly the columns of ``TABLES``. Method: run two catalog
scenarios (one with a fault plan, one copier with aborted transactions) and one hand session,
export them, and compare the tables with the engine state they came from.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter
from enum import Enum
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from engine.check.client_history import ClientHistory
from engine.check.ground_truth import export_ground_truth
from engine.check.timeline import PartitionTimeline
from engine.cluster import Cluster
from engine.export import SCHEMA_VERSION, TABLES, ExportError, RunExport, export_cluster, export_run, export_runs
from engine.export.common import RUN_FIELDS
from engine.export.events import detail_json, group_offsets_table, trace_samples
from engine.export.run import run_id_for
from engine.export.schema import validate
from engine.group.records import replay
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from engine.scenarios.mutants import get_mutant

DOC = Path(__file__).resolve().parents[3] / "docs" / "export-schema.md"
COPIER = "copier: random aborts"
FAULTY = "durability: correlated power loss"


@pytest.fixture(scope="module")
def copier():
    return run_spec(BY_NAME[COPIER], 7)


@pytest.fixture(scope="module")
def copier_export(copier):
    return export_run(copier)


@pytest.fixture(scope="module")
def faulty():
    return run_spec(BY_NAME[FAULTY], 7)


@pytest.fixture(scope="module")
def faulty_export(faulty):
    return export_run(faulty)


@pytest.fixture(scope="module")
def session():
    """A cluster driven by hand with a timeline attached before any topic exists, a plain group commit."""
    c = Cluster(seed=3, brokers=3, config={"min.insync.replicas": 2, "offsets.topic.num.partitions": 3})
    timeline = PartitionTimeline.attach(c)
    rec = ClientHistory.attach(c)
    c.create_topic("orders", partitions=2, replication_factor=3)
    p = c.producer({"linger.ms": 0})
    for i in range(10):
        p.produce("orders", value=f"v{i}".encode(), partition=i % 2)
    p.flush()
    consumer = c.consumer({"group.id": "g", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([("orders", 0), ("orders", 1)])
    consumed = consumer.consume(100, timeout=3)
    consumer.commit()
    c.run_for(200)
    return c, rec, timeline, len(consumed)


# -- every table, exact schemas ------------------------------------------------------------


def test_every_table_is_present_with_its_exact_schema_in_every_export(copier_export, faulty_export, session):
    c, rec, *_ = session
    for export in (copier_export, faulty_export, export_cluster(c, rec)):
        assert list(export.tables) == list(TABLES)
        for name, schema in TABLES.items():
            assert export[name].schema.equals(schema), name
            assert [f.nullable for f in export[name].schema] == [f.nullable for f in schema], name


def test_every_schema_begins_with_the_run_columns_and_the_version_is_one():
    assert SCHEMA_VERSION == 1
    for schema in TABLES.values():
        assert list(schema)[:3] == list(RUN_FIELDS)


def test_run_columns_name_scenario_seed_and_mutant(copier_export, faulty_export):
    assert copier_export.run_ids == ["copier-random-aborts-s7"]
    assert faulty_export.run_ids == ["durability-correlated-power-loss-s7"]
    t = copier_export["records"]
    assert set(t["run_id"].to_pylist()) == {"copier-random-aborts-s7"}
    assert set(t["scenario"].to_pylist()) == {COPIER}
    assert set(t["seed"].to_pylist()) == {7}
    assert run_id_for(COPIER, 7, "M3") == "copier-random-aborts-s7-M3"
    assert run_id_for(COPIER, 7, swarm=True) == "copier-random-aborts-s7-swarm"
    assert run_id_for("", 9) == "session-s9"


def test_a_mutant_run_gets_the_mutant_in_its_run_id():
    r = run_spec(BY_NAME["idempotence: dedup window"], 2, mutant=get_mutant("M3"))
    assert export_run(r).run_ids == ["idempotence-dedup-window-s2-M3"]


# -- rows match the cluster ------------------------------------------------------------------


def _log_records(cluster) -> int:
    """Count every record of every replica's log, straight from the brokers."""
    n = 0
    for broker in cluster.brokers.values():
        assert broker.status.name != "DOWN"  # the runs heal: every log is live
        for replica in broker.replicas.values():
            n += sum(len(b.values) for b in replica.log.batches)
    return n


@pytest.mark.parametrize("which", ["copier", "faulty"])
def test_row_counts_match_the_cluster_history_trace_and_timeline(request, which):
    result = request.getfixturevalue(which)
    export = request.getfixturevalue(f"{which}_export")
    cluster = result.cluster
    counts = export.row_counts()
    assert counts["records"] == _log_records(cluster) > 0
    assert counts["batches"] == sum(len(r.log.batches) for b in cluster.brokers.values() for r in b.replicas.values())
    assert counts["trace"] == len(cluster.world.trace) == len(cluster.world.trace.events)
    assert counts["history"] == len(result.history)
    assert counts["history_mops"] == sum(len(op.mops) for op in result.history)
    assert counts["partition_state"] == len(result.timeline.samples)
    assert counts["partitions"] == len(cluster.controller.partitions)
    fault_events = sum(1 for e in cluster.world.trace.events if e.kind == "fault")
    assert counts["faults"] == len(cluster.world.faults.applied) + fault_events


def test_the_trace_table_is_the_trace_with_its_detail_as_sorted_json(faulty, faulty_export):
    events = faulty.cluster.world.trace.events
    t = faulty_export["trace"]
    assert t["index"].to_pylist() == [e.index for e in events]
    assert t["name"].to_pylist() == [e.name for e in events]
    for e, text in zip(events[::97], t["detail"].to_pylist()[::97], strict=True):
        obj = json.loads(text)
        assert list(obj) == sorted(obj)
        assert obj == {k: list(v) if isinstance(v, tuple) else v for k, v in e.detail}


def test_the_faults_table_has_the_plan_and_the_fault_events(faulty, faulty_export):
    t = faulty_export["faults"].to_pylist()
    plan = [r for r in t if r["source"] == "plan"]
    applied = faulty.cluster.world.faults.applied
    assert len(applied) > 0
    assert [(r["time_ms"], r["kind"]) for r in plan] == [(f.at_ms, f.kind) for f in applied]
    assert [json.loads(r["params"]) for r in plan] == [dict(f.params) for f in applied]
    crashes = [r for r in t if r["source"] == "trace" and r["kind"] == "crash"]
    assert {r["node"] for r in crashes} == {"broker-1", "broker-2", "broker-3"}
    assert [r["time_ms"] for r in t] == sorted(r["time_ms"] for r in t)


# -- group offsets -------------------------------------------------------------------------------


def test_group_offsets_of_a_copier_have_committed_and_aborted_transactional_commits(copier_export):
    rows = copier_export["group_offsets"].to_pylist()
    assert rows
    outcomes = Counter(r["outcome"] for r in rows)
    assert outcomes["committed"] > 0
    assert outcomes["aborted"] > 0
    assert all(r["producer_id"] >= 0 for r in rows)  # the copier commits only in transactions


def test_the_last_committed_offset_per_partition_is_what_the_engine_replays(copier):
    gt = export_ground_truth(copier.cluster)
    rows = group_offsets_table(gt, _run()).to_pylist()
    ours: dict[tuple[str, str, int], tuple[int, int]] = {}
    for r in rows:
        if r["outcome"] == "committed":
            key = (r["group"], r["topic"], r["partition"])
            ours[key] = max(ours.get(key, (-1, -1)), (r["log_offset"], r["offset"]))
    theirs = {}
    for tp in gt.partition_keys():
        if tp[0] == "__consumer_offsets":
            for group, loaded in replay(_batches(copier.cluster, tp, gt.authoritative(tp))).items():
                for (topic, part), stored in loaded.committed.items():
                    theirs[(group, topic, part)] = stored.offset
    assert theirs
    assert {k: v[1] for k, v in ours.items()} == theirs


def _run():
    from engine.export.common import RunId

    return RunId("r", "s", 1)


def _batches(cluster, tp, broker_id):
    return cluster.brokers[broker_id].replicas[tp].log.batches


def test_group_offsets_follow_the_markers_aborted_and_open_when_the_log_says_so(copier):
    """Corrupt copies of the ground truth: the outcome must change with the markers."""
    gt = export_ground_truth(copier.cluster)

    def outcomes(batches):
        t = group_offsets_table(dataclasses.replace(gt, batches=batches), _run())
        return Counter(t["outcome"].to_pylist())

    co = "__consumer_offsets"
    assert outcomes(gt.batches)["committed"] > 0
    no_markers = tuple(b for b in gt.batches if not (b.topic == co and b.is_control))
    assert set(outcomes(no_markers)) == {"open"}
    all_abort = tuple(b._replace(control_type="ABORT") if b.topic == co and b.is_control else b for b in gt.batches)
    assert set(outcomes(all_abort)) == {"aborted"}


def test_a_plain_group_commit_is_committed_with_no_producer(session):
    c, rec, _, consumed = session
    rows = export_cluster(c, rec)["group_offsets"].to_pylist()
    assert {(r["group"], r["topic"], r["partition"]) for r in rows} == {("g", "orders", 0), ("g", "orders", 1)}
    assert {(r["producer_id"], r["producer_epoch"], r["outcome"]) for r in rows} == {(-1, -1, "committed")}
    assert sum(r["offset"] for r in rows) == consumed > 0  # next offsets start from 0: one per record read


# -- a cluster driven by hand ---------------------------------------------------------------------


def test_export_cluster_takes_the_client_history_and_names_the_run_session(session):
    c, rec, timeline, _ = session
    export = export_cluster(c, rec, timeline=timeline)
    assert export.run_ids == ["session-s3"]
    assert export["history"].num_rows == len(rec.history()) > 0
    assert export["partition_state"].num_rows == len(timeline.samples)
    assert export_cluster(c)["history"].num_rows == 0
    assert export_cluster(c, scenario="my demo").run_ids == ["my-demo-s3"]


def test_partition_state_rebuilt_from_the_trace_matches_the_timeline(session):
    c, rec, timeline, _ = session
    rebuilt = export_cluster(c, rec)["partition_state"].to_pylist()
    observed = [s._asdict() for s in timeline.samples]
    assert len(rebuilt) == len(observed) > 0

    def values(rows):
        return [{k: v for k, v in r.items() if k not in ("index", "run_id", "scenario", "seed")} for r in rows]

    assert values(rebuilt) == values(observed)


def test_trace_samples_agree_with_the_timeline_of_a_catalog_run_after_it_was_attached(copier):
    rebuilt = Counter(s[1:] for s in trace_samples(copier.cluster.world.trace.events))
    observed = Counter(s[1:] for s in copier.timeline.samples if s.index >= 0)
    assert sum(observed.values()) > 100
    assert observed - rebuilt == Counter()  # every change the timeline saw, the trace shows


# -- determinism -----------------------------------------------------------------------------------


def test_the_same_seed_gives_identical_tables_and_another_seed_does_not(copier_export):
    again = export_run(run_spec(BY_NAME[COPIER], 7))
    for name in TABLES:
        assert again[name].equals(copier_export[name]), name
    other = export_run(run_spec(BY_NAME[COPIER], 8))
    assert not other["trace"].equals(copier_export["trace"])


# -- RunExport ------------------------------------------------------------------------------------


def test_to_pandas_gives_arrow_backed_columns(copier_export):
    df = copier_export.to_pandas("group_offsets")
    assert len(df) == copier_export["group_offsets"].num_rows
    assert all(isinstance(t, pd.ArrowDtype) for t in df.dtypes)
    assert df["partition"].dtype == pd.ArrowDtype(pa.int32())


def test_concat_stacks_runs_and_select_takes_one_back(copier_export, faulty_export):
    both = RunExport.concat([copier_export, faulty_export])
    assert both.run_ids == ["copier-random-aborts-s7", "durability-correlated-power-loss-s7"]
    for name in TABLES:
        assert both[name].num_rows == copier_export[name].num_rows + faulty_export[name].num_rows
    assert both.select("durability-correlated-power-loss-s7")["trace"].equals(faulty_export["trace"])
    with pytest.raises(ExportError, match="twice"):
        RunExport.concat([copier_export, copier_export])


def test_export_runs_builds_one_export_of_many_results(copier, faulty):
    assert export_runs([copier, faulty]).run_ids == ["copier-random-aborts-s7", "durability-correlated-power-loss-s7"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e: e["nope"], "no table named 'nope'"),
        (lambda e: RunExport({k: v for k, v in e.tables.items() if k != "trace"}, e.runs), "no table trace"),
        (lambda e: RunExport({**e.tables, "extra": e["trace"]}, e.runs), "'extra' is no table"),
        (lambda e: RunExport({**e.tables, "trace": e["faults"]}, e.runs), "table trace"),
        (lambda e: export_run("not a run"), "export_run takes the result of a catalog scenario"),
        (lambda e: export_cluster(object()), "export_cluster takes an engine Cluster"),
        (lambda e: export_runs(None), "list of scenario results"),
        (lambda e: export_runs([]), "no runs"),
        (lambda e: e.select("other"), "no run 'other'"),
        (lambda e: RunExport.concat([]), "at least one"),
    ],
)
def test_bad_input_raises_one_clear_export_error(copier_export, call, message):
    with pytest.raises(ExportError, match=re.escape(message)) as info:
        call(copier_export)
    assert "\n" not in str(info.value)


def test_export_run_refuses_a_run_id_that_is_no_file_name(copier):
    with pytest.raises(ExportError, match="without '/'"):
        export_run(copier, run_id="a/b")


# -- schema validation ----------------------------------------------------------------------------


def _with(schema: pa.Schema, name: str, field: pa.Field | None) -> pa.Schema:
    i = schema.get_field_index(name)
    return schema.remove(i) if field is None else schema.set(i, field)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: _with(s, "offset", pa.field("offset", pa.int32(), nullable=False)), "column offset is int32"),
        (lambda s: _with(s, "key", None), "has no column key"),
        (lambda s: s.append(pa.field("zzz", pa.int8())), "has an extra column zzz"),
        (lambda s: _with(s, "topic", pa.field("topic", pa.string(), nullable=True)), "column topic is nullable"),
    ],
)
def test_validate_names_the_table_and_the_first_column_that_differs(change, message):
    validate("records", TABLES["records"])
    with pytest.raises(ExportError, match=re.escape(message)) as info:
        validate("records", change(TABLES["records"]))
    text = str(info.value)
    assert text.startswith("table records ")
    assert "eos export" in text
    assert "\n" not in text


def test_validate_refuses_an_unknown_table():
    with pytest.raises(ExportError, match="no table named 'recs'"):
        validate("recs", TABLES["records"])


# -- JSON details ---------------------------------------------------------------------------------


class _Color(Enum):
    RED = 1


def test_detail_json_is_sorted_and_json_safe():
    text = detail_json(
        [("z", (1, "a")), ("b", b"\xffx"), ("e", _Color.RED), ("n", None), ("f", math.nan), ("o", object)]
    )
    obj = json.loads(text)
    assert list(obj) == ["b", "e", "f", "n", "o", "z"]
    assert obj["z"] == [1, "a"]
    assert obj["b"] == "\\xffx"
    assert obj["e"] == "RED"
    assert obj["f"] == "nan"
    assert obj["o"] == str(object)
    assert detail_json(()) == "{}"


# -- the documented schema -------------------------------------------------------------------------


def _doc_tables() -> dict[str, list[tuple[str, str, str]]]:
    """Return {section: [(column, type, null)]} from the markdown tables of the doc."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^#{2,3} (?:`(\w+)`|Run columns)\s*$", line)
        if heading:
            current = heading.group(1) or "RUN"
            out[current] = []
            continue
        row = re.match(r"^\| `(\w+)` \| ([^|]+) \| (yes|no) \|", line)
        if row and current is not None:
            out[current].append((row.group(1), row.group(2).strip(), row.group(3)))
    return out


def _type_text(t: pa.DataType) -> str:
    return str(t).replace("item: ", "")


def test_the_doc_lists_exactly_the_columns_types_and_nullability_of_every_table():
    doc = _doc_tables()
    run_cols = doc.pop("RUN")
    assert list(doc) == list(TABLES)
    for name, schema in TABLES.items():
        want = [(f.name, _type_text(f.type), "yes" if f.nullable else "no") for f in schema]
        assert run_cols + doc[name] == want, name
    assert f"# Export schema (version {SCHEMA_VERSION})" in DOC.read_text(encoding="utf-8")
