"""The producer's delivery ledger: records not yet settled, and the reports waiting for ``poll``.

Role
----
Every record ``produce()`` accepts counts as *outstanding* until it is settled: written, or
failed (in a batch, while waiting for metadata, or before it joined a batch). A settled record
with an ``on_delivery`` callback leaves a *report* here, served to the application by the next
``poll``/``flush`` (librdkafka's delivery-report queue; Kafka's ``KafkaProducer`` completes each
record's callback from ``ProducerBatch.done``). The producer, its sender, its records waiting for
metadata and its transactional calls share this one object, handed to each at construction.

Invariants
----------
* ``outstanding`` counts accepted records that are neither written nor failed; ``flush`` waits
  for it to reach 0.
* Reports are served in the order the records were settled, each exactly once.
* ``on_queued`` (a simulation driver's hook, None for an application) is told of each report as
  it is queued, with its callback; it observes and changes nothing a client can see: the report
  is still served by the next ``poll``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.client.message import Message
    from engine.errors import KafkaError


class Deliveries:
    """One producer's outstanding-record count and its queue of delivery reports."""

    def __init__(self) -> None:
        #: accepted records not yet written or failed
        self.outstanding = 0
        self._reports: deque[tuple[Any, KafkaError | None, Message]] = deque()
        #: called with a report's callback when the report is queued: a scenario's driver wakes the
        #: process waiting on it (``engine.scenarios.supervisor.ReportWaits``) instead of polling
        self.on_queued: Callable[[Any], None] | None = None

    def report(self, cb: Any, err: KafkaError | None, msg: Message) -> None:
        """Queue ``cb(err, msg)`` for the next ``poll`` (nothing when ``cb`` is None); tell ``on_queued``."""
        if cb is not None:
            self._reports.append((cb, err, msg))
            if self.on_queued is not None:
                self.on_queued(cb)

    def ready(self) -> int:
        """Return how many reports wait to be served."""
        return len(self._reports)

    def serve(self) -> int:
        """Call every waiting report's callback, oldest first; return how many."""
        n = 0
        while self._reports:
            cb, err, msg = self._reports.popleft()
            cb(err, msg)
            n += 1
        return n
