"""The pytest plugin's Kafka mode: ``pytest --eos-server=kafka`` runs every ``eos_server`` test on Kafka 4.4.

Registered with the ``eos`` plugin (:data:`eos_magics.pytest_plugin.pytest_plugins`);
``docs/testing.md`` ("Testing against Kafka 4.4 itself: --eos-server=kafka") is the user's guide.

::

    pytest tests/test_app.py --eos-server=kafka   # the same eos_server tests, against real Kafka 4.4

Role
----
* :func:`kafka_cluster` gives one ``eos_server`` test an :class:`EosTestKafka`: the interface of
  :class:`~eos_magics.pytest_wire.WireTestCluster`, as the served cluster's
  :class:`~eos_magics.pytest_served.EosTestServer` has it, on a real Apache Kafka 4.4 cluster
  (:class:`engine.conform.realtime_reference.KafkaReference`). A crash is SIGKILL to the broker's
  JVM, a pause SIGSTOP, a restart a new JVM on the same ports and log dir; ``leader`` and
  ``coordinator`` are asked of Kafka itself (Metadata, DescribeGroups, the ``__transaction_state``
  partition of ``abs(transactionalId.hashCode()) % n``): all of it is
  :class:`engine.conform.targets.ReferenceTarget`'s, the conformance suite's.
* The fixture ``eos_kafka_clusters`` (session scope) starts one cluster per shape (brokers and
  broker config) the first time a test asks for it, and stops every one at the end of the session.
* Per test: the marker's topics are created (replication factor ``min(3, brokers)`` unless the
  marker says), and at teardown every fault is healed and every topic that is not internal is
  deleted, waiting until Kafka no longer lists it, so the next test starts on an empty cluster
  with every broker up.

Invariants
----------
* No JVM outlives the session: the clusters stop at session teardown (also after Ctrl-C, which
  pytest turns into teardown); :class:`KafkaReference` also stops its JVMs at interpreter exit,
  and the kernel kills them if the process dies (``PR_SET_PDEATHSIG``).
* Without Java or the Kafka jars a test is skipped with one line naming
  ``bash scripts/fetch-kafka.sh``; under ``CI=true`` it fails instead.
* Loading this module imports pytest, the standard library and :mod:`eos_magics.pytest_wire` only.

What it does not do
-------------------
No seed and no journal: Kafka is not deterministic, a failure's report gives the rerun line only.
``isolate`` and the wire faults (``drop_response``, ``close_after``, ``close_before``) cannot be
done to a real Kafka here: they fail the test with one line (``@pytest.mark.eos_served_only``
skips such a test under ``--eos-server=kafka``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from eos_magics.pytest_wire import WireTestCluster

if TYPE_CHECKING:
    from engine.conform.realtime_reference import KafkaReference
    from engine.conform.targets import ReferenceTarget
    from engine.conform.vocabulary import Selector

__all__ = ["EosTestKafka", "KafkaClusters", "eos_kafka_clusters", "kafka_cluster"]

#: How long topic creation and deletion may take before the test fails.
TOPIC_TIMEOUT_S = 30.0

#: Why :meth:`EosTestKafka.isolate` and the wire faults are refused.
NO_ISOLATE = "its brokers share one loopback network here, and cutting one off needs firewall rules"
NO_WIRE_FAULT = "wire faults act inside eos serve's request handling; a Kafka broker has no such hook"
#: ``eos fault``'s node faults -> the conformance vocabulary's signal to a broker's JVM.
_SIGNALS = {"crash": "kill", "restart": "restart", "pause": "pause", "resume": "resume"}


def _problem() -> str | None:
    """Return why a Kafka 4.4 cluster cannot start here (no Java, no jars), or None."""
    from engine.conform.realtime_reference import ReferenceClusterError, find_libs

    if shutil.which("java") is None:
        return "Java 17 not found (apt-get install openjdk-17-jre-headless), then: bash scripts/fetch-kafka.sh"
    try:
        find_libs()
    except ReferenceClusterError as exc:
        return str(exc)
    return None


def shape_settings(brokers: int, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the broker settings of a cluster of ``brokers``: replication at most ``brokers``, ``config`` on top."""
    small = {
        "min.insync.replicas": min(2, brokers),
        "default.replication.factor": min(3, brokers),
        "offsets.topic.replication.factor": min(3, brokers),
        "transaction.state.log.replication.factor": min(3, brokers),
        "transaction.state.log.min.isr": min(2, brokers),
    }
    return {**small, **(config or {})}


class KafkaClusters:
    """The session's Kafka 4.4 clusters, one per shape, each started when a test first asks for it."""

    def __init__(self) -> None:
        self._live: dict[tuple[Any, ...], KafkaReference] = {}
        self._failed: dict[tuple[Any, ...], str] = {}

    def get(self, brokers: int, config: Mapping[str, Any] | None) -> KafkaReference:
        """Return the running cluster of this shape, started now if it is the first ask.

        Raises
        ------
        RuntimeError
            With one line, when the cluster does not start (again for every later ask).
        """
        from engine.conform.realtime_reference import KafkaReference, ReferenceClusterError
        from engine.conform.settings import kafka_settings

        settings = shape_settings(brokers, config)
        key = (brokers, *sorted(kafka_settings(settings).items()))
        if key in self._failed:
            raise RuntimeError(self._failed[key])
        if key not in self._live:
            try:
                self._live[key] = KafkaReference(brokers=brokers, settings=settings).start()
            except (ReferenceClusterError, ValueError) as exc:
                self._failed[key] = f"Kafka 4.4 with {brokers} brokers did not start: {str(exc).splitlines()[0]}"
                raise RuntimeError(self._failed[key]) from None
        return self._live[key]

    def stop(self) -> None:
        """Stop every cluster (brokers, then the controller; SIGKILL what does not stop)."""
        live, self._live = self._live, {}
        for ref in live.values():
            ref.stop()


@pytest.fixture(scope="session")
def eos_kafka_clusters() -> Iterator[KafkaClusters]:
    """The session's Kafka 4.4 clusters for ``--eos-server=kafka``, stopped when the session ends."""
    clusters = KafkaClusters()
    try:
        yield clusters
    finally:
        clusters.stop()


class EosTestKafka(WireTestCluster):
    """One test on a real Kafka 4.4 cluster, with the interface of the served cluster's ``EosTestServer``.

    Parameters
    ----------
    reference : KafkaReference
        The running cluster (shared by the session's tests of the same shape).
    nodeid : str
        The test's node id (for the rerun line).
    """

    kind = "kafka"

    def __init__(self, reference: KafkaReference, nodeid: str) -> None:
        from engine.conform.targets import ReferenceTarget

        self.reference = reference
        self.nodeid = nodeid
        self.target: ReferenceTarget = ReferenceTarget(reference)
        self.failed = False

    def __repr__(self) -> str:
        return f"EosTestKafka(brokers={self.reference.brokers}, bootstrap={self.bootstrap!r})"

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:port,...`` of every broker."""
        return self.reference.bootstrap

    @property
    def password(self) -> str | None:
        """The SASL/PLAIN password of user ``eos`` (random per cluster)."""
        return self.reference.password

    # -- faults: signals to the brokers' JVMs; queries: asked of Kafka itself ---------------------

    def fault(self, op: str, **args: Any) -> dict[str, Any]:
        """Carry out one request of ``eos fault``'s vocabulary on Kafka 4.4; answer as the served cluster does.

        ``crash`` is SIGKILL to the broker's JVM (the kernel closes its sockets, nothing is
        flushed), ``pause``/``resume`` SIGSTOP/SIGCONT, ``restart`` a new JVM on the same ports and
        log dir, ``heal`` resumes and restarts every broker; each returns once the brokers are
        registered. ``leader`` and ``coordinator`` ask Kafka's Metadata and FindCoordinator (-1:
        none). ``isolate`` and the wire faults cannot be done to a real Kafka here: the test fails
        with one line (:meth:`unavailable`). Another ``op`` is a ValueError.
        """
        from engine.conform.vocabulary import Selector

        if op in _SIGNALS:
            self._signal(_SIGNALS[op], args["broker"])
            return {}
        if op == "heal":
            self.target.end(None)  # type: ignore[arg-type]  # end() takes the case for its signature only
            return {}
        if op == "isolate":
            self.unavailable("isolate()", NO_ISOLATE)
        if op == "wire-fault":
            self.unavailable(f"{str(args.get('action', 'wire_fault')).replace('-', '_')}()", NO_WIRE_FAULT)
        if op == "leader":
            return {"broker": self._ask(Selector("leader", topic=args["topic"], partition=args.get("partition", 0)))}
        if op == "coordinator":
            kind = args["kind"]
            if kind not in ("group", "transaction"):
                raise ValueError(f"coordinator kind must be one of group, transaction, got {kind!r}")
            return {"broker": self._ask(Selector(kind, key=args["key"]))}
        if op == "brokers":
            return self._brokers()
        raise ValueError(f"unknown fault {op!r}: one of {', '.join([*_SIGNALS, 'heal', 'isolate', 'wire-fault'])}")

    def _signal(self, action: str, broker: int) -> None:
        from engine.conform.vocabulary import Fault, Selector

        if isinstance(broker, bool) or not isinstance(broker, int) or broker not in self.target.brokers:
            raise ValueError(f"no broker {broker!r}: brokers are {', '.join(map(str, self.target.brokers))}")
        self.target.carry_out(Fault(action, Selector("broker", broker=broker)))

    def _ask(self, selector: Selector) -> int:
        from engine.conform.targets import resolve_by_metadata

        try:
            return resolve_by_metadata(self.config(), selector)
        except LookupError as exc:
            if "no leader" in str(exc) or "no __transaction_state" in str(exc):
                return -1
            raise

    def _brokers(self) -> dict[str, list[int]]:
        """The brokers by the state of their JVM: ``up``, ``down`` (not running), ``paused`` (stopped)."""
        out: dict[str, list[int]] = {"up": [], "down": [], "paused": [], "isolated": []}
        for b in self.target.brokers:
            pid = self.reference.pid(b)
            out["down" if pid is None else "paused" if _stopped(pid) else "up"].append(b)
        return out

    # -- the report and the end of the test -------------------------------------------------------

    def replay_section(self) -> str:
        """Return the failure report's ``eos`` section: no seed, no journal, the rerun line."""
        return f"Kafka 4.4 (no seed, no journal)\nrerun: pytest {shlex.quote(self.nodeid)} --eos-server=kafka"

    def stop(self) -> None:
        """Heal every fault and delete every topic that is not internal, waiting until Kafka has."""
        self.heal()
        _delete_topics(self.config())


def _stopped(pid: int) -> bool:
    """Whether the process is stopped (state ``T``: SIGSTOP)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def _create_topics(config: dict[str, Any], topics: tuple[tuple[str, int, int | None], ...], brokers: int) -> None:
    """Create the marker's topics; wait until every partition has a leader. RuntimeError with one line if not."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    if not topics:
        return
    admin = AdminClient({**config, "log_level": 0})
    deadline = time.monotonic() + TOPIC_TIMEOUT_S
    todo = {name: NewTopic(name, n, rf if rf is not None else min(3, brokers)) for name, n, rf in topics}
    while todo:
        for name, future in admin.create_topics(list(todo.values()), operation_timeout=TOPIC_TIMEOUT_S).items():
            try:
                future.result()
                del todo[name]
            except KafkaException as exc:
                err = exc.args[0]
                # a topic of the same name deleted a moment ago may still be on its way out
                if err.code() != KafkaError.TOPIC_ALREADY_EXISTS or time.monotonic() > deadline:
                    raise RuntimeError(f"creating topic {name!r} on Kafka 4.4: {err.str()}") from None
        if todo:
            time.sleep(0.2)
    while True:
        with contextlib.suppress(KafkaException):
            meta = admin.list_topics(timeout=5).topics
            if all(
                name in meta
                and len(meta[name].partitions) == partitions
                and all(p.leader >= 0 for p in meta[name].partitions.values())
                for name, partitions, _rf in topics
            ):
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the topics {[t[0] for t in topics]} have no leaders after {TOPIC_TIMEOUT_S:g} s")
        time.sleep(0.1)


def _delete_topics(config: dict[str, Any]) -> None:
    """Delete every topic that is not internal (``__...``) and wait until Kafka no longer lists them."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**config, "log_level": 0})
    deadline = time.monotonic() + TOPIC_TIMEOUT_S
    names = sorted(t for t in admin.list_topics(timeout=TOPIC_TIMEOUT_S).topics if not t.startswith("__"))
    if names:
        for future in admin.delete_topics(names, operation_timeout=TOPIC_TIMEOUT_S).values():
            with contextlib.suppress(Exception):  # already gone
                future.result()
    while names:
        meta = admin.list_topics(timeout=TOPIC_TIMEOUT_S).topics
        names = [t for t in names if t in meta]
        if names and time.monotonic() > deadline:
            raise RuntimeError(f"Kafka 4.4 still lists the deleted topics {names} after {TOPIC_TIMEOUT_S:g} s")
        if names:
            time.sleep(0.1)


@contextlib.contextmanager
def kafka_cluster(
    request: pytest.FixtureRequest,
    brokers: int,
    config: Mapping[str, Any] | None,
    topics: tuple[tuple[str, int, int | None], ...],
) -> Iterator[EosTestKafka]:
    """Give one ``eos_server`` test a Kafka 4.4 cluster of its marker's shape, with its topics.

    Skips the test with one line where Java or the jars are missing (fails it under ``CI=true``);
    fails it with one line where the cluster does not start or a topic cannot be created. At the
    end: every fault healed, every topic deleted.
    """
    problem = _problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"--eos-server=kafka under CI=true, and Kafka 4.4 is unavailable: {problem}", pytrace=False)
        pytest.skip(f"--eos-server=kafka: {problem}")
    clusters: KafkaClusters = request.getfixturevalue("eos_kafka_clusters")
    try:
        reference = clusters.get(brokers, config)
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    eos = EosTestKafka(reference, request.node.nodeid)
    try:
        _create_topics(eos.config(), topics, brokers)
    except RuntimeError as exc:
        pytest.fail(f"@pytest.mark.eos_server: {exc}", pytrace=False)
    try:
        yield eos
    finally:
        eos.stop()
