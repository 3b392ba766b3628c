"""The wall clock of a served cluster: simulated time follows real time at a rate.

The only module of the engine that reads the wall clock (``tests/test_tidy.py`` allows it here and
nowhere else). Simulated time follows ``time.monotonic()`` at ``rate`` (1.0: one simulated second per
real second), from an anchor. When something else moved the simulation ahead of the wall clock (a
notebook cell ran ``cluster.run_for``, or a burst of work took longer than real time), the clock
re-anchors at the simulation's time instead of waiting for the wall clock to catch up: simulated
time never goes backwards and never stalls.
"""

from __future__ import annotations

import time


class RealTimeClock:
    """Map wall time to simulated milliseconds."""

    def __init__(self, sim_now_ms: int, rate: float = 1.0) -> None:
        if not rate > 0:
            msg = f"rate must be > 0 (1.0 = real time), got {rate!r}"
            raise ValueError(msg)
        self.rate = float(rate)
        self._wall0 = time.monotonic()
        self._sim0 = sim_now_ms

    def target_ms(self, sim_now_ms: int) -> int:
        """Return the simulated time that corresponds to now (never before ``sim_now_ms``)."""
        wall = time.monotonic()
        target = self._sim0 + int((wall - self._wall0) * 1000 * self.rate)
        if target < sim_now_ms:  # the simulation ran ahead: follow it from here
            self._wall0, self._sim0 = wall, sim_now_ms
            return sim_now_ms
        return target

    def seconds_until(self, sim_ms: int, sim_now_ms: int) -> float:
        """Return the wall seconds until simulated time ``sim_ms`` is due (0 when it is)."""
        return max(0.0, (sim_ms - self.target_ms(sim_now_ms)) / 1000 / self.rate)

    @staticmethod
    def wall_seconds() -> float:
        """Return a monotonic wall time in seconds (for the transport's stall timeouts)."""
        return time.monotonic()
