"""``eos fault``: make a fault on a running ``eos serve``, or ask it who leads, through its control channel.

    eos fault --server ready.json crash 1
    eos fault --server ready.json leader orders 0
    eos fault --server ready.json coordinator transaction my-txn
    eos fault --server ready.json wire-fault drop-response Produce 1

Prints the server's answer as one JSON line. Exit 0 when it was done, 1 when the server refused it
(a crash of a crashed broker) or cannot be reached, 2 for bad arguments or a missing ready file.
The faults are journaled (``eos serve --journal``), so ``eos replay-wire`` replays them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

#: op -> its positional arguments, as the usage line names them.
USAGE = {
    "crash": "BROKER",
    "restart": "BROKER",
    "pause": "BROKER",
    "resume": "BROKER",
    "isolate": "BROKER",
    "heal": "",
    "brokers": "",
    "leader": "TOPIC [PARTITION]",
    "coordinator": "group|transaction KEY",
    "wire-fault": "drop-response|close-after|close-before API [NTH]",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the fault arguments."""
    p.add_argument(
        "--server", required=True, metavar="READY.json", help="the ready file of 'eos serve --ready-file', or HOST:PORT"
    )
    p.add_argument("--password", default=None, help="the server's password (default: the ready file's)")
    p.add_argument("op", choices=list(USAGE), help="the fault, or a query (leader, coordinator, brokers)")
    p.add_argument("words", nargs="*", metavar="ARG", help="; ".join(f"{op} {u}".strip() for op, u in USAGE.items()))
    p.epilog = "exit status: 0 done; 1 refused by the server or the server cannot be reached; 2 bad arguments"


def request_args(op: str, words: list[str]) -> dict[str, Any]:
    """Return the request's arguments from the positional words; UsageError when they do not fit."""
    from engine.cli import UsageError

    def bad() -> UsageError:
        usage = " ".join(w for w in ("eos fault --server READY.json", op, USAGE[op]) if w)
        return UsageError(f"eos fault: use '{usage}'")

    def number(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise bad() from None

    n = len(words)
    if USAGE[op] == "BROKER":
        if n != 1:
            raise bad()
        return {"broker": number(words[0])}
    if op in ("heal", "brokers"):
        if n:
            raise bad()
        return {}
    if op == "leader" and n in (1, 2):
        return {"topic": words[0], "partition": number(words[1]) if n == 2 else 0}
    if op == "coordinator" and n == 2:
        return {"kind": words[0], "key": words[1]}
    if op == "wire-fault" and n in (2, 3):
        return {"action": words[0], "api": words[1], "nth": number(words[2]) if n == 3 else 1}
    raise bad()


def run(args: argparse.Namespace) -> int:
    """Send one request; print the answer."""
    from engine.cli import UsageError
    from engine.serve.realtime_control import ControlClient
    from engine.wire.control import ControlError

    request = request_args(args.op, args.words)
    try:
        client = ControlClient(args.server, args.password)
    except ControlError as exc:
        raise UsageError(f"eos fault: {exc}") from None
    try:
        with client:
            answer = client.call(args.op, **request)
    except ControlError as exc:
        print(f"eos fault: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(answer))
    return 0
