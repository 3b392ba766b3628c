"""A deduplicating payments-to-ledger processor, written as for a real Kafka.

It reads ``payments`` (key: the payment id, value: the payment) and books each payment once in
``ledger`` (same key, value ``booked <payment>``). Upstream may send a payment twice, on
purpose (a retrying payment gateway): the processor books a payment id once, however often it
arrives. What it has booked is its state, and the ledger is that state: on start it reads the
ledger to its end (read_committed) before it consumes a payment.

Each batch is one transaction, and the consumer's offsets go into the same transaction
(``send_offsets_to_transaction``), so a crash anywhere keeps both or neither.
``offsets_in_transaction=False`` is the bug: the consumer commits its offsets first, then the
transaction runs; a crash between the two skips the batch: those payments are never booked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

GROUP = "ledger"
TRANSACTIONAL_ID = "ledger-1"


def book(payment: bytes) -> bytes:
    """The business logic: the ledger entry of one payment."""
    return b"booked " + payment


class LedgerApp:
    """The processor: its two clients, and what it has booked.

    Parameters
    ----------
    config : dict
        The cluster's settings (``bootstrap.servers`` ...), shared by both clients.
    offsets_in_transaction : bool
        False: the bug (the consumer commits its offsets before the transaction).
    producer, consumer : optional
        Clients to use instead of new ones (a restarted process's, in a test).
    """

    def __init__(
        self,
        config: dict[str, Any],
        *,
        offsets_in_transaction: bool = True,
        producer: Producer | None = None,
        consumer: Consumer | None = None,
    ) -> None:
        self.config = config
        self.offsets_in_transaction = offsets_in_transaction
        self.producer = producer or Producer({**config, "transactional.id": TRANSACTIONAL_ID})
        self.consumer = consumer or Consumer(
            {
                **config,
                "group.id": GROUP,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.booked: set[bytes] = set()

    def start(self) -> LedgerApp:
        """Fence any earlier instance, load what the ledger holds, then subscribe to payments."""
        self.producer.init_transactions(60)
        self.booked = self._load_booked()
        self.consumer.subscribe(["payments"])
        return self

    def _load_booked(self) -> set[bytes]:
        reader = Consumer(
            {
                **self.config,
                "group.id": "ledger-loader",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        try:
            _low, high = reader.get_watermark_offsets(TopicPartition("ledger", 0), 30)
            reader.assign([TopicPartition("ledger", 0, 0)])
            booked: set[bytes] = set()
            idle = 0
            while idle < 3:
                batch = [m for m in reader.consume(100, 1.0) if m.error() is None]
                booked.update(m.key() for m in batch)
                idle = 0 if batch else idle + 1
                if batch and batch[-1].offset() + 1 >= high:
                    break
            return booked
        finally:
            reader.close()

    def run(
        self,
        *,
        batches: int | None = None,
        idle_polls: int = 60,
        after_produce: Callable[[int], None] = lambda n: None,
    ) -> int:
        """Book payments until ``batches`` were committed or the input is idle; return the entries written.

        ``after_produce(n)`` is called after the n-th record of a batch was produced (where a
        test may kill the process).
        """
        written, committed, idle = 0, 0, 0
        while (batches is None or committed < batches) and idle < idle_polls:
            payments = [m for m in self.consumer.consume(10, 1.0) if m.error() is None]
            if not payments:
                idle += 1
                continue
            idle = 0
            if not self.offsets_in_transaction:
                self.consumer.commit(asynchronous=False)  # the bug: the offsets move before the ledger does
            self.producer.begin_transaction()
            fresh: set[bytes] = set()
            for n, m in enumerate(payments, 1):
                if m.key() in self.booked or m.key() in fresh:
                    continue  # a duplicate from upstream: booked already
                self.producer.produce("ledger", key=m.key(), value=book(m.value()))
                fresh.add(m.key())
                after_produce(n)
            if self.offsets_in_transaction:
                self.producer.send_offsets_to_transaction(
                    self.consumer.position(self.consumer.assignment()), self.consumer.consumer_group_metadata(), 30
                )
            try:
                self.producer.commit_transaction(30)
            except KafkaException as exc:
                if exc.args[0].txn_requires_abort():
                    self.producer.abort_transaction(30)
                    self._rewind()
                    continue
                raise
            self.booked |= fresh
            written += len(fresh)
            committed += 1
        return written

    def _rewind(self) -> None:
        """After an abort, read again from the committed offsets (the batch was not booked)."""
        committed = self.consumer.committed(self.consumer.assignment(), 30)
        for tp in committed:
            self.consumer.seek(tp if tp.offset >= 0 else TopicPartition(tp.topic, tp.partition, 0))

    def close(self) -> None:
        """Leave the group and close the producer."""
        self.consumer.close()
        self.producer.close()
