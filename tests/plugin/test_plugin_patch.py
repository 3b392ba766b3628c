"""The plugin with the confluent-kafka drop-in: the patch is on during the test and off after it.

Goal: under ``eos_cluster``, ``import confluent_kafka`` is the simulated module bound to the test's
cluster (``eos_magics.kafka.patch``), and after the test, even one that raised,
``sys.modules['confluent_kafka']`` is the real module again, or absent when it was absent before;
an application written with confluent-kafka's API is judged by ``eos_check`` as the engine's own
clients are (a read_uncommitted consumer that reads an aborted transaction: G1a).

Method: inner pytest sessions in subprocesses (``runpytest_subprocess``), so that what one test
imports cannot leak into another. Skipped while ``eos_magics.kafka`` is not there.
"""

from __future__ import annotations

import importlib.util

import pytest

from eos_magics.pytest_plugin import has_drop_in

pytestmark = pytest.mark.skipif(
    not has_drop_in(), reason="eos_magics.kafka (the confluent-kafka drop-in) is not there yet"
)

#: The real module's file, as the inner tests compare it.
REAL_ORIGIN = """
import importlib.util
import sys

REAL = importlib.util.find_spec("confluent_kafka").origin

def is_real_or_absent():
    module = sys.modules.get("confluent_kafka")
    return module is None or getattr(module, "__file__", None) == REAL
"""

RAISES = """
def test_raises(eos_cluster):
    import confluent_kafka

    assert eos_cluster.patched
    assert sys.modules["confluent_kafka"] is confluent_kafka
    assert getattr(confluent_kafka, "__file__", None) != REAL
    raise RuntimeError("the application broke")

def test_after():
    assert is_real_or_absent()
"""


@pytest.mark.slow
@pytest.mark.parametrize("before", ["imported", "absent"])
def test_the_patch_is_on_during_the_test_and_restored_after_it_raises(pytester: pytest.Pytester, before: str) -> None:
    assert importlib.util.find_spec("confluent_kafka") is not None, "the test extra installs confluent-kafka"
    head = "import confluent_kafka\n" if before == "imported" else ""
    pytester.makepyfile(test_patch=head + REAL_ORIGIN + RAISES)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*RuntimeError: the application broke*", "*- eos -*", "replay: pytest *"])


APP = """
import pytest

CONF = {"bootstrap.servers": "localhost:9092"}

def transfer(*, commit):
    from confluent_kafka import Producer

    p = Producer({**CONF, "transactional.id": "t1"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("orders", value=b"o-1", partition=0)
    p.flush()
    if commit:
        p.commit_transaction()
    else:
        p.abort_transaction()

@pytest.mark.eos_cluster(topics={"orders": 1})
@pytest.mark.eos_check(mode="eos")
def test_commit(eos_cluster):
    transfer(commit=True)

@pytest.mark.eos_cluster(topics={"orders": 1})
@pytest.mark.eos_check(mode="eos")
def test_aborted_read(eos_cluster):
    from confluent_kafka import Consumer, TopicPartition

    transfer(commit=False)
    c = Consumer({**CONF, "group.id": "g", "isolation.level": "read_uncommitted", "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("orders", 0)])
    assert [m.value() for m in c.consume(10, timeout=1.0)] == [b"o-1"]
    c.close()
"""


@pytest.mark.slow
def test_confluent_kafka_code_is_judged_through_the_patch(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_app=APP)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_aborted_read _*",
            "eos_check(mode='eos'): the client history has forbidden anomalies",
            "forbidden: G1a x1",
            "*- eos -*",
            "replay: pytest test_app.py::test_aborted_read --eos-seed *",
        ]
    )
