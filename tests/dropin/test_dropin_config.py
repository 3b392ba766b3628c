"""The drop-in's configuration tables against librdkafka's property names, and what they do to the engine's clients.

Every property name the drop-in knows must be one confluent-kafka accepts (checked with the
installed library: it must not answer "No such configuration property"), and every one of them
must be classified exactly where :mod:`eos_magics.kafka.config` says: mapped to the engine,
harmless and ignored, not modelled (refused), a callback, or a client flag. Then the mapping is
checked on real clients: aliases, librdkafka's defaults, keys of the other client kind.
"""

from __future__ import annotations

from typing import Any

import pytest

import eos_magics.kafka as kafka
from eos_magics.kafka import config as cfg
from eos_magics.kafka.config_keys import LIBRDKAFKA_KEYS

ck = pytest.importorskip("confluent_kafka", reason="compares with the real library")

OTHER = {"bootstrap.servers", "metadata.broker.list", "default.topic.config"}


def classified(key: str) -> list[str]:
    tables = {
        "producer": cfg.PRODUCER_KEYS,
        "consumer": cfg.CONSUMER_KEYS,
        "unmodelled": cfg.UNMODELLED,
        "callbacks": cfg.CALLBACKS,
        "flags": cfg.CLIENT_FLAGS,
    }
    found = [name for name, table in tables.items() if key in table]
    if cfg._ignored(key):
        found.append("ignored")
    if key in OTHER:
        found.append("other")
    return found


def test_every_librdkafka_key_is_classified() -> None:
    missing = sorted(k for k in LIBRDKAFKA_KEYS if not classified(k))
    assert missing == []
    both_ways = sorted(k for k in LIBRDKAFKA_KEYS if "ignored" in classified(k) and len(classified(k)) > 1)
    assert both_ways == []


def test_every_key_named_in_the_tables_is_librdkafkas() -> None:
    named = set(cfg.PRODUCER_KEYS) | set(cfg.CONSUMER_KEYS) | set(cfg.UNMODELLED) | set(cfg.CALLBACKS)
    named |= set(cfg.CLIENT_FLAGS) | OTHER | {k for k in cfg.IGNORED if not k.endswith(".")}
    assert sorted(named - LIBRDKAFKA_KEYS) == []
    for prefix in (k for k in cfg.IGNORED if k.endswith(".")):
        assert any(k.startswith(prefix) for k in LIBRDKAFKA_KEYS), prefix


def test_confluent_kafka_accepts_every_key_of_the_table_and_refuses_others() -> None:
    def refused(key: str) -> bool:
        for make in (ck.Producer, ck.Consumer):
            try:
                make({key: "\x00not a value\x00", "group.id": "g", "log_level": 0})
            except ck.KafkaException as exc:
                if exc.args[0].str().startswith("No such configuration property"):
                    continue
                return False
            except Exception:  # any other complaint means the key is known
                return False
            return False
        return True

    assert sorted(k for k in LIBRDKAFKA_KEYS if refused(k)) == []
    assert refused("max.block.ms") and refused("no.such.key")  # Java-only and made-up keys


def test_aliases_defaults_and_other_kinds_keys(cluster: Any) -> None:
    p = kafka.Producer({"queue.buffering.max.ms": 7, "message.timeout.ms": 50_000, "group.id": "x", "acks": 1})
    c = p.engine.config
    assert (c.linger_ms, c.delivery_timeout_ms, c.acks, c.enable_idempotence) == (7, 50_000, 1, False)
    t = kafka.Producer({"transactional.id": "tx"}).engine.config
    assert t.enable_idempotence and t.transactional_id == "tx"
    consumer = kafka.Consumer({"group.id": "g", "auto.offset.reset": "smallest", "acks": "all"}).engine.config
    assert (consumer.auto_offset_reset, consumer.enable_auto_commit, consumer.isolation_level) == (
        "earliest",
        True,
        "read_committed",
    )
    nested = kafka.Consumer({"group.id": "g2", "default.topic.config": {"auto.offset.reset": "largest"}})
    assert nested.engine.config.auto_offset_reset == "latest"
    shared = {"client.id": "app"}
    names = {
        kafka.Producer(shared).engine.name,
        kafka.Producer(shared).engine.name,
        kafka.Consumer({**shared, "group.id": "g"}).engine.name,
    }
    assert names == {"app", "app-2", "app-3"}  # confluent-kafka lets clients share a client.id


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_production_compression_type_produces_and_reads_back(cluster: Any, codec: str) -> None:
    # Production configs set compression.type; the drop-in accepts every codec librdkafka has (the
    # engine stores records, not bytes) and the records are read back, transactional ones included.
    from eos_magics.kafka import Consumer, Producer

    p = Producer({"compression.type": codec, "transactional.id": f"z-{codec}"})
    p.init_transactions()
    p.begin_transaction()
    for i in range(5):
        p.produce("out", value=f"{codec}-{i}".encode(), partition=0)
    p.commit_transaction()
    c = Consumer({"group.id": codec, "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.subscribe(["out"])
    got = [m for m in c.consume(10, timeout=10) if m.error() is None]
    assert [(m.offset(), m.value()) for m in got] == [(i, f"{codec}-{i}".encode()) for i in range(5)]
    c.close()
