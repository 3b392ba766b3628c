"""The demo scenario: an idempotent producer through a lost ack and a leader crash.

Three brokers, one partition with replication factor 3 and ``min.insync.replicas=2``. An
idempotent producer (acks=all, 5 in flight) sends 200 records in small batches. Faults:

- the response to the producer's 4th produce request is dropped after the leader appended it
  (a lost ack): the producer retries and the leader answers from its dedup window;
- at 300 ms the partition leader crashes; the controller fences it after the session timeout and
  elects a follower from the ISR, which already holds the replicated batches and their producer
  state, so retries are deduplicated there too;
- at 12 s the old leader restarts, truncates to the new leader's log and rejoins the ISR.

Verdict: a read_committed consumer reads the partition from the start; every acknowledged record
must be there exactly once, in send order.
"""

from __future__ import annotations

from engine.cluster import Cluster
from engine.scenarios.result import ScenarioResult

RECORDS = 200

#: The registry's one-line description (:func:`engine.scenarios.registry.load_all` registers ``demo``).
DESCRIPTION = "idempotent producer through a lost ack and a leader crash; exactly once, in order"


def demo(seed: int = 7, *, idempotence: bool = True) -> ScenarioResult:
    """Run the demo scenario."""
    from engine.sim.network import NetworkOptions

    c = Cluster(
        seed=seed,
        brokers=3,
        config={"min.insync.replicas": 2},
        network=NetworkOptions(latency_ms_min=1, latency_ms_max=4),
    )
    c.create_topic("demo", partitions=1, replication_factor=3)
    p = c.producer(
        {
            "enable.idempotence": idempotence,
            "acks": "all",
            "linger.ms": 2,
            "batch.size": 400,
            "request.timeout.ms": 3_000,
            "retry.backoff.ms": 50,
        }
    )
    c.add_rule("drop", kind="response", body_type="ProduceResponse", skip=3, count=1)
    acked: dict[bytes, int] = {}

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked[msg.value()] = msg.offset()  # type: ignore[attr-defined]

    leader = c.leader("demo")
    c.world.scheduler.call_at(c.now_ms + 300, c.crash, leader)
    c.world.scheduler.call_at(c.now_ms + 12_000, c.restart, leader)
    for i in range(RECORDS):
        p.produce("demo", value=f"demo-{i:04d}".encode(), on_delivery=delivered)
        if i % 20 == 19:
            p.poll(0.05)
    p.flush()
    c.run_for(20_000)
    consumer = c.consumer({"isolation.level": "read_committed"})
    consumer.assign([("demo", 0)])
    seen = []
    while True:
        batch = consumer.consume(500, timeout=1.0)
        if not batch:
            break
        seen.extend(m.value() for m in batch)
    findings = []
    dups = sorted({v for v in seen if seen.count(v) > 1})
    if dups:
        findings.append(f"duplicate: {len(dups)} values read twice, e.g. {dups[0]!r}")
    lost = sorted(v for v in acked if v not in set(seen))
    if lost:
        findings.append(f"lost-write: {len(lost)} acknowledged values never read, e.g. {lost[0]!r}")
    order = [v for v in seen if v in acked]
    if order != sorted(order):
        findings.append("order: records are not in send order")
    summary = {
        "acked": len(acked),
        "read": len(seen),
        "leader_before": leader,
        "leader_after": c.leader("demo"),
    }
    return ScenarioResult("demo", seed, c, findings=findings, summary=summary)
