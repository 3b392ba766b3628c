"""The example catalogue (:mod:`engine.check.examples`) is what it says it is.

Goal: every hand-made history gives exactly its expected anomaly kinds when nothing is allowed,
the clean ones give none at all (not even allowed kinds), and every history kind the checkers
can report has an example. Method: run :func:`engine.check.check_history` with ``allowed=()``
over each example and compare the set of kinds with ``expected_kinds``.
"""

from __future__ import annotations

import pytest

from engine.check import KINDS, check_history
from engine.check.examples import EXAMPLES, KINDS_SHOWN, Example, op, send, serial_history


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_example_gives_exactly_its_expected_kinds(name):
    ex = EXAMPLES[name]
    report = check_history(ex.history, allowed=())
    assert report.allowed == ()
    assert tuple(sorted({a.kind for a in report.forbidden})) == ex.expected_kinds


def test_clean_examples_give_no_anomaly_in_any_mode():
    clean = [ex for ex in EXAMPLES.values() if ex.name.startswith("clean: ")]
    assert len(clean) >= 10
    for ex in clean:
        assert ex.expected_kinds == ()
        for mode in ("eos", "subscribe", "at-least-once"):
            assert check_history(ex.history, allowed=mode).anomalies == (), (ex.name, mode)


def test_every_history_kind_has_an_example_named_after_it():
    assert set(KINDS_SHOWN) <= set(KINDS)
    for kind in KINDS_SHOWN:
        named = [ex for ex in EXAMPLES.values() if ex.name.startswith(f"{kind}: ")]
        assert named, kind
        assert all(kind in ex.expected_kinds for ex in named), kind


def test_examples_are_well_formed():
    for name, ex in EXAMPLES.items():
        assert isinstance(ex, Example)
        assert ex.name == name
        assert ex.expected_kinds == tuple(sorted(set(ex.expected_kinds)))
        assert set(ex.expected_kinds) <= set(KINDS_SHOWN)
        assert ex.note.strip()


def test_serial_history_leaves_an_invoke_op_in_flight():
    h = serial_history(op(0, "send", "invoke", send("a")))
    assert [o.type for o in h] == ["invoke"]
    assert next(h.completions()).type == "info"


def test_serial_history_refuses_what_is_not_an_op_description():
    with pytest.raises(ValueError, match="op"):
        serial_history(("not", "an", "op"))
