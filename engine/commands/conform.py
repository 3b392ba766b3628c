"""``eos conform``: run the conformance cases against a cluster and compare it with Kafka 4.4.

    eos conform                                   # eos serve vs the last Kafka 4.4 run (no Java needed)
    eos conform --reference live                  # eos serve vs Kafka 4.4 started here (needs the jars)
    eos conform --bootstrap HOST:PORT [--config sasl.username=... ...] \\
        [--kill 'CMD {broker}' --restart 'CMD {broker}' [--pause ... --resume ...]]
    eos conform --mock                            # librdkafka's own mock cluster, in this process

Each case is a client program (confluent-kafka, some kafka-python); the program's observations on
the cluster under test are compared with Kafka 4.4's, and each recorded history is judged by
``eos check``. Prints a table: case, both verdicts, the outcome (same, same within bounds,
documented, diverges) and the first difference. Exit 0 when nothing diverges, 1 otherwise.
Without ``--kill`` and ``--restart`` the cases that kill brokers are skipped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

#: The observations of the last Kafka 4.4 run, shipped with the package.
PACKAGED_REFERENCE = Path(__file__).resolve().parents[1] / "conform" / "kafka-4.4.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the conform arguments."""
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="the cluster under test (default: eos serve, here)")
    p.add_argument(
        "--mock", action="store_true", help="test librdkafka's in-process mock cluster (test.mock.num.brokers=3)"
    )
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="client setting for --bootstrap, confluent-kafka names (sasl.username=..., security.protocol=...)",
    )
    for action in ("kill", "restart", "pause", "resume"):
        p.add_argument(f"--{action}", metavar="CMD", help=f"command that {action}s broker {{broker}} (for fault cases)")
    p.add_argument(
        "--reference",
        default=str(PACKAGED_REFERENCE),
        metavar="live|FILE",
        help="'live' starts Kafka 4.4 here (needs bash scripts/fetch-kafka.sh); a FILE is a saved run's "
        "results (default: the packaged Kafka 4.4 run)",
    )
    p.add_argument("--cases", action="append", default=[], metavar="TEXT", help="only cases whose name has TEXT")
    p.add_argument("--no-faults", action="store_true", help="skip the cases that kill or pause brokers")
    p.add_argument("--save", metavar="FILE", help="write every observation and judgement as JSON")
    p.add_argument("--docs", metavar="FILE", help="write the Markdown table (docs/conformance.md's is generated so)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")


def _reference(args: argparse.Namespace) -> Any:
    from engine.cli import UsageError
    from engine.conform.runner import load_results

    if args.reference != "live":
        path = Path(args.reference)
        if not path.is_file():
            raise UsageError(f"eos conform: --reference {path}: no such results file (or use --reference live)")
        return load_results(path)
    from engine.conform.realtime_reference import KafkaReference, ReferenceClusterError
    from engine.conform.targets import ReferenceTarget

    try:
        return ReferenceTarget(KafkaReference(brokers=3).start())
    except ReferenceClusterError as exc:
        raise UsageError(f"eos conform: {exc}") from None


def _under_test(args: argparse.Namespace) -> Any:
    from engine.conform.targets import BootstrapTarget, MockTarget, ServedTarget

    if args.mock:
        return MockTarget()
    if args.bootstrap is None:
        return ServedTarget()
    commands = {a: getattr(args, a) for a in ("kill", "restart", "pause", "resume") if getattr(args, a)}
    from engine.commands.serve import parse_config

    config = parse_config(args.config, "eos conform", "sasl.mechanism=PLAIN")
    return BootstrapTarget({"bootstrap.servers": args.bootstrap, **config}, commands)


def run(args: argparse.Namespace) -> int:
    """Run the cases; print the table; 0 when nothing diverges."""
    from engine.conform.runner import (
        outcome_counts,
        render_table,
        run_suite,
        save_results,
        select_cases,
        summary,
        write_docs,
    )

    cases = select_cases(args.cases, faults=not args.no_faults)
    if args.list:
        for c in cases:
            print(f"{c.name:40} {'faults ' if c.faults else ''}{c.title}")
        return 0
    reference = _reference(args)
    other = _under_test(args)
    ref_name = "Kafka 4.4" if not isinstance(reference, dict) else "Kafka 4.4 (saved)"

    def show(result: Any) -> None:
        first = result.judgement.differences[0] if result.judgement.differences else ""
        print(f"{result.case.name:40} {result.judgement.outcome:20} {first[:120]}")
        sys.stdout.flush()

    try:
        results = run_suite(reference, other, cases, on_result=show)
    finally:
        other.close()
        if not isinstance(reference, dict):
            reference.close()
    table = render_table(results, reference=ref_name, other=other.name)
    print()
    print(table)
    print(summary(results))
    if args.save:
        save_results(results, args.save, reference=ref_name, other=other.name)
    if args.docs:
        write_docs(args.docs, results, reference=ref_name, other=other.name)
    return 1 if outcome_counts(results).get("diverges") else 0
