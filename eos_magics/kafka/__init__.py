"""A drop-in for confluent-kafka, bound to a simulated cluster: unchanged confluent-kafka code runs on the engine.

>>> import engine, eos_magics.kafka as kafka
>>> cluster = kafka.use(engine.Cluster(seed=1, brokers=3))
>>> cluster.create_topic("orders", partitions=1)
>>> p = kafka.Producer({"bootstrap.servers": "localhost:9092", "enable.idempotence": True})
>>> p.produce("orders", b"o-1")
>>> p.flush()
0

or, for a module written for confluent-kafka, without changing it::

    with eos_magics.kafka.patch(cluster):
        import my_app            # its "from confluent_kafka import Producer" gets the drop-in
        my_app.main()

The public names are confluent-kafka's (``Producer``, ``Consumer``, ``TopicPartition``, ``Message``,
``KafkaError``, ``KafkaException``, ``OFFSET_*``, ``TIMESTAMP_*``, ``admin.AdminClient`` ...), plus:

* :func:`use` -- make a cluster current (and register it by name) for new clients;
* :func:`patch` -- context manager and decorator: ``confluent_kafka`` *is* this module inside;
* :func:`current`, :func:`register` -- the binding (:mod:`.binding`).

Which cluster a client uses: ``bootstrap.servers`` ``eos://NAME`` or a registered NAME picks that
cluster; anything else means the current one. What is not simulated is listed in
:data:`~eos_magics.kafka.unsupported.NOT_SUPPORTED` and docs/testing.md.
"""

from __future__ import annotations

from typing import Any

from engine.client.message import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, OFFSET_STORED
from eos_magics.kafka import admin
from eos_magics.kafka.binding import NoClusterError, current, register, use
from eos_magics.kafka.consumer import Consumer
from eos_magics.kafka.errors import KafkaError, KafkaException
from eos_magics.kafka.messages import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Message,
    TopicPartition,
)
from eos_magics.kafka.model import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    IsolationLevel,
    Node,
)
from eos_magics.kafka.patching import patch
from eos_magics.kafka.producer import Producer
from eos_magics.kafka.unsupported import NOT_SUPPORTED, NotSimulatedError

__all__ = [
    "NOT_SUPPORTED",
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TIMESTAMP_NOT_AVAILABLE",
    "Consumer",
    "ConsumerGroupState",
    "ConsumerGroupTopicPartitions",
    "ConsumerGroupType",
    "IsolationLevel",
    "KafkaError",
    "KafkaException",
    "Message",
    "NoClusterError",
    "Node",
    "NotSimulatedError",
    "Producer",
    "TopicPartition",
    "admin",
    "current",
    "libversion",
    "patch",
    "register",
    "use",
    "version",
]

#: The confluent-kafka and librdkafka versions whose surface this drop-in follows.
_VERSION = ("2.16.1", 0x02100100)
_LIBVERSION = ("2.16.0", 0x021000FF)


def version() -> tuple[str, int]:
    """Return the confluent-kafka version this drop-in follows, as ``confluent_kafka.version()`` does."""
    return _VERSION


def libversion() -> tuple[str, int]:
    """Return the librdkafka version this drop-in follows, as ``confluent_kafka.libversion()`` does."""
    return _LIBVERSION


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    why = NOT_SUPPORTED.get(f"confluent_kafka.{name}", "it is not part of the simulated surface")
    raise AttributeError(f"confluent_kafka.{name} is not simulated by eos_magics.kafka: {why}")
