"""Python's cyclic garbage collector while the simulation runs: its full passes held back.

A run's live set (the logs, the trace, the clients' histories, the checkers' timeline) only
grows while events run, and nothing in it is cyclic garbage until the run is dropped. Each full
pass of the collector walks all of it and frees next to nothing: with Python's default
thresholds (a full pass after every 10 middle passes) a 10k-record sweep seed spent a third of
its wall time in them, and a 100k-batch ``flush()`` about a fifth (``docs/performance.md``).

While the engine runs events (:meth:`World.run_for`, :meth:`World.run_until`,
``Producer.flush``, ``run_spec``), the third threshold is raised to :data:`FULL_PASS_EVERY`;
it is put back when the call returns. Young and middle passes are unchanged, and a full pass
still comes, only ten times less often, so cyclic garbage is still freed. The run itself is the
same: the collector never changes what the simulation does, only when memory is walked.
Nested holds are free: an inner one finds the threshold raised already and leaves it.
"""

from __future__ import annotations

import gc

#: The collector's third threshold while the engine runs events (Python's default is 10).
FULL_PASS_EVERY = 100


def hold_full_passes() -> tuple[int, int, int] | None:
    """Raise the full-pass threshold; return the thresholds to restore (None: already raised)."""
    young, middle, full = gc.get_threshold()
    if full >= FULL_PASS_EVERY:
        return None
    gc.set_threshold(young, middle, FULL_PASS_EVERY)
    return young, middle, full


def release_full_passes(held: tuple[int, int, int] | None) -> None:
    """Put back what :func:`hold_full_passes` changed."""
    if held is not None:
        gc.set_threshold(*held)
