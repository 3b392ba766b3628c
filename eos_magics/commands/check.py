"""``%eos_check``: judge what this session's clients did with the EOS checkers."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics.magics import FamilyMagics


@magics_class
class CheckMagics(FamilyMagics):
    """The judge."""

    @line_magic
    @magic_arguments()
    @argument("--mode", default="eos", choices=["eos", "subscribe", "at-least-once"], help="what is allowed")
    @argument("--save", default=None, metavar="FILE", help="also write the history as JSON Lines (eos check FILE)")
    @argument("--cluster", default=None, help="judge this cluster's history (default: the current one)")
    def eos_check(self, line: str) -> Any:
        """Judge the client history of the session (every send, transaction and poll so far).

        Returns a report: OK, or each anomaly (duplicate, lost-write, G1a aborted read, …) with its
        keys, offsets and values. ``--save h.jsonl`` writes the history for ``eos check h.jsonl``.
        """
        args = parse_argstring(self.eos_check, line)
        return self.session.check(args.mode, args.cluster, save=args.save)
