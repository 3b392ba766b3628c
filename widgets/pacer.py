"""The dashboard's pacer: at most ``MAX_HZ`` ticks a second, each one ``step_publish()``; a thread or the event loop.

Role
----
A live dashboard needs something that wakes up on its own: to play (advance the run a little)
and to publish what changed. Where threads start (CPython's ipykernel) that is a daemon thread,
so the panels move even while a long cell runs. Where they cannot (Pyodide in JupyterLite:
``threading.Thread.start`` raises), it is the kernel's asyncio loop: ``call_later`` re-arms one
tick after another, and the panels move between cells, while the loop is free.

Invariants
----------
* One tick, one code path: both drivers call :meth:`Pacer.tick`, which runs
  ``dashboard.step_publish()``, keeps the last errors for the status bar (a failing tick never
  stops the pacing) and counts ticks.
* A fixed schedule: a slow tick delays the next one, never adds a full period after it; the
  period is never shorter than ``1 / MAX_HZ``.
* :func:`pacer_for` picks the driver once, from whether this interpreter can start a thread.
* ``stop()`` ends the pacing for good; a stopped pacer is never alive again.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Protocol

__all__ = ["MAX_HZ", "LoopPacer", "Pacer", "ThreadPacer", "can_start_threads", "pacer_for"]

#: The pacer never ticks more often than this (Hz).
MAX_HZ = 10
#: How many tick errors are kept (the oldest half is dropped past this).
_KEPT_ERRORS = 100


class Paced(Protocol):
    """What a pacer drives: one tick of play (when playing), then a publish."""

    def step_publish(self) -> Any: ...


def can_start_threads() -> bool:
    """Whether this interpreter can start a thread (Pyodide's, in a browser, cannot)."""
    return sys.platform != "emscripten"


class Pacer:
    """The tick both drivers share, and what they report: ``ticks`` and the last ``errors``."""

    def __init__(self, dashboard: Paced, hz: int = MAX_HZ) -> None:
        self.dashboard = dashboard
        self.period = 1.0 / min(hz, MAX_HZ)
        self.ticks = 0
        self.errors: list[str] = []

    def tick(self) -> None:
        try:
            self.dashboard.step_publish()
        except Exception as exc:  # keep pacing; the status bar says what broke
            self.errors.append(f"{type(exc).__name__}: {exc}")
            if len(self.errors) > _KEPT_ERRORS:
                del self.errors[: _KEPT_ERRORS // 2]
        self.ticks += 1

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def is_alive(self) -> bool:
        raise NotImplementedError


class ThreadPacer(Pacer):
    """Ticks on a daemon thread of its own, so the dashboard moves while a cell runs."""

    def __init__(self, dashboard: Paced, hz: int = MAX_HZ) -> None:
        super().__init__(dashboard, hz)
        self._stop_event = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eos-dashboard-pacer", daemon=True)

    def _run(self) -> None:
        due = time.monotonic() + self.period
        while not self._stop_event.wait(max(0.0, due - time.monotonic())):
            self.tick()
            due = max(due + self.period, time.monotonic())

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop pacing and wait for the thread to end."""
        self._stop_event.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2)

    def is_alive(self) -> bool:
        return self._thread.is_alive()


class LoopPacer(Pacer):
    """Ticks on the running asyncio loop (``call_later``), for kernels without threads."""

    def __init__(self, dashboard: Paced, hz: int = MAX_HZ) -> None:
        super().__init__(dashboard, hz)
        self._handle: Any = None
        self._loop: Any = None
        self._stopped = False
        self._due = 0.0

    def start(self) -> None:
        import asyncio

        self._loop = asyncio.get_event_loop()
        self._due = self._loop.time() + self.period
        self._handle = self._loop.call_at(self._due, self._run)

    def _run(self) -> None:
        if self._stopped:
            return
        self.tick()
        self._due = max(self._due + self.period, self._loop.time())
        self._handle = self._loop.call_at(self._due, self._run)

    def stop(self) -> None:
        self._stopped = True
        if self._handle is not None:
            self._handle.cancel()

    def is_alive(self) -> bool:
        return self._handle is not None and not self._stopped


def pacer_for(dashboard: Paced, hz: int = MAX_HZ) -> Pacer:
    """The pacer this interpreter can run: a thread where threads start, else the event loop."""
    return ThreadPacer(dashboard, hz) if can_start_threads() else LoopPacer(dashboard, hz)
