"""The scenario catalog: list the scenarios, run one, sweep one (or all) over many seeds.

Invariants
----------
* The last scenario run is kept (``last_scenario``): ``%eos_db`` reads its service databases.
* :func:`workload_of` is the only place that reads the shape of the registry's results, so a
  change of that shape is met here alone; the registry says which scenarios take catalog options
  (:func:`engine.scenarios.registry.is_catalog`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eos_magics.errors import EosUsageError, unknown_name
from eos_magics.rooms.calls import check_int

__all__ = ["Catalog", "workload_of"]


class Catalog:
    """The scenarios ``eos run`` knows, run one at a time or swept over seeds."""

    def __init__(self) -> None:
        #: the last scenario run (registry ScenarioResult): ``%eos_db`` reads its databases
        self.last_scenario: Any = None

    def scenario_names(self) -> list[str]:
        """Every scenario ``eos run`` knows."""
        from engine.scenarios.registry import SCENARIOS, load_all

        load_all()
        return sorted(SCENARIOS)

    def run_scenario(self, name: str, seed: int = 7, *, mutant: str | None = None, swarm: bool = False) -> Any:
        """Run one catalog scenario; return its result view (verdict, short log, fingerprint, replay)."""
        from engine.scenarios.registry import get_scenario, is_catalog
        from eos_magics.views import kafka as views

        check_int(seed, "--seed")
        if name not in self.scenario_names():
            raise unknown_name("scenario", name, self.scenario_names(), how="list them with %eos_scenario list")
        fn = get_scenario(name)
        kwargs: dict[str, Any] = {}
        if mutant or swarm:
            if not is_catalog(name):
                raise EosUsageError(f"'{name}' takes no --mutant/--swarm; pick a catalog scenario")
            kwargs["swarm"] = swarm
            if mutant:
                kwargs["mutant"] = _mutant(mutant)
        self.last_scenario = fn(seed, **kwargs)
        return views.scenario_result(self.last_scenario)

    def sweep(
        self,
        name: str,
        seeds: int = 10,
        *,
        first_seed: int = 1,
        mutant: str | None = None,
        swarm: bool = False,
        progress: Callable[[int, int, Any], None] | None = None,
    ) -> Any:
        """Run a catalog scenario (or ``all``) on many seeds; return the table of verdicts."""
        from engine.scenarios.catalog import BY_NAME, SPECS
        from engine.scenarios.sweep import run_one
        from eos_magics.views import kafka as views

        check_int(seeds, "--seeds", 1)
        check_int(first_seed, "--first-seed")
        if name == "all":
            names = [s.name for s in SPECS]
        elif name in BY_NAME:
            names = [name]
        else:
            raise unknown_name("catalog scenario", name, BY_NAME, how="or 'all'; list them with %eos_scenario list")
        if mutant:
            _mutant(mutant)
        tasks = [
            (n, s, mutant.upper() if mutant else None, swarm)
            for n in names
            for s in range(first_seed, first_seed + seeds)
        ]
        rows = []
        for i, task in enumerate(tasks):
            rows.append(run_one(task))
            if progress is not None:
                progress(i + 1, len(tasks), rows[-1])
        return views.sweep(rows)


def _mutant(mutant: str) -> Any:
    from engine.scenarios.mutants import MUTANTS, get_mutant

    try:
        return get_mutant(mutant)
    except KeyError:
        raise unknown_name("mutant", mutant, MUTANTS, how="list them with %eos_scenario mutants") from None


# -- the registry's shapes, read here only ------------------------------------------------------------


def workload_of(result: Any) -> Any:
    """Return what a scenario run kept of its workload (its service databases among it), or None.

    A scenario's result keeps the workload's own state as ``state`` (a dataclass each workload
    declares); a plain-function scenario's has none, and before any run there is no result.
    """
    return getattr(result, "state", None)
