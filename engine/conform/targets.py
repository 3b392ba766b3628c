"""The clusters a conformance case runs against: Kafka 4.4, ``eos serve``, or any cluster a user names.

Role
----
Each target gives a case program its client configs and carries out the fault vocabulary of
:mod:`engine.conform.vocabulary` in its own way:

================  ======================================  ==========================================
target            a fault is                              "the leader of X" is asked of
================  ======================================  ==========================================
Kafka 4.4         a signal to the broker's JVM            Kafka's own Metadata and FindCoordinator
                  (SIGKILL, SIGSTOP, SIGCONT, a new JVM)  (:func:`resolve_by_metadata`)
``eos serve``     the engine's process crash, pause,      the served cluster's control channel
                  resume, restart (the control channel)
any cluster       the user's command for the action,      Kafka's own Metadata and FindCoordinator
                  with ``{broker}`` filled in
================  ======================================  ==========================================

:meth:`begin` and :meth:`end` bracket each case: ``eos serve`` starts a fresh served cluster for
every case (deterministic, cheap: the same seed gives the same cluster), Kafka keeps one cluster for
the whole run and :meth:`end` brings back every broker a case killed or paused.

Invariants
----------
* A fault is carried out at once and returns the broker id it hit; a target that cannot carry out
  faults raises :class:`FaultsUnavailableError`, and the runner skips its fault cases.
* After :meth:`end`, every broker of the target is up again.
"""

from __future__ import annotations

import shlex
import subprocess
from typing import Any

from engine.conform.case import Case
from engine.conform.vocabulary import Fault, Selector
from engine.wire.client_config import kafka_python_from_confluent

__all__ = [
    "BootstrapTarget",
    "FaultsUnavailableError",
    "MockTarget",
    "ReferenceTarget",
    "ServedTarget",
    "java_feature",
    "java_string_hash",
    "resolve_by_metadata",
]


def java_feature() -> frozenset[str]:
    """Return ``{"java"}`` when the programs of ``jvm/`` can run here (Java and the built jar), else nothing."""
    from engine.conform.realtime_jvm import jvm_problem

    return frozenset({"java"}) if jvm_problem() is None else frozenset()


def features_of(config: dict[str, Any]) -> frozenset[str]:
    """Return what a cluster reached with ``config`` offers to cases' ``needs``: ``sasl`` for SASL/PLAIN, ``java``."""
    found = {"kafka-python", "create-topics", *java_feature()}
    if str(config.get("sasl.mechanism", "")).upper() == "PLAIN" and "sasl.username" in config:
        found.add("sasl")
    return frozenset(found)


class FaultsUnavailableError(RuntimeError):
    """The target has no means to carry out a fault (no kill command was given)."""


def java_string_hash(text: str) -> int:
    """Return Java's ``String.hashCode()`` of ``text`` (signed 32-bit), over its UTF-16 code units.

    Kafka places a group on ``__consumer_offsets`` partition ``abs(groupId.hashCode()) % n`` and a
    transactional id on ``__transaction_state`` partition ``abs(transactionalId.hashCode()) % n``
    (``GroupCoordinator.partitionFor``, ``TransactionStateManager.partitionFor``).

    >>> java_string_hash("orders")
    -1008770331
    """
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _java_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``abs(n)``, and 0 for ``Integer.MIN_VALUE``."""
    return 0 if n == -(1 << 31) else abs(n)


def resolve_by_metadata(config: dict[str, Any], selector: Selector) -> int:
    """Return the broker ``selector`` names now, asked of the cluster through Kafka's own protocol.

    Raises
    ------
    LookupError
        If the cluster does not know the topic, group or transactional id.
    """
    from confluent_kafka.admin import AdminClient

    if selector.kind == "broker":
        assert selector.broker is not None
        return selector.broker
    admin = AdminClient(config)
    if selector.kind == "leader":
        return _leader(admin, str(selector.topic), int(selector.partition or 0))
    if selector.kind == "group":
        description = admin.describe_consumer_groups([selector.key])[selector.key].result(15)
        return int(description.coordinator.id)
    internal = "__transaction_state"
    meta = admin.list_topics(internal, timeout=15).topics.get(internal)
    if meta is None or meta.error is not None or not meta.partitions:
        raise LookupError(f"no {internal} topic yet: no transactional producer has started")
    partition = _java_abs(java_string_hash(str(selector.key))) % len(meta.partitions)
    return _leader(admin, internal, partition)


def _leader(admin: Any, topic: str, partition: int) -> int:
    meta = admin.list_topics(topic, timeout=15).topics.get(topic)
    if meta is None or meta.error is not None or partition not in meta.partitions:
        raise LookupError(f"no partition {topic}-{partition} on this cluster")
    leader = int(meta.partitions[partition].leader)
    if leader < 0:
        raise LookupError(f"{topic}-{partition} has no leader now")
    return leader


class _Restoring:
    """Bookkeeping shared by targets that must bring brokers back after a case."""

    def __init__(self) -> None:
        self.killed: set[int] = set()
        self.paused: set[int] = set()

    def note(self, action: str, broker: int) -> None:
        if action == "kill":
            self.killed.add(broker)
        elif action == "restart":
            self.killed.discard(broker)
        elif action == "pause":
            self.paused.add(broker)
        elif action == "resume":
            self.paused.discard(broker)


class ReferenceTarget:
    """Apache Kafka 4.4: a :class:`~engine.conform.realtime_reference.KafkaReference` kept for the run."""

    can_fault = True

    def __init__(self, reference: Any) -> None:
        self.reference = reference
        self.name = "Kafka 4.4"
        self.brokers = tuple(range(1, reference.brokers + 1))
        self.features = features_of(self.client_config())
        self._restoring = _Restoring()

    def client_config(self) -> dict[str, Any]:
        return dict(self.reference.client_config())

    def kafka_python_config(self) -> dict[str, Any]:
        return dict(self.reference.kafka_python_config())

    def begin(self, case: Case) -> None:
        """Nothing: one cluster serves the whole run."""

    def end(self, case: Case) -> None:
        """Resume what the case paused and restart what it killed."""
        for broker in sorted(self._restoring.paused):
            self.reference.resume(broker)
        for broker in sorted(self._restoring.killed):
            self.reference.restart(broker)
        self._restoring = _Restoring()

    def carry_out(self, fault: Fault) -> int:
        broker = resolve_by_metadata(self.client_config(), fault.target)
        getattr(self.reference, fault.action)(broker)
        self._restoring.note(fault.action, broker)
        return broker

    def close(self) -> None:
        self.reference.stop()


#: The vocabulary's actions as the served cluster's control channel names them.
SERVED_ACTIONS = {"kill": "crash", "pause": "pause", "resume": "resume", "restart": "restart"}


class ServedTarget:
    """``eos serve``: a fresh served cluster per case, faults through its control channel.

    Parameters
    ----------
    brokers, seed, config
        The served cluster's shape; ``config`` is broker settings (Kafka's names), by default the
        ones the suite shares with the reference (:func:`engine.conform.settings.serve_config`).
    """

    can_fault = True
    features = frozenset({"sasl", "kafka-python", "create-topics"})

    def __init__(self, brokers: int = 3, seed: int = 1, config: dict[str, Any] | None = None) -> None:
        from engine.conform import settings

        self.name = "eos serve"
        self.features = ServedTarget.features | java_feature()
        self.brokers = tuple(range(1, brokers + 1))
        self.seed = seed
        self.config = dict(settings.serve_config() if config is None else config)
        self.server: Any = None
        self._control: Any = None

    def begin(self, case: Case) -> None:
        """Start a fresh served cluster for ``case`` (no topics: the program makes its own)."""
        from engine.serve.realtime_control import ControlClient
        from engine.serve.realtime_server import serve
        from engine.wire.journal import ServeSpec

        self.end(case)
        self.server = serve(ServeSpec(self.seed, len(self.brokers), dict(self.config), ()))
        host, port = self.server.control_address
        self._control = ControlClient(f"{host}:{port}", self.server.password)

    def end(self, case: Case) -> None:
        """Stop the case's served cluster."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self.server is not None:
            self.server.stop()
            self.server = None

    def client_config(self) -> dict[str, Any]:
        return dict(self.server.client_config())

    def kafka_python_config(self) -> dict[str, Any]:
        return kafka_python_from_confluent(self.client_config())

    def resolve(self, selector: Selector) -> int:
        """Return the broker ``selector`` names now, asked of the control channel."""
        if selector.kind == "broker":
            assert selector.broker is not None
            return selector.broker
        if selector.kind == "leader":
            answer = self._control.call("leader", topic=selector.topic, partition=selector.partition)
        else:
            answer = self._control.call("coordinator", kind=selector.kind, key=selector.key)
        return int(answer["broker"])

    def carry_out(self, fault: Fault) -> int:
        broker = self.resolve(fault.target)
        self._control.call(SERVED_ACTIONS[fault.action], broker=broker)
        return broker

    def close(self) -> None:
        self.end(None)  # type: ignore[arg-type]


class BootstrapTarget:
    """Any Kafka-compatible cluster a user names, with the user's own commands for faults.

    Parameters
    ----------
    config
        The confluent-kafka client config (``bootstrap.servers`` and security settings).
    commands
        Action -> shell command with ``{broker}`` for the broker id (``kill``, ``pause``, ``resume``,
        ``restart``); without ``kill`` and ``restart`` the fault cases are skipped.
    brokers
        The broker ids (asked of the cluster when not given).
    """

    def __init__(
        self, config: dict[str, Any], commands: dict[str, str] | None = None, brokers: tuple[int, ...] = ()
    ) -> None:
        self.name = str(config.get("bootstrap.servers", "cluster"))
        self._config = dict(config)
        self.commands = dict(commands or {})
        self.can_fault = "kill" in self.commands and "restart" in self.commands
        self.features = features_of(self._config)
        self.brokers = brokers or self._ask_brokers()
        self._restoring = _Restoring()

    def _ask_brokers(self) -> tuple[int, ...]:
        from confluent_kafka.admin import AdminClient

        meta = AdminClient(self._config).list_topics(timeout=15)
        return tuple(sorted(int(b) for b in meta.brokers))

    def client_config(self) -> dict[str, Any]:
        return dict(self._config)

    def kafka_python_config(self) -> dict[str, Any]:
        return kafka_python_from_confluent(self._config)

    def begin(self, case: Case) -> None:
        """Nothing: the user's cluster serves the whole run."""

    def end(self, case: Case) -> None:
        """Run the user's resume and restart commands for what the case paused or killed."""
        for broker in sorted(self._restoring.paused):
            self._run("resume", broker)
        for broker in sorted(self._restoring.killed):
            self._run("restart", broker)
        self._restoring = _Restoring()

    def carry_out(self, fault: Fault) -> int:
        if fault.action not in self.commands:
            raise FaultsUnavailableError(f"no command given for '{fault.action}' (eos conform --{fault.action} CMD)")
        broker = resolve_by_metadata(self._config, fault.target)
        self._run(fault.action, broker)
        self._restoring.note(fault.action, broker)
        return broker

    def _run(self, action: str, broker: int) -> None:
        command = self.commands[action].replace("{broker}", str(broker))
        done = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"'{command}' exited {done.returncode}: {done.stderr.strip()[-300:]}")

    def close(self) -> None:
        """Nothing to stop: the cluster is the user's."""


class MockTarget(BootstrapTarget):
    """librdkafka's in-process mock cluster (``test.mock.num.brokers``), as a cluster under test.

    It serves no SASL, no CreateTopics (topics are created on first use, 4 partitions) and takes no
    faults from outside, so those cases are skipped or make their topics by auto-creation; the rest
    show where it differs from Kafka 4.4 (it hands aborted records to read_committed readers).
    """

    def __init__(self, brokers: int = 3) -> None:
        from engine.record.workloads import MockCluster

        self._mock = MockCluster(brokers)
        super().__init__(self._mock.config())
        self.name = "librdkafka mock"
        self.features = self.features - {"create-topics", "java"}

    def close(self) -> None:
        """Stop the mock cluster."""
        self._mock.close()
