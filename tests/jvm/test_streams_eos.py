"""Kafka Streams 4.4.0 under exactly_once_v2 on ``eos serve``: a broker crash and an instance kill, output judged.

``eosmagics.jvm.streams.OrderTotals`` sums order lines per customer (a persistent store with its
changelog, every update to the output topic); :func:`engine.conform.realtime_streams.run_through_faults`
writes the lines with confluent-kafka and breaks things mid-transaction; the committed output is
judged by :func:`engine.check.running_totals.check_running_totals`: each customer's totals are its
prefix sums, one per line, in order, ending at its full sum. The conformance case
``streams.order-totals`` runs the same steps against Kafka 4.4.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.conform.realtime_streams import order_lines, run_through_faults
from tests.wire.conftest import log_values

pytestmark = pytest.mark.slow  # a JVM

TOPICS = (("orders", 2, 3), ("totals", 2, 3))


def _expected(lines: int) -> tuple[dict[str, int], dict[str, int]]:
    totals: dict[str, int] = {}
    counts: dict[str, int] = {}
    for customer, amount in order_lines(lines):
        totals[customer] = totals.get(customer, 0) + amount
        counts[customer] = counts.get(customer, 0) + 1
    return totals, counts


def _exact(judged: dict[str, Any], lines: int) -> None:
    totals, counts = _expected(lines)
    assert judged["anomalies"] == []
    assert judged["lines"] == lines
    assert judged["totals"] == totals
    assert judged["outputs"] == counts


def test_a_broker_crash_mid_transaction_leaves_the_totals_exact(
    served: Any,
    jvm_available: None,
    tmp_path: Path,
) -> None:
    server = served(TOPICS)

    def crash_output_leader() -> None:
        leader = server.fault("leader", topic="totals", partition=0)["broker"]
        server.fault("crash", broker=leader)

    judged = run_through_faults(
        server.client_config(),
        app_id="totals-crash",
        input_topic="orders",
        output_topic="totals",
        workdir=tmp_path,
        kill_broker=crash_output_leader,
        kill_app=False,
    )
    assert judged["open-at-fault"] == [True], (tmp_path / "streams.log").read_text()[-3000:]
    _exact(judged, 60)
    assert server.fault("brokers")["down"] != []


def test_an_instance_killed_mid_transaction_and_restarted_leaves_the_totals_exact(
    served: Any,
    jvm_available: None,
    tmp_path: Path,
) -> None:
    server = served(TOPICS)
    judged = run_through_faults(
        server.client_config(),
        app_id="totals-kill",
        input_topic="orders",
        output_topic="totals",
        workdir=tmp_path,
        kill_app=True,
    )
    assert judged["open-at-fault"] == [True], (tmp_path / "streams.log").read_text()[-3000:]
    _exact(judged, 60)
    # the killed instance's open transaction was aborted: its records are in the log, not in the output
    assert len(log_values(server, "totals")) > 60
