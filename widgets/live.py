"""LiveRun: a cluster with its journal, its time-travel recorder and the one lock that drives it.

Role
----
Everything the notebook layer needs to show a run live and scrub it: the cluster, the
:class:`~engine.journal.Journal` of every application call (for replay and fork), the
:class:`~engine.views.recorder.Recorder` of every board row (for the scrubber), and one
re-entrant lock. The journal enters the lock around every application call, so the dashboard's
pacer thread and the kernel's cells (magics or plain Python calls on the clients) never drive
the engine at the same time.

Invariants
----------
* The engine stays single-threaded: only one thread at a time runs it, under :attr:`lock`.
* A fork leaves the old run untouched; the new run shares the lock.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from engine.cluster import Cluster
from engine.journal import Journal
from engine.views.recorder import Recorder


@dataclasses.dataclass
class LiveRun:
    """A cluster, its journal and recorder, and the lock around both (see the module docstring)."""

    cluster: Cluster
    journal: Journal
    recorder: Recorder
    lock: Any

    @classmethod
    def start(cls, *, setup: Callable[[Cluster], Any] | None = None, **cluster_kwargs: Any) -> LiveRun:
        """Build ``Cluster(**cluster_kwargs)`` recorded from its first event.

        ``setup(cluster)`` runs after it is built, before anything else (a client history attaches).
        """
        recorder = Recorder()
        cluster, journal = Journal.new_cluster(observers=[recorder], **cluster_kwargs)
        run = cls(cluster, journal, recorder, threading.RLock())
        journal.guard = run.lock
        journal.listeners.append(recorder)
        if setup is not None:
            setup(cluster)
        return run

    def fork(self, event_index: int, *, setup: Callable[[Cluster], Any] | None = None) -> tuple[LiveRun, int]:
        """Replay this run up to the board after ``event_index`` in a new cluster; return it and its stop."""
        recorder = Recorder()
        with self.lock:
            cluster, journal, stop = self.journal.fork(
                event_index, observers=[recorder], listeners=[recorder], setup=setup
            )
        run = LiveRun(cluster, journal, recorder, self.lock)
        journal.guard = self.lock
        return run, stop

    def replay(self) -> LiveRun:
        """Replay the whole run in a new cluster (same fingerprint)."""
        recorder = Recorder()
        with self.lock:
            cluster, journal = self.journal.replay(observers=[recorder], listeners=[recorder])
        run = LiveRun(cluster, journal, recorder, self.lock)
        journal.guard = self.lock
        return run
