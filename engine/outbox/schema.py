"""The SQL of the outbox pattern: a service's tables and a sink's tables (SQLite dialect).

Service database (``<service>.sqlite``)
--------------------------------------
``orders``          the business rows (one per order)
``outbox``          one row per event: id, aggregate type, aggregate id, event type, JSON payload,
                    created time; ``sent_ms`` is set by the polling relay once Kafka acknowledged it
``outbox_changes``  the change log a log tailer reads (Debezium reads the database's own log; a
                    trigger feeds this table instead): one row per *insert* into ``outbox``, so an
                    event inserted and deleted in the same transaction (the log-tailing mode) still
                    reaches it, while ``outbox`` itself stays empty
``relay_position``  how far each log tailer got in ``outbox_changes`` (its stored position)

Sink database (``<sink>.sqlite``)
---------------------------------
``processed_messages``  the event ids already applied (the idempotent consumer's memory)
``shipments``           the effect: one shipment per order event applied
``consumer_offsets``    the next offset to read per topic partition, written in the same
                        transaction as the effect (Kafka's committed offsets are not needed)
"""

from __future__ import annotations

#: The outbox tables any service adds to its own: ``outbox``, ``outbox_changes`` and its trigger, ``relay_position``.
OUTBOX = """
CREATE TABLE IF NOT EXISTS outbox (
    id              TEXT PRIMARY KEY,
    aggregate_type  TEXT NOT NULL,
    aggregate_id    TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    payload         TEXT NOT NULL,
    created_ms      INTEGER NOT NULL,
    sent_ms         INTEGER
);
CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox (sent_ms, created_ms, id);
CREATE TABLE IF NOT EXISTS outbox_changes (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL,
    aggregate_type  TEXT NOT NULL,
    aggregate_id    TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    payload         TEXT NOT NULL,
    created_ms      INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS outbox_capture AFTER INSERT ON outbox BEGIN
    INSERT INTO outbox_changes (id, aggregate_type, aggregate_id, event_type, payload, created_ms)
    VALUES (NEW.id, NEW.aggregate_type, NEW.aggregate_id, NEW.event_type, NEW.payload, NEW.created_ms);
END;
CREATE TABLE IF NOT EXISTS relay_position (
    relay  TEXT PRIMARY KEY,
    seq    INTEGER NOT NULL
);
"""

#: The order service: its ``orders`` table and the outbox tables.
SERVICE = (
    """
CREATE TABLE IF NOT EXISTS orders (
    order_id    TEXT PRIMARY KEY,
    customer    TEXT NOT NULL,
    amount      INTEGER NOT NULL,
    status      TEXT NOT NULL,
    created_ms  INTEGER NOT NULL
);
"""
    + OUTBOX
)

SINK = """
CREATE TABLE IF NOT EXISTS processed_messages (
    event_id      TEXT PRIMARY KEY,
    topic         TEXT NOT NULL,
    partition     INTEGER NOT NULL,
    "offset"      INTEGER NOT NULL,
    processed_ms  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS shipments (
    shipment_id  INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    created_ms   INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS consumer_offsets (
    topic        TEXT NOT NULL,
    partition    INTEGER NOT NULL,
    next_offset  INTEGER NOT NULL,
    PRIMARY KEY (topic, partition)
);
"""
