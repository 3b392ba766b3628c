"""Compressed produce over the wire: gzip, snappy, lz4 and zstd from real clients, read back.

Goal: a batch a real client compresses is either appended and readable, offsets and values
intact, or refused with Kafka's error and never acknowledged: no clean delivery report for records
that no consumer can read.

Method: confluent-kafka (librdkafka 2.16), aiokafka (cramjam codecs) and kafka-python (the codecs
it can load here) produce compressible values with ``compression.type`` set; the leader's log shows
that the batches came compressed (their wire size is a fraction of the values'), and consumers read
every value back at offsets 0.. under read_uncommitted and read_committed. A transactional lz4
producer commits one transaction and aborts another. Undecodable batches go over a raw socket
(framed here with a correct CRC, so the codec is what refuses them): Kafka 4.4 answers
UNKNOWN_SERVER_ERROR for bytes that do not inflate and for a codec id it does not define (measured
against Kafka 4.4; see docs/wire.md), with ``acks=0`` it closes the connection, and nothing is
appended.
"""

from __future__ import annotations

import datetime
import struct
import time
from typing import Any

import kafka.codec
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer
from crc32c import crc32c
from kafka import KafkaConsumer, KafkaProducer
from kio.index import load_request_schema

from engine.log.records import RecordBatch
from engine.serve.realtime_server import ServedCluster
from engine.wire import codecs, records

pytestmark = pytest.mark.slow

CODECS = ["gzip", "snappy", "lz4", "zstd"]
N = 12


def _value(codec: str, i: int) -> bytes:
    """A compressible value (librdkafka sends a batch uncompressed when compression does not pay)."""
    return f"{codec}-{i}-".encode() + b"x" * 400


def _wire_sizes(server: ServedCluster, topic: str) -> tuple[int, int]:
    """(bytes the data batches took on the wire, bytes of their values) in the leader's log."""
    with server.locked() as cluster:
        log = cluster.brokers[cluster.leader(topic, 0)].replicas[(topic, 0)].log
        data = [b for b in log.batches if not b.is_control]
        return sum(b.size_bytes for b in data), sum(len(v) for b in data for v in b.values)


def _assert_compressed(server: ServedCluster, topic: str) -> None:
    wire, values = _wire_sizes(server, topic)
    assert values > 0
    assert wire < values / 2, f"the batches came uncompressed ({wire} bytes on the wire for {values} of values)"


def _consume(config: dict[str, Any], topic: str, isolation: str, expect: int) -> list[tuple[int, bytes]]:
    c = Consumer(
        {
            **config,
            "group.id": f"read-{isolation}",
            "auto.offset.reset": "earliest",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 15
    try:
        while len(got) < expect and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append((m.offset(), m.value()))
    finally:
        c.close()
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_compressed_produce_is_read_back_under_both_isolations(served, ck, codec: str) -> None:
    server = served([("t", 1, 3)])
    p = Producer(ck(server, **{"compression.type": codec, "linger.ms": 50, "enable.idempotence": True}))
    reports: list[Any] = []
    for i in range(N):
        p.produce("t", value=_value(codec, i), on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    assert p.flush(20) == 0
    assert reports == [(None, i) for i in range(N)]
    _assert_compressed(server, "t")
    expected = [(i, _value(codec, i)) for i in range(N)]
    assert _consume(ck(server), "t", "read_uncommitted", N) == expected
    assert _consume(ck(server), "t", "read_committed", N) == expected


def test_a_transactional_lz4_producer_s_commit_is_read_and_its_abort_is_not(served, ck, txn_producer) -> None:
    server = served([("t", 1, 3)])
    p = txn_producer(ck(server), "tx-lz4", **{"compression.type": "lz4", "linger.ms": 20})
    p.begin_transaction()
    for i in range(N):
        p.produce("t", value=_value("commit", i))
    p.commit_transaction(15)
    p.begin_transaction()
    for i in range(N):
        p.produce("t", value=_value("abort", i))
    assert p.flush(15) == 0  # appended before the abort (abort_transaction purges what is unsent)
    p.abort_transaction(15)
    _assert_compressed(server, "t")
    # offsets 0..N-1 committed, N the commit marker, N+1..2N aborted, 2N+1 the abort marker
    assert _consume(ck(server), "t", "read_committed", N) == [(i, _value("commit", i)) for i in range(N)]
    uncommitted = _consume(ck(server), "t", "read_uncommitted", 2 * N)
    assert [o for o, _ in uncommitted] == [*range(N), *range(N + 1, 2 * N + 1)]


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_compressed_produce_is_read_back(served, kp, run_async, codec: str) -> None:
    server = served([("t", 1, 3)])

    async def main() -> list[tuple[int, bytes]]:
        producer = AIOKafkaProducer(compression_type=codec, linger_ms=20, request_timeout_ms=5_000, **kp(server))
        await producer.start()
        try:
            sent = [await producer.send("t", _value(codec, i)) for i in range(N)]
            offsets = [(await f).offset for f in sent]
        finally:
            await producer.stop()
        assert offsets == list(range(N))
        consumer = AIOKafkaConsumer(
            "t", auto_offset_reset="earliest", isolation_level="read_committed", fetch_max_wait_ms=100, **kp(server)
        )
        await consumer.start()
        got: list[tuple[int, bytes]] = []
        try:
            while len(got) < N:
                for msgs in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend((m.offset, m.value) for m in msgs)
        finally:
            await consumer.stop()
        return got

    got = run_async(main(), 40)
    _assert_compressed(server, "t")
    assert got == [(i, _value(codec, i)) for i in range(N)]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_compressed_produce_is_read_back(served, kp, codec: str) -> None:
    if not getattr(kafka.codec, f"has_{codec}")():
        pytest.skip(f"kafka-python has no {codec} codec here (it needs python-snappy, lz4 or zstandard, not cramjam)")
    server = served([("t", 1, 3)])
    producer = KafkaProducer(compression_type=codec, linger_ms=20, **kp(server))
    offsets = [producer.send("t", _value(codec, i)).get(timeout=10).offset for i in range(N)]
    producer.close()
    assert offsets == list(range(N))
    _assert_compressed(server, "t")
    consumer = KafkaConsumer("t", auto_offset_reset="earliest", consumer_timeout_ms=5_000, **kp(server))
    got = [(m.offset, m.value) for _, m in zip(range(N), consumer, strict=False)]
    consumer.close()
    assert got == [(i, _value(codec, i)) for i in range(N)]


# -- refused batches, over a raw socket -------------------------------------------------------


def _batch(codec: int, payload: bytes | None = None) -> bytes:
    """A three-record v2 batch with ``codec`` in its attributes, ``payload`` as its records, a correct CRC."""
    plain = records.encode_batch(RecordBatch(keys=(None,) * 3, values=(b"a" * 50, b"b" * 50, b"c" * 50)))
    if payload is None:
        payload = codecs.compress(codec, plain[61:])
    tail = struct.pack(">h", codec) + plain[23:61]
    crc = crc32c(payload, crc32c(tail))
    return struct.pack(">qiibI", 0, 49 + len(payload), -1, 2, crc) + tail + payload


def _produce(data: bytes, acks: int = -1) -> Any:
    request = load_request_schema(0, 9)
    topic = request.__dataclass_fields__["topic_data"].type.__args__[0]
    part = topic.__dataclass_fields__["partition_data"].type.__args__[0]
    return request(
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(topic(name="t", partition_data=(part(index=0, records=data),)),),
    )


def _error(response: Any) -> tuple[int, int]:
    p = response.responses[0].partition_responses[0]
    return int(p.error_code), p.base_offset


GARBAGE = b"\x00\x01 not a compressed stream" * 3


@pytest.mark.parametrize(
    ("what", "data"),
    [(f"garbage as {n}", (c, GARBAGE)) for c, n in codecs.CODEC_NAMES.items()] + [("codec id 5", (5, b"plain"))],
)
def test_an_undecodable_batch_is_refused_as_kafka_refuses_it_and_nothing_is_appended(
    served, raw_call, logged, what: str, data: tuple[int, bytes]
) -> None:
    server = served([("t", 1, 1)], brokers=1)
    answer = raw_call(server, 0, 9, _produce(_batch(*data)))
    assert _error(answer) == (-1, -1), f"{what}: Kafka 4.4 answers UNKNOWN_SERVER_ERROR with no offset"
    assert logged(server, "t") == []
    good = raw_call(server, 0, 9, _produce(_batch(3)))  # the same batch, well compressed, is taken
    assert _error(good) == (0, 0)
    assert logged(server, "t") == [b"a" * 50, b"b" * 50, b"c" * 50]


def test_zstd_below_produce_v7_is_unsupported_compression_type(served, raw_call, logged) -> None:
    server = served([("t", 1, 1)], brokers=1)
    request = load_request_schema(0, 6)
    topic = request.__dataclass_fields__["topic_data"].type.__args__[0]
    part = topic.__dataclass_fields__["partition_data"].type.__args__[0]
    body = request(
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(topic(name="t", partition_data=(part(index=0, records=_batch(4)),)),),
    )
    assert _error(raw_call(server, 0, 6, body)) == (76, -1)
    assert logged(server, "t") == []


def test_an_acks_0_produce_of_an_undecodable_batch_closes_the_connection(served, raw_call, logged) -> None:
    server = served([("t", 1, 1)], brokers=1)
    with pytest.raises(AssertionError, match="closed the connection"):
        raw_call(server, 0, 9, _produce(_batch(3, GARBAGE), acks=0))
    assert logged(server, "t") == []
