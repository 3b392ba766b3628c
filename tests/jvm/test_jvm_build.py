"""The Java programs of ``jvm/`` are built at set-up and run against kafka-clients 4.4.0.

Method: run the build's smoke program through :func:`engine.conform.realtime_jvm.java_command`.
"""

from __future__ import annotations

import subprocess

import pytest

from engine.conform.realtime_jvm import java_command

pytestmark = pytest.mark.slow  # a JVM


def test_the_java_programs_run_on_kafka_clients_4_4(jvm_available) -> None:
    out = subprocess.run(java_command("eosmagics.jvm.Version"), capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "4.4.0"
