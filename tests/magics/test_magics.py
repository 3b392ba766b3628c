"""The ``%eos`` magics through a real IPython shell: the extension, its options, clusters, topics, clients.

Goal: ``%load_ext eos_magics`` registers every magic (and imports no engine yet), a second load
is harmless, ``%unload_ext`` removes the magics and the variables they bound and a new load
works; ``%config EosMagics`` sets the defaults of new clusters, topics and consumers and refuses
bad values; clusters are built, named, switched, listed, reset (same seed, fresh run) and
deleted, and the same seed with the same cells gives the same fingerprint; topics are created
and described as ``kafka-topics.sh`` prints them; producers and consumers are the engine's own
objects, so Python calls and magics mix; the ``Session`` does the same without a shell.
Transactions, faults and time are in ``test_magic_txn_faults.py``, the inspect views, the check
and the catalog in ``test_magic_inspect.py``, bad input in ``test_magic_errors.py``.

Method: one fresh ``testing_shell()`` per test (a real ``InteractiveShell`` whose ``run_cell``
re-raises a cell's error), cells run with ``run_cell`` as a user types them; results are
compared with the engine's own calls on the objects the magics bound in ``user_ns``. No mocks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import Cluster, Consumer, Producer
from eos_magics._testing import TestingShell as Shell
from eos_magics._testing import basic, dispose, drain, run
from eos_magics._testing import testing_shell as new_shell
from eos_magics.errors import EosUsageError
from eos_magics.views import TableView, View

ROOT = Path(__file__).resolve().parents[2]

LINE_MAGICS = {
    "eos_cluster",
    "eos_topic",
    "eos_producer",
    "eos_consumer",
    "eos_produce",
    "eos_consume",
    "eos_txn",
    "eos_fault",
    "eos_time",
    "eos_dump_log",
    "eos_producer_state",
    "eos_transactions",
    "eos_consumer_groups",
    "eos_check",
    "eos_scenario",
    "eos_dashboard",
    "eos_spark",
    "eos_db",
    "eos_serve",
}
CELL_MAGICS = {"eos_txn"}


def eos_line_magics(ip: Shell) -> set[str]:
    return {m for m in ip.magics_manager.magics["line"] if m.startswith("eos_")}


def eos_cell_magics(ip: Shell) -> set[str]:
    return {m for m in ip.magics_manager.magics["cell"] if m.startswith("eos_")}


def owners(ip: Shell) -> list[Any]:
    return [c for c in ip.configurables if type(c).__name__ == "EosMagics"]


def owner(ip: Shell) -> Any:
    """The shell's one ``EosMagics`` (``ip.configurables`` lists it once)."""
    (found,) = set(owners(ip))
    return found


def story(ip: Shell, seed: int) -> str:
    """A session touching every family; return the cluster's fingerprint."""
    basic(ip, seed)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_producer t1 -t app")
    run(ip, "%eos_consumer c1 --assign orders:0 --group g")
    run(ip, "%eos_produce p1 orders a b --partition 0 --key k")
    run(ip, "%eos_consume c1")
    run(ip, "%%eos_txn t1 --offsets-from c1\n%eos_produce t1 out A B\n")
    run(ip, "%%eos_txn t1 --abort\n%eos_produce t1 out X\n")
    run(ip, "%eos_fault drop --type ProduceResponse")
    run(ip, "%eos_produce p1 orders c --partition 0")
    run(ip, "%eos_fault crash 2")
    run(ip, "%eos_time run 3000")
    run(ip, "%eos_fault restart 2")
    run(ip, "%eos_time run 2000")
    return ip.user_ns["cluster"].fingerprint()


# -- %load_ext / %unload_ext ---------------------------------------------------------------------------


def test_load_ext_registers_every_magic_and_imports_no_engine_yet() -> None:
    code = (
        "import sys\n"
        "from eos_magics._testing import dispose, testing_shell\n"
        "ip = testing_shell()\n"
        "print(sorted(m for m in ip.magics_manager.magics['line'] if m.startswith('eos_')))\n"
        "print(sorted(m for m in ip.magics_manager.magics['cell'] if m.startswith('eos_')))\n"
        "print([m for m in ('engine', 'pandas', 'pyspark', 'ipywidgets') if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout.splitlines()
    assert out == [str(sorted(LINE_MAGICS)), str(sorted(CELL_MAGICS)), "[]"]


def test_second_load_is_harmless(ip: Shell) -> None:
    run(ip, "%eos_cluster create --seed 3")
    (first,) = set(owners(ip))
    run(ip, "%load_ext eos_magics")
    assert set(owners(ip)) == {first}
    assert eos_line_magics(ip) == LINE_MAGICS
    assert eos_cell_magics(ip) == CELL_MAGICS
    assert run(ip, "%eos_cluster list").column("name") == ["cluster"]  # the session survived


def test_unload_removes_magics_and_variables_then_load_works_again(ip: Shell) -> None:
    basic(ip)
    run(ip, "%eos_cluster create --name c2")
    run(ip, "%eos_producer p1")
    run(ip, "%eos_consumer c1")
    ip.user_ns["mine"] = 7
    run(ip, "%unload_ext eos_magics")
    assert eos_line_magics(ip) == set()
    assert eos_cell_magics(ip) == set()
    assert not {"cluster", "c2", "p1", "c1"} & set(ip.user_ns)
    assert ip.user_ns["mine"] == 7  # only what the magics bound is gone
    run(ip, "%unload_ext eos_magics")  # a second unload does nothing
    run(ip, "%load_ext eos_magics")
    assert eos_line_magics(ip) == LINE_MAGICS
    assert run(ip, "%eos_cluster list").rows == ()  # a fresh session
    run(ip, "%eos_cluster create --seed 3")
    assert isinstance(ip.user_ns["cluster"], Cluster)


def test_eos_magics_is_configurable_once_and_not_after_unload(ip: Shell) -> None:
    assert len(owners(ip)) == 1
    run(ip, "%unload_ext eos_magics")
    assert owners(ip) == []
    # IPython's %config itself answers a class it no longer knows with a ValueError.
    with pytest.raises(ValueError, match="EosMagics"):
        run(ip, "%config EosMagics.brokers")


def test_unload_on_a_shell_that_never_loaded_does_nothing() -> None:
    from eos_magics import unload_ipython_extension

    shell = new_shell(load=False)
    unload_ipython_extension(shell)
    assert eos_line_magics(shell) == set()
    dispose(shell)


# -- %config EosMagics -----------------------------------------------------------------------------------


def test_config_brokers_sets_the_next_clusters_broker_count(ip: Shell) -> None:
    run(ip, "%config EosMagics.brokers = 5")
    run(ip, "%eos_cluster create")
    assert sorted(ip.user_ns["cluster"].brokers) == [1, 2, 3, 4, 5]
    assert run(ip, "%config EosMagics.brokers") == 5


def test_config_bad_value_is_refused_and_the_old_one_stays(ip: Shell) -> None:
    run(ip, "%config EosMagics.brokers = 4")
    run(ip, "%config EosMagics.brokers = 0")  # IPython logs the TraitError; nothing changes
    run(ip, "%config EosMagics.isolation_level = 'nope'")
    magics = owner(ip)
    assert magics.brokers == 4
    assert magics.isolation_level == "read_committed"
    assert magics.session.defaults.brokers == 4
    run(ip, "%eos_cluster create")
    assert len(ip.user_ns["cluster"].brokers) == 4


def test_config_partitions_seed_and_isolation_reach_new_objects(ip: Shell) -> None:
    run(ip, "%config EosMagics.partitions = 3")
    run(ip, "%config EosMagics.seed = 11")
    run(ip, "%config EosMagics.isolation_level = 'read_uncommitted'")
    run(ip, "%eos_cluster create")
    run(ip, "%eos_topic create orders")
    run(ip, "%eos_consumer c1")
    c = ip.user_ns["cluster"]
    assert c.seed == 11
    assert c.topics["orders"] == 3
    assert ip.user_ns["c1"].config.isolation_level == "read_uncommitted"


def test_config_replication_factor_and_min_insync_are_capped_at_the_broker_count(ip: Shell) -> None:
    run(ip, "%eos_cluster create --brokers 1")
    c = ip.user_ns["cluster"]
    assert c.config.min_insync_replicas == 1
    run(ip, "%eos_topic create orders")
    assert list(c.describe_partition("orders", 0).replicas) == [1]


# -- %eos_cluster ----------------------------------------------------------------------------------------


def test_create_binds_an_engine_cluster_and_returns_its_summary(ip: Shell) -> None:
    view = run(ip, "%eos_cluster create --brokers 4 --seed 9 --config min.insync.replicas=1")
    c = ip.user_ns["cluster"]
    assert isinstance(c, Cluster)
    assert (c.seed, sorted(c.brokers), c.config.min_insync_replicas) == (9, [1, 2, 3, 4], 1)
    assert isinstance(view, View)
    assert view.data is c
    assert repr(view).splitlines()[:2] == ["cluster: cluster", "seed: 9"]
    assert f"fingerprint: {c.fingerprint()}" in repr(view)
    assert "brokers: 1 up, 2 up, 3 up, 4 up" in repr(view)
    assert 'class="eos-view"' in view._repr_html_()


def test_named_clusters_use_describe_and_list(ip: Shell) -> None:
    run(ip, "%eos_cluster create --seed 1")
    run(ip, "%eos_cluster create --name c2 --seed 2 --brokers 2")
    assert isinstance(ip.user_ns["c2"], Cluster)
    assert ip.user_ns["c2"] is not ip.user_ns["cluster"]
    listing = run(ip, "%eos_cluster list")
    assert isinstance(listing, TableView)
    assert listing.column("name") == ["cluster", "c2"]
    assert listing.column("current") == [False, True]  # create makes the new one current
    assert listing.column("brokers") == [3, 2]
    run(ip, "%eos_topic create only_in_c2")
    assert "only_in_c2" in ip.user_ns["c2"].topics
    assert "only_in_c2" not in ip.user_ns["cluster"].topics
    used = run(ip, "%eos_cluster use --name cluster")
    assert repr(used).startswith("cluster: cluster\nseed: 1")
    assert run(ip, "%eos_cluster list").column("current") == [True, False]
    run(ip, "%eos_topic create only_in_cluster")
    assert "only_in_cluster" in ip.user_ns["cluster"].topics
    other = run(ip, "%eos_cluster describe --name c2")
    assert repr(other).startswith("cluster: c2\nseed: 2")
    assert run(ip, "%eos_cluster list").column("current") == [True, False]  # describe does not switch


def test_same_seed_same_cells_same_fingerprint() -> None:
    shells = [new_shell() for _ in range(3)]
    try:
        first = story(shells[0], 42)
        assert story(shells[1], 42) == first
        assert story(shells[2], 43) != first
    finally:
        for shell in shells:
            dispose(shell)


def test_reset_is_a_fresh_run_with_the_same_seed(ip: Shell) -> None:
    fresh = run(ip, "%eos_cluster create --seed 5 --brokers 4").data.fingerprint()
    old = ip.user_ns["cluster"]
    run(ip, "%eos_topic create orders")
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 orders a")
    view = run(ip, "%eos_cluster reset")
    new = ip.user_ns["cluster"]
    assert new is not old
    assert view.data is new
    assert (new.seed, len(new.brokers)) == (5, 4)
    assert new.fingerprint() == fresh
    assert "orders" not in new.topics
    assert "p1" not in ip.user_ns  # the old cluster's clients are gone with it
    assert run(ip, "%eos_cluster list").column("clients") == [""]


def test_delete_unbinds_the_cluster_and_its_clients(ip: Shell) -> None:
    run(ip, "%eos_cluster create --seed 1")
    run(ip, "%eos_cluster create --name c2")
    run(ip, "%eos_topic create t")
    run(ip, "%eos_producer p2")
    assert run(ip, "%eos_cluster delete") is None  # the current one: c2
    assert "c2" not in ip.user_ns
    assert "p2" not in ip.user_ns
    assert run(ip, "%eos_cluster list").column("name") == ["cluster"]
    assert run(ip, "%eos_cluster list").column("current") == [True]
    run(ip, "%eos_cluster delete --name cluster")
    assert "cluster" not in ip.user_ns
    with pytest.raises(EosUsageError, match="no cluster yet"):
        run(ip, "%eos_cluster describe")
    run(ip, "%eos_cluster create")  # the name is free again
    assert isinstance(ip.user_ns["cluster"], Cluster)


# -- %eos_topic -----------------------------------------------------------------------------------------


def test_topic_create_with_partitions_and_rf(ip: Shell) -> None:
    run(ip, "%eos_cluster create --seed 1")
    view = run(ip, "%eos_topic create orders --partitions 2 --rf 2")
    c = ip.user_ns["cluster"]
    assert c.topics["orders"] == 2
    assert [len(c.describe_partition("orders", p).replicas) for p in range(2)] == [2, 2]
    assert view.text.splitlines()[0] == "Topic: orders\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: "
    assert view.column("Partition") == [0, 1]
    assert view.column("Leader") == [c.leader("orders", 0), c.leader("orders", 1)]
    assert "<table" in view._repr_html_()


@pytest.mark.parametrize(
    ("setting", "field", "expected"),
    [
        ("min.insync.replicas=2", "min_insync_replicas", 2),
        ("unclean.leader.election.enable=false", "unclean_leader_election_enable", False),
    ],
)
def test_topic_create_config_values_are_typed(ip: Shell, setting: str, field: str, expected: Any) -> None:
    run(ip, "%eos_cluster create --seed 1")
    run(ip, f"%eos_topic create orders --config {setting}")
    assert getattr(ip.user_ns["cluster"].topic_configs["orders"], field) == expected
    run(ip, "%eos_producer p1")
    assert run(ip, "%eos_produce p1 orders a").column("error") == [None]


def test_topic_describe_and_list(ip: Shell) -> None:
    c = basic(ip)
    one = run(ip, "%eos_topic describe orders")
    assert one.column("Topic") == ["orders", "orders"]
    assert one.text.startswith("Topic: orders\tPartitionCount: 2\tReplicationFactor: 3")
    everything = run(ip, "%eos_topic describe")  # --describe without --topic: every topic
    assert everything.column("Topic") == ["orders", "orders", "out"]
    assert sorted(set(everything.column("Topic"))) == sorted(c.topics)
    assert list(everything.to_pandas().columns) == list(everything.columns)
    names = run(ip, "%eos_topic list")  # kafka-topics.sh --list: names, one per line
    assert names.text.splitlines() == sorted(c.topics) == ["orders", "out"]


# -- clients -------------------------------------------------------------------------------------------------


def test_producers_are_the_engines_own_objects(ip: Shell) -> None:
    basic(ip)
    p1 = run(ip, "%eos_producer p1 --config linger.ms=0")
    t1 = run(ip, "%eos_producer t1 -t app --config transaction.timeout.ms=10000")
    assert ip.user_ns["p1"] is p1
    assert ip.user_ns["t1"] is t1
    assert isinstance(p1, Producer)
    assert not p1.transactional
    assert t1.transactional
    assert p1.config.linger_ms == 0
    assert t1.config.transactional_id == "app"
    assert t1.config.transaction_timeout_ms == 10000
    # -t ran init_transactions(): the coordinator knows the id
    assert run(ip, "%eos_transactions describe app").column("TransactionState") == ["Empty"]


def test_transactional_producer_with_no_init(ip: Shell) -> None:
    basic(ip)
    run(ip, "%eos_producer t1 -t app --no-init")
    assert run(ip, "%eos_transactions list").rows == ()  # not initialised yet
    run(ip, "%eos_txn init t1")
    run(ip, "%eos_txn begin t1")
    run(ip, "%eos_produce t1 out x")
    run(ip, "%eos_txn commit t1")
    run(ip, "%eos_time run 100")  # the markers are written after commit_transaction() returns
    assert run(ip, "%eos_transactions list").column("TransactionState") == ["CompleteCommit"]


def test_produce_with_key_partition_and_header_then_consume(ip: Shell) -> None:
    basic(ip)
    run(ip, "%eos_producer p1")
    sent = run(ip, "%eos_produce p1 orders a b c --key k1 --partition 1 --header trace=7 src=nb")
    assert isinstance(sent, TableView)
    assert sent.columns == ("topic", "partition", "offset", "key", "value", "error")
    assert sent.rows == (
        ("orders", 1, 0, "k1", "a", None),
        ("orders", 1, 1, "k1", "b", None),
        ("orders", 1, 2, "k1", "c", None),
    )
    more = run(ip, "%eos_produce p1 orders d -p 1")
    assert more.column("offset") == [3]
    c1 = run(ip, "%eos_consumer c1 --assign orders:1")
    assert isinstance(c1, Consumer)
    assert ip.user_ns["c1"] is c1
    got = run(ip, "%eos_consume c1")
    assert got.column("offset") == [0, 1, 2, 3]
    assert got.column("value") == ["a", "b", "c", "d"]
    assert got.column("key") == ["k1", "k1", "k1", None]
    assert got.column("headers") == ["trace=7,src=nb"] * 3 + [None]
    assert got.column("error") == [None] * 4
    assert run(ip, "%eos_consume c1").rows == ()  # nothing new


def test_produce_by_key_goes_to_one_partition(ip: Shell) -> None:
    basic(ip)
    run(ip, "%eos_producer p1")
    sent = run(ip, "%eos_produce p1 orders a b c d --key same")
    assert len(set(sent.column("partition"))) == 1
    assert sent.column("offset") == [0, 1, 2, 3]


def test_consume_max_and_assign_several_partitions(ip: Shell) -> None:
    basic(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 orders a b c -p 0")
    run(ip, "%eos_produce p1 orders x -p 1")
    run(ip, "%eos_consumer c1 --assign orders:0,orders:1")
    assert [(tp.topic, tp.partition) for tp in ip.user_ns["c1"].assignment()] == [("orders", 0), ("orders", 1)]
    first = run(ip, "%eos_consume c1 --max 2")
    assert len(first) == 2
    assert sorted(first.column("value") + drain(ip, "c1")) == ["a", "b", "c", "x"]


def test_no_wait_queues_until_a_flush(ip: Shell) -> None:
    c = basic(ip)
    run(ip, "%eos_producer p1")
    assert run(ip, "%eos_produce p1 orders queued -p 0 --no-wait") is None
    run(ip, "p1.flush()")
    assert "payload: queued" in c.dump_log("orders", 0)


def test_python_calls_and_magics_mix(ip: Shell) -> None:
    basic(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_consumer c1 --assign orders:0")
    run(ip, "p1.produce('orders', value='from-python', partition=0)\np1.flush()")
    assert run(ip, "%eos_consume c1").column("value") == ["from-python"]
    run(ip, "%eos_produce p1 orders from-magic -p 0")
    run(ip, "msgs = c1.consume(10, timeout=1.0)")
    assert [m.value() for m in ip.user_ns["msgs"]] == ["from-magic"]
    # a client made in plain Python has no name: the Session takes the object itself
    extra = ip.user_ns["cluster"].consumer({"auto.offset.reset": "earliest"})
    extra.assign([("orders", 0)])
    assert owner(ip).session.consume(extra).column("value") == ["from-python", "from-magic"]


def test_subscribe_with_a_group(ip: Shell) -> None:
    basic(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 orders a -p 0")
    run(ip, "%eos_produce p1 orders b -p 1")
    run(ip, "%eos_consumer c1 --subscribe orders --group g1")
    run(ip, "%eos_time until len(c1.assignment()) == 2")
    assert sorted(drain(ip, "c1")) == ["a", "b"]
    members = run(ip, "%eos_consumer_groups describe --group g1 --members")
    assert members.column("CLIENT-ID") == ["c1"]
    assert members.column("#PARTITIONS") == [2]


# -- the Session, without a shell ----------------------------------------------------------------------------------


def test_session_api_without_a_shell() -> None:
    from eos_magics import Session

    s = Session()
    c = s.create_cluster(brokers=3, seed=42)
    assert isinstance(c, Cluster)
    assert s.cluster is c
    s.create_topic("orders", partitions=2)
    s.create_topic("out")
    p = s.producer("p1")
    assert isinstance(p, Producer)
    assert s.produce("p1", "orders", ["o-1", "o-2"], partition=0).column("offset") == [0, 1]
    t = s.producer("t1", transactional_id="app")
    s.consumer("c1", assign=[("orders", 0)], group_id="G")
    assert s.consume("c1").column("value") == ["o-1", "o-2"]
    with s.transaction("t1", offsets_from="c1") as same:
        assert same is t
        s.produce(t, "out", ["A"])
    with pytest.raises(KeyError), s.transaction("t1"):
        s.produce("t1", "out", ["X"])
        raise KeyError("body")
    s.run(1000)
    s.consumer("rc", assign=[("out", 0)])
    assert s.consume("rc").column("value") == ["A"]
    assert s.check().ok
    assert s.history().ops
    assert repr(s) == "Session(clusters: cluster; current: cluster)"
    # with no namespace nothing is bound anywhere; a second session is independent
    other = Session()
    other.create_cluster(seed=42)
    assert other.cluster is not c
    third = Session()
    third.create_cluster(seed=42)
    assert other.cluster.fingerprint() == third.cluster.fingerprint()
