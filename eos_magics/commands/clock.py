"""``%eos_time``: simulated time moves only when asked: run, step, until."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class, needs_local_scope
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics.errors import EosUsageError
from eos_magics.magics import FamilyMagics
from eos_magics.parsing import milliseconds


@magics_class
class ClockMagics(FamilyMagics):
    """Simulated time."""

    @needs_local_scope
    @line_magic
    @magic_arguments()
    @argument("action", choices=["run", "step", "until", "now"])
    @argument(
        "amount",
        nargs="*",
        help="run: simulated time (500, 500ms, 1s, 2m); step: events (default 1); until: a Python condition",
    )
    @argument("--max-ms", type=int, default=60_000, help="until: give up after this many simulated ms")
    def eos_time(self, line: str, local_ns: dict[str, Any] | None = None) -> Any:
        """Move simulated time: ``run 500`` (ms, or ``1s``), ``step 10`` (events), ``until c1.assignment()``; ``now``.

        Returns the simulated time in ms (``step``: the events run).
        """
        args = parse_argstring(self.eos_time, line)
        s = self.session
        if args.action == "now":
            if args.amount:
                raise EosUsageError("now takes no argument: %eos_time now")
            return s.cluster.now_ms
        if args.action == "until":
            if not args.amount:
                raise EosUsageError("until needs a condition, e.g. %eos_time until len(c1.assignment()) == 2")
            expr = " ".join(args.amount)
            ns = {**self.shell.user_ns, **(local_ns or {})}
            try:
                code = compile(expr, "<%eos_time until>", "eval")
            except SyntaxError as exc:
                raise EosUsageError(f"until: {expr!r} is not a Python expression ({exc.msg})") from None
            return s.until(lambda: eval(code, ns), args.max_ms)
        if args.action == "run":
            if len(args.amount) != 1:
                raise EosUsageError("run takes one amount of simulated time, e.g. %eos_time run 500 (ms) or run 1s")
            s.run(milliseconds(args.amount[0], "run"))
            return s.cluster.now_ms
        if len(args.amount) > 1 or (args.amount and not args.amount[0].isdigit()):
            raise EosUsageError("step takes a whole number of events, e.g. %eos_time step 10")
        return s.step(int(args.amount[0]) if args.amount else 1)
