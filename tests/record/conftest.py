"""Fixtures for recording real Kafka clients against librdkafka's in-process mock cluster.

``mock_cluster`` starts :class:`engine.record.workloads.MockCluster` (three brokers, in this
process, real sockets on 127.0.0.1) once per module; ``mock_config`` is its client config with
short timeouts, so that a test that fails does so quickly; ``topic`` is a topic of the test's
own (the mock creates it on first use), so tests sharing a cluster never read each other's
records. The tests are skipped when confluent-kafka (the ``record`` extra) is not installed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")

from engine.record.workloads import MockCluster  # after the skip: it imports confluent_kafka

#: Client settings that make a failing test fail in seconds, not minutes.
QUICK: dict[str, Any] = {"socket.timeout.ms": 5_000, "message.timeout.ms": 10_000}


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[MockCluster]:
    """A three-broker mock cluster for the module's tests."""
    with MockCluster(brokers=3) as cluster:
        yield cluster


@pytest.fixture
def mock_config(mock_cluster: MockCluster) -> dict[str, Any]:
    """The mock's client config (bootstrap servers and quick timeouts)."""
    return mock_cluster.config(**QUICK)


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name of this test's own."""
    return "rec-" + re.sub(r"[^A-Za-z0-9_-]", "-", request.node.name)[:180]
