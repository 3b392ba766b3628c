"""confluent-kafka's error objects, and how the engine's exceptions become them.

confluent-kafka reports errors with two types: :class:`KafkaError`, a plain value (not an
exception) with a code, a reason and three flags, and :class:`KafkaException`, the exception
whose ``args[0]`` is a ``KafkaError``. Delivery reports and consumer error events carry a
``KafkaError``; calls raise ``KafkaException``. Both are rebuilt here with confluent-kafka's
behaviour (``repr``, equality with an int code, the class constants of :mod:`.codes`).

The engine raises its own exceptions (:mod:`engine.errors`, Java-named, one class per Kafka code).
:func:`from_engine` turns one into the ``KafkaError`` librdkafka would report for the same event:

=====================================================  ==============================================
engine exception                                       confluent-kafka error
=====================================================  ==============================================
``ProducerFencedException`` or                         ``_FENCED``, ``fatal()`` (librdkafka's
``InvalidProducerEpochException``, when fatal           ``rd_kafka_txn_set_fatal_error``)
any other fatal producer error                         its own code, ``fatal()``
``TimeoutException`` from a call                       ``_TIMED_OUT``, ``retriable()``
``TimeoutException`` in a delivery report              ``_MSG_TIMED_OUT``
``PurgedException`` / ``TransactionAbortedException``  ``_PURGE_INFLIGHT`` or ``_PURGE_QUEUE``
``CommitFailedException``                              the group's code (``ILLEGAL_GENERATION`` ...)
``IllegalStateError``                                  ``_STATE``
``ConfigError``                                        ``_INVALID_ARG``
any other with a Kafka code                            that code (the numbers are Kafka's in both)
=====================================================  ==============================================

In a transactional producer, an error the engine classes as abortable has
``txn_requires_abort()``; the engine's retriable classes have ``retriable()``.
"""

from __future__ import annotations

import re
from typing import Any

from engine.errors import (
    CommitFailedException,
    ConfigError,
    ErrorCode,
    IllegalStateError,
    PurgedException,
    TimeoutException,
    TransactionAbortedException,
)
from engine.errors import KafkaError as EngineKafkaError
from eos_magics.kafka.codes import CODES, NAMES

__all__ = ["EngineKafkaError", "KafkaError", "KafkaException", "from_engine", "kafka_exception"]

_FENCED_CODES = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})
_CODE_IN_TEXT = re.compile(r"\(([A-Z_]+)\)")


class KafkaError:
    """An error value as confluent-kafka has it: ``code()``, ``name()``, ``str()`` and three flags.

    Parameters
    ----------
    error
        The code: a ``KafkaError.<NAME>`` constant (librdkafka's numbers).
    reason
        The text; None gives librdkafka's description of the code.
    fatal, retriable, txn_requires_abort
        The flags confluent-kafka sets: the client is unusable; the call may be retried; the
        transaction must be aborted.
    """

    __slots__ = ("_code", "_fatal", "_reason", "_retriable", "_txn_requires_abort", "engine_error")

    def __init__(
        self,
        error: int,
        reason: str | None = None,
        fatal: bool = False,
        retriable: bool = False,
        txn_requires_abort: bool = False,
    ) -> None:
        if isinstance(error, bool) or not isinstance(error, int):
            raise TypeError(f"KafkaError: error must be an int code such as KafkaError._FENCED, not {error!r}")
        self._code = error
        self._reason = reason
        self._fatal = bool(fatal)
        self._retriable = bool(retriable)
        self._txn_requires_abort = bool(txn_requires_abort)
        #: The engine exception this error was made from (None when built by hand).
        self.engine_error: BaseException | None = None

    def code(self) -> int:
        """Return the error code."""
        return self._code

    def name(self) -> str:
        """Return the code's name (``ERR_<code>?`` for a code librdkafka does not know)."""
        return NAMES.get(self._code, f"ERR_{self._code}?")

    def str(self) -> str:
        """Return the reason, or librdkafka's description of the code."""
        if self._reason is not None:
            return self._reason
        known = CODES.get(self.name())
        return known[1] if known is not None else f"Err-{self._code}?"

    def fatal(self) -> bool:
        """Return True when the client that reported it can no longer be used."""
        return self._fatal

    def retriable(self) -> bool:
        """Return True when the failed call may be retried."""
        return self._retriable

    def txn_requires_abort(self) -> bool:
        """Return True when the current transaction must be aborted."""
        return self._txn_requires_abort

    def __repr__(self) -> str:
        flag = "FATAL," if self._fatal else ""
        return f'KafkaError{{{flag}code={self.name()},val={self._code},str="{self.str()}"}}'

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KafkaError):
            return self._code == other.code()
        if isinstance(other, int) and not isinstance(other, bool):
            return self._code == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._code)


for _name, (_code, _text) in CODES.items():
    setattr(KafkaError, _name, _code)


class KafkaException(Exception):  # noqa: N818 - confluent-kafka's name
    """confluent-kafka's exception: ``args[0]`` is the :class:`KafkaError`."""

    def _render_traceback_(self) -> list[str]:
        """Show one line in IPython, as the engine's errors do."""
        return [f"KafkaException: {' '.join(str(self).split())}"]


def _code_of(exc: BaseException, *, delivery: bool) -> int:
    if isinstance(exc, IllegalStateError):
        return KafkaError._STATE  # type: ignore[attr-defined]
    if isinstance(exc, ConfigError):
        return KafkaError._INVALID_ARG  # type: ignore[attr-defined]
    if isinstance(exc, TransactionAbortedException):
        return KafkaError._PURGE_QUEUE  # type: ignore[attr-defined]
    if isinstance(exc, PurgedException):
        in_flight = exc.context.get("in_flight")
        return KafkaError._PURGE_INFLIGHT if in_flight else KafkaError._PURGE_QUEUE  # type: ignore[attr-defined]
    if isinstance(exc, TimeoutException):
        return KafkaError._MSG_TIMED_OUT if delivery else KafkaError._TIMED_OUT  # type: ignore[attr-defined]
    if isinstance(exc, CommitFailedException):
        name = exc.context.get("error")
        if name is None:
            found = _CODE_IN_TEXT.search(exc.message)
            name = found.group(1) if found else "ILLEGAL_GENERATION"
        return int(ErrorCode[name]) if name in ErrorCode.__members__ else int(ErrorCode.ILLEGAL_GENERATION)
    code = getattr(exc, "code", None)
    if isinstance(code, ErrorCode):
        return int(code)
    return KafkaError._FAIL  # type: ignore[attr-defined]


def from_engine(
    exc: BaseException, *, fatal: bool = False, transactional: bool = False, delivery: bool = False
) -> KafkaError:
    """Return the confluent-kafka error for an engine exception (see the module docstring).

    Parameters
    ----------
    exc
        The engine's exception.
    fatal
        The client holds it as its fatal error (``producer.fatal_error is exc``).
    transactional
        It came from a transactional producer: abortable errors require an abort.
    delivery
        It is a delivery report's or a consumer event's error: a timeout is then ``_MSG_TIMED_OUT``,
        and it carries no flags (confluent-kafka's message errors are a bare code and text).
    """
    code = _code_of(exc, delivery=delivery)
    reason = getattr(exc, "message", None) or str(exc)
    if fatal and getattr(exc, "code", None) in _FENCED_CODES:
        code = KafkaError._FENCED  # type: ignore[attr-defined]
        cause = exc.__cause__ if isinstance(exc.__cause__, EngineKafkaError) else exc
        reason = f"Producer fenced by a newer instance with the same transactional.id: {cause.message}"
    retriable = bool(getattr(exc, "retriable", False)) and not fatal
    abortable = transactional and not fatal and bool(getattr(exc, "abortable", False))
    text = " ".join(reason.split())
    err = KafkaError(code, text) if delivery else KafkaError(code, text, fatal, retriable, abortable)
    err.engine_error = exc
    return err


def kafka_exception(exc: BaseException, **flags: Any) -> KafkaException:
    """Return the ``KafkaException`` to raise for an engine exception: ``raise kafka_exception(e) from None``."""
    return KafkaException(from_engine(exc, **flags))
