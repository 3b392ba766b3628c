"""Where Kafka's transactions stop: the transactional outbox, its relays, and the idempotent database sink.

- :mod:`engine.outbox.schema`: the tables (business rows, ``outbox``, the change log, the sink's
  ``processed_messages``, effects and stored offsets).
- :mod:`engine.outbox.event`: an outbox event, its validation, and the route from aggregate type to topic.
- :mod:`engine.outbox.service`: a service that writes a business row and its event in one database transaction.
- :mod:`engine.outbox.relay`: the polling relay and the log tailer (Debezium's way), at-least-once by design.
- :mod:`engine.outbox.sink`: the idempotent consumer that applies each event once and stores its offsets.
"""

from engine.outbox.event import OutboxEvent, Routes
from engine.outbox.relay import LogTailer, PollingRelay
from engine.outbox.service import OrderService, Outbox
from engine.outbox.sink import IdempotentSink

__all__ = ["IdempotentSink", "LogTailer", "OrderService", "Outbox", "OutboxEvent", "PollingRelay", "Routes"]
