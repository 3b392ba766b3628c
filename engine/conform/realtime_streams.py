"""The Kafka Streams app of ``jvm/`` as a process, its input and its judged output.

    app = OrderTotalsApp(config, "totals-app", state_dir, "orders", "totals", log_path)
    app.start(); app.wait_running(60)
    produce_lines(config, "orders", order_lines(60))
    app.kill(); app.start(); app.wait_running(60)          # SIGKILL, then the same application.id
    judged = judge(config, "orders", "totals", timeout_s=60)

Role
----
``eosmagics.jvm.streams.OrderTotals`` (Kafka Streams 4.4.0, ``processing.guarantee=exactly_once_v2``)
sums order lines per customer into a table backed by a persistent store with its changelog and
writes each running total to an output topic. :class:`OrderTotalsApp` starts it with
:func:`~engine.conform.realtime_jvm.java_command` against any cluster whose confluent-kafka config
it is given (``eos serve`` or Kafka 4.4), knows when it runs (its ``STATE RUNNING`` lines), and
kills it (SIGKILL) or stops it (SIGTERM). :func:`judge` reads the input lines and the output
totals back with read_committed and hands them to :func:`engine.check.running_totals.check_running_totals`.

Invariants
----------
* Every wait is bounded; the app's stdout and stderr go to a log file, whose tail is in every error.
* Amounts are positive (the judge needs it) and a pure function of the line's index: the same
  input on every target.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.check.running_totals import check_running_totals
from engine.conform import realtime_wait
from engine.conform.realtime_jvm import java_command

__all__ = [
    "OrderTotalsApp",
    "java_client_args",
    "judge",
    "open_records",
    "order_lines",
    "produce_lines",
    "read_pairs",
    "wait_open_transaction",
]

MAIN_CLASS = "eosmagics.jvm.streams.OrderTotals"
#: Seconds between two input lines while a fault waits for an open transaction of the app.
FAULT_PACE_S = 0.05
#: The confluent-kafka properties that carry over to the Java client (the same names, or the
#: user and password the Java program turns into a PLAIN ``sasl.jaas.config``).
CLIENT_KEYS = ("security.protocol", "sasl.mechanism", "sasl.username", "sasl.password")
#: librdkafka's own log off: what matters is observed.
_QUIET = {"log_level": 0}


def java_client_args(config: dict[str, Any]) -> list[str]:
    """Return the ``key=value`` arguments that give the Java app ``config``'s security settings."""
    return [f"{k}={config[k]}" for k in CLIENT_KEYS if k in config]


def order_lines(n: int, customers: int = 4, start: int = 0) -> list[tuple[str, int]]:
    """Return order lines ``start .. start+n-1``: customer ``c<i % customers>``, amount 1..19."""
    return [(f"c{i % customers}", 1 + (i * 7) % 19) for i in range(start, start + n)]


class OrderTotalsApp:
    """One Streams instance of ``OrderTotals``; see the module docstring.

    Parameters
    ----------
    config
        The cluster's confluent-kafka config (``bootstrap.servers`` and its security settings).
    app_id, state_dir, input_topic, output_topic
        Its ``application.id``, ``state.dir`` and topics.
    log_path
        Where its stdout and stderr go (appended: a restart keeps the earlier lines).
    extra
        More Streams properties (``key=value`` strings).
    """

    def __init__(
        self,
        config: dict[str, Any],
        app_id: str,
        state_dir: str | Path,
        input_topic: str,
        output_topic: str,
        log_path: str | Path,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.command = java_command(
            MAIN_CLASS,
            str(config["bootstrap.servers"]),
            app_id,
            str(state_dir),
            input_topic,
            output_topic,
            *java_client_args(config),
            *extra,
        )
        self.log_path = Path(log_path)
        self.process: subprocess.Popen[bytes] | None = None
        self._runs_before = 0

    def start(self) -> None:
        """Start the JVM (a new instance after :meth:`kill` or :meth:`stop`)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("the Streams app is already running")
        self._runs_before = self._running_lines()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)

    def _running_lines(self) -> int:
        if not self.log_path.exists():
            return 0
        return sum(1 for line in self.log_path.read_bytes().splitlines() if line == b"STATE RUNNING")

    def wait_running(self, timeout_s: float) -> None:
        """Wait until this instance said ``STATE RUNNING``; raise with the log's tail otherwise."""
        if (
            not realtime_wait.wait_until(
                lambda: (
                    self._running_lines() > self._runs_before or self.process is None or self.process.poll() is not None
                ),
                timeout_s,
                0.2,
            )
            or self._running_lines() <= self._runs_before
        ):
            raise RuntimeError(f"the Streams app did not reach RUNNING in {timeout_s:g} s:\n{self.tail()}")

    def kill(self) -> None:
        """SIGKILL the JVM (a crash: no commit, no leave-group, its transaction left open)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        """Stop it cleanly (SIGTERM: Streams closes), or kill it after 15 s."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def close(self) -> None:
        """:meth:`stop` (so a conformance case's ``ctx.keep`` stops it when the case ends)."""
        self.stop()

    def tail(self, lines: int = 40) -> str:
        """Return the last ``lines`` lines of its log."""
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def produce_lines(
    config: dict[str, Any], topic: str, lines: list[tuple[str, int]], *, pace_s: float = 0.0, timeout_s: float = 30
) -> None:
    """Write ``lines`` (key: customer, value: the amount as a string) with an idempotent producer.

    With ``pace_s``, one line every ``pace_s`` seconds, so that the app is busy with them when the
    next step (a fault) comes.
    """
    from confluent_kafka import Producer

    producer = Producer({**config, **_QUIET, "enable.idempotence": True, "linger.ms": 5})
    for customer, amount in lines:
        producer.produce(topic, key=customer.encode(), value=str(amount).encode())
        producer.poll(0)
        if pace_s:
            producer.flush(timeout_s)
            realtime_wait.sleep(pace_s)
    left = producer.flush(timeout_s)
    if left:
        raise RuntimeError(f"{left} order line(s) not acknowledged in {timeout_s:g} s")


def read_pairs(
    config: dict[str, Any], topic: str, partitions: int, done: Any = None, timeout_s: float = 30
) -> list[tuple[str, int]]:
    """Read ``topic`` from the start with read_committed; return ``(key, int(value))`` in log order per partition.

    Reads until every partition reached its end and ``done(pairs)`` (when given) holds, or
    ``timeout_s`` passed (then returns what it read).
    """
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            **config,
            **_QUIET,
            "group.id": "eos-streams-judge",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
    by_partition: dict[int, list[tuple[str, int]]] = {p: [] for p in range(partitions)}
    at_end: set[int] = set()
    pairs: list[tuple[str, int]] = []
    stopwatch = realtime_wait.Stopwatch()
    try:
        while stopwatch.seconds() < timeout_s:
            m = consumer.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                    pairs = [pair for p in range(partitions) for pair in by_partition[p]]
                    if len(at_end) == partitions and (done is None or done(pairs)):
                        return pairs
                continue
            at_end.discard(m.partition())
            by_partition[m.partition()].append((m.key().decode(), int(m.value())))
    finally:
        consumer.close()
    return [pair for p in range(partitions) for pair in by_partition[p]]


def open_records(consumers: dict[str, Any], topic: str, partitions: int) -> int:
    """Return how many records of ``topic`` lie above its last stable offset (high watermark - LSO, summed).

    ``consumers`` maps each isolation level to a consumer of it. More than 0: a transaction that
    wrote to ``topic`` is open now. A partition whose leader does not answer (just killed:
    NOT_LEADER_OR_FOLLOWER, a timeout, until the controller moves it) counts 0.
    """
    from confluent_kafka import KafkaException, TopicPartition

    found = 0
    for p in range(partitions):
        try:
            ends = {
                level: c.get_watermark_offsets(TopicPartition(topic, p), timeout=2, cached=False)[1]
                for level, c in consumers.items()
            }
        except KafkaException:
            continue
        found += ends["read_uncommitted"] - ends["read_committed"]
    return found


def wait_open_transaction(
    config: dict[str, Any],
    topic: str,
    partitions: int = 2,
    timeout_s: float = 30,
    then: Callable[[], Any] | None = None,
) -> bool:
    """Wait until a transaction with records in ``topic`` is open; then call ``then()`` at once.

    ``then`` runs before the watermark consumers close, so a fault lands while the transaction
    seen open still is (a commit interval of the app is the window). Returns whether one was seen.
    """
    from confluent_kafka import Consumer

    consumers = {
        level: Consumer({**config, **_QUIET, "group.id": "eos-streams-judge", "isolation.level": level})
        for level in ("read_uncommitted", "read_committed")
    }
    try:
        seen = realtime_wait.wait_until(lambda: open_records(consumers, topic, partitions) > 0, timeout_s, 0.01)
        if then is not None:
            then()
        return seen
    finally:
        for c in consumers.values():
            c.close()


def judge(
    config: dict[str, Any], input_topic: str, output_topic: str, partitions: int = 2, timeout_s: float = 60
) -> dict[str, Any]:
    """Read the committed input and output back and judge the output; return what a test or a case observes.

    Waits (up to ``timeout_s``) until each customer's last output total equals the sum of its
    lines. Returns ``{"anomalies": [kind: message, ...], "totals": {customer: last total},
    "outputs": {customer: number of outputs}, "lines": number of input lines}``.
    """
    lines = read_pairs(config, input_topic, partitions, timeout_s=30)
    want: dict[str, int] = {}
    for customer, amount in lines:
        want[customer] = want.get(customer, 0) + amount

    def complete(pairs: list[tuple[str, int]]) -> bool:
        last = dict(pairs)
        return all(last.get(c) == total for c, total in want.items())

    totals = read_pairs(config, output_topic, partitions, complete, timeout_s)
    anomalies = check_running_totals(lines, totals, every=True)
    outputs: dict[str, int] = {}
    for customer, _total in totals:
        outputs[customer] = outputs.get(customer, 0) + 1
    return {
        "anomalies": [f"{a.kind}: {a.message}" for a in anomalies],
        "totals": dict(sorted(dict(totals).items())),
        "outputs": dict(sorted(outputs.items())),
        "lines": len(lines),
    }


def run_through_faults(
    config: dict[str, Any],
    *,
    app_id: str,
    input_topic: str,
    output_topic: str,
    workdir: str | Path,
    kill_broker: Callable[[], Any] | None = None,
    kill_app: bool = True,
    keep: Callable[[OrderTotalsApp], Any] | None = None,
    batch: int = 20,
) -> dict[str, Any]:
    """Run the app through a broker kill and an instance kill, each mid-transaction; return :func:`judge`'s answer.

    The steps (the test of ``eos serve`` and the conformance case take the same): ``batch`` lines,
    the app started and their totals committed; with ``kill_broker``, ``batch`` more lines, a
    transaction of the app open with records in the output, then ``kill_broker()``; with
    ``kill_app``, ``batch`` more, a transaction open again, the JVM SIGKILLed, its state directory
    wiped (the store is restored from its changelog) and the app started again with the same
    ``application.id``; ``batch`` last lines. The answer adds ``"open-at-fault"``: whether each fault
    found a transaction open (the batch before each fault trickles in while it waits, up to 30 s).
    """
    workdir = Path(workdir)
    state = workdir / "state"
    app = OrderTotalsApp(
        config, app_id, state, input_topic, output_topic, workdir / "streams.log", extra=("commit.interval.ms=500",)
    )
    if keep is not None:
        keep(app)
    at = 0

    def more() -> None:
        nonlocal at
        produce_lines(config, input_topic, order_lines(batch, start=at))
        at += batch

    def fault(act: Callable[[], Any]) -> None:
        # The batch trickles in (a line every FAULT_PACE_S) while the app works on it, so a
        # transaction of the app is open most of the time and the wait finds one however loaded
        # the machine is; the fault then lands mid-transaction.
        nonlocal at
        writer = threading.Thread(
            target=produce_lines,
            args=(config, input_topic, order_lines(batch, start=at)),
            kwargs={"pace_s": FAULT_PACE_S},
        )
        at += batch
        writer.start()
        try:
            opened.append(wait_open_transaction(config, output_topic, then=act))
        finally:
            writer.join()

    opened: list[bool] = []
    try:
        more()
        app.start()
        app.wait_running(90)
        read_pairs(config, output_topic, 2, lambda pairs: len(pairs) >= at, 60)
        if kill_broker is not None:
            fault(kill_broker)
        if kill_app:
            fault(app.kill)
            shutil.rmtree(state, ignore_errors=True)
            app.start()
            app.wait_running(90)
        more()
        judged = judge(config, input_topic, output_topic, timeout_s=90)
    finally:
        app.stop()
    judged["open-at-fault"] = opened
    return judged
