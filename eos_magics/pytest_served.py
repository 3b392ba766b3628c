"""The pytest plugin's served mode: ``eos_server``, a cluster per test on loopback for real Kafka clients.

Registered by :mod:`eos_magics.pytest_plugin` (its ``pytest_plugins``), so it comes with the ``eos``
plugin; ``docs/testing.md`` ("Testing against the served cluster: eos_server") is the user's guide.

::

    @pytest.mark.eos_server(brokers=3, topics={"orders": 3})
    def test_orders(eos_server):
        from confluent_kafka import Producer  # the real client, over real sockets

        p = Producer({**eos_server.config(), "enable.idempotence": True})
        eos_server.crash(eos_server.leader("orders", 0))
        ...

Role
----
* The fixture ``eos_server`` serves one test's cluster as ``eos serve`` does
  (:class:`engine.serve.ServedCluster`: 127.0.0.1, a free port per broker, SASL/PLAIN with a
  random password) from a thread, and yields an :class:`EosTestServer`: the client configs
  (confluent-kafka, kafka-python, aiokafka), faults and queries in the vocabulary of ``eos fault``
  and of ``eos_cluster``, the journal.
* The seed comes from the same rules as ``eos_cluster``'s (``--eos-seed``, ``eos_seed``, the
  CRC-32 of the node id: :func:`eos_magics.pytest_plugin.derived_seed`); the shape from
  ``@pytest.mark.eos_server(brokers=, config=, topics=)``, read as ``eos_cluster``'s marker is,
  the broker config defaulted to Kafka mode's (:func:`served_settings`).
* Every input of the session is journaled (:class:`engine.wire.journal.WireJournal`) to
  ``wire.jsonl`` in the test's ``tmp_path``, or to ``--eos-journal-dir DIR`` (kept there only
  for tests that failed). A failed test's report has an ``eos`` section: the seed, the
  fingerprint, the journal and ``replay: eos replay-wire JOURNAL``, which rebuilds the cluster and
  checks every response byte.

Invariants
----------
* Faults go through :meth:`ServedCluster.fault <engine.serve.realtime_server.ServedCluster.fault>`,
  the control channel's own path (:func:`engine.wire.control.apply`), so they are journaled and
  the journal replays; nothing here touches the cluster under ``server.locked()``.
* Loading this module imports pytest, the standard library and the plugin module only; the
  engine is imported by the first test that asks for ``eos_server``.
* The server is stopped when the test's fixtures are torn down: its thread joined, its ports
  and the clients' connections to them closed.

What it does not do
-------------------
It does not patch ``confluent_kafka`` (the real client is the point) and does not judge a
history: on ``eos_server``, ``@pytest.mark.eos_check`` judges end-to-end promises only, by a final
read over the wire (:func:`eos_magics.pytest_wire.judge_promises`; the real clients' calls are not
recorded, :mod:`engine.record` wraps them for ``eos check`` by hand). Real clients run in real
time, so a rerun with the same seed builds the same cluster but is not the same run: the journal
is what replays. ``--eos-server=kafka`` gives the test a real Kafka 4.4 cluster instead
(:mod:`eos_magics.pytest_kafka`), with the same interface.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from eos_magics.pytest_plugin import add_eos_section, check_args, cluster_args, item_seed, marker_args
from eos_magics.pytest_wire import WireTestCluster, judge_promises

if TYPE_CHECKING:
    from engine.serve import ServedCluster
    from engine.wire.journal import ServeSpec

__all__ = ["EosTestServer", "eos_server"]

MARKERS = (
    (
        "eos_server(brokers=3, config=None, topics=None): the eos_server fixture's brokers, broker config "
        "and topics ({'orders': 3} or {'orders': {'partitions': 3, 'replication_factor': 3}})"
    ),
    "eos_served_only(reason): skip this eos_server test under --eos-server=kafka (wire faults, isolate)",
)

#: The clusters ``--eos-server`` can give ``eos_server``.
KINDS = ("served", "kafka")

#: What a topic of the ``eos_server`` marker may say, beyond a number of partitions.
TOPIC_KEYS = ("partitions", "replication_factor")

_SERVER = pytest.StashKey[WireTestCluster]()


class EosTestServer(WireTestCluster):
    """One test's served cluster: client configs, faults through the control path, the journal.

    The interface is :class:`~eos_magics.pytest_wire.WireTestCluster`'s, shared with
    :class:`eos_magics.pytest_kafka.EosTestKafka` (``--eos-server=kafka``).

    Parameters
    ----------
    server : ServedCluster
        The running server.
    spec : ServeSpec
        What its cluster was built from (the journal's header).
    nodeid : str
        The test's node id (for the rerun line).
    seed_source : str
        Where the seed came from, in words.
    journal : Path
        The journal file.
    """

    kind = "served"

    def __init__(self, server: ServedCluster, spec: ServeSpec, nodeid: str, seed_source: str, journal: Path) -> None:
        self.server = server
        self.spec = spec
        self.nodeid = nodeid
        self.seed_source = seed_source
        self.journal = journal
        #: Whether a phase of the test failed (the journal is kept then).
        self.failed = False

    def __repr__(self) -> str:
        return f"EosTestServer(seed={self.seed}, bootstrap={self.bootstrap!r}, journal={str(self.journal)!r})"

    @property
    def seed(self) -> int:
        """The cluster's seed."""
        return self.spec.seed

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:port,...`` of every broker."""
        return self.server.bootstrap

    @property
    def password(self) -> str | None:
        """The SASL/PLAIN password of user ``eos`` (random per server)."""
        return self.server.password

    # -- faults and queries: eos fault's vocabulary -------------------------------------------------

    def fault(self, op: str, **args: Any) -> dict[str, Any]:
        """Make one control request (``crash``, ``wire-fault``, ``leader``, ...) as ``eos fault`` does.

        Returns the answer; raises :class:`engine.wire.control.ControlError` (a ``ValueError``) when refused.
        """
        return self.server.fault(op, **args)

    # -- the report -------------------------------------------------------------------------------

    def fingerprint(self) -> str:
        """Return the served cluster's run fingerprint now."""
        with self.server.guard:
            return self.server.cluster.fingerprint()

    def replay_section(self) -> str:
        """Return the failure report's ``eos`` section: seed, fingerprint, journal, the replay and rerun lines."""
        try:
            with self.server.guard:
                c = self.server.cluster
                fingerprint = f"{c.fingerprint()} (at {c.now_ms} simulated ms)"
        except Exception as exc:  # a report must never raise into pytest
            fingerprint = f"unavailable ({type(exc).__name__}: {exc})"
        journal = shlex.quote(str(self.journal))
        return (
            f"seed: {self.seed} ({self.seed_source})\n"
            f"fingerprint: {fingerprint}\n"
            f"journal: {self.journal}\n"
            f"replay: eos replay-wire {journal}\n"
            f"rerun: pytest {shlex.quote(self.nodeid)} --eos-seed {self.seed} (the same cluster; real clients' "
            "timing differs, the journal is what replays)"
        )

    def stop(self) -> None:
        """Stop serving: the thread joined, every port and connection closed, the journal closed."""
        self.server.stop()


# -- options, markers, the fixture, the report --------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--eos-journal-dir`` and ``--eos-server``."""
    group = parser.getgroup("eos", "eos-magics simulated Kafka")
    group.addoption(
        "--eos-journal-dir",
        default=None,
        metavar="DIR",
        help="write each eos_server test's wire journal here (kept for failed tests); default: the test's tmp_path",
    )
    group.addoption(
        "--eos-server",
        default="served",
        choices=KINDS,
        help="what eos_server gives a test: 'served' (eos serve in this process, the default) or 'kafka' "
        "(a real Apache Kafka 4.4 cluster, one per session and shape; needs bash scripts/fetch-kafka.sh)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``eos_server`` and ``eos_served_only`` markers."""
    for line in MARKERS:
        config.addinivalue_line("markers", line)


def _topics_of(topics: Mapping[str, Any]) -> tuple[tuple[str, int, int | None], ...]:
    """Return ``ServeSpec.topics`` of the marker's topics; ValueError with one line for what is not served."""
    out = []
    for name, spec in topics.items():
        if isinstance(spec, Mapping):
            extra = sorted(set(spec) - set(TOPIC_KEYS))
            if extra:
                raise ValueError(
                    f"topic {name!r}: eos_server topics take {' and '.join(TOPIC_KEYS)}, not {extra[0]!r} "
                    "(set topic configs with an admin client's create_topics or alter_configs)"
                )
            partitions, rf = spec.get("partitions", 1), spec.get("replication_factor")
        else:
            partitions, rf = spec, None
        if isinstance(partitions, bool) or not isinstance(partitions, int):
            raise TypeError(f"topic {name!r}: partitions must be an int, got {partitions!r}")
        if rf is not None and (isinstance(rf, bool) or not isinstance(rf, int)):
            raise TypeError(f"topic {name!r}: replication_factor must be an int, got {rf!r}")
        out.append((str(name), partitions, rf))
    return tuple(out)


def _server_of(
    brokers: int = 3, config: Mapping[str, Any] | None = None, topics: Mapping[str, Any] | None = None
) -> tuple[int, Mapping[str, Any] | None, tuple[tuple[str, int, int | None], ...]]:
    brokers, config, shaped = cluster_args(brokers, config, topics)
    return brokers, config, _topics_of(shaped)


def _journal_path(item: pytest.Item, request: pytest.FixtureRequest) -> Path:
    where = item.config.getoption("eos_journal_dir")
    if where is None:
        return Path(request.getfixturevalue("tmp_path")) / "wire.jsonl"
    folder = Path(where)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / (re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid).strip("_") + ".jsonl")


@pytest.fixture
def eos_server(request: pytest.FixtureRequest) -> Iterator[WireTestCluster]:
    """A cluster for real Kafka clients on loopback for this test: served and journaled, or Kafka 4.4.

    Markers: ``eos_seed(N)``, ``eos_server(brokers=, config=, topics=)``, ``eos_check(promise=)``,
    ``eos_served_only(reason)``. ``--eos-server=kafka`` gives a real Kafka 4.4 cluster instead
    (:mod:`eos_magics.pytest_kafka`).
    """
    item = request.node
    _promises_only(item)
    brokers, config, topics = marker_args(item, "eos_server", _server_of) or _server_of()
    if item.config.getoption("eos_server") == "kafka":
        only = item.get_closest_marker("eos_served_only")
        if only is not None:
            why = only.args[0] if only.args else only.kwargs.get("reason", "it needs the served cluster")
            pytest.skip(f"served only, not on Kafka 4.4 (--eos-server=kafka): {why}")
        from eos_magics.pytest_kafka import kafka_cluster

        with kafka_cluster(request, brokers, config, topics) as kafka:
            item.stash[_SERVER] = kafka
            yield kafka
        return
    yield from _served(request, brokers, config, topics)


def _promises_only(item: pytest.Item) -> None:
    """Fail with one line an ``eos_check`` that asks an ``eos_server`` test for more than promises."""
    check = marker_args(item, "eos_check", check_args)
    if check is not None and (check[0] != "eos" or not check[3]):
        pytest.fail(
            "@pytest.mark.eos_check on eos_server judges end-to-end promises only (promise='IN -> OUT'): "
            "real clients' sends and reads are not recorded, so history modes need eos_cluster "
            f"(got mode={check[0]!r}, promise={[str(p) for p in check[3]]!r})",
            pytrace=False,
        )


def served_settings(brokers: int, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the broker settings of a served test cluster: ``--eos-server=kafka``'s, as far as the engine models them.

    The conformance suite's settings (:data:`engine.conform.settings.BROKER_SETTINGS`: a broker
    fenced 3 s after its last heartbeat, 5 partitions per internal topic ...) shaped to ``brokers``
    as Kafka mode shapes them (:func:`eos_magics.pytest_kafka.shape_settings`), then the marker's
    ``config`` on top, so one test meets the same timeouts served and on Kafka 4.4.
    """
    from engine.conform.settings import kafka_settings, serve_config
    from eos_magics.pytest_kafka import shape_settings

    return {**serve_config(kafka_settings(shape_settings(brokers, None))), **(config or {})}


def _served(
    request: pytest.FixtureRequest,
    brokers: int,
    config: Mapping[str, Any] | None,
    topics: tuple[tuple[str, int, int | None], ...],
) -> Iterator[EosTestServer]:
    from engine.config import cluster_config
    from engine.errors import ConfigError, KafkaError
    from engine.serve import serve
    from engine.wire.journal import ServeSpec

    item = request.node
    seed, source = item_seed(item)
    spec = ServeSpec(seed, brokers, cluster_config(brokers, served_settings(brokers, config)), topics)
    journal = _journal_path(item, request)
    try:
        server = serve(spec, journal_path=journal)
    except (ConfigError, KafkaError, TypeError, ValueError) as exc:
        pytest.fail(f"@pytest.mark.eos_server: {str(exc).splitlines()[0]}", pytrace=False)
    eos = EosTestServer(server, spec, item.nodeid, source, journal)
    item.stash[_SERVER] = eos
    try:
        yield eos
    finally:
        eos.stop()
        if item.config.getoption("eos_journal_dir") is not None and not eos.failed:
            journal.unlink(missing_ok=True)  # kept for failed tests only


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """After an ``eos_server`` test body that returned, judge its ``eos_check`` promises."""
    result = yield
    eos = item.stash.get(_SERVER, None)
    if eos is not None:
        check = marker_args(item, "eos_check", check_args)
        if check is not None:
            judge_promises(eos, check)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Add the ``eos`` section (seed, fingerprint, journal, replay line; Kafka: rerun) to a failed test's report."""
    report = yield
    eos = item.stash.get(_SERVER, None)
    if eos is not None:
        if report.failed:
            eos.failed = True
            add_eos_section(report, eos.replay_section())
        if call.when == "teardown":
            del item.stash[_SERVER]
    return report
