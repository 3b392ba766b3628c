"""``%eos_scenario``: the catalog's scenarios and mutants (list, run, sweep with a progress bar)."""

from __future__ import annotations

import html
from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics.errors import EosUsageError
from eos_magics.magics import FamilyMagics, kafka_views
from eos_magics.parsing import phrase


class _Progress:
    """An HTML progress bar updated in place (no widget needed); ``quiet`` shows nothing."""

    def __init__(self, quiet: bool) -> None:
        self.handle = None
        self.fails = 0
        if not quiet:
            from IPython.display import HTML, display

            self.handle = display(HTML("<progress value='0' max='1'></progress>"), display_id=True)

    def __call__(self, done: int, total: int, row: Any) -> None:
        if self.handle is None:
            return
        from IPython.display import HTML

        self.fails += row.status == "FAIL"
        text = html.escape(f"{done}/{total} runs, {self.fails} failed; last: {row.name} seed {row.seed} {row.status}")
        self.handle.update(HTML(f"<progress value='{done}' max='{total}'></progress> <code>{text}</code>"))


@magics_class
class CatalogMagics(FamilyMagics):
    """Ready-made scenarios, the weakened configurations (mutants), and sweeps over seeds."""

    @line_magic
    @magic_arguments()
    @argument("action", choices=["list", "run", "sweep", "mutants"])
    @argument("name", nargs="*", help="run/sweep: the scenario's name (spaces allowed, quotes optional); sweep: all")
    @argument("--seed", type=int, default=7, help="run: the seed (default 7)")
    @argument("--seeds", type=int, default=10, help="sweep: how many seeds (default 10)")
    @argument("--first-seed", type=int, default=1, help="sweep: the first seed (default 1)")
    @argument("--mutant", default=None, help="a weakened configuration, M1..M19")
    @argument("--swarm", action="store_true", help="a random subset of fault kinds per seed")
    @argument("--quiet", action="store_true", help="sweep: no progress bar")
    def eos_scenario(self, line: str) -> Any:
        """Run the catalog: ``list``, ``run NAME --seed 7``, ``sweep NAME --seeds 20``, ``mutants``.

        %eos_scenario run idempotence: lost ack retry --seed 3
        %eos_scenario sweep isolation: lso off by one --seeds 5 --mutant M10
        """
        args = parse_argstring(self.eos_scenario, line)
        views = kafka_views()
        s = self.session
        name = phrase(args.name)
        if args.action in ("list", "mutants"):
            if name:
                raise EosUsageError(f"{args.action} takes no name")
            return views.scenarios() if args.action == "list" else views.mutants()
        if not name:
            raise EosUsageError(f"{args.action} needs a scenario name; list them with %eos_scenario list")
        if args.action == "run":
            return s.run_scenario(name, args.seed, mutant=args.mutant, swarm=args.swarm)
        return s.sweep(
            name,
            args.seeds,
            first_seed=args.first_seed,
            mutant=args.mutant,
            swarm=args.swarm,
            progress=_Progress(args.quiet),
        )
