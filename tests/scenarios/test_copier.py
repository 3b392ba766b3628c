"""The consume-transform-produce copier of Kafka's TransactionsTest, and its two contrasts.

Method: run the catalog's copier scenarios (engine/scenarios/catalog.py) on fixed seeds. Input is
seeded on 2 partitions; copiers read it read_committed and copy each record to 3 output
partitions inside transactions that also commit the consumer offsets. Copiers crash and
restart at random points. A concurrent read_committed reader and a final one must see every
input exactly once in the output, in input order per partition. The same copier committing its
offsets *outside* the transaction duplicates records after a crash; a zombie copier paused
through a rebalance is fenced by its stale group generation (KIP-447) and its output never
appears.
"""

from __future__ import annotations

import dataclasses
import types

from engine.cluster import Cluster
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.copier import _last_sums
from engine.scenarios.harness import Run, run_spec
from engine.scenarios.mutants import MUTANTS


def _kinds(r: object) -> set[str]:
    return {a.kind for a in r.report.forbidden} | {f.split(":")[0] for f in r.findings}  # type: ignore[attr-defined]


def test_copier_with_crashing_clients_copies_every_input_exactly_once_in_order() -> None:
    r = run_spec(BY_NAME["copier: client hard bounce"], 2)
    assert r.ok, r.verdict()
    run_outputs = sorted((st, sp, so) for *_out, st, sp, so in _outputs(r))
    inputs = [(t, p, o) for t, p, o, _v in sorted(_inputs(r))]
    assert run_outputs == inputs  # output == input, no duplicates
    crashes = [e for e in r.cluster.world.trace.events if e.name == "crash" and e.node.startswith("copier-")]
    assert crashes, "the copiers should have crashed at least once"


def test_copier_committing_offsets_outside_the_transaction_duplicates_after_a_crash() -> None:
    r = run_spec(BY_NAME["copier: client hard bounce"], 2, mutant=MUTANTS["M12"])
    assert "copier-duplicate" in _kinds(r)


def test_zombie_copier_paused_through_a_rebalance_is_fenced_and_its_output_never_appears() -> None:
    r = run_spec(BY_NAME["copier: group mode rebalance"], 2)
    assert r.ok, r.verdict()
    marks = r.cluster.world.trace.marks
    assert marks.get("producer: stale group generation rejected (KIP-447)", 0) >= 1
    assert not [o for o in _outputs(r) if o[3:] in _duplicates(r)]
    contrasts = [run_spec(BY_NAME["copier: group mode rebalance"], seed, mutant=MUTANTS["M15"]) for seed in (1, 2, 3)]
    assert any("copier-duplicate" in _kinds(c) for c in contrasts)  # without KIP-447 fencing, the zombie's output lands


def test_a_stale_offset_fetch_answer_does_not_move_a_position_back_after_a_rebalance() -> None:
    """Found by the 200-seed swarm sweep of issue 31 (seed 64): 35 records copied twice.

    After a rebalance, copier-2's consumer asked for its new partitions' committed offsets while an
    OffsetFetch of the old assignment was still retrying. The old one's answer freed the keys the
    new one was resolving, so a second OffsetFetch started; the consumer fetched in/6 from 25, the
    copier copied 25..59, and then the second answer moved the position back to 25.
    """
    r = run_spec(BY_NAME["copier: group mode rebalance"], 64, swarm=True)
    assert r.ok, r.verdict()
    assert not _duplicates(r)
    assert "copier-duplicate" not in _kinds(r)


def _inputs(r: object) -> list[tuple]:
    return r.state.inputs  # type: ignore[attr-defined]


def _outputs(r: object) -> list[tuple]:
    return r.state.outputs  # type: ignore[attr-defined]


def _duplicates(r: object) -> set[tuple]:
    counts: dict[tuple, int] = {}
    for o in _outputs(r):
        counts[o[3:]] = counts.get(o[3:], 0) + 1
    return {k for k, n in counts.items() if n > 1}


# -- regression stories from the 200-seed swarm sweep (seeds 93109, 93173, 93039), rebuilt by hand --------------


def test_a_copier_waiting_out_a_rebalance_after_the_safety_phase_does_not_declare_itself_done() -> None:
    """Swarm seeds 93109/93173: idle copiers quit after the safety phase while the group waited for a paused member.

    A member gets nothing while its group waits for another member to rejoin, so "idle after the
    safety phase" is no sign of being done. The copiers that quit on it left their partitions to
    nobody, and the run ended with input uncopied (``copier-lost``). Rebuilt by hand: a member of
    group ``copiers`` holds every input partition and is paused (its 20 s session keeps the group
    waiting); a copier joins after the safety phase, waits out the rebalance, and must copy the
    whole input once the paused member comes back.
    """
    spec = dataclasses.replace(
        BY_NAME["copier: group mode rebalance"],
        faults=None,
        workload=dataclasses.replace(BY_NAME["copier: group mode rebalance"].workload, copiers=1, pause_slot=-1),
    )
    run = Run(spec, 1, None)
    blocker = run.cluster.consumer({"group.id": "copiers", "session.timeout.ms": 20_000, "client.id": "blocker"})
    blocker.subscribe(["in"])
    while not blocker.assignment():
        blocker.consume(1, timeout=0.1)
    run.world.pause(blocker.name)
    run.stopping = True  # the safety phase is over
    spec.workload.start(run)
    copier = 0  # the first process the workload spawns
    run.drive(run.now_ms + 10_000)
    assert copier in run.processes, "the copier declared itself done while its group was still rebalancing"
    run.world.resume(blocker.name)
    blocker.close()
    run.drive(run.now_ms + 30_000)
    assert copier not in run.processes, "the copier should finish once the input is copied"
    view = run.cluster.group_view("copiers")
    assert [view.committed_offset("in", p) for p in range(9)] == [60] * 9


def test_an_aggregate_restores_from_its_whole_changelog_while_the_output_leader_is_down() -> None:
    """Swarm seed 93039: a restarted aggregate read no output while a broker was down and began from sum 0.

    Its restore stopped at the first two empty polls, so it restored ``{}`` instead of the
    committed sum of in-1 (780 after offset 39) and then summed from 0 (``aggregate-mismatch``).
    Kafka Streams reads a changelog to its end offset; so must the restore, here with the output
    partition's leader crashed until the controller moves the leadership.
    """
    c = Cluster(seed=3, brokers=3)
    c.create_topic("out", partitions=2, replication_factor=3)
    p = c.producer({"transactional.id": "agg-1"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value="sum:1:780:39:a", partition=1)
    p.commit_transaction()
    c.run_for(500)
    c.crash(c.leader("out", 1))
    run = types.SimpleNamespace(cluster=c)
    assert _last_sums(run, 2) == {1: (780, 39)}  # type: ignore[arg-type]
