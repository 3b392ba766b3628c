"""The scenario registry: hierarchical names mapped to functions of a seed.

A scenario function takes ``seed`` (and keyword options) and returns a :class:`ScenarioResult`:
the cluster it ran, a verdict (``ok`` and the findings), and the fingerprint. Scenarios are
registered with the :func:`scenario` decorator under names like ``"demo"`` or
``"idempotence: lost ack retry"``.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from typing import Any

SCENARIOS: dict[str, Callable[..., ScenarioResult]] = {}


def verdict_status(*, skipped: str, ok: bool, caught: tuple[str, ...]) -> str:
    """Return PASS, CAUGHT (a positive control showed its anomaly), SKIP (with a reason) or FAIL."""
    if skipped:
        return "SKIP"
    if not ok:
        return "FAIL"
    return "CAUGHT" if caught else "PASS"


def settled_verdict(name: str, seed: int, *, skipped: str, caught: tuple[str, ...], ok: bool) -> str | None:
    """Return the verdict line of a SKIP or a CAUGHT run (they read the same for every result type), else None."""
    status = verdict_status(skipped=skipped, ok=ok, caught=caught)
    if status == "SKIP":
        return f"SKIP {name} seed={seed}: {skipped}"
    if status == "CAUGHT":
        return f"CAUGHT {name} seed={seed}: caught {', '.join(caught)}"
    return None


DESCRIPTIONS: dict[str, str] = {}


@dataclasses.dataclass
class ScenarioResult:
    """What one scenario run produced."""

    name: str
    seed: int
    ok: bool
    findings: list[str]
    cluster: Any
    summary: dict[str, Any] = dataclasses.field(default_factory=dict)
    extra: Any = None
    #: why the run has no verdict of its own (a positive control that could not show its anomaly)
    skipped: str = ""
    #: the anomaly kinds a positive control showed (its catch); empty for any other run
    caught: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        """Return the run's fingerprint."""
        return self.cluster.fingerprint()

    @property
    def status(self) -> str:
        """Return PASS, CAUGHT (a positive control showed its anomaly), SKIP or FAIL."""
        return verdict_status(skipped=self.skipped, ok=self.ok, caught=self.caught)

    def verdict(self) -> str:
        """Return a one-line verdict: PASS, CAUGHT, FAIL, or SKIP with the reason."""
        settled = settled_verdict(self.name, self.seed, skipped=self.skipped, caught=self.caught, ok=self.ok)
        if settled is not None:
            return settled
        detail = "; ".join(self.findings) if self.findings else "no anomalies"
        return f"{self.status} {self.name} seed={self.seed}: {detail}"


def scenario(name: str, description: str) -> Callable[[Callable[..., ScenarioResult]], Callable[..., ScenarioResult]]:
    """Register a scenario function under ``name``."""

    def register(fn: Callable[..., ScenarioResult]) -> Callable[..., ScenarioResult]:
        SCENARIOS[name] = fn
        DESCRIPTIONS[name] = description
        return fn

    return register


def get_scenario(name: str) -> Callable[..., ScenarioResult]:
    """Return a scenario by name, or raise KeyError with a suggestion."""
    load_all()
    fn = SCENARIOS.get(name)
    if fn is None:
        close = difflib.get_close_matches(name, list(SCENARIOS), n=1)
        hint = f"did you mean '{close[0]}'?" if close else "run 'eos scenarios' to list them"
        msg = f"no scenario named '{name}'; {hint}"
        raise KeyError(msg)
    return fn


def load_all() -> None:
    """Register every scenario: the ``@scenario`` functions (on import) and the catalog's specs."""
    from engine.scenarios import demo  # noqa: F401
    from engine.scenarios.catalog import SPECS

    for spec in SPECS:
        if spec.name not in SCENARIOS:
            SCENARIOS[spec.name] = _spec_runner(spec)
            DESCRIPTIONS[spec.name] = spec.description


def _spec_runner(spec: Any) -> Callable[..., ScenarioResult]:
    def run(seed: int, *, mutant: Any = None, swarm: bool = False) -> ScenarioResult:
        from engine.scenarios.harness import run_spec

        r = run_spec(spec, seed, mutant=mutant, swarm=swarm)
        summary = {
            "history_ops": r.history_size,
            "simulated_ms": r.cluster.now_ms,
            "fault_plan": f"{len(r.plan)} entries",
        }
        findings = [f"{a.kind}: {a.message}" for a in r.report.forbidden] + r.findings
        findings += [f"missing positive-control anomaly: {m}" for m in r.missing]
        return ScenarioResult(
            spec.name, seed, r.ok, findings, r.cluster, summary, extra=r, skipped=r.skipped, caught=r.caught
        )

    run.spec = spec  # type: ignore[attr-defined]
    return run
