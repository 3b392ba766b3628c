"""Seed sweeps on Spark executors: ``eos sweep`` with the seeds spread over a cluster's cores.

Role
----
:func:`sweep` turns (scenario, seed) pairs into a DataFrame of tasks, maps them over the
executors with ``mapInArrow`` and a module-level function that calls the engine's own
:func:`engine.scenarios.sweep.run_one`, and returns one row per (scenario, seed). :func:`to_rows`
turns that DataFrame back into the engine's ``Row`` records, and :func:`print_report` prints
them exactly as ``eos sweep`` does. :func:`parse_seeds` and :func:`plan` check the arguments
and build the task list without Spark, so callers (``eos-spark``) can refuse bad input before a
JVM starts.

Invariants
----------
* Every argument is checked before any Spark job; a bad one raises
  :class:`~eos_magics.spark.errors.SparkBridgeError` with one line that says what to type.
* One run's exception is a ``FAIL`` row with its ``error`` and ``traceback`` (``run_one``
  catches it); it never fails the Spark job.
* A (scenario, seed, mutant, swarm) row is the same as the serial sweep's for the same task:
  the simulation is deterministic and each executor runs the very function ``eos sweep`` runs.
* Only DataFrame operations (``createDataFrame``, ``repartition``, ``mapInArrow``,
  ``toArrow``): no ``sparkContext``, no RDD in the job, so it also runs on Spark Connect.

What it does not do
-------------------
It does not ship the project to the executors: their Python must import ``engine`` and
``eos_magics`` (``docs/spark.md``). It does not shrink fault plans (``eos sweep --shrink``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from engine.scenarios.sweep import Row

__all__ = [
    "CONNECT_PARTITIONS",
    "MAX_TASKS",
    "SCHEMA",
    "parse_seeds",
    "plan",
    "print_report",
    "run_batches",
    "run_tasks",
    "seeds_option",
    "sweep",
    "to_rows",
]

#: The columns of a sweep's DataFrame. ``traceback`` and ``origin`` are set only on rows whose
#: run raised (``error`` is then its one line); ``fingerprint`` is null there.
SCHEMA = (
    "scenario string, seed long, mutant string, status string, kinds array<string>, verdict string, "
    "fingerprint string, ops long, sim_ms long, replay string, error string, traceback string, origin string"
)
_TASK_SCHEMA = "scenario string, seed long, mutant string, swarm boolean"
#: The most (scenario, seed) runs one sweep takes: the task list lives in the driver's memory.
MAX_TASKS = 1_000_000
#: Partitions on Spark Connect when the server does not tell its parallelism (see :func:`_partitions`).
CONNECT_PARTITIONS = 16
_MAX_SEED = 2**63 - 1
_MISSING_MODULE = re.compile(r"No module named '([^']+)'")
_RANGE = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+)\s*$")


def seeds_option(text: str) -> int | str:
    """Read a ``--seeds`` option: ``N`` is a count (seeds 1..N), as in ``eos sweep``.

    Anything else (``A..B``, a list) is returned as it is, for :func:`parse_seeds`.
    """
    return int(text) if text.strip().isdigit() else text


def parse_seeds(seeds: Any) -> list[int]:
    """Return the seeds a sweep runs, in the order given.

    Parameters
    ----------
    seeds : int, str or iterable of int
        ``N`` (an int >= 1): seeds ``1..N``, as ``eos sweep --seeds N``. A string of
        comma-separated parts, each a seed or an inclusive range ``A..B``: ``"1..50"``,
        ``"3,17,40..45"``. Or an iterable of ints such as ``range(1, 51)`` or ``[3, 17]``.
        Seeds are non-negative and each appears once.

    Raises
    ------
    SparkBridgeError
        For anything else, with an example of what works.
    """
    if isinstance(seeds, bool):
        raise SparkBridgeError(f"seeds={seeds!r} is not seeds; pass a count (50), a range ('1..50') or a list of ints")
    if isinstance(seeds, int):
        if seeds < 1:
            raise SparkBridgeError(f"seeds={seeds} runs nothing; pass a count of at least 1, or a range like '1..50'")
        out = list(range(1, min(seeds, MAX_TASKS + 1) + 1))
    elif isinstance(seeds, str):
        out = _parse_seed_text(seeds)
    elif isinstance(seeds, Iterable):
        out = _parse_seed_list(seeds)
    else:
        raise SparkBridgeError(
            f"seeds={seeds!r} ({type(seeds).__name__}) is not seeds; pass a count (50), a range ('1..50') "
            "or a list of ints"
        )
    if not out:
        raise SparkBridgeError("seeds is empty; pass a count (50), a range ('1..50') or a non-empty list of ints")
    if len(out) > MAX_TASKS:
        raise SparkBridgeError(f"{len(out)} seeds is more than one sweep takes ({MAX_TASKS}); split the range")
    seen: set[int] = set()
    for s in out:
        if s > _MAX_SEED:
            raise SparkBridgeError(f"seed {s} is too large; seeds must be below 2**63")
        if s in seen:
            raise SparkBridgeError(f"seed {s} is given twice; each seed runs once, so name it once")
        seen.add(s)
    return out


def _parse_seed_text(text: str) -> list[int]:
    if text.strip().isdigit():
        raise SparkBridgeError(
            f"seeds={text!r} is ambiguous; pass the int {text.strip()} for seeds 1..{text.strip()}, "
            f"or '{text.strip()}..{text.strip()}' for that one seed"
        )
    out: list[int] = []
    for part in text.split(","):
        m = _RANGE.match(part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise SparkBridgeError(
                    f"seed range '{part.strip()}' is empty; write the smaller seed first, e.g. '1..50'"
                )
            if hi - lo + 1 > MAX_TASKS:
                raise SparkBridgeError(f"seed range '{part.strip()}' is more than one sweep takes ({MAX_TASKS})")
            out.extend(range(lo, hi + 1))
        elif part.strip().isdigit():
            out.append(int(part))
        else:
            raise SparkBridgeError(
                f"seeds={text!r}: '{part.strip()}' is neither a seed nor a range; use e.g. '1..50' or '3,17,40..45'"
            )
    return out


def _parse_seed_list(seeds: Iterable[Any]) -> list[int]:
    out: list[int] = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int):
            raise SparkBridgeError(f"seed {s!r} ({type(s).__name__}) is not an int; seeds are ints >= 0")
        if s < 0:
            raise SparkBridgeError(f"seed {s} is negative; seeds are ints >= 0")
        out.append(s)
        if len(out) > MAX_TASKS:
            break
    return out


def _scenario_names(scenario: Any) -> list[str]:
    from engine.scenarios.catalog import SPECS, get_spec

    if isinstance(scenario, str):
        wanted = [s.name for s in SPECS] if scenario == "all" else [scenario]
    elif isinstance(scenario, Sequence) and scenario and all(isinstance(n, str) for n in scenario):
        wanted = list(scenario)
    else:
        raise SparkBridgeError(
            f"scenario={scenario!r} is not a scenario; pass a catalog name, 'all', or a non-empty list of names "
            "(list them with 'eos scenarios')"
        )
    for name in wanted:
        try:
            get_spec(name, cutoff=0.5)
        except KeyError as exc:
            raise SparkBridgeError(exc.args[0]) from None
        if wanted.count(name) > 1:
            raise SparkBridgeError(f"scenario '{name}' is named twice; name each scenario once")
    return wanted


def _mutant_id(mutant: Any) -> str | None:
    from engine.scenarios.mutants import MUTANTS, get_mutant

    if mutant is None:
        return None
    if not isinstance(mutant, str):
        raise SparkBridgeError(f"mutant={mutant!r} is not a mutant id; pass one of {', '.join(MUTANTS)}, or None")
    try:
        return get_mutant(mutant).id
    except KeyError:
        close = difflib.get_close_matches(mutant.upper(), list(MUTANTS), n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SparkBridgeError(f"no mutant '{mutant}'; {hint}list them with 'eos mutants'") from None


def plan(
    scenario: str | Sequence[str], seeds: Any, mutant: str | None = None, *, swarm: bool = False
) -> list[tuple[str, int, str | None, bool]]:
    """Check a sweep's arguments and return its tasks, the tuples ``run_one`` takes, without Spark.

    Parameters
    ----------
    scenario : str or sequence of str
        A catalog scenario name, ``"all"`` (the whole catalog, in catalog order), or a list of names.
    seeds : int, str or iterable of int
        See :func:`parse_seeds`.
    mutant : str, optional
        A mutant id such as ``"M3"`` (case does not matter; tasks carry the canonical id).
    swarm : bool
        Swarm mode: a random subset of fault kinds per seed.

    Returns
    -------
    list of tuple
        ``(scenario, seed, mutant_id, swarm)`` per run, scenario by scenario, seeds in order.

    Raises
    ------
    SparkBridgeError
        For an unknown scenario or mutant (with "did you mean"), bad seeds, or too many runs.
    """
    names = _scenario_names(scenario)
    seed_list = parse_seeds(seeds)
    mutant_id = _mutant_id(mutant)
    if not isinstance(swarm, bool):
        raise SparkBridgeError(f"swarm={swarm!r} must be True or False")
    if len(names) * len(seed_list) > MAX_TASKS:
        raise SparkBridgeError(
            f"{len(names)} scenarios x {len(seed_list)} seeds is more than one sweep takes ({MAX_TASKS}); "
            "sweep fewer seeds at a time"
        )
    return [(name, seed, mutant_id, swarm) for name in names for seed in seed_list]


# -- on the executors ------------------------------------------------------------------------------


def _record(row: Row, mutant: str | None) -> dict[str, Any]:
    """Return one output row (a dict of :data:`SCHEMA`'s columns) for a ``run_one`` row."""
    raised = bool(row.error)
    return {
        "scenario": row.name,
        "seed": row.seed,
        "mutant": mutant,
        "status": row.status,
        "kinds": [] if row.kinds == "-" else sorted(row.kinds.split(",")),
        "verdict": row.verdict,
        "fingerprint": None if raised else row.full_fingerprint,
        "ops": row.ops,
        "sim_ms": row.sim_ms,
        "replay": row.replay,
        "error": row.error if raised else None,
        "traceback": row.traceback if raised else None,
        "origin": row.origin if raised else None,
    }


def _arrow_schema() -> pa.Schema:
    """Return :data:`SCHEMA` as an Arrow schema (built here: an executor has no session to parse DDL)."""
    import pyarrow as pa

    string, long = pa.string(), pa.int64()
    types = {"seed": long, "kinds": pa.list_(string), "ops": long, "sim_ms": long}
    names = [part.split()[0] for part in SCHEMA.split(", ")]
    return pa.schema([pa.field(n, types.get(n, string)) for n in names])


def run_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Run every task of a partition with ``run_one`` and yield their rows (the ``mapInArrow`` function).

    Module-level so that Spark pickles it by reference: an executor imports this module, and the
    engine, from its own Python. Each input row is a task (:data:`_TASK_SCHEMA`).
    """
    import pyarrow as pa

    from engine.scenarios.sweep import run_one

    schema = _arrow_schema()
    for batch in batches:
        cols = batch.to_pydict()
        tasks = zip(cols["scenario"], cols["seed"], cols["mutant"], cols["swarm"], strict=True)
        records = [_record(run_one((n, s, m, bool(w))), m) for n, s, m, w in tasks]
        yield pa.RecordBatch.from_pylist(records, schema=schema)


# -- on the driver ----------------------------------------------------------------------------------


def _is_connect(spark: Any) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _partitions(spark: SparkSession, n_tasks: int, partitions: Any) -> int:
    """Return how many partitions the tasks go into.

    The default is twice the cluster's parallelism (its cores), capped at the number of runs:
    ``repartition`` evens the *count* of runs per partition, not their cost, and a core that ends
    its first partition early takes the next one. A Spark task costs milliseconds with Python
    worker reuse, a run tenths of a second or more, so the extra partitions are nearly free. On
    Spark Connect the client cannot see the cluster; it reads ``spark.default.parallelism`` when
    the server sets it, else uses :data:`CONNECT_PARTITIONS`.
    """
    if partitions is not None:
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise SparkBridgeError(f"partitions={partitions!r} must be an int >= 1, or None for twice the cores")
        return min(partitions, n_tasks)
    if _is_connect(spark):
        try:
            parallelism = int(spark.conf.get("spark.default.parallelism", str(CONNECT_PARTITIONS // 2)) or 0)
        except Exception:  # a server that refuses the key still runs the sweep
            parallelism = CONNECT_PARTITIONS // 2
    else:
        parallelism = spark.sparkContext.defaultParallelism
    return max(1, min(2 * max(1, parallelism), n_tasks))


def _check_spark(spark: Any) -> None:
    if not (hasattr(spark, "createDataFrame") and hasattr(spark, "conf")):
        raise SparkBridgeError(
            f"spark={type(spark).__name__} is not a SparkSession; start one with eos_magics.spark.session.start()"
        )


def run_tasks(spark: SparkSession, tasks: Sequence[tuple], partitions: int) -> pa.Table:
    """Run checked ``tasks`` (from :func:`plan`) in ``partitions`` Spark partitions; return the rows, sorted.

    Raises
    ------
    SparkBridgeError
        When the Spark job fails (executors that cannot import this project, a lost cluster).
    """
    tasks_df = spark.createDataFrame([tuple(t) for t in tasks], _TASK_SCHEMA).repartition(partitions)
    try:
        table = tasks_df.mapInArrow(run_batches, SCHEMA).toArrow()
    except Exception as exc:
        text = str(exc)
        missing = _MISSING_MODULE.search(text)
        if missing:
            raise SparkBridgeError(
                f"the executors' Python cannot import '{missing.group(1)}'; install eos-magics (with pyarrow) "
                "in the Python the executors run, on every node (docs/spark.md, 'Sweeps on a real cluster')"
            ) from None
        first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
        raise SparkBridgeError(f"the sweep's Spark job failed: {first[:300]}") from None
    return table.sort_by([("scenario", "ascending"), ("seed", "ascending")])


def sweep(
    spark: SparkSession,
    scenario: str | Sequence[str],
    seeds: Any,
    mutant: str | None = None,
    *,
    swarm: bool = False,
    partitions: int | None = None,
) -> DataFrame:
    """Run a catalog scenario over many seeds on Spark's executors; one row per (scenario, seed).

    The runs happen in this call (one Spark job), and the returned DataFrame holds their rows:
    querying it again never re-runs a simulation.

    Parameters
    ----------
    spark : SparkSession
        A classic or Spark Connect session, e.g. ``eos_magics.spark.session.start()``.
    scenario : str or sequence of str
        A catalog scenario name, ``"all"``, or a list of names (as ``eos sweep`` takes).
    seeds : int, str or iterable of int
        ``50`` (seeds 1..50), ``"1..50"``, ``"3,17,40..45"`` or a list of ints >= 0.
    mutant : str, optional
        Sweep a weakened configuration, ``"M1"`` .. ``"M18"``.
    swarm : bool
        A random subset of fault kinds per seed (``eos sweep --swarm``).
    partitions : int, optional
        How many Spark partitions the runs are spread over; default twice the cores (see
        :func:`_partitions`), at most one per run.

    Returns
    -------
    DataFrame
        Columns :data:`SCHEMA`, sorted by scenario then seed. ``status`` is PASS, FAIL or SKIP;
        ``kinds`` the sorted forbidden anomaly kinds (``error:<Exception>`` for a run that raised).

    Raises
    ------
    SparkBridgeError
        For a bad argument (before any Spark job), or when the Spark job itself fails.
    """
    _check_spark(spark)
    tasks = plan(scenario, seeds, mutant, swarm=swarm)
    n = _partitions(spark, len(tasks), partitions)
    return spark.createDataFrame(run_tasks(spark, tasks, n))


def to_rows(df: DataFrame) -> list[Row]:
    """Return a sweep DataFrame's rows as ``engine.scenarios.sweep.Row`` records, in the DataFrame's order.

    The rows print with :func:`engine.scenarios.sweep.print_report` and show in
    ``eos_magics.views.results.sweep`` as the serial sweep's do.

    Raises
    ------
    SparkBridgeError
        When ``df`` lacks the columns :func:`sweep` makes.
    """
    return _rows_of(_collected(df))


def _collected(df: DataFrame) -> pa.Table:
    """Collect a sweep DataFrame as Arrow, after checking it has the columns :func:`sweep` makes."""
    columns = getattr(df, "columns", None)
    missing = [c for c in ("scenario", "seed", "status", "kinds", "verdict", "replay") if c not in (columns or [])]
    if columns is None or missing:
        raise SparkBridgeError(f"to_rows needs the DataFrame that sweep() returns; missing columns {missing}")
    return df.toArrow()


def _rows_of(table: pa.Table) -> list[Row]:
    """Return the rows of a sweep's Arrow table as ``Row`` records, in order."""
    from engine.scenarios.sweep import Row

    out = []
    for r in table.to_pylist():
        fingerprint = r.get("fingerprint") or ""
        out.append(
            Row(
                r["scenario"],
                r["seed"],
                r["status"],
                ",".join(r["kinds"] or []) or "-",
                r["verdict"],
                r["replay"],
                r.get("ops"),
                r.get("sim_ms"),
                fingerprint[:12] or "-",
                traceback=r.get("traceback") or "",
                origin=r.get("origin") or "",
                full_fingerprint=fingerprint,
                error=r.get("error") or "",
            )
        )
    return out


def print_report(rows: DataFrame | Sequence[Row], mutant: str | None = None) -> list[Row]:
    """Print a sweep as ``eos sweep`` prints it (table, summary, failures); return the failed rows.

    ``rows`` is a sweep DataFrame or :func:`to_rows`'s list. ``mutant`` names the mutant in the
    summary line; by default it is read from the DataFrame's ``mutant`` column.
    """
    from engine.scenarios import sweep as serial

    if not hasattr(rows, "columns"):
        return serial.print_report(list(rows), mutant)
    table = _collected(rows)  # one collect: the rows and their mutant column
    if mutant is None and "mutant" in table.column_names:
        found = sorted({m for m in table.column("mutant").to_pylist() if m})
        mutant = found[0] if len(found) == 1 else None
    records = _rows_of(table)
    return serial.print_report(records, mutant)
