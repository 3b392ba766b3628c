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
offset-or-None) and :class:`Poll` (topic, partition, offset, value). A *key* is the pair
``(topic, partition)``; values are opaque strings, unique per key.

The file form is JSON Lines, one record per line; ``docs/history-format.md`` documents it.

Invariants
----------
* Records are immutable (``NamedTuple``), cheap enough for histories of millions of mops.
* :class:`History` keeps records in index order and pairs each completion with its invocation
  by process (a process runs one operation at a time).
* Loading never trusts the file: any structural problem raises :class:`HistoryFormatError` with
  the line number, never a bare ``KeyError`` or ``TypeError``.

What it does not do
-------------------
It does not judge anything (that is :mod:`engine.check.checker`), it does not know how the
engine encodes producer, transaction or sequence in values, and it reads no clock: every time
is simulated milliseconds supplied by the caller.
"""

from __future__ import annotations

import json
import os
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
    "Poll",
    "Send",
    "load_jsonl",
    "save_jsonl",
]

Key = tuple[str, int]

#: Completion types. ``fail`` means definitely did not happen; ``info`` means unknown.
COMPLETION_TYPES = ("ok", "fail", "info")
#: Every record type, invocations included.
TYPES = ("invoke", *COMPLETION_TYPES)
#: Operation functions a client may record.
FUNCTIONS = ("send", "poll", "txn", "assign", "subscribe", "crash")


class Send(NamedTuple):
    """One record sent to ``(topic, partition)``; ``offset`` is None until acknowledged."""

    topic: str
    partition: int
    value: str
    offset: int | None = None


class Poll(NamedTuple):
    """One record returned by a poll: ``value`` found at ``offset`` of ``(topic, partition)``."""

    topic: str
    partition: int
    offset: int
    value: str


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
        If indexes are not increasing or a completion has no pending invocation.
    """

    __slots__ = ("_completion_of", "_invocation_of", "_ops")

    def __init__(self, ops: Iterable[Op] = ()) -> None:
        self._ops: tuple[Op, ...] = tuple(ops)
        self._invocation_of: dict[int, int] = {}
        self._completion_of: dict[int, int] = {}
        pending: dict[int, int] = {}
        last_index = -1
        for pos, op in enumerate(self._ops):
            if op.index <= last_index:
                raise HistoryFormatError(f"op index {op.index} does not increase (previous {last_index})")
            last_index = op.index
            if op.type == "invoke":
                if op.process in pending:
                    raise HistoryFormatError(
                        f"op {op.index}: process {op.process} invoked again before op "
                        f"{self._ops[pending[op.process]].index} completed"
                    )
                pending[op.process] = pos
            else:
                inv = pending.pop(op.process, None)
                if inv is None:
                    raise HistoryFormatError(f"op {op.index}: {op.type} completion without an invocation")
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
        return isinstance(other, History) and self._ops == other._ops

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
            If ``f`` is unknown or ``process`` already has an operation in flight.
        """
        if f not in FUNCTIONS:
            raise ValueError(f"unknown op function {f!r}; expected one of {', '.join(FUNCTIONS)}")
        if process in self._pending:
            raise ValueError(f"process {process} already has op {self._pending[process].index} in flight")
        op = Op(len(self._ops), process, "invoke", f, time_ms, tuple(mops), tuple(keys))
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


# --------------------------------------------------------------------------------------------
# JSON Lines
# --------------------------------------------------------------------------------------------


def _mop_to_json(m: Mop) -> list[Any]:
    if type(m) is Send:
        return ["send", m.topic, m.partition, m.value, m.offset]
    return ["poll", m.topic, m.partition, m.offset, m.value]


def op_to_json(op: Op) -> dict[str, Any]:
    """Return the JSON object of one record (see ``docs/history-format.md``)."""
    obj: dict[str, Any] = {
        "index": op.index,
        "time_ms": op.time_ms,
        "process": op.process,
        "type": op.type,
        "f": op.f,
        "value": [_mop_to_json(m) for m in op.mops],
    }
    if op.keys:
        obj["keys"] = [list(k) for k in op.keys]
    if op.rebalance_keys:
        obj["rebalance_keys"] = [list(k) for k in op.rebalance_keys]
    if op.error is not None:
        obj["error"] = op.error
    return obj


def save_jsonl(history: Iterable[Op], path: str | os.PathLike[str]) -> None:
    """Write ``history`` to ``path`` as JSON Lines, one record per line, in index order."""
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    with open(path, "w", encoding="utf-8") as out:
        for op in history:
            out.write(dumps(op_to_json(op)))
            out.write("\n")


def _is_int(x: object) -> bool:
    return type(x) is int


def _key(raw: object, where: str) -> Key:
    if not (isinstance(raw, list) and len(raw) == 2 and isinstance(raw[0], str) and _is_int(raw[1])):
        raise HistoryFormatError(f"{where}: a key must be [topic, partition], got {raw!r}")
    return (raw[0], raw[1])


def _mop(raw: object, where: str) -> Mop:
    if not isinstance(raw, list) or len(raw) != 5 or raw[0] not in ("send", "poll"):
        raise HistoryFormatError(
            f'{where}: a micro-op must be ["send", topic, partition, value, offset|null] or '
            f'["poll", topic, partition, offset, value], got {raw!r}'
        )
    f, topic, partition, a, b = raw
    if not isinstance(topic, str) or not _is_int(partition):
        raise HistoryFormatError(f"{where}: topic must be a string and partition an integer in {raw!r}")
    if f == "send":
        if not isinstance(a, str) or not (b is None or _is_int(b)):
            raise HistoryFormatError(f"{where}: send needs a string value and an integer or null offset: {raw!r}")
        return Send(topic, partition, a, b)
    if not _is_int(a) or not isinstance(b, str):
        raise HistoryFormatError(f"{where}: poll needs an integer offset and a string value: {raw!r}")
    return Poll(topic, partition, a, b)


def op_from_json(obj: object, where: str = "record") -> Op:
    """Return the :class:`Op` of one JSON object; raise :class:`HistoryFormatError` if malformed."""
    if not isinstance(obj, dict):
        raise HistoryFormatError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for name in ("index", "process", "type", "f"):
        if name not in obj:
            raise HistoryFormatError(f"{where}: missing field {name!r}")
    index, process, typ, f = obj["index"], obj["process"], obj["type"], obj["f"]
    time_ms = obj.get("time_ms", 0)
    if not (_is_int(index) and _is_int(process) and _is_int(time_ms)):
        raise HistoryFormatError(f"{where}: index, process and time_ms must be integers")
    if typ not in TYPES:
        raise HistoryFormatError(f"{where}: type must be one of {', '.join(TYPES)}, got {typ!r}")
    if f not in FUNCTIONS:
        raise HistoryFormatError(f"{where}: f must be one of {', '.join(FUNCTIONS)}, got {f!r}")
    value = obj.get("value") or []
    if not isinstance(value, list):
        raise HistoryFormatError(f"{where}: value must be a list of micro-ops")
    error = obj.get("error")
    if error is not None and not isinstance(error, str):
        error = json.dumps(error, sort_keys=True)
    keys = obj.get("keys") or []
    rebalance = obj.get("rebalance_keys") or []
    if not isinstance(keys, list) or not isinstance(rebalance, list):
        raise HistoryFormatError(f"{where}: keys and rebalance_keys must be lists of [topic, partition]")
    return Op(
        index,
        process,
        typ,
        f,
        time_ms,
        tuple(_mop(m, where) for m in value),
        tuple(_key(k, where) for k in keys),
        tuple(_key(k, where) for k in rebalance),
        error,
    )


def load_jsonl(path: str | os.PathLike[str]) -> History:
    """Read a JSON Lines history written by :func:`save_jsonl`, by hand, or by another client.

    Blank lines are skipped. Raises :class:`HistoryFormatError` naming the first bad line, and
    ``OSError`` if the file cannot be read.
    """
    ops: list[Op] = []
    with open(path, encoding="utf-8") as lines:
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"line {lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise HistoryFormatError(f"{where}: not valid JSON ({exc.msg})") from None
            ops.append(op_from_json(obj, where))
    return History(ops)
