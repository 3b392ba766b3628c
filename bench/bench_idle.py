"""Benchmark: the wall time of one idle simulated minute once the internal topics exist.

What runs: ``Cluster(seed, brokers=3)``, one user topic of 8 partitions (RF=3), a transactional
producer that commits one transaction (which creates ``__transaction_state``, 50 partitions) and a
consumer in a group that commits its offset (which creates ``__consumer_offsets``, 50
partitions). Then nothing happens for ``--minutes`` simulated minutes: the timed span is that
``run_for``. What the cluster still does while idle is its background work: heartbeats, ISR
checks, flushes, the clients' heartbeats and, above all, the followers' fetches, which is what this
measures (Kafka: one fetch per follower and leader, parked ``replica.fetch.wait.max.ms`` while
there is no data, whatever the partition count).

With ``--baseline-tree DIR`` (a checkout of another commit, e.g. a ``git worktree``) the same
child also runs against that checkout's engine in the same run, for a before/after figure.

Prints per engine: wall seconds per idle minute, scheduler events and network messages per idle
minute, and the partitions hosted. Figures only; nothing is asserted.

Usage::

    python bench/bench_idle.py
    python bench/bench_idle.py --baseline-tree /tmp/base --minutes 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import BenchError, machine_note, run_json_child  # noqa: E402 - after the path setup


def child(engine_root: Path, minutes: int, seed: int) -> dict[str, Any]:
    """Build the cluster with the internal topics, then time ``minutes`` idle simulated minutes."""
    sys.path.insert(0, str(engine_root))
    from engine import Cluster

    c = Cluster(seed=seed, brokers=3, keep_trace=False)
    c.create_topic("t", partitions=8, replication_factor=3)
    p = c.producer({"transactional.id": "bench-idle", "linger.ms": 0})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"x", partition=0)
    p.commit_transaction()
    consumer = c.consumer({"group.id": "bench-idle", "enable.auto.commit": False})
    consumer.subscribe(["t"])
    got = []
    for _ in range(50):
        got += consumer.consume(10, timeout=0.5)
        if got:
            break
    consumer.commit(asynchronous=False)
    c.world.run_for(5_000)  # settle
    world = c.world
    hosted = sum(len(b.replicas) for b in c.brokers.values())
    events0, sent0 = world.scheduler.events_run, world.network.sent
    t0 = time.perf_counter()
    world.run_for(minutes * 60_000)
    seconds = time.perf_counter() - t0
    return {
        "engine": str(engine_root),
        "seconds_per_minute": seconds / minutes,
        "events_per_minute": (world.scheduler.events_run - events0) / minutes,
        "messages_per_minute": (world.network.sent - sent0) / minutes,
        "replicas": hosted,
        "consumed": len(got),
    }


def main(argv: list[str] | None = None) -> int:
    """Parse the options; run the child for this checkout (and the baseline's)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=int, default=1, help="idle simulated minutes to time (default 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--baseline-tree", type=Path, help="also time this checkout's engine, in the same run")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args(argv)
    if args.minutes < 1:
        ap.error("--minutes must be >= 1")
    if args.child is not None:
        print(json.dumps(child(args.child, args.minutes, args.seed)))
        return 0
    print(f"idle cluster: 3 brokers, 8 + 50 + 50 partitions (RF=3 user topic), {args.minutes} simulated minute(s)")
    print(machine_note())
    roots = [("this checkout", ROOT)]
    if args.baseline_tree is not None:
        roots.append(("baseline", args.baseline_tree.resolve()))
    rows = []
    for label, root in roots:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(root)]
        cmd += ["--minutes", str(args.minutes), "--seed", str(args.seed)]
        try:
            r = run_json_child(cmd, timeout=args.timeout, what=f"idle minute ({label})")
        except BenchError as exc:
            print(f"{label}: {exc}", file=sys.stderr)
            return 1
        rows.append((label, r))
    print(f"{'engine':<16} {'wall s/min':>10} {'events/min':>11} {'messages/min':>13} {'replicas':>9}")
    for label, r in rows:
        print(
            f"{label:<16} {r['seconds_per_minute']:>10.3f} {r['events_per_minute']:>11,.0f} "
            f"{r['messages_per_minute']:>13,.0f} {r['replicas']:>9}"
        )
    if len(rows) == 2:
        now, base = rows[0][1], rows[1][1]
        print(f"idle minute: {base['seconds_per_minute'] / now['seconds_per_minute']:.1f}x faster than the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
