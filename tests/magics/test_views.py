"""The result objects of the magics (``eos_magics.views``): Kafka's text, escaped HTML, SVG pictures, pandas.

Goal: every view's plain text is exactly what the engine (or the ``eos`` command) prints, its
HTML is self-contained, escaped and shows the protocol's landmarks (COMMIT and ABORT markers,
HW, LSO, LEO), its pictures are well-formed and byte-for-byte deterministic, its rows reach
pandas, and a bad topic, partition or broker fails with the engine's own named error.

Method: real clusters built from a seed (``engine.Cluster``, no mocks): a transactional producer
commits one transaction, aborts a second (whose value is ``<script>…``) and leaves a third open;
an idempotent producer then writes seven one-record batches, so its dedup window holds the last
five; a read_committed consumer group commits its position. Texts are compared with the
engine's calls, HTML and SVG are parsed with ``xml.etree.ElementTree``, and ``eos`` commands are
run through ``engine.cli.main`` with their output captured.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from engine import Cluster
from engine.admin import AbortTransactionError
from engine.check.anomaly import Anomaly, Report
from engine.errors import (
    NotLeaderOrFollowerException,
    TransactionalIdNotFoundException,
    UnknownTopicOrPartitionException,
)
from engine.views.log_batches import BatchSummary, replica_log, summarize
from eos_magics.views import TableView, View
from eos_magics.views import kafka as views
from widgets import svg

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = b"<script>alert(1)</script>"


def build(seed: int = 7) -> tuple[Cluster, list[tuple[Any, Any]], list[Any]]:
    """A cluster after one committed, one aborted and one open transaction, and seven idempotent batches."""
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("orders", partitions=2, replication_factor=3, config={"min.insync.replicas": 2})
    c.create_topic("solo", partitions=1, replication_factor=1)
    p = c.producer({"transactional.id": "orders-app"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("orders", key=b"k", value=b"o-1", partition=0)
    p.produce("orders", value=b"o-2", partition=0)
    p.commit_transaction()
    p.begin_transaction()
    p.produce("orders", value=SCRIPT, partition=0)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.produce("orders", value=b"open", partition=0)
    p.flush()
    idem = c.producer({"linger.ms": 0})
    reports: list[tuple[Any, Any]] = []
    for i in range(7):
        value = SCRIPT if i == 0 else f"plain-{i}".encode()
        idem.produce("orders", value=value, partition=0, on_delivery=lambda e, m: reports.append((e, m)))
        idem.flush()
    consumer = c.consumer({"group.id": "g1", "isolation.level": "read_uncommitted", "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    got = consumer.consume(100, timeout=3)
    consumer.commit(asynchronous=False)
    return c, reports, got


@pytest.fixture
def world() -> tuple[Cluster, list[tuple[Any, Any]], list[Any]]:
    return build()


def parse_html(view: View) -> ET.Element:
    """Parse a view's HTML as XML: it must be well-formed, with every string escaped."""
    return ET.fromstring(view._repr_html_())


def parse_svgs(picture: str) -> list[ET.Element]:
    root = ET.fromstring(f"<root>{picture}</root>")
    return list(root)


def svg_texts(picture: str) -> list[str]:
    return [t.text or "" for el in parse_svgs(picture) for t in el.iter("{http://www.w3.org/2000/svg}text")]


# -- cheap import ------------------------------------------------------------------------------------


def test_importing_views_loads_neither_pandas_nor_the_engine() -> None:
    code = (
        "import sys, eos_magics.views as v; "
        "assert 'pandas' not in sys.modules and 'engine' not in sys.modules, sorted(sys.modules); "
        "import eos_magics.views.kafka; "
        "assert 'pandas' not in sys.modules; "
        "assert not any(m.startswith(('ipywidgets', 'pyspark')) for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})


# -- text is the engine's text -----------------------------------------------------------------------


def test_every_kafka_tool_view_prints_exactly_the_engine_text(world) -> None:
    c, _, _ = world
    admin = c.transactions()
    pairs = [
        (views.dump_log(c, "orders", 0), c.dump_log("orders", 0)),
        (views.dump_log(c, "orders", 0, broker=2), c.dump_log("orders", 0, 2)),
        (views.txn_index(c, "orders", 0), c.dump_txn_index("orders", 0)),
        (views.transaction_state(c), c.dump_transaction_state()),
        (views.transaction_state(c, "orders-app"), c.dump_transaction_state("orders-app")),
        (views.producer_state(c, "orders", 0), str(c.producer_state("orders", 0))),
        (views.transactions(c, "list"), admin.list()),
        (views.transactions(c, "list", duration_filter=5), admin.list(5)),
        (views.transactions(c, "describe-producers", topic="orders", partition=0), admin.describe_producers("orders")),
        (views.transactions(c, "find-hanging", topic="orders"), admin.find_hanging(topic="orders")),
        (views.transactions(c, "find-hanging", broker=1), admin.find_hanging(broker_id=1)),
        (views.consumer_groups(c, "g1"), c.describe_group("g1")),
        (views.consumer_groups(c, "g1", members=True), c.describe_group("g1", members=True)),
        (
            views.consumer_groups(c, "g1", members=True, verbose=True),
            c.describe_group("g1", members=True, verbose=True),
        ),
        (views.consumer_groups(c, "g1", state=True), c.describe_group("g1", state=True)),
    ]
    for view, text in pairs:
        assert view.text == text
        assert repr(view) == text
        assert str(view) == text
    # Each DescribeTransactions crosses the network, so a second one is answered later: all but the
    # duration (column 7) is the same text.
    described = views.transactions(c, "describe", transactional_id="orders-app")
    assert repr(described) == str(described) == described.text
    shown = [line.split("\t") for line in described.text.split("\n")]
    again = [line.split("\t") for line in admin.describe("orders-app").split("\n")]
    assert shown[0][7] == "TransactionDurationMs"
    assert [r[:7] + r[8:] for r in shown] == [r[:7] + r[8:] for r in again]


def test_the_partition_view_starts_with_the_engine_line_then_a_replica_table(world) -> None:
    c, _, _ = world
    v = views.partition(c, "orders", 0)
    pv = c.describe_partition("orders", 0)
    assert v.text.split("\n")[0] == str(pv)
    assert v.column("broker") == list(pv.replicas)
    assert v.column("isLeader").count(True) == 1
    assert "LSO=5" in v.text


def test_topics_prints_kafka_topics_describe(world) -> None:
    c, _, _ = world
    v = views.topics(c, "orders")
    assert v.text.split("\n") == [
        "Topic: orders\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: min.insync.replicas=2",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: N/A\tLastKnownElr: N/A",
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1\tElr: N/A\tLastKnownElr: N/A",
    ]
    assert views.topics(c).column("Topic") == ["orders", "orders", "solo"]
    internal = views.topics(c, include_internal=True).column("Topic")
    assert "__transaction_state" in internal and "__consumer_offsets" in internal


def test_a_partition_without_leader_reads_none_and_has_no_strip(world) -> None:
    c, _, _ = world
    c.crash(c.leader("solo"))
    c.run_for(20_000)
    assert "\tLeader: none\t" in views.topics(c, "solo").text
    v = views.partition(c, "solo", 0)
    assert v.picture == ""
    assert v.text.startswith(str(c.describe_partition("solo", 0)))


# -- the log strip -----------------------------------------------------------------------------------


def test_each_batch_gets_its_transaction_outcome_from_the_next_marker_of_its_producer(world) -> None:
    c, _, _ = world
    kinds = views.dump_log(c, "orders", 0).column("kind")
    assert kinds == ["committed", "commit-marker", "aborted", "abort-marker", "open"] + ["plain"] * 7


def test_an_outcome_is_matched_by_producer_id_whatever_the_marker_epoch() -> None:
    def batch(base: int, pid: int, epoch: int, control: str | None = None) -> Any:
        from engine.log.records import RecordBatch

        if control:
            b = RecordBatch.control(control, producer_id=pid, producer_epoch=epoch, coordinator_epoch=0, create_time=0)
        else:
            b = RecordBatch(producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True, values=(1,))
        return b.assigned(base, 0)

    rows = summarize([batch(0, 7, 0), batch(1, 8, 0), batch(2, 7, 1, "ABORT"), batch(3, 8, 0)])
    assert [r.kind for r in rows] == ["aborted", "open", "abort-marker", "open"]
    assert [r.position for r in rows] == [0, rows[1].position, rows[1].position * 2, rows[1].position * 2 + 78]


def test_dump_log_html_shows_markers_and_cursors_and_escapes_values(world) -> None:
    c, _, _ = world
    v = views.dump_log(c, "orders", 0)
    page = v._repr_html_()
    parse_html(v)
    for word in ("COMMIT", "ABORT", "HW", "LSO", "LEO", "transaction open", "aborted"):
        assert word in page
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    texts = svg_texts(v.picture)
    assert "LSO 5" in texts
    assert "HW=LEO 13" in texts
    assert "✓" in texts and "✗" in texts


def test_the_strip_cuts_a_long_log_to_its_last_batches(world) -> None:
    c, _, _ = world
    v = views.dump_log(c, "orders", 0, max_batches=5)
    texts = svg_texts(v.picture)
    assert "… 7 earlier batches" in texts
    assert "◂LSO 5" in texts  # the LSO sits in a batch not drawn
    assert len(parse_svgs(v.picture)) == 1
    with pytest.raises(ValueError, match="max_batches"):
        svg.log_strip([], max_batches=0)


def test_an_empty_log_is_drawn_as_an_empty_rail(world) -> None:
    c, _, _ = world
    v = views.dump_log(c, "orders", 1)
    assert v.rows == ()
    assert "empty log" in svg_texts(v.picture)
    assert "LSO=HW=LEO 0" in svg_texts(v.picture)


def test_a_crashed_brokers_replica_is_read_from_disk_with_unknown_cursors(world) -> None:
    c, _, _ = world
    c.crash(2)
    log = replica_log(c, "orders", 0, 2)
    assert (log.status, log.high_watermark, log.last_stable_offset) == ("down", -1, -1)
    v = views.dump_log(c, "orders", 0, broker=2)
    assert len(v) == 12
    assert "HW/LSO unknown" in v._repr_html_()
    assert [t for t in svg_texts(v.picture) if "LEO" in t] == ["LEO 13"]


def test_pictures_are_well_formed_and_the_same_bytes_for_the_same_seed() -> None:
    def pictures() -> list[str]:
        c, _, _ = build(11)
        made = [
            views.dump_log(c, "orders", 0),
            views.producer_state(c, "orders", 0),
            views.partition(c, "orders", 0),
            views.brokers(c),
            views.cluster_summary(c, "demo"),
            views.consumer_groups(c, "g1"),
            views.transactions(c, "describe-producers", topic="orders"),
        ]
        return [v.picture for v in made] + [v._repr_html_() for v in made]

    first, second = pictures(), pictures()
    assert first == second
    for p in first[:7]:
        assert p
        for el in parse_svgs(p):
            assert el.tag == "{http://www.w3.org/2000/svg}svg"


# -- producer state ----------------------------------------------------------------------------------


def test_the_producer_window_shows_the_cached_batches_sequences(world) -> None:
    c, _, _ = world
    v = views.producer_state(c, "orders", 0)
    idem = next(r for r in v if r["producerEpoch"] == 0 and r["currentTxnFirstOffset"] is None)
    assert idem["cachedBatches"] == 5
    assert idem["lastSequence"] == 6
    assert idem["lastOffset"] == 12
    assert idem["window"] == "[2..2]@8 [3..3]@9 [4..4]@10 [5..5]@11 [6..6]@12"
    idem_svg, txn_svg = v.picture.split("</svg>")[0] + "</svg>", "<svg" + v.picture.split("<svg")[2]
    texts = svg_texts(idem_svg)
    assert [t for t in texts if t.startswith("seq ")] == ["seq 2", "seq 3", "seq 4", "seq 5", "seq 6"]
    assert "off 12" in texts and "seq 1" not in texts
    txn_texts = svg_texts(txn_svg)
    assert txn_texts.count("empty") == 4
    assert any("transaction open since offset 5" in t for t in txn_texts)


def test_the_window_picture_holds_every_slot_of_a_window_size() -> None:
    from engine.views.snapshots import BatchWindowEntry, ProducerEntryView

    entry = ProducerEntryView(5, 1, -1, None, 9, (BatchWindowEntry(0, 4, 10, 14, 9),))
    texts = svg_texts(svg.producer_window(entry, window_size=3))
    assert texts[0] == "producer 5 · epoch 1"
    assert texts.count("empty") == 2
    assert "seq 0..4" in texts and "off 10..14" in texts


# -- tables and pandas -------------------------------------------------------------------------------


def test_tables_reach_pandas_with_their_columns_and_rows(world) -> None:
    c, reports, got = world
    cases = [
        (views.dump_log(c, "orders", 0), 12, "baseOffset"),
        (views.txn_index(c, "orders", 0), 1, "firstOffset"),
        (views.transaction_state(c, "orders-app"), 8, "state"),
        (views.producer_state(c, "orders", 0), 2, "producerId"),
        (views.topics(c), 3, "Partition"),
        (views.brokers(c), 3, "status"),
        (views.transactions(c, "list"), 1, "TransactionState"),
        (views.transactions(c, "describe-producers", topic="orders"), 2, "CurrentTransactionStartOffset"),
        (views.consumer_groups(c, "g1"), 2, "LAG-TO-LSO"),
        (views.deliveries(reports), 7, "offset"),
        (views.messages(got), len(got), "value"),
    ]
    for v, n, column in cases:
        df = v.to_pandas()
        assert list(df.columns) == list(v.columns)
        assert len(df) == len(v) == n
        assert column in df.columns


def test_a_table_iterates_as_dicts_and_names_its_columns_on_a_bad_one(world) -> None:
    c, _, _ = world
    v = views.txn_index(c, "orders", 0)
    assert list(v) == [{"producerId": 3000, "firstOffset": 3, "lastOffset": 4, "lastStableOffset": 5}]
    assert v[0]["lastStableOffset"] == 5
    assert v.column("producerId") == [3000]
    with pytest.raises(KeyError, match="columns: producerId, firstOffset"):
        v.column("pid")
    with pytest.raises(ValueError, match="2 values for 1 columns"):
        TableView("", ("a",), [(1, 2)])
    with pytest.raises(TypeError, match="text is a str"):
        View(None)  # type: ignore[arg-type]


def test_transaction_rows_keep_the_tools_values_typed(world) -> None:
    c, _, _ = world
    producers = views.transactions(c, "describe-producers", topic="orders", partition=0)
    assert [r["CurrentTransactionStartOffset"] for r in producers] == [None, 5]
    assert [r["LatestCoordinatorEpoch"] for r in producers] == [-1, 0]
    (d,) = views.transactions(c, "describe", transactional_id="orders-app")
    assert (d["TransactionState"], d["TopicPartitions"]) == ("Ongoing", "orders-0")
    hanging = views.transactions(c, "find-hanging", topic="orders", partition=0)
    assert hanging.columns[-1] == "Reason" and len(hanging) == 0
    assert "no rows" in hanging._repr_html_()


def test_transactions_refuses_an_unknown_action_or_keyword(world) -> None:
    c, _, _ = world
    with pytest.raises(ValueError, match="use one of list, describe"):
        views.transactions(c, "descibe")
    with pytest.raises(TypeError, match="takes topic, partition, broker; not start_offset"):
        views.transactions(c, "describe-producers", topic="orders", start_offset=1)
    with pytest.raises(TypeError, match="needs transactional_id"):
        views.transactions(c, "describe")
    with pytest.raises(TypeError, match="needs start_offset"):
        views.transactions(c, "abort", topic="orders")
    with pytest.raises(TransactionalIdNotFoundException):
        views.transactions(c, "describe", transactional_id="nobody")
    assert views.transactions(c, "describe_producers", topic="orders").columns[0] == "ProducerId"


def test_abort_prints_nothing_and_the_strip_shows_the_new_marker(world) -> None:
    c, _, _ = world
    with pytest.raises(AbortTransactionError, match="starting at offset 4"):
        views.transactions(c, "abort", topic="orders", partition=0, start_offset=4)
    v = views.transactions(c, "abort", topic="orders", partition=0, start_offset=5)
    assert v.text == repr(v) == ""
    assert v.rows == (("orders", 0, 5, 3000, 2, 0),)
    assert "the tool prints nothing" in v._repr_html_()
    kinds = views.dump_log(c, "orders", 0).column("kind")
    assert kinds[4] == "aborted" and kinds[-1] == "abort-marker"
    assert "LSO=HW=LEO 14" in svg_texts(v.picture)


# -- consumer groups ---------------------------------------------------------------------------------


def test_group_rows_are_cut_from_the_tools_text(world) -> None:
    c, _, _ = world
    v = views.consumer_groups(c, "g1")
    group = c.group_view("g1")
    assert [(r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"]) for r in v] == list(group.committed)
    assert v.column("LOG-END-OFFSET") == [13, 0]
    assert v.column("LSO") == [5, 0]
    assert v.column("LAG-TO-LSO") == [-8, 0]  # read_uncommitted: past the LSO
    members = views.consumer_groups(c, "g1", members=True, verbose=True)
    assert members.column("#PARTITIONS") == [2] and members.column("CURRENT-ASSIGNMENT") == ["orders:0,1"]
    # a classic group has no epochs and no target: the table leaves those columns out, the text keeps them
    assert "TARGET-EPOCH" not in members.columns and "TARGET-EPOCH" in members.text
    (state,) = views.consumer_groups(c, "g1", state=True)
    assert state["COORDINATOR (ID)"].endswith(f"({group.coordinator})")
    assert state["STATE"] == "Stable" and state["#MEMBERS"] == 1
    assert "lag 0" in " ".join(svg_texts(v.picture))


def test_groups_are_listed_one_id_per_line_and_an_unknown_group_prints_the_tools_error(world) -> None:
    c, _, _ = world
    listed = views.consumer_groups(c, None)
    assert listed.text == "g1"
    assert listed.rows[0][:3] == ("g1", c.group_view("g1").coordinator, "Stable")
    missing = views.consumer_groups(c, "nobody")
    assert missing.text == (
        "\nError: Executing consumer group command failed due to "
        "org.apache.kafka.common.errors.GroupIdNotFoundException: Group nobody not found.\n"
    )
    assert len(missing) == 0


def test_an_empty_group_keeps_the_tools_notice_and_reads_dash_as_none(world) -> None:
    c, _, _ = world
    c.consumers[0].close()
    c.run_for(1_000)
    v = views.consumer_groups(c, "g1")
    assert v.text == c.describe_group("g1")
    assert v.text.startswith("\nConsumer group 'g1' has no active members.\n")
    assert v.rows[0] == ("g1", "orders", 0, 13, 13, 0, None, None, None, 5, -8)
    assert len(views.consumer_groups(c, "g1", members=True)) == 0
    assert views.consumer_groups(c, None).rows == (("g1", c.group_view("g1").coordinator, "Empty", 0, 2, None),)


# -- bad names fail with the engine's errors ---------------------------------------------------------

TOPIC_FACTORIES = [
    lambda c, t, p: views.dump_log(c, t, p),
    lambda c, t, p: views.txn_index(c, t, p),
    lambda c, t, p: views.producer_state(c, t, p),
    lambda c, t, p: views.partition(c, t, p),
    lambda c, t, p: views.transactions(c, "describe-producers", topic=t, partition=p),
    lambda c, t, p: views.transactions(c, "find-hanging", topic=t, partition=p),
    lambda c, t, p: views.transactions(c, "abort", topic=t, partition=p, start_offset=0),
]
FACTORY_IDS = ["dump_log", "txn_index", "producer_state", "partition", "describe-producers", "find-hanging", "abort"]


@pytest.mark.parametrize("factory", TOPIC_FACTORIES, ids=FACTORY_IDS)
@pytest.mark.parametrize(("topic", "partition"), [("nope", 0), ("orders", 7)])
def test_a_bad_topic_or_partition_raises_unknown_topic_or_partition(world, factory, topic, partition) -> None:
    c, _, _ = world
    with pytest.raises(UnknownTopicOrPartitionException):
        factory(c, topic, partition)


def test_a_bad_topic_name_or_broker_raises_the_engines_error(world) -> None:
    c, _, _ = world
    with pytest.raises(UnknownTopicOrPartitionException, match="no topic 'nope'"):
        views.topics(c, "nope")
    with pytest.raises(TypeError):
        views.dump_log(c, 5, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no broker 9"):
        views.dump_log(c, "orders", 0, broker=9)
    solo_leader = c.leader("solo")
    other = next(b for b in c.brokers if b != solo_leader)
    for factory in (views.dump_log, views.txn_index, views.producer_state):
        with pytest.raises(NotLeaderOrFollowerException):
            factory(c, "solo", 0, other)
    with pytest.raises(NotLeaderOrFollowerException):
        views.transactions(c, "describe-producers", topic="solo", broker=other)


# -- client records ----------------------------------------------------------------------------------


def test_deliveries_and_messages_keep_client_values_and_escape_them_in_html(world) -> None:
    _, reports, got = world
    d = views.deliveries(reports)
    assert d.column("offset") == list(range(6, 13))
    assert d.column("value")[0] == SCRIPT
    assert d.column("error") == [None] * 7
    assert d.text.split("\n")[1].split() == ["orders", "0", "6", "-", SCRIPT.decode(), "-"]
    page = d._repr_html_()
    parse_html(d)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    m = views.messages(got)
    assert set(m.column("topic")) == {"orders"}
    assert SCRIPT in m.column("value")
    assert "<script>" not in m._repr_html_()
    with pytest.raises(TypeError, match="pairs"):
        views.deliveries([reports[0][1]])
    with pytest.raises(TypeError, match="list of Message"):
        views.messages("abc")


# -- checks, runs, sweeps ----------------------------------------------------------------------------


def test_check_report_prints_the_reports_text_with_a_badge() -> None:
    bad = Anomaly("duplicate", ("orders", 0), (3, 5), ("v<1>",), (2, 4), message="value <script> twice")
    report = Report.classify([bad, Anomaly("G0", None, message="cycle")], frozenset({"G0"}), {"ops": 4})
    v = views.check_report(report)
    assert v.text == str(report)
    assert v.ok is False and v.report is report
    assert v.rows[0] == (True, "duplicate", "C2", "orders", 0, (3, 5), ("v<1>",), (2, 4), "value <script> twice")
    assert v.rows[1][:5] == (False, "G0", "C14", None, None)
    page = v._repr_html_()
    parse_html(v)
    assert ">FAIL<" in page and "<script>" not in page
    ok = views.check_report(Report.classify([], frozenset(), {}))
    assert ok.ok and ">OK<" in ok._repr_html_() and ok.text.startswith("OK: 0 forbidden")
    with pytest.raises(TypeError, match="Report"):
        views.check_report("OK")


def cli_output(capsys, *argv: str) -> str:
    from engine.cli import main

    main(list(argv))
    return capsys.readouterr().out.rstrip("\n")


def test_scenario_result_prints_what_eos_run_prints(capsys) -> None:
    from engine.scenarios.harness import run_spec
    from engine.scenarios.registry import get_scenario

    demo = views.scenario_result(get_scenario("demo")(7))
    assert demo.text == cli_output(capsys, "run", "demo", "--seed", "7")
    assert (demo.status, demo.ok, demo.replay) == ("PASS", True, "eos run demo --seed 7")
    assert demo.fingerprint in demo.text
    page = demo._repr_html_()
    parse_html(demo)
    assert ">PASS<" in page and "short log" in page
    assert set(demo.short_log("faults").split("\n")) <= set(demo.short_log().split("\n"))
    with pytest.raises(ValueError, match="short"):
        demo.short_log("all")

    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.mutants import get_mutant

    name = "idempotence: dedup window"
    run = views.scenario_result(run_spec(BY_NAME[name], 1, mutant=get_mutant("M10")))
    assert run.text == cli_output(capsys, "run", name, "--seed", "1", "--mutant", "M10")
    assert run.replay == "eos run 'idempotence: dedup window' --seed 1 --mutant M10"
    with pytest.raises(TypeError, match="takes a ScenarioResult"):
        views.scenario_result(object())


def test_sweep_scenarios_and_mutants_print_what_the_eos_commands_print(capsys) -> None:
    from engine.commands.sweep import run_one

    name = "idempotence: dedup window"
    rows = [run_one((name, seed, "M10", False)) for seed in (1, 2)]
    v = views.sweep(rows)
    assert v.text == cli_output(capsys, "sweep", name, "--seeds", "2", "--mutant", "M10", "--quiet")
    assert v.column("verdict") == ["PASS", "PASS"]
    assert v.to_pandas().shape == (2, len(v.columns))
    scenarios = views.scenarios()
    assert scenarios.text == cli_output(capsys, "scenarios")
    assert "demo" in scenarios.column("scenario")
    mutants = views.mutants()
    assert mutants.text == cli_output(capsys, "mutants")
    assert mutants.column("mutant")[0] == "M1"


def test_a_mutant_sweep_calls_a_failed_run_the_mutant_caught_never_a_red_fail() -> None:
    """Notebook 04's sweep of M1: seeds 1 and 3 fail with a duplicate, which is M1 caught (issue 42)."""
    from engine.commands.sweep import run_one

    name = "idempotence: lost ack retry"
    v = views.sweep([run_one((name, seed, "M1", False)) for seed in (1, 2, 3)])
    assert v.column("verdict") == ["FAIL", "PASS", "FAIL"], "eos sweep's own verdicts stay in the table"
    assert v.title == "sweep with M1: 3 runs, M1 caught on 2, missed on 1"
    html = v._repr_html_()
    assert ">CAUGHT<" in html and ">FAIL<" not in html.split("</div>")[0], "the badge is no red FAIL"
    assert "0 caught" not in html
    assert "M1 caught on seed 1, 3 (as duplicate)" in html
    assert "M1 not caught on seed 2" in html


def test_a_mutant_run_that_fails_is_badged_caught() -> None:
    """Notebook 04's run of M10 on seed 2: its FAIL verdict is the mutant caught, badged so."""
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.harness import run_spec
    from engine.scenarios.mutants import get_mutant

    name = "isolation: lso off by one"
    v = views.scenario_result(run_spec(BY_NAME[name], 2, mutant=get_mutant("M10")))
    assert v.status == "FAIL", "the run's own verdict is unchanged"
    head = v._repr_html_().split("</div>")[0]
    assert ">CAUGHT<" in head and ">FAIL<" not in head
    assert "M10 caught: the verdict FAIL is the checker catching the mutant" in v._repr_html_()


# -- cluster summaries -------------------------------------------------------------------------------


def test_cluster_summary_names_seed_time_brokers_topics_and_fingerprint(world) -> None:
    c, _, _ = world
    c.crash(3)
    c.pause(2)
    v = views.cluster_summary(c, "cluster")
    assert v.text.split("\n") == [
        "cluster: cluster",
        "seed: 7",
        f"simulated time: {c.now_ms} ms",
        "brokers: 1 up, 2 paused, 3 down",
        "topics: orders (2 partitions), solo (1 partitions)",
        f"fingerprint: {c.fingerprint()}",
    ]
    texts = svg_texts(v.picture)
    assert "paused · leads 18" in " ".join(texts) or any(t.startswith("paused") for t in texts)
    assert views.brokers(c).column("status") == ["up", "paused", "down"]
    with pytest.raises(TypeError, match="name must be a str"):
        views.cluster_summary(c, 3)  # type: ignore[arg-type]


def test_clusters_lists_a_sessions_clusters() -> None:
    from eos_magics.session import Session

    s = Session()
    s.create_cluster("first", brokers=1, seed=3)
    s.create_cluster("second", brokers=2, seed=4)
    v = views.clusters(s)
    assert v.column("name") == ["first", "second"]
    assert v.column("current") == [name == s.current for name in ("first", "second")]
    assert v.column("seed") == [3, 4]
    assert v.text.split("\n")[0].split() == list(v.columns)


def test_batch_summaries_are_frozen() -> None:
    b = BatchSummary(0, 0, 1, -1, -1, -1, -1, 0, False, False, None, -1, 0, 70, 0, "plain")
    with pytest.raises(AttributeError):
        b.kind = "open"  # type: ignore[misc]
    assert not b.is_marker
