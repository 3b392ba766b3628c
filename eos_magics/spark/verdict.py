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

Display
-------
``repr`` (and ``print``) give the plain text; in a notebook a :class:`SparkVerdicts` shows as the
house's table (:class:`~eos_magics.views.base.TableView`: one row per run) with each failing
run's anomalies under it, one table per run (the columns of ``%eos_check``'s), and a
:class:`RunVerdict` as its run's table. ``.view()`` returns that table (``.view().to_pandas()``).

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

    from eos_magics.views.base import TableView

__all__ = ["RUN_COLUMNS", "RunVerdict", "SparkVerdicts", "check_views"]

#: The columns of the runs table: the verdict, the forbidden kinds, and how many forbidden anomalies
#: the history checks (``history``) and the brokers' white-box invariants (``white_box``) found.
RUN_COLUMNS = ("run_id", "mode", "verdict", "forbidden", "history", "white_box")

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

    def detail_lines(self) -> list[str]:
        """The history report and the forbidden white-box anomalies, indented, as the text prints them."""
        lines = [f"{self.run_id}:"]
        lines.extend("  " + s for s in str(self.report).splitlines())
        lines.extend(f"  {a.kind:<22} {a.key or '-'} {a.message}" for a in self.forbidden_invariants)
        return lines

    def view(self) -> TableView:
        """This run's anomalies as the house's table: ``%eos_check``'s columns, history then white-box."""
        from eos_magics.views.base import TableView
        from eos_magics.views.results import ANOMALY_COLUMNS, anomaly_rows

        allowed_white = [a for a in self.invariants if a.kind in ALLOWED_WHITE_BOX]
        rows = (
            anomaly_rows(self.report.forbidden, forbidden=True)
            + anomaly_rows(self.forbidden_invariants, forbidden=True)
            + anomaly_rows(self.report.allowed, forbidden=False)
            + anomaly_rows(allowed_white, forbidden=False)
        )
        forbidden = len(self.report.forbidden) + len(self.forbidden_invariants)
        return TableView(
            "\n".join([self.line(), *self.detail_lines()]),
            ANOMALY_COLUMNS,
            rows,
            title=f"{self.run_id} ({self.mode}): {forbidden} forbidden, {len(rows) - forbidden} allowed anomalies",
            summary=_not_checked_note(self.not_checked),
            badge=("PASS", "ok") if self.ok else ("FAIL", "fail"),
            text_label="text",
            data=self,
        )

    def _repr_html_(self) -> str:
        return self.view()._repr_html_()


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
                lines.extend(v.detail_lines())
        return "\n".join(lines)

    def view(self) -> TableView:
        """The runs as the house's table (one row per run); ``.view().to_pandas()`` for pandas."""
        from eos_magics.views.base import TableView

        runs = list(self)
        rows = [
            (
                v.run_id,
                v.mode,
                "PASS" if v.ok else "FAIL",
                tuple(v.kinds),
                len(v.report.forbidden),
                len(v.forbidden_invariants),
            )
            for v in runs
        ]
        failed = sum(1 for v in runs if not v.ok)
        not_checked = runs[0].not_checked if runs else ()
        return TableView(
            repr(self),
            RUN_COLUMNS,
            rows,
            title=f"Spark checks: {_runs(len(runs))}, {len(runs) - failed} passed, {failed} failed",
            summary=_not_checked_note(not_checked),
            badge=("FAIL", "fail") if failed else ("PASS", "ok"),
            text_label="text",
            data=self,
        )

    def _repr_html_(self) -> str:
        """The runs table, then each failing run's anomalies (open when only one run failed)."""
        from eos_magics.views.base import details

        failing = [v for v in self if not v.ok]
        parts = [self.view()._repr_html_()]
        for v in failing:
            count = len(v.report.forbidden) + len(v.forbidden_invariants)
            parts.append(details(f"{v.run_id}: {count} forbidden anomalies", v._repr_html_(), open_=len(failing) == 1))
        return "".join(parts)


def _runs(n: int) -> str:
    """Say ``1 run`` or ``N runs``: the title is read, not parsed."""
    return f"{n} run" if n == 1 else f"{n} runs"


def _not_checked_note(not_checked: tuple[str, ...]) -> str:
    """Say which checks the Spark verdict leaves to Python (by their ids: L11, L12 ...)."""
    ids = [n.split(":", 1)[0] for n in not_checked]
    return f"not checked in Spark (Python only): {', '.join(ids)}" if ids else ""


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
