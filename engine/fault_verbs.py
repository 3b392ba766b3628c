"""The one fault vocabulary: the verbs that break a cluster, each checked and carried out on an engine Cluster.

Every way a person breaks a cluster speaks these verbs: the ``%eos_fault`` magic (through
``Session``), the dashboard's break buttons, the pytest plugin's helpers (``eos_cluster.lose_next_ack()``)
and the served cluster's control channel (``eos fault``, :mod:`engine.wire.control`). A fault plan
(:mod:`engine.sim.faults`) is the same faults as data, drawn before a run.

Verbs and their arguments
-------------------------
=================  ==============================================================================
verb               arguments
=================  ==============================================================================
``crash``          ``node`` (a broker id or a node name); ``power``: the machine, not the process
``restart``        ``node``
``pause``          ``node`` (a zombie until ``resume``)
``resume``         ``node``
``isolate``        ``node``: cut from every other node
``heal``           (none): end every fault at once (:meth:`engine.cluster.Cluster.heal`)
``cut``            ``a``, ``b`` (groups of nodes); ``one_way``: only messages from ``a`` are lost
``drop``           message rule: ``body_type``, ``kind``, ``src``, ``dst``, ``count``, ``skip``
``delay``          the same, plus ``delay_ms``
``hold``           the same; the messages wait for ``release``
``duplicate``      the same
``release``        ``rule`` (a hold rule's id) or none: every held message
``lose-next-ack``  ``topic`` or ``dst`` (optional): drop the next ProduceResponse, the write happened
``drop-response``  ``api`` (Kafka's name: ``EndTxn``), ``nth``: the request is done, its answer lost
``hold-end-txn``   (none): hold the next EndTxnResponse, the coordinator ended the transaction
=================  ==============================================================================

``drop-response`` has the name and meaning of the served cluster's ``wire-fault drop-response``
(:data:`engine.wire.service.WIRE_FAULT_ACTIONS`), which acts on the wire instead.

Invariants
----------
* A verb's arguments are checked before anything changes; a bad one is a :class:`FaultError` (a
  ``ValueError``) of one line. A node step the node's state forbids is the engine's
  ``IllegalNodeTransitionError``, raised before anything changes.
* Every message verb returns the rule's id (:meth:`engine.cluster.Cluster.add_rule`); nothing here
  reads a cluster's private state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.cluster import Cluster

__all__ = [
    "MESSAGE_VERBS",
    "NAMED_VERBS",
    "NODE_VERBS",
    "VERBS",
    "FaultError",
    "apply",
    "cut",
    "drop_response",
    "heal",
    "hold_end_txn",
    "lose_next_ack",
    "message_rule",
    "message_types",
    "node_fault",
    "release",
]

#: Faults on one node.
NODE_VERBS = ("crash", "restart", "pause", "resume", "isolate")
#: Faults on the next messages that match a rule.
MESSAGE_VERBS = ("drop", "delay", "hold", "duplicate")
#: One-message faults named by what they do to an application.
NAMED_VERBS = ("lose-next-ack", "drop-response", "hold-end-txn")


class FaultError(ValueError):
    """A fault verb with arguments that do not fit; the message is one line."""


def node_fault(cluster: Cluster, verb: str, node: int | str, *, power: bool = False) -> None:
    """``crash``, ``restart``, ``pause``, ``resume`` or ``isolate`` one node.

    ``power`` (crash only): the machine loses power, not just the process: the unflushed tail is
    lost and nobody is told (peers time out), where a process crash closes its connections.
    """
    if verb not in NODE_VERBS:
        raise FaultError(f"{verb!r} is not a node fault; one of {', '.join(NODE_VERBS)}")
    if power and verb != "crash":
        raise FaultError("power goes with crash: the machine loses power")
    if verb == "crash":
        cluster.crash(node, lose_unflushed_tail=power)
    else:
        getattr(cluster, verb)(node)


def heal(cluster: Cluster) -> None:
    """End every fault at once (:meth:`engine.cluster.Cluster.heal`)."""
    cluster.heal()


def cut(cluster: Cluster, a: Sequence[int | str], b: Sequence[int | str], *, one_way: bool = False) -> None:
    """Cut the network between two groups of nodes (``one_way``: only messages from ``a`` to ``b``)."""
    cluster.partition(list(a), list(b), one_way=one_way)


def message_types(suffix: tuple[str, ...] = ("Request", "Response")) -> list[str]:
    """The engine's message type names (``ProduceResponse``, ``EndTxnRequest`` ...), sorted."""
    from engine import protocol

    return sorted(n for n in vars(protocol) if n.endswith(suffix) and n[0].isupper())


def message_rule(
    cluster: Cluster,
    verb: str,
    body_type: str | None = None,
    *,
    kind: str | None = None,
    src: int | str | None = None,
    dst: int | str | None = None,
    count: int | None = 1,
    skip: int = 0,
    delay_ms: int | None = None,
    where: Callable[[Any], bool] | None = None,
) -> int:
    """Drop, delay, hold or duplicate the next ``count`` matching messages (None: every one); return the rule id."""
    if verb not in MESSAGE_VERBS:
        raise FaultError(f"{verb!r} is not a message fault; one of {', '.join(MESSAGE_VERBS)}")
    if body_type is not None:
        names = message_types()
        if body_type not in names:
            raise FaultError(f"no message type {body_type!r}; e.g. ProduceResponse, EndTxnRequest")
        natural = "response" if body_type.endswith("Response") else "request"
        if kind is not None and kind != natural and not (kind == "oneway" and natural == "request"):
            raise FaultError(f"{body_type} is a {natural}, so a rule of kind {kind} (--kind) would never match")
        kind = kind or natural
    if delay_ms is not None and verb != "delay":
        raise FaultError(f"delay_ms is for delay, not {verb}")
    if verb == "delay" and delay_ms is None:
        raise FaultError("delay needs delay_ms, the milliseconds each message waits")
    fields: dict[str, Any] = {"kind": kind, "body_type": body_type, "count": count, "skip": skip}
    optional = {"src": src, "dst": dst, "delay_ms": delay_ms, "where": where}
    fields.update({name: value for name, value in optional.items() if value is not None})
    return cluster.add_rule(verb, **fields)


def release(cluster: Cluster, rule: int | None = None) -> list[int]:
    """Deliver held messages: those of one hold rule, or all; return their message ids."""
    return cluster.release(rule)


def lose_next_ack(cluster: Cluster, topic: str | None = None, *, dst: int | str | None = None) -> int:
    """Drop the next ProduceResponse (of ``topic``, to ``dst``, or any): the write happened, its ack is lost."""
    if topic is not None and topic not in cluster.topics:
        raise FaultError(f"no topic {topic!r}; topics: {', '.join(cluster.topics) or 'none'}")
    where = None if topic is None else (lambda m: any(p.topic == topic for p in m.body.partitions))
    return message_rule(cluster, "drop", "ProduceResponse", dst=dst, where=where)


def drop_response(cluster: Cluster, api: str, nth: int = 1) -> int:
    """Carry out the ``nth`` next ``api`` request and lose its answer (``api``: Kafka's name, ``EndTxn``)."""
    known = [n[: -len("Response")] for n in message_types(("Response",)) if not n.startswith(("Partition", "Replica"))]
    if api not in known:
        raise FaultError(f"no request {api!r} in the simulation; one of: {', '.join(known)}")
    if isinstance(nth, bool) or not isinstance(nth, int) or nth < 1:
        raise FaultError(f"nth must be a positive int (1: the next one), got {nth!r}")
    return message_rule(cluster, "drop", f"{api}Response", skip=nth - 1)


def hold_end_txn(cluster: Cluster) -> int:
    """Hold the next EndTxnResponse: the coordinator ended the transaction, the producer does not know."""
    return message_rule(cluster, "hold", "EndTxnResponse")


#: Every verb, in the order of the table above: the names every consumer offers.
VERBS = (*NODE_VERBS, "heal", "cut", *MESSAGE_VERBS, "release", *NAMED_VERBS)
_OTHERS: dict[str, Callable[..., Any]] = {
    "heal": heal,
    "cut": cut,
    "release": release,
    "lose-next-ack": lose_next_ack,
    "drop-response": drop_response,
    "hold-end-txn": hold_end_txn,
}


def apply(cluster: Cluster, verb: str, *args: Any, **kwargs: Any) -> Any:
    """Carry out one fault verb on ``cluster``; return what it returns (a rule id for message verbs)."""
    if verb in NODE_VERBS:
        return node_fault(cluster, verb, *args, **kwargs)
    if verb in MESSAGE_VERBS:
        return message_rule(cluster, verb, *args, **kwargs)
    fn = _OTHERS.get(verb)
    if fn is None:
        import difflib

        close = difflib.get_close_matches(verb, VERBS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f"; one of {', '.join(VERBS)}"
        raise FaultError(f"unknown fault {verb!r}{hint}")
    return fn(cluster, *args, **kwargs)
