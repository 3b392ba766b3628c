"""Profile the produce path and print Python calls per batch, per layer (module of the engine).

Runs ``bench_produce.py``'s engine child (3 brokers, 8 partitions, RF=3, acks=all, idempotent)
under :mod:`cProfile` in a fresh process, then sums the profile's call counts and own time by
engine module (``broker/produce``, ``sim/network``, ...); C built-ins (``len``, ``dict.get``,
``heappush`` ...) are one row, library code another. Calls per batch is the figure that says
how much work the path does, whatever the machine; the time shares are cProfile's (it weighs
calls more than the plain run does), so read them as proportions only.

With ``--baseline-tree DIR`` the same profile runs against that checkout's engine too, and the
two tables are printed side by side.

Usage::

    python bench/profile_layers.py                         # batch 1, 20k batches
    python bench/profile_layers.py --batch 100 --records 200000
    python bench/profile_layers.py --baseline-tree /tmp/base
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def layer_of(filename: str, function: str) -> str:
    """Return the layer a profiled function belongs to."""
    if "/engine/" in filename:
        return filename.split("/engine/", 1)[1].rsplit(".", 1)[0]
    if filename == "~":
        return "(C built-ins)"
    if filename.endswith("bench_produce.py"):
        return "(bench driver)"
    return "(library)"


def profile_child(engine_root: Path, records: int, batch: int) -> dict[str, object]:
    """Profile one produce run against ``engine_root``'s engine; return calls and time per layer."""
    sys.path.insert(0, str(engine_root))
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_produce  # this checkout's bench; the engine it imports is engine_root's

    sys.path.insert(0, str(engine_root))  # bench_produce put this checkout first; undo that

    chunks = bench_produce.make_input(records, batch)
    prof = cProfile.Profile()
    prof.enable()
    bench_produce.run_engine(chunks, True, 1)
    prof.disable()
    with tempfile.NamedTemporaryFile(suffix=".prof") as f:
        prof.dump_stats(f.name)
        stats = pstats.Stats(f.name)
    calls: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for (filename, _line, function), (_cc, ncalls, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        layer = layer_of(filename, function)
        calls[layer] += ncalls
        own[layer] += tottime
    return {"batches": len(chunks), "calls": dict(calls), "own": dict(own)}


def main(argv: list[str] | None = None) -> int:
    """Parse the options, profile each checkout in a fresh process, print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--baseline-tree", type=Path)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(profile_child(args.child, args.records, args.batch)))
        return 0
    roots = [("now", ROOT)] + ([("baseline", args.baseline_tree.resolve())] if args.baseline_tree else [])
    results = {}
    for label, root in roots:
        cmd = [sys.executable, __file__, "--child", str(root), "--records", str(args.records)]
        cmd += ["--batch", str(args.batch)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=1800)
        if out.returncode != 0:
            print(f"{label}: profile failed:\n{out.stderr[-2000:]}", file=sys.stderr)
            return 1
        results[label] = json.loads(out.stdout.strip().splitlines()[-1])
    labels = list(results)
    layers = sorted({k for r in results.values() for k in r["calls"]}, key=lambda k: -results["now"]["calls"].get(k, 0))
    print(f"Python calls per batch, by layer: batch {args.batch}, {args.records:,} records, idempotent, acks=all, RF=3")
    print(f"{'layer':<34}" + "".join(f"{lb + ' calls':>16}{lb + ' time %':>14}" for lb in labels))
    totals = {lb: sum(results[lb]["calls"].values()) / results[lb]["batches"] for lb in labels}
    for layer in layers:
        row = f"{layer:<34}"
        for lb in labels:
            r = results[lb]
            n = r["calls"].get(layer, 0) / r["batches"]
            t = 100 * r["own"].get(layer, 0.0) / max(1e-9, sum(r["own"].values()))
            row += f"{n:>16.1f}{t:>14.1f}"
        if any(results[lb]["calls"].get(layer, 0) / results[lb]["batches"] >= 0.05 for lb in labels):
            print(row)
    print(f"{'total':<34}" + "".join(f"{totals[lb]:>16.1f}{100.0:>14.1f}" for lb in labels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
