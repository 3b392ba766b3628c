"""Pictures of a run's analyses with a time axis fitted to what happened, not to how long the run lasted.

Role
----
:func:`lso_lag` draws the rows of :func:`eos_magics.spark.analyses.lso_lag` (as pandas: the
Spark query is the caller's, ``.toPandas()`` included) as one step line per partition::

    lag = analyses.lso_lag(tables).where("topic = 'out'").toPandas()
    plots.lso_lag(lag)

A run ends with quiet phases (heal, liveness, the final reads): in ``copier: random aborts`` the
transactions hold the LSO back during the first 5 s of a 28 s run, and an axis over the whole
run squeezes them into its first sixth. :func:`active_span` picks the range where the lag moved
(from the first sample to the drop that ends the last lag, padded); the title says what was cut.

Invariants
----------
* Only the axis is clipped: the data are drawn in full (pan or ``ax.set_xlim`` shows the rest),
  and the caller's DataFrame is not changed.
* A series that never lags (all zero) keeps the whole range: there is nothing to fit to.

What it does not do
-------------------
No Spark job and no collecting: it takes pandas. matplotlib is imported when a picture is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["active_span", "lso_lag", "trim_note"]

#: The axis extends this fraction of the active range past the last drop, so the drop shows.
PAD = 0.05


def active_span(times: Sequence[int], values: Sequence[float], *, pad: float = PAD) -> tuple[float, float]:
    """Return the time range to show for step samples ``(times[i], values[i])``, sorted by time.

    The range runs from the first sample to the sample that follows the last non-zero value (the
    drop back to zero, which a step line draws there), widened by ``pad`` of its length and never
    past the data. With no non-zero value it is the whole range.
    """
    if len(times) != len(values) or not len(times):
        msg = f"active_span needs as many values as times, and at least one; got {len(times)} and {len(values)}"
        raise ValueError(msg)
    first, last = min(times), max(times)
    busy = [i for i, v in enumerate(values) if v]
    if not busy:
        return float(first), float(last)
    i = busy[-1]
    end = times[i + 1] if i + 1 < len(times) else times[i]
    margin = (end - first) * pad
    return float(first), float(min(last, end + margin))


def trim_note(first_ms: float, last_ms: float, shown_to_ms: float) -> str:
    """Return the note that says what the axis leaves out, or ``""`` when it shows everything."""
    if shown_to_ms >= last_ms:
        return ""
    return f"t={shown_to_ms:,.0f}..{last_ms:,.0f} ms not shown: no lag there (HW = LSO)"


def lso_lag(lag: Any, *, ax: Any = None, pad: float = PAD) -> Any:
    """Draw HW - LSO over simulated time, one step line per topic-partition (per run, when several); return the Axes.

    ``lag`` is :func:`eos_magics.spark.analyses.lso_lag` as pandas. The time axis is fitted to
    the activity (:func:`active_span` over every line) and the title notes what it leaves out.
    """
    missing = [c for c in ("time_ms", "lso_lag", "topic", "partition") if c not in getattr(lag, "columns", ())]
    if missing:
        msg = f"lso_lag takes analyses.lso_lag(...).toPandas(); this frame lacks {', '.join(missing)}"
        raise ValueError(msg)
    if ax is None:
        import matplotlib.pyplot as plt

        _fig, ax = plt.subplots(figsize=(9, 3))
    keys = (
        ["run_id", "topic", "partition"] if "run_id" in lag and lag["run_id"].nunique() > 1 else ["topic", "partition"]
    )
    ends = []
    for key, rows in lag.sort_values("time_ms", kind="stable").groupby(keys, sort=True):
        ax.step(rows.time_ms, rows.lso_lag, where="post", label="-".join(str(k) for k in key))
        ends.append(active_span(list(rows.time_ms), list(rows.lso_lag), pad=pad)[1])
    first, last = float(lag.time_ms.min()), float(lag.time_ms.max())
    shown_to = max(ends, default=last)
    ax.set_xlim(first, shown_to)
    ax.set_title(trim_note(first, last, shown_to), loc="right", fontsize=8)
    ax.set_xlabel("simulated time (ms)")
    ax.set_ylabel("HW - LSO (records)")
    if ends:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)  # beside the lines, not over them
    return ax
