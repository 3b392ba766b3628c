"""Fixtures of the conformance tests: the Kafka 4.4 reference cluster, when its jars are here.

``kafka_reference_available`` skips a test with one line saying what to install when Java or the
Kafka jars (``bash scripts/fetch-kafka.sh``) are missing, and fails it instead under ``CI=true``,
where a missing oracle must not pass silently. ``kafka_reference`` is one 3-broker cluster per
test module (starting one takes seconds), stopped when the module ends.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from engine.conform.realtime_reference import KafkaReference, ReferenceClusterError, find_libs


@pytest.fixture(scope="session")
def kafka_reference_available() -> None:
    problem = None
    if shutil.which("java") is None:
        problem = "Java 17 not found (apt-get install openjdk-17-jre-headless), then: bash scripts/fetch-kafka.sh"
    else:
        try:
            find_libs()
        except ReferenceClusterError as exc:
            problem = str(exc)
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Kafka reference cluster unavailable under CI=true: {problem}")
        pytest.skip(problem)


@pytest.fixture(scope="module")
def kafka_reference(kafka_reference_available: None) -> Iterator[KafkaReference]:
    with KafkaReference(brokers=3) as ref:
        yield ref
