"""``eos_magics.kafka.patch``: unchanged confluent-kafka modules run on the simulation, and everything is restored.

A small application module, written for confluent-kafka and never changed, is written into
``tmp_path`` and imported: inside the patch (its imports resolve to the drop-in), before the patch
(its globals are swapped, then swapped back), with an exception in the body, with nested patches,
as a decorator, and with confluent-kafka made unimportable.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import eos_magics.kafka as kafka
from engine import Cluster
from eos_magics.kafka import binding

APP = '''
"""An application written for confluent-kafka (unchanged by the tests)."""
import confluent_kafka
import confluent_kafka.admin
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def run(bootstrap="localhost:9092"):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("app", 1, 3)]).values():
        try:
            future.result()
        except KafkaException as exc:
            if exc.args[0].code() != confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for i in range(3):
        producer.produce("app", f"m{i}".encode())
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "app", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("app", 0, confluent_kafka.OFFSET_BEGINNING)])
    values = []
    while len(values) < 3:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            values.append(msg.value())
    consumer.close()
    return values
'''


@pytest.fixture
def app(tmp_path: Path) -> Iterator[str]:
    """Write the application module under a fresh name; yield the name; forget the module after."""
    name = f"dropin_app_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(APP))
    sys.path.insert(0, str(tmp_path))
    yield name
    sys.path.remove(str(tmp_path))
    sys.modules.pop(name, None)


def fresh_cluster(seed: int) -> Cluster:
    return Cluster(
        seed=seed, brokers=3, config={"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}
    )


def test_an_unchanged_module_imported_inside_the_patch_runs_on_the_cluster(app: str, unbound: None) -> None:
    cluster = fresh_cluster(1)
    before = sys.modules.get("confluent_kafka")
    with kafka.patch(cluster) as current:
        assert current is cluster
        module = importlib.import_module(app)
        assert module.Producer is kafka.Producer and module.confluent_kafka is kafka
        assert module.run() == [b"m0", b"m1", b"m2"]
    assert sys.modules.get("confluent_kafka") is before
    assert cluster.topics["app"] == 1
    assert binding.current() is None


def test_a_module_imported_before_the_patch_is_swapped_and_restored(app: str, unbound: None) -> None:
    real = pytest.importorskip("confluent_kafka")
    real_admin = importlib.import_module("confluent_kafka.admin")
    module = importlib.import_module(app)
    assert module.Producer is real.Producer
    cluster = fresh_cluster(2)
    with kafka.patch(cluster):
        assert module.Producer is kafka.Producer and module.AdminClient is kafka.admin.AdminClient
        assert module.confluent_kafka is kafka and module.KafkaException is kafka.KafkaException
        assert module.run() == [b"m0", b"m1", b"m2"]
        assert sys.modules["confluent_kafka"] is kafka
    assert module.Producer is real.Producer and module.confluent_kafka is real
    assert module.AdminClient is real_admin.AdminClient and module.KafkaException is real.KafkaException
    assert sys.modules["confluent_kafka"] is real and sys.modules["confluent_kafka.admin"] is real_admin
    assert real.OFFSET_BEGINNING == kafka.OFFSET_BEGINNING  # constants are equal values, never swapped


def test_everything_is_restored_when_the_body_raises(app: str, unbound: None) -> None:
    real = pytest.importorskip("confluent_kafka")
    module = importlib.import_module(app)
    with pytest.raises(ZeroDivisionError), kafka.patch(fresh_cluster(3)):
        assert module.Consumer is kafka.Consumer
        _ = 1 / 0
    assert module.Consumer is real.Consumer and sys.modules["confluent_kafka"] is real
    assert binding.current() is None


def test_nested_patches_switch_the_current_cluster_and_unwind(unbound: None) -> None:
    outer, inner = fresh_cluster(4), fresh_cluster(5)
    outer.create_topic("t")
    inner.create_topic("t")
    before = sys.modules.get("confluent_kafka")
    with kafka.patch(outer):
        import confluent_kafka

        with kafka.patch(inner):
            assert binding.current() is inner
            p = confluent_kafka.Producer({})
            p.produce("t", b"inner")
            p.flush()
        assert binding.current() is outer and sys.modules["confluent_kafka"] is kafka
        q = confluent_kafka.Producer({})
        q.produce("t", b"outer")
        q.flush()
    assert sys.modules.get("confluent_kafka") is before
    assert inner.describe_partition("t").high_watermark == 1
    assert outer.describe_partition("t").high_watermark == 1


def test_patch_as_a_decorator(unbound: None) -> None:
    cluster = fresh_cluster(6)

    @kafka.patch(cluster)
    def body() -> Any:
        from confluent_kafka import Producer

        return Producer, binding.current()

    cls, current = body()
    assert cls is kafka.Producer and current is cluster
    assert binding.current() is None


def test_patch_works_when_confluent_kafka_cannot_be_imported(monkeypatch: pytest.MonkeyPatch, unbound: None) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # what "not installed" looks like to import
    monkeypatch.setitem(sys.modules, "confluent_kafka.admin", None)
    cluster = fresh_cluster(7)
    with kafka.patch(cluster):
        import confluent_kafka.admin
        from confluent_kafka import Producer

        assert Producer is kafka.Producer and confluent_kafka.admin is kafka.admin
    assert sys.modules["confluent_kafka"] is None
    with pytest.raises(ImportError):
        import confluent_kafka


def test_use_registers_names_and_no_cluster_is_one_clear_line(unbound: None) -> None:
    with pytest.raises(kafka.NoClusterError) as caught:
        kafka.Producer({"bootstrap.servers": "localhost:9092"})
    assert "\n" not in str(caught.value) and "use(cluster)" in str(caught.value)
    a, b = fresh_cluster(8), fresh_cluster(9)
    try:
        kafka.use(a, "alpha")
        kafka.register("beta", b)
        assert kafka.Producer({"bootstrap.servers": "eos://beta"}).engine.world is b.world
        assert kafka.Producer({"bootstrap.servers": "beta"}).engine.world is b.world
        assert kafka.Producer({"bootstrap.servers": "kafka-1:9092,kafka-2:9092"}).engine.world is a.world
        with pytest.raises(kafka.NoClusterError, match="gamma"):
            kafka.Producer({"bootstrap.servers": "eos://gamma"})
    finally:
        binding.unregister("alpha")
        binding.unregister("beta")
