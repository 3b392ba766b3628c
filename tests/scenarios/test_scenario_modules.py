"""How the scenario modules depend on each other: the harness never needs the catalog.

Method: the catalog is data that names a workload and a fault plan for each spec; the harness
runs specs and needs only the swarm plan. A fresh interpreter imports the harness (and, apart,
the fault plans) and lists which scenario modules came with it; and every fault plan the
catalog names must be a module-level function of ``fault_plans``, where ``eos sweep`` and the
benchmark look plans up by name.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.scenarios import fault_plans
from engine.scenarios.catalog import SPECS

ROOT = Path(__file__).resolve().parent.parent.parent


def _scenario_modules_loaded_by(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(m for m in sys.modules if m.startswith('engine.scenarios')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("module", ["engine.scenarios.harness", "engine.scenarios.fault_plans"])
def test_running_specs_loads_no_catalog_and_no_workload(module: str) -> None:
    loaded = _scenario_modules_loaded_by(module)
    assert not loaded & {"engine.scenarios.catalog", "engine.scenarios.workloads", "engine.scenarios.copier"}, loaded


def test_every_catalog_fault_plan_lives_in_fault_plans() -> None:
    plans = {spec.faults for spec in SPECS if spec.faults is not None}
    assert plans
    for plan in plans:
        assert plan.__module__ == fault_plans.__name__, plan
        assert getattr(fault_plans, plan.__name__) is plan
