"""An order-to-invoice copier, written as for a real Kafka: read ``orders``, write ``invoices``, exactly once.

Each batch of orders becomes invoices in one transaction, and the consumer's offsets go into the
same transaction (``send_offsets_to_transaction``), so a crash anywhere either keeps both or
neither. ``offsets_in_transaction=False`` is the classic bug: the offsets are committed by the
consumer after the transaction, so a crash between the two re-reads the batch and invoices it twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer


def invoice(order: bytes) -> bytes:
    """The business logic: one invoice per order."""
    return b"invoice-for-" + order


def run(
    config: dict[str, Any],
    *,
    batches: int | None = None,
    offsets_in_transaction: bool = True,
    after_commit: Callable[[], None] = lambda: None,
    idle_polls: int = 3,
) -> int:
    """Copy orders to invoices until ``batches`` were committed or the input is idle; return invoices written."""
    consumer = Consumer(
        {
            **config,
            "group.id": "invoicer",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = Producer({**config, "transactional.id": "invoicer-1"})
    producer.init_transactions(30)
    consumer.subscribe(["orders"])
    written, committed, idle = 0, 0, 0
    try:
        while (batches is None or committed < batches) and idle < idle_polls:
            orders = [m for m in consumer.consume(10, 1.0) if m.error() is None]
            if not orders:
                idle += 1
                continue
            idle = 0
            producer.begin_transaction()
            for m in orders:
                producer.produce("invoices", key=m.key(), value=invoice(m.value()))
            if offsets_in_transaction:
                producer.send_offsets_to_transaction(
                    consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
                )
            try:
                producer.commit_transaction(30)
            except KafkaException as exc:
                if exc.args[0].txn_requires_abort():
                    producer.abort_transaction(30)
                    continue
                raise
            written += len(orders)
            committed += 1
            after_commit()  # where the process may die
            if not offsets_in_transaction:
                consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return written
