"""The reference cluster is real Kafka 4.4: three broker JVMs that clients reach, lose and get back.

One cluster for the whole module (``kafka_reference``); the tests run in file order and the last
one stops it. Each fault is a real signal to a real JVM: SIGKILL of a partition leader, after which
``acks=all`` writes still succeed (RF 3, ``min.insync.replicas`` 2) and the restarted broker rejoins
the ISR; SIGSTOP of a leader, which the controller fences and which comes back after SIGCONT.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from engine.conform.realtime_reference import CONTROLLER_ID, KIND, KafkaReference
from engine.conform.settings import BROKER_SETTINGS

pytestmark = pytest.mark.slow

TOPIC = "ref-t"


def _admin(ref: KafkaReference) -> AdminClient:
    return AdminClient(ref.client_config())


def _partition(ref: KafkaReference) -> tuple[int, list[int]]:
    """Return the leader and ISR of ``TOPIC``/0."""
    p = _admin(ref).list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0]
    return p.leader, sorted(p.isrs)


def _wait(what: str, check: Callable[[], bool], timeout_s: float = 40.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _produce(ref: KafkaReference, values: list[str]) -> list[int]:
    """Produce with acks=all; return the offsets (every send must succeed)."""
    offsets: list[int] = []
    errors: list[object] = []
    p = Producer({**ref.client_config(), "acks": "all", "message.timeout.ms": 45_000})
    for v in values:
        p.produce(
            TOPIC,
            v.encode(),
            partition=0,
            on_delivery=lambda err, msg: errors.append(err) if err else offsets.append(msg.offset()),
        )
    assert p.flush(60) == 0
    assert errors == []
    return offsets


def _consume_all(ref: KafkaReference) -> list[str]:
    c = Consumer({**ref.client_config(), "group.id": "ref-g", "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    got: list[str] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                if got:
                    break
                continue
            assert m.error() is None, m.error()
            got.append(m.value().decode())
    finally:
        c.close()
    return got


def test_three_brokers_answer_with_the_ready_info_of_eos_serve(kafka_reference: KafkaReference) -> None:
    ref = kafka_reference
    md = _admin(ref).list_topics(timeout=10)
    assert sorted(md.brokers) == [1, 2, 3]
    assert {b: md.brokers[b].port for b in md.brokers} == ref.ports
    info = ref.ready_info()
    assert info["kind"] == KIND
    assert info["bootstrap.servers"] == ref.bootstrap
    assert info["client_config"]["security.protocol"] == "SASL_PLAINTEXT"
    assert info["kafka_python"]["sasl_plain_password"] == ref.password
    assert info["brokers"] == {str(b): p for b, p in ref.ports.items()}
    assert set(info["pids"]) == {"1", "2", "3", str(CONTROLLER_ID)}
    assert all(isinstance(pid, int) for pid in info["pids"].values())


def test_a_topic_with_three_replicas_takes_and_gives_back_records(kafka_reference: KafkaReference) -> None:
    ref = kafka_reference
    admin = _admin(ref)  # kept alive until the future completes
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=3)])[TOPIC].result(30)
    _wait("a full ISR", lambda: _partition(ref)[1] == [1, 2, 3])
    assert _produce(ref, ["a", "b", "c"]) == [0, 1, 2]
    assert _consume_all(ref) == ["a", "b", "c"]


def test_acks_all_survives_a_killed_leader_which_rejoins_the_isr(kafka_reference: KafkaReference) -> None:
    ref = kafka_reference
    leader, _ = _partition(ref)
    pid = ref.pid(leader)
    ref.kill(leader)
    assert ref.pid(leader) is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # RF 3 and min.insync.replicas 2: two replicas left are enough, once the controller fences the dead one
    assert _produce(ref, ["d"]) == [3]
    new_leader, isr = _partition(ref)
    assert new_leader != leader
    assert leader not in isr
    ref.restart(leader)
    _wait("the restarted broker back in the ISR", lambda: _partition(ref)[1] == [1, 2, 3])


def test_a_paused_leader_is_fenced_and_comes_back_after_resume(kafka_reference: KafkaReference) -> None:
    ref = kafka_reference
    leader, _ = _partition(ref)
    ref.pause(leader)
    try:
        state = Path(f"/proc/{ref.pid(leader)}/stat").read_text().split(")")[1].split()[0]
        assert state == "T"  # stopped by SIGSTOP
        assert _produce(ref, ["e"]) == [4]
        assert _partition(ref)[0] != leader
    finally:
        ref.resume(leader)
    _wait("the resumed broker back in the ISR", lambda: _partition(ref)[1] == [1, 2, 3])


def test_a_wrong_password_is_refused(kafka_reference: KafkaReference) -> None:
    ref = kafka_reference
    errors: list[KafkaError] = []
    p = Producer({**ref.client_config(), "sasl.password": "wrong", "error_cb": errors.append, "log_level": 0})
    _wait("an authentication error", lambda: p.poll(0.2) == 0 and bool(errors), timeout_s=15)
    assert errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert "Invalid username or password" in errors[0].str()
    ok = Producer({**ref.client_config(), "error_cb": errors.append, "log_level": 0})
    assert ok.list_topics(timeout=10).brokers  # the right password still works


def test_the_shared_settings_are_the_brokers_settings(kafka_reference: KafkaReference) -> None:
    ref = kafka_reference
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    admin = _admin(ref)
    configs = admin.describe_configs([resource])[resource].result(30)
    for key in ("broker.session.timeout.ms", "offsets.topic.num.partitions", "min.insync.replicas"):
        assert configs[key].value == BROKER_SETTINGS[key]


def test_stop_leaves_no_process_behind(kafka_reference: KafkaReference) -> None:
    ref = kafka_reference
    pids = [pid for pid in ref.ready_info()["pids"].values() if pid is not None]
    assert len(pids) == 4
    ref.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert ref.workdir is None  # the temporary folder is gone too
