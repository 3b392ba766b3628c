"""The ``eos`` command line: run a scenario, check a history, sweep seeds.

Bad arguments exit with status 2 and one line that says what to type instead; no traceback.
Subcommands live in their own modules and are imported only when used, so ``eos --help`` is
fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: subcommand -> (module, one-line help). Each module defines ``add_arguments(parser)`` and
#: ``run(args) -> int``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("engine.commands.run", "run a named scenario on one seed and print its short log and verdict"),
    "scenarios": ("engine.commands.scenarios", "list the scenarios that 'eos run' knows"),
    "check": ("engine.check.cli", "check a client history (JSON Lines) for exactly-once anomalies"),
    "sweep": ("engine.commands.sweep", "run a scenario over many seeds and print a table of verdicts"),
    "mutants": ("engine.commands.mutants", "list the weakened configurations, or measure which check catches each"),
}


class UsageError(Exception):
    """Bad command-line arguments; the message says what to type instead."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (try '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every subcommand's arguments."""
    parser = _Parser(prog="eos", description="A deterministic simulated Kafka cluster for exactly-once semantics.")
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError("eos: a command is needed, for example 'eos run demo --seed 7' (try 'eos --help')")
        module = getattr(args, "_module", None)
        if module is None:
            raise UsageError(f"eos: '{args.command}' is not available in this build")
        return int(module.run(args))
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
