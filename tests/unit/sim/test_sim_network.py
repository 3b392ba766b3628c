"""Unit tests of ``engine.sim.network``: per-connection FIFO and every message fault.

Method: a key-value server and a client (see ``conftest.py``) exchange ``Put``/``Ack``; a recorder
node keeps what reached it and when. Each fault test installs one rule or link fault, runs the
world, and checks *both* sides: what the server handled and what the client received, plus the
trace line that explains the difference.
"""

from __future__ import annotations

import pytest

from engine.sim import MessageRule, NetworkOptions, World


def drops(world: World, reason: str | None = None) -> list:
    return [e for e in world.trace.select(kind="drop") if reason is None or e.get("reason") == reason]


# -- latency and order -------------------------------------------------------------------------


def test_messages_on_one_connection_arrive_in_send_order_despite_random_latency(sim) -> None:
    world = World(11, network=NetworkOptions(latency_ms_min=1, latency_ms_max=9))
    rec = sim.Recorder(world, "r")
    sim.Recorder(world, "a")
    for i in range(200):
        world.network.send("a", "r", i)
        if i % 3 == 0:
            world.run_for(1)
    world.run_for(100)
    assert rec.bodies() == list(range(200))
    arrival = [t for t, _s, _b in rec.got]
    assert arrival == sorted(arrival)


def test_latency_is_drawn_from_the_configured_range() -> None:
    world = World(5, network=NetworkOptions(latency_ms_min=3, latency_ms_max=4))
    sent_at = world.now_ms
    world.network.send("x", "y", "hello")
    due = world.scheduler.next_due_ms()
    assert due is not None
    assert 3 <= due - sent_at <= 4


def test_there_is_no_order_across_connections(sim) -> None:
    world = World(2, network=NetworkOptions(latency_ms_min=1, latency_ms_max=9))
    rec = sim.Recorder(world, "r")
    sim.Recorder(world, "a")
    sim.Recorder(world, "b")
    for i in range(50):
        world.network.send("a", "r", ("a", i))
        world.network.send("b", "r", ("b", i))
        world.run_for(2)
    world.run_for(50)
    got = rec.bodies()
    assert sorted(got) == sorted([("a", i) for i in range(50)] + [("b", i) for i in range(50)])
    # Some message from b overtook one that a sent before it.
    position = {body: n for n, body in enumerate(got)}
    assert any(position[("b", i)] < position[("a", i)] for i in range(50))
    assert [b for b in got if b[0] == "a"] == [("a", i) for i in range(50)]


def test_options_reject_an_inverted_latency_range() -> None:
    with pytest.raises(ValueError, match="latency_ms_min <= latency_ms_max"):
        NetworkOptions(latency_ms_min=5, latency_ms_max=2)


# -- message rules ----------------------------------------------------------------------------


def test_request_drop_means_the_server_never_handles_it(kv) -> None:
    kv.net.add_rule(MessageRule("drop", kind="request"))
    kv.c1.put("s1", "k", 1)
    kv.world.run_for(10)
    assert kv.s1.handled == []
    assert kv.c1.received == []
    assert [e.get("reason") for e in drops(kv.world)] == ["rule 1"]


def test_lost_ack_means_the_server_changed_state_but_the_client_got_nothing(kv, sim) -> None:
    kv.net.add_rule(MessageRule("drop", kind="response", src="s1", dst="c1"))
    kv.c1.put("s1", "k", 1)
    kv.world.run_for(10)
    assert kv.s1.handled == [sim.Put("k", 1)]
    assert kv.s1.state == {"k": 1}
    assert kv.c1.received == []
    (drop,) = drops(kv.world)
    assert drop.name == "response"
    assert drop.node == "c1"
    # The rule was for one message only: the retry's answer arrives.
    kv.c1.put("s1", "k", 1)
    kv.world.run_for(10)
    assert [m.body for m in kv.c1.received] == [sim.Ack("k", 1)]


def test_skip_and_count_pick_which_matches_the_rule_acts_on(sim) -> None:
    world = World(1)
    rec = sim.Recorder(world, "r")
    world.network.add_rule(MessageRule("drop", dst="r", skip=1, count=2))
    for i in range(5):
        world.network.send("x", "r", i)
    world.run_for(10)
    assert rec.bodies() == [0, 3, 4]


def test_count_none_acts_on_every_match_and_body_type_and_where_narrow_it(sim) -> None:
    world = World(1)
    rec = sim.Recorder(world, "r")
    rid = world.network.add_rule(MessageRule("drop", body_type="int", count=None, where=lambda m: m.body % 2 == 0))
    for body in [0, 1, 2, 3, "four"]:
        world.network.send("x", "r", body)
    world.run_for(10)
    assert rec.bodies() == [1, 3, "four"]
    world.network.remove_rule(rid)
    world.network.send("x", "r", 6)
    world.run_for(10)
    assert rec.bodies()[-1] == 6


def test_unknown_rule_action_is_rejected() -> None:
    with pytest.raises(ValueError, match="use one of drop, delay, hold, duplicate"):
        MessageRule("explode")


def test_delay_reorders_a_message_past_fifo(sim) -> None:
    world = World(1)
    rec = sim.Recorder(world, "r")
    world.network.add_rule(MessageRule("delay", dst="r", delay_ms=50))
    world.network.send("x", "r", "first")
    world.network.send("x", "r", "second")
    world.run_for(100)
    assert rec.bodies() == ["second", "first"]
    assert rec.got[1][0] == 51
    assert world.trace.select(name="delay")[0].get("delay_ms") == 50


def test_hold_keeps_a_message_until_release(sim) -> None:
    world = World(1)
    rec = sim.Recorder(world, "r")
    rid = world.network.add_rule(MessageRule("hold", dst="r", count=2))
    first = world.network.send("x", "r", 1)
    world.network.send("x", "r", 2)
    world.network.send("x", "r", 3)
    world.run_for(100)
    assert rec.bodies() == [3]
    assert sorted(world.network.held) == [first.msg_id, first.msg_id + 1]
    assert world.network.release(first.msg_id) == [first.msg_id]
    world.run_for(10)
    assert rec.bodies() == [3, 1]
    assert world.network.release(rule_id=rid) == [first.msg_id + 1]
    world.run_for(10)
    assert rec.bodies() == [3, 1, 2]
    assert world.network.release() == []
    assert [e.get("id") for e in world.trace.select(name="release")] == [first.msg_id, first.msg_id + 1]


def test_release_with_no_argument_delivers_every_held_message_in_id_order(sim) -> None:
    world = World(1)
    rec = sim.Recorder(world, "r")
    world.network.add_rule(MessageRule("hold", count=None))
    for i in range(3):
        world.network.send("x", "r", i)
    world.run_for(10)
    assert rec.bodies() == []
    world.network.release()
    world.run_for(10)
    assert rec.bodies() == [0, 1, 2]


def test_duplicate_delivers_the_message_twice_and_the_server_handles_both(kv, sim) -> None:
    kv.net.add_rule(MessageRule("duplicate", kind="request"))
    kv.c1.put("s1", "k", 7)
    kv.world.run_for(10)
    assert kv.s1.handled == [sim.Put("k", 7), sim.Put("k", 7)]
    assert len(kv.c1.received) == 2
    assert len(kv.world.trace.select(name="duplicate")) == 1


# -- partitions and clogs ---------------------------------------------------------------------


def test_symmetric_partition_blocks_both_directions_until_healed(sim) -> None:
    world = World(1)
    a, b = sim.Recorder(world, "a"), sim.Recorder(world, "b")
    world.network.partition(["a"], ["b"])
    world.network.send("a", "b", "ab")
    world.network.send("b", "a", "ba")
    world.run_for(10)
    assert a.got == []
    assert b.got == []
    assert [e.get("reason") for e in drops(world)] == ["partitioned", "partitioned"]
    world.network.heal_partitions()
    world.network.send("a", "b", "ab2")
    world.run_for(10)
    assert b.bodies() == ["ab2"]


def test_one_way_partition_blocks_only_the_named_direction(sim) -> None:
    world = World(1)
    a, b = sim.Recorder(world, "a"), sim.Recorder(world, "b")
    world.network.partition(["a"], ["b"], one_way=True)
    world.network.send("a", "b", "ab")
    world.network.send("b", "a", "ba")
    world.run_for(10)
    assert b.got == []
    assert a.bodies() == ["ba"]


def test_a_message_in_flight_when_a_partition_starts_is_lost(sim) -> None:
    world = World(1, network=NetworkOptions(5, 5))
    sim.Recorder(world, "a")
    b = sim.Recorder(world, "b")
    world.network.send("a", "b", "in flight")
    world.run_for(2)
    world.network.isolate("b")
    world.run_for(10)
    assert b.got == []
    assert drops(world, "partitioned")


def test_an_isolated_node_is_cut_off_from_nodes_created_after_the_isolation_too(sim) -> None:
    world = World(1, network=NetworkOptions(1, 1))
    b = sim.Recorder(world, "b")
    world.network.isolate("b")
    late = sim.Recorder(world, "late")  # a client started after the isolation
    world.network.send("late", "b", "hello")
    world.network.send("b", "late", "back")
    world.run_for(10)
    assert b.got == [] and late.got == []
    world.network.heal_partitions()
    world.network.send("late", "b", "after heal")
    world.run_for(10)
    assert b.bodies() == ["after heal"]


def test_clog_queues_messages_and_unclog_delivers_them_in_order(sim) -> None:
    world = World(4, network=NetworkOptions(1, 9))
    a, b = sim.Recorder(world, "a"), sim.Recorder(world, "b")
    world.network.clog(["a"], ["b"])
    for i in range(20):
        world.network.send("a", "b", i)
    world.network.send("b", "a", "back")
    world.run_for(100)
    assert b.got == []
    assert a.got == []
    assert drops(world) == []
    world.network.unclog(["a"], ["b"])
    world.run_for(100)
    assert b.bodies() == list(range(20))
    assert a.bodies() == ["back"]


def test_unclog_without_sets_releases_every_clogged_link(sim) -> None:
    world = World(1)
    b = sim.Recorder(world, "b")
    world.network.clog(["a", "c"], ["b"])
    world.network.send("a", "b", 1)
    world.network.send("c", "b", 2)
    world.run_for(10)
    world.network.unclog()
    world.run_for(10)
    assert sorted(b.bodies()) == [1, 2]
    assert world.network.clogged == set()


# -- endpoints --------------------------------------------------------------------------------


def test_a_message_to_an_unknown_node_is_dropped() -> None:
    world = World(1)
    world.network.send("x", "nobody", 1)
    world.run_for(10)
    assert [e.get("reason") for e in drops(world)] == ["no such node"]
    assert world.network.dropped == 1


def test_a_message_to_a_down_node_is_dropped_without_a_delivery_line(kv) -> None:
    kv.world.crash("s1")
    kv.c1.put("s1", "k", 1)
    kv.world.run_for(10)
    assert [e.get("reason") for e in drops(kv.world)] == ["node down"]
    assert kv.world.trace.select(kind="deliver") == []
    assert (kv.world.network.sent, kv.world.network.delivered, kv.world.network.dropped) == (1, 0, 1)


def test_a_request_in_flight_across_a_crash_and_restart_is_reset(kv) -> None:
    kv.net.add_rule(MessageRule("delay", kind="request", delay_ms=20))
    kv.c1.put("s1", "k", 1)
    kv.world.run_for(5)
    kv.world.crash("s1")
    kv.world.restart("s1")
    kv.world.run_for(50)
    assert kv.s1.handled == []
    assert [e.get("reason") for e in drops(kv.world)] == ["connection reset"]


def test_a_response_to_a_client_that_restarted_is_reset(kv) -> None:
    kv.net.add_rule(MessageRule("delay", kind="response", delay_ms=20))
    kv.c1.put("s1", "k", 1)
    kv.world.run_for(5)
    kv.world.crash("c1")
    kv.world.restart("c1")
    kv.world.run_for(50)
    assert kv.s1.state == {"k": 1}
    assert kv.c1.received == []
    assert [e.get("reason") for e in drops(kv.world)] == ["connection reset"]
