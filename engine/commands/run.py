"""``eos run NAME --seed N [--mutant M..] [--swarm] [--log [MODE]]``: run one scenario, print a summary.

By default the output is a summary: the scenario, the seed, the counts that matter, the verdict
(with each finding on its own line when it failed), the fingerprint and the replay command. The
short log comes before the summary only when asked for: ``--log`` (the whole short log, the same
as ``--log short``), ``--log faults`` (faults and state changes only) or ``--log auto`` (the whole
log when it is small, else faults only). The last two lines are always ``fingerprint: HASH`` and
``replay: eos run ...``; scripts and tests grep them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

#: Above this many trace events, ``--log auto`` prints faults and state changes only.
AUTO_SHORT_LOG_LIMIT = 5_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("name", help="scenario name (see 'eos scenarios'); quote names with spaces")
    parser.add_argument("--seed", type=int, default=7, help="the run's seed (default 7)")
    parser.add_argument("--mutant", help="run a weakened configuration, M1..M19 (see 'eos mutants --list')")
    parser.add_argument("--swarm", action="store_true", help="replace the fault plan with a swarm plan for this seed")
    parser.add_argument(
        "--log",
        nargs="?",
        const="short",
        choices=("short", "faults", "auto", "none"),
        default="none",
        help=(
            "also print the run's short log before the summary: --log alone prints all of it (same as "
            "'short'); 'faults' only faults and state changes; 'auto' all when small, else faults; "
            "'none' (default) the summary only"
        ),
    )


def run(args: argparse.Namespace) -> int:
    """Run the scenario; exit 0 on PASS (or SKIP), 1 on FAIL, 2 on a bad name."""
    from engine.cli import UsageError
    from engine.scenarios.registry import get_scenario, is_catalog
    from engine.scenarios.summary import summary_lines

    try:
        fn = get_scenario(args.name)
    except KeyError as exc:
        raise UsageError(f"eos run: {exc.args[0]}") from None
    kwargs: dict[str, Any] = {}
    if args.mutant or args.swarm:
        if not is_catalog(args.name):
            raise UsageError(f"eos run: '{args.name}' takes no --mutant/--swarm; pick a catalog scenario")
        if args.mutant:
            from engine.scenarios.mutants import get_mutant

            try:
                kwargs["mutant"] = get_mutant(args.mutant)
            except KeyError as exc:
                raise UsageError(f"eos run: {exc.args[0]}") from None
        kwargs["swarm"] = args.swarm
    result = fn(args.seed, **kwargs)
    trace = result.cluster.world.trace
    mode = args.log
    if mode == "auto":
        mode = "short" if len(trace) <= AUTO_SHORT_LOG_LIMIT else "faults"
    if mode == "short":
        print(trace.short_log())
    elif mode == "faults":
        print(trace.short_log(e for e in trace.events if e.kind in ("fault", "state", "mark", "phase", "site")))
    for line in summary_lines(result):
        print(line)
    sys.stdout.flush()
    return 0 if result.ok else 1
