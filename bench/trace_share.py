"""The trace's share of a produce batch: the produce path with and without its trace, same run.

Runs ``bench_produce.py``'s engine child (3 brokers, 8 partitions, RF=3, acks=all, idempotent)
in fresh processes, alternately as it is and with the trace made free (``Trace.emit`` and
``Trace.emit_fields`` only count the event: no row, no hashing; what the emitters build before
the call still runs), and prints the CPU µs per batch of each (best of ``--runs``) and the
difference: the trace's share. CPU time (``time.process_time``), not wall time, because the
machine is shared. With ``--baseline-tree DIR`` another checkout's engine runs too, in the same
run. Figures only; the engine with its trace made free is not a valid run (its fingerprint is
meaningless).

Usage::

    python bench/trace_share.py                                  # batch 1, 20k records, 3 runs
    python bench/trace_share.py --batch 100 --records 300000
    python bench/trace_share.py --baseline-tree /tmp/base
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(engine_root: Path, records: int, batch: int, free_trace: bool) -> float:
    """Run the produce path once against ``engine_root``'s engine; return CPU µs per batch."""
    sys.path.insert(0, str(engine_root))
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_produce  # this checkout's bench; the engine it imports is engine_root's

    sys.path.insert(0, str(engine_root))  # bench_produce put this checkout first; undo that
    bench_produce.time.perf_counter = time.process_time  # type: ignore[attr-defined]  # CPU time: the machine is shared
    if free_trace:
        from engine.sim import trace

        def count_only(self: trace.Trace, *_args: object) -> None:
            self.count += 1

        trace.Trace.emit = count_only  # type: ignore[method-assign,assignment]
        if hasattr(trace.Trace, "emit_fields"):
            trace.Trace.emit_fields = count_only  # type: ignore[method-assign,assignment]
    chunks = bench_produce.make_input(records, batch)
    r = bench_produce.run_engine(chunks, True, 1)
    return r["seconds"] / r["batches"] * 1e6


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run each variant ``--runs`` times alternately, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline-tree", type=Path)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--free-trace", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.records, args.batch, args.free_trace)))
        return 0
    roots = [("now", ROOT)] + ([("baseline", args.baseline_tree.resolve())] if args.baseline_tree else [])
    best: dict[tuple[str, bool], float] = {}
    for _ in range(args.runs):
        for label, root in roots:
            for free in (False, True):
                cmd = [sys.executable, __file__, "--child", str(root), "--records", str(args.records)]
                cmd += ["--batch", str(args.batch)] + (["--free-trace"] if free else [])
                out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=1800)
                if out.returncode != 0:
                    print(f"{label}: run failed:\n{out.stderr[-2000:]}", file=sys.stderr)
                    return 1
                us = json.loads(out.stdout.strip().splitlines()[-1])
                best[(label, free)] = min(us, best.get((label, free), us))
    print(f"CPU µs per batch (best of {args.runs}): batch {args.batch}, {args.records:,} records, idempotent")
    print(f"{'engine':<10}{'with trace':>12}{'trace free':>12}{'trace µs':>10}{'share':>8}")
    for label, _root in roots:
        with_trace, free = best[(label, False)], best[(label, True)]
        share = (with_trace - free) / with_trace
        print(f"{label:<10}{with_trace:>12.1f}{free:>12.1f}{with_trace - free:>10.1f}{share:>8.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
