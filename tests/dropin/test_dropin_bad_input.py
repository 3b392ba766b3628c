"""Bad input to the drop-in: one clear line each, as confluent-kafka reports it, and the cluster keeps working.

Where confluent-kafka is installed, the same call is made on it first and both must raise the same
exception type (and, for configuration errors, the same code), so the drop-in's reactions are
confluent-kafka's, not guesses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import eos_magics.kafka as kafka
from eos_magics.kafka import KafkaError, KafkaException, NotSimulatedError, TopicPartition

ck = pytest.importorskip("confluent_kafka", reason="compares with the real library")

REAL_PRODUCER = {"bootstrap.servers": "localhost:1", "socket.timeout.ms": 10, "log_level": 0}


def raised(call: Callable[[], Any]) -> BaseException:
    with pytest.raises(Exception) as caught:
        call()
    return caught.value


def one_line(exc: BaseException) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    assert "\n" not in text, text
    return text


def still_works(cluster: Any) -> None:
    p = kafka.Producer({})
    got: list[Any] = []
    p.produce("t", b"after", on_delivery=lambda e, m: got.append(e))
    assert p.flush(10) == 0 and got == [None]


@pytest.mark.parametrize(
    "config",
    [{"no.such.key": 1}, {"linger.ms": "soon"}, {"acks": "maybe"}, {"on_delivery": 5}],
    ids=["unknown key", "bad int", "bad acks", "bad callback"],
)
def test_bad_config_is_a_kafka_exception_with_invalid_arg_as_in_confluent(config: dict[str, Any], cluster: Any) -> None:
    real = raised(lambda: ck.Producer({**REAL_PRODUCER, **config}))
    ours = raised(lambda: kafka.Producer(config))
    assert isinstance(real, ck.KafkaException) and isinstance(ours, KafkaException)
    assert ours.args[0].code() == real.args[0].code() == KafkaError._INVALID_ARG
    one_line(ours)
    if "no.such.key" in config:
        assert ours.args[0].str() == real.args[0].str() == 'No such configuration property: "no.such.key"'
    still_works(cluster)


@pytest.mark.parametrize(
    ("name", "real_call", "our_call"),
    [
        ("config not a dict", lambda: ck.Producer("x"), lambda: kafka.Producer("x")),
        ("no config", lambda: ck.Producer(), lambda: kafka.Producer()),
        ("topic not a str", lambda p: p.produce(123), lambda p: p.produce(123)),
        ("value an int", lambda p: p.produce("t", 123), lambda p: p.produce("t", 123)),
        ("key an int", lambda p: p.produce("t", b"v", key=5), lambda p: p.produce("t", b"v", key=5)),
        (
            "partition a str",
            lambda p: p.produce("t", b"v", partition="a"),
            lambda p: p.produce("t", b"v", partition="a"),
        ),
        ("headers an int", lambda p: p.produce("t", b"v", headers=5), lambda p: p.produce("t", b"v", headers=5)),
        ("unknown keyword", lambda p: p.produce("t", b"v", bogus=1), lambda p: p.produce("t", b"v", bogus=1)),
        ("flush timeout a str", lambda p: p.flush("a"), lambda p: p.flush("a")),
        ("TopicPartition topic", lambda: ck.TopicPartition(5), lambda: kafka.TopicPartition(5)),
        ("TopicPartition partition", lambda: ck.TopicPartition("t", "a"), lambda: kafka.TopicPartition("t", "a")),
    ],
)
def test_wrong_types_raise_type_error_as_in_confluent(name: str, real_call: Any, our_call: Any, cluster: Any) -> None:
    takes_producer = real_call.__code__.co_argcount == 1
    real_p = ck.Producer(REAL_PRODUCER) if takes_producer else None
    real = raised(lambda: real_call(real_p) if takes_producer else real_call())
    ours_p = kafka.Producer({}) if takes_producer else None
    ours = raised(lambda: our_call(ours_p) if takes_producer else our_call())
    assert type(real) is TypeError, (name, real)
    assert type(ours) is TypeError, (name, ours)
    one_line(ours)
    still_works(cluster)


def test_consumer_without_group_id_is_refused_as_in_confluent(cluster: Any) -> None:
    real = raised(lambda: ck.Consumer({"bootstrap.servers": "localhost:1"}))
    ours = raised(lambda: kafka.Consumer({}))
    assert type(real) is type(ours) is ValueError and str(ours) == str(real)
    c = kafka.Consumer({"group.id": "g"})
    with pytest.raises(TypeError):
        c.subscribe("t")  # a bare str, not a list
    with pytest.raises(TypeError):
        c.seek("t")
    with pytest.raises(ValueError, match="message and offsets"):
        c.commit(message=kafka.Message(topic="t", offset=1), offsets=[TopicPartition("t", 0, 1)])
    still_works(cluster)


@pytest.mark.parametrize(
    "call",
    [
        lambda: kafka.Producer({}).set_sasl_credentials("user", "secret"),
        lambda: kafka.admin.AdminClient({}).delete_records([TopicPartition("t", 0, 0)]),
        lambda: kafka.Consumer({"group.id": "g"}).set_sasl_credentials("user", "secret"),
        lambda: kafka.admin.AdminClient({}).create_partitions([]),
        lambda: kafka.Message().delivery_count(),
        lambda: kafka.Producer({"partitioner": "consistent_random"}),
        lambda: kafka.Consumer({"group.id": "g", "offset.store.method": "file"}),
    ],
    ids=["sasl", "delete_records", "consumer sasl", "create_partitions", "delivery_count", "partitioner", "file-store"],
)
def test_a_call_with_no_meaning_raises_one_line_saying_so(call: Any, cluster: Any) -> None:
    exc = raised(call)
    assert isinstance(exc, NotSimulatedError) and isinstance(exc, NotImplementedError)
    assert exc.args[0].code() == KafkaError._NOT_IMPLEMENTED
    text = one_line(exc)
    assert "not supported by the eos-magics simulation" in text and "docs/testing.md" in text
    still_works(cluster)


def test_harmless_librdkafka_settings_are_accepted(cluster: Any) -> None:
    harmless = {
        "socket.keepalive.enable": True,
        "statistics.interval.ms": 1000,
        "debug": "metadata",
        "log_level": 0,
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "p",
        "compression.type": "lz4",
        "group.id": "ignored by a producer",
        "partitioner": "murmur2_random",
        "logger": object(),
    }
    p = kafka.Producer(harmless)
    p.produce("t", b"x")
    assert p.flush(10) == 0
    real = ck.Producer({**REAL_PRODUCER, **{k: v for k, v in harmless.items() if k != "logger"}})
    assert real is not None  # confluent-kafka accepts them too
