"""The anomalies' sentences, written once in ``engine/check/messages.py``.

Goal: every history kind with a sentence has one; the records the checkers build carry the
sentence ``history_anomaly`` gives for their fields; a white-box ``Sentence`` renders alike as a
``str.format`` template and as the ``printf`` format Spark fills; the side-effects scenario's
aborted-attempt ``effect-phantom`` sentence reads as it did.
"""

from __future__ import annotations

import pytest

from engine.check import check_history, messages
from engine.check.anomaly import KINDS
from engine.check.examples import EXAMPLES

_CYCLES = {"G0", "G1c-wr", "G1c-ww"}  # worded by the cycle search, the same code for both engines
_ORACLES = {k for k, (cid, _) in KINDS.items() if not cid.startswith("C")}


def test_every_history_kind_but_cycles_has_a_sentence() -> None:
    assert set(messages.SENTENCES) == set(KINDS) - _CYCLES - _ORACLES


#: The kinds whose sentence needs nothing beyond the record's own fields (no rank difference, no process).
_PLAIN = {"inconsistent-offsets", "duplicate", "lost-write", "unseen", "G1a", "precommitted-read"}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_example_anomaly_carries_the_sentence_of_its_fields(name: str) -> None:
    for a in check_history(EXAMPLES[name].history, allowed=()).anomalies:
        if a.kind in _PLAIN:
            again = messages.history_anomaly(a.kind, a.key, a.offsets, a.values, a.ops)
            assert (again, again.message) == (a, a.message)


def test_a_sentence_renders_alike_as_template_and_as_printf() -> None:
    s = messages.Sentence("leader {leader}: 100% of {n} at {offset}")
    fmt, names = s.printf()
    assert fmt == "leader %s: 100%% of %s at %s"
    assert names == ("leader", "n", "offset")
    fields = {"leader": 2, "n": "three", "offset": 7}
    assert fmt % tuple(fields[n] for n in names) == s.format(**fields) == "leader 2: 100% of three at 7"


def test_a_sentence_field_with_a_format_spec_is_refused() -> None:
    with pytest.raises(ValueError, match="no format spec"):
        messages.Sentence("offset {offset:>5}").printf()


@pytest.mark.parametrize(
    ("names", "shown"),
    [
        (["i-1"], "1 e-mail(s) name an invoice that was never committed (an aborted or crashed attempt): i-1"),
        (
            ["i-1", "i-2", "i-3", "i-4", "i-5"],
            (
                "5 e-mail(s) name an invoice that was never committed (an aborted or crashed attempt): "
                "i-1, i-2, i-3 and 2 more"
            ),
        ),
    ],
)
def test_effect_phantom_attempts_names_three_and_counts_the_rest(names: list[str], shown: str) -> None:
    assert messages.effect_phantom_attempts(names) == shown
