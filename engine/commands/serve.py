"""``eos serve``: serve a simulated cluster to real Kafka clients on 127.0.0.1.

    eos serve --brokers 3 --port 0 --ready-file ready.json --topic orders:3 --seed 7

Prints (and writes to ``--ready-file``, once connections are accepted) the client config to paste
into ``confluent_kafka.Producer({...})``: the bootstrap servers and the SASL/PLAIN settings with this
server's random password. Standard output is line-buffered, so the config shows at once in a pipe
or a log file. Serves until interrupted (Ctrl-C, SIGTERM) or ``--duration`` seconds have passed;
then the ready file is removed.

Faults from outside: the server listens on one more port, its control channel (``"control"`` in the
ready file; ``port + brokers`` when ``--port`` is given), for ``eos fault --server ready.json crash 1``
(also restart, pause, resume, isolate, heal, wire-fault, and the queries leader, coordinator, brokers).
They are journaled with ``--journal``, so ``eos replay-wire`` replays them.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any

from engine.errors import ConfigError, KafkaError
from engine.wire.journal import SERVED_LATENCY_MS


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the serve arguments."""
    p.add_argument("--brokers", type=int, default=3, help="number of simulated brokers (default 3)")
    p.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; name another to expose it)")
    p.add_argument("--port", type=int, default=0, help="first broker's port; broker i gets port+i-1 (0: free ports)")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="broker setting (repeatable)")
    p.add_argument(
        "--topic", action="append", default=[], metavar="NAME[:PARTITIONS[:RF]]", help="create a topic (repeatable)"
    )
    p.add_argument(
        "--ready-file",
        help="write the client config (and the control channel's address, for 'eos fault') as JSON here "
        "once connections are accepted",
    )
    p.add_argument("--journal", help="record every wire input and output here, for 'eos replay-wire'")
    p.add_argument("--rate", type=float, default=1.0, help="simulated seconds per real second (default 1.0)")
    p.add_argument(
        "--latency-ms",
        type=int,
        default=SERVED_LATENCY_MS,
        help=f"simulated ms of a hop between brokers (default {SERVED_LATENCY_MS}: loopback's microseconds; "
        "the engine's simulations take 1)",
    )
    p.add_argument("--no-auth", action="store_true", help="accept clients without SASL/PLAIN (default: required)")
    p.add_argument("--duration", type=float, default=None, help="stop after this many real seconds")
    p.epilog = (
        "faults from outside: 'eos fault --server READY.json crash 1' (restart, pause, resume, isolate, heal, "
        "wire-fault; leader, coordinator, brokers) through the control channel, one more port (port+brokers "
        "with --port, else a free one; 'control' in the ready file); journaled, so 'eos replay-wire' replays them"
    )


def parse_topic(text: str) -> tuple[str, int, int | None]:
    """Read ``NAME[:PARTITIONS[:RF]]``."""
    from engine.cli import UsageError

    parts = text.split(":")
    try:
        partitions = int(parts[1]) if len(parts) > 1 else 1
        rf = int(parts[2]) if len(parts) > 2 else None
    except ValueError:
        raise UsageError(f"eos serve: --topic {text!r}: use NAME[:PARTITIONS[:RF]], e.g. orders:3:3") from None
    if len(parts) > 3 or not parts[0]:
        raise UsageError(f"eos serve: --topic {text!r}: use NAME[:PARTITIONS[:RF]], e.g. orders:3:3")
    return parts[0], partitions, rf


def parse_config(
    items: list[str], command: str = "eos serve", example: str = "min.insync.replicas=2"
) -> dict[str, Any]:
    """Read ``KEY=VALUE`` items (``command`` and ``example`` name the error's fix)."""
    from engine.cli import UsageError

    config: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{command}: --config {item!r}: use KEY=VALUE, e.g. {example}")
        config[key] = value
    return config


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    from engine.cli import UsageError
    from engine.serve.realtime_server import ServedCluster
    from engine.wire.journal import ServeSpec

    if args.brokers < 1:
        raise UsageError("eos serve: --brokers must be at least 1")
    if not args.rate > 0:
        raise UsageError("eos serve: --rate must be > 0 (1.0 = real time)")
    if args.latency_ms < 0:
        raise UsageError("eos serve: --latency-ms must be >= 0")
    topics = tuple(parse_topic(t) for t in args.topic)
    spec = ServeSpec(args.seed, args.brokers, parse_config(args.config), topics, args.latency_ms)
    try:
        cluster = spec.build()
    except (ConfigError, KafkaError, ValueError, TypeError) as exc:
        raise UsageError(f"eos serve: {exc}") from None
    server = ServedCluster(
        cluster,
        host=args.host,
        port=args.port,
        auth=not args.no_auth,
        rate=args.rate,
        spec=spec,
        journal_path=args.journal,
    )

    # Printed lines reach a pipe or a file at once (block buffering would hold back the client config).
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    # SIGTERM (kill, a supervisor) stops serving as Ctrl-C does: the journal is flushed, the ready file removed.
    previous = signal.signal(signal.SIGTERM, lambda _signum, _frame: server.stop())

    def announce() -> None:
        print(f"eos serve: {args.brokers} brokers on {server.bootstrap} (seed {args.seed}); client config:")
        print(json.dumps(server.client_config(), indent=2))
        if server.control_address is not None:
            print("control channel (eos fault --server READY.json crash 1): {}:{}".format(*server.control_address))
        sys.stdout.flush()

    try:
        server.serve_forever(ready_file=args.ready_file, duration_s=args.duration, on_ready=announce)
    except OSError as exc:
        raise UsageError(f"eos serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0
