"""One verdict per run from the Spark checks: the black-box history checks and the white-box invariants.

Role
----
:func:`check_views` reads the temp views :func:`eos_magics.spark.views.register` made (``history``,
``history_mops``, ``records``, ``batches`` ...), runs
:func:`eos_magics.spark.history_checks.check_runs_spark` and
:func:`eos_magics.spark.invariants.check_invariants_spark_by_run` over every run in them, and
returns a :class:`SparkVerdicts`: for each run, the :class:`~engine.check.anomaly.Report` of the
history checks (the same records the Python checker gives) and the white-box anomalies.

The mode of a run (which anomaly kinds are allowed) is the caller's ``mode`` when given, else the
catalog scenario's own (``Spec.allowed``: ``at-least-once`` for the at-least-once baseline), else
``eos``. Under ``at-least-once`` the invariants leave out idempotence and fencing (L2, L3), as the
harness does; ``L4-duplicate-marker`` (a marker rewritten after a lost answer) is allowed, as in
the harness.

What it does not do
-------------------
The invariants left to Python (L11, L12, L13: see ``PYTHON_ONLY``) and the workload oracles
(copier, sentinel) are not here, so a Spark verdict can pass a run the harness fails for one of
those; :attr:`RunVerdict.not_checked` names them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from engine.check.anomaly import MODES, Anomaly, Report
from engine.scenarios.harness import ALLOWED_INVARIANT_KINDS
from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["RunVerdict", "SparkVerdicts", "check_views"]

#: White-box kinds a correct cluster may show: the harness's, so a run passes here when it passes there.
ALLOWED_WHITE_BOX = ALLOWED_INVARIANT_KINDS
_HISTORY = ("history", "history_mops")
_LOGS = ("records", "batches", "replicas", "partitions", "txn_state", "aborted_index", "fetches", "partition_state")


@dataclasses.dataclass(frozen=True)
class RunVerdict:
    """The Spark checks' verdict on one run."""

    run_id: str
    mode: str
    report: Report
    invariants: tuple[Anomaly, ...]
    not_checked: tuple[str, ...]

    @property
    def forbidden_invariants(self) -> tuple[Anomaly, ...]:
        """White-box anomalies that fail the run."""
        return tuple(a for a in self.invariants if a.kind not in ALLOWED_WHITE_BOX)

    @property
    def ok(self) -> bool:
        """True when neither the history nor the brokers' state shows a forbidden anomaly."""
        return self.report.ok and not self.forbidden_invariants

    @property
    def kinds(self) -> list[str]:
        """Every forbidden kind, history and white-box, sorted."""
        return sorted({a.kind for a in self.report.forbidden} | {a.kind for a in self.forbidden_invariants})

    def line(self) -> str:
        """One line: ``PASS run (mode): ...`` or ``FAIL run (mode): kinds``."""
        what = ", ".join(self.kinds) or "no forbidden anomalies"
        return f"{'PASS' if self.ok else 'FAIL'} {self.run_id} ({self.mode}): {what}"


@dataclasses.dataclass(frozen=True)
class SparkVerdicts:
    """The verdicts of every run in the views, by run id (sorted)."""

    runs: dict[str, RunVerdict]

    def __getitem__(self, run_id: str) -> RunVerdict:
        try:
            return self.runs[run_id]
        except KeyError:
            raise SparkBridgeError(f"no run {run_id!r} among {sorted(self.runs)}") from None

    def __iter__(self) -> Any:
        return iter(self.runs.values())

    def __len__(self) -> int:
        return len(self.runs)

    @property
    def ok(self) -> bool:
        """True when every run passes."""
        return all(v.ok for v in self.runs.values())

    def __repr__(self) -> str:
        lines = [v.line() for v in self.runs.values()]
        for v in self.runs.values():
            if not v.ok:
                lines.append("")
                lines.append(f"{v.run_id}:")
                lines.extend("  " + s for s in str(v.report).splitlines())
                lines.extend(f"  {a.kind:<22} {a.key or '-'} {a.message}" for a in v.forbidden_invariants)
        return "\n".join(lines)


def _mode_of(scenario: str, mode: str | None) -> str:
    if mode is not None:
        return mode
    from engine.scenarios.catalog import BY_NAME

    spec = BY_NAME.get(scenario)
    return spec.allowed if spec is not None else "eos"


def check_views(
    spark: SparkSession, *, prefix: str = "", mode: str | None = None, run_id: str | None = None
) -> SparkVerdicts:
    """Run the Spark checks over the temp views ``prefix + table``; return one verdict per run.

    Parameters
    ----------
    spark : SparkSession
        The session holding the views (:func:`eos_magics.spark.views.register`).
    prefix : str
        The prefix the views were registered with.
    mode : str, optional
        ``eos``, ``subscribe`` or ``at-least-once`` for every run; default each run's scenario's own.
    run_id : str, optional
        Check only this run.

    Raises
    ------
    SparkBridgeError
        For an unknown mode, a missing view (register the run first), or an unknown run id.
    """
    from pyspark.sql import functions as sf

    from eos_magics.spark.history_checks import check_runs_spark
    from eos_magics.spark.invariants import PYTHON_ONLY, check_invariants_spark_by_run

    if mode is not None and mode not in MODES:
        raise SparkBridgeError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    tables: dict[str, Any] = {}
    for name in (*_HISTORY, *_LOGS):
        view = prefix + name
        if not spark.catalog.tableExists(view):
            raise SparkBridgeError(
                f"no temp view {view!r}; register a run first (%eos_spark views, or eos_magics.spark.views.register)"
            )
        df = spark.table(view)
        tables[name] = df.where(sf.col("run_id") == run_id) if run_id is not None else df
    scenarios = {
        r["run_id"]: r["scenario"] for r in tables["history"].select("run_id", "scenario").distinct().collect()
    }
    scenarios.update(
        {r["run_id"]: r["scenario"] for r in tables["records"].select("run_id", "scenario").distinct().collect()}
    )
    if run_id is not None and run_id not in scenarios:
        raise SparkBridgeError(f"the views hold no run {run_id!r}")
    modes = {run: _mode_of(sc, mode) for run, sc in scenarios.items()}
    # One history pass for every run, each judged in its own mode; the invariants differ only
    # for at-least-once runs (no idempotence or fencing to check), so at most two passes.
    reports = check_runs_spark(spark, tables["history"], tables["history_mops"], allowed=modes)
    white: dict[str, list[Anomaly]] = {}
    for at_least_once in sorted({m == "at-least-once" for m in modes.values()}):
        runs = sorted(r for r, m in modes.items() if (m == "at-least-once") == at_least_once)
        logs = {k: tables[k].where(sf.col("run_id").isin(*runs)) for k in _LOGS}
        white.update(check_invariants_spark_by_run(spark, logs, at_least_once=at_least_once))
    not_checked = tuple(f"{k}: {why}" for k, why in sorted(PYTHON_ONLY.items()))
    empty = Report.classify([], frozenset(), {})
    return SparkVerdicts(
        {
            run: RunVerdict(run, modes[run], reports.get(run, empty), tuple(white.get(run, ())), not_checked)
            for run in sorted(modes)
        }
    )
