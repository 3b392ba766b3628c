"""``eos sweep`` never dies on one run, and swarm never fails a positive control it could not test.

Goal: a sweep is a long, unattended search for bugs, so its table must always complete. A run
that raises (an internal error of the engine) is judged ``FAIL`` with the kind
``error:<ExceptionName>``, its replay command and its traceback, in one process or across worker
processes (``--jobs 2``). A positive control (S20, which must report the anomaly its power loss
causes) swarmed with a plan that never loses power has nothing to show: it is ``SKIP`` with the
reason, counted apart. Method: one run is made to raise by replacing ``run_spec`` for one seed
(in-process), or by a task naming no scenario (in a spawned worker); the rest are real runs.
"""

from __future__ import annotations

import pytest

import engine.scenarios.harness
from engine.cli import main
from engine.commands.sweep import _run_all
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from engine.sim.node import IllegalNodeTransitionError

SMALL = "idempotence: lost ack retry"
POWER_LOSS = "durability: correlated power loss"


@pytest.fixture
def seed_2_raises(monkeypatch):
    real = engine.scenarios.harness.run_spec

    def run_spec_raising_on_seed_2(spec, seed, **kwargs):
        if seed == 2:
            msg = "cannot resume copier-0-producer-0: it is up, resume needs paused"
            raise IllegalNodeTransitionError(msg)
        return real(spec, seed, **kwargs)

    monkeypatch.setattr(engine.scenarios.harness, "run_spec", run_spec_raising_on_seed_2)


def test_a_run_that_raises_is_a_fail_of_its_own_kind_and_the_table_completes(seed_2_raises, capsys):
    assert main(["sweep", SMALL, "--seeds", "3", "--quiet", "--swarm"]) == 1
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith(SMALL)]
    assert [line.split()[4:6] for line in table[:3]] == [["1", "PASS"], ["2", "FAIL"], ["3", "PASS"]]
    assert "error:IllegalNodeTransitionError" in table[1]
    assert "3 runs: 2 passed, 1 failed (1 raised an exception)" in out
    assert f"FAILED seed 2: FAIL {SMALL} seed=2: error: IllegalNodeTransitionError: cannot resume" in out
    assert f"replay: eos run '{SMALL}' --seed 2 --swarm" in out
    assert "internal error IllegalNodeTransitionError at " in out
    assert f"in '{SMALL}' seeds 2; traceback of seed 2:" in out
    assert "Traceback (most recent call last)" in out
    assert "run_spec_raising_on_seed_2" in out


def test_a_run_that_raises_in_a_worker_process_is_judged_too():
    rows = _run_all([(SMALL, 1, None, False), ("no such scenario", 1, None, False)], jobs=2, quiet=True)
    assert [(r.name, r.status) for r in rows] == [(SMALL, "PASS"), ("no such scenario", "FAIL")]
    assert rows[1].kinds == "error:KeyError"
    assert rows[1].replay == "eos run 'no such scenario' --seed 1"
    assert "Traceback (most recent call last)" in rows[1].traceback


def test_a_positive_control_whose_fault_swarm_did_not_draw_is_skipped_with_the_reason():
    r = run_spec(BY_NAME[POWER_LOSS], 1, swarm=True)
    assert r.status == "SKIP"
    assert r.ok
    assert r.verdict() == (
        f"SKIP {POWER_LOSS} seed=1: n/a: positive control's fault kind (crash+lose_unflushed_tail) "
        "was not drawn by swarm"
    )
    assert r.replay == f"eos run '{POWER_LOSS}' --seed 1 --swarm"


def test_the_same_positive_control_without_swarm_is_still_judged_as_one():
    r = run_spec(BY_NAME[POWER_LOSS], 1)
    assert r.status == "CAUGHT"
    assert r.verdict().startswith(f"CAUGHT {POWER_LOSS} seed=1: caught ")
    assert not r.skipped


def test_a_sweep_counts_skipped_positive_controls_apart(capsys):
    assert main(["sweep", POWER_LOSS, "--swarm", "--seeds", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "2 runs: 0 passed, 0 failed, 2 skipped (a positive control that could not show its anomaly)" in out
    assert "FAILED" not in out


def test_a_positive_control_that_shows_its_anomaly_undrawn_is_caught_not_failed():
    """Swarm did not draw the saga contrast's fault kind, yet the missing compensation shows: a catch."""
    saga = BY_NAME["saga contrast: no compensation"]
    r = run_spec(saga, 95001, swarm=True)
    assert r.status == "CAUGHT", r.verdict()
    assert r.caught == ("saga-incomplete",)


def test_a_positive_control_that_cannot_show_its_anomaly_says_why():
    """The request-reply deadlock with its requester's coordinator down when the reply is late: SKIP, with the why."""
    deadlock = BY_NAME["request-reply: deadlock inside a transaction"]
    r = run_spec(deadlock, 95013, swarm=True)
    assert r.status == "SKIP", r.verdict()
    assert "could not be asked why" in r.skipped or "never written" in r.skipped
