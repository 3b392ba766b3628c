"""Fixtures of the Java tests: the programs of ``jvm/``, when they are built.

``jvm_available`` skips a test with one line saying what to run when Java or the built jar
(``bash scripts/build-jvm.sh``) is missing, and fails it instead under ``CI=true``. ``served`` is
tests/wire's served-cluster factory.
"""

from __future__ import annotations

import os

import pytest

from engine.conform.realtime_jvm import jvm_problem
from tests.wire.conftest import served  # noqa: F401  (the served-cluster factory, as in tests/wire)


@pytest.fixture(scope="session")
def jvm_available() -> None:
    problem = jvm_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Java programs are unavailable under CI=true: {problem}")
        pytest.skip(problem)
