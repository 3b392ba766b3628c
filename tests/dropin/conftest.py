"""Fixtures of the drop-in tests: a small simulated cluster bound as current, and the binding restored after.

``cluster`` is a 3-broker engine cluster (few internal partitions, so it starts fast) with topics
``t`` (2 partitions) and ``out`` (1 partition), made current with ``eos_magics.kafka.use`` and
registered as ``dropin``; after the test the binding is as it was before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import eos_magics.kafka as kafka
from engine import Cluster
from eos_magics.kafka import binding

BROKER_CONFIG: dict[str, Any] = {
    "min.insync.replicas": 2,
    "transaction.state.log.num.partitions": 3,
    "offsets.topic.num.partitions": 3,
}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A bound cluster with topics ``t`` (2 partitions) and ``out`` (1 partition)."""
    c = Cluster(seed=11, brokers=3, config=BROKER_CONFIG)
    c.create_topic("t", partitions=2)
    c.create_topic("out", partitions=1)
    before = binding.set_current(None)
    kafka.use(c, "dropin")
    yield c
    binding.unregister("dropin")
    binding.set_current(before)


@pytest.fixture
def unbound(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No current cluster during the test (and no notebook session), restored after."""
    import eos_magics

    monkeypatch.setattr(eos_magics, "_LOADED", {})
    before = binding.set_current(None)
    yield
    binding.set_current(before)
