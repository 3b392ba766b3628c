"""A workload's process waiting on a delivery report is woken when the report is queued, not polled every ms.

Goal: the harness's driver runs a process that yields ``Await`` again at the very simulated
millisecond something wakes it (``Run.wake``, which a ``ReportWaits`` calls when the producer
queues the report the process waits on), even in the middle of the driver's time window, and at
its backstop when nothing wakes it; a wake for a process that is not awaiting changes nothing.
A sender of ``IdempotentSends`` then takes about two driver steps per send (produce and wait;
woken, complete and pause) where it took 3.6 (the 10k-record bench) to 9.6 (below) polling
every simulated millisecond.

Method: processes of a real ``Run`` (a 3-broker cluster) driven by ``Run.drive``; wakes come from
scheduled events, and from real producers' reports. Steps are counted by wrapping the generators
``Run.spawn`` is given; nothing of the engine is replaced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import Run, Spec, run_spec
from engine.scenarios.supervisor import Await, Sleep
from engine.scenarios.workloads import IdempotentSends, Workload


@dataclasses.dataclass(frozen=True)
class _Nothing(Workload):
    """A workload that spawns nothing: the tests spawn their own processes."""


def _run() -> Run:
    return Run(Spec("wake test", "processes only", _Nothing(), safety_ms=1_000), 1, None)


def _resumed_after(yielded: Sleep | Await, *, wake_in_ms: int | None = None, window_ms: int | None = None) -> int:
    """Drive one process that yields ``yielded`` once; return the simulated ms until it ran again.

    ``wake_in_ms``: an event then calls ``Run.wake`` for it. ``window_ms``: a second process
    sleeps that long, so the driver's window, with nothing else due, runs to its end.
    """
    run = _run()
    times: list[int] = []

    def process(r: Run, proc: int):  # type: ignore[no-untyped-def]
        times.append(r.now_ms)
        if wake_in_ms is not None:
            r.world.scheduler.call_at(r.now_ms + wake_in_ms, r.wake, proc)
        yield yielded
        times.append(r.now_ms)

    def sleeper(_r: Run, _proc: int):  # type: ignore[no-untyped-def]
        yield Sleep(window_ms or 0)

    if window_ms is not None:
        run.spawn(sleeper)
    run.spawn(process)
    run.drive(run.now_ms + 1_000)
    return times[1] - times[0]


def test_an_awaiting_process_runs_at_the_ms_it_is_woken_inside_the_drivers_window() -> None:
    assert _resumed_after(Await(10_000), wake_in_ms=37, window_ms=500) == 37


def test_an_awaiting_process_that_nothing_wakes_runs_at_its_backstop() -> None:
    assert _resumed_after(Await(120)) == 120


def test_a_wake_for_a_sleeping_process_changes_nothing() -> None:
    assert _resumed_after(Sleep(200), wake_in_ms=10) == 200


def _count_steps(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count every step of every process spawned from now on (the generators are wrapped, not replaced)."""
    counts = {"steps": 0}
    spawn = Run.spawn

    def counting_spawn(self: Run, make: Callable[[Run, int], Any], **kw: Any) -> int:
        def counted(r: Run, proc: int):  # type: ignore[no-untyped-def]
            gen = make(r, proc)
            for out in gen:
                counts["steps"] += 1
                yield out
            counts["steps"] += 1

        return spawn(self, counted, **kw)

    monkeypatch.setattr(Run, "spawn", counting_spawn)
    return counts


@pytest.mark.parametrize("seed", [1, 2])
def test_a_sender_takes_about_two_driver_steps_per_send(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    spec = Spec(
        "senders only",
        "IdempotentSends without readers or faults",
        IdempotentSends(producers=1, processes_per_producer=4, sends_per_process=50, readers=0),
        safety_ms=20_000,
    )
    counts = _count_steps(monkeypatch)
    result = run_spec(spec, seed)
    assert result.ok, result.verdict()
    sends = [op for op in result.history if op.f == "send" and op.type == "ok"]
    assert len(sends) == 200
    # produce + await, then woken: complete + pause (two steps a send), plus the first sends' wait of
    # about 1 s for the producer id, at the 100 ms backstop: 440 and 404 steps; polling every
    # simulated ms took 1,913 and 922
    assert counts["steps"] < 2.5 * len(sends), counts


def test_the_catalog_lost_ack_scenario_still_passes_with_waking_senders() -> None:
    result = run_spec(BY_NAME["idempotence: lost ack retry"], 1)
    assert result.status == "PASS", result.verdict()
