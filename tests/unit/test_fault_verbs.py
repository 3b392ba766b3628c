"""The one fault vocabulary (engine.fault_verbs): its checks, and the four consumers that speak it."""

from __future__ import annotations

import pytest

from engine import Cluster, fault_verbs
from engine.sim.node import NodeStatus


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster(seed=3, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("orders", 1, 3)
    return c


def test_apply_carries_out_a_node_verb_and_a_named_one(cluster: Cluster) -> None:
    fault_verbs.apply(cluster, "crash", 2, power=True)
    assert cluster.world.nodes["broker-2"].status is NodeStatus.DOWN
    rule = fault_verbs.apply(cluster, "lose-next-ack", "orders")
    assert rule in cluster.world.network.active_rule_ids()
    fault_verbs.apply(cluster, "heal")
    assert cluster.world.nodes["broker-2"].status is NodeStatus.UP


def test_the_lost_ack_is_the_next_produce_response_and_the_retry_is_deduplicated(cluster: Cluster) -> None:
    fault_verbs.lose_next_ack(cluster, "orders")
    p = cluster.producer()
    p.produce("orders", value=b"v", partition=0)
    p.flush()
    assert cluster.describe_partition("orders", 0).high_watermark == 1
    assert cluster.world.network.active_rule_ids() == []


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda c: fault_verbs.apply(c, "crsh", 1), "did you mean .crash."),
        (lambda c: fault_verbs.node_fault(c, "pause", 1, power=True), "power goes with crash"),
        (lambda c: fault_verbs.message_rule(c, "drop", "NoSuchRequest"), "no message type"),
        (lambda c: fault_verbs.message_rule(c, "drop", "ProduceRequest", kind="response"), "never match"),
        (lambda c: fault_verbs.message_rule(c, "delay", "ProduceRequest"), "delay needs delay_ms"),
        (lambda c: fault_verbs.drop_response(c, "Nope"), "no request 'Nope'"),
        (lambda c: fault_verbs.drop_response(c, "EndTxn", 0), "nth must be a positive int"),
        (lambda c: fault_verbs.lose_next_ack(c, "nope"), "no topic 'nope'"),
    ],
)
def test_a_bad_verb_or_argument_is_one_line_before_anything_changes(cluster: Cluster, call, words: str) -> None:
    with pytest.raises(fault_verbs.FaultError, match=words) as err:
        call(cluster)
    assert "\n" not in str(err.value)
    assert cluster.world.network.active_rule_ids() == []
    assert all(cluster.world.nodes[f"broker-{b}"].status is NodeStatus.UP for b in cluster.brokers)


def test_the_dashboard_and_the_control_channel_speak_the_engine_verbs() -> None:
    from engine.wire import control
    from widgets.dashboard import FAULT_BUTTONS, RUN_ACTIONS

    assert set(FAULT_BUTTONS.values()) <= set(fault_verbs.VERBS)
    assert set(FAULT_BUTTONS) <= set(RUN_ACTIONS)
    assert control.NODE_FAULTS is fault_verbs.NODE_VERBS
