"""An outbox event: what a service writes next to its business row, checked before it is written.

An event has an id (it travels in the record's ``id`` header, as Debezium's outbox router puts
it), an aggregate type (routed to a topic by :class:`Routes`), an aggregate id (the record key,
so every event of one aggregate lands in one partition, in order), an event type (the
``eventType`` header) and a JSON object as payload (the record value).

:func:`make_event` refuses, with :class:`~engine.errors.InvalidEventError` and one line saying
what to fix, an aggregate type with no route, an empty id or type, and a payload that is not a
JSON object of finite numbers, strings, booleans, nulls, lists and objects with string keys, or
that is larger than :data:`MAX_PAYLOAD_BYTES`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from engine.errors import InvalidEventError

__all__ = ["ID_HEADER", "MAX_PAYLOAD_BYTES", "TYPE_HEADER", "OutboxEvent", "Routes", "make_event"]

#: The record header that carries the event id (Debezium's outbox router default).
ID_HEADER = "id"
#: The record header that carries the event type.
TYPE_HEADER = "eventType"
#: The largest JSON payload a service accepts (bytes, UTF-8).
MAX_PAYLOAD_BYTES = 64 * 1024


@dataclasses.dataclass(frozen=True)
class OutboxEvent:
    """One row of the ``outbox`` table."""

    id: str
    aggregate_type: str
    aggregate_id: str
    event_type: str
    payload: str  #: the JSON text
    created_ms: int

    def headers(self) -> list[tuple[str, str]]:
        """Return the record headers: the event id and its type."""
        return [(ID_HEADER, self.id), (TYPE_HEADER, self.event_type)]


class Routes:
    """Aggregate type -> topic (Debezium's ``route.by.field``: one topic per aggregate type)."""

    def __init__(self, routes: Mapping[str, str]) -> None:
        if not isinstance(routes, Mapping) or not routes:
            raise TypeError(f"routes must be a non-empty dict of aggregate type -> topic, got {routes!r}")
        for k, v in routes.items():
            if not isinstance(k, str) or not k or not isinstance(v, str) or not v:
                raise TypeError(f"routes map names to topic names (both non-empty str); got {k!r} -> {v!r}")
        self._routes = dict(routes)

    def topic(self, aggregate_type: str) -> str:
        """Return the topic of an aggregate type, or raise InvalidEventError naming the known ones."""
        topic = self._routes.get(aggregate_type)
        if topic is None:
            known = ", ".join(sorted(self._routes))
            raise InvalidEventError(f"unknown aggregate type {aggregate_type!r}: no topic routes it; known: {known}")
        return topic

    def topics(self) -> list[str]:
        """Return the routed topics, sorted, once each."""
        return sorted(set(self._routes.values()))

    def __repr__(self) -> str:
        return f"Routes({self._routes!r})"


def _check_json(value: Any, where: str) -> None:
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidEventError(f"malformed payload: {where} is {value!r}; JSON has no NaN or infinity")
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json(v, f"{where}[{i}]")
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidEventError(f"malformed payload: {where} has key {k!r}; JSON object keys are strings")
            _check_json(v, f"{where}.{k}")
        return
    raise InvalidEventError(
        f"malformed payload: {where} is a {type(value).__name__}; use JSON values (str, number, bool, None, list, dict)"
    )


def make_event(
    routes: Routes,
    event_id: str,
    aggregate_type: str,
    aggregate_id: str,
    event_type: str,
    payload: Any,
    created_ms: int,
) -> tuple[OutboxEvent, str]:
    """Check an event and return it with its topic; raise InvalidEventError saying what to fix."""
    topic = routes.topic(aggregate_type)
    for name, value in (("aggregate_id", aggregate_id), ("event_type", event_type)):
        if not isinstance(value, str) or not value:
            raise InvalidEventError(f"{name} must be a non-empty str, got {value!r}")
    if not isinstance(payload, Mapping):
        raise InvalidEventError(f"malformed payload: it must be a JSON object (a dict), got {type(payload).__name__}")
    _check_json(payload, "payload")
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    size = len(text.encode())
    if size > MAX_PAYLOAD_BYTES:
        raise InvalidEventError(f"malformed payload: {size} bytes, more than the {MAX_PAYLOAD_BYTES} a service accepts")
    return OutboxEvent(event_id, aggregate_type, aggregate_id, event_type, text, created_ms), topic


def record_of(event: OutboxEvent) -> dict[str, Any]:
    """Return the ``produce`` arguments of an event: key = aggregate id, value = payload, id/type headers."""
    return {"key": event.aggregate_id, "value": event.payload, "headers": event.headers()}


def header(headers: Any, name: str) -> str | None:
    """Return one header's value from a record's headers (a list of pairs or a dict), or None."""
    if not headers:
        return None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    for k, v in pairs:
        if k == name:
            return v.decode() if isinstance(v, bytes) else v
    return None
