"""``kafka-consumer-groups.sh --describe`` as Kafka 4.4 prints it, against our rendering.

The fixtures (tests/unit/views/fixtures/kafka_4_4_consumer_groups_*.txt) are the real tool's
output (``ConsumerGroupCommand`` of kafka-tools 4.4.0) for groups of confluent-kafka consumers on a
real Kafka 4.4 cluster, captured by scripts/capture-consumer-groups.py: a classic group of two, a
KIP-848 group of two (``group.protocol=consumer``), a static member (``group.instance.id``) and an
empty group. Each test builds a :class:`GroupView` holding the same data and checks our text is the
same byte for byte: headers, column widths, trailing spaces, notices. Only what is ours differs:
the coordinator's address (``broker-N:9092`` here) and, in ``--offsets``, the LSO and LAG-TO-LSO
columns after CLIENT-ID.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.views.consumer_groups import GroupView, MemberView, describe_members, describe_offsets, render

FIXTURES = Path(__file__).parent / "fixtures"
HOST = "/127.0.0.1"
ALPHA = "alpha-4546c5ec-7255-4c8b-9aee-d343f855c900"
BETA = "beta-both-82965e5d-79c5-4dd9-9478-3d85849839c2"
GAMMA = "2sKnuzERQh+RLWEoCSRiAw"
DELTA = "+6wLyYxDReqbVClQ9xmszg"
STATIC = "static-1-2a26af00-137e-4118-9a95-f4460e7fc5a7"
ENDS = {("orders", p): (10, 10) for p in range(4)} | {("payments", p): (5, 5) for p in range(2)}
ALL = tuple(sorted((t, p, hw) for (t, p), (hw, _) in ENDS.items()))


def _o(*ps: int, topic: str = "orders") -> tuple[tuple[str, int], ...]:
    return tuple((topic, p) for p in ps)


def _group(name: str, *, members_order: str = "members") -> GroupView:
    if name == "classic":
        alpha = MemberView(ALPHA, "alpha", HOST, ("orders",), _o(0, 1))
        beta = MemberView(BETA, "beta-both", HOST, ("orders", "payments"), _o(2, 3) + _o(0, 1, topic="payments"))
        members = (beta, alpha) if members_order == "offsets" else (alpha, beta)
        return GroupView("classic-group", 2, "Stable", 1, "range", ALPHA, members, ALL, ())
    if name == "kip848":
        delta_tps = _o(3) + _o(0, 1, topic="payments")
        delta = MemberView(DELTA, "delta-both", HOST, ("orders", "payments"), delta_tps, None, 3, delta_tps)
        gamma = MemberView(GAMMA, "gamma", HOST, ("orders",), _o(0, 1, 2), None, 3, _o(0, 1, 2))
        return GroupView("kip848-group", 2, "Stable", 3, "uniform", None, (delta, gamma), ALL, (), "consumer", 3, 3)
    if name == "static":
        m = MemberView(STATIC, "epsilon", HOST, ("orders",), _o(0, 1, 2, 3), "static-1")
        committed = tuple(c for c in ALL if c[0] == "orders")
        return GroupView("static-group", 2, "Stable", 1, "range", STATIC, (m,), committed, ())
    committed = tuple(c for c in ALL if c[0] == "orders")
    return GroupView("empty-group", 1, "Empty", 2, None, None, (), committed, ())


def _fixture(name: str) -> str:
    text = (FIXTURES / f"kafka_4_4_consumer_groups_{name}.txt").read_text()
    # the coordinator's address is the real cluster's; ours is broker-N:9092 (both fit in 25)
    return re.sub(r"127\.0\.0\.1:\d+  \((\d)\)", lambda m: f"broker-{m[1]}:9092  ({m[1]})".ljust(len(m[0])), text)


GROUPS = ("classic", "kip848", "static", "empty")


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize(
    ("flags", "members", "state", "verbose"),
    [
        ("members", True, False, False),
        ("members_verbose", True, False, True),
        ("state", False, True, False),
        ("state_verbose", False, True, True),
    ],
)
def test_members_and_state_match_kafka_4_4_byte_for_byte(group, flags, members, state, verbose):
    ours = render(_group(group), None, f"{group}-group", members=members, state=state, verbose=verbose)
    assert ours == _fixture(f"{group}_{flags}")


@pytest.mark.parametrize("group", GROUPS)
def test_offsets_match_kafka_4_4_up_to_client_id(group):
    """Each line of ours is Kafka's line, then (padded CLIENT-ID) our LSO and LAG-TO-LSO columns."""
    view = _group(group, members_order="offsets")
    ours = render(view, None, view.group_id).replace(describe_offsets(None, view), "")
    ours += describe_offsets(None, view, ends=ENDS)
    kafka = _fixture(f"{group}_offsets").split("\n")
    lines = ours.split("\n")
    assert len(lines) == len(kafka)
    for mine, theirs in zip(lines, kafka, strict=True):
        assert mine.startswith(theirs), (mine, theirs)
        extra = mine[len(theirs) :]
        if theirs.startswith((f"{group}-group ", "GROUP ")):
            # CLIENT-ID padded to 15, then LSO (15) and LAG-TO-LSO
            assert re.fullmatch(r" * (LSO +LAG-TO-LSO|\d+ +\d+)", extra), extra
        else:
            assert extra == ""


def test_an_unknown_group_prints_kafka_4_4s_error():
    assert render(None, None, "no-such-group") == _fixture("missing")


def test_members_verbose_without_epochs_prints_dashes():
    """A classic member has no epoch and no target: ``-`` in both columns, as Kafka 4.4 prints."""
    line = describe_members(_group("classic"), verbose=True).split("\n")[2]
    assert line.split() == ["classic-group", ALPHA, HOST, "alpha", "2", "-", "orders:0,1", "-", "-"]


# -- a KIP-848 group of the engine, described ------------------------------------------------------


def _hb(c, client, dst, **kw):
    from engine.protocol import ConsumerGroupHeartbeatRequest

    box = client.call(f"broker-{dst}", ConsumerGroupHeartbeatRequest("cg", **kw))
    c.run_until(lambda: bool(box))
    return box[0]


def test_an_engine_kip848_group_is_described_with_its_epochs_and_target_assignment():
    from engine import Cluster
    from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for
    from tests.scenarios.conftest import RawClient

    c = Cluster(seed=5, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=4, replication_factor=3)
    c.consumer({"group.id": "cg"}).committed([("t", 0)], timeout=10)  # __consumer_offsets exists
    dst = c.leader(CONSUMER_OFFSETS_TOPIC, partition_for("cg", 50))
    client = RawClient(c.world)
    join = {"rebalance_timeout_ms": 30_000, "subscribed_topic_names": ("t",), "topic_partitions": ()}
    a = _hb(c, client, dst, member_id="m-a", member_epoch=0, client_id="a", client_host="/a", **join)
    assert a.error.name == "NONE", a
    view = c.group_view("cg")
    assert (view.group_protocol, view.group_epoch, view.assignment_epoch) == ("consumer", 1, 1)
    (m,) = view.members
    assert (m.member_id, m.member_epoch, m.target_assignment) == ("m-a", 1, tuple(("t", p) for p in range(4)))
    b = _hb(c, client, dst, member_id="m-b", member_epoch=0, client_id="b", client_host="/b", **join)
    assert b.error.name == "NONE", b
    # b joined: the group epoch moved to 2; a still owns all four until it revokes two (Reconciling)
    text = c.describe_group("cg", members=True, verbose=True)
    assert text.startswith("\nWarning: Consumer group 'cg' is rebalancing.\n")
    rows = {line.split()[1]: line.split() for line in text.split("\n")[3:] if line.startswith("cg ")}
    assert rows["m-a"][5:8] == ["1", "t:0,1,2,3", "2"] and rows["m-a"][8] in ("t:0,1", "t:2,3")
    assert rows["m-b"][5] == "2" and rows["m-b"][7] == "2"
    state = c.describe_group("cg", state=True, verbose=True).split("\n")
    assert state[-3].split()[:1] == ["GROUP"] and "GROUP-EPOCH" in state[-3]
    assert state[-2].split()[3:] == ["uniform", "Reconciling", "2", "2", "2"]
