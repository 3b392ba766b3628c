"""Kafka Streams under exactly_once_v2: the order-totals app through a broker kill and an instance kill.

The program is :func:`engine.conform.realtime_streams.run_through_faults`, the steps
``tests/jvm/test_streams_eos.py`` takes on ``eos serve``: order lines written with confluent-kafka,
``eosmagics.jvm.streams.OrderTotals`` (Kafka Streams 4.4.0) summing them per customer, the leader
of an output partition killed while a transaction of the app is open, then the app's JVM
SIGKILLed mid-transaction and started again with the same ``application.id`` and a wiped state
directory. What is observed is the judged output: the anomalies (none when exact), each customer's
last total and its number of committed totals (one per line).
"""

from __future__ import annotations

import tempfile

from engine.conform.case import Bounds, Ctx, case
from engine.conform.cases.common import make_topic


@case(
    "streams.order-totals",
    "streams",
    "Kafka Streams exactly_once_v2 summing order lines per customer: a broker and the instance killed "
    "mid-transaction, the committed totals exact",
    faults=True,
    bounds=Bounds(3.0, 20.0),
    needs=("java", "create-topics"),
)
def order_totals(ctx: Ctx) -> None:
    from engine.conform.realtime_streams import run_through_faults

    orders = make_topic(ctx, "orders", 2, 3)
    totals = make_topic(ctx, "totals", 2, 3)
    with tempfile.TemporaryDirectory(prefix="eos-streams-") as workdir:
        judged = run_through_faults(
            ctx.config(),
            app_id=ctx.name("app"),
            input_topic=orders,
            output_topic=totals,
            workdir=workdir,
            kill_broker=lambda: ctx.fault(f"kill leader {totals} 0"),
            kill_app=True,
            keep=ctx.keep,
        )
    # whether each fault found a transaction open is a race of wall-clock timing (30 s of waiting
    # for one), asserted by tests/jvm/test_streams_eos.py on eos serve, not compared here
    for key in ("anomalies", "totals", "outputs", "lines"):
        ctx.observe(key, judged[key])
