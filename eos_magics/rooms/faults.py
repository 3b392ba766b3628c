"""Faults and simulated time on the current cluster: crash, pause, isolate, cut, message rules; run, step, until.

Invariants
----------
A node is named by a broker id (``2``, ``"2"``), a node name or a client's name; a name that
matches none is a usage error with the nearest names, raised before anything changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from eos_magics.errors import EosUsageError, did_you_mean, unknown_name
from eos_magics.rooms.calls import call_engine, check_int

if TYPE_CHECKING:
    from eos_magics.rooms.clusters import Clusters

__all__ = ["TimeAndFaults"]


class TimeAndFaults:
    """Break the current cluster's nodes and network, and move its simulated time.

    Parameters
    ----------
    clusters : Clusters
        The session's clusters: faults and time act on the current one.
    """

    def __init__(self, clusters: Clusters) -> None:
        self.clusters = clusters

    def node(self, node: Any) -> int | str:
        """A broker id (``2``, ``"2"``) or any node name (``broker-2``, ``producer-1``, a client's name)."""
        c = self.clusters.cluster
        if isinstance(node, str) and node.isdigit():
            node = int(node)
        if isinstance(node, str) and node in self.clusters.entry().clients:
            return self.clusters.entry().clients[node].name
        if isinstance(node, int) and node not in c.brokers:
            raise EosUsageError(f"no broker {node}; brokers are {', '.join(str(b) for b in sorted(c.brokers))}")
        if isinstance(node, str) and node not in c.world.nodes:
            names = sorted({*c.world.nodes, *self.clusters.entry().clients})
            raise unknown_name("node", node, names, how="name a broker id (1, 2, …) or a node name")
        return node

    def fault(self, action: str, *nodes: Any, power: bool = False) -> None:
        """``crash``, ``restart``, ``pause``, ``resume``, ``isolate`` a node; ``heal`` everything.

        ``power`` (crash only): the machine loses power, not just the process: the unflushed tail
        is lost and nobody is told (peers time out), where a process crash closes its connections.
        The verbs are the engine's (:mod:`engine.fault_verbs`).
        """
        from engine import fault_verbs

        if power and action != "crash":
            raise EosUsageError("--power goes with crash: %eos_fault crash 2 --power")
        if action == "heal":
            if nodes:
                raise EosUsageError("heal takes no node: it ends every fault at once")
            fault_verbs.heal(self.clusters.cluster)
            return
        if action not in fault_verbs.NODE_VERBS:
            raise EosUsageError(f"unknown fault '{action}'{did_you_mean(action, [*fault_verbs.NODE_VERBS, 'heal'])}")
        if len(nodes) != 1:
            raise EosUsageError(f"{action} takes one node: a broker id or a node name")
        call_engine(fault_verbs.node_fault, self.clusters.cluster, action, self.node(nodes[0]), power=power)

    def cut(self, a: Sequence[Any], b: Sequence[Any], *, one_way: bool = False) -> None:
        """Cut the network between two groups of nodes."""
        from engine import fault_verbs

        cluster = self.clusters.cluster
        call_engine(fault_verbs.cut, cluster, [self.node(x) for x in a], [self.node(x) for x in b], one_way=one_way)

    def message_rule(
        self,
        action: str,
        body_type: str | None = None,
        *,
        kind: str | None = None,
        src: Any = None,
        dst: Any = None,
        count: int | None = 1,
        skip: int = 0,
        delay_ms: int | None = None,
    ) -> int:
        """Drop, delay, hold or duplicate the next ``count`` messages of a type; return the rule id."""
        from engine import fault_verbs

        if body_type is not None and body_type not in fault_verbs.message_types():
            names = fault_verbs.message_types()
            raise unknown_name("message type", body_type, names, how="e.g. ProduceResponse, EndTxnRequest")
        if delay_ms is not None and action != "delay":
            raise EosUsageError(f"--ms is for delay, not {action}")
        return call_engine(
            fault_verbs.message_rule,
            self.clusters.cluster,
            action,
            body_type,
            kind=kind,
            src=None if src is None else self.node(src),
            dst=None if dst is None else self.node(dst),
            count=count,
            skip=skip,
            delay_ms=delay_ms,
        )

    def release(self, rule_id: int | None = None) -> list[int]:
        """Deliver held messages (of one rule, or all)."""
        from engine import fault_verbs

        return call_engine(fault_verbs.release, self.clusters.cluster, rule_id)

    # -- time -------------------------------------------------------------------------------

    def run(self, ms: int) -> int:
        """Let ``ms`` simulated milliseconds pass; return how many events ran."""
        return call_engine(self.clusters.cluster.run_for, check_int(ms, "milliseconds", 0))

    def step(self, events: int = 1) -> int:
        """Run the next ``events`` events; return how many ran (fewer if the world went idle)."""
        return call_engine(self.clusters.cluster.step, check_int(events, "events", 1))

    def until(self, predicate: Callable[[], bool], max_ms: int = 60_000) -> int:
        """Run until ``predicate()`` is true; a usage error if it is still false after ``max_ms``."""
        c = self.clusters.cluster
        check_int(max_ms, "--max-ms", 1)
        try:
            predicate()
        except Exception as exc:  # the condition itself is broken: say so before time moves
            raise EosUsageError(f"until: the condition raised {type(exc).__name__}: {exc}") from None
        c.run_until(lambda: bool(predicate()), max_ms=max_ms)
        if not predicate():
            raise EosUsageError(f"still false after {max_ms} simulated ms (now {c.now_ms} ms); raise --max-ms?")
        return c.now_ms
