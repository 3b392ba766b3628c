"""Fixtures for real Kafka clients against a served simulated cluster.

``served`` starts ``engine.serve.ServedCluster`` in a thread of its own (real sockets on 127.0.0.1,
SASL/PLAIN on, simulated time following the wall clock) for one test, with the topics asked for,
and stops it afterwards. Tests touch the cluster only under ``server.locked()`` (the server's loop
drives it otherwise). ``ck_config``/``kp_config`` give the confluent-kafka and kafka-python/aiokafka
configs of a server, with short timeouts so a test that fails does so quickly.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from engine.serve.realtime_server import ServedCluster
from engine.wire.client_config import kafka_python_config
from engine.wire.journal import SERVED_LATENCY_MS, ServeSpec


@pytest.fixture
def served() -> Iterator[Callable[..., ServedCluster]]:
    """Return a factory ``served(topics=[("t", 3, 3)], seed=1, brokers=3, latency_ms=0, **options)``.

    Servers stop after the test.
    """
    started: list[ServedCluster] = []

    def start(
        topics: list[tuple[str, int, int | None]] | tuple[tuple[str, int, int | None], ...] = (("t", 1, 3),),
        *,
        seed: int = 1,
        brokers: int = 3,
        config: dict[str, Any] | None = None,
        latency_ms: int = SERVED_LATENCY_MS,
        **options: Any,
    ) -> ServedCluster:
        spec = ServeSpec(seed, brokers, dict(config or {}), tuple(topics), latency_ms)
        server = ServedCluster(spec.build(), spec=spec, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def ck_config(server: ServedCluster, **extra: Any) -> dict[str, Any]:
    """confluent-kafka config for ``server``, with quick timeouts."""
    return {**server.client_config(), "socket.timeout.ms": 10_000, "message.timeout.ms": 20_000, **extra}


def kp_config(server: ServedCluster, **extra: Any) -> dict[str, Any]:
    """kafka-python / aiokafka keyword arguments for ``server``."""
    return {**kafka_python_config(server.bootstrap, server.password), **extra}


@pytest.fixture
def ck() -> Callable[..., dict[str, Any]]:
    """Return :func:`ck_config`."""
    return ck_config


@pytest.fixture
def kp() -> Callable[..., dict[str, Any]]:
    """Return :func:`kp_config`."""
    return kp_config


def log_values(server: ServedCluster, topic: str) -> list[bytes]:
    """Every data record's value in ``topic``'s leader logs (aborted ones included), partition by partition."""
    values: list[bytes] = []
    with server.locked() as cluster:
        for p in range(cluster.topics[topic]):
            leader = cluster.leader(topic, p)
            for batch in cluster.brokers[leader].replicas[(topic, p)].log.batches:
                if not batch.is_control:
                    values.extend(batch.values)
    return values


@pytest.fixture
def logged() -> Callable[[ServedCluster, str], list[bytes]]:
    """Return :func:`log_values`."""
    return log_values


def _read_committed(
    config: dict[str, Any], topic: str, *, group: str = "reader", expect: int | None = None, seconds: float = 10.0
) -> list[str]:
    """Read ``topic`` from the start with read_committed until every partition reached its end."""
    c = Consumer(
        {
            **config,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    values: list[str] = []
    ended: set[int] = set()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    ended.add(m.partition())
                    assignment = c.assignment()
                    if (
                        assignment
                        and ended >= {tp.partition for tp in assignment}
                        and (expect is None or len(values) >= expect)
                    ):
                        break
                    continue
                raise KafkaException(m.error())
            values.append(m.value().decode())
    finally:
        c.close()
    return values


def _txn_producer(config: dict[str, Any], tid: str, **extra: Any) -> Producer:
    p = Producer({**config, "transactional.id": tid, **extra})
    p.init_transactions(15)
    return p


@pytest.fixture(scope="session")
def read_committed() -> Callable[..., list[str]]:
    """Return a function that reads a topic from the start with read_committed (confluent-kafka)."""
    return _read_committed


@pytest.fixture(scope="session")
def txn_producer() -> Callable[..., Producer]:
    """Return a function that makes an initialised transactional confluent-kafka producer."""
    return _txn_producer


def _raw_call(server: ServedCluster, key: int, version: int, body: Any, broker: int = 1) -> Any:
    """Log in with SASL/PLAIN on a raw socket, send one request (a kio entity), return the decoded response."""
    import io
    import socket
    import struct

    from kio.index import load_request_schema, load_response_schema
    from kio.serial import entity_reader, entity_writer

    def frame(k: int, v: int, entity: Any, corr: int) -> bytes:
        header = load_request_schema(k, v).__header_schema__
        buf = io.BytesIO()
        entity_writer(header)(buf, header(request_api_key=k, request_api_version=v, correlation_id=corr, client_id="t"))
        entity_writer(type(entity))(buf, entity)
        return struct.pack(">i", len(buf.getvalue())) + buf.getvalue()

    def receive(s: socket.socket) -> bytes:
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "the server closed the connection"
            data += chunk
        return data[4:]

    host, port = server.addresses[broker]
    with socket.create_connection((host, port), timeout=10) as s:
        if server.password is not None:
            s.sendall(frame(17, 1, load_request_schema(17, 1)(mechanism="PLAIN"), 1))
            receive(s)
            token = b"\0eos\0" + server.password.encode()
            s.sendall(frame(36, 2, load_request_schema(36, 2)(auth_bytes=token), 2))
            receive(s)
        s.sendall(frame(key, version, body, 3))
        data = receive(s)
    schema = load_response_schema(key, version)
    offset = 4 + (1 if schema.__header_schema__.__flexible__ else 0)
    response, _size = entity_reader(schema)(memoryview(data), offset)
    return response


@pytest.fixture
def raw_call() -> Callable[..., Any]:
    """Return :func:`_raw_call`: one request on a raw, logged-in socket, decoded with kio."""
    return _raw_call


def _run_async(coro: Awaitable[Any], timeout_s: float = 60.0) -> Any:
    """Run a test's coroutine to its end in a thread of its own (aiokafka), failing it after ``timeout_s``."""

    async def bounded() -> Any:
        try:
            return await asyncio.wait_for(coro, timeout_s)
        except TimeoutError:
            pytest.fail(f"the test did not finish within {timeout_s} s")

    # In a thread of its own: the suite's browser tests leave a running loop marked in the main thread.
    result: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(bounded()))
        except BaseException as exc:  # handed to the test's thread below, pytest.fail included
            errors.append(exc)

    thread = threading.Thread(target=target, name="aiokafka-test")
    thread.start()
    thread.join(timeout_s + 30)
    if errors:
        raise errors[0]
    if thread.is_alive():
        pytest.fail(f"the test's event loop did not stop within {timeout_s + 30} s")
    return result[0]


@pytest.fixture
def run_async() -> Callable[..., Any]:
    """``run_async(coro, timeout_s=60)``: run an aiokafka test's coroutine in a thread of its own.

    The suite's browser tests leave a running loop marked in the main thread, where ``asyncio.run``
    would refuse to start.
    """
    return _run_async
