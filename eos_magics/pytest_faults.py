"""The pytest plugin's message faults between an application's calls: a lost answer, a held one.

Role
----
:class:`MessageFaults` is a base of :class:`eos_magics.pytest_plugin.EosTestCluster`. Each helper
installs one rule of the simulated network (:meth:`engine.Cluster.add_rule`) that acts on the
next matching message, so a fault set between two of the application's calls hits exactly the
next one. ``drop_response`` has the name and meaning of ``eos_server.drop_response`` and of
``eos fault --server ... wire-fault drop-response``: one vocabulary for the simulated and the
served fixture.

Invariants
----------
Every helper returns the rule's id; nothing here reads the cluster's private state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine import Cluster

__all__ = ["MessageFaults"]


class MessageFaults:
    """Faults on single messages; the class that mixes this in has a ``cluster``."""

    cluster: Cluster

    def lose_next_ack(self, topic: str | None = None) -> int:
        """Drop the next ProduceResponse (of ``topic``, or any): the write happened, its ack is lost.

        Returns
        -------
        int
            The rule's id (``remove_rule`` takes it back before it acts).
        """
        if topic is not None and topic not in self.cluster.topics:
            raise ValueError(f"no topic {topic!r}; topics: {', '.join(self.cluster.topics) or 'none'}")
        where = None if topic is None else (lambda m: any(p.topic == topic for p in m.body.partitions))
        return self.cluster.add_rule("drop", kind="response", body_type="ProduceResponse", where=where)

    def drop_response(self, api: str, nth: int = 1) -> int:
        """Carry out the ``nth`` next ``api`` request and lose its answer, as ``eos_server.drop_response``.

        Parameters
        ----------
        api : str
            Kafka's name of the request: ``"Produce"``, ``"EndTxn"``, ``"AddOffsetsToTxn"``,
            ``"TxnOffsetCommit"``, ``"OffsetCommit"``, ``"JoinGroup"`` ... (the engine's
            ``<api>Response`` messages, :mod:`engine.protocol`).
        nth : int
            Which of the next answers of that kind is lost (1: the next one).

        Returns
        -------
        int
            The rule's id (``remove_rule`` takes it back before it acts).
        """
        import engine.protocol as protocol

        body = f"{api}Response"
        if not isinstance(getattr(protocol, body, None), type) or api.startswith(("Partition", "Replica")):
            known = sorted(n[: -len("Response")] for n in vars(protocol) if n.endswith("Response") and n[0].isupper())
            raise ValueError(f"no request {api!r} in the simulation; one of: {', '.join(known)}")
        if isinstance(nth, bool) or not isinstance(nth, int) or nth < 1:
            raise ValueError(f"nth must be a positive int (1: the next one), got {nth!r}")
        return self.cluster.add_rule("drop", kind="response", body_type=body, skip=nth - 1, count=1)

    def hold_end_txn(self) -> int:
        """Hold the next EndTxnResponse: the coordinator ended the transaction, the producer does not know.

        Returns
        -------
        int
            The rule's id; :meth:`release` delivers the held response.
        """
        return self.cluster.add_rule("hold", kind="response", body_type="EndTxnResponse")

    def release(self, rule_id: int | None = None) -> list[int]:
        """Deliver held messages: those of one hold rule, or all; return their message ids."""
        return self.cluster.release(rule_id)
