"""Tests of the Kafka system-test oracles: the copier (X1/X2) and the sentinel probe (X4).

Goal: the consume-transform-produce oracle reports exactly one kind per defect (a lost input, a
duplicated copy, a phantom output, an out-of-order copy) and nothing on a faithful copy; the
sentinel probe reports a hanging transaction only for partitions whose sentinel was not read.
Method: plain record lists built by hand.
"""

from __future__ import annotations

from engine.check import InputRecord, OutputRecord, Poll, Send, check_copier, check_sentinels

INPUTS = [InputRecord("in", p, o, f"v{p}-{o}") for p in (0, 1) for o in range(3)]


def copy_all():
    # Output partition = input partition, offsets in input order (the 1 -> 1 variant).
    return [OutputRecord("out", r.partition, r.offset, r.topic, r.partition, r.offset, r.value) for r in INPUTS]


def kinds(anomalies):
    return [a.kind for a in anomalies]


def test_copier_clean_copy_reports_nothing():
    assert check_copier(INPUTS, copy_all()) == []


def test_copier_lost_when_an_input_has_no_output():
    outputs = [o for o in copy_all() if (o.source_partition, o.source_offset) != (1, 2)]
    (a,) = check_copier(INPUTS, outputs)
    assert a.kind == "copier-lost"
    assert a.key == ("in", 1)
    assert a.offsets == (2,)


def test_copier_duplicate_when_an_input_is_copied_twice():
    outputs = [*copy_all(), OutputRecord("out", 0, 3, "in", 0, 2)]
    assert kinds(check_copier(INPUTS, outputs)) == ["copier-duplicate"]


def test_copier_phantom_when_an_output_names_no_input():
    outputs = [*copy_all(), OutputRecord("out", 0, 3, "in", 0, 9)]
    assert kinds(check_copier(INPUTS, outputs)) == ["copier-phantom"]


def test_copier_order_when_outputs_of_one_input_partition_are_reordered():
    outputs = copy_all()
    a, b = outputs[0], outputs[1]
    outputs[0] = a._replace(source_offset=b.source_offset)
    outputs[1] = b._replace(source_offset=a.source_offset)
    assert kinds(check_copier(INPUTS, outputs)) == ["copier-order"]
    assert check_copier(INPUTS, outputs, check_order=False) == []


def test_copier_accepts_plain_tuples():
    assert check_copier([("in", 0, 0)], [("out", 0, 0, "in", 0, 0)]) == []


def test_sentinel_seen_on_every_partition_reports_nothing():
    sentinels = [Send("out", 0, "end-0"), Send("out", 1, "end-1")]
    reads = [Poll("out", 0, 7, "end-0"), Poll("out", 1, 4, "end-1")]
    assert check_sentinels(sentinels, reads) == []


def test_hanging_transaction_when_a_sentinel_is_never_read():
    sentinels = [Send("out", 0, "end-0"), Send("out", 1, "end-1")]
    reads = [Poll("out", 0, 7, "end-0")]
    (a,) = check_sentinels(sentinels, reads)
    assert a.kind == "hanging-transaction"
    assert a.key == ("out", 1)
    assert a.values == ("end-1",)
