"""The pytest plugin: a fresh deterministic cluster per test, faults between calls, a verdict, a replay line.

Registered through the ``pytest11`` entry point (``eos``), so every pytest run in an environment
where eos-magics is installed has it; ``docs/testing.md`` ("The pytest plugin") is the user's guide.

::

    @pytest.mark.eos_cluster(brokers=3, topics={"orders": 1})
    @pytest.mark.eos_check(mode="eos")
    def test_orders(eos_cluster):
        from confluent_kafka import Producer  # the simulated module, bound to this test's cluster
        ...

Role
----
* The fixture ``eos_cluster`` builds an :class:`engine.Cluster` for one test with a seed taken
  from ``--eos-seed N``, else ``@pytest.mark.eos_seed(N)``, else the CRC-32 of the test's node
  id (never ``hash()``: it is salted per process), records its client history
  (:class:`engine.check.client_history.ClientHistory`) and keeps ``eos_magics.kafka.patch`` on
  for the test, so ``import confluent_kafka`` in the application reaches this cluster. It yields
  an :class:`EosTestCluster`.
* ``@pytest.mark.eos_check(mode="eos")`` judges the history once the test body returned: every
  fault healed, the cluster given ``settle_ms`` of simulated time, every partition read to its
  end (:func:`engine.scenarios.supervisor.final_read`); forbidden anomalies fail the test with the
  checker's report.
* Any failure of a test that used the fixture carries an ``eos`` section: the seed, the run's
  fingerprint and a one-line replay command.
* The served mode, the fixture ``eos_server`` (a cluster on loopback for real clients, with the
  same seed rules), is :mod:`eos_magics.pytest_served`, and its Kafka mode (``--eos-server=kafka``:
  a real Kafka 4.4 cluster) :mod:`eos_magics.pytest_kafka`, both loaded with this module
  (``pytest_plugins``).

Invariants
----------
* Loading the plugin imports pytest and the standard library only: the engine is imported by
  the first test that asks for ``eos_cluster``, so other tests pay nothing.
* The same node id (or seed), markers and test code give the same trace and fingerprint in any
  process.
* A test's cluster is dropped once its report is made: nothing outlives its test.

What it does not do
-------------------
It does not drive the application: faults act between the application's calls, as simulated
time only moves inside them. It does not patch anything when ``eos_magics.kafka`` is missing
(:attr:`EosTestCluster.patched` says so); the engine's own clients still work.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shlex
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from eos_magics.pytest_clients import AppClients
from eos_magics.pytest_faults import MessageFaults

if TYPE_CHECKING:
    from engine import Cluster
    from engine.check import History, Report
    from engine.check.client_history import ClientHistory

__all__ = ["EosTestCluster", "derived_seed", "eos_check_failure", "eos_cluster", "has_drop_in"]

#: The served mode's fixture and hooks (``eos_server``), registered with this plugin.
pytest_plugins = ["eos_magics.pytest_served", "eos_magics.pytest_kafka"]

#: Simulated time the cluster gets, after every fault is healed, before ``eos_check`` reads and judges.
SETTLE_MS = 5000

#: The markers, as ``pytest --markers`` lists them.
MARKERS = (
    "eos_seed(seed): the eos_cluster fixture's seed (--eos-seed N wins over it)",
    (
        "eos_cluster(brokers=3, config=None, topics=None): the eos_cluster fixture's brokers, broker "
        "config and topics ({'orders': 3} or {'orders': {'partitions': 3, 'config': {...}}})"
    ),
    (
        "eos_check(mode='eos', settle_ms=5000, topics=None, promise=None): after the test, heal, settle, "
        "read every partition and fail on the checker's forbidden anomalies, judging only `topics` if "
        "given, and on broken promises ('payments -> ledger [by key|by value]'; with eos_server: promises only)"
    ),
)

#: The top-level packages of this distribution (pyproject.toml): never assertion-rewritten by pytest.
REWRITE_EXEMPT = ("engine", "widgets", "eos_magics")

_CLUSTER = pytest.StashKey["EosTestCluster"]()


def derived_seed(nodeid: str) -> int:
    """Return the seed of a test without ``--eos-seed`` or ``eos_seed``: the CRC-32 of its node id.

    Parameters
    ----------
    nodeid : str
        The test's pytest node id, e.g. ``tests/test_app.py::test_orders``.

    Returns
    -------
    int
        A seed in ``[0, 2**32)``, the same in every process.
    """
    return zlib.crc32(nodeid.encode("utf-8"))


def _cluster_call(name: str) -> Callable[..., Any]:
    """A method of :class:`EosTestCluster` that is the test cluster's ``Cluster.<name>``."""

    def call(self: EosTestCluster, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.cluster, name)(*args, **kwargs)

    call.__name__ = name
    call.__doc__ = f"The test cluster's ``Cluster.{name}`` (:class:`engine.Cluster`)."
    return call


def _cluster_value(name: str) -> property:
    """A read-only attribute of :class:`EosTestCluster` that is the test cluster's ``Cluster.<name>``."""
    return property(lambda self: getattr(self.cluster, name), doc=f"The test cluster's ``Cluster.{name}``.")


class EosTestCluster(AppClients, MessageFaults):
    """One test's simulated cluster, its client history and fault helpers.

    The :class:`engine.Cluster` calls a test makes are named here and call the test's cluster
    (``producer``, ``consumer``, ``create_topic``, ``crash``, ``isolate``, ``heal``, ``add_rule``,
    ``run_for``, ``leader``, ``fingerprint``, ``world``, ...); ``cluster`` is the Cluster itself, for
    the rest. The fault helpers speak the engine's one fault vocabulary (:mod:`engine.fault_verbs`).
    ``pause``, ``resume`` and ``restart`` take the
    cluster's broker ids and node names too, and also the clients the application holds;
    ``kill`` and ``restart`` crash and restart the application's clients.

    Parameters
    ----------
    cluster : Cluster
        The test's cluster.
    recorder : ClientHistory
        The recorder attached to it.
    nodeid : str
        The test's node id (for the replay line).
    seed_source : str
        Where the seed came from, in words.
    """

    def __init__(self, cluster: Cluster, recorder: ClientHistory, nodeid: str, seed_source: str) -> None:
        self.cluster = cluster
        self.recorder = recorder
        self.nodeid = nodeid
        self.seed_source = seed_source
        #: Whether ``eos_magics.kafka.patch`` is on for the test (False only without the drop-in).
        self.patched = False
        self._readers = 0
        self._killed: list[Any] = []  # the clients kill() killed (AppClients)

    # -- the Cluster's calls a test makes, each named (:class:`engine.Cluster`; ``cluster`` has the rest)

    producer = _cluster_call("producer")
    consumer = _cluster_call("consumer")
    create_topic = _cluster_call("create_topic")
    crash = _cluster_call("crash")
    isolate = _cluster_call("isolate")
    partition = _cluster_call("partition")
    heal = _cluster_call("heal")
    add_rule = _cluster_call("add_rule")
    remove_rule = _cluster_call("remove_rule")
    run_for = _cluster_call("run_for")
    run_until = _cluster_call("run_until")
    step = _cluster_call("step")
    leader = _cluster_call("leader")
    describe_partition = _cluster_call("describe_partition")
    describe_group = _cluster_call("describe_group")
    group_view = _cluster_call("group_view")
    fingerprint = _cluster_call("fingerprint")
    transactions = _cluster_call("transactions")
    world = _cluster_value("world")
    config = _cluster_value("config")
    topics = _cluster_value("topics")
    topic_configs = _cluster_value("topic_configs")
    brokers = _cluster_value("brokers")
    seed = _cluster_value("seed")
    now_ms = _cluster_value("now_ms")

    def __repr__(self) -> str:
        c = self.cluster
        return f"EosTestCluster(seed={c.seed}, brokers={len(c.brokers)}, topics={c.topics}, now_ms={c.now_ms})"

    def pause_producer(self, producer: Any = None) -> str:
        """Pause a producer's node (a zombie until ``resume(name)``); return its node name.

        Parameters
        ----------
        producer : Producer, str or None
            The drop-in's or the engine's producer, or its node name (its ``client.id``, else
            ``producer-N``); None: the producer created last.
        """
        name = self._producer_node(producer)
        self.cluster.pause(name)
        return name

    def _producer_node(self, producer: Any) -> str:
        producers = self.cluster.producers
        if producer is None:
            if not producers:
                raise ValueError("no producer yet: create one before pausing it")
            return producers[-1].name
        if isinstance(producer, str):
            return producer  # Cluster.pause says whether the node exists
        client = self._client_of(producer)
        if client is not None and client in producers:
            return client.name
        raise TypeError(f"pause_producer() takes a producer, its node name, or None; got {producer!r}")

    # -- the verdict ------------------------------------------------------------------------------

    @property
    def history(self) -> History:
        """The client history so far (:class:`engine.check.History`)."""
        return self.recorder.history()

    def settle(self, ms: int = SETTLE_MS) -> None:
        """End every fault (:meth:`engine.Cluster.heal`) and let ``ms`` simulated milliseconds pass."""
        self.cluster.heal()
        self.cluster.run_for(ms)

    def check(
        self,
        mode: str | Iterable[str] = "eos",
        *,
        final_read: bool = True,
        topics: Iterable[str] | None = None,
        promise: Any = None,
    ) -> Report:
        """Judge the history so far; return the checker's :class:`~engine.check.Report`.

        Parameters
        ----------
        mode : str or iterable of str
            ``eos``, ``subscribe``, ``at-least-once``, or the anomaly kinds allowed.
        final_read : bool
            First read every partition to its end with a read_committed consumer
            (``eos-check-reader-N``, recorded too), as :meth:`eos_magics.Session.check` does.
        topics : list of str, optional
            Judge only these topics' sends and reads (None: every topic).
        promise : str, Promise, or a list of them
            End-to-end promises (``"payments -> ledger"``, :mod:`engine.check.promises`), judged on
            the records of the final read (keys included); without ``final_read``, on the records
            the history's ok polls read (values only).
        """
        from engine.check.checker import check_history
        from engine.check.promises import CommittedRecord

        mode, _settle, topics, promises = check_args(mode, SETTLE_MS, topics, promise)
        committed: list[CommittedRecord] | None = None
        if final_read and self.cluster.topics:
            from engine.scenarios.supervisor import check_reader_id
            from engine.scenarios.supervisor import final_read as read_all

            committed = []

            def keep(m: Any) -> None:
                if m.error() is None:
                    committed.append(CommittedRecord(m.topic(), m.partition(), m.offset(), m.key(), m.value()))

            self._readers += 1
            read_all(self.cluster, check_reader_id(self._readers), keep)
        return check_history(self.history, allowed=mode, topics=topics, promise=promises, committed=committed)

    def replay_section(self) -> str:
        """Return the failure report's ``eos`` section: seed, fingerprint and the replay command."""
        c = self.cluster
        try:
            fingerprint = f"{c.fingerprint()} (at {c.now_ms} simulated ms)"
        except Exception as exc:  # a report must never raise into pytest
            fingerprint = f"unavailable ({type(exc).__name__}: {exc})"
        return (
            f"seed: {c.seed} ({self.seed_source})\n"
            f"fingerprint: {fingerprint}\n"
            f"replay: pytest {shlex.quote(self.nodeid)} --eos-seed {c.seed}"
        )


# -- markers and options ----------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Add ``--eos-seed``; keep pytest's assertion rewriting off this project's packages."""
    _unmark_for_rewrite(pluginmanager)
    parser.getgroup("eos", "eos-magics simulated Kafka").addoption(
        "--eos-seed",
        type=int,
        default=None,
        metavar="N",
        help="seed of every eos_cluster fixture (over the eos_seed marker and the node-id seed)",
    )


def _unmark_for_rewrite(pluginmanager: pytest.PytestPluginManager) -> None:
    """Take this distribution's packages off pytest's list of modules to rewrite.

    pytest marks every top-level package of a distribution with a ``pytest11`` entry point for
    assertion rewriting, so this plugin alone would have every engine module rewritten (and, under
    ``PYTHONDONTWRITEBYTECODE``, recompiled) in every test run. Called when the plugin registers,
    before any conftest imports the engine. It touches pytest's private state: if that changes,
    nothing happens and the packages are rewritten, as before.
    """
    hook = getattr(pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set):
        marked.difference_update(REWRITE_EXEMPT)
        getattr(hook, "_marked_for_rewrite_cache", {}).clear()


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers, so ``--strict-markers`` accepts them."""
    for line in MARKERS:
        config.addinivalue_line("markers", line)


def _seed_of(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"the seed must be an int, got {seed!r}")
    return seed


def cluster_args(
    brokers: int = 3, config: Mapping[str, Any] | None = None, topics: Mapping[str, Any] | None = None
) -> tuple[int, Mapping[str, Any] | None, Mapping[str, Any]]:
    """Read the ``eos_cluster`` marker's arguments (the ``eos_server`` marker's too); TypeError names a bad one."""
    if isinstance(brokers, bool) or not isinstance(brokers, int):
        raise TypeError(f"brokers must be an int, got {brokers!r}")
    if config is not None and not isinstance(config, Mapping):
        raise TypeError(
            f"config must be a dict of broker settings such as {{'min.insync.replicas': 2}}, got {config!r}"
        )
    if topics is not None and not isinstance(topics, Mapping):
        raise TypeError(f"topics must be a dict such as {{'orders': 3}}, got {topics!r}")
    return brokers, config, topics or {}


def check_args(
    mode: str | Iterable[str] = "eos", settle_ms: int = SETTLE_MS, topics: Any = None, promise: Any = None
) -> tuple[str | Iterable[str], int, tuple[str, ...] | None, tuple[Any, ...]]:
    """Read the ``eos_check`` marker's arguments: mode, settle time, topics, promises; ValueError names a bad one."""
    from engine.check.anomaly import resolve_allowed
    from engine.check.promises import promises_of

    resolve_allowed(mode)
    if isinstance(settle_ms, bool) or not isinstance(settle_ms, int) or settle_ms < 0:
        raise ValueError(f"settle_ms must be an int >= 0, got {settle_ms!r}")
    if topics is not None:
        if isinstance(topics, str) or not all(isinstance(t, str) and t for t in topics):
            raise ValueError(f"topics must be a list of topic names such as ['ledger'], got {topics!r}")
        topics = tuple(topics)
    return mode, settle_ms, topics, promises_of(promise)


def marker_args(item: pytest.Item, name: str, parse: Any) -> Any:
    """Return ``parse(*args, **kwargs)`` of the closest ``name`` marker, None without one.

    Arguments ``parse`` refuses (``TypeError``, ``ValueError``) fail the test with one line.
    """
    marker = item.get_closest_marker(name)
    if marker is None:
        return None
    try:
        return parse(*marker.args, **marker.kwargs)
    except (TypeError, ValueError) as exc:
        why = str(exc).replace(f"{parse.__name__}()", f"{name}()")
        pytest.fail(f"@pytest.mark.{name}: {why}", pytrace=False)


def item_seed(item: pytest.Item) -> tuple[int, str]:
    """Return a test's seed and where it came from: ``--eos-seed``, ``eos_seed``, else the node id's CRC-32."""
    option = item.config.getoption("eos_seed")
    if option is not None:
        return option, "from --eos-seed"
    marked = marker_args(item, "eos_seed", _seed_of)
    if marked is not None:
        return marked, "from @pytest.mark.eos_seed"
    return derived_seed(item.nodeid), "the CRC-32 of the test's node id"


def has_drop_in() -> bool:
    """Return whether the drop-in module ``eos_magics.kafka`` is there (a package with its ``__init__``)."""
    spec = importlib.util.find_spec("eos_magics.kafka")
    return spec is not None and spec.origin is not None


def _patch(cluster: Cluster) -> contextlib.AbstractContextManager[Any] | None:
    """Return ``eos_magics.kafka.patch(cluster)``, or None while there is no drop-in module."""
    if not has_drop_in():
        return None
    from eos_magics.kafka import patch

    return patch(cluster)


# -- the fixture and the hooks ----------------------------------------------------------------------


@pytest.fixture
def eos_cluster(request: pytest.FixtureRequest) -> Iterator[EosTestCluster]:
    """A fresh deterministic simulated cluster for this test, with ``confluent_kafka`` bound to it.

    Markers: ``eos_seed(N)``, ``eos_cluster(brokers=, config=, topics=)``, ``eos_check(mode=)``.
    """
    from engine import Cluster
    from engine.check.client_history import ClientHistory
    from engine.config import cluster_config

    item = request.node
    seed, source = item_seed(item)
    brokers, config, topics = marker_args(item, "eos_cluster", cluster_args) or cluster_args()
    marker_args(item, "eos_check", check_args)
    cluster = Cluster(seed, brokers, cluster_config(brokers, config))
    eos = EosTestCluster(cluster, ClientHistory.attach(cluster), item.nodeid, source)
    item.stash[_CLUSTER] = eos
    for name, spec in topics.items():
        cluster.create_topic(name, **(spec if isinstance(spec, Mapping) else {"partitions": spec}))
    patch = _patch(cluster)
    eos.patched = patch is not None
    with contextlib.nullcontext() if patch is None else patch:
        yield eos


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """After a test body that returned, judge its history if it is marked ``eos_check``."""
    result = yield
    if item.get_closest_marker("eos_check") is not None:
        _judge(item)
    return result


def _judge(item: pytest.Item) -> None:
    eos = item.stash.get(_CLUSTER, None)
    if eos is None and "eos_server" in getattr(item, "fixturenames", ()):
        return  # eos_server's promises: eos_magics.pytest_served judges them
    if eos is None:
        pytest.fail(
            "@pytest.mark.eos_check needs the eos_cluster fixture: take it as an argument or add "
            "@pytest.mark.usefixtures('eos_cluster')",
            pytrace=False,
        )
    mode, settle_ms, topics, promises = marker_args(item, "eos_check", check_args)
    eos.settle(settle_ms)
    report = eos.check(mode, topics=topics, promise=promises)
    if not report.ok:
        pytest.fail(eos_check_failure(mode, topics, promises, report, history=True), pytrace=False)


def eos_check_failure(
    mode: Any, topics: Iterable[str] | None, promises: Iterable[Any], report: Report, *, history: bool = False
) -> str:
    """Return the message of a test ``eos_check`` fails: the marker's arguments, what broke, the report.

    ``history``: the client history was judged too (``eos_cluster``), not the promises alone (``eos_server``).
    """
    promises = list(promises)
    args = [f"mode={mode!r}"]
    if topics is not None:
        args.append(f"topics={list(topics)!r}")
    if promises:
        args.append(f"promise={[str(p) for p in promises]!r}")
    if history:
        what = "the client history has forbidden anomalies" + (" or broken promises" if promises else "")
    else:
        what = "broken promises"
    return f"eos_check({', '.join(args)}): {what}\n{report}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Add the ``eos`` section (seed, fingerprint, replay line) to a failed test's report."""
    report = yield
    eos = item.stash.get(_CLUSTER, None)
    if eos is not None:
        if report.failed:
            add_eos_section(report, eos.replay_section())
        if call.when == "teardown":
            del item.stash[_CLUSTER]
    return report


def add_eos_section(report: pytest.TestReport, text: str) -> None:
    """Add the ``eos`` section (seed, fingerprint, replay line ...) to a failed test's report."""
    if hasattr(report.longrepr, "addsection"):
        report.longrepr.addsection("eos", text)
    else:
        report.sections.append(("eos", text))
