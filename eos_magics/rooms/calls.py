"""Argument checks every room shares, and engine calls whose argument errors become one-line usage errors.

Invariants
----------
Kafka's named errors (``KafkaError``) and the engine's ``IllegalStateError`` pass through
:func:`call_engine` untouched: they already render as one named line.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import Any

from eos_magics.errors import EosUsageError

__all__ = ["call_engine", "check_int", "check_name", "check_writable"]


def check_name(name: Any, what: str) -> str:
    """Return ``name`` if it is a Python identifier (it becomes a variable), else a usage error."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise EosUsageError(
            f"{what} name must be a Python identifier such as 'p1' (it becomes a variable), got {name!r}"
        )
    return name


def check_int(value: Any, what: str, minimum: int | None = None) -> int:
    """Return ``value`` if it is an integer of at least ``minimum``, else a usage error."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise EosUsageError(f"{what} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise EosUsageError(f"{what} must be at least {minimum}, got {value}")
    return value


def check_writable(path: Any) -> None:
    """A usage error unless ``path`` names a file that can be written (its folder exists)."""
    import os

    if not isinstance(path, (str, os.PathLike)):
        raise EosUsageError(f"a history file is a path such as 'history.jsonl', got {path!r}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise EosUsageError(f"cannot write {path}: no directory {folder}")
    if os.path.isdir(path):
        raise EosUsageError(f"cannot write {path}: it is a directory; name a file such as {path}/history.jsonl")


def call_engine(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the engine; its argument errors (TypeError, ValueError) become one-line usage errors.

    Kafka's named errors (``KafkaError``) and the engine's ``IllegalStateError`` pass through:
    they already render as one named line. A node fault in the wrong state (restart a running
    broker, pause a paused one) and a bad setting (``ConfigError``) are usage errors too.
    """
    from engine.errors import ConfigError, IllegalStateError, KafkaError
    from engine.sim.node import IllegalNodeTransitionError

    try:
        return fn(*args, **kwargs)
    except (KafkaError, IllegalStateError):
        raise
    except (IllegalNodeTransitionError, ConfigError, TypeError, ValueError) as exc:
        raise EosUsageError(" ".join(str(exc).split())) from None
