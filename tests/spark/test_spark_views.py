"""Tests of ``eos_magics.spark.views``: exported runs as Spark temp views.

Goal: ``register`` makes one temp view per table of the export schema from a ``RunExport``, a
run's result, an export directory or a list of them; SQL over the views counts exactly the rows
the Arrow tables hold (one run, two runs from a directory, a mix); the directory views have the
Spark schema of ``TABLES``; and a missing, foreign or wrong-schema directory, a run given twice
or a bad argument is one ``SparkBridgeError`` line. Method: one local[2] session for the module;
the counts of every table are checked in one ``UNION ALL`` query per source, so the module runs
a handful of Spark jobs.
"""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import types as T  # noqa: N812

from engine.export import TABLES, RunExport, export_run
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.views import register, to_spark_schema

SMALL = "idempotence: dedup window"


@pytest.fixture(scope="module")
def copier():
    return run_spec(BY_NAME["copier: random aborts"], 7)


@pytest.fixture(scope="module")
def copier_export(copier):
    return export_run(copier)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """An export directory of two runs, and the export it holds."""
    both = RunExport.concat([export_run(run_spec(BY_NAME[SMALL], s)) for s in (1, 2)])
    d = tmp_path_factory.mktemp("views") / "runs"
    both.write_parquet(d)
    return d, both


def _counts(spark, prefix: str) -> dict[tuple[str, str], int]:
    """Return {(table, run_id): rows} of every view, in one Spark job (one aggregation over a union)."""
    union = " UNION ALL ".join(f"SELECT '{name}' AS t, run_id FROM {prefix}{name}" for name in TABLES)
    rows = spark.sql(f"SELECT t, run_id, count(*) AS n FROM ({union}) GROUP BY t, run_id").collect()
    return {(r.t, r.run_id): r.n for r in rows}


def _arrow_counts(export: RunExport) -> dict[tuple[str, str], int]:
    out = {}
    for name in TABLES:
        for run_id in export.run_ids:
            n = export.select(run_id)[name].num_rows
            if n:
                out[(name, run_id)] = n
    return out


def _one_line(call, *fragments: str) -> str:
    with pytest.raises(SparkBridgeError) as info:
        call()
    text = str(info.value)
    assert "\n" not in text
    for f in fragments:
        assert f in text, (f, text)
    return text


# -- registering ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_run_export_becomes_one_view_per_table_with_the_arrow_row_counts(spark, copier_export):
    views = register(spark, copier_export, prefix="a_")
    assert list(views) == [f"a_{name}" for name in TABLES]
    assert {t.name for t in spark.catalog.listTables() if t.name.startswith("a_")} == set(views)
    assert _counts(spark, "a_") == _arrow_counts(copier_export)


@pytest.mark.slow
def test_sql_over_the_views_reads_nested_keys_json_details_and_outcomes(spark, copier_export):
    register(spark, copier_export, prefix="q_")
    row = spark.sql(
        """
        SELECT
          (SELECT count(*) FROM q_history LATERAL VIEW explode(keys) k AS key) AS keys,
          (SELECT count(*) FROM q_group_offsets WHERE outcome = 'aborted') AS aborted,
          (SELECT count(*) FROM q_trace WHERE get_json_object(detail, '$.tp') = 'out-0') AS out0,
          (SELECT max(offset) FROM q_records WHERE final_leader AND topic = 'out') AS last_out
        """
    ).collect()[0]
    ex = copier_export
    assert row.keys == sum(len(k) for k in ex["history"]["keys"].to_pylist()) > 0
    assert row.aborted == ex["group_offsets"]["outcome"].to_pylist().count("aborted") > 0
    assert row.out0 == sum('"tp":"out-0"' in d for d in ex["trace"]["detail"].to_pylist()) > 0
    records = ex["records"].to_pylist()
    assert row.last_out == max(r["offset"] for r in records if r["final_leader"] and r["topic"] == "out")


@pytest.mark.slow
def test_a_directory_of_two_runs_gives_the_counts_of_both(spark, two_runs):
    d, both = two_runs
    views = register(spark, d, prefix="d_")
    assert _counts(spark, "d_") == _arrow_counts(both)
    for name in TABLES:  # Spark reads file columns as nullable: compare the types only
        assert views[f"d_{name}"].schema.simpleString() == to_spark_schema(TABLES[name]).simpleString()


@pytest.mark.slow
def test_a_list_mixes_sources_and_run_id_picks_one_run_of_a_directory(spark, copier, copier_export, two_runs):
    d, both = two_runs
    register(spark, [copier_export, d], prefix="l_")
    register(spark, d, prefix="s_", run_id="idempotence-dedup-window-s2")
    register(spark, copier, prefix="r_", run_id="mine")
    rows = spark.sql(
        "SELECT 'l' AS v, run_id, count(*) AS n FROM l_records GROUP BY run_id "
        "UNION ALL SELECT 's', run_id, count(*) FROM s_records GROUP BY run_id "
        "UNION ALL SELECT 'r', run_id, count(*) FROM r_records GROUP BY run_id"
    ).collect()
    got = {(r.v, r.run_id): r.n for r in rows}
    n1, n2 = (both.select(f"idempotence-dedup-window-s{s}")["records"].num_rows for s in (1, 2))
    assert got == {
        ("l", "copier-random-aborts-s7"): copier_export["records"].num_rows,
        ("l", "idempotence-dedup-window-s1"): n1,
        ("l", "idempotence-dedup-window-s2"): n2,
        ("s", "idempotence-dedup-window-s2"): n2,
        ("r", "mine"): copier_export["records"].num_rows,
    }


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_missing_or_foreign_directory_is_one_error(spark, tmp_path):
    _one_line(lambda: register(spark, tmp_path / "nowhere"), "does not exist", "eos export")
    (tmp_path / "empty").mkdir()
    _one_line(lambda: register(spark, str(tmp_path / "empty")), "has no eos-export.json")


@pytest.mark.slow
def test_a_directory_with_a_file_of_another_schema_is_one_error(spark, tmp_path, two_runs):
    d = tmp_path / "copy"
    shutil.copytree(two_runs[0], d)
    path = d / "history" / "idempotence-dedup-window-s2.parquet"
    t = pq.read_table(path)
    i = t.schema.get_field_index("process")
    pq.write_table(
        t.set_column(i, pa.field("process", pa.string(), nullable=False), t["process"].cast(pa.string())), path
    )
    _one_line(lambda: register(spark, d), "table history", "column process is string, expected int64", "eos export")


@pytest.mark.slow
def test_a_run_given_twice_a_bad_prefix_or_source_is_one_error(spark, copier_export, two_runs):
    _one_line(lambda: register(spark, [copier_export, copier_export]), "run copier-random-aborts-s7 is given twice")
    _one_line(lambda: register(spark, copier_export, prefix="1x"), "prefix '1x'")
    _one_line(lambda: register(spark, 42), "cannot register a int")
    _one_line(lambda: register(spark, []), "empty list")
    _one_line(lambda: register(spark, two_runs[0], run_id="other"), "holds no run 'other'")


# -- the schema mapping -------------------------------------------------------------------------------


def test_to_spark_schema_maps_arrow_types_to_spark_types():
    key = T.StructType([T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())])
    history = {f.name: f for f in to_spark_schema(TABLES["history"]).fields}
    assert history["process"].dataType == T.LongType()
    assert history["process"].nullable is False
    assert history["error"].nullable is True
    assert history["keys"].dataType == T.ArrayType(key, containsNull=True)
    partitions = {f.name: f.dataType for f in to_spark_schema(TABLES["partitions"]).fields}
    assert partitions["isr"] == T.ArrayType(T.IntegerType())
    assert partitions["partition"] == T.IntegerType()
    assert {f.name: f.dataType for f in to_spark_schema(TABLES["records"]).fields}["is_control"] == T.BooleanType()
    _one_line(lambda: to_spark_schema(pa.schema([pa.field("u", pa.uint64())])), "column u", "uint64")
    _one_line(lambda: to_spark_schema("records"), "pyarrow Schema")
