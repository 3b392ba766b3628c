"""An event publisher and a read_committed consumer group, written as for a real Kafka.

``publish`` sends events with an idempotent producer and counts delivery reports; ``read_all``
reads them back in a consumer group with read_committed. An idempotent producer's retries never
duplicate a record, even when an acknowledgement is lost.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer


def publish(config: dict[str, Any], events: list[bytes], topic: str = "events") -> dict[str, int]:
    """Send ``events``; return how many delivery reports said delivered and how many said failed."""
    counts = {"delivered": 0, "failed": 0}

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        counts["failed" if err is not None else "delivered"] += 1

    producer = Producer({**config, "enable.idempotence": True, "linger.ms": 5})
    for i, event in enumerate(events):
        producer.produce(topic, key=b"user-%d" % (i % 4), value=event, on_delivery=on_delivery)
        producer.poll(0)
    producer.flush(60)
    return counts


def read_all(config: dict[str, Any], expected: int, topic: str = "events", group: str = "readers") -> list[bytes]:
    """Read ``topic`` in a consumer group until ``expected`` events arrived (or it stays idle)."""
    consumer = Consumer(
        {**config, "group.id": group, "isolation.level": "read_committed", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    idle = 0
    try:
        while len(got) < expected and idle < 10:
            batch = [m.value() for m in consumer.consume(100, 1.0) if m.error() is None]
            idle = 0 if batch else idle + 1
            got += batch
    finally:
        consumer.close()
    return got
