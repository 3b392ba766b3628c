"""Tests of ``eos run``: a summary by default, the short log only with ``--log``.

Goal: ``eos run NAME --seed N`` prints a short summary (scenario, seed, counts, verdict, the
findings of a failed run one per line, fingerprint, replay command) that fits on a screen, and
the whole short log only when asked for; the last two lines keep their format
(``fingerprint: HASH`` and ``replay: eos run ...``) because scripts and docs grep them. Method:
call ``engine.cli.main`` in-process on the small ``demo`` scenario and on catalog scenarios
with a mutant that fails quickly, capturing stdout.
"""

from __future__ import annotations

import re

import pytest

from engine.cli import main
from engine.scenarios.registry import get_scenario
from engine.scenarios.summary import MAX_FINDINGS_SHOWN

FINGERPRINT = re.compile(r"^fingerprint: [0-9a-f]{32}$")


def _run(capsys, *argv: str) -> tuple[int, list[str]]:
    status = main(["run", *argv])
    return status, capsys.readouterr().out.splitlines()


def test_the_default_is_a_summary_without_the_short_log(capsys):
    status, out = _run(capsys, "demo", "--seed", "7")
    assert status == 0
    assert out[:2] == ["scenario: demo", "seed: 7"]
    assert "acked: 200" in out
    assert any(line.startswith("trace_events: ") for line in out)
    assert "PASS demo seed=7: no anomalies" in out
    assert not any("run.start" in line for line in out)  # no trace line
    assert len(out) < 20


def test_the_summary_ends_with_the_fingerprint_and_replay_lines_in_their_old_format(capsys):
    _, out = _run(capsys, "demo", "--seed", "7")
    assert FINGERPRINT.match(out[-2])
    assert out[-2] == f"fingerprint: {get_scenario('demo')(7).fingerprint}"
    assert out[-1] == "replay: eos run demo --seed 7"


def test_log_prints_the_whole_short_log_before_the_same_summary(capsys):
    _, summary = _run(capsys, "demo", "--seed", "7")
    status, out = _run(capsys, "demo", "--seed", "7", "--log")
    assert status == 0
    trace = get_scenario("demo")(7).cluster.world.trace
    log = trace.short_log().splitlines()
    assert out == log + summary
    assert "run.start" in out[0]


@pytest.mark.parametrize(
    ("mode", "same_as"),
    [("short", ("--log",)), ("auto", ("--log",)), ("none", ())],
)
def test_the_old_log_modes_still_work(capsys, mode, same_as):
    _, expected = _run(capsys, "demo", "--seed", "7", *same_as)
    _, out = _run(capsys, "demo", "--log", mode, "--seed", "7")
    assert out == expected


def test_log_faults_prints_only_faults_and_state_changes(capsys):
    _, summary = _run(capsys, "demo", "--seed", "7")
    _, full = _run(capsys, "demo", "--seed", "7", "--log")
    _, out = _run(capsys, "demo", "--seed", "7", "--log", "faults")
    assert out[-len(summary) :] == summary
    assert len(summary) < len(out) < len(full)


def test_a_failed_run_exits_1_and_lists_its_findings_one_per_line(capsys):
    status, out = _run(capsys, "idempotence: lost ack retry", "--seed", "1", "--mutant", "M1")
    assert status == 1
    assert out[0] == "scenario: idempotence: lost ack retry"
    assert out[2].startswith("mutant: M1 idempotence off; removes: ")
    assert "forbidden: duplicate 3" in out
    i = next(i for i, line in enumerate(out) if line.startswith("FAIL "))
    assert out[i] == "FAIL idempotence: lost ack retry seed=1: 3 findings (duplicate 3)"
    assert all(line.startswith("  duplicate: ") for line in out[i + 1 : i + 4])
    assert FINGERPRINT.match(out[-2])
    assert out[-1] == "replay: eos run 'idempotence: lost ack retry' --seed 1 --mutant M1"


def test_a_long_list_of_findings_is_cut_with_a_count_of_the_rest(capsys):
    status, out = _run(capsys, "isolation: lso off by one", "--seed", "1", "--mutant", "M10")
    assert status == 1
    i = next(i for i, line in enumerate(out) if line.startswith("FAIL "))
    n = int(re.search(r": (\d+) findings", out[i]).group(1))
    assert n > MAX_FINDINGS_SHOWN
    shown = out[i + 1 : i + 1 + MAX_FINDINGS_SHOWN]
    assert all(line.startswith("  ") and len(line) <= 202 for line in shown)
    assert out[i + 1 + MAX_FINDINGS_SHOWN] == f"  ... and {n - MAX_FINDINGS_SHOWN} more"
    assert out[-1] == "replay: eos run 'isolation: lso off by one' --seed 1 --mutant M10"


def test_a_swarm_run_says_so_and_keeps_swarm_in_the_replay_line(capsys):
    _, out = _run(capsys, "durability: correlated power loss", "--seed", "1", "--swarm")
    assert "swarm: yes" in out
    assert any(line.startswith("SKIP durability: correlated power loss seed=1: ") for line in out)
    assert out[-1] == "replay: eos run 'durability: correlated power loss' --seed 1 --swarm"


def test_an_unknown_scenario_is_a_usage_error(capsys):
    assert main(["run", "dmeo"]) == 2
    assert "did you mean 'demo'?" in capsys.readouterr().err
