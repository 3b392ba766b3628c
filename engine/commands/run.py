"""``eos run NAME --seed N``: run one scenario, print its short log, verdict and fingerprint."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("name", help="scenario name (see 'eos scenarios')")
    parser.add_argument("--seed", type=int, default=7, help="the run's seed (default 7)")
    parser.add_argument(
        "--log",
        choices=("short", "none", "faults"),
        default="short",
        help="print the short log (default), only faults and state changes, or nothing",
    )


def run(args: argparse.Namespace) -> int:
    """Run the scenario; exit 0 on PASS, 1 on FAIL, 2 on a bad name."""
    from engine.cli import UsageError
    from engine.scenarios.registry import get_scenario

    try:
        fn = get_scenario(args.name)
    except KeyError as exc:
        raise UsageError(f"eos run: {exc.args[0]}") from None
    print(f"seed: {args.seed}")
    result = fn(args.seed)
    trace = result.cluster.world.trace
    if args.log == "short":
        print(trace.short_log())
    elif args.log == "faults":
        print(trace.short_log(e for e in trace.events if e.kind in ("fault", "state", "mark", "phase")))
    for k, v in result.summary.items():
        print(f"{k}: {v}")
    print(result.verdict())
    print(f"fingerprint: {result.fingerprint}")
    print(
        f"replay: eos run {args.name!r} --seed {args.seed}"
        if " " in args.name
        else f"replay: eos run {args.name} --seed {args.seed}"
    )
    sys.stdout.flush()
    return 0 if result.ok else 1
