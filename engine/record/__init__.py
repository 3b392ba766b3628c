"""Record the client history of real Kafka clients, for the checker of :mod:`engine.check`.

Role
----
The simulator's clients are recorded by :class:`engine.check.ClientHistory`; an application
that runs against a real Kafka (a broker, librdkafka's mock cluster, the wire server) wraps its
clients instead, and the same checker judges what they did::

    rec = Recorder()
    producer = RecordingProducer({"bootstrap.servers": servers, "transactional.id": "t"}, rec)
    consumer = RecordingConsumer({"bootstrap.servers": servers, "group.id": "g"}, rec)
    ...
    rec.check()  # or rec.write("run.jsonl"), then: eos check run.jsonl

:class:`Recorder` is here; the wrappers are in :mod:`engine.record.confluent`
(confluent-kafka) and :mod:`engine.record.kafka_python` (kafka-python), imported on first use
so that ``import engine.record`` needs neither library (the ``test`` extra pins both).

Invariants
----------
Wrapping changes nothing the application sees: every call goes to the real client with the
same arguments, the application's callbacks are called with the same arguments, and the
recorder's own failures never raise into the application.

What it does not do
-------------------
It runs outside the deterministic simulation (real clients, real time): its histories are
judged, never replayed.
"""

from __future__ import annotations

import importlib
from typing import Any

from engine.record.recorder import Recorder

__all__ = ["Recorder", "RecordingConsumer", "RecordingProducer", "recording"]

#: Names exported from the confluent-kafka adapter, imported on first use.
_CONFLUENT = ("RecordingConsumer", "RecordingProducer")


def recording(client: Any, recorder: Recorder) -> Any:
    """Wrap an existing confluent-kafka or kafka-python producer or consumer so that ``recorder`` records it.

    Raises
    ------
    TypeError
        If ``client`` is none of those.
    """
    library = type(client).__module__.split(".")[0]
    if library == "confluent_kafka" or library == "cimpl":
        return importlib.import_module("engine.record.confluent").recording(client, recorder)
    if library == "kafka":
        return importlib.import_module("engine.record.kafka_python").recording(client, recorder)
    raise TypeError(f"recording() wraps a confluent-kafka or kafka-python client, not {type(client).__name__}")


def __getattr__(name: str) -> Any:
    if name in _CONFLUENT:
        return getattr(importlib.import_module("engine.record.confluent"), name)
    raise AttributeError(f"module 'engine.record' has no attribute {name!r}")
