"""T6 and T7 on Spark: the duplicate and lost-write checks over a big exported history.

T6: the same checks, on the same Parquet export of a history of ``--records`` micro-ops (default
5M: sends and polled records, built by ``bench_checker.build_history``), two ways, each in a fresh
process: the Python checker (read the Parquet files, rebuild the ``History`` with
``engine.export.history.history_from_tables``, ``analyse``, ``check_duplicates`` +
``check_lost_writes``) and Spark (``session.start()``, read the Parquet files, the Spark checks'
shared frames, ``duplicates`` + ``lost_writes``, collect). Both must find the same anomalies
(the generator injects one duplicate). Printed: seconds per step, the ratio Spark / Python.

T7 (performance.md: session + load + first query, against the same steps run bare): the
bridge (``session.start()`` + ``views.register(spark, DIR)`` + a first query) against bare Spark
(``SparkSession.builder...getOrCreate()`` with the same settings by hand + ``spark.read.parquet``
+ temp views + the same query), each in a fresh process; the query is a hand-written duplicate
scan in SQL (a value at two or more offsets of its key). Target: the bridge within 1.25x. Beside
it, for scale, the bridge running its own duplicate check instead
(``eos_magics.spark.checks``: the Python checker's exact semantics, with the writer of each
duplicate and ``info`` ops proven committed, over cached intermediates); that row is the price
of the exact records, not overhead of the bridge.

Run: ``timeout 1800 .venv/bin/python bench/bench_spark_checks.py`` (``--records 1000000`` or
``--quick`` for smaller). Spark gets ``EOS_SPARK_DRIVER_MEMORY`` (default here 2g: the default
512m of a Binder pod is for notebooks, not for millions of rows).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import BenchError, check, machine_note, peak_rss_bytes, run_json_child

DUP_SQL = """
SELECT topic, partition, value, sort_array(collect_set(offset)) AS offsets
FROM (
  SELECT m.topic, m.partition, m.value, m.offset
  FROM history_mops m JOIN history h ON m.run_id = h.run_id AND m.`index` = h.`index`
  WHERE m.offset IS NOT NULL AND (m.mop_f = 'poll' OR h.type = 'ok')
) GROUP BY topic, partition, value HAVING size(collect_set(offset)) > 1
"""


def write_export(records: int, directory: Path) -> dict[str, Any]:
    """Build the history, export it as Parquet into ``directory``; return its sizes."""
    from bench_checker import build_history

    from engine.export import export_history

    t0 = time.perf_counter()
    history = build_history(records, readers=1)
    t1 = time.perf_counter()
    export = export_history(history, "bench-t6", scenario="bench")
    export.write_parquet(directory)
    t2 = time.perf_counter()
    mops = export["history_mops"].num_rows
    sends = sum(1 for op in history if op.type != "invoke" for m in op.mops if type(m).__name__ == "Send")
    return {"ops": len(history), "mops_rows": mops, "sends": sends, "build_s": t1 - t0, "export_s": t2 - t1}


def child_python(directory: str) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from engine.check import check_duplicates, check_lost_writes
    from engine.check.analysis import analyse
    from engine.export.history import history_from_tables

    t0 = time.perf_counter()
    h = pq.read_table(Path(directory) / "history")
    m = pq.read_table(Path(directory) / "history_mops")
    t1 = time.perf_counter()
    history = history_from_tables(h, m)
    t2 = time.perf_counter()
    a = analyse(history)
    found = check_duplicates(a) + check_lost_writes(a)
    t3 = time.perf_counter()
    return {
        "read_s": t1 - t0,
        "rebuild_s": t2 - t1,
        "check_s": t3 - t2,
        "total_s": t3 - t0,
        "anomalies": sorted([a.kind, list(a.key), list(a.offsets), list(a.values)] for a in found),
        "peak_rss_mb": peak_rss_bytes() / 2**20,
    }


def _spark_anomalies(rows: list[Any]) -> list[Any]:
    return sorted([r["kind"], [r["topic"], r["partition"]], list(r["offsets"]), list(r["values"])] for r in rows)


def child_spark(directory: str) -> dict[str, Any]:
    from eos_magics.spark import session
    from eos_magics.spark.checks.frames import build_frames
    from eos_magics.spark.checks.lost_writes import lost_writes
    from eos_magics.spark.checks.offsets_dups import duplicates

    t0 = time.perf_counter()
    spark = session.start()
    t1 = time.perf_counter()
    h = spark.read.parquet(str(Path(directory) / "history"))
    m = spark.read.parquet(str(Path(directory) / "history_mops"))
    fr = build_frames(h, m)
    rows = duplicates(fr).unionByName(lost_writes(fr)).collect()
    t2 = time.perf_counter()
    return {
        "start_s": t1 - t0,
        "check_s": t2 - t1,
        "anomalies": _spark_anomalies(rows),
    }


def _bridge(directory: str, query: Any) -> dict[str, Any]:
    from eos_magics.spark import session
    from eos_magics.spark.views import register

    t0 = time.perf_counter()
    spark = session.start()
    t1 = time.perf_counter()
    views = register(spark, directory)
    t2 = time.perf_counter()
    rows = query(spark, views)
    t3 = time.perf_counter()
    return {"start_s": t1 - t0, "load_s": t2 - t1, "check_s": t3 - t2, "total_s": t3 - t0, "found": len(rows)}


def child_bridge(directory: str) -> dict[str, Any]:
    return _bridge(directory, lambda spark, _views: spark.sql(DUP_SQL).collect())


def child_bridge_check(directory: str) -> dict[str, Any]:
    from eos_magics.spark.checks.frames import build_frames
    from eos_magics.spark.checks.offsets_dups import duplicates

    return _bridge(directory, lambda _spark, v: duplicates(build_frames(v["history"], v["history_mops"])).collect())


def child_bare(directory: str) -> dict[str, Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    t0 = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", os.environ.get("EOS_SPARK_DRIVER_MEMORY", "2g"))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    t1 = time.perf_counter()
    spark.read.parquet(str(Path(directory) / "history")).createOrReplaceTempView("history")
    spark.read.parquet(str(Path(directory) / "history_mops")).createOrReplaceTempView("history_mops")
    t2 = time.perf_counter()
    rows = spark.sql(DUP_SQL).collect()
    t3 = time.perf_counter()
    return {"start_s": t1 - t0, "load_s": t2 - t1, "check_s": t3 - t2, "total_s": t3 - t0, "found": len(rows)}


CHILDREN = {
    "python": child_python,
    "spark": child_spark,
    "bridge": child_bridge,
    "bridge_check": child_bridge_check,
    "bare": child_bare,
}


def run_child(side: str, directory: Path, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", side, "--dir", str(directory)]
    return run_json_child(cmd, timeout=timeout, what=side)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000, help="micro-ops in the history (default 5M)")
    parser.add_argument("--quick", action="store_true", help="200k micro-ops, 1 run of T7 each")
    parser.add_argument("--t7-runs", type=int, default=3, help="fresh processes per T7 variant (default 3)")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("EOS_SPARK_DRIVER_MEMORY", "2g")
    if args.child:
        print(json.dumps(CHILDREN[args.child](args.dir)))
        return 0
    records = 200_000 if args.quick else args.records
    t7_runs = 1 if args.quick else args.t7_runs
    print(f"machine: {machine_note()}")
    with tempfile.TemporaryDirectory(prefix="eos-bench-spark-") as tmp:
        directory = Path(tmp) / "export"
        sizes = write_export(records, directory)
        print(
            f"history: {sizes['ops']:,} ops, {sizes['mops_rows']:,} micro-op rows "
            f"({sizes['sends']:,} acknowledged sends); "
            f"built in {sizes['build_s']:.1f} s, exported to Parquet in {sizes['export_s']:.1f} s"
        )
        try:
            py = run_child("python", directory, 3600)
            sp = run_child("spark", directory, 3600)
            check(
                py["anomalies"] == sp["anomalies"],
                f"T6: the two checkers disagree: {py['anomalies'][:3]} vs {sp['anomalies'][:3]}",
            )
            print("\nT6: duplicate + lost-write checks over the same Parquet export (fresh process each)")
            print(
                f"  python : read {py['read_s']:.1f} s + rebuild History {py['rebuild_s']:.1f} s"
                f" + check {py['check_s']:.1f} s"
                f" = {py['total_s']:.1f} s (peak RSS {py['peak_rss_mb']:,.0f} MB)"
            )
            print(f"  spark  : session start {sp['start_s']:.1f} s; read + check {sp['check_s']:.1f} s (local[2])")
            print(
                f"  ratio spark/python: {sp['check_s'] / py['total_s']:.2f} (check only), "
                f"{(sp['start_s'] + sp['check_s']) / py['total_s']:.2f} (with session start); "
                f"same {len(py['anomalies'])} anomalies"
            )
            bridge = [run_child("bridge", directory, 1800) for _ in range(t7_runs)]
            bare = [run_child("bare", directory, 1800) for _ in range(t7_runs)]
            exact = [run_child("bridge_check", directory, 1800) for _ in range(t7_runs)]
            check(
                all(b["found"] == bare[0]["found"] for b in bridge + bare + exact),
                "T7: the two paths found different duplicates",
            )
        except BenchError as exc:
            print(f"FAILED: {exc}")
            return 1
    print(f"\nT7: start + load + first query (a duplicate scan in SQL), median of {t7_runs} fresh process(es)")
    for name, rows in (("bridge", bridge), ("bare", bare), ("exact", exact)):
        med = {k: statistics.median(r[k] for r in rows) for k in ("start_s", "load_s", "check_s", "total_s")}
        print(
            f"  {name:<6} : start {med['start_s']:.1f} s + load {med['load_s']:.1f} s + check {med['check_s']:.1f} s"
            f" = {med['total_s']:.1f} s"
        )
    bare_s = statistics.median(r["total_s"] for r in bare)
    ratio = statistics.median(r["total_s"] for r in bridge) / bare_s
    print(f"  ratio bridge/bare: {ratio:.2f} (target <= 1.25)")
    exact_ratio = statistics.median(r["total_s"] for r in exact) / bare_s
    print(f"  exact: the bridge with its own duplicate check (the Python checker's records); /bare {exact_ratio:.2f}")
    print(f"machine after: {machine_note()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
