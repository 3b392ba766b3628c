"""The outcome of one scenario run: one type for every registered scenario, the catalog's and ``demo``.

A catalog run (:func:`engine.scenarios.harness.run_spec`) fills every field: the checker's report
of the client history, the workload's findings, the fault plan, the history, the workload's typed
state. A scenario written as a plain function (``demo``) fills what it has: its own findings, the
cluster, the counts it wants printed; its report is empty.

The verdict is one of PASS, CAUGHT, SKIP or FAIL (see :mod:`engine.scenarios.harness`); every
consumer (``eos run``, ``eos sweep``, the notebook views, the export) reads it from this type:
``status``, ``verdict()``, ``ok``, ``kinds``, ``caught``, ``skipped``, ``fingerprint``, ``replay``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from engine.check.anomaly import Report
from engine.sim.faults import FaultPlan

if TYPE_CHECKING:
    from engine.check.history import History
    from engine.check.timeline import PartitionTimeline
    from engine.cluster import Cluster
    from engine.scenarios.harness import Spec

__all__ = ["ScenarioResult", "finding_kind", "replay_command", "settled_verdict", "verdict_status"]


def verdict_status(*, skipped: str, ok: bool, caught: tuple[str, ...]) -> str:
    """Return PASS, CAUGHT (a positive control showed its anomaly), SKIP (with a reason) or FAIL."""
    if skipped:
        return "SKIP"
    if not ok:
        return "FAIL"
    return "CAUGHT" if caught else "PASS"


def settled_verdict(name: str, seed: int, *, skipped: str, caught: tuple[str, ...], ok: bool) -> str | None:
    """Return the verdict line of a SKIP or a CAUGHT run, else None."""
    status = verdict_status(skipped=skipped, ok=ok, caught=caught)
    if status == "SKIP":
        return f"SKIP {name} seed={seed}: {skipped}"
    if status == "CAUGHT":
        return f"CAUGHT {name} seed={seed}: caught {', '.join(caught)}"
    return None


def replay_command(name: str, seed: int, *, mutant: str | None = None, swarm: bool = False) -> str:
    """Return the one ``eos run`` command that replays a run (it needs no result: a run that raised has none)."""
    return f"eos run '{name}' --seed {seed}" + (f" --mutant {mutant}" if mutant else "") + (" --swarm" if swarm else "")


def finding_kind(finding: str) -> str:
    """Return the kind of a finding string ``"kind: detail"``."""
    return finding.split(":", 1)[0]


def _no_report() -> Report:
    return Report((), (), frozenset())


@dataclasses.dataclass
class ScenarioResult:
    """The outcome of one scenario run."""

    name: str
    seed: int
    cluster: Cluster
    #: the black-box checker's report of the client history (empty for a plain-function scenario)
    report: Report = dataclasses.field(default_factory=_no_report)
    #: the scenario's own findings, ``"kind: detail"``: the workload's oracle, the white-box invariants
    findings: list[str] = dataclasses.field(default_factory=list)
    #: a positive control's expected kinds it did not show (``a|b``), with no reason to skip
    missing: list[str] = dataclasses.field(default_factory=list)
    #: the counts ``eos run`` prints before the verdict (``history_ops``, ``simulated_ms``, ...)
    summary: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: the catalog spec that ran (None for a plain-function scenario)
    spec: Spec | None = None
    #: the mutant's id, when the run had one
    mutant: str | None = None
    plan: FaultPlan = dataclasses.field(default_factory=FaultPlan)
    #: the workload's own state, kept for later inspection: a dataclass each workload declares
    #: (:class:`~engine.scenarios.outbox.OutboxState`, :class:`~engine.scenarios.mirror.MirrorState`, ...)
    state: object = None
    #: the run replaced its scenario's fault plan with a swarm plan
    swarm: bool = False
    #: the anomaly kinds this run had to report: a positive control's ``must_report``
    expected: tuple[str, ...] = ()
    #: why the run has no verdict of its own (``""`` when it has one): a positive control that could
    #: not show its anomaly (swarm did not draw its fault kind, or its workload says why)
    skipped: str = ""
    #: the client history the run was judged on (exported by :mod:`engine.export`)
    history: History | None = None
    #: the HW/LSO samples of every leader as the run went (white-box L7)
    timeline: PartitionTimeline | None = None
    #: a positive control's findings of its expected kinds: what it caught, and how the tool explains it
    evidence: list[str] = dataclasses.field(default_factory=list)
    history_size: int = 0
    #: the run's fingerprint, taken when the run ended
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = self.cluster.fingerprint()

    @property
    def ok(self) -> bool:
        """Return True when nothing forbidden was found (a positive control: and its anomaly was)."""
        return self.report.ok and not self.findings and not self.missing

    @property
    def status(self) -> str:
        """Return ``PASS``, ``CAUGHT``, ``SKIP`` or ``FAIL``."""
        return verdict_status(skipped=self.skipped, ok=self.ok, caught=self.caught)

    @property
    def kinds(self) -> list[str]:
        """Return every forbidden anomaly kind and finding kind of the run (a catch: what it caught), sorted."""
        return sorted(
            {a.kind for a in self.report.forbidden} | {finding_kind(f) for f in self.findings} | set(self.caught)
        )

    @property
    def caught(self) -> tuple[str, ...]:
        """Return the expected anomaly kinds a positive control showed (empty for any other run)."""
        if not self.expected or self.missing:
            return ()
        shown = {finding_kind(f) for f in self.evidence} | {a.kind for a in self.report.anomalies}
        return tuple(sorted(shown & set(self.expected)))

    @property
    def problems(self) -> list[str]:
        """Return everything that fails the run, one ``"kind: detail"`` line each (``eos run`` lists them)."""
        lines = [f"{a.kind}: {a.message}" for a in self.report.forbidden] + self.findings
        return lines + [f"missing positive-control anomaly: {m}" for m in self.missing]

    @property
    def replay(self) -> str:
        """Return the one command that replays this run."""
        return replay_command(self.name, self.seed, mutant=self.mutant, swarm=self.swarm)

    def verdict(self) -> str:
        """Return a one-line verdict: PASS, CAUGHT, FAIL with what failed it, or SKIP with the reason."""
        settled = settled_verdict(self.name, self.seed, skipped=self.skipped, caught=self.caught, ok=self.ok)
        if settled is not None:
            return settled
        kinds = sorted({a.kind for a in self.report.forbidden})
        what = ", ".join(kinds + self.findings + [f"missing {m}" for m in self.missing]) or "no anomalies"
        return f"{self.status} {self.name} seed={self.seed}: {what}"
