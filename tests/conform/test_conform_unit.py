"""The conformance suite's own parts, without a cluster: the fault vocabulary, the comparison, the registry.

Goal: the comparison can fail. Each outcome (same, same within bounds, documented, diverges) is
produced from observations built here, and a documented entry never hides a key it does not name.
"""

from __future__ import annotations

import pytest

from engine.conform.case import CASES, Bounds, Case, Observation
from engine.conform.compare import compare
from engine.conform.known import KNOWN, Known
from engine.conform.runner import select_cases
from engine.conform.targets import java_string_hash
from engine.conform.vocabulary import parse_fault

TWO_AND_ONE = Bounds(2.0, 1.0)


def _case(name: str = "x.case", bounds: Bounds = TWO_AND_ONE) -> Case:
    return Case(name, "area", "title", lambda ctx: None, bounds=bounds)


def _obs(values: dict, timings: dict | None = None, verdict: str = "OK") -> Observation:
    return Observation(values=values, timings=timings or {}, verdict=verdict)


@pytest.mark.parametrize(
    ("text", "kind", "shown"),
    [
        ("kill 2", "broker", "kill 2"),
        ("pause leader orders 0", "leader", "pause leader orders 0"),
        ("restart coordinator group g1", "group", "restart coordinator group g1"),
        ("kill coordinator transaction app-1", "transaction", "kill coordinator transaction app-1"),
    ],
)
def test_the_fault_vocabulary_reads_each_form(text: str, kind: str, shown: str) -> None:
    fault = parse_fault(text)
    assert fault.target.kind == kind
    assert str(fault) == shown


@pytest.mark.parametrize("text", ["", "kill", "crash 1", "kill leader orders", "kill coordinator member x", "pause x"])
def test_a_fault_outside_the_vocabulary_is_refused_with_the_grammar(text: str) -> None:
    with pytest.raises(ValueError, match="ACTION is kill, pause, resume or restart"):
        parse_fault(text)


def test_java_string_hash_is_javas_string_hashcode() -> None:
    # Values printed by jshell 17: "orders".hashCode(), "conform-tx-é".hashCode()
    assert java_string_hash("orders") == -1008770331
    assert java_string_hash("conform-tx-é") == -376896505
    assert java_string_hash("") == 0


def test_equal_values_are_same_and_any_difference_diverges() -> None:
    case = _case()
    assert compare(case, _obs({"read": [[0, "a"]]}), _obs({"read": [[0, "a"]]})).outcome == "same"
    judged = compare(case, _obs({"read": [[0, "a"]]}), _obs({"read": [[0, "a"], [1, "b"]]}))
    assert judged.outcome == "diverges"
    assert judged.differences[0].startswith("read: reference [[0, 'a']]")


def test_a_key_seen_on_one_side_only_diverges() -> None:
    judged = compare(_case(), _obs({"a": 1}), _obs({"a": 1, "raised": "KafkaException: x"}))
    assert judged.outcome == "diverges"
    assert "raised" in judged.differences[0]


def test_a_different_eos_check_verdict_diverges_even_with_equal_values() -> None:
    judged = compare(_case(), _obs({"a": 1}), _obs({"a": 1}, verdict="FAIL G1ax5"))
    assert judged.outcome == "diverges"
    assert "verdict" in judged.differences[0]


def test_timings_within_the_case_bounds_are_same_within_bounds_and_outside_diverge() -> None:
    case = _case(bounds=Bounds(2.0, 1.0))
    assert compare(case, _obs({}, {"t": 4.0}), _obs({}, {"t": 8.5})).outcome == "same within bounds"
    assert compare(case, _obs({}, {"t": 4.0}), _obs({}, {"t": 9.5})).outcome == "diverges"
    assert compare(case, _obs({}, {"t": 0.2}), _obs({}, {"t": 1.1})).outcome == "same within bounds"
    assert compare(case, _obs({}, {"t": 9.0}), _obs({}, {})).outcome == "diverges"


def test_a_documented_divergence_covers_only_the_keys_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KNOWN, "x.case", Known(("desc",), "the engine simplifies", "Kafka.method"))
    case = _case()
    documented = compare(case, _obs({"desc": 1, "read": [1]}), _obs({"desc": 2, "read": [1]}))
    assert documented.outcome == "documented"
    assert "Kafka.method" in documented.note
    assert compare(case, _obs({"desc": 1, "read": [1]}), _obs({"desc": 2, "read": [2]})).outcome == "diverges"


def test_there_are_at_least_40_cases_in_every_area_the_issue_names() -> None:
    cases = select_cases()
    assert len(cases) >= 40
    assert {c.area for c in cases} >= {"admin", "produce", "transactions", "groups", "fetch", "auth"}
    assert select_cases(["admin.empty-cluster"])[0] is cases[0]  # the empty cluster runs first
    assert all(not c.faults for c in select_cases(faults=False))


def test_every_documented_divergence_names_a_case_and_a_kafka_source() -> None:
    select_cases()
    for name, known in KNOWN.items():
        assert name in CASES, name
        assert known.keys and known.kafka and known.reason
