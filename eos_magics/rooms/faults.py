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
        """
        c = self.clusters.cluster
        if power and action != "crash":
            raise EosUsageError("--power goes with crash: %eos_fault crash 2 --power")
        actions: dict[str, Callable[..., None]] = {
            "crash": c.crash,
            "restart": c.restart,
            "pause": c.pause,
            "resume": c.resume,
            "isolate": c.isolate,
        }
        if action == "heal":
            if nodes:
                raise EosUsageError("heal takes no node: it ends every fault at once")
            c.heal()
            return
        fn = actions.get(action)
        if fn is None:
            raise EosUsageError(f"unknown fault '{action}'{did_you_mean(action, [*actions, 'heal'])}")
        if len(nodes) != 1:
            raise EosUsageError(f"{action} takes one node: a broker id or a node name")
        if power:
            call_engine(c.crash, self.node(nodes[0]), lose_unflushed_tail=True)
            return
        call_engine(fn, self.node(nodes[0]))

    def cut(self, a: Sequence[Any], b: Sequence[Any], *, one_way: bool = False) -> None:
        """Cut the network between two groups of nodes."""
        cluster = self.clusters.cluster
        call_engine(cluster.partition, [self.node(x) for x in a], [self.node(x) for x in b], one_way=one_way)

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
        from engine import protocol

        if body_type is not None:
            names = sorted(n for n in vars(protocol) if n.endswith(("Request", "Response")) and n[0].isupper())
            if body_type not in names:
                raise unknown_name("message type", body_type, names, how="e.g. ProduceResponse, EndTxnRequest")
        if body_type is not None:
            natural = "response" if body_type.endswith("Response") else "request"
            if kind is not None and kind != natural and not (kind == "oneway" and natural == "request"):
                raise EosUsageError(f"{body_type} is a {natural}, so --kind {kind} would never match; drop --kind")
            kind = kind or natural
        if delay_ms is not None and action != "delay":
            raise EosUsageError(f"--ms is for delay, not {action}")
        fields: dict[str, Any] = {"kind": kind, "body_type": body_type, "count": count, "skip": skip}
        if src is not None:
            fields["src"] = self.node(src)
        if dst is not None:
            fields["dst"] = self.node(dst)
        if delay_ms is not None:
            fields["delay_ms"] = delay_ms
        return call_engine(self.clusters.cluster.add_rule, action, **fields)

    def release(self, rule_id: int | None = None) -> list[int]:
        """Deliver held messages (of one rule, or all)."""
        return call_engine(self.clusters.cluster.release, rule_id)

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
