"""The analyses of ``eos_magics.spark.analyses`` give the numbers a plain reading of the run gives.

Goal: each analysis answers its question correctly, on a run where the answer is known from the
engine itself: the copier's transactions (committed and aborted, as many as the coordinator
decided, each with the records its markers closed), its abort ratio, the LSO lag that open
transactions cause and that closes, the duplicates a producer without idempotence leaves, the
coordinator's writes per ``__transaction_state`` partition, and read_committed's wait for the
marker against read_uncommitted's. Method: real runs exported with ``engine.export``, registered
with ``eos_magics.spark.views.register`` in one module session; the expected figures come from the
engine's objects or from pandas over the same Arrow tables, never from the analysis under test.
"""

from __future__ import annotations

import pytest

from engine.export import export_cluster, export_runs
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from engine.scenarios.mutants import get_mutant
from eos_magics.spark import analyses
from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.views import register

pytestmark = pytest.mark.slow

COPIER = "copier-random-aborts-s7"
M1 = "idempotence-lost-ack-retry-s1-M1"


@pytest.fixture(scope="module")
def export():
    runs = [
        run_spec(BY_NAME["copier: random aborts"], 7),
        run_spec(BY_NAME["idempotence: lost ack retry"], 1, mutant=get_mutant("M1")),
    ]
    return export_runs(runs)


@pytest.fixture(scope="module")
def tables(spark, export):
    return register(spark, export, prefix="an_")


@pytest.fixture(scope="module")
def t(tables):
    return {name[3:]: df for name, df in tables.items()}


def test_transactions_are_the_coordinators_decisions_with_the_records_their_markers_closed(t, export):
    txns = analyses.transactions(t).where(f"run_id = '{COPIER}'").toPandas()
    ts = export.to_pandas("txn_state")
    log = ts[(ts.run_id == COPIER) & (ts.source == "log")]
    assert (txns.outcome == "committed").sum() == (log.state == "COMPLETE_COMMIT").sum() == 24
    assert (txns.outcome == "aborted").sum() == (log.state == "COMPLETE_ABORT").sum() == 8
    assert (txns.latency_ms > 0).all()
    # Every transactional data record of a user topic belongs to exactly one transaction.
    rec = export.to_pandas("records")
    data = rec[
        (rec.run_id == COPIER)
        & rec.final_leader
        & rec.is_transactional
        & ~rec.is_control
        & ~rec.topic.str.startswith("__")
    ]
    assert txns.records.sum() == len(data)


def test_abort_ratio_counts_each_transactional_id(t):
    ratio = analyses.abort_ratio(t).where(f"run_id = '{COPIER}'").toPandas()
    assert list(ratio.transactional_id) == ["copier-0", "copier-1"]
    assert list(ratio.committed) == [12, 12] and list(ratio.aborted) == [4, 4]
    assert list(ratio.abort_ratio) == [0.25, 0.25]


def test_lso_lag_rises_while_transactions_are_open_and_closes_at_the_end(t, export):
    lag = analyses.lso_lag(t).where(f"run_id = '{COPIER}' AND topic = 'out'").toPandas()
    ps = export.to_pandas("partition_state")
    assert len(lag) == len(ps[(ps.run_id == COPIER) & (ps.topic == "out")])
    assert (lag.lso_lag == lag.hw - lag.lso).all()
    assert lag.lso_lag.max() > 0
    assert lag.groupby("partition").lso_lag.last().eq(0).all()


def test_producer_sequences_find_the_duplicates_of_a_producer_without_idempotence(t, export):
    seqs = analyses.producer_sequences(t).toPandas()
    clean = seqs[seqs.run_id == COPIER]
    assert (clean.duplicates == 0).all() and (clean.gaps == 0).all() and (clean.duplicate_values == 0).all()
    m1 = seqs[seqs.run_id == M1]
    rec = export.to_pandas("records")
    data = rec[(rec.run_id == M1) & rec.final_leader & ~rec.is_control & (rec.producer_id == -1)]
    expected = len(data) - data.groupby("partition").value.nunique().sum()
    assert expected > 0
    assert m1[m1.producer_id == -1].duplicate_values.sum() == expected
    assert m1[m1.producer_id == -1].gaps.isna().all(), "no sequences without idempotence"


def test_coordinator_load_counts_every_write_to_transaction_state(t, export):
    load = analyses.coordinator_load(t).where(f"run_id = '{COPIER}'").toPandas()
    ts = export.to_pandas("txn_state")
    assert load.writes.sum() == len(ts[(ts.run_id == COPIER) & (ts.source == "log")])
    assert load.transactional_ids.sum() == 2


def test_read_committed_waits_for_the_marker_and_skips_aborted_records(spark):
    from engine import Cluster

    c = Cluster(seed=3, brokers=3)
    c.create_topic("t", partitions=1, replication_factor=3)
    rc = c.consumer({"isolation.level": "read_committed", "client.id": "rc"})
    ru = c.consumer({"isolation.level": "read_uncommitted", "client.id": "ru"})
    for consumer in (rc, ru):
        consumer.assign([("t", 0)])
    p = c.producer({"transactional.id": "app"})
    p.init_transactions()
    for outcome in ("abort", "commit"):
        p.begin_transaction()
        for i in range(3):
            p.produce("t", value=f"{outcome}-{i}", partition=0)
        p.flush()
        for _ in range(5):  # both consumers poll while the transaction is open
            rc.consume(10, timeout=0.05)
            ru.consume(10, timeout=0.05)
        (p.abort_transaction if outcome == "abort" else p.commit_transaction)()
        for _ in range(5):
            rc.consume(10, timeout=0.05)
            ru.consume(10, timeout=0.05)
    views = register(spark, export_cluster(c, run_id="e2e"), prefix="e2e_")
    lat = analyses.end_to_end_latency({k[4:]: v for k, v in views.items()}, consumers=["rc", "ru"]).toPandas()
    by = lat.set_index("isolation")
    assert by.loc["read_uncommitted", "records"] == 6, "read_uncommitted returned the aborted records too"
    assert by.loc["read_committed", "records"] == 3, "read_committed returned only the committed ones"
    assert by.loc["read_committed", "p50_ms"] > by.loc["read_uncommitted", "p50_ms"]


def test_an_analysis_without_its_table_says_what_to_pass(t):
    with pytest.raises(SparkBridgeError, match="no 'txn_state' table"):
        analyses.transactions({"records": t["records"]})
    with pytest.raises(SparkBridgeError, match="list of client ids"):
        analyses.end_to_end_latency(t, consumers="rc")


def test_stacked_runs_lose_no_rows_on_the_way_into_spark(spark, export):
    # PySpark 4.3 drops the rows after an empty chunk of a chunked Arrow table; the M1 run has no
    # group offsets, so stacking copier, M1, copier puts an empty chunk in the middle.
    from engine.export import RunExport

    stacked = RunExport.concat([export, export_runs([run_spec(BY_NAME["copier: random aborts"], 8)])])
    chunks = [len(c) for c in stacked["group_offsets"]["run_id"].chunks]
    assert 0 in chunks[1:-1], chunks
    views = register(spark, stacked, prefix="stk_")
    counts = {name[4:]: df.count() for name, df in views.items() if name[4:] in ("group_offsets", "faults", "records")}
    assert counts == {name: stacked[name].num_rows for name in counts}
