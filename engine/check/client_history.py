"""ClientHistory: the Jepsen-style client history of whatever an application does with a Cluster.

Role
----
The scenario workloads write their histories by hand; a notebook user drives producers and
consumers directly. ``ClientHistory.attach(cluster)`` watches every producer and consumer of the
cluster (those that exist and those created later) through their ``observer`` slot
(:mod:`engine.client.observer`) and keeps the history in the format of
``docs/history-format.md``, so :meth:`ClientHistory.check` can judge what the user just did.

What is recorded
----------------
* **Processes.** One counter hands out process ids in the order things start: a client takes
  one when the recorder first sees it (existing clients in creation order, at attach), and each
  non-transactional record takes a fresh one when it is produced. A process runs one operation
  at a time, and one producer may have many sends in flight, so each send is its own process;
  a transactional producer's own process runs its transactions, a consumer's its polls.
* **Non-transactional sends.** ``produce()`` invokes a ``send`` op at once. Its partition is the
  one given, or the one the partitioner picks when the record joins a batch (until then the
  invocation lists no micro-op). The delivery outcome completes it, as the workloads'
  ``completion_type`` decides: ``ok`` with the offset (null when the broker gave none),
  ``fail`` for the errors that prove the record was not written (sequence, epoch and fencing
  errors, an aborted transaction) and for a record that never reached the wire (too large,
  unknown topic or partition, purged from the queue, expired before its first attempt),
  ``info`` otherwise (timeouts, lost connections, a purge while in flight).
* **Transactions.** ``begin_transaction()`` invokes a ``txn`` op; every record produced until
  the transaction ends joins its invocation (null offsets). A commit that returns completes it
  ``ok``; an abort that returns (or whose EndTxn went through before a later step raised)
  completes it ``fail`` with error ``aborted``; a commit or abort that leaves the producer
  fatally failed completes it ``info``. A commit that times out or raises an abortable error
  leaves the op open: the producer can then only retry the commit or abort, and that call
  decides (as ``abort_after_error`` does in the workloads). Completions list every offset a
  delivery report gave. ``send_offsets_to_transaction`` is not recorded: the format has no
  micro-op for it.
* **Consumers.** ``assign`` (and its incremental forms, ``unassign``) record an ``assign`` op,
  ``subscribe``/``unsubscribe`` a ``subscribe`` op, each with the keys assigned after the call. A
  rebalance that changes the assignment records a ``subscribe`` op when it happens. Each
  ``poll()``/``consume()`` is a ``poll`` op, completed ``ok`` with one Poll per record returned
  (error events left out), or ``fail`` when the call raised. A rebalance or a crash in the middle
  of a poll ends the poll op there (nothing was handed out yet), records its own op, and opens a
  new poll op for the rest of the call. ``close()`` records nothing.
* **Seek.** ``seek()`` (and ``assign`` with a start offset for a key already assigned) records
  an op without that key, then one with it: the checker forgets the key's position, exactly as
  for a partition given up and taken back, so a deliberate rewind is no ``nonmonotonic-poll``.
* **Crash.** A crashed consumer records a ``crash`` op (its positions are forgotten); a crashed
  producer completes its open sends and transaction ``info``.
* **Values** are text: ``bytes`` decoded as UTF-8 (``repr`` when they are not UTF-8), ``str`` as
  is (``repr`` when it cannot be written as UTF-8), None as :data:`NULL_VALUE`. Keys and headers
  are not recorded and the application's records are never changed. The checker tells records
  apart by value, so the same value sent twice to one partition by the application is reported
  as a ``duplicate``: that is on purpose, it is the duplicate the broker's idempotence cannot
  see.
* **Times** are the world's simulated ``now_ms``.

Invariants
----------
* The history is valid at any moment: :meth:`ClientHistory.history` builds it from the
  recorder's own mutable entries in index order (an invocation's index is fixed when the op
  starts, its sends may become known later), and operations still in flight stay invocations.
* Nothing changes the simulation: the recorder only reads the clients and the clock, so a run
  has the same trace and ``cluster.fingerprint()`` with or without it.
* It never raises into the application: a hook that fails on the recorder's own bookkeeping is
  noted in :attr:`ClientHistory.faults` and the application's call goes on.
* One recorder per cluster: :meth:`ClientHistory.attach` returns the one already attached;
  constructing a second raises ``ValueError``.

What it does not do
-------------------
It does not record what happened before it was attached (a record produced earlier shows up
only as a read of a value no recorded op wrote), consumer offset commits, or admin calls. It
cannot be detached.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from engine.check.anomaly import Report
from engine.check.checker import check_history
from engine.check.history import History, Key, Op, Poll, Send
from engine.check.jsonl import save_jsonl
from engine.client.consumer import Consumer
from engine.client.producer import Producer
from engine.client.transactions import TxnClientState
from engine.errors import (
    InvalidProducerEpochException,
    OutOfOrderSequenceException,
    ProducerFencedException,
    TransactionAbortedException,
)

if TYPE_CHECKING:
    from engine.cluster import Cluster

__all__ = ["NULL_VALUE", "ClientHistory", "record_key", "record_value"]

#: The text recorded for a null value (a record whose value is None).
NULL_VALUE = "<null>"
#: Errors that prove a record was not written (the scenario workloads' ``DEFINITE``).
DEFINITE = (
    OutOfOrderSequenceException,
    InvalidProducerEpochException,
    ProducerFencedException,
    TransactionAbortedException,
)
#: How many bookkeeping faults :attr:`ClientHistory.faults` keeps.
MAX_FAULTS = 100

T = TxnClientState
#: Client states in which a transaction is open (begun and not yet ended).
_IN_TRANSACTION = frozenset({T.IN_TRANSACTION, T.COMMITTING_TRANSACTION, T.ABORTABLE_ERROR, T.ABORTING_TRANSACTION})


def record_value(value: Any) -> str:
    """Return the text a record's value is recorded as (see the module docstring)."""
    if value is None:
        return NULL_VALUE
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return repr(value)
        return value
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return repr(raw)
    return repr(value)


def record_key(key: Any) -> str | None:
    """Return the text a record's key is recorded as: None for no key, else as :func:`record_value` writes values."""
    return None if key is None else record_value(key)


def _guarded(hook: Callable[..., Any]) -> Callable[..., Any]:
    """Make a hook note its own failure in the recorder's faults instead of raising into the client."""

    @functools.wraps(hook)
    def run(self: Any, *args: Any) -> Any:
        try:
            return hook(self, *args)
        except Exception as exc:  # the recorder's bug must not become the application's
            self.fault(hook.__name__, exc)
            return None

    return run


def history_of(records: list[tuple[bool, PendingOp]]) -> History:
    """Build a history from a recorder's entries in index order: completions, and invocations of ops in flight."""
    ops: list[Op] = []
    for index, (done, op) in enumerate(records):
        if done:
            ops.append(Op(index, op.process, op.type, op.f, op.done_ms, op.mops, op.keys, (), op.error))
        else:
            ops.append(Op(index, op.process, "invoke", op.f, op.invoke_ms, op.invocation_mops(), op.keys))
    return History(ops)


class PendingOp:
    """One operation as the recorder holds it: mutable until completed, then frozen."""

    __slots__ = ("announced", "done_ms", "error", "f", "invoke_ms", "keys", "mops", "process", "sends", "type")

    def __init__(self, process: int, f: str, time_ms: int, keys: tuple[Key, ...] = ()) -> None:
        self.process = process
        self.f = f
        self.invoke_ms = time_ms
        self.keys = keys
        #: the records the op sends, in produce order (their partitions may become known later)
        self.sends: list[PendingRecord] = []
        self.type = "invoke"
        self.done_ms = 0
        self.error: str | None = None
        #: the invocation's and the completion's micro-ops, frozen at completion
        self.announced: tuple[Send, ...] | None = None
        self.mops: tuple[Send | Poll, ...] = ()

    def invocation_mops(self) -> tuple[Send, ...]:
        """The sends the op announces: those whose partition is known, offsets null."""
        if self.announced is not None:
            return self.announced
        return tuple(Send(r.topic, r.partition, r.value, None, r.key) for r in self.sends if r.partition is not None)

    def sent(self, *, offsets: bool) -> tuple[Send, ...]:
        """The sends whose partition is known, with the offsets learnt when ``offsets``."""
        return tuple(
            Send(r.topic, r.partition, r.value, r.offset if offsets else None, r.key)
            for r in self.sends
            if r.partition is not None
        )


class PendingRecord:
    """One produced record: the observer's token, carried by the producer (``key``: its recorded key, or None)."""

    __slots__ = ("key", "offset", "op", "partition", "topic", "value")

    def __init__(self, op: PendingOp, topic: str, partition: int | None, value: str, key: str | None = None) -> None:
        self.op = op
        self.topic = topic
        self.partition = partition
        self.value = value
        self.key = key
        self.offset: int | None = None


class OpLog:
    """The operation log a client recorder keeps, in history order; times come from :meth:`now_ms`.

    What :class:`ClientHistory` (the engine's clients) and :class:`engine.record.Recorder` (real
    clients) share. ``lock`` guards the entries where clients call from several threads.
    """

    def __init__(self, lock: contextlib.AbstractContextManager[Any] | None = None) -> None:
        self._lock = contextlib.nullcontext() if lock is None else lock
        #: (is_completion, op) in history order: the index of a record is its position here
        self._records: list[tuple[bool, PendingOp]] = []
        self._open: dict[int, PendingOp] = {}
        self._ops = 0
        self._faults: list[str] = []

    def now_ms(self) -> int:
        """Return the time of a record now, in milliseconds."""
        raise NotImplementedError

    # -- reading ----------------------------------------------------------------------------

    def history(self) -> History:
        """Return the history so far; operations still in flight are invocations without completion."""
        with self._lock:
            return history_of(self._records)

    def __len__(self) -> int:
        """Return how many history records (invocations and completions) there are so far."""
        return len(self._records)

    @property
    def ops(self) -> int:
        """Return how many operations were started so far (each counted once)."""
        return self._ops

    @property
    def faults(self) -> tuple[str, ...]:
        """The recorder's own failures, caught so as not to raise into the application (at most 100)."""
        return tuple(self._faults)

    def check(self, mode: str | Iterable[str] = "eos") -> Report:
        """Check the history so far with :func:`engine.check.check_history` (``mode``: its ``allowed``).

        Writes nobody has read yet are ``unseen`` (forbidden in every mode): read them first.
        """
        return check_history(self.history(), allowed=mode)

    # -- bookkeeping -----------------------------------------------------------------------------

    def fault(self, where: str, exc: Exception) -> None:
        """Note a failure of the recorder's own bookkeeping."""
        with self._lock:
            if len(self._faults) < MAX_FAULTS:
                self._faults.append(f"{where}: {type(exc).__name__}: {exc}")

    def invoke(self, process: int, f: str, keys: tuple[Key, ...] = ()) -> PendingOp:
        """Start an operation now; an op the process left open is first completed ``info``."""
        with self._lock:
            stale = self._open.get(process)
            if stale is not None:
                self.complete(stale, "info", error="superseded by a later operation of the same process")
            op = PendingOp(process, f, self.now_ms(), keys)
            self._open[process] = op
            self._records.append((False, op))
            self._ops += 1
            return op

    def complete(
        self, op: PendingOp, type: str, mops: tuple[Send | Poll, ...] | None = None, *, error: str | None = None
    ) -> None:
        """Complete ``op`` now (``mops`` None: its invocation's); nothing if it is not open."""
        with self._lock:
            if self._open.get(op.process) is not op:
                return
            del self._open[op.process]
            op.announced = op.invocation_mops()
            op.mops = op.announced if mops is None else mops
            op.type, op.done_ms, op.error = type, self.now_ms(), error
            self._records.append((True, op))

    def instant(self, process: int, f: str, keys: tuple[Key, ...], type: str = "ok", error: str | None = None) -> None:
        """Record an operation that starts and ends now (an assignment, a crash)."""
        with self._lock:
            self.complete(self.invoke(process, f, keys), type, error=error)


class ClientHistory(OpLog):
    """Records the client history of every producer and consumer of one cluster.

    Parameters
    ----------
    cluster : Cluster
        The cluster to watch; its existing clients are recorded from now on, and so is every
        client it creates later.

    Raises
    ------
    ValueError
        If the cluster already has a recorder (use :meth:`attach` to get it) or another client
        observer.

    Examples
    --------
    >>> from engine import Cluster
    >>> c = Cluster(seed=1)
    >>> c.create_topic("orders")
    >>> rec = ClientHistory.attach(c)
    >>> p = c.producer()
    >>> p.produce("orders", value=b"o-1", partition=0)
    >>> _ = p.flush()
    >>> [(op.type, [tuple(m) for m in op.mops]) for op in rec.history()]
    [('invoke', [('orders', 0, 'o-1', None)]), ('ok', [('orders', 0, 'o-1', 0)])]
    """

    def __init__(self, cluster: Cluster) -> None:
        current = getattr(cluster, "client_observer", None)
        if isinstance(current, ClientHistory):
            raise ValueError("this cluster already has a ClientHistory; ClientHistory.attach(cluster) returns it")
        if current is not None:
            raise ValueError(f"this cluster already has a client observer ({type(current).__name__})")
        super().__init__()
        self._world = cluster.world
        self._next_process = 0
        cluster.client_observer = self
        created = {name: i for i, name in enumerate(self._world.nodes)}
        existing = sorted([*cluster.producers, *cluster.consumers], key=lambda c: created.get(c.name, len(created)))
        for client in existing:
            self.on_new_client(client)

    @classmethod
    def attach(cls, cluster: Cluster) -> ClientHistory:
        """Return the cluster's recorder, attaching a new one if it has none."""
        current = getattr(cluster, "client_observer", None)
        if isinstance(current, ClientHistory):
            return current
        return cls(cluster)

    def now_ms(self) -> int:
        """Return the world's simulated time."""
        return self._world.now_ms

    # -- reading ----------------------------------------------------------------------------

    def process_of(self, client: Producer | Consumer) -> int:
        """Return the process id of ``client``'s own operations; ``ValueError`` if it is not recorded here."""
        tap = getattr(client, "observer", None)
        if isinstance(tap, (_ProducerTap, _ConsumerTap)) and tap.rec is self:
            return tap.process
        raise ValueError(f"{getattr(client, 'name', client)!r} is not recorded by this ClientHistory")

    def write_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write the history so far to ``path`` as JSON Lines (:func:`engine.check.save_jsonl`)."""
        save_jsonl(self.history(), path)

    # -- the cluster's hook ----------------------------------------------------------------

    @_guarded
    def on_new_client(self, client: Any) -> None:
        """Start recording ``client`` (called by the cluster, and for each existing client at attach)."""
        if getattr(client, "observer", None) is not None:
            return
        if isinstance(client, Producer):
            producer_tap = _ProducerTap(self, self.new_process(), client)
            client.observer = producer_tap
            producer_tap.start(client)
        elif isinstance(client, Consumer):
            consumer_tap = _ConsumerTap(self, self.new_process())
            client.observer = consumer_tap
            consumer_tap.start(client)

    # -- bookkeeping, for the taps -------------------------------------------------------------

    def new_process(self) -> int:
        """Return a process id never used before."""
        process = self._next_process
        self._next_process += 1
        return process


class _ProducerTap:
    """The observer of one producer (see :class:`engine.client.observer.ProducerObserver`)."""

    def __init__(self, rec: ClientHistory, process: int, producer: Producer) -> None:
        self.rec = rec
        self.process = process
        self.transactional = producer.transactional
        #: the open transaction op
        self.txn: PendingOp | None = None
        #: open send ops by process, in invocation order
        self.sends: dict[int, PendingOp] = {}
        #: id(batch) -> (batch, [(index in batch, record)]); the batch is kept so its id stays its own
        self.batches: dict[int, tuple[Any, list[tuple[int, PendingRecord]]]] = {}

    def fault(self, where: str, exc: Exception) -> None:
        """Note a bookkeeping failure in the recorder."""
        self.rec.fault(where, exc)

    def start(self, producer: Producer) -> None:
        """A transactional producer attached inside a transaction: open its op now."""
        if self.transactional and producer.txn.state in _IN_TRANSACTION:  # type: ignore[attr-defined]
            self.txn = self.rec.invoke(self.process, "txn")

    def _new_record(self, topic: str, partition: int | None, value: Any) -> PendingRecord:
        if self.transactional:
            if self.txn is None:
                self.txn = self.rec.invoke(self.process, "txn")
            op = self.txn
        else:
            op = self.rec.invoke(self.rec.new_process(), "send")
            self.sends[op.process] = op
        record = PendingRecord(op, topic, partition, record_value(value))
        op.sends.append(record)
        return record

    def _follow(self, batch: Any, index: int, record: PendingRecord) -> None:
        record.partition = batch.partition
        slot = self.batches.get(id(batch))
        if slot is None:
            slot = self.batches[id(batch)] = (batch, [])
        slot[1].append((index, record))

    def _finish_send(self, record: PendingRecord, outcome: str, error: str | None) -> None:
        op = record.op
        self.sends.pop(op.process, None)
        self.rec.complete(op, outcome, op.sent(offsets=outcome == "ok"), error=error)

    def _finish_txn(self, outcome: str, error: str | None) -> None:
        op, self.txn = self.txn, None
        if op is not None:
            self.rec.complete(op, outcome, op.sent(offsets=True), error=error)

    @_guarded
    def on_produce(self, producer: Producer, topic: str, partition: int, value: Any) -> object | None:
        """Invoke the record's op now (its own send op, or the open transaction's)."""
        return self._new_record(topic, partition if partition >= 0 else None, value)

    @_guarded
    def on_record_queued(self, producer: Producer, token: object, batch: Any, index: int) -> None:
        """The record's partition is fixed: follow its batch."""
        if isinstance(token, PendingRecord):
            self._follow(batch, index, token)

    @_guarded
    def on_record_failed(self, producer: Producer, token: object, partition: int, error: Exception) -> None:
        """The record was never sent: its send op fails (a transaction's outcome is decided at its end)."""
        if not isinstance(token, PendingRecord):
            return
        if token.partition is None and partition >= 0:
            token.partition = partition
        if token.op.f == "send":
            self._finish_send(token, "fail", type(error).__name__)

    @_guarded
    def on_produce_batch(self, producer: Producer, batch: Any) -> None:
        """One op per value of a ``produce_batch()`` call, all in one batch."""
        for index, value in enumerate(batch.values):
            self._follow(batch, index, self._new_record(batch.topic, batch.partition, value))

    @_guarded
    def on_batch_done(self, producer: Producer, batch: Any, base_offset: int, error: Exception | None) -> None:
        """Learn the offsets (or the error) of the batch's records; complete their send ops."""
        slot = self.batches.pop(id(batch), None)
        if slot is None or slot[0] is not batch:
            return
        if error is None:
            outcome = "ok"
        elif batch.attempts == 0 or isinstance(error, DEFINITE):
            outcome = "fail"  # never on the wire, or an error that proves it was not written
        else:
            outcome = "info"
        for index, record in slot[1]:
            record.offset = base_offset + index if error is None and base_offset >= 0 else None
            if record.op.f == "send":
                self._finish_send(record, outcome, None if error is None else type(error).__name__)

    @_guarded
    def on_transaction(self, producer: Producer, action: str, error: BaseException | None) -> None:
        """Open the transaction op at begin; complete it when a commit or an abort decides it."""
        if action == "begin":
            self.txn = self.rec.invoke(self.process, "txn")
            return
        if self.txn is None:
            return
        state = producer.txn.state  # type: ignore[attr-defined]
        if action == "commit":
            if error is None:
                self._finish_txn("ok", None)
            elif state is T.FATAL_ERROR:
                self._finish_txn("info", type(error).__name__)
            # else a timeout (commit again) or an abortable error (abort next): the op stays open
        elif action == "abort":
            if error is None or state in (T.READY, T.INITIALIZING):
                self._finish_txn("fail", "aborted")  # INITIALIZING: EndTxn went through, the epoch bump did not
            elif state is T.FATAL_ERROR:
                self._finish_txn("info", type(error).__name__)

    @_guarded
    def on_crash(self, client: Producer) -> None:
        """Whatever the producer had not delivered is gone: its open ops end ``info``."""
        for op in list(self.sends.values()):
            self.rec.complete(op, "info", op.sent(offsets=False), error="client crashed")
        self.sends.clear()
        self._finish_txn("info", "client crashed")
        self.batches.clear()


def _mode(consumer: Consumer) -> str:
    """The op an assignment change of ``consumer`` is recorded as: subscribe when its group assigns."""
    return "subscribe" if consumer.group is not None and consumer.group.subscription else "assign"


class _ConsumerTap:
    """The observer of one consumer (see :class:`engine.client.observer.ConsumerObserver`)."""

    def __init__(self, rec: ClientHistory, process: int) -> None:
        self.rec = rec
        self.process = process
        #: the keys of the last assign/subscribe op recorded
        self.keys: tuple[Key, ...] = ()
        #: the poll op of the poll()/consume() call running now
        self.poll: PendingOp | None = None

    def fault(self, where: str, exc: Exception) -> None:
        """Note a bookkeeping failure in the recorder."""
        self.rec.fault(where, exc)

    def start(self, consumer: Consumer) -> None:
        """A consumer that already reads partitions when the recorder first sees it: record them."""
        if consumer.assigned:
            self._record([(_mode(consumer), tuple(consumer.assigned))])

    def _record(self, ops: list[tuple[str, tuple[Key, ...]]]) -> None:
        """Record instant ops in order; a poll running now ends before them and goes on after."""
        running = self.poll is not None
        if self.poll is not None:
            self.rec.complete(self.poll, "ok", ())
        for f, keys in ops:
            if f == "crash":
                self.rec.instant(self.process, f, (), "info", "client crashed")
            else:
                self.rec.instant(self.process, f, keys)
                self.keys = keys
        if running:
            self.poll = self.rec.invoke(self.process, "poll")

    @_guarded
    def on_assignment(self, consumer: Consumer, f: str, restarted: tuple[Key, ...]) -> None:
        """Record the application's assignment; keys given a start offset lose their position first."""
        ops = []
        if any(k in self.keys for k in restarted):
            ops.append((f, tuple(k for k in self.keys if k not in restarted)))
        ops.append((f, tuple(consumer.assigned)))
        self._record(ops)

    @_guarded
    def on_seek(self, consumer: Consumer, key: Key) -> None:
        """A seek: the assignment without ``key``, then with it (the checker forgets its position)."""
        keys = tuple(consumer.assigned)
        f = _mode(consumer)
        self._record([(f, tuple(k for k in keys if k != key)), (f, keys)])

    @_guarded
    def on_rebalance(self, consumer: Consumer) -> None:
        """Record the group's new assignment if it changed."""
        keys = tuple(consumer.assigned)
        if keys != self.keys:
            self._record([("subscribe", keys)])

    @_guarded
    def on_poll_start(self, consumer: Consumer) -> None:
        """Invoke a poll op."""
        self.poll = self.rec.invoke(self.process, "poll")

    @_guarded
    def on_poll_end(self, consumer: Consumer, messages: list[Any], error: BaseException | None) -> None:
        """Complete the poll op with the records handed out (``fail`` with nothing if the call raised)."""
        op, self.poll = self.poll, None
        if op is None:
            return
        if error is not None:
            self.rec.complete(op, "fail", (), error=type(error).__name__)
            return
        polls = tuple(
            Poll(m.topic(), m.partition(), m.offset(), record_value(m.value()))
            for m in messages
            if m.error() is None and m.offset() >= 0
        )
        self.rec.complete(op, "ok", polls)

    @_guarded
    def on_crash(self, client: Consumer) -> None:
        """A crash op (positions forgotten), then the assignment the crash left if it changed."""
        ops: list[tuple[str, tuple[Key, ...]]] = [("crash", ())]
        keys = tuple(client.assigned)
        if keys != self.keys:
            ops.append((_mode(client), keys))
        self._record(ops)
