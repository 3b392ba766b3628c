"""The drop-in's error values: the code table equals confluent-kafka's, and KafkaError behaves like confluent's.

The table in ``eos_magics/kafka/codes.py`` is written out (the drop-in must work without
confluent-kafka); here it is read back against the installed ``confluent_kafka.KafkaError``: the
same names, the same numbers, the same default texts. Then the value's behaviour (``repr``,
equality with a code, flags) is compared call for call, and the engine's exceptions are checked
to become the codes librdkafka reports.
"""

from __future__ import annotations

import pytest

from engine.errors import (
    CommitFailedException,
    IllegalStateError,
    ProducerFencedException,
    PurgedException,
    TimeoutException,
    TopicExistsException,
    TransactionAbortedException,
)
from eos_magics.kafka import KafkaError, KafkaException
from eos_magics.kafka.codes import CODES
from eos_magics.kafka.errors import from_engine

ck = pytest.importorskip("confluent_kafka", reason="compares with the real library")


def confluent_codes() -> dict[str, int]:
    return {
        name: value
        for name in dir(ck.KafkaError)
        if not name.startswith("__") and isinstance(value := getattr(ck.KafkaError, name), int)
    }


def test_the_code_table_equals_confluent_kafkas_for_every_name() -> None:
    real = confluent_codes()
    assert {name: code for name, (code, _text) in CODES.items()} == real
    for name, code in real.items():
        assert getattr(KafkaError, name) == code, name


def test_default_texts_and_names_are_librdkafkas() -> None:
    for name, (code, text) in CODES.items():
        real = ck.KafkaError(code)
        ours = KafkaError(code)
        assert (ours.name(), ours.str()) == (real.name(), real.str()) == (name, text)
    assert KafkaError(99999).name() == ck.KafkaError(99999).name()


@pytest.mark.parametrize(
    "args",
    [
        (KafkaError._FENCED,),
        (KafkaError._FENCED, "boom", True),
        (1, "x", True, True, True),
        (KafkaError._MSG_TIMED_OUT,),
    ],
)
def test_kafka_error_behaves_like_confluents(args: tuple) -> None:
    real, ours = ck.KafkaError(*args), KafkaError(*args)
    assert repr(ours) == repr(real) and str(ours) == str(real)
    assert (ours.code(), ours.fatal(), ours.retriable(), ours.txn_requires_abort()) == (
        real.code(),
        real.fatal(),
        real.retriable(),
        real.txn_requires_abort(),
    )
    assert ours == args[0] and ours == KafkaError(args[0]) and hash(ours) == hash(real)
    assert str(KafkaException(ours)) == str(ck.KafkaException(real))
    assert KafkaException(ours).args[0] is ours


@pytest.mark.parametrize(
    ("exc", "flags", "code", "fatal", "retriable", "abort"),
    [
        (ProducerFencedException("newer instance"), {"fatal": True}, KafkaError._FENCED, True, False, False),
        (TimeoutException("slow"), {}, KafkaError._TIMED_OUT, False, True, False),
        (TimeoutException("expired"), {"delivery": True}, KafkaError._MSG_TIMED_OUT, False, False, False),
        (PurgedException("gone"), {}, KafkaError._PURGE_QUEUE, False, False, False),
        (PurgedException("gone", in_flight=True), {}, KafkaError._PURGE_INFLIGHT, False, False, False),
        (TransactionAbortedException(), {"transactional": True}, KafkaError._PURGE_QUEUE, False, False, False),
        (CommitFailedException("x", error="UNKNOWN_MEMBER_ID"), {}, KafkaError.UNKNOWN_MEMBER_ID, False, False, False),
        (IllegalStateError("not now"), {}, KafkaError._STATE, False, False, False),
        (TopicExistsException(), {}, KafkaError.TOPIC_ALREADY_EXISTS, False, False, False),
    ],
)
def test_engine_exceptions_become_librdkafkas_codes(
    exc: BaseException, flags: dict, code: int, fatal: bool, retriable: bool, abort: bool
) -> None:
    err = from_engine(exc, **flags)
    assert (err.code(), err.fatal(), err.retriable(), err.txn_requires_abort()) == (code, fatal, retriable, abort)
    assert err.engine_error is exc and "\n" not in err.str()
