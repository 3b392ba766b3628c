"""A seed sweep's library: one (scenario, seed) judged as a ``Row``, and the report ``eos sweep`` prints.

Role
----
:func:`run_one` runs one catalog scenario on one seed (safety phase with faults, heal, liveness,
final reads) and returns its :class:`Row`; :func:`print_report` writes the table, the summary line
and the failures. ``eos sweep`` (``engine.commands.sweep``), ``eos-spark sweep``, the Spark
bridge's executors and ``%eos_scenario sweep`` all use these, so every sweep prints the same text.

Invariants
----------
* :func:`run_one` never raises for a run: an internal error of the engine is a ``FAIL`` row whose
  kind is ``error:<ExceptionName>``, with its traceback and where it was raised.
* A ``Row`` is frozen and picklable (worker processes, Spark executors send it back).
"""

from __future__ import annotations

import dataclasses
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TextIO

__all__ = ["STATUSES", "Row", "failure_lines", "print_report", "run_one", "summary_line", "table_lines"]

#: A row's statuses, in the order the tables count them.
STATUSES = ("PASS", "CAUGHT", "FAIL", "SKIP")


@dataclasses.dataclass(frozen=True)
class Row:
    """One judged (scenario, seed): what the table prints, picklable across worker processes."""

    name: str
    seed: int
    #: PASS, CAUGHT, FAIL or SKIP
    status: str
    kinds: str
    verdict: str
    replay: str
    ops: int | None = None
    sim_ms: int | None = None
    fingerprint: str = "-"
    #: the formatted traceback when the run raised (an internal error), else ""
    traceback: str = ""
    #: where the exception was raised (type, file, line), so that one bug hit on many seeds and
    #: by many call paths is printed once
    origin: str = ""
    #: the run's whole fingerprint (``fingerprint`` is its first 12 characters), "" when it raised
    full_fingerprint: str = ""
    #: the one-line internal error (``"Type: message"``) when the run raised, else ""
    error: str = ""


#: Seeds handed to a worker at a time: small, so a slow seed holds back little.
POOL_CHUNKSIZE = 2


def worker_pool(jobs: int, initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> Any:
    """Return the pool ``eos sweep --jobs`` runs :func:`run_one` in (``spawn``: no state shared with the parent)."""
    import multiprocessing

    return multiprocessing.get_context("spawn").Pool(jobs, initializer=initializer, initargs=initargs)


def run_one(task: tuple) -> Row:
    """Run one (scenario, seed, mutant id, swarm) task and return its row; an exception becomes a FAIL row."""
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.harness import replay_command, run_spec
    from engine.scenarios.mutants import get_mutant

    name, seed, mutant_id, swarm = task
    try:
        r = run_spec(BY_NAME[name], seed, mutant=get_mutant(mutant_id) if mutant_id else None, swarm=swarm)
    except Exception as exc:  # one run's internal error must not lose the whole table
        return _error_row(name, seed, replay_command(name, seed, mutant=mutant_id, swarm=swarm), exc)
    return Row(
        name,
        seed,
        r.status,
        ",".join(r.kinds) or "-",
        r.verdict(),
        r.replay,
        r.history_size,
        r.cluster.now_ms,
        r.fingerprint[:12],
        full_fingerprint=r.fingerprint,
    )


def _error_row(name: str, seed: int, replay: str, exc: Exception) -> Row:
    what = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return Row(
        name,
        seed,
        "FAIL",
        f"error:{type(exc).__name__}",
        f"FAIL {name} seed={seed}: error: {what}",
        replay,
        traceback="".join(traceback.format_exception(exc)),
        origin=_origin(exc),
        error=what,
    )


def _origin(exc: Exception) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}"


# -- the report -------------------------------------------------------------------------------------


def table_lines(rows: Sequence[Row]) -> list[str]:
    """Return the table of runs, a blank line, and the counts per scenario."""
    lines = [f"{'scenario':<46} {'seed':>6} {'verdict':<7} {'forbidden':<34} {'ops':>6} {'sim_ms':>8} fingerprint"]
    for r in rows:
        ops = "-" if r.ops is None else r.ops
        ms = "-" if r.sim_ms is None else r.sim_ms
        lines.append(f"{r.name[:46]:<46} {r.seed:>6} {r.status:<7} {r.kinds[:34]:<34} {ops:>6} {ms:>8} {r.fingerprint}")
    by_scenario: dict[str, dict[str, int]] = {}
    for r in rows:
        counts = by_scenario.setdefault(r.name, dict.fromkeys(STATUSES, 0))
        counts[r.status] += 1
    lines += ["", f"{'scenario':<46} {'pass':>5} {'caught':>6} {'fail':>5} {'skip':>5}"]
    for name, c in by_scenario.items():
        lines.append(f"{name[:46]:<46} {c['PASS']:>5} {c['CAUGHT']:>6} {c['FAIL']:>5} {c['SKIP']:>5}")
    return lines


def summary_line(rows: Sequence[Row], mutant_id: str | None = None) -> str:
    """Return the one summary line: passed, caught (positive controls), failed (how many raised), skipped."""
    mode = f" with {mutant_id}" if mutant_id else ""
    count = {s: sum(1 for r in rows if r.status == s) for s in STATUSES}
    errors = sum(1 for r in rows if r.traceback)
    raised = f" ({errors} raised an exception)" if errors else ""
    caught = f", {count['CAUGHT']} caught (positive controls)" if count["CAUGHT"] else ""
    skipped = f", {count['SKIP']} skipped (a positive control that could not show its anomaly)" if count["SKIP"] else ""
    return f"{len(rows)} runs{mode}: {count['PASS']} passed{caught}, {count['FAIL']} failed{raised}{skipped}"


def failure_lines(failures: Sequence[Row]) -> list[str]:
    """Return each failure with its replay command, then each distinct internal error's traceback once."""
    lines = [f"FAILED seed {r.seed}: {r.verdict[:300]}\n  replay: {r.replay}" for r in failures]
    first_of: dict[str, Row] = {}
    for r in failures:
        if r.traceback:
            first_of.setdefault(r.origin, r)
    for origin, first in first_of.items():
        seeds: dict[str, list[str]] = {}
        for r in failures:
            if r.origin == origin:
                seeds.setdefault(r.name, []).append(str(r.seed))
        where = "; ".join(f"'{name}' seeds {', '.join(s)}" for name, s in seeds.items())
        lines.append(f"\ninternal error {origin}, in {where}; traceback of seed {first.seed}:")
        lines.append("  " + first.traceback.rstrip("\n").replace("\n", "\n  "))
    return lines


def print_report(rows: Sequence[Row], mutant_id: str | None = None, out: TextIO | None = None) -> list[Row]:
    """Write what ``eos sweep`` prints after its runs (table, summary line, failures); return the failures.

    ``out`` is standard output by default; ``eos-spark sweep`` writes its rows with this too.
    """
    failures = [r for r in rows if r.status == "FAIL"]
    lines = [*table_lines(rows), "\n" + summary_line(rows, mutant_id), *failure_lines(failures)]
    (sys.stdout if out is None else out).write("".join(f"{line}\n" for line in lines))
    return failures
