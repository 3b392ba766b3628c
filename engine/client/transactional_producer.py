"""The transactional producer: a :class:`~engine.client.producer.Producer` with ``transactional.id``.

It adds nothing to the producer: a producer with ``transactional.id`` has a transactional
:class:`~engine.client.transaction_manager.TransactionManager`, and its transaction calls are
:mod:`engine.client.transactional_calls`. The class stays so that code can tell the two kinds
apart (``isinstance(p, TransactionalProducer)``) and so that :meth:`engine.cluster.Cluster.producer`
names what it builds.
"""

from __future__ import annotations

from engine.client.producer import Producer


class TransactionalProducer(Producer):
    """A producer with ``transactional.id`` set (``cluster.producer({"transactional.id": ...})``)."""
