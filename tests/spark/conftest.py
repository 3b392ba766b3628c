"""Shared fixtures of the Spark tests: one quiet local[2] session per test module.

``spark`` starts the session through :func:`eos_magics.spark.session.start` (the same helper the
notebooks and ``eos-spark`` use) and stops it when the module ends, keeping the JVM up for the
whole pytest process, so the second module's session starts in well under a second. ``start()``
puts Spark's Kafka source's jars on that JVM's class path when they were fetched
(``scripts/fetch-spark-kafka.sh``), so ``test_spark_kafka_source.py`` needs no JVM of its own.
"""

from __future__ import annotations

import pytest

from eos_magics.spark import session as spark_session


@pytest.fixture(scope="module")
def spark():
    s = spark_session.start()
    yield s
    spark_session.stop(keep_jvm=True)  # the next module's session reuses the JVM
