"""``eos run NAME --seed N [--mutant M..] [--swarm]``: run one scenario and print its log and verdict."""

from __future__ import annotations

import argparse
import sys

#: Above this many trace events, ``--log auto`` prints faults and state changes only.
AUTO_SHORT_LOG_LIMIT = 5_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("name", help="scenario name (see 'eos scenarios'); quote names with spaces")
    parser.add_argument("--seed", type=int, default=7, help="the run's seed (default 7)")
    parser.add_argument("--mutant", help="run a weakened configuration, M1..M18 (see 'eos mutants --list')")
    parser.add_argument("--swarm", action="store_true", help="replace the fault plan with a swarm plan for this seed")
    parser.add_argument(
        "--log",
        choices=("auto", "short", "faults", "none"),
        default="auto",
        help="print the whole short log, only faults and state changes, or nothing (auto: short when small)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the scenario; exit 0 on PASS, 1 on FAIL, 2 on a bad name."""
    from engine.cli import UsageError
    from engine.scenarios.registry import get_scenario

    try:
        fn = get_scenario(args.name)
    except KeyError as exc:
        raise UsageError(f"eos run: {exc.args[0]}") from None
    kwargs = {}
    if args.mutant or args.swarm:
        if not hasattr(fn, "spec"):
            raise UsageError(f"eos run: '{args.name}' takes no --mutant/--swarm; pick a catalog scenario")
        if args.mutant:
            from engine.scenarios.mutants import get_mutant

            try:
                kwargs["mutant"] = get_mutant(args.mutant)
            except KeyError as exc:
                raise UsageError(f"eos run: {exc.args[0]}") from None
        kwargs["swarm"] = args.swarm
    print(f"seed: {args.seed}")
    result = fn(args.seed, **kwargs)
    trace = result.cluster.world.trace
    mode = args.log
    if mode == "auto":
        mode = "short" if len(trace) <= AUTO_SHORT_LOG_LIMIT else "faults"
    if mode == "short":
        print(trace.short_log())
    elif mode == "faults":
        print(trace.short_log(e for e in trace.events if e.kind in ("fault", "state", "mark", "phase", "site")))
    for k, v in result.summary.items():
        print(f"{k}: {v}")
    print(result.verdict())
    print(f"fingerprint: {result.fingerprint}")
    name = f"'{args.name}'" if " " in args.name else args.name
    extra = (f" --mutant {args.mutant}" if args.mutant else "") + (" --swarm" if args.swarm else "")
    print(f"replay: eos run {name} --seed {args.seed}{extra}")
    sys.stdout.flush()
    return 0 if result.ok else 1
