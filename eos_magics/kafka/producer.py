"""confluent-kafka's ``Producer``, over the engine's producer of the bound cluster.

``Producer(conf)`` picks its cluster from ``bootstrap.servers`` (:mod:`.binding`), translates the
config (:mod:`.config`: librdkafka's keys, aliases and defaults) and creates the engine's producer
(transactional when ``transactional.id`` is set). Every call passes through to it; what differs
from a plain pass-through:

* keys and values given as ``str`` are encoded as UTF-8, and headers become a list of
  ``(str, bytes)`` pairs, as librdkafka stores them: a consumer reads back bytes;
* delivery callbacks get ``(KafkaError | None, Message)`` with confluent-kafka's types, and
  ``delivery.report.only.error`` and the config's ``on_delivery`` work;
* ``poll(timeout)`` returns as soon as a delivery report is ready (the engine's ``poll`` lets the
  whole timeout pass), so a ``produce(); poll(1.0)`` loop does not age open transactions;
* engine exceptions become ``KafkaException`` (:mod:`.errors`): a fenced producer's calls raise a
  fatal ``_FENCED`` error, transactional errors carry ``txn_requires_abort()``/``retriable()``,
  calling the transactional API without ``transactional.id`` raises ``_NOT_CONFIGURED``;
* ``close()`` aborts an open transaction and flushes; later calls raise ``RuntimeError``.

Timeouts are simulated seconds: waiting is what moves the simulation on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from engine.args import wait_ms
from engine.client.transactions import TxnClientState
from engine.errors import ConfigError, ErrorCode
from eos_magics.kafka.binding import resolve
from eos_magics.kafka.calls import ENGINE_ERRORS, ClosedOnExit, add_stubs, config_arg, unique_client_id
from eos_magics.kafka.config import invalid, settings
from eos_magics.kafka.errors import KafkaError, KafkaException, from_engine
from eos_magics.kafka.messages import Message
from eos_magics.kafka.metadata import ClusterMetadata, cluster_metadata

__all__ = ["Producer"]

_CLOSED = "Producer has been closed"
_OPEN_TXN = (TxnClientState.IN_TRANSACTION, TxnClientState.ABORTABLE_ERROR)
_FENCED_CODES = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})


def _delivery(cb: Callable[..., Any], convert: Callable[..., KafkaError], *, only_errors: bool) -> Callable[..., None]:
    """Return the engine-side delivery callback: adopt the message, convert the error, call the user's.

    A closure rather than an object with ``__call__``: it is called once per record, and a plain
    function call is the cheaper one.
    """
    message_class = Message

    def delivery(err: Any, msg: Any) -> None:
        if err is None:
            msg.__class__ = message_class
            cb(None, msg)
            return
        msg.__class__ = message_class
        kerr = convert(err, delivery=True)
        msg.set_error(kerr)
        cb(kerr, msg)

    def errors_only(err: Any, msg: Any) -> None:
        if err is not None:
            msg.__class__ = message_class
            kerr = convert(err, delivery=True)
            msg.set_error(kerr)
            cb(kerr, msg)

    return errors_only if only_errors else delivery


def _headers(headers: Any) -> Any:
    if not isinstance(headers, (dict, list, tuple)):
        raise TypeError(f"expected headers to be dict or list of (key, value) tuples, not {type(headers).__name__}")
    pairs = headers.items() if isinstance(headers, dict) else headers
    out = []
    for h in pairs:
        if not isinstance(h, (tuple, list)) or len(h) != 2:
            raise TypeError(f"expected headers to be dict or list of (key, value) tuples, got {h!r}")
        k, v = h
        out.append((k, v.encode() if isinstance(v, str) else v))
    return out


class Producer(ClosedOnExit):
    """A producer with confluent-kafka's API on the simulated cluster (see the module docstring).

    Parameters
    ----------
    conf
        confluent-kafka's configuration dict; keyword arguments are merged into it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        conf = config_arg(args, kwargs)
        self._conf = {**conf, **kwargs}
        s = settings(conf, kwargs, "producer")
        cluster = self._cluster = resolve(s.bootstrap)
        unique_client_id(cluster, s.engine)
        try:
            self._p = cluster.producer(s.engine)
        except ConfigError as exc:
            raise invalid(str(exc)) from None
        self._txn = self._p.transactional
        self._only_errors = s.flags.get("delivery.report.only.error", False)
        self._default_cb = s.callbacks.get("on_delivery")
        self._error_cb = s.callbacks.get("error_cb")
        self._fatal_reported = False
        self._closed = False
        #: The fatal error this producer raised (librdkafka's view: a fenced transactional producer).
        self._fatal: KafkaError | None = None
        #: True once closed or fatally failed: produce() and the transactional API refuse.
        self._dead = False
        self._last_cb: Any = None
        self._last_wrap: Callable[..., None] | None = None
        self._produce = self._p.produce

    @property
    def engine(self) -> Any:
        """The engine's producer behind this one (for inspection in tests and notebooks)."""
        return self._p

    @property
    def config(self) -> dict[str, Any]:
        """A copy of the configuration this producer was created with (what a restarted process passes again)."""
        return dict(self._conf)

    def _convert(self, exc: BaseException, *, delivery: bool = False) -> KafkaError:
        # librdkafka: a transactional producer whose epoch is refused was fenced: fatal _FENCED, even
        # where the engine (Java's KIP-588) only makes the transaction abortable.
        fatal = exc is self._p.fatal_error or (self._txn and getattr(exc, "code", None) in _FENCED_CODES)
        err = from_engine(exc, fatal=fatal, transactional=self._txn, delivery=delivery)
        if fatal and self._fatal is None:
            self._fatal = err if not delivery else from_engine(exc, fatal=True, transactional=self._txn)
            self._dead = True
        return err

    def _refuse(self) -> None:
        if self._closed:
            raise RuntimeError(_CLOSED)
        fatal = self._fatal
        if fatal is not None:
            raise KafkaException(KafkaError(fatal.code(), fatal.str(), fatal=True))

    def _raise(self, exc: BaseException) -> KafkaException:
        return KafkaException(self._convert(exc))

    def _wrap(self, cb: Any) -> Callable[..., None]:
        if not callable(cb):
            raise TypeError(f"on_delivery must be a function (err, msg), not {type(cb).__name__}")
        wrapped = self._last_wrap = _delivery(cb, self._convert, only_errors=self._only_errors)
        self._last_cb = cb
        return wrapped

    # -- producing --------------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int = -1,
        callback: Callable[..., Any] | None = None,
        on_delivery: Callable[..., Any] | None = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        """Queue a record; its delivery report comes through ``poll()``/``flush()``."""
        if self._dead:
            self._refuse()
        if value.__class__ is str:
            value = value.encode()
        if key.__class__ is str:
            key = key.encode()
        if callback is None:
            callback = on_delivery if on_delivery is not None else self._default_cb
        if callback is not None:
            callback = self._last_wrap if callback is self._last_cb else self._wrap(callback)
        if headers is not None:
            headers = _headers(headers)
        try:
            self._produce(topic, value, key, partition, callback, timestamp, headers)
        except ENGINE_ERRORS as exc:
            raise self._raise(exc) from None

    def produce_batch(
        self,
        topic: str,
        messages: list[dict[str, Any]],
        partition: int = -1,
        callback: Callable[..., Any] | None = None,
        on_delivery: Callable[..., Any] | None = None,
    ) -> int:
        """Queue each message dict (``value``, ``key``, ``partition``, ``headers``, ``callback``); return how many.

        A message that cannot be queued gets ``'_error'`` (a KafkaError) in its dict, as in confluent-kafka.
        """
        if not isinstance(messages, list):
            raise TypeError("expected list of message dicts")
        default_cb = on_delivery if on_delivery is not None else callback
        queued = 0
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                raise TypeError(f"Message at index {i} must be a dict")
            if m.get("timestamp"):
                raise NotImplementedError("Message timestamps are not currently supported in batch mode")
            cb = m.get("callback", m.get("on_delivery", default_cb))
            try:
                self.produce(topic, m.get("value"), m.get("key"), m.get("partition", partition), cb, None, 0, None)
            except KafkaException as exc:
                m["_error"] = exc.args[0]
                continue
            queued += 1
        return queued

    def poll(self, timeout: float | None = None) -> int:
        """Serve delivery reports; wait up to ``timeout`` simulated seconds for one (None or -1: until one comes)."""
        if self._closed:
            raise RuntimeError(_CLOSED)
        p = self._p
        if not p.deliveries.ready():  # the engine's queue of reports not yet served
            # Time moves through the cluster's own calls, which a notebook session's journal records.
            ms = wait_ms(timeout if timeout is None or timeout >= 0 else None, "poll")
            if ms is None:
                if p.deliveries.outstanding:
                    self._cluster.run_until(
                        lambda: bool(p.deliveries.ready()) or not p.deliveries.outstanding or not p.is_up
                    )
            elif ms > 0:
                if p.deliveries.outstanding:
                    self._cluster.run_until(lambda: bool(p.deliveries.ready()) or not p.is_up, max_ms=ms)
                else:
                    self._cluster.run_for(ms)
        served = p.poll(0)
        self._report_fatal()
        return served

    def flush(self, timeout: float | None = None) -> int:
        """Wait until every queued record is delivered or failed (or ``timeout`` passes); return those left."""
        if self._closed:
            raise RuntimeError(_CLOSED)
        left = self._p.flush(timeout if timeout is None or timeout >= 0 else None)
        self._report_fatal()
        return left

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Drop undelivered records; their reports carry ``_PURGE_QUEUE`` or ``_PURGE_INFLIGHT``."""
        self._p.purge(bool(in_queue), bool(in_flight), bool(blocking))

    def _report_fatal(self) -> None:
        """Tell ``error_cb`` once that the producer failed fatally (as librdkafka raises ``_FATAL``)."""
        if self._error_cb is None or self._fatal_reported:
            return
        if self._fatal is None and self._p.fatal_error is not None:
            self._convert(self._p.fatal_error)
        if self._fatal is not None:
            self._fatal_reported = True
            self._error_cb(KafkaError(KafkaError._FATAL, self._fatal.str(), fatal=True))  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self._p)

    def __bool__(self) -> bool:
        return True

    # -- transactions -----------------------------------------------------------------------

    def _txn_call(self, name: str, *args: Any) -> None:
        if self._dead:
            self._refuse()
        if not self._txn:
            text = "The Transactional API requires transactional.id to be configured"
            raise KafkaException(KafkaError(KafkaError._NOT_CONFIGURED, text))  # type: ignore[attr-defined]
        try:
            getattr(self._p, name)(*args)
        except ENGINE_ERRORS as exc:
            raise self._raise(exc) from None

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get the producer id for ``transactional.id``, fencing older instances."""
        self._txn_call("init_transactions", timeout)

    def begin_transaction(self) -> None:
        """Start a transaction."""
        self._txn_call("begin_transaction")

    def send_offsets_to_transaction(
        self, positions: list[Any], group_metadata: Any, timeout: float | None = None
    ) -> None:
        """Commit a consumer's offsets (``consumer.consumer_group_metadata()``) within the transaction."""
        self._txn_call("send_offsets_to_transaction", positions, group_metadata, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit the transaction."""
        self._txn_call("commit_transaction", timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction."""
        self._txn_call("abort_transaction", timeout)

    # -- metadata and lifecycle ---------------------------------------------------------------

    def list_topics(self, topic: str | None = None, timeout: float | None = -1) -> ClusterMetadata:
        """Ask a broker for the cluster's metadata (``timeout`` in simulated seconds)."""
        try:
            return cluster_metadata(self._p.list_topics(topic, timeout))
        except ENGINE_ERRORS as exc:
            raise self._raise(exc) from None

    def cluster_id(self, timeout: float | None = -1) -> str | None:
        """Return the cluster id."""
        return self.list_topics(None, timeout).cluster_id

    def close(self) -> bool:
        """Abort an open transaction, deliver what is queued, and refuse further calls; return True."""
        if self._closed:
            return True
        if self._txn and self._p.txn.state in _OPEN_TXN and not self._dead and self._p.fatal_error is None:
            with contextlib.suppress(*ENGINE_ERRORS):  # confluent-kafka warns and goes on closing
                self._p.abort_transaction()
        self._p.flush()
        self._closed = self._dead = True
        return True

    def __repr__(self) -> str:
        return f"<eos_magics.kafka.Producer {self._p.name}>"


add_stubs(Producer, "Producer")
