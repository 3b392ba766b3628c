"""The Java client (kafka-clients 4.4.0) from Python: one long-lived JVM, objects that read like confluent-kafka's.

    with JavaClients() as jvm:
        p = jvm.producer({**java_config(server.client_config()), "transactional.id": "t1"})
        p.init_transactions()
        p.begin_transaction()
        p.produce("t", "v", key="k", partition=0)      # the record's offset (the send's future, awaited)
        p.commit_transaction()
        c = jvm.consumer({**java_config(cfg), "group.id": "g", "isolation.level": "read_committed"})
        c.assign([("t", 0)])
        c.consume(1, timeout=5.0)                      # [Record(topic, partition, offset, key, value)]

Role
----
Starts ``eosmagics.jvm.client.Driver`` (``jvm/src/main/java/eosmagics/jvm/client/Driver.java``) with
:func:`~engine.conform.realtime_jvm.java_command` and talks to it in JSON lines: one command on its
stdin, one answer on its stdout. Each producer and consumer lives in that JVM under a name, so one
JVM serves a whole test module or conformance case (a JVM start costs about a second of CPU).

Invariants
----------
* Every call returns the client's answer or raises :class:`JavaClientError` whose ``kind`` is the
  Java exception's simple class name (``ProducerFencedException``, ``TimeoutException``...) and
  whose ``causes`` are the names of its cause chain; the JVM itself keeps serving.
* A call the JVM does not answer within its ``timeout`` (or a dead JVM) raises
  :class:`JavaDriverError` with the tail of the JVM's stderr; the JVM is then killed.
* Keys and values are UTF-8 strings on both sides.
"""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from engine.conform.realtime_jvm import java_command

__all__ = [
    "JavaClientError",
    "JavaClients",
    "JavaConsumer",
    "JavaDriverError",
    "JavaProducer",
    "Record",
    "java_config",
]

DRIVER = "eosmagics.jvm.client.Driver"

#: confluent-kafka security properties -> the Java client's (SASL/PLAIN's user and password go into JAAS).
_JAVA_NAMES = {"bootstrap.servers": "bootstrap.servers", "security.protocol": "security.protocol"}


def java_config(confluent: Mapping[str, Any]) -> dict[str, str]:
    """Return the Java client's properties for a confluent-kafka config (bootstrap and SASL/PLAIN only).

    ``sasl.username``/``sasl.password`` become ``sasl.jaas.config`` with Kafka's ``PlainLoginModule``.
    """
    out = {java: str(confluent[k]) for k, java in _JAVA_NAMES.items() if k in confluent}
    if "sasl.mechanism" in confluent:
        out["sasl.mechanism"] = str(confluent["sasl.mechanism"])
        user, password = confluent["sasl.username"], confluent["sasl.password"]
        out["sasl.jaas.config"] = (
            f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" password="{password}";'
        )
    return out


class Record(NamedTuple):
    """One consumed record."""

    topic: str
    partition: int
    offset: int
    key: str | None
    value: str | None


class JavaClientError(Exception):
    """The Java client threw: ``kind`` is the exception's simple class name, ``causes`` its cause chain."""

    def __init__(self, kind: str, message: str, causes: list[str]) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.causes = causes

    def names(self) -> list[str]:
        """Return the exception's class name and its causes' names."""
        return [self.kind, *self.causes]


class JavaDriverError(RuntimeError):
    """The driver JVM died or did not answer in time."""


class JavaClients:
    """One driver JVM; its producers and consumers are made with :meth:`producer` and :meth:`consumer`."""

    def __init__(self, *, heap_mb: int = 256) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the JVM; closed by close()
        self._proc = subprocess.Popen(
            java_command(DRIVER, heap_mb=heap_mb),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="java-driver-reader", daemon=True)
        self._reader.start()
        self._names = 0
        self._lock = threading.Lock()
        self._wait(60.0, "start")

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._answers.put(line)
        self._answers.put(None)

    def stderr_tail(self, chars: int = 3000) -> str:
        """Return the end of the JVM's stderr (the clients' warnings)."""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-chars:]

    def _wait(self, timeout: float, op: str) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            tail = self.stderr_tail()
            raise JavaDriverError(f"the Java driver gave no answer to {op} in {timeout:.0f} s\n{tail}") from None
        if line is None:
            raise JavaDriverError(f"the Java driver exited (during {op})\n{self.stderr_tail()}")
        return json.loads(line)

    def call(self, op: str, name: str = "", *, timeout: float = 90.0, **fields: Any) -> dict[str, Any]:
        """Send one command and return its answer; raise :class:`JavaClientError` when the client threw."""
        with self._lock:
            if self._proc.poll() is not None:
                raise JavaDriverError(f"the Java driver is not running\n{self.stderr_tail()}")
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps({"op": op, "name": name, **fields}) + "\n")
            self._proc.stdin.flush()
            answer = self._wait(timeout, op)
        if not answer.get("ok"):
            raise JavaClientError(answer.get("error", "?"), answer.get("message", ""), answer.get("causes", []))
        return answer

    def _name(self, kind: str) -> str:
        self._names += 1
        return f"{kind}-{self._names}"

    def producer(self, config: Mapping[str, Any]) -> JavaProducer:
        """Return a new ``KafkaProducer`` made from ``config`` (Java property names; String serializers)."""
        name = self._name("producer")
        self.call("producer", name, config={k: str(v) for k, v in config.items()})
        return JavaProducer(self, name)

    def consumer(self, config: Mapping[str, Any]) -> JavaConsumer:
        """Return a new ``KafkaConsumer`` made from ``config`` (Java property names; String deserializers)."""
        name = self._name("consumer")
        self.call("consumer", name, config={k: str(v) for k, v in config.items()})
        return JavaConsumer(self, name)

    def kill(self) -> None:
        """Kill the JVM at once."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(10)

    def close(self) -> None:
        """Close every client (2 s each) and stop the JVM."""
        if self._proc.poll() is None:
            try:
                self.call("exit", timeout=30.0)
                self._proc.wait(10)
            except (JavaDriverError, OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        self._stderr.close()

    def __enter__(self) -> JavaClients:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Client:
    def __init__(self, jvm: JavaClients, name: str) -> None:
        self.jvm = jvm
        self.name = name

    def _call(self, op: str, timeout: float = 90.0, **fields: Any) -> dict[str, Any]:
        return self.jvm.call(op, self.name, timeout=timeout, **fields)

    def close(self, timeout: float = 5.0) -> None:
        """Close the client (``close(Duration)``)."""
        self._call("close", timeout_ms=int(timeout * 1000))


class JavaProducer(_Client):
    """A ``KafkaProducer<String, String>`` in the driver JVM."""

    def init_transactions(self) -> None:
        """``initTransactions()``."""
        self._call("init")

    def begin_transaction(self) -> None:
        """``beginTransaction()``."""
        self._call("begin")

    def produce(
        self,
        topic: str,
        value: str | None,
        key: str | None = None,
        partition: int | None = None,
        *,
        wait: bool = True,
        timeout: float = 60.0,
    ) -> int | None:
        """``send(record)``; with ``wait`` the future is awaited and the record's offset returned."""
        answer = self._call(
            "send",
            timeout=timeout + 30.0,
            topic=topic,
            value=value,
            key=key,
            partition=partition,
            wait=wait,
            timeout_ms=int(timeout * 1000),
        )
        return answer.get("offset")

    def flush(self) -> None:
        """``flush()``."""
        self._call("flush")

    def commit_transaction(self) -> None:
        """``commitTransaction()``."""
        self._call("commit_txn")

    def abort_transaction(self) -> None:
        """``abortTransaction()``."""
        self._call("abort_txn")

    def send_offsets_to_transaction(self, offsets: Iterable[tuple[str, int, int]], consumer: JavaConsumer) -> None:
        """``sendOffsetsToTransaction(offsets, consumer.groupMetadata())``; offsets as (topic, partition, offset)."""
        self._call("send_offsets", offsets=[list(o) for o in offsets], consumer=consumer.name)


class JavaConsumer(_Client):
    """A ``KafkaConsumer<String, String>`` in the driver JVM."""

    rebalances: list[str]

    def __init__(self, jvm: JavaClients, name: str) -> None:
        super().__init__(jvm, name)
        self.rebalances = []

    def subscribe(self, topics: Iterable[str]) -> None:
        """``subscribe(topics, listener)``; the listener's calls gather in :attr:`rebalances`."""
        self._call("subscribe", topics=list(topics))

    def assign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """``assign(partitions)``."""
        self._call("assign", partitions=[list(p) for p in partitions])

    def seek(self, offsets: Iterable[tuple[str, int, int]]) -> None:
        """``seek(tp, offset)`` for each (topic, partition, offset)."""
        self._call("seek", offsets=[list(o) for o in offsets])

    def consume(self, num: int = 1, timeout: float = 1.0) -> list[Record]:
        """Poll until ``num`` records came or ``timeout`` passed; return what came (possibly more than ``num``)."""
        answer = self._call("poll", timeout=timeout + 60.0, timeout_ms=int(timeout * 1000), min=num)
        self.rebalances.extend(answer.get("rebalances", []))
        return [Record(r["topic"], r["partition"], r["offset"], r["key"], r["value"]) for r in answer["records"]]

    def poll(self, timeout: float = 1.0) -> list[Record]:
        """One ``poll(timeout)`` (at most ``timeout``; returns as soon as records come)."""
        return self.consume(1, timeout)

    def assignment(self) -> list[tuple[str, int]]:
        """``assignment()``, sorted."""
        answer = self._call("assignment")
        self.rebalances.extend(answer.get("rebalances", []))
        return [(t, p) for t, p in answer["partitions"]]

    def commit(self, offsets: Iterable[tuple[str, int, int]] | None = None) -> None:
        """``commitSync()`` of the consumed positions, or of ``offsets``."""
        if offsets is None:
            self._call("commit_sync")
        else:
            self._call("commit_sync", offsets=[list(o) for o in offsets])

    def committed(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """``committed(partitions)``: the group's offsets (-1 where none)."""
        answer = self._call("committed", partitions=[list(p) for p in partitions])
        return {(t, p): o for t, p, o in answer["offsets"]}

    def end_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """``endOffsets(partitions)``: the LSO under read_committed, the high watermark otherwise."""
        answer = self._call("end_offsets", partitions=[list(p) for p in partitions])
        return {(t, p): o for t, p, o in answer["offsets"]}

    def position(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """``position(tp)`` of each partition."""
        answer = self._call("position", partitions=[list(p) for p in partitions])
        return {(t, p): o for t, p, o in answer["offsets"]}
