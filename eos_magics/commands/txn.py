"""``%%eos_txn`` (a cell inside one transaction) and ``%eos_txn`` (one transactional call)."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics import said
from eos_magics.errors import EosUsageError
from eos_magics.magics import FamilyMagics


@magics_class
class TxnMagics(FamilyMagics):
    """Transactions."""

    @line_cell_magic
    @magic_arguments()
    @argument("args", nargs="+", help="cell: PRODUCER; line: init|begin|commit|abort PRODUCER")
    @argument("--offsets-from", default=None, help="cell: send this consumer's positions with the transaction")
    @argument("--abort", action="store_true", help="cell: abort at the end instead of committing")
    def eos_txn(self, line: str, cell: str | None = None) -> Any:
        """Run a cell inside one transaction, or one transactional call.

        As a cell magic the body runs between begin_transaction() and commit_transaction(); an
        exception in the body aborts the transaction and is shown. ``--offsets-from c1`` adds the
        consumer's positions to the transaction (consume-transform-produce); ``--abort`` aborts.

            %%eos_txn p1
            %eos_produce p1 orders o-1 o-2

        As a line magic: ``%eos_txn begin p1`` (also init, commit, abort).
        """
        args = parse_argstring(self.eos_txn, line)
        s = self.session
        if cell is None:
            if len(args.args) != 2 or args.args[0] not in ("init", "begin", "commit", "abort"):
                raise EosUsageError("use %eos_txn init|begin|commit|abort PRODUCER, or %%eos_txn PRODUCER as a cell")
            if args.offsets_from or args.abort:
                raise EosUsageError("--offsets-from and --abort belong to the cell form %%eos_txn PRODUCER")
            action, name = args.args
            p = s.transactional(name)
            method = {
                "init": "init_transactions",
                "begin": "begin_transaction",
                "commit": "commit_transaction",
                "abort": "abort_transaction",
            }[action]
            getattr(p, method)()
            s.say(said.transaction(s.cluster, p, action))
            return None
        if len(args.args) != 1:
            raise EosUsageError("use %%eos_txn PRODUCER [--offsets-from CONSUMER] [--abort] on the first line")
        __tracebackhide__ = True  # an error in the body shows the user's line, not this frame
        code = self.shell.transform_cell(cell)
        filename = self.shell.compile.cache(code)  # linecache knows the body: tracebacks show its lines
        compiled = self.shell.compile(code, filename, "exec")
        p = s.transactional(args.args[0])
        try:
            with s.transaction(p, offsets_from=args.offsets_from, abort=args.abort):
                exec(compiled, self.shell.user_ns)  # the user's own cell, in their namespace
        except Exception as exc:
            if p.txn.state.name == "READY":  # the body raised and the transaction was aborted: say so first
                s.say(said.transaction(s.cluster, p, "abort", because=f"the cell raised {type(exc).__name__}"))
            raise
        s.say(said.transaction(s.cluster, p, "abort" if args.abort else "commit"))
        return None
