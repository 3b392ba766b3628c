"""``%eos_fault``: crash, restart, pause, resume, isolate, cut, heal; drop, delay, hold, duplicate, release.

The verbs are the engine's one fault vocabulary (:mod:`engine.fault_verbs`); the session carries
them out with the notebook's names for nodes and clients.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics import said
from eos_magics.errors import EosUsageError, did_you_mean
from eos_magics.magics import FamilyMagics


@magics_class
class FaultMagics(FamilyMagics):
    """Faults, from a crashed broker to one lost acknowledgement."""

    @line_magic
    @magic_arguments()
    @argument(
        "action",
        help="crash, restart, pause, resume, isolate, cut, heal; drop, delay, hold, duplicate, release; rules",
    )
    @argument("nodes", nargs="*", help="a broker id (1, 2, …) or a node/client name; cut: A... --from B...")
    @argument("--from", dest="other", nargs="+", default=None, help="cut: the other side of the cut")
    @argument(
        "--power",
        action="store_true",
        help="crash: the machine loses power (unflushed writes lost; silent, like a cut) instead of the process",
    )
    @argument("--one-way", action="store_true", help="cut: only messages from the first group are lost")
    @argument("--type", dest="body_type", default=None, help="drop/delay/hold: a message type, e.g. ProduceResponse")
    @argument("--kind", choices=["request", "response", "oneway"], default=None, help="message kind")
    @argument("--src", default=None, help="only messages from this node")
    @argument("--dst", default=None, help="only messages to this node")
    @argument("--count", type=int, default=1, help="how many matching messages (default 1: the next one; 0: all)")
    @argument("--skip", type=int, default=0, help="let this many matching messages through first")
    @argument("--ms", type=int, default=None, help="delay: milliseconds")
    @argument("--rule", type=int, default=None, help="release: the hold rule's id (default: every held message)")
    def eos_fault(self, line: str) -> Any:
        """Break things: nodes, the network, or single messages.

        %eos_fault crash 2                 a broker (or: restart, pause, resume, isolate)
        %eos_fault crash 2 --power         the machine, not the process: unflushed writes are lost
        %eos_fault cut 1 --from 2 3        a network partition; %eos_fault heal ends every fault
        %eos_fault drop --type ProduceResponse   lose the next acknowledgement (the retry is deduplicated)
        %eos_fault hold --type EndTxnRequest     keep a message until %eos_fault release

        Who notices, as on Kafka: ``crash`` kills the broker's *process*; its operating system
        closes its connections, so every client with a request in flight sees the disconnect at
        once (NetworkException, retriable), refreshes metadata and backs off
        (reconnect.backoff.ms) until the controller moves leadership
        (broker.session.timeout.ms). ``crash --power``, ``isolate``, ``cut`` and ``pause`` are
        silent: nothing answers, and a client waits out its request.timeout.ms.
        """
        from engine.fault_verbs import MESSAGE_VERBS, NODE_VERBS  # the engine loads on first use

        args = parse_argstring(self.eos_fault, line)
        s = self.session
        verbs = [*NODE_VERBS, "cut", "heal", *MESSAGE_VERBS, "release", "rules"]
        if args.action not in verbs:
            raise EosUsageError(f"unknown fault '{args.action}'{did_you_mean(args.action, verbs)}")
        if args.action in NODE_VERBS or args.action == "heal":
            s.fault(args.action, *args.nodes, power=args.power)
            node = s.node(args.nodes[0]) if args.nodes else None
            s.say(said.fault(s.cluster, args.action, node, power=args.power))
            return None
        if args.action == "cut":
            if not args.nodes or not args.other:
                raise EosUsageError("cut takes two groups: %eos_fault cut 1 --from 2 3")
            s.cut(args.nodes, args.other, one_way=args.one_way)
            s.say(said.cut(s.cluster, args.nodes, args.other, one_way=args.one_way))
            return None
        if args.action == "release":
            return s.release(args.rule)
        if args.action == "rules":
            return s.cluster.world.network.active_rule_ids()
        if args.nodes:
            raise EosUsageError(f"{args.action} names messages, not nodes: use --type, --src, --dst, --kind")
        if args.count < 0:
            raise EosUsageError("--count must be >= 0 (0: every matching message)")
        if args.action == "delay" and args.ms is None:
            raise EosUsageError("delay needs --ms, e.g. %eos_fault delay --type ProduceRequest --ms 200")
        rule = s.message_rule(
            args.action,
            args.body_type,
            kind=args.kind,
            src=args.src,
            dst=args.dst,
            count=args.count or None,
            skip=args.skip,
            delay_ms=args.ms,
        )
        s.say(said.message_rule(s.cluster, rule, args.action, args.body_type, args.count or None))
        return rule
