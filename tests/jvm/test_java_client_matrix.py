"""The Java client (kafka-clients 4.4.0) against ``eos serve``, speaking transaction version 2.

The cases of the Python client matrices (``tests/wire/test_wire_confluent.py``,
``test_wire_kafka_python.py``, ``test_wire_aiokafka.py``) driven through one driver JVM per module
(``engine/conform/realtime_java_client.py``): an idempotent producer's lost ack, commit and abort
under read_committed, the last stable offset, consume-transform-produce with
``sendOffsetsToTransaction``, zombie fencing, ``transaction.timeout.ms``, a rebalance, a broker crash
mid-transaction; and, read from the served cluster's journal and coordinator (not the client's
word), that the Java client used EndTxn v5 with the epoch bumped per transaction while
confluent-kafka on the same server kept transaction version 1. Every case but the lost ack (a
wire fault) also runs against Kafka 4.4 in the conformance suite (``engine/conform/cases/java.py``).
"""

from __future__ import annotations

import base64
import json
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from engine.conform.cases import java as java_cases
from engine.conform.realtime_java_client import JavaClientError, JavaClients, JavaConsumer, java_config
from engine.serve.realtime_server import ServedCluster
from engine.views.transactions import describe_transaction_row
from tests.wire.conftest import log_values

pytestmark = pytest.mark.slow  # a JVM

#: The broker's coverage mark for a retried batch answered from its producer state, not appended again.
DEDUP_MARK = "dedup: duplicate batch answered from cache"
#: The controller fences a dead broker after 3 s, not 9 s.
CRASH_CONFIG = {"broker.session.timeout.ms": 3_000, "broker.heartbeat.interval.ms": 500}
PRODUCER = {
    "max.block.ms": 15_000,
    "request.timeout.ms": 5_000,
    "delivery.timeout.ms": 30_000,
    "retry.backoff.ms": 50,
    "linger.ms": 5,
}
CONSUMER = {**java_cases.CONSUMER, "retry.backoff.ms": 50}  # the conformance cases' consumer, quicker retries
END_TXN, PRODUCE = 26, 0


@pytest.fixture(scope="module")
def jvm(jvm_available: None) -> Iterator[JavaClients]:
    """One driver JVM for the module."""
    with JavaClients() as clients:
        yield clients


def _cfg(server: ServedCluster, **extra: Any) -> dict[str, Any]:
    return {**java_config(server.client_config()), **extra}


def _txn(jvm: JavaClients, server: ServedCluster, tid: str, **extra: Any) -> Any:
    p = jvm.producer(_cfg(server, **PRODUCER, **{"transactional.id": tid}, **extra))
    p.init_transactions()
    return p


def _reader(jvm: JavaClients, server: ServedCluster, topic: str, partitions: int = 1) -> JavaConsumer:
    c = jvm.consumer(_cfg(server, **CONSUMER, **{"isolation.level": "read_committed", "group.id": f"r-{topic}"}))
    c.assign([(topic, p) for p in range(partitions)])
    return c


def _values(c: JavaConsumer, n: int, timeout: float = 8.0) -> list[str]:
    got = [r.value for r in c.consume(n, timeout)] if n else []
    got += [r.value for r in c.consume(1, 0.5)]  # nothing more comes
    return got


def test_an_idempotent_producer_s_retry_after_a_lost_ack_is_written_once(served, jvm) -> None:
    server = served([("t", 1, 3)])
    p = jvm.producer(_cfg(server, **PRODUCER, acks="all"))
    try:
        p.produce("t", "warm-up")
        with server.locked():
            fault = server.service.add_wire_fault("close-after", "Produce", 1)
        for i in range(10):
            p.produce("t", f"v{i}", wait=False)
        p.flush()
    finally:
        p.close()
    with server.locked() as cluster:
        fired = next(f.fired for f in server.service.wire_faults if f.fault_id == fault)
        dedup = cluster.world.trace.marks.get(DEDUP_MARK, 0)
    assert fired
    assert dedup >= 1, "the retry of the appended batch never reached the broker's deduplication"
    assert [v.decode() for v in log_values(server, "t")] == ["warm-up"] + [f"v{i}" for i in range(10)]


def test_read_committed_sees_the_commit_not_the_abort_and_waits_at_the_lso(served, jvm) -> None:
    server = served([("t", 1, 3)])
    p = _txn(jvm, server, "tx-ca")
    reader = _reader(jvm, server, "t")
    try:
        p.begin_transaction()
        for i in range(3):
            p.produce("t", f"c{i}", partition=0)
        p.commit_transaction()
        p.begin_transaction()
        p.produce("t", "aborted", partition=0)
        p.abort_transaction()
        p.begin_transaction()
        open_offset = p.produce("t", "open", partition=0)
        assert _values(reader, 3) == ["c0", "c1", "c2"]
        assert reader.end_offsets([("t", 0)]) == {("t", 0): open_offset}  # the LSO: the open transaction's start
        p.commit_transaction()
        assert _values(reader, 1) == ["open"]
    finally:
        p.close()
        reader.close()


def test_consume_transform_produce_commits_its_offsets_with_the_transaction(served, jvm) -> None:
    server = served([("in", 1, 3), ("out", 1, 3)])
    seed = jvm.producer(_cfg(server, **PRODUCER))
    for i in range(4):
        seed.produce("in", f"m{i}", partition=0)
    seed.close()
    c = jvm.consumer(_cfg(server, **CONSUMER, **{"group.id": "ctp", "isolation.level": "read_committed"}))
    p = _txn(jvm, server, "tx-ctp")
    out = _reader(jvm, server, "out")
    try:
        c.subscribe(["in"])
        records = c.consume(4, 15)
        assert [r.value for r in records] == ["m0", "m1", "m2", "m3"]
        p.begin_transaction()
        for r in records[:2]:
            p.produce("out", r.value.upper(), partition=0)
        p.send_offsets_to_transaction([("in", 0, records[1].offset + 1)], c)
        p.commit_transaction()
        p.begin_transaction()
        for r in records[2:]:
            p.produce("out", r.value.upper(), partition=0)
        p.send_offsets_to_transaction([("in", 0, records[3].offset + 1)], c)
        p.abort_transaction()
        assert c.committed([("in", 0)]) == {("in", 0): 2}
        assert _values(out, 2) == ["M0", "M1"]
    finally:
        p.close()
        c.close()
        out.close()


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(served, jvm) -> None:
    server = served([("t", 1, 3)])
    zombie = _txn(jvm, server, "tx-z")
    zombie.begin_transaction()
    zombie.produce("t", "zombie", partition=0)
    successor = _txn(jvm, server, "tx-z")  # aborts the zombie's open transaction
    try:
        with pytest.raises(JavaClientError) as fenced:
            zombie.produce("t", "late", partition=0)
            zombie.commit_transaction()
        assert "ProducerFencedException" in fenced.value.names() or "InvalidProducerEpochException" in str(
            fenced.value
        ), fenced.value
        successor.begin_transaction()
        successor.produce("t", "successor", partition=0)
        successor.commit_transaction()
        reader = _reader(jvm, server, "t")
        assert _values(reader, 1) == ["successor"]
        reader.close()
    finally:
        zombie.close(1)
        successor.close()


def test_transaction_timeout_ms_aborts_a_stalled_producer_s_transaction(served, jvm) -> None:
    server = served([("t", 1, 3)], config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    p = _txn(jvm, server, "tx-stalled", **{"transaction.timeout.ms": 2_000})
    try:
        p.begin_transaction()
        p.produce("t", "stalled", partition=0)
        state, deadline = "", time.monotonic() + 10
        while time.monotonic() < deadline and state != "CompleteAbort":
            time.sleep(0.2)
            with server.locked() as cluster:
                state = describe_transaction_row(cluster, "tx-stalled").state
        assert state == "CompleteAbort", f"the coordinator left the stalled transaction {state}"
        with pytest.raises(JavaClientError) as late:
            p.commit_transaction()
        assert {"ProducerFencedException", "InvalidProducerEpochException"} & set(late.value.names()), late.value
        reader = _reader(jvm, server, "t")
        assert _values(reader, 0) == []
        reader.close()
    finally:
        p.close(1)


def test_a_group_rebalances_when_a_member_joins_and_leaves(served, jvm) -> None:
    server = served([("t", 4, 3)])
    conf = _cfg(server, **CONSUMER, **{"group.id": "g"})
    a, b = jvm.consumer(conf), jvm.consumer(conf)
    try:
        a.subscribe(["t"])
        deadline = time.monotonic() + 20
        while len(a.assignment()) < 4 and time.monotonic() < deadline:
            a.poll(0.2)
        assert len(a.assignment()) == 4
        b.subscribe(["t"])
        while time.monotonic() < deadline and not (len(a.assignment()) == 2 and len(b.assignment()) == 2):
            b.poll(0.2)
            a.poll(0.2)
        assert sorted(a.assignment() + b.assignment()) == [("t", p) for p in range(4)]
        assert len(a.assignment()) == 2
        b.close()
        deadline = time.monotonic() + 20
        while len(a.assignment()) < 4 and time.monotonic() < deadline:
            a.poll(0.2)
        assert len(a.assignment()) == 4
        assert any(e.startswith("revoked") for e in a.rebalances)
    finally:
        a.close()


def test_a_transaction_across_a_crash_of_its_partition_leader_commits_once(served, jvm) -> None:
    server = served([("t", 1, 3)], config=CRASH_CONFIG)
    p = _txn(jvm, server, "tx-crash")
    try:
        p.begin_transaction()
        p.produce("t", "before", partition=0)
        with server.locked() as cluster:
            crashed = cluster.leader("t", 0)
            cluster.crash(crashed)
        p.produce("t", "after", partition=0)
        p.commit_transaction()
        p.begin_transaction()
        p.produce("t", "aborted", partition=0)
        p.abort_transaction()
        with server.locked() as cluster:
            cluster.restart(crashed)
        reader = _reader(jvm, server, "t")
        assert _values(reader, 2) == ["before", "after"]
        reader.close()
    finally:
        p.close()


def _requests(journal: Path, api_key: int) -> list[tuple[str, int]]:
    """(client id, version) of every journaled request frame of ``api_key``."""
    out = []
    for line in journal.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("e") != "frame":
            continue
        frame = base64.b64decode(entry["d"])
        if len(frame) < 10 or struct.unpack(">h", frame[:2])[0] != api_key:
            continue
        version = struct.unpack(">h", frame[2:4])[0]
        size = struct.unpack(">h", frame[8:10])[0]
        out.append((frame[10 : 10 + max(size, 0)].decode(), version))
    return out


def test_the_java_client_ends_transactions_with_end_txn_v5_and_a_bumped_epoch_python_keeps_version_1(
    served, jvm, tmp_path
) -> None:
    journal = tmp_path / "wire.jsonl"
    server = served([("t", 1, 3)], journal_path=journal)
    java_epochs, python_epochs = [], []
    p = _txn(jvm, server, "tx-java")
    ck = Producer({**server.client_config(), "transactional.id": "tx-python", "client.id": "python"})
    ck.init_transactions(15)
    try:
        for i in range(3):
            p.begin_transaction()
            p.produce("t", f"j{i}", partition=0)
            p.commit_transaction()
            ck.begin_transaction()
            ck.produce("t", value=f"p{i}".encode(), partition=0)
            ck.commit_transaction(15)
            with server.locked() as cluster:
                java_epochs.append(describe_transaction_row(cluster, "tx-java").producer_epoch)
                python_epochs.append(describe_transaction_row(cluster, "tx-python").producer_epoch)
    finally:
        p.close()
    server.stop()  # the journal is complete
    end_txn = _requests(journal, END_TXN)
    produce = _requests(journal, PRODUCE)
    assert {v for c, v in end_txn if c == "producer-tx-java"} == {5}
    assert {v for c, v in end_txn if c == "python"} <= {0, 1, 2, 3}
    assert len([1 for c, _v in end_txn if c == "python"]) == 3
    assert {v for c, v in produce if c == "producer-tx-java"} == {12}
    assert all(v <= 11 for c, v in produce if c == "python")
    assert java_epochs == [java_epochs[0], java_epochs[0] + 1, java_epochs[0] + 2], java_epochs
    assert len(set(python_epochs)) == 1, python_epochs
    reader = _reader(jvm, served([("t", 1, 3)]), "t")  # a fresh server: the driver's consumer still works
    reader.close()
