"""Named scenarios that ``eos run NAME --seed N`` runs: a cluster, clients, a workload, faults, a verdict."""

from engine.scenarios.registry import SCENARIOS, ScenarioResult, get_scenario, scenario

__all__ = ["SCENARIOS", "ScenarioResult", "get_scenario", "scenario"]
