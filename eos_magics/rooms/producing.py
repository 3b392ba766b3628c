"""Records and transactions: produce to a topic, run a ``with`` block as one transaction.

Invariants
----------
An exception in a transaction's body aborts it and propagates (the body's error is the one shown);
offsets sent with the transaction are only positions the consumer knows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from eos_magics.errors import EosUsageError
from eos_magics.rooms.calls import call_engine, check_int

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine import Producer
    from eos_magics.rooms.clients import Clients
    from eos_magics.rooms.clusters import Clusters

__all__ = ["Producing"]


class Producing:
    """Produce records with a named producer; transactions of a transactional one.

    Parameters
    ----------
    clusters : Clusters
        The session's clusters (a topic's partitions are the current one's).
    clients : Clients
        The named clients and topics of the current cluster.
    say : callable
        Where a transaction that sent no offsets is told, in one line.
    """

    def __init__(self, clusters: Clusters, clients: Clients, say: Callable[[str], None]) -> None:
        self.clusters = clusters
        self.clients = clients
        self.say = say

    def produce(
        self,
        producer: Any,
        topic: str,
        values: Sequence[Any],
        *,
        key: Any = None,
        partition: int | None = None,
        headers: Mapping[str, Any] | None = None,
        wait: bool = True,
    ) -> Any:
        """Produce ``values`` (one record each); with ``wait``, flush and return the delivery reports, else None."""
        from eos_magics.views import kafka as views

        p = self.clients.client(producer, "producer")
        self.clients.require_topic(topic)
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise EosUsageError(f"values must be a list of record values, got {values!r}")
        if not values:
            raise EosUsageError("nothing to produce: give at least one value")
        if partition is not None:
            n = self.clusters.cluster.topics[topic]
            if not 0 <= check_int(partition, "--partition") < n:
                raise EosUsageError(f"topic '{topic}' has partitions 0..{n - 1}, not {partition}")
        reports: list[tuple[Any, Any]] = []
        hdrs = list(headers.items()) if headers else None
        for v in values:
            call_engine(
                p.produce,
                topic,
                value=v,
                key=key,
                partition=-1 if partition is None else partition,
                headers=hdrs,
                on_delivery=lambda err, msg: reports.append((err, msg)),
            )
        if not wait:
            return None  # the reports arrive with a later flush() or poll(); on_delivery of p.produce sees them
        p.flush()
        return views.deliveries(reports)

    def transactional(self, producer: Any) -> Producer:
        """Return a named producer that has a ``transactional.id``, else a usage error."""
        p = self.clients.client(producer, "producer")
        if not p.transactional:
            raise EosUsageError(f"'{producer}' has no transactional.id; create a producer with --transactional-id ID")
        return p

    @contextlib.contextmanager
    def transaction(self, producer: Any, *, offsets_from: Any = None, abort: bool = False) -> Iterator[Producer]:
        """Run the ``with`` body inside ``begin_transaction()`` … ``commit_transaction()``.

        An exception in the body aborts the transaction and propagates; ``abort=True`` aborts at the
        end on purpose. With ``offsets_from`` (a consumer), its positions on its assignment are
        sent with ``send_offsets_to_transaction`` before the commit (or the deliberate abort, which
        discards them): consume-transform-produce.
        """
        __tracebackhide__ = True
        p = self.transactional(producer)
        consumer = None if offsets_from is None else self.clients.client(offsets_from, "consumer")
        if consumer is not None and not consumer.config.group_id:
            msg = f"--offsets-from {offsets_from}: the consumer has no group.id; create it with --group GROUP"
            raise EosUsageError(msg)
        p.begin_transaction()
        try:
            yield p
            if consumer is not None:
                # Only positions the consumer knows: one that read nothing from a partition yet has
                # nothing of it to commit (its position there is still the -1001 "invalid" mark).
                known = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
                if known:
                    p.send_offsets_to_transaction(known, consumer.consumer_group_metadata())
                else:
                    self.say(f"--offsets-from {offsets_from}: it has read nothing yet, so no offsets were sent")
        except BaseException:
            with contextlib.suppress(Exception):  # the body's error is the one to show
                p.abort_transaction()
            raise
        if abort:
            p.abort_transaction()
        else:
            p.commit_transaction()
