"""The recorder's real-time parts: the wall clock it stamps operations with, and its lock.

Real clients run in real time and on threads of their own (librdkafka's delivery reports, kafka-python's
I/O thread), so the recorder of their histories needs a clock and a lock, unlike everything in the
deterministic core. They live here, in one named module (``tests/test_tidy.py`` allows it by name).
"""

from __future__ import annotations

import threading
import time
from typing import Any


class WallClock:
    """Milliseconds since the clock was made (``time.monotonic``)."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    def now_ms(self) -> int:
        """Return the milliseconds since this clock was made."""
        return int((time.monotonic() - self._start) * 1000)


def new_lock() -> Any:
    """Return a re-entrant lock for the recorder's entries."""
    return threading.RLock()
