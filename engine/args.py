"""Checks of plain arguments that every public entry point shares: strings, ints, timeouts.

One place, so the same mistake gets the same one-line answer from a producer, a consumer, the
cluster or a view: ``TypeError`` for the wrong type (a bool is not an int), ``ValueError`` for a
value out of range. What a name refers to (a topic, a broker, a node) is checked against the
cluster in :mod:`engine.views.lookup`; the shapes of client arguments (partition lists, offsets,
records) beside the client, in :mod:`engine.client.message` and :mod:`engine.client.producer`.

Timeouts are simulated seconds, as confluent-kafka's are real ones: a number >= 0, or ``None``
or ``-1`` for the call's default (no limit for ``poll``/``consume``, ``request.timeout.ms`` or
``max.block.ms`` for calls that wait for an answer). NaN is refused.
"""

from __future__ import annotations

from typing import Any


def check_str(value: Any, what: str) -> str:
    """Return ``value`` if it is a non-empty str; else raise TypeError (not a str) or ValueError (empty)."""
    if not isinstance(value, str):
        msg = f"{what} must be a str, got {value!r} ({type(value).__name__})"
        raise TypeError(msg)
    if not value:
        msg = f"{what} must not be empty"
        raise ValueError(msg)
    return value


def check_int(value: Any, what: str, *, minimum: int | None = None) -> int:
    """Return ``value`` if it is an int (not a bool) of at least ``minimum``; else TypeError / ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{what} must be an int, got {value!r} ({type(value).__name__})"
        raise TypeError(msg)
    if minimum is not None and value < minimum:
        msg = f"{what} must be >= {minimum}, got {value}"
        raise ValueError(msg)
    return value


def wait_ms(timeout: Any, action: str, *, default: str = "no limit") -> int | None:
    """Return a timeout in simulated ms, or None for the call's default (``timeout`` None or -1)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        msg = f"{action}: timeout must be a number of simulated seconds, or None/-1 for {default}; got {timeout!r}"
        raise TypeError(msg)
    if timeout == -1:
        return None
    if not timeout >= 0:  # also refuses NaN
        msg = f"{action}: timeout must be >= 0 simulated seconds, or None/-1 for {default}; got {timeout}"
        raise ValueError(msg)
    return int(timeout * 1000)


def call_wait_ms(timeout: Any, action: str, default_ms: int) -> int:
    """Return a request-style timeout in ms: None or -1 mean ``default_ms``."""
    wait = wait_ms(timeout, action, default=f"{default_ms} ms")
    return default_ms if wait is None else wait
