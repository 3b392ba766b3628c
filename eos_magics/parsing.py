"""Small argument helpers shared by the magic families (on top of IPython's ``magic_arguments``).

Every helper raises :class:`~eos_magics.errors.EosUsageError` with one line saying what to type.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eos_magics.errors import EosUsageError

__all__ = ["key_values", "milliseconds", "phrase", "topic_partitions"]


def key_values(pairs: Iterable[str] | None, what: str = "--config") -> dict[str, str]:
    """``["min.insync.replicas=2", "acks=all"]`` → a dict; values stay strings (the engine coerces)."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise EosUsageError(f"{what} takes KEY=VALUE pairs, e.g. {what} linger.ms=5; got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def topic_partitions(specs: Iterable[str] | None) -> list[tuple[str, int]]:
    """``["orders:0", "orders:1"]`` (or ``"orders:0,orders:1"``) → ``[("orders", 0), ("orders", 1)]``."""
    out: list[tuple[str, int]] = []
    for spec in specs or ():
        for item in spec.split(","):
            topic, sep, part = item.strip().rpartition(":")
            if not sep or not topic or not part.isdigit():
                raise EosUsageError(f"name partitions as TOPIC:PARTITION, e.g. orders:0; got {item!r}")
            out.append((topic, int(part)))
    return out


def one_of(value: Any, choices: Iterable[str], what: str) -> str:
    """Return ``value`` if it is one of ``choices``, else a usage error listing them."""
    from eos_magics.errors import did_you_mean

    options = list(choices)
    if value not in options:
        raise EosUsageError(f"{what} must be one of {', '.join(options)}, got {value!r}{did_you_mean(value, options)}")
    return value


def phrase(words: str | Iterable[str] | None) -> str:
    """Words of a name with spaces, as typed: ``run "a: b"`` and ``run a: b`` both give ``a: b``.

    IPython's argument splitter keeps quotes it did not need (``'"a: b"'``), so a pair of
    matching quotes around the whole name is taken off here.
    """
    text = (words if isinstance(words, str) else " ".join(words or ())).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    return text


#: Units ``%eos_time run`` takes, in milliseconds.
_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000}


def milliseconds(text: str, how: str) -> int:
    """``"500"``, ``"500ms"``, ``"1s"``, ``"1.5s"``, ``"2m"`` → whole simulated milliseconds."""
    t = text.strip().lower()
    unit = next((u for u in sorted(_UNITS, key=len, reverse=True) if t.endswith(u)), "ms")
    number = t[: -len(unit)] if t.endswith(unit) else t
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        value = -1.0
    if value < 0 or value != int(value) or not number:
        raise EosUsageError(
            f"{how} takes simulated milliseconds: a whole number (500) or with a unit (500ms, 1s, 2m); got {text!r}"
        )
    return int(value)
