"""Faults from outside: the control channel's requests, checked and mapped onto the engine's own calls.

A conformance suite runs one fault script against real Kafka (it kills processes) and against
``eos serve`` (the engine's crash of a broker). The script speaks in requests such as
``{"op": "crash", "broker": 1}``; :func:`parse` checks one, :func:`apply` carries it out on a
:class:`~engine.wire.service.WireService`'s cluster with the calls the notebooks use
(:meth:`Cluster.crash <engine.cluster.Cluster.crash>`, ``restart``, ``pause``, ``resume``,
``isolate``, ``heal``; :meth:`WireService.add_wire_fault`) and answers with a dict. Queries
(``leader``, ``coordinator``, ``brokers``) read the controller's view and change nothing.

Role
----
The pure half of the control channel: no sockets, no threads (``engine.serve.realtime_control``
is the socket side). The journal replays a fault through :func:`apply` too, so a served session
with faults replays byte for byte.

Invariants
----------
* A request that is not well formed is a :class:`ControlError` with one short line, raised
  before anything changes; so is a fault the node's state does not allow (crash of a crashed
  broker), which the engine refuses before changing anything.
* ``crash`` is a process crash (Kafka's ``kill -9``): the operating system closes the broker's
  sockets, so its served connections close at once (``WireConnection.on_peer_disconnect``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from engine import fault_verbs
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, partition_for
from engine.errors import KafkaError
from engine.sim.node import IllegalNodeTransitionError, NodeStatus

if TYPE_CHECKING:
    from engine.wire.service import WireService

#: Faults on one broker: the node verbs of the engine's one fault vocabulary (:mod:`engine.fault_verbs`).
NODE_FAULTS = fault_verbs.NODE_VERBS
#: Every op that changes the cluster: journaled (``wire-fault`` by the service itself).
FAULTS = (*NODE_FAULTS, "heal", "wire-fault")
QUERIES = ("leader", "coordinator", "brokers")
#: op -> its arguments, each (name, type).
ARGS: dict[str, tuple[tuple[str, type], ...]] = {
    **dict.fromkeys(NODE_FAULTS, (("broker", int),)),
    "heal": (),
    "wire-fault": (("action", str), ("api", str), ("nth", int)),
    "leader": (("topic", str), ("partition", int)),
    "coordinator": (("kind", str), ("key", str)),
    "brokers": (),
}
COORDINATOR_KINDS = {"group": CONSUMER_OFFSETS_TOPIC, "transaction": TRANSACTION_STATE_TOPIC}


class ControlError(ValueError):
    """A control request that is malformed or refused; the message is the answer's ``error``."""


def parse(line: str | bytes) -> dict[str, Any]:
    """Return the request of one JSON line, checked (``op`` first, then its arguments); ControlError if not."""
    try:
        request = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        raise ControlError('not a JSON line: send one object per line, e.g. {"op": "brokers"}') from None
    return check(request)


def check(request: Any) -> dict[str, Any]:
    """Return ``request`` (a dict with ``op`` and its arguments) checked; ControlError if it is not one."""
    if not isinstance(request, dict) or not isinstance(request.get("op"), str):
        raise ControlError('a request is a JSON object with "op", e.g. {"op": "crash", "broker": 1}')
    op = request["op"]
    if op not in ARGS:
        raise ControlError(f"unknown op {op!r}; ops: {', '.join(ARGS)}")
    wanted = ARGS[op]
    names = {name for name, _t in wanted}
    extra = sorted(set(request) - names - {"op"})
    if extra:
        raise ControlError(f"{op} takes {_arg_list(op)}, not {extra[0]!r}")
    for name, kind in wanted:
        value = request.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ControlError(f"{op} takes {_arg_list(op)}: {name} must be {'an int' if kind is int else 'a string'}")
    return {"op": op, **{name: request[name] for name, _t in wanted}}


def _arg_list(op: str) -> str:
    return ", ".join(name for name, _t in ARGS[op]) or "no arguments"


def encode(request: dict[str, Any]) -> bytes:
    """Return a checked request as the journal stores it (canonical JSON)."""
    return json.dumps(request, sort_keys=True, separators=(",", ":")).encode()


def apply(service: WireService, request: dict[str, Any]) -> dict[str, Any]:
    """Carry out a checked request on the service's cluster now; return the answer (without ``ok``)."""
    cluster = service.cluster
    op = request["op"]
    try:
        if op in NODE_FAULTS:
            broker = _broker(cluster, request["broker"])
            fault_verbs.node_fault(cluster, op, broker)
            return {"op": op, "broker": broker}
        if op == "heal":
            fault_verbs.heal(cluster)
            return {"op": op}
        if op == "wire-fault":
            fault_id = service.add_wire_fault(request["action"], request["api"], request["nth"])
            return {"op": op, "fault": fault_id}
        return _query(cluster, request)
    except (IllegalNodeTransitionError, KafkaError, ValueError) as exc:
        raise ControlError(str(exc).splitlines()[0]) from None


def _broker(cluster: Any, broker: int) -> int:
    if broker not in cluster.brokers:
        raise ControlError(f"no broker {broker}; brokers: {', '.join(str(b) for b in sorted(cluster.brokers))}")
    return broker


def _query(cluster: Any, request: dict[str, Any]) -> dict[str, Any]:
    """``leader``, ``coordinator`` and ``brokers``: the controller's view now (-1: no broker)."""
    op = request["op"]
    if op == "leader":
        return {"broker": cluster.leader(request["topic"], request["partition"])}
    if op == "coordinator":
        topic = COORDINATOR_KINDS.get(request["kind"])
        if topic is None:
            kinds = ", ".join(COORDINATOR_KINDS)
            raise ControlError(f"coordinator kind must be one of {kinds}, got {request['kind']!r}")
        n = (
            cluster.config.offsets_topic_num_partitions
            if topic == CONSUMER_OFFSETS_TOPIC
            else cluster.config.transaction_state_log_num_partitions
        )
        state = cluster.controller.partitions.get((topic, partition_for(request["key"], n)))
        return {"broker": state.leader if state is not None else -1}
    by_status: dict[str, list[int]] = {s.value: [] for s in NodeStatus}
    for b in sorted(cluster.brokers):
        by_status[cluster.brokers[b].status.value].append(b)
    isolated = sorted(b for b in cluster.brokers if f"broker-{b}" in cluster.world.network.isolated)
    return {**by_status, "isolated": isolated}
