"""The dashboard's pacer (``widgets.pacer``): one tick, on a thread or on the event loop (Pyodide has no threads).

Goal: both drivers tick at most ``MAX_HZ`` times a second, call ``step_publish`` each tick, keep
pacing when a tick raises (keeping the error), and stop for good; :func:`pacer_for` picks the
event loop where threads cannot start (``sys.platform == "emscripten"``). Method: a counting
stand-in for the dashboard (the pacer needs only ``step_publish``), a real asyncio loop run for a
third of a second, and a real dashboard on a live run driven by the loop pacer.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from widgets import pacer
from widgets.pacer import MAX_HZ, LoopPacer, ThreadPacer, pacer_for


class Counting:
    def __init__(self, fail_every: int = 0) -> None:
        self.calls = 0
        self.fail_every = fail_every

    def step_publish(self) -> None:
        self.calls += 1
        if self.fail_every and self.calls % self.fail_every == 0:
            raise RuntimeError("a panel broke")


def _in_own_thread(coro_fn: Any) -> Any:
    """``asyncio.run(coro_fn())`` on a thread of its own: a sync Playwright still open elsewhere in the
    session (the browser tests) marks a loop running in the main thread."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.append(asyncio.run(coro_fn()))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, name="pacer-test-loop")
    thread.start()
    thread.join(timeout=30)
    if errors:
        raise errors[0]
    return out[0]


def _run_loop_for(seconds: float, p: LoopPacer) -> None:
    async def main() -> None:
        p.start()
        await asyncio.sleep(seconds)
        p.stop()

    _in_own_thread(main)


def test_the_loop_pacer_ticks_on_the_event_loop_at_most_max_hz_and_survives_errors() -> None:
    target = Counting(fail_every=2)
    p = LoopPacer(target)
    _run_loop_for(0.35, p)
    assert 2 <= p.ticks <= 0.35 * MAX_HZ + 1, p.ticks
    assert target.calls == p.ticks
    assert p.errors and all(e == "RuntimeError: a panel broke" for e in p.errors)
    assert not p.is_alive()
    ticks = p.ticks
    time.sleep(0.15)
    assert p.ticks == ticks, "a stopped pacer never ticks again"


def test_the_thread_pacer_ticks_on_its_thread_and_stops() -> None:
    target = Counting()
    p = ThreadPacer(target, hz=50)  # capped at MAX_HZ
    assert p.period == 1 / MAX_HZ
    p.start()
    time.sleep(0.35)
    p.stop()
    assert not p.is_alive() and 2 <= p.ticks <= 0.35 * MAX_HZ + 1 and target.calls == p.ticks


def test_without_threads_the_dashboard_gets_the_loop_pacer(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(pacer_for(Counting()), ThreadPacer)
    monkeypatch.setattr(pacer.sys, "platform", "emscripten")
    assert isinstance(pacer_for(Counting()), LoopPacer)


def test_a_dashboard_on_the_loop_pacer_publishes_a_run_that_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    from widgets.dashboard import Dashboard
    from widgets.live import LiveRun

    monkeypatch.setattr(pacer.sys, "platform", "emscripten")
    run = LiveRun.start(seed=3, brokers=3)
    run.cluster.create_topic("orders", partitions=1, replication_factor=3)

    async def main() -> Dashboard:
        dash = Dashboard(run)
        assert isinstance(dash.pacer, LoopPacer)
        p = run.cluster.producer({"client.id": "p1"})
        p.produce("orders", value=b"a", partition=0)
        p.flush()
        await asyncio.sleep(0.35)  # the loop is free: the pacer publishes the flushed record
        dash.close()
        return dash

    dash = _in_own_thread(main)
    assert dash.pacer.ticks >= 2 and dash.pacer.errors == []
    assert "orders-0" in dash.partitions and not dash.pacer.is_alive()
