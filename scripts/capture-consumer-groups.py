"""Capture ``kafka-consumer-groups.sh --describe`` from a real Kafka 4.4 into test fixtures.

Run by hand (never by a test; ~2 minutes, one 3-broker reference cluster)::

    PYTHONPATH=$PWD .venv/bin/python scripts/capture-consumer-groups.py

It starts :class:`engine.conform.realtime_reference.KafkaReference`, makes four groups of
confluent-kafka consumers on topics ``orders`` (4 partitions) and ``payments`` (2): a classic
group of two (``classic-group``), a KIP-848 group of two (``group.protocol=consumer``,
``kip848-group``), a static member (``group.instance.id``, ``static-group``) and a group whose
only member left after committing (``empty-group``), then runs Kafka's own
``org.apache.kafka.tools.consumer.group.ConsumerGroupCommand`` (the kafka-tools jar,
reference/pom.xml) with ``--describe`` and each of ``--offsets``, ``--members``,
``--members --verbose``, ``--state``, ``--state --verbose``. Each output is written to
tests/unit/views/fixtures/kafka_4_4_consumer_groups_<group>_<flags>.txt: what the tool wrote to
stderr (its notices; SLF4J lines dropped) followed by its stdout, byte for byte.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from engine.conform.realtime_reference import KafkaReference

OUT = Path(__file__).resolve().parents[1] / "tests" / "unit" / "views" / "fixtures"
TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
FLAGS = {
    "offsets": ["--offsets"],
    "members": ["--members"],
    "members_verbose": ["--members", "--verbose"],
    "state": ["--state"],
    "state_verbose": ["--state", "--verbose"],
}


def main() -> None:
    """Start the cluster, make the groups, capture every flag of every group."""
    OUT.mkdir(parents=True, exist_ok=True)
    with KafkaReference(brokers=3, auth=False) as k:
        bs = k.bootstrap
        if not (k.libs / "kafka-tools-4.4.0.jar").is_file():
            raise SystemExit("kafka-tools-4.4.0.jar missing: run 'bash scripts/fetch-kafka.sh'")
        admin = AdminClient({"bootstrap.servers": bs})
        for f in admin.create_topics([NewTopic("orders", 4, 3), NewTopic("payments", 2, 3)]).values():
            f.result()
        time.sleep(1)
        p = Producer({"bootstrap.servers": bs})
        for i in range(40):
            p.produce("orders", value=b"v", partition=i % 4)
        for i in range(10):
            p.produce("payments", value=b"v", partition=i % 2)
        p.flush()
        consumers: list[Consumer] = []

        def consumer(group: str, client_id: str, topics: list[str], **extra: str) -> None:
            c = Consumer(
                {
                    "bootstrap.servers": bs,
                    "group.id": group,
                    "client.id": client_id,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                    **extra,
                }
            )
            c.subscribe(topics)
            consumers.append(c)

        consumer("classic-group", "alpha", ["orders"])
        consumer("classic-group", "beta-both", ["orders", "payments"])
        consumer("kip848-group", "gamma", ["orders"], **{"group.protocol": "consumer"})
        consumer("kip848-group", "delta-both", ["orders", "payments"], **{"group.protocol": "consumer"})
        consumer("static-group", "epsilon", ["orders"], **{"group.instance.id": "static-1"})
        consumer("empty-group", "zeta", ["orders"])

        def poll_all(seconds: float) -> None:
            end = time.time() + seconds
            while time.time() < end:
                for c in consumers:
                    c.poll(0.05)

        poll_all(15)
        for c in consumers:
            c.commit(asynchronous=False)
        consumers.pop().close()  # empty-group: committed, then left
        classpath = f"{k.libs}/*"
        for group in ("classic", "kip848", "static", "empty"):
            for name, flags in FLAGS.items():
                cmd = ["java", "-cp", classpath, TOOL, "--bootstrap-server", bs, "--describe"]
                r = subprocess.run(
                    [*cmd, "--group", f"{group}-group", *flags],
                    capture_output=True,
                    text=True,
                    timeout=120,
                    check=False,
                )
                notices = "".join(line for line in r.stderr.splitlines(keepends=True) if not line.startswith("SLF4J"))
                (OUT / f"kafka_4_4_consumer_groups_{group}_{name}.txt").write_text(notices + r.stdout)
                poll_all(1)
        r = subprocess.run(
            ["java", "-cp", classpath, TOOL, "--bootstrap-server", bs, "--describe", "--group", "no-such-group"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        (OUT / "kafka_4_4_consumer_groups_missing.txt").write_text(r.stdout)
        for c in consumers:
            c.close()


if __name__ == "__main__":
    main()
