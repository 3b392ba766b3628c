"""One or more runs as the tables of the export schema: :class:`RunExport` and its builders.

Role
----
:func:`export_run` turns a catalog run (:class:`~engine.scenarios.result.ScenarioResult`) into every
table of :data:`engine.export.schema.TABLES`; :func:`export_cluster` does the same for a cluster
driven by hand (a notebook session), and :func:`export_runs` / :meth:`RunExport.concat` stack
many runs. A :class:`RunExport` hands its tables out as Arrow (``export["records"]``), as pandas
(:meth:`RunExport.to_pandas`) or as Parquet (:meth:`RunExport.write_parquet`).

Invariants
----------
* Every table of the schema is present in every export, with the exact schema, empty when the
  run has nothing to put in it.
* The same run exported twice gives equal tables (the engine is deterministic and every
  builder sorts its rows).
* A run id appears once in an export; tables of many runs are in the order the runs were given.
* Exporting only reads the cluster: nothing in it changes, no random stream is drawn.

What it does not do
-------------------
No checking of the run, no Spark (``eos_magics.spark.views`` registers the tables there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from engine.check.ground_truth import export_ground_truth
from engine.check.history import History
from engine.export.common import RunId
from engine.export.events import faults_table, group_offsets_table, trace_samples, trace_table
from engine.export.history import history_tables
from engine.export.logs import log_tables, partition_state_table
from engine.export.parquet import read_tables, write_parquet
from engine.export.schema import TABLES, ExportError, validate

if TYPE_CHECKING:
    import pandas as pd

    from engine.check.timeline import PartitionTimeline
    from engine.cluster import Cluster

__all__ = ["RunExport", "export_cluster", "export_history", "export_run", "export_runs", "run_id_for"]


class RunExport:
    """The tables of one or more runs, in the export schema of this version.

    Parameters
    ----------
    tables
        One Arrow table per name of :data:`~engine.export.schema.TABLES`, each with its exact schema.
    runs
        The runs whose rows the tables hold, in order; run ids are unique.

    Raises
    ------
    ExportError
        When a table is missing, unknown or of another schema, or a run id is given twice.
    """

    __slots__ = ("runs", "tables")

    def __init__(self, tables: Mapping[str, pa.Table], runs: Sequence[RunId]) -> None:
        missing = [n for n in TABLES if n not in tables]
        if missing:
            raise ExportError(f"the export has no table {missing[0]}; build it with export_run or read_export")
        unknown = sorted(n for n in tables if n not in TABLES)
        if unknown:
            raise ExportError(f"{unknown[0]!r} is no table of the export schema; the tables are: {', '.join(TABLES)}")
        for name in TABLES:
            if not isinstance(tables[name], pa.Table):
                raise ExportError(f"table {name} must be a pyarrow Table, not {type(tables[name]).__name__}")
            validate(name, tables[name].schema)
        ids = [r.run_id for r in runs]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ExportError(f"run {dup} is in the export twice; give each run its own run_id")
        self.tables: dict[str, pa.Table] = {n: tables[n] for n in TABLES}
        self.runs: list[RunId] = list(runs)

    def __getitem__(self, name: str) -> pa.Table:
        """Return one table by name, e.g. ``export["records"]``."""
        table = self.tables.get(name) if isinstance(name, str) else None
        if table is None:
            raise ExportError(f"no table named {name!r}; the tables are: {', '.join(self.tables)}")
        return table

    def __contains__(self, name: object) -> bool:
        return name in self.tables

    def __repr__(self) -> str:
        ids = ", ".join(r.run_id for r in self.runs[:3]) + (", ..." if len(self.runs) > 3 else "")
        return f"RunExport({len(self.runs)} run{'s' if len(self.runs) != 1 else ''}: {ids}; {len(self.tables)} tables)"

    @property
    def run_ids(self) -> list[str]:
        """Return the run ids, in order."""
        return [r.run_id for r in self.runs]

    def row_counts(self) -> dict[str, int]:
        """Return ``{table: rows}`` in schema order."""
        return {n: t.num_rows for n, t in self.tables.items()}

    def to_pandas(self, name: str) -> pd.DataFrame:
        """Return one table as a pandas DataFrame of ``pd.ArrowDtype`` columns (no copy where possible)."""
        import pandas as pd

        return self[name].to_pandas(types_mapper=pd.ArrowDtype)

    def select(self, run_id: str) -> RunExport:
        """Return the export of one of its runs."""
        run = next((r for r in self.runs if r.run_id == run_id), None)
        if run is None:
            raise ExportError(f"no run {run_id!r} in this export; its runs are: {', '.join(self.run_ids)}")
        if len(self.runs) == 1:
            return self
        tables = {n: t.filter(pc.equal(t["run_id"], run_id)) for n, t in self.tables.items()}
        return RunExport(tables, [run])

    @classmethod
    def concat(cls, exports: Iterable[RunExport]) -> RunExport:
        """Stack the tables of many exports into one (run ids must differ)."""
        items = list(exports)
        if not items:
            raise ExportError("concat needs at least one RunExport")
        bad = next((e for e in items if not isinstance(e, RunExport)), None)
        if bad is not None:
            raise ExportError(f"concat takes RunExport objects, not {type(bad).__name__}")
        if len(items) == 1:
            return items[0]
        runs = [r for e in items for r in e.runs]
        tables = {n: pa.concat_tables([e.tables[n] for e in items]) for n in TABLES}
        return cls(tables, runs)

    def write_parquet(self, directory: str | Path, *, overwrite: bool = False) -> Path:
        """Write the export as Parquet (see :func:`engine.export.parquet.write_parquet`); return the directory."""
        return write_parquet(self, directory, overwrite=overwrite)


# -- run ids ---------------------------------------------------------------------------------

_SLUG = re.compile(r"[^a-z0-9]+")


def run_id_for(scenario: str, seed: int, mutant: str | None = None, *, swarm: bool = False) -> str:
    """Return the run id of a run: ``"copier-random-aborts-s7"``, ``"...-s7-M3"``, ``"...-s7-swarm"``.

    A session driven by hand (``scenario=""``) is ``"session-s<seed>"``.
    """
    slug = _SLUG.sub("-", scenario.lower()).strip("-") or "session"
    return f"{slug}-s{seed}" + (f"-{mutant}" if mutant else "") + ("-swarm" if swarm else "")


# -- builders --------------------------------------------------------------------------------


def _tables(cluster: Cluster, history: History, timeline: PartitionTimeline | None, run: RunId) -> dict[str, pa.Table]:
    gt = export_ground_truth(cluster)
    events = cluster.world.trace.events
    out: dict[str, pa.Table] = {}
    out.update(history_tables(history, run))
    out.update(log_tables(gt, run))
    samples = timeline.samples if timeline is not None else trace_samples(events)
    out["partition_state"] = partition_state_table(samples, run)
    out["trace"] = trace_table(events, run)
    out["faults"] = faults_table(gt.faults, run)
    out["group_offsets"] = group_offsets_table(gt, run)
    return out


def _as_history(history: Any) -> History:
    if history is None:
        return History()
    if isinstance(history, History):
        return history
    if callable(getattr(history, "history", None)):  # a ClientHistory (engine.check.client_history)
        got = history.history()
        if isinstance(got, History):
            return got
    raise ExportError(
        f"history must be a History or a ClientHistory, not {type(history).__name__}; "
        "pass ClientHistory.attach(cluster) or leave it out"
    )


def export_run(result: Any, run_id: str | None = None) -> RunExport:
    """Export one catalog run: its client history, replica logs, offsets over time, trace and faults.

    Parameters
    ----------
    result
        The :class:`~engine.scenarios.result.ScenarioResult` of a catalog scenario
        (:func:`engine.scenarios.harness.run_spec` or the registry's function of its name).
    run_id
        The run's id in the export; default :func:`run_id_for` of scenario, seed and mutant.

    Returns
    -------
    RunExport
        Every table of the schema, for this one run.
    """
    from engine.scenarios.result import ScenarioResult

    if not isinstance(result, ScenarioResult) or result.spec is None:
        what = type(result).__name__ if not isinstance(result, ScenarioResult) else f"'{result.name}' (no catalog spec)"
        raise ExportError(
            f"export_run takes the result of a catalog scenario (run_spec(...) or its registry function), not {what}; "
            "for a cluster driven by hand use export_cluster(cluster, history)"
        )
    rid = run_id if run_id is not None else run_id_for(result.spec.name, result.seed, result.mutant, swarm=result.swarm)
    run = _run_id(rid, result.spec.name, result.seed)
    return RunExport(_tables(result.cluster, _as_history(result.history), result.timeline, run), [run])


def export_cluster(
    cluster: Cluster,
    history: Any = None,
    *,
    timeline: PartitionTimeline | None = None,
    scenario: str = "",
    run_id: str | None = None,
) -> RunExport:
    """Export a cluster driven by hand (a notebook session) as it is now.

    Parameters
    ----------
    cluster
        The :class:`~engine.cluster.Cluster`.
    history
        Its client history: a ``History``, a ``ClientHistory`` (its ``.history()`` is taken), or
        None (the history tables are then empty).
    timeline
        A ``PartitionTimeline`` attached to the cluster; without one ``partition_state`` is
        rebuilt from the trace (:func:`engine.export.events.trace_samples`).
    scenario
        What to put in the ``scenario`` column (``""`` for a session).
    run_id
        Default :func:`run_id_for` of ``scenario`` and the cluster's seed (``"session-s7"``).
    """
    from engine.cluster import Cluster

    if not isinstance(cluster, Cluster):
        raise ExportError(f"export_cluster takes an engine Cluster, not {type(cluster).__name__}")
    if not isinstance(scenario, str):
        raise ExportError(f"scenario must be a string, not {type(scenario).__name__}")
    if timeline is not None and not hasattr(timeline, "samples"):
        raise ExportError(f"timeline must be a PartitionTimeline, not {type(timeline).__name__}")
    rid = run_id if run_id is not None else run_id_for(scenario, cluster.seed)
    run = _run_id(rid, scenario, cluster.seed)
    return RunExport(_tables(cluster, _as_history(history), timeline, run), [run])


def export_history(history: Any, run_id: str, *, scenario: str = "", seed: int = 0) -> RunExport:
    """Export a client history alone (e.g. a JSON Lines file): the history tables, every other table empty.

    Parameters
    ----------
    history
        A ``History`` (``engine.check.jsonl.load_jsonl``) or a ``ClientHistory``.
    run_id, scenario, seed
        The run columns.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ExportError(f"seed must be an integer, not {seed!r}")
    run = _run_id(run_id, scenario if isinstance(scenario, str) else "", seed)
    tables = {name: schema.empty_table() for name, schema in TABLES.items()}
    tables.update(history_tables(_as_history(history), run))
    return RunExport(tables, [run])


def export_runs(results: Iterable[Any]) -> RunExport:
    """Export many runs into one :class:`RunExport` (see :func:`export_run`); run ids must differ."""
    if isinstance(results, str | bytes) or not isinstance(results, Iterable):
        raise ExportError("export_runs takes a list of scenario results (ScenarioResult)")
    exports = [export_run(r) for r in results]
    if not exports:
        raise ExportError("export_runs got no runs; pass at least one scenario result")
    return RunExport.concat(exports)


def _run_id(run_id: str, scenario: str, seed: int) -> RunId:
    if not isinstance(run_id, str) or not run_id or "/" in run_id or "\\" in run_id or run_id.startswith("."):
        raise ExportError(f"run_id {run_id!r} must be a non-empty name without '/', '\\' or a leading '.'")
    return RunId(run_id, scenario, seed)


def read_export(directory: str | Path, tables: Iterable[str] | None = None) -> RunExport:
    """Read an export directory back into a :class:`RunExport`.

    Parameters
    ----------
    directory
        A directory written by :func:`~engine.export.parquet.write_parquet` (or ``eos export``).
    tables
        Read only these tables (default: all); the others come back empty, with their schema.

    Raises
    ------
    ExportError
        See :func:`engine.export.parquet.inspect_export`.
    """
    found, runs = read_tables(directory, tables)
    return RunExport(found, runs)
