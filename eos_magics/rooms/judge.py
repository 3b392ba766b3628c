"""Client histories and the judge: a cluster's history so far, saved as JSON Lines, checked for EOS.

Invariants
----------
The final reads :meth:`Judge.check` makes are real clients of the cluster (recorded in its
history) and move simulated time on; without them an acknowledged record nobody read yet is
reported ``unseen``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eos_magics.errors import EosUsageError, did_you_mean
from eos_magics.rooms.calls import check_writable

if TYPE_CHECKING:
    from eos_magics.rooms.clusters import Clusters
    from eos_magics.rooms.entries import ClusterEntry

__all__ = ["CHECK_MODES", "Judge"]

CHECK_MODES = ("eos", "subscribe", "at-least-once")


class Judge:
    """A cluster's client history, and the EOS checkers' verdict on it.

    Parameters
    ----------
    clusters : Clusters
        The session's clusters, each with its client history.
    """

    def __init__(self, clusters: Clusters) -> None:
        self.clusters = clusters

    def history(self, name: str | None = None) -> Any:
        """The client history of a cluster so far (``engine.check.History``)."""
        return self.clusters.entry(name).history.history()

    def save_history(self, path: str, name: str | None = None) -> str:
        """Write the history as JSON Lines (``eos check PATH`` reads it); return the path."""
        entry = self.clusters.entry(name)
        check_writable(path)
        entry.history.write_jsonl(path)
        return path

    def check(
        self, mode: str = "eos", name: str | None = None, *, final_read: bool = True, save: str | None = None
    ) -> Any:
        """Judge the session's history with the EOS checkers; return the report view.

        With ``final_read`` (the default) a read_committed consumer first reads every partition of
        every topic to its end, as Jepsen's final reads do: without it, an acknowledged record that
        no consumer of yours has read yet is reported ``unseen``. It is a real client of the
        cluster (``eos-check-reader-N``, recorded in the history) and moves simulated time on by
        its polls. ``save`` writes the judged history (final reads included) as JSON Lines, so
        ``eos check FILE`` gives the same verdict.
        """
        from eos_magics.views import kafka as views

        if mode not in CHECK_MODES:
            raise EosUsageError(f"mode must be one of {', '.join(CHECK_MODES)}{did_you_mean(mode, CHECK_MODES)}")
        entry = self.clusters.entry(name)
        if entry.history.ops == 0:
            raise EosUsageError("nothing to judge yet: produce or consume something first")
        if save is not None:
            check_writable(save)
        if final_read:
            _final_read(entry)
        if save is not None:
            entry.history.write_jsonl(save)
        return views.check_report(entry.history.check(mode))


def _final_read(entry: ClusterEntry) -> None:
    """Read ``entry``'s cluster to its end with a new final reader (one more of ``entry.readers``)."""
    if entry.cluster.topics:
        entry.readers += 1
        from engine.scenarios.supervisor import check_reader_id, final_read

        final_read(entry.cluster, check_reader_id(entry.readers))
