"""Build kio's versioned message objects from one plain description that serves every version.

kio (the codec, generated from Kafka's JSON message definitions) has one frozen dataclass per API
version, and the fields differ between versions: ``throttle_time`` appears in v1, ``log_start_offset``
in v5, ``leader_epoch`` in v9... The handlers in this package describe an answer once, as nested
dicts holding every field any version may carry, and :func:`make` shapes that description into the
dataclass of the version the client asked for: fields the version lacks are left out, fields it
has but the description does not give take the schema's default (or zero, empty, null), ints become
kio's ``ErrorCode`` and ``timedelta`` where the schema wants them, and nested lists become nested
entities. So no handler writes per-version layouts, and the codec stays the library's.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode

#: One field of an entity: (name, kind, nested entity class or None, whether it may be null, default)
_Field = tuple[str, str, Any, bool, Any]

_PLANS: dict[type, tuple[_Field, ...]] = {}
_MISSING = dataclasses.MISSING


def _plan(cls: type) -> tuple[_Field, ...]:
    """Return how to fill each field of ``cls`` (cached per class)."""
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    hints = typing.get_type_hints(cls)
    fields: list[_Field] = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        nullable = False
        args = typing.get_args(hint)
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            nullable = type(None) in args
            hint = next(a for a in args if a is not type(None))
            args = typing.get_args(hint)
        if typing.get_origin(hint) is tuple:
            inner = args[0]
            kind = "entities" if dataclasses.is_dataclass(inner) else "tuple"
            nested = inner if kind == "entities" else None
        elif dataclasses.is_dataclass(hint):
            kind, nested = "entity", hint
        elif isinstance(hint, type) and issubclass(hint, KioErrorCode):
            kind, nested = "error", None
        elif isinstance(hint, type) and issubclass(hint, datetime.timedelta):
            kind, nested = "timedelta", None
        elif isinstance(hint, type) and issubclass(hint, datetime.datetime):
            kind, nested = "datetime", None
        elif isinstance(hint, type) and issubclass(hint, bool):
            kind, nested = "bool", None
        elif isinstance(hint, type) and issubclass(hint, (bytes, bytearray)):
            kind, nested = "bytes", None
        elif isinstance(hint, type) and issubclass(hint, str):
            kind, nested = "str", None
        else:
            kind, nested = "int", None
        default = f.default if f.default is not _MISSING else _MISSING
        if default is _MISSING and f.default_factory is not _MISSING:
            default = f.default_factory()
        fields.append((f.name, kind, nested, nullable, default))
    plan = _PLANS[cls] = tuple(fields)
    return plan


_ZERO: dict[str, Any] = {
    "int": 0,
    "bool": False,
    "str": "",
    "bytes": b"",
    "tuple": (),
    "entities": (),
    "error": KioErrorCode.none,
    "timedelta": datetime.timedelta(0),
}


def make(cls: type, description: dict[str, Any]) -> Any:
    """Return an instance of the kio entity ``cls`` shaped from ``description`` (see the module doc)."""
    values: dict[str, Any] = {}
    for name, kind, nested, nullable, default in _plan(cls):
        if name in description:
            v = description[name]
            if v is None:
                values[name] = None if nullable else (default if default is not _MISSING else _zero(kind, nested))
            else:
                values[name] = _convert(kind, nested, v)
        elif default is not _MISSING:
            continue
        elif nullable:
            values[name] = None
        else:
            values[name] = _zero(kind, nested)
    return cls(**values)


def _zero(kind: str, nested: Any) -> Any:
    """The empty value of a field that the description leaves out (or gives as None where null is not allowed)."""
    return make(nested, {}) if kind == "entity" else _ZERO[kind]


def _convert(kind: str, nested: Any, v: Any) -> Any:
    if kind == "entities":
        return tuple(make(nested, x) for x in v)
    if kind == "entity":
        return make(nested, v)
    if kind == "error":
        return KioErrorCode(int(v))
    if kind == "timedelta":
        return v if isinstance(v, datetime.timedelta) else datetime.timedelta(milliseconds=int(v))
    if kind == "datetime":
        if isinstance(v, datetime.datetime):
            return v
        return datetime.datetime.fromtimestamp(int(v) / 1000, tz=datetime.UTC)
    if kind == "tuple":
        return tuple(v)
    return v


def millis(v: Any) -> int:
    """Return a duration field of a request (kio's ``timedelta``, or an int) in whole milliseconds."""
    if isinstance(v, datetime.timedelta):
        return int(v.total_seconds() * 1000)
    return int(v)


def answer_error(answer: Any) -> Any:
    """The error code of an engine answer; no answer at all reads as REQUEST_TIMED_OUT."""
    from engine.errors import ErrorCode

    return ErrorCode.REQUEST_TIMED_OUT if answer is None else answer.error


def every_partition(topics: Any, code: Any) -> list[dict[str, Any]]:
    """The per-partition answer of a request whose partitions share one outcome (commits, txn offsets)."""
    return [
        {
            "name": t.name,
            "partitions": [{"partition_index": p.partition_index, "error_code": code} for p in t.partitions],
        }
        for t in topics
    ]
