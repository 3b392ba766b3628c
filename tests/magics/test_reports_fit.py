"""The reports fit a 1280 px page and say what they show, as a newcomer reads them in JupyterLab.

Goal: every view's HTML wraps (or scrolls) inside its output cell: no table needs more than
``PAGE_WIDTH_PX`` (a JupyterLab output at a 1280 px window with the file browser open), offsets
read as ranges and long lists end in "… (N more)", ``<pre>`` text wraps; the producer state's
``window`` column is on the page and explained; a contrast scenario says which anomaly it exists
to show and showed, in a run and in a sweep; the request-reply deadlock reads as a short
headline over a small table (who waits for whom, since when, why, until when, the fix, the outcome).

Method: the cells of notebooks 01 and 06 run through a real IPython shell
(``eos_magics._testing.testing_shell``), the other views on a seeded cluster that committed,
aborted and left open transactions; each view's HTML is parsed as XML and measured with
``eos_magics.views.base.min_width_px`` (the longest unbreakable word of each column, at the
tables' 12 px font). No browser, no mocks.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from engine import Cluster
from eos_magics._testing import TestingShell as Shell
from eos_magics._testing import run
from eos_magics.views import View
from eos_magics.views import kafka as views
from eos_magics.views.base import PAGE_WIDTH_PX, min_width_px

#: Section 4 of notebooks/01: an unclean election loses acknowledged records 3..26.
UNCLEAN_ELECTION = (
    (
        "%eos_cluster create --name unclean --seed 3 --config min.insync.replicas=1 "
        "unclean.leader.election.enable=true replica.lag.time.max.ms=1000"
    ),
    'unclean.create_topic("t", partitions=1, assignments=[(1, 2)])',
    (
        "%eos_producer p --config linger.ms=0 request.timeout.ms=1000 delivery.timeout.ms=30000 "
        "max.in.flight.requests.per.connection=1"
    ),
    "%eos_produce p t r0 r1 r2",
    "%eos_time run 100",
    "%eos_fault cut 1 --from 2",
    "%eos_time run 3000",
    "%eos_produce p t " + " ".join(f"r{i}" for i in range(3, 27)),
    "%eos_fault heal",
    "%eos_fault crash 1",
    "%eos_produce p t r27",
    "%eos_producer p2",
    "%eos_produce p2 t after",
    "%eos_consumer reader --assign t:0",
    "%eos_consume reader",
)
CONTRAST = "outbox contrast: dual write, commit then publish"
DEADLOCK = "request-reply: deadlock inside a transaction"


def cells(ip: Shell, lines: tuple[str, ...]) -> None:
    for line in lines:
        run(ip, line)


def page(view: Any) -> ET.Element:
    return ET.fromstring(view._repr_html_())


def cell_texts(view: Any) -> list[list[str]]:
    """The text of every body row of the view's first table, as the browser shows it."""
    table = next(page(view).iter("table"))
    rows = [["".join(td.itertext()) for td in tr.iter("td")] for tr in table.iter("tr") if tr.find("td") is not None]
    return [[text.replace("\u2060", "") for text in row] for row in rows]  # word joiners hold a range together


def assert_fits(view: Any) -> None:
    width = min_width_px(view._repr_html_())
    assert width <= PAGE_WIDTH_PX, f"{view.title!r} needs {width} px, more than a {PAGE_WIDTH_PX} px output"


# -- 1. %eos_check in notebook 01 ----------------------------------------------------------------------------


def test_the_unclean_election_check_fits_the_page_with_offsets_as_ranges_and_long_lists_cut(ip: Shell) -> None:
    cells(ip, UNCLEAN_ELECTION)
    report = run(ip, "%eos_check")
    assert {row["kind"] for row in report} == {"inconsistent-offsets", "lost-write", "unseen"}
    assert_fits(report)
    unseen = next(r for r in cell_texts(report) if r[1] == "unseen")
    offsets, values, ops = unseen[5:8]
    assert offsets == "4–26"
    assert values == "r4, r5, r6, r7, r8, r9, r10, r11, … (15 more)"
    assert ops == "31–53"
    row = next(r for r in report if r["kind"] == "unseen")
    assert row["offsets"] == tuple(range(4, 27)) and len(row["values"]) == 23  # the data keep every value


def test_table_cells_and_text_wrap_inside_the_cell_never_nowrap(ip: Shell) -> None:
    cells(ip, UNCLEAN_ELECTION)
    root = page(run(ip, "%eos_check"))
    for cell in [*root.iter("td"), *root.iter("th")]:
        style = cell.get("style", "")
        assert "nowrap" not in style and "white-space:normal" in style, style
    for block in root.iter("pre"):  # between words: JupyterLab's own pre style breaks mid-word
        assert "white-space:pre-wrap;word-break:normal" in block.get("style", "")
    (scroller,) = [div for div in root.iter("div") if div.find("table") is not None]
    assert "overflow-x:auto" in scroller.get("style", "")  # what cannot wrap scrolls in its own box


# -- 2. %eos_producer_state's window -------------------------------------------------------------------------


def test_the_producer_state_window_column_is_on_the_page_and_explained(ip: Shell) -> None:
    run(ip, "%eos_cluster create --name window --seed 1")
    run(ip, "%eos_topic create t")
    run(ip, "%eos_producer p --config linger.ms=0")
    for i in range(7):
        run(ip, f"%eos_produce p t v{i}")
    state = run(ip, "%eos_producer_state t")
    assert state.column("window") == ["[2..2]@2 [3..3]@3 [4..4]@4 [5..5]@5 [6..6]@6"]
    assert_fits(state)
    root = page(state)
    headers = {"".join(th.itertext()): th for th in root.iter("th")}
    assert headers["currentTxnFirstOffset"].findall("wbr"), "a long column name may break between its words"
    assert "window: [first..last sequence]@first offset of each cached batch" in "".join(root.itertext())


# -- 5. a contrast says what it demonstrates -----------------------------------------------------------------


def test_a_contrast_sweep_shows_its_anomaly_under_shows_and_a_caught_badge(ip: Shell) -> None:
    sweep = run(ip, f"%eos_scenario sweep {CONTRAST} --seeds 2 --quiet")
    assert sweep.column("verdict") == ["CAUGHT", "CAUGHT"]
    assert sweep.column("shows") == ["effect-lost", "effect-lost"]
    assert sweep.column("forbidden") == ["-", "-"]  # the catch is not a failure
    html = sweep._repr_html_()
    badge = next(s for s in page(sweep).iter("span"))
    assert badge.text == "CAUGHT"
    assert f"contrast: {CONTRAST} shows effect-lost, as expected, on 2 of 2 seeds" in html
    assert_fits(sweep)


def test_a_plain_sweep_has_no_contrast_line_and_a_pass_badge(ip: Shell) -> None:
    sweep = run(ip, "%eos_scenario sweep idempotence: lost ack retry --seeds 1 --quiet")
    assert sweep.column("shows") == ["-"] and sweep.column("verdict") == ["PASS"]
    assert next(s for s in page(sweep).iter("span")).text == "PASS"
    assert "contrast:" not in sweep._repr_html_()


def test_a_contrast_run_says_what_it_shows(ip: Shell) -> None:
    result = run(ip, f"%eos_scenario run {CONTRAST} --seed 1")
    assert result.status == "CAUGHT"
    assert "contrast: shows effect-lost, as expected" in result._repr_html_()
    assert "contrast:" not in run(ip, "%eos_scenario run idempotence: lost ack retry --seed 1")._repr_html_()


def test_the_scenario_list_names_what_each_contrast_shows(ip: Shell) -> None:
    listed = run(ip, "%eos_scenario list")
    shows = dict(zip(listed.column("scenario"), listed.column("shows"), strict=True))
    assert shows[CONTRAST] == "effect-lost"
    assert shows[DEADLOCK] == "request-reply-deadlock"
    assert shows["idempotence: lost ack retry"] is None
    assert_fits(listed)


# -- 6. the deadlock: a headline and a small table ------------------------------------------------------------


def test_the_deadlock_verdict_is_a_short_headline_over_who_waits_since_when_and_the_fix(ip: Shell) -> None:
    from eos_magics.views.results import finding_parts

    stall = run(ip, f"%eos_scenario run {DEADLOCK} --seed 1")
    (evidence,) = stall.result.evidence
    head, parts = finding_parts(evidence)
    assert head == "request-reply-deadlock: request-reply inside a transaction."
    labels = [label for label, _ in parts]
    assert labels == ["Who waits for whom", "Since", "Why", "Until", "Fix", "Outcome"]
    said = dict(parts)
    assert said["Who waits for whom"].startswith("the requester waits for the reply inside the open transaction")
    assert said["Since"] == "t=245 ms, open for 3896 ms."  # asked 3 s after its report woke it (issue 44)
    assert "LSO is 0" in said["Why"]
    assert said["Until"].startswith("transaction.timeout.ms (5000 ms) aborts it at about t=5245 ms")
    assert all(len(text) <= 400 for text in said.values()), [len(t) for t in said.values()]
    # HTML: the headline, then a table of the labelled parts, on the page
    root = page(stall)
    rows = [["".join(td.itertext()) for td in tr.iter("td")] for tr in root.iter("tr")]
    assert [r[0] for r in rows[: len(labels)]] == labels
    assert_fits(stall)
    # the text keeps one caught line, as notebook 06 reads it
    caught = next(line for line in stall.text.splitlines() if line.startswith("caught: "))
    assert "LSO" in caught and "transaction.timeout.ms" in caught


def test_a_finding_without_labels_is_all_headline() -> None:
    from eos_magics.views.results import finding_parts

    assert finding_parts("effect-lost: committed order order-0009 has no shipment") == (
        "effect-lost: committed order order-0009 has no shipment",
        [],
    )


# -- every other view, with the same eyes --------------------------------------------------------------------


def busy_cluster() -> Cluster:
    """Three brokers after one committed, one aborted and one open transaction, and a consumer group."""
    c = Cluster(seed=7, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("orders", partitions=2, replication_factor=3)
    p = c.producer({"transactional.id": "orders-app"})
    p.init_transactions()
    for outcome in ("commit", "abort", "open"):
        p.begin_transaction()
        p.produce("orders", value=f"{outcome}-1".encode(), partition=0)
        p.produce("orders", value=f"{outcome}-2".encode(), partition=1)
        p.flush()
        if outcome == "commit":
            p.commit_transaction()
        elif outcome == "abort":
            p.abort_transaction()
    consumer = c.consumer({"group.id": "g1", "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    consumer.consume(100, timeout=3)
    consumer.commit(asynchronous=False)
    return c


def every_view(c: Cluster) -> list[View]:
    from engine.views.transactions import describe_transaction_row

    start = describe_transaction_row(c, "orders-app").start_time_ms
    assert start is not None
    return [
        views.dump_log(c, "orders", 0),
        views.txn_index(c, "orders", 0),
        views.transaction_state(c),
        views.producer_state(c, "orders", 0),
        views.partition(c, "orders", 0),
        views.topics(c, include_internal=True),
        views.brokers(c),
        views.cluster_summary(c, "cluster"),
        views.transactions(c, "list"),
        views.transactions(c, "describe", transactional_id="orders-app"),
        views.transactions(c, "describe-producers", topic="orders"),
        views.transactions(c, "find-hanging", broker=1),
        views.consumer_groups(c, "g1"),
        views.consumer_groups(c, "g1", members=True, verbose=True),
        views.consumer_groups(c, "g1", state=True),
        views.consumer_groups(c, None),
        views.scenarios(),
        views.mutants(),
    ]


def test_every_cluster_and_catalog_view_fits_the_page() -> None:
    for view in every_view(busy_cluster()):
        assert_fits(view)
        for block in page(view).iter("pre"):
            assert "white-space:pre-wrap" in block.get("style", ""), view.title


def test_describe_and_transaction_state_tables_fit_with_their_long_column_names() -> None:
    c = busy_cluster()
    for view in (views.transactions(c, "describe", transactional_id="orders-app"), views.transaction_state(c)):
        assert_fits(view)
        for th in page(view).iter("th"):
            name = "".join(th.itertext())
            if re.search(r"[a-z][A-Z]", name):  # camelCase: TransactionTimeoutMs, txnLastUpdateTimestamp
                assert th.findall("wbr"), name
