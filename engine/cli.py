"""The ``eos`` command line: run a scenario, check a history, sweep seeds.

Exit statuses (the same for every subcommand):

* 0 - clean: no forbidden anomaly, every run passed;
* 1 - an anomaly was found, or a run failed;
* 2 - bad arguments or a malformed input file: one line that says what to type instead, no
  traceback;
* 70 - an internal error, a bug in eos (``EX_SOFTWARE`` of sysexits.h): one summary line that
  asks for a report, then the traceback, on stderr;
* 141 - stdout was closed early (``eos scenarios | head -1``): quietly, as a program killed by
  SIGPIPE would.

Subcommands live in their own modules and are imported only when used, so ``eos --help`` is
fast.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import os
import sys
import traceback
from collections.abc import Sequence

#: Bad arguments or a malformed input file.
EXIT_USAGE = 2
#: An unexpected exception inside eos (sysexits.h EX_SOFTWARE); never 1, which means "anomaly found".
EXIT_INTERNAL_ERROR = 70
#: The reader of stdout went away (128 + SIGPIPE, what a shell reports for a program killed by it).
EXIT_BROKEN_PIPE = 141
#: Interrupted with Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130

EXIT_STATUSES = (
    f"exit status: 0 clean; 1 anomaly found or a run failed; {EXIT_USAGE} bad arguments or a malformed file; "
    f"{EXIT_INTERNAL_ERROR} internal error (a bug in eos, please report it); {EXIT_BROKEN_PIPE} stdout closed early"
)

#: subcommand -> (module, one-line help). Each module defines ``add_arguments(parser)`` and
#: ``run(args) -> int``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("engine.commands.run", "run a named scenario on one seed and print its verdict, counts and fingerprint"),
    "scenarios": ("engine.commands.scenarios", "list the scenarios that 'eos run' knows"),
    "check": ("engine.check.cli", "check a client history (JSON Lines) for exactly-once anomalies"),
    "sweep": ("engine.commands.sweep", "run a scenario over many seeds and print a table of verdicts"),
    "mutants": ("engine.commands.mutants", "list the weakened configurations, or measure which check catches each"),
    "export": ("engine.commands.export", "run a scenario (or read a history file) and write its tables as Parquet"),
    "serve": ("engine.commands.serve", "serve a simulated cluster to real Kafka clients on 127.0.0.1"),
    "replay-wire": ("engine.commands.replay_wire", "replay a served cluster's wire journal and check every response"),
    "conform": ("engine.commands.conform", "run the conformance cases against a cluster and compare it with Kafka 4.4"),
    "reference": ("engine.commands.reference", "run real Apache Kafka 4.4.0 on 127.0.0.1, the conformance oracle"),
    "fault": ("engine.commands.fault", "crash, restart, pause, isolate a broker of a running 'eos serve'"),
}


class UsageError(Exception):
    """Bad command-line arguments; the message says what to type instead."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (try '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every subcommand's arguments."""
    parser = _Parser(
        prog="eos",
        description="A deterministic simulated Kafka cluster for exactly-once semantics.",
        epilog=EXIT_STATUSES,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if not module_name.startswith(exc.name or "\0"):
                raise
            continue
        module.add_arguments(p)
        p.set_defaults(_module=module)
    return parser


def _unknown_command(argv: Sequence[str]) -> UsageError | None:
    """``eos scenario`` → "no command 'scenario'; did you mean 'scenarios'?" (argparse only lists them)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or first in SUBCOMMANDS or argv[0].startswith("-"):
        return None
    close = difflib.get_close_matches(first, list(SUBCOMMANDS), n=1, cutoff=0.6)
    hint = f"; did you mean 'eos {close[0]}'?" if close else ""
    return UsageError(f"eos: no command '{first}'{hint} (commands: {', '.join(SUBCOMMANDS)}; try 'eos --help')")


def _dispatch(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    unknown = _unknown_command(sys.argv[1:] if argv is None else argv)
    if unknown is not None:
        raise unknown
    args = parser.parse_args(argv)
    if args.command is None:
        raise UsageError("eos: a command is needed, for example 'eos run demo --seed 7' (try 'eos --help')")
    module = getattr(args, "_module", None)
    if module is None:
        raise UsageError(f"eos: '{args.command}' is not available in this build")
    status = int(module.run(args))
    sys.stdout.flush()  # a closed pipe shows up here, inside the handlers, not at exit
    return status


def _silence_stdout_and_stderr() -> None:
    """Point stdout and stderr at /dev/null, so the interpreter's final flush cannot fail again.

    This is what the Python docs recommend for SIGPIPE (library/signal.html, "Note on SIGPIPE").
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):  # not a real file (a test captures it)
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


def _report_internal_error(exc: Exception) -> None:
    summary = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    print(
        f"eos: internal error (a bug in eos, not in your input): {summary} -- please report it "
        "with the command line and the traceback below",
        file=sys.stderr,
    )
    traceback.print_exception(exc, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit status (see the module docstring)."""
    try:
        return _dispatch(build_parser(), argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        _silence_stdout_and_stderr()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print("eos: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last line of defence: a crash must never exit 1 ("anomaly found")
        try:
            _report_internal_error(exc)
        except BrokenPipeError:
            _silence_stdout_and_stderr()
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    # python -m engine.cli: run the importable copy, so the commands' ``from engine.cli import
    # UsageError`` is the class main() catches (this file also runs as ``__main__``).
    from engine.cli import main as _main

    sys.exit(_main())
