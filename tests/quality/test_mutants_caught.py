"""Every weakened configuration (M1–M19) is caught by its named check within 5 seeds of its scenario.

Method: for each (mutant, scenario, check) that the scenario catalog declares, run the scenario
with the mutant on seeds 1..5 and stop at the first seed whose report contains the named check.
A mutant that no scenario targets yet is listed as a known gap (and fails the gap test below
if a scenario starts targeting it without being caught). This is the acceptance harness of
eos-checking.md §5: a checker that cannot see a weakened system is blind.
"""

from __future__ import annotations

import pytest

from engine.scenarios.catalog import SPECS
from engine.scenarios.harness import is_caught, run_spec
from engine.scenarios.mutants import MUTANTS

MAX_SEEDS = 5
PAIRS = [(mid, spec, check) for spec in SPECS for mid, check in spec.catches]


@pytest.mark.parametrize(("mutant_id", "spec", "check"), PAIRS, ids=[f"{m}-{s.name}" for m, s, _ in PAIRS])
def test_mutant_is_caught_by_its_named_check_within_five_seeds(mutant_id: str, spec: object, check: str) -> None:
    seen = []
    for seed in range(1, MAX_SEEDS + 1):
        r = run_spec(spec, seed, mutant=MUTANTS[mutant_id])  # type: ignore[arg-type]
        kinds = {a.kind for a in r.report.forbidden} | {f.split(":")[0] for f in r.findings}
        if is_caught(check, kinds):
            return
        seen.append((seed, sorted(kinds)))
    pytest.fail(f"{mutant_id} not caught by {check} in {MAX_SEEDS} seeds of {spec.name!r}: {seen}")  # type: ignore[attr-defined]


def test_every_mutant_is_defined_with_the_guarantee_it_removes() -> None:
    assert list(MUTANTS) == [f"M{i}" for i in range(1, 20)]
    assert all(m.removes for m in MUTANTS.values())
