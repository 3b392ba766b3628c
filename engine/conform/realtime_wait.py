"""The conformance suite's real-time parts: a stopwatch, a sleep, and names unique to one run.

Case programs drive real clients against real brokers, so they wait in real time and measure how
long things took (how long until a group's assignment is stable). Those reads of the wall clock
live here, in one named module (``tests/test_tidy.py`` allows it by name), as the recorder's live in
:mod:`engine.record.realtime`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

__all__ = ["Stopwatch", "run_nonce", "sleep", "wait_until"]


class Stopwatch:
    """Seconds since the stopwatch was made (``time.monotonic``)."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    def seconds(self) -> float:
        """Return the seconds since this stopwatch was made."""
        return time.monotonic() - self._start


def sleep(seconds: float) -> None:
    """Wait ``seconds`` of real time."""
    time.sleep(seconds)


def wait_until(done: Callable[[], bool], timeout_s: float, step_s: float = 0.1) -> bool:
    """Call ``done()`` every ``step_s`` until it is true (return True) or ``timeout_s`` passed (False)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if done():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step_s)


def run_nonce() -> str:
    """Return a short tag for names (topics, groups, transactional ids) that must not repeat across runs."""
    return f"{os.getpid() % 10_000:04d}{int(time.time() * 1000) % 100_000:05d}"
