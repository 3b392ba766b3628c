"""The pytest plugin's message faults between an application's calls: a lost answer, a held one.

Role
----
:class:`MessageFaults` is a base of :class:`eos_magics.pytest_plugin.EosTestCluster`. Each helper
is a verb of the engine's one fault vocabulary (:mod:`engine.fault_verbs`, also spoken by
``%eos_fault``, the dashboard and the served cluster's control channel): it installs one rule of
the simulated network that acts on the next matching message, so a fault set between two of the
application's calls hits exactly the next one. ``drop_response`` has the name and meaning of
``eos_server.drop_response`` and of ``eos fault --server ... wire-fault drop-response``: one
vocabulary for the simulated and the served fixture.

Invariants
----------
Every helper returns the rule's id; a bad argument is a ``ValueError`` of one line
(:class:`engine.fault_verbs.FaultError`); nothing here reads the cluster's private state.
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
        from engine import fault_verbs

        return fault_verbs.lose_next_ack(self.cluster, topic)

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
        from engine import fault_verbs

        return fault_verbs.drop_response(self.cluster, api, nth)

    def hold_end_txn(self) -> int:
        """Hold the next EndTxnResponse: the coordinator ended the transaction, the producer does not know.

        Returns
        -------
        int
            The rule's id; :meth:`release` delivers the held response.
        """
        from engine import fault_verbs

        return fault_verbs.hold_end_txn(self.cluster)

    def release(self, rule_id: int | None = None) -> list[int]:
        """Deliver held messages: those of one hold rule, or all; return their message ids."""
        from engine import fault_verbs

        return fault_verbs.release(self.cluster, rule_id)
