"""``eos_check(topics=..., promise=...)`` seen from outside: inner pytest sessions and their reports.

Goal: the payments-to-ledger processor of ``examples/payments_ledger`` that commits its offsets
before its transaction, killed mid-batch and restarted, fails a test with no assertion of its
own: the report names ``lost-input`` with the lost payments' offsets and keys, and ends with the
seed and a replay line that reproduces the same failure. Upstream's deliberate duplicates fail
the history check unless ``topics=`` leaves the input out, and the report says so; bad
``topics``/``promise`` arguments fail with one line; ``eos_cluster.check(promise=...)`` takes
the same promises.

Method: ``pytester`` copies the example's application module unchanged beside an inner test file
and runs pytest on it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

LEDGER = Path(__file__).resolve().parents[2] / "examples" / "payments_ledger" / "ledger.py"

#: The example's test, with the buggy processor and no assertion of its own.
BUGGY = """
import ledger
import pytest

CONF = {"bootstrap.servers": "localhost:9092"}


class ProcessDiedError(Exception):
    pass


def send_payments():
    from confluent_kafka import Producer

    p = Producer({**CONF, "enable.idempotence": True})
    for i in range(30):
        p.produce("payments", key=b"pay-%d" % i, value=b"pay-%d:%d EUR" % (i, 10 + i))
        if i in (3, 11):
            p.produce("payments", key=b"pay-%d" % i, value=b"pay-%d:%d EUR" % (i, 10 + i))
    p.flush(30)


def crash_and_restart(eos_cluster, offsets_in_transaction):
    send_payments()
    app = ledger.LedgerApp(CONF, offsets_in_transaction=offsets_in_transaction).start()
    seen = {"batches": 0}

    def die_mid_second_batch(n):
        seen["batches"] += n == 1
        if seen["batches"] == 2 and n == 3:
            eos_cluster.kill(app.producer, app.consumer)
            raise ProcessDiedError

    with pytest.raises(ProcessDiedError):
        app.run(after_produce=die_mid_second_batch)
    ledger.LedgerApp(
        CONF,
        offsets_in_transaction=offsets_in_transaction,
        producer=eos_cluster.restart(app.producer),
        consumer=eos_cluster.restart(app.consumer),
    ).start().run()


@pytest.mark.eos_cluster(topics={"payments": 1, "ledger": 1})
@pytest.mark.eos_check(mode="eos", topics=["ledger"], promise="payments -> ledger")
def test_offsets_first(eos_cluster):
    crash_and_restart(eos_cluster, offsets_in_transaction=False)


@pytest.mark.eos_cluster(topics={"payments": 1, "ledger": 1})
@pytest.mark.eos_check(mode="eos", topics=["ledger"], promise="payments -> ledger")
def test_offsets_in_the_transaction(eos_cluster):
    crash_and_restart(eos_cluster, offsets_in_transaction=True)


@pytest.mark.eos_cluster(topics={"payments": 1, "ledger": 1})
@pytest.mark.eos_check(mode="eos", promise="payments -> ledger")
def test_unscoped(eos_cluster):
    crash_and_restart(eos_cluster, offsets_in_transaction=True)
"""


@pytest.fixture
def buggy(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(ledger=LEDGER.read_text(encoding="utf-8"), test_ledger_bug=BUGGY)
    return pytester


def test_offsets_committed_before_the_transaction_fail_by_the_promise_naming_the_lost_offsets(
    buggy: pytest.Pytester,
) -> None:
    result = buggy.runpytest("-p", "no:cacheprovider", "-k", "offsets_first")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "eos_check(mode='eos', topics=['ledger'], promise=['payments -> ledger by key'])" in out
    row = re.search(r"lost-input +payments/0 +([\d,+]+) .*have no committed record in ledger \(by key\): (.*)", out)
    assert row, out
    named = re.findall(r"offset (\d+) \(key 'pay-(\d+)'\)", row[2])
    assert len(named) >= 2 and row[1].startswith(named[0][0])
    assert "duplicate" not in out  # payments' deliberate duplicates are out of scope
    replay = re.search(r"replay: (pytest test_ledger_bug.py::test_offsets_first --eos-seed \d+)", out)
    assert replay, out
    again = buggy.runpytest("-p", "no:cacheprovider", *replay[1].split()[1:])
    again.assert_outcomes(failed=1)
    assert row[0] in again.stdout.str()  # the same lost offsets, by the replay line


def test_the_correct_processor_keeps_the_promise_and_unscoped_duplicates_are_reported(buggy: pytest.Pytester) -> None:
    result = buggy.runpytest("-p", "no:cacheprovider", "-k", "in_the_transaction or unscoped")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "test_unscoped" in out and "duplicate x2" in out and "lost-input" not in out
    assert "judged out with topics=[...]" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ('topics="ledger"', "topics must be a list of topic names"),
        ('promise="payments => ledger"', "cannot read the promise 'payments => ledger'"),
    ],
)
def test_bad_topics_or_promise_fail_in_one_line(pytester: pytest.Pytester, args: str, message: str) -> None:
    pytester.makepyfile(
        f"""
import pytest

@pytest.mark.eos_check({args})
def test_it(eos_cluster):
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    assert f"@pytest.mark.eos_check: {message}" in result.stdout.str()


@pytest.mark.eos_cluster(topics={"payments": 1, "ledger": 1})
def test_check_takes_the_same_promises(eos_cluster) -> None:
    from engine.check.promises import Promise

    p = eos_cluster.producer()
    for i in range(3):
        p.produce("payments", key=b"k%d" % i, value=b"%d" % i, partition=0)
    p.produce("ledger", key=b"k0", value=b"booked 0", partition=0)
    p.flush()
    report = eos_cluster.check(promise=["payments -> ledger", Promise("payments", "ledger", match="value")])
    by_kind = [(a.kind, a.offsets) for a in report.forbidden]
    assert by_kind == [("lost-input", (0, 1, 2)), ("lost-input", (1, 2))]
    assert eos_cluster.check(promise="payments -> ledger", topics=["ledger"]).kinds() == {"lost-input": 1}
