"""Client histories: every client operation as an invocation and a completion (Jepsen style).

Role
----
This module is the data model that the black-box checkers read. A *history* is a list of
:class:`Op` records in the order they happened. Each client operation appears twice: once as
an ``invoke`` record when the client starts it, and once as a completion record (``ok``,
``fail`` or ``info``) when the client learns its outcome:

* ``ok``   - the operation happened (a send was acknowledged, a transaction committed, a poll
  returned these records);
* ``fail`` - the operation definitely did not happen (for a transaction: it aborted);
* ``info`` - the outcome is unknown (a timeout, a lost connection, ``NotLeaderOrFollower`` on
  produce, KAFKA-13574).

An operation carries micro-operations (*mops*): :class:`Send` (topic, partition, value,
offset-or-None) and :class:`Poll` (topic, partition, offset, value), each with an optional
record key (``key``, text or None). A *key* of the history is the pair ``(topic,
partition)``; values are opaque strings, unique per key. Record keys serve only the
end-to-end promises that match by key (:mod:`engine.check.promises`); no checker reads them.

The file form is JSON Lines, one record per line (:mod:`engine.check.jsonl` reads and writes
it); ``docs/history-format.md`` documents it.

Invariants
----------
* Records are immutable (``NamedTuple``), cheap enough for histories of millions of mops.
* A micro-op's record ``key`` rides beside its tuple, not in it: a :class:`Send` or
  :class:`Poll` unpacks, compares, sorts and hashes as its four fields, with or without a
  key. The checkers unpack micro-ops as four-field rows (and read the file's rows without
  building records), so a history judges the same with or without keys. ``_replace`` keeps
  the key; ``tuple(m)`` and ``_make`` drop it.
* :class:`History` keeps records in index order and pairs each completion with its invocation
  by process (a process runs one operation at a time).
* Building a :class:`History` checks the pairing; any problem raises
  :class:`HistoryFormatError` (naming the file line when the records came from a file).
* An invocation only announces: it carries no polls and its sends have no offset, because an
  empty completion takes its invocation's micro-ops. A completion has its invocation's ``f``.
  Offsets and partitions are never negative.

What it does not do
-------------------
It does not judge anything (that is :mod:`engine.check.checker`), it does not know how the
engine encodes producer, transaction or sequence in values, and it reads no clock: every time
is simulated milliseconds supplied by the caller.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

__all__ = [
    "COMPLETION_TYPES",
    "FUNCTIONS",
    "History",
    "HistoryFormatError",
    "HistoryRecorder",
    "Key",
    "Mop",
    "Op",
    "Pairing",
    "Poll",
    "Send",
    "short_repr",
]

Key = tuple[str, int]

#: Completion types. ``fail`` means definitely did not happen; ``info`` means unknown.
COMPLETION_TYPES = ("ok", "fail", "info")
#: Every record type, invocations included.
TYPES = ("invoke", *COMPLETION_TYPES)
#: Operation functions a client may record.
FUNCTIONS = ("send", "poll", "txn", "assign", "subscribe", "crash")


class _SendRow(NamedTuple):
    topic: str
    partition: int
    value: str
    offset: int | None = None


class _PollRow(NamedTuple):
    topic: str
    partition: int
    offset: int
    value: str


class Send(_SendRow):
    """One record sent to ``(topic, partition)``; ``offset`` is None until acknowledged.

    ``key`` is the record's key as text, or None when it has none or none was recorded. It
    rides beside the tuple, not in it (see the module's invariants): ``Send("t", 0, "a", 3,
    key="k")`` unpacks to ``("t", 0, "a", 3)`` and equals ``Send("t", 0, "a", 3)``.
    """

    key: str | None = None

    def __new__(cls, topic: str, partition: int, value: str, offset: int | None = None, key: str | None = None) -> Any:
        """Make the record; ``key`` is kept only when it is not None."""
        self = tuple.__new__(cls, (topic, partition, value, offset))
        if key is not None:
            self.key = key
        return self

    def _replace(self, **fields: Any) -> Send:
        key = fields.pop("key", self.key)
        return Send(*_SendRow._replace(self, **fields), key=key)

    def __repr__(self) -> str:
        return _with_key(super().__repr__(), self.key)


class Poll(_PollRow):
    """One record returned by a poll: ``value`` found at ``offset`` of ``(topic, partition)``.

    ``key`` is the record's key as text, or None; like :class:`Send`'s, it is no part of the tuple.
    """

    key: str | None = None

    def __new__(cls, topic: str, partition: int, offset: int, value: str, key: str | None = None) -> Any:
        """Make the record; ``key`` is kept only when it is not None."""
        self = tuple.__new__(cls, (topic, partition, offset, value))
        if key is not None:
            self.key = key
        return self

    def _replace(self, **fields: Any) -> Poll:
        key = fields.pop("key", self.key)
        return Poll(*_PollRow._replace(self, **fields), key=key)

    def __repr__(self) -> str:
        return _with_key(super().__repr__(), self.key)


def _with_key(shown: str, key: str | None) -> str:
    return shown if key is None else f"{shown[:-1]}, key={key!r})"


Mop = Send | Poll


class Op(NamedTuple):
    """One history record: an invocation or a completion of a client operation.

    Attributes
    ----------
    index : int
        Position in the history, starting at 0, strictly increasing.
    process : int
        The client (logical process) that ran the operation; one operation at a time.
    type : str
        ``invoke``, ``ok``, ``fail`` or ``info``.
    f : str
        ``send``, ``poll``, ``txn``, ``assign``, ``subscribe`` or ``crash``.
    time_ms : int
        Simulated time at which the record was made.
    mops : tuple of Send and Poll
        Micro-operations. An invocation lists the sends it will make (offsets None); a
        completion lists sends with the offsets learnt and every record polled, in the order the
        client saw them.
    keys : tuple of Key
        For ``assign`` / ``subscribe``: the keys assigned or subscribed to. Empty otherwise.
    rebalance_keys : tuple of Key
        Keys whose assignment changed while the operation ran (the op's rebalance log). They
        are exempt from the within-op poll checks.
    error : str or None
        The error the client saw, for ``fail`` and ``info`` completions.
    """

    index: int
    process: int
    type: str
    f: str
    time_ms: int
    mops: tuple[Mop, ...] = ()
    keys: tuple[Key, ...] = ()
    rebalance_keys: tuple[Key, ...] = ()
    error: str | None = None

    @property
    def txn_outcome(self) -> str | None:
        """The transaction outcome as the client saw it: committed, aborted, unknown or None.

        Only ``txn`` completions have one; it is derived from the completion type so that the
        file cannot say two contradicting things.
        """
        if self.f != "txn" or self.type == "invoke":
            return None
        return {"ok": "committed", "fail": "aborted", "info": "unknown"}[self.type]


class HistoryFormatError(ValueError):
    """A history (file or records) is malformed; the message names the line and the problem."""


class History(Sequence[Op]):
    """An immutable, index-ordered list of :class:`Op` records with invocation pairing.

    Parameters
    ----------
    ops : iterable of Op
        Records in index order. Indexes must be strictly increasing (gaps are allowed, so a
        history can be filtered); a completion must follow an invocation of the same process.

    Raises
    ------
    HistoryFormatError
        If indexes are not increasing, a completion has no pending invocation or another ``f``
        than its invocation, or an invocation carries a poll or a send offset.
    """

    __slots__ = ("_completion_of", "_invocation_of", "_ops")

    def __init__(self, ops: Iterable[Op] = (), *, where: Sequence[str] = ()) -> None:
        """Pair the records; ``where`` names each record's source (``"line 7"``) in error messages."""
        self._ops: tuple[Op, ...] = tuple(ops)
        self._invocation_of: dict[int, int] = {}
        self._completion_of: dict[int, int] = {}
        pairing = Pairing()
        for pos, op in enumerate(self._ops):
            try:
                inv = pairing.add(pos, op.index, op.process, op.type, op.f, op.mops)
            except HistoryFormatError as exc:
                if pos < len(where):
                    raise HistoryFormatError(f"{where[pos]}: {exc}") from None
                raise
            if inv is not None:
                self._invocation_of[pos] = inv
                self._completion_of[inv] = pos

    def __len__(self) -> int:
        return len(self._ops)

    def __getitem__(self, i):  # type: ignore[override]
        return self._ops[i]

    def __iter__(self) -> Iterator[Op]:
        return iter(self._ops)

    def __repr__(self) -> str:
        return f"History({len(self._ops)} records)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, History) and self._ops == other.ops

    __hash__ = None  # type: ignore[assignment]

    @property
    def ops(self) -> tuple[Op, ...]:
        """All records, invocations and completions, in index order."""
        return self._ops

    def completions(self) -> Iterator[Op]:
        """Yield one completion per operation, in completion order.

        A completion whose ``mops`` are empty takes its invocation's mops, so a client that
        crashed before learning anything still contributes the sends it attempted. An
        invocation that never completed (the history ended first) is yielded as an ``info``
        completion, at the end, in invocation order.
        """
        ops = self._ops
        for pos, op in enumerate(ops):
            if op.type == "invoke":
                continue
            if not op.mops:
                inv = ops[self._invocation_of[pos]]
                if inv.mops or inv.keys:
                    op = op._replace(mops=inv.mops, keys=op.keys or inv.keys)
            yield op
        for pos, op in enumerate(ops):
            if op.type == "invoke" and pos not in self._completion_of:
                yield op._replace(type="info", error=op.error or "never completed")

    def invocation(self, completion_pos: int) -> Op:
        """Return the invocation of the completion at list position ``completion_pos``."""
        return self._ops[self._invocation_of[completion_pos]]


class Pairing:
    """The pairing rules, checked one record at a time in history order.

    :class:`History` runs it over its records; the file reader
    (:func:`engine.check.jsonl.analyse_jsonl`) runs it over the lines as they come, so both
    refuse the same histories with the same messages.
    """

    __slots__ = ("_last_index", "_pending")

    def __init__(self) -> None:
        self._last_index = -1
        # process -> (position, index, f) of its invocation still in flight
        self._pending: dict[int, tuple[int, int, str]] = {}

    def add(self, pos: int, index: int, process: int, type: str, f: str, mops: Iterable[Mop] = ()) -> int | None:
        """Check the record at position ``pos``; return its invocation's position if it is a completion.

        ``mops`` are an invocation's micro-ops (they may only announce sends); a caller that
        already knows they do may pass ``()``.

        Raises
        ------
        HistoryFormatError
            If the index does not increase, a process invokes twice, an invocation carries a
            poll or an offset, or a completion has no pending invocation or another ``f``.
        """
        if index <= self._last_index:
            raise HistoryFormatError(f"op index {index} does not increase (previous {self._last_index})")
        self._last_index = index
        pending = self._pending
        if type == "invoke":
            held = pending.get(process)
            if held is not None:
                raise HistoryFormatError(f"op {index}: process {process} invoked again before op {held[1]} completed")
            if mops:
                _check_invocation_mops(mops, f"op {index}")
            pending[process] = (pos, index, f)
            return None
        held = pending.pop(process, None)
        if held is None:
            raise HistoryFormatError(f"op {index}: {type} completion without an invocation")
        if f != held[2]:
            raise HistoryFormatError(
                f"op {index}: an {type} completion with f={f!r} cannot complete op "
                f"{held[1]}, a {held[2]!r}; a completion repeats its invocation's f"
            )
        return held[0]

    def in_flight(self) -> list[int]:
        """Positions of the invocations not completed so far, in history order."""
        return sorted(held[0] for held in self._pending.values())


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlong = 40


def short_repr(raw: object) -> str:
    """Return a short repr of a (possibly huge or deeply nested) value for an error message."""
    return _REPR.repr(raw)


def _check_invocation_mops(mops: Iterable[Mop], where: str) -> None:
    """Raise :class:`HistoryFormatError` unless ``mops`` only announce sends (no polls, no offsets).

    An empty completion takes its invocation's micro-ops, so a poll or an offset here would
    become a read or an acknowledgement nobody observed.
    """
    for m in mops:
        if type(m) is Poll:
            shown = short_repr(["poll", *m])
            raise HistoryFormatError(
                f"{where}: an invocation carries no polls (they belong in the completion): {shown}"
            )
        if m.offset is not None:
            shown = short_repr(["send", *m])
            raise HistoryFormatError(f"{where}: send offsets are null in an invocation (known only later): {shown}")


class HistoryRecorder:
    """Builds a :class:`History` while clients run; the engine's clients call it.

    Indexes are handed out in call order, so the history is totally ordered by construction.
    Times are simulated milliseconds supplied by the caller; the recorder reads no clock.

    Examples
    --------
    >>> rec = HistoryRecorder()
    >>> op = rec.invoke(0, "send", [Send("t", 0, "a")], time_ms=0)
    >>> _ = rec.complete(op, "ok", [Send("t", 0, "a", 0)], time_ms=3)
    >>> len(rec.history())
    2
    """

    __slots__ = ("_ops", "_pending")

    def __init__(self) -> None:
        self._ops: list[Op] = []
        self._pending: dict[int, Op] = {}

    def invoke(
        self,
        process: int,
        f: str,
        mops: Iterable[Mop] = (),
        time_ms: int = 0,
        *,
        keys: Iterable[Key] = (),
    ) -> Op:
        """Record the start of an operation and return its invocation record.

        Raises
        ------
        ValueError
            If ``f`` is unknown, ``process`` already has an operation in flight, or ``mops``
            holds a poll or a send with an offset (an invocation only announces its sends).
        """
        if f not in FUNCTIONS:
            raise ValueError(f"unknown op function {f!r}; expected one of {', '.join(FUNCTIONS)}")
        if process in self._pending:
            raise ValueError(f"process {process} already has op {self._pending[process].index} in flight")
        mops = tuple(mops)
        _check_invocation_mops(mops, f"process {process} {f}")
        op = Op(len(self._ops), process, "invoke", f, time_ms, mops, tuple(keys))
        self._ops.append(op)
        self._pending[process] = op
        return op

    def complete(
        self,
        invocation: Op,
        type: str,  # the Jepsen field name, kept on purpose
        mops: Iterable[Mop] | None = None,
        time_ms: int = 0,
        *,
        error: str | None = None,
        keys: Iterable[Key] | None = None,
        rebalance_keys: Iterable[Key] = (),
    ) -> Op:
        """Record the completion of ``invocation`` and return the completion record.

        Parameters
        ----------
        invocation : Op
            The record :meth:`invoke` returned.
        type : str
            ``ok``, ``fail`` or ``info``.
        mops : iterable of Mop, optional
            Sends with their offsets and every polled record; None repeats the invocation's.

        Raises
        ------
        ValueError
            If ``type`` is not a completion type or the invocation is not in flight.
        """
        if type not in COMPLETION_TYPES:
            raise ValueError(f"completion type must be one of {', '.join(COMPLETION_TYPES)}, not {type!r}")
        if self._pending.get(invocation.process) is not invocation:
            raise ValueError(f"op {invocation.index} is not in flight")
        del self._pending[invocation.process]
        op = Op(
            len(self._ops),
            invocation.process,
            type,
            invocation.f,
            time_ms,
            invocation.mops if mops is None else tuple(mops),
            invocation.keys if keys is None else tuple(keys),
            tuple(rebalance_keys),
            error,
        )
        self._ops.append(op)
        return op

    def __len__(self) -> int:
        """Return how many records (invocations and completions) were made so far."""
        return len(self._ops)

    def history(self) -> History:
        """Return the records so far as a :class:`History` (in-flight ops stay invocations)."""
        return History(self._ops)
