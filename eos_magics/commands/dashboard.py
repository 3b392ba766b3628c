"""``%eos_dashboard``: the live dashboard of a cluster (``widgets.dashboard``)."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics.magics import FamilyMagics


@magics_class
class DashboardMagics(FamilyMagics):
    """The live dashboard."""

    @line_magic
    @magic_arguments()
    @argument("--name", help="the cluster to show (default: the current one)")
    @argument("--play", action="store_true", help="start playing at once")
    @argument("--rate", type=int, help="simulated ms per wall-clock second while playing (default 200)")
    def eos_dashboard(self, line: str) -> Any:
        """Show a cluster live: brokers, partitions, producers, ``__transaction_state``, logs, reads, events.

        Play, pause and step it, click a broker or a producer to break it, drag the scrubber back
        to see any earlier event exactly; acting while rewound first asks whether to fork there or
        go live, and a confirmed fork replays the run up to that event (the names in the notebook
        then point at the forked cluster's objects).
        """
        args = parse_argstring(self.eos_dashboard, line)
        return self.session.dashboard(args.name, play=args.play, rate=args.rate)
