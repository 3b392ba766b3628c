"""``eos reference``: run real Apache Kafka 4.4.0 (KRaft) on 127.0.0.1, the conformance oracle.

    eos reference --brokers 3 --ready-file ready.json [--workdir D] [--duration S]

Starts one controller and ``--brokers`` broker JVMs (:class:`engine.conform.realtime_reference.KafkaReference`)
with the settings ``eos serve`` shares (:mod:`engine.conform.settings`), prints the client config to
paste into ``confluent_kafka.Producer({...})`` as ``eos serve`` does, writes the same ready file
(plus ``"kind": "kafka-4.4.0"`` and every node's pid), and runs until interrupted (Ctrl-C) or
``--duration`` seconds have passed; then every JVM is stopped. Needs Java 17 and the jars of
``bash scripts/fetch-kafka.sh``.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the reference arguments."""
    p.add_argument("--brokers", type=int, default=3, help="number of broker JVMs (default 3), node ids 1..N")
    p.add_argument("--ready-file", help="write the client config as JSON here once every broker answers")
    p.add_argument("--workdir", help="keep configs, logs and data here (default: a temporary folder, removed)")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="broker setting (repeatable)")
    p.add_argument("--heap-mb", type=int, default=512, help="each JVM's -Xmx in MiB (default 512)")
    p.add_argument("--no-auth", action="store_true", help="PLAINTEXT for clients (default: SASL/PLAIN required)")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds")


def run(args: argparse.Namespace) -> int:
    """Run the cluster until interrupted."""
    from engine.cli import UsageError
    from engine.commands.serve import parse_config
    from engine.conform.realtime_reference import KafkaReference, ReferenceClusterError, stop_signal

    if args.brokers < 1:
        raise UsageError("eos reference: --brokers must be at least 1")
    if args.heap_mb < 128:
        raise UsageError("eos reference: --heap-mb must be at least 128 (a broker needs about 300 MiB)")
    settings = parse_config(args.config, "eos reference")
    try:
        ref = KafkaReference(args.brokers, args.workdir, settings, auth=not args.no_auth, heap_mb=args.heap_mb)
    except ReferenceClusterError as exc:
        raise UsageError(f"eos reference: {exc}") from None
    stop = stop_signal()
    try:
        try:
            ref.start()
        except ReferenceClusterError as exc:
            print(f"eos reference: {exc}", file=sys.stderr)
            return 1
        if args.ready_file:
            ref.write_ready_file(args.ready_file)
        print(
            f"eos reference: Kafka 4.4.0, {args.brokers} brokers on {ref.bootstrap} "
            f"(started in {ref.start_s:.1f} s); client config:"
        )
        print(json.dumps(ref.client_config(), indent=2))
        sys.stdout.flush()
        stop.wait(args.duration)  # SIGTERM (a supervisor, `timeout`) stops the cluster as Ctrl-C does
    except KeyboardInterrupt:
        pass
    finally:
        ref.stop()
    return 0
