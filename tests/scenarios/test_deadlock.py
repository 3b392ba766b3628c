"""The request-reply deadlock inside a Kafka transaction: the scenario, its contrast and the diagnosis.

Goal: a requester that waits for a reply inside the transaction holding its request deadlocks
against a read_committed responder until ``transaction.timeout.ms``, and the tool says so in plain
words; committing the request first works. Method: the scenarios run through ``run_spec`` on seeds
1-3 (the deadlock is a positive control that passes only when it is detected and explained), a
weakened run shows that the control fails when there is no deadlock, and ``explain_stall`` is
driven directly through the Cluster API, including its one-line argument errors.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from engine import Cluster
from engine.check.deadlock import explain_stall, timeout_abort
from engine.errors import TransactionalIdNotFoundException, UnknownTopicOrPartitionException
from engine.scenarios.deadlock import COMMIT_FIRST, DEADLOCK, DEADLOCK_SPECS, RequestReply
from engine.scenarios.harness import Mutant, run_spec
from engine.views.transactions import describe_transaction_row

SEEDS = (1, 2, 3)


def _polled_values(result: Any) -> set[str]:
    return {m.value for op in result.history if op.f in ("poll", "txn") and op.type == "ok" for m in op.mops}


@pytest.mark.parametrize("seed", SEEDS)
def test_deadlock_is_detected_and_explained_with_topic_offset_lso_id_and_timeout(seed: int) -> None:
    result = run_spec(DEADLOCK, seed)
    assert result.ok, result.verdict()
    assert result.status == "CAUGHT"
    assert result.expected == ("request-reply-deadlock",)
    assert not result.missing
    why = result.state.deadlock
    assert why.startswith("deadlock: request-reply inside a transaction.")
    for part in ("requests-0 offset 0", "LSO is 0", "'orders-svc'", "transaction.timeout.ms (5000 ms)", "Fix:"):
        assert part in why, part
    assert "\n" not in why


@pytest.mark.parametrize("seed", SEEDS)
def test_deadlocked_request_is_aborted_by_the_timeout_and_never_reaches_the_responder(seed: int) -> None:
    result = run_spec(DEADLOCK, seed)
    assert result.state.responder_seen == []
    assert result.state.reply is None
    abort = result.state.timeout_abort
    assert abort is not None
    assert abort.prepare_abort_ms - abort.txn_start_ms > abort.transaction_timeout_ms == 5_000
    assert result.state.requester_error.startswith("ProducerFencedException: ")
    outcome = result.state.deadlock_outcome
    assert "aborted the transaction on its timeout" in outcome
    assert "the responder never saw it" in outcome
    # The black-box history: the request's transaction failed, and no read_committed poll saw it.
    (txn,) = [op for op in result.history if op.f == "txn" and op.type != "invoke"]
    assert (txn.type, txn.error) == ("fail", "ProducerFencedException")
    assert txn.mops[0].value not in _polled_values(result)
    assert result.report.ok


@pytest.mark.parametrize("seed", SEEDS)
def test_committing_the_request_first_gets_the_reply_and_no_finding(seed: int) -> None:
    result = run_spec(COMMIT_FIRST, seed)
    assert result.ok, result.verdict()
    assert result.findings == []
    reply, round_trip_ms = result.state.reply
    assert reply == "reply-to-p0-t0-request"
    assert round_trip_ms < 1_000
    assert result.state.responder_seen == [(0, "p0-t0-request")]
    assert result.state.deadlock is None


def test_deadlock_control_fails_when_the_responder_reads_uncommitted() -> None:
    mutant = Mutant(
        "X-ru", "read_uncommitted", "read_committed", consumer_config=(("isolation.level", "read_uncommitted"),)
    )
    result = run_spec(DEADLOCK, 1, mutant=mutant)
    assert not result.ok
    assert result.missing == ["request-reply-deadlock"]
    assert result.state.reply is not None
    assert result.state.deadlock is None


@pytest.mark.parametrize(("seed", "delivered_after_ms"), [(94072, 2_700), (94095, 4_200)])
def test_deadlock_is_caught_when_swarm_delays_the_request_past_a_full_reply_timeout(
    seed: int, delivered_after_ms: int
) -> None:
    """Swarm faults delay the request's delivery by seconds: the requester asks why before the timeout abort.

    With a full reply timeout after the delivery, the question came after the coordinator had
    aborted the transaction (state PrepareAbort/CompleteAbort): nothing open to explain, and the
    control was judged FAIL (missing request-reply-deadlock).
    """
    result = run_spec(DEADLOCK, seed, swarm=True)
    assert result.status == "CAUGHT", result.verdict()
    state = result.state
    assert state.request_delivered_ms - state.timeout_abort.txn_start_ms > delivered_after_ms
    assert "state Ongoing" in state.deadlock
    assert "aborted the transaction on its timeout" in state.deadlock_outcome


@pytest.mark.parametrize("seed", [20, 36, 155])
def test_deadlock_is_caught_on_the_swarm_seeds_the_issue_31_sweep_left_failing(seed: int) -> None:
    """The same cause (a request delivered late, the question asked after the timeout abort) failed these."""
    result = run_spec(DEADLOCK, seed, swarm=True)
    assert result.status == "CAUGHT", result.verdict()


def test_deadlock_control_asked_after_the_timeout_abort_is_skipped_with_the_reason() -> None:
    """Asking why only after the coordinator aborted: no open transaction to show, a SKIP that says so."""
    late = dataclasses.replace(DEADLOCK, workload=RequestReply(reply_timeout_ms=9_000, diagnose_margin_ms=-5_000))
    result = run_spec(late, 1)
    assert result.status == "SKIP", result.verdict()
    assert result.state.deadlock is None
    at, txn_state = result.state.no_open_transaction
    assert txn_state in ("PrepareAbort", "CompleteAbort")
    assert f"already {txn_state} when it asked why at {at} ms" in result.skipped


def test_deadlock_specs_are_the_control_then_the_contrast_on_one_partition_topics() -> None:
    assert DEADLOCK_SPECS == (DEADLOCK, COMMIT_FIRST)
    assert COMMIT_FIRST.must_report == ()
    for spec in DEADLOCK_SPECS:
        assert {(t.name, t.partitions) for t in spec.topics} == {("requests", 1), ("replies", 1)}
        assert ("broker.session.timeout.ms", 2_000) in spec.broker_config


# -- explain_stall through the Cluster API ------------------------------------------------------


def _cluster() -> Cluster:
    config = {"min.insync.replicas": 2, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}
    c = Cluster(seed=5, brokers=3, config=config)
    c.create_topic("requests", partitions=1, replication_factor=3)
    return c


def _open_request(c: Cluster, txn_id: str = "orders-svc") -> Any:
    p = c.producer({"transactional.id": txn_id, "linger.ms": 0, "transaction.timeout.ms": 2_000})
    p.init_transactions()
    p.begin_transaction()
    p.produce("requests", value="req-1", partition=0)
    p.flush()
    return p


def _explain(c: Cluster, isolation: str = "read_committed", **overrides: Any) -> str | None:
    kwargs: dict[str, Any] = {
        "transactional_id": "orders-svc",
        "request_topic": "requests",
        "partition": 0,
        "request_offset": 0,
        "responder_isolation": isolation,
    }
    kwargs.update(overrides)
    return explain_stall(c, **kwargs)


def test_explain_stall_names_the_open_transaction_holding_the_lso_below_the_request() -> None:
    c = _cluster()
    p = _open_request(c)
    why = _explain(c)
    assert why is not None
    assert f"producer id {p.producer_id}, epoch {p.producer_epoch}, state Ongoing since t=" in why
    assert "The request at requests-0 offset 0 belongs to the open transaction of 'orders-svc'" in why
    assert "the partition's LSO is 0" in why
    assert "transaction.timeout.ms (2000 ms)" in why
    assert _explain(c, "read_uncommitted") is None


def test_explain_stall_returns_none_once_the_request_is_committed() -> None:
    c = _cluster()
    p = _open_request(c)
    p.commit_transaction()
    c.run_for(200)
    assert c.describe_partition("requests", 0).last_stable_offset > 0
    assert _explain(c) is None


def test_explain_stall_returns_none_after_the_timeout_abort_which_timeout_abort_describes() -> None:
    c = _cluster()
    _open_request(c)
    start = describe_transaction_row(c, "orders-svc").start_time_ms
    assert timeout_abort(c, "orders-svc", txn_start_ms=start) is None  # still open
    c.run_for(3_000)
    assert _explain(c) is None
    abort = timeout_abort(c, "orders-svc", txn_start_ms=start)
    assert abort is not None
    assert abort.transaction_timeout_ms == 2_000
    assert "PrepareAbort in __transaction_state" in abort.describe()


def test_explain_stall_returns_none_when_the_request_belongs_to_another_transaction() -> None:
    c = _cluster()
    _open_request(c, "other-svc")
    bystander = c.producer({"transactional.id": "orders-svc", "linger.ms": 0})
    bystander.init_transactions()
    assert _explain(c) is None


@pytest.mark.parametrize(
    ("overrides", "error", "text"),
    [
        ({"transactional_id": 7}, TypeError, "transactional_id must be a str"),
        ({"request_topic": ""}, ValueError, "request_topic must not be empty"),
        ({"partition": -1}, ValueError, "partition must be >= 0"),
        ({"request_offset": True}, TypeError, "request_offset must be an int"),
        ({"responder_isolation": "committed"}, ValueError, "must be 'read_committed' or 'read_uncommitted'"),
        ({"request_topic": "reqs"}, UnknownTopicOrPartitionException, "no topic 'reqs'"),
        ({"partition": 3}, UnknownTopicOrPartitionException, "no partition requests-3"),
        ({"request_offset": 9}, ValueError, "requests-0 has no offset 9: its log end offset is 1"),
        ({"transactional_id": "nobody"}, TransactionalIdNotFoundException, "'nobody' was not found"),
    ],
)
def test_explain_stall_refuses_bad_arguments_with_one_line(overrides: dict[str, Any], error: type, text: str) -> None:
    c = _cluster()
    _open_request(c)
    with pytest.raises(error) as exc:
        _explain(c, **overrides)
    assert text in str(exc.value)
    assert "\n" not in str(exc.value)


def test_explain_stall_refuses_what_is_not_a_cluster() -> None:
    with pytest.raises(TypeError, match="cluster must be an engine Cluster, got dict"):
        explain_stall(
            {},
            transactional_id="a",
            request_topic="requests",
            partition=0,
            request_offset=0,
            responder_isolation="read_committed",
        )
