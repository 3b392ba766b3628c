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

from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
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


def _inputs(r: object) -> list[tuple]:
    return _run_extra(r)["copier_inputs"]


def _outputs(r: object) -> list[tuple]:
    return _run_extra(r)["copier_outputs"]


def _duplicates(r: object) -> set[tuple]:
    counts: dict[tuple, int] = {}
    for o in _outputs(r):
        counts[o[3:]] = counts.get(o[3:], 0) + 1
    return {k for k, n in counts.items() if n > 1}


def _run_extra(r: object) -> dict:
    return r.extra  # type: ignore[attr-defined]
