"""The scenario registry: hierarchical names mapped to functions of a seed.

A scenario function takes ``seed`` (and keyword options) and returns a
:class:`~engine.scenarios.result.ScenarioResult`: the cluster it ran, a verdict (``ok`` and the
findings), and the fingerprint. Scenarios are registered with :func:`scenario` under names
like ``"demo"`` or ``"idempotence: lost ack retry"``; :func:`load_all` registers ``demo`` and
every catalog spec.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from engine.scenarios.result import ScenarioResult, settled_verdict, verdict_status

__all__ = [
    "DESCRIPTIONS",
    "SCENARIOS",
    "ScenarioResult",
    "get_scenario",
    "is_catalog",
    "load_all",
    "scenario",
    "settled_verdict",
    "verdict_status",
]

SCENARIOS: dict[str, Callable[..., ScenarioResult]] = {}


DESCRIPTIONS: dict[str, str] = {}


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


def is_catalog(name: str) -> bool:
    """Return True when ``name`` is a catalog spec's scenario: it takes ``mutant=`` and ``swarm=``."""
    from engine.scenarios.catalog import BY_NAME

    return name in BY_NAME


def load_all() -> None:
    """Register every scenario: ``demo`` (a plain function) and the catalog's specs."""
    from engine.scenarios import demo
    from engine.scenarios.catalog import SPECS

    if "demo" not in SCENARIOS:
        scenario("demo", demo.DESCRIPTION)(demo.demo)
    for spec in SPECS:
        if spec.name not in SCENARIOS:
            SCENARIOS[spec.name] = _spec_runner(spec)
            DESCRIPTIONS[spec.name] = spec.description


def _spec_runner(spec: Any) -> Callable[..., ScenarioResult]:
    def run(seed: int, *, mutant: Any = None, swarm: bool = False) -> ScenarioResult:
        from engine.scenarios.harness import run_spec

        return run_spec(spec, seed, mutant=mutant, swarm=swarm)

    return run
