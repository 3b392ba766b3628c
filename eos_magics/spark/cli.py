"""The ``eos-spark`` command: ``eos sweep`` with the seeds run on Spark executors.

Role
----
``eos-spark sweep NAME.. --seeds 1..50 [--mutant M] [--swarm] [--master URL] [--conf K=V] [--partitions N]``
runs :func:`eos_magics.spark.sweep.sweep` and prints the same table, summary line and failures
as ``eos sweep --quiet`` for the same runs (rows in the same order). ``eos-spark status`` says
whether a Spark session runs in this process, and which master and driver memory a new one
would get; it starts nothing.

Invariants
----------
* Exit statuses are ``eos``'s: 0 every run passed, 1 a run failed, 2 bad arguments or a Spark
  that cannot start or run (one line on stderr, no traceback), 70 an internal error (a bug:
  one line, then the traceback), 130 interrupted, 141 stdout closed early.
* Every argument is checked before Spark starts: a bad one never launches a JVM.
* A session that ``sweep`` started is stopped when it ends; one that already ran is left alone.

What it does not do
-------------------
No ``--shrink`` (run ``eos sweep --shrink`` on the failing seed) and no progress bar: the runs
happen inside one Spark job.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import traceback
from collections.abc import Sequence
from typing import TextIO

from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.sweep import seeds_option

__all__ = ["build_parser", "main"]

#: The exit statuses, as ``eos`` uses them (engine/cli.py).
EXIT_USAGE, EXIT_INTERNAL_ERROR, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 2, 70, 130, 141
_EPILOG = (
    "exit status: 0 every run passed; 1 a run failed; 2 bad arguments, or Spark cannot start or run; "
    "70 internal error (a bug in eos, please report it); 141 stdout closed early"
)


class _UsageError(Exception):
    """Bad command-line arguments; the message says what to type instead."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{self.prog}: {message} (try '{self.prog} --help')")


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be an int >= 1, got {text!r}")
    return int(text)


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip().startswith("spark."):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with a spark.* key, got {text!r}")
    return key.strip(), value


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``eos-spark`` and its two subcommands."""
    parser = _Parser(
        prog="eos-spark", description="Seed sweeps of the simulated Kafka cluster on Spark.", epilog=_EPILOG
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sw = sub.add_parser(
        "sweep",
        help="run catalog scenarios over many seeds on Spark and print eos sweep's table",
        description="Run catalog scenarios over many seeds on Spark executors; print what 'eos sweep' prints.",
        epilog=_EPILOG,
    )
    sw.add_argument("name", nargs="+", help="catalog scenario names, or 'all'")
    sw.add_argument(
        "--seeds",
        type=seeds_option,
        default=20,
        help="N (seeds 1..N, default 20), a range A..B, or a list such as 3,17,40..45",
    )
    sw.add_argument("--mutant", help="sweep a weakened configuration M1..M19")
    sw.add_argument("--swarm", action="store_true", help="swarm mode: a random subset of fault kinds per seed")
    sw.add_argument("--master", help="local[N], spark://HOST:PORT, yarn, k8s://URL or sc://HOST:PORT (Spark Connect)")
    sw.add_argument(
        "--conf",
        action="append",
        type=_setting,
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the session this command starts, e.g. spark.archives=env.tar.gz#env (repeatable)",
    )
    sw.add_argument("--partitions", type=_positive, help="Spark partitions for the runs (default twice the cores)")
    sw.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    sub.add_parser(
        "status",
        help="say whether a Spark session runs here and what a new one would use (starts nothing)",
        description="Say whether a Spark session runs in this process; start nothing.",
    )
    return parser


def _say(text: str, stream: TextIO | None = None) -> None:
    """Write one line (the command's only way to print: stdout by default)."""
    out = sys.stdout if stream is None else stream
    out.write(f"{text}\n")
    out.flush()


def _note(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        _say(f"eos-spark: {text}", sys.stderr)


def _sweep(args: argparse.Namespace) -> int:
    from engine.scenarios.sweep import print_report
    from eos_magics.spark import session
    from eos_magics.spark import sweep as spark_sweep

    names = args.name[0] if len(args.name) == 1 else args.name
    if "all" in args.name and len(args.name) > 1:
        raise _UsageError("eos-spark sweep: 'all' already names every scenario; give it alone")
    tasks = spark_sweep.plan(names, args.seeds, args.mutant, swarm=args.swarm)
    started_here = session.active() is None
    t0 = time.perf_counter()
    spark = session.start(args.master, config=dict(args.conf) or None)
    try:
        _note(args, f"{len(tasks)} runs on Spark {spark.version} ({args.master or 'default master'})")
        df = spark_sweep.sweep(spark, names, args.seeds, args.mutant, swarm=args.swarm, partitions=args.partitions)
        by_task = {(r.name, r.seed): r for r in spark_sweep.to_rows(df)}
    finally:
        if started_here:
            session.stop()
    _note(args, f"done in {time.perf_counter() - t0:.1f} s (Spark start included)")
    rows = [by_task[(name, seed)] for name, seed, _, _ in tasks]  # eos sweep's order: catalog, then seed
    failures = print_report(rows, tasks[0][2])
    return 1 if failures else 0


def _status() -> int:
    from eos_magics.spark import session

    running = session.status()
    if running is not None:
        _say(str(running))
        return 0
    master = os.environ.get("EOS_SPARK_MASTER") or session.DEFAULT_MASTER
    _say("no Spark session runs in this process; 'eos-spark sweep' starts one for its runs and stops it after")
    _say(f"a new session would use master {master} and driver memory {session.driver_memory()}")
    return 0


def _dispatch(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        raise _UsageError(
            "eos-spark: a command is needed, e.g. eos-spark sweep 'idempotence: lost ack retry' --seeds 1..50 "
            "(try 'eos-spark --help')"
        )
    status = _sweep(args) if args.command == "sweep" else _status()
    sys.stdout.flush()
    return status


def _silence_stdout_and_stderr() -> None:
    """Point stdout and stderr at /dev/null so the interpreter's last flush cannot fail again (SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``eos-spark``; return the exit status (see the module docstring).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.
    """
    try:
        return _dispatch(argv)
    except _UsageError as exc:
        _say(str(exc), sys.stderr)
        return EXIT_USAGE
    except SparkBridgeError as exc:
        _say(f"eos-spark: {' '.join(str(exc).split())}", sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        _silence_stdout_and_stderr()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        _say("eos-spark: interrupted", sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last line of defence: a crash must never exit 1 ("a run failed")
        summary = f"{type(exc).__name__}: {exc}".splitlines()[0]
        _say(
            f"eos-spark: internal error (a bug in eos): {summary} -- please report it with the traceback below",
            sys.stderr,
        )
        traceback.print_exception(exc, file=sys.stderr)
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
