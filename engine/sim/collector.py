"""Python's cyclic garbage collector while the simulation runs: its full passes held back.

A run's live set (the logs, the trace, the clients' histories, the checkers' timeline) only
grows while events run, and nothing in it is cyclic garbage until the run is dropped. Each full
pass of the collector walks all of it and frees next to nothing: with Python's default
thresholds (a full pass after every 10 middle passes) a 10k-record sweep seed spent a third of
its wall time in them, and a 100k-batch ``flush()`` about a fifth (``docs/performance.md``).

While the engine runs events (:meth:`World.run_for`, :meth:`World.run_until`, so
``Producer.flush`` and a served cluster's steps, and a whole ``run_spec``), the third threshold
is raised to :data:`FULL_PASS_EVERY` and the first to :data:`RUN_YOUNG_EVERY`
(:func:`hold_run_passes`); both are put back when the call returns. A full pass still comes,
only ten times less often, so cyclic garbage is still freed. The run itself is the same: the
collector never changes what the simulation does, only when memory is walked. Nested holds are
free: an inner one finds the thresholds raised already and leaves them.

The young passes' threshold (:data:`RUN_YOUNG_EVERY`): most of what a run allocates is either kept
for the run (trace events, history, logs) or dropped within a few thousand allocations (messages,
requests, tuples of a handler), and with Python's 700 a young pass came before the short-lived
objects were gone, promoting them to the middle generation to be walked again. Same-run figures,
the 10k-record sweep seed, CPU seconds, best of 3: 2.69 with 700, 2.47 with 20,000, 2.40 with
100,000 (``docs/performance.md``); ``bench/bench_produce.py`` at 300k records, CPU per batch of
100, the same run: 50.4 µs with the young passes held only in ``run_spec``, 43.2 with them held in
``run_until`` too. What a run leaves as cyclic garbage is freed as before.
"""

from __future__ import annotations

import gc

#: The collector's third threshold while the engine runs events (Python's default is 10).
FULL_PASS_EVERY = 100


#: The collector's first threshold while the engine runs events (Python's default is 700).
RUN_YOUNG_EVERY = 100_000


def hold_run_passes() -> tuple[int, int, int] | None:
    """Raise the young and the full thresholds for a whole run; return the thresholds to restore.

    None: already raised (a nested hold). :func:`release_run_passes` puts them back.
    """
    young, middle, full = gc.get_threshold()
    if young >= RUN_YOUNG_EVERY and full >= FULL_PASS_EVERY:
        return None
    gc.set_threshold(max(young, RUN_YOUNG_EVERY), middle, max(full, FULL_PASS_EVERY))
    return young, middle, full


def release_run_passes(held: tuple[int, int, int] | None) -> None:
    """Put back what :func:`hold_run_passes` changed."""
    if held is not None:
        gc.set_threshold(*held)
