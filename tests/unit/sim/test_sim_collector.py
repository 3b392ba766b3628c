"""``engine.sim.collector``: the collector's thresholds held for a run, and put back after it.

Goal: ``hold_run_passes`` raises the young passes' threshold to ``RUN_YOUNG_EVERY`` and the full
passes' to ``FULL_PASS_EVERY`` for a whole scenario run, a nested hold changes nothing, and the
thresholds the process had come back when the run ends, whatever it raised. Method: the
thresholds read directly, and from inside a real ``run_spec`` (a workload that records them).
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterator

import pytest

from engine.scenarios.harness import Run, Spec, run_spec
from engine.scenarios.workloads import Workload
from engine.sim.collector import FULL_PASS_EVERY, RUN_YOUNG_EVERY, hold_run_passes, release_run_passes


@pytest.fixture
def default_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_a_run_hold_raises_young_and_full_thresholds_and_release_puts_them_back(default_thresholds: None) -> None:
    held = hold_run_passes()
    assert gc.get_threshold() == (RUN_YOUNG_EVERY, 10, FULL_PASS_EVERY)
    assert hold_run_passes() is None  # nested: already raised
    release_run_passes(held)
    assert gc.get_threshold() == (700, 10, 10)


@dataclasses.dataclass(frozen=True)
class _Records(Workload):
    seen: list[tuple[int, int, int]] = dataclasses.field(default_factory=list)

    def start(self, run: Run) -> None:
        self.seen.append(gc.get_threshold())


def test_run_spec_runs_under_the_raised_thresholds_and_restores_them(default_thresholds: None) -> None:
    workload = _Records()
    run_spec(Spec("thresholds", "records the collector's thresholds", workload, safety_ms=100, liveness_ms=100), 1)
    assert workload.seen == [(RUN_YOUNG_EVERY, 10, FULL_PASS_EVERY)]
    assert gc.get_threshold() == (700, 10, 10)
