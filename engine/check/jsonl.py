"""Client histories as JSON Lines: one record per line, read without trusting the file.

Role
----
The file form of :mod:`engine.check.history`, documented in ``docs/history-format.md``:
:func:`save_jsonl` writes what the engine's clients recorded, :func:`load_jsonl` reads it back,
or a history written by hand or by a client that ran against a real Kafka broker.

Invariants
----------
* Loading never trusts the file: any problem raises
  :class:`~engine.check.history.HistoryFormatError` naming the line, never a bare ``KeyError``,
  ``TypeError``, ``RecursionError`` or the ``ValueError`` of an over-long integer, and its
  message stays short whatever the line holds.
* A file without a single operation is malformed too: a recorder that wrote nothing must not
  get a clean verdict.
* Partitions and offsets are never negative; the pairing rules (an invocation carries no polls,
  a completion repeats its invocation's ``f``) are :class:`~engine.check.history.History`'s.

What it does not do
-------------------
It judges nothing. :func:`load_jsonl` builds the whole history in memory; ``eos check`` does
not: :func:`analyse_jsonl` folds each line into the checkers' analysis as it reads it, with the
same checks and messages, and keeps no record.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from engine.check.analysis import Analysis, AnalysisBuilder, Rows
from engine.check.history import (
    FUNCTIONS,
    TYPES,
    History,
    HistoryFormatError,
    Key,
    Mop,
    Op,
    Pairing,
    Poll,
    Send,
    short_repr,
)

__all__ = ["analyse_jsonl", "load_jsonl", "op_from_json", "op_to_json", "save_jsonl"]


def _mop_to_json(m: Mop) -> list[Any]:
    """The micro-op's list; its record key last, only when it has one (a file without keys stays as it was)."""
    if type(m) is Send:
        row = ["send", m.topic, m.partition, m.value, m.offset]
    else:
        row = ["poll", m.topic, m.partition, m.offset, m.value]
    if m.key is not None:
        row.append(m.key)
    return row


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
        raise HistoryFormatError(f"{where}: a key must be [topic, partition], got {short_repr(raw)}")
    return (raw[0], raw[1])


def _mop(raw: object, where: str) -> Mop:
    if not isinstance(raw, list) or len(raw) not in (5, 6) or raw[0] not in ("send", "poll"):
        raise HistoryFormatError(
            f'{where}: a micro-op must be ["send", topic, partition, value, offset|null] or '
            f'["poll", topic, partition, offset, value], then optionally a key, got {short_repr(raw)}'
        )
    f, topic, partition, a, b = raw[:5]
    key = raw[5] if len(raw) == 6 else None
    if not isinstance(topic, str) or not _is_int(partition):
        raise HistoryFormatError(f"{where}: topic must be a string and partition an integer in {short_repr(raw)}")
    if f == "send":
        if not isinstance(a, str) or not (b is None or _is_int(b)):
            raise HistoryFormatError(
                f"{where}: send needs a string value and an integer or null offset: {short_repr(raw)}"
            )
        mop: Mop = Send(topic, partition, a, b, key)
    else:
        if not _is_int(a) or not isinstance(b, str):
            raise HistoryFormatError(f"{where}: poll needs an integer offset and a string value: {short_repr(raw)}")
        mop = Poll(topic, partition, a, b, key)
    if partition < 0:
        raise HistoryFormatError(f"{where}: partitions are never negative, got {short_repr(raw)}")
    if mop.offset is not None and mop.offset < 0:
        raise HistoryFormatError(f"{where}: offsets are never negative, got {short_repr(raw)}")
    if key is not None and not isinstance(key, str):
        raise HistoryFormatError(f"{where}: a record key is a string or null, got {short_repr(raw)}")
    return mop


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


def _parse_line(line: str, where: str) -> Op:
    """Return the :class:`Op` of one non-blank line, or raise :class:`HistoryFormatError`.

    JSON the parser refuses for its size or depth (an integer of thousands of digits, arrays
    nested thousands deep) is a format error like any other, not a crash.
    """
    try:
        return op_from_json(json.loads(line), where)
    except HistoryFormatError:
        raise
    except (ValueError, RecursionError) as exc:
        raise _json_error(exc, where) from None


def _json_error(exc: ValueError | RecursionError, where: str) -> HistoryFormatError:
    """Return the format error for JSON the parser refused (bad syntax, too deep, too big a number)."""
    if isinstance(exc, json.JSONDecodeError):
        return HistoryFormatError(f"{where}: not valid JSON ({exc.msg})")
    if isinstance(exc, RecursionError):
        return HistoryFormatError(f"{where}: JSON nested too deeply to be a history record")
    reason = str(exc).split(":", 1)[0]  # e.g. an integer beyond sys.get_int_max_str_digits()
    return HistoryFormatError(f"{where}: cannot read this JSON ({reason})")


def load_jsonl(path: str | os.PathLike[str]) -> History:
    """Read a JSON Lines history written by :func:`save_jsonl`, by hand, or by another client.

    Blank lines are skipped. Raises :class:`HistoryFormatError` naming the first bad line (or
    saying the file holds no operation at all), and ``OSError`` if the file cannot be read.
    """
    ops: list[Op] = []
    where: list[str] = []
    with open(path, encoding="utf-8") as lines:
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where.append(f"line {lineno}")
            ops.append(_parse_line(line, where[-1]))
    if not ops:
        raise HistoryFormatError(
            "no operations: the file is empty or blank; a history needs at least one invoke line "
            "(did the recorder write its file?)"
        )
    return History(ops, where=where)


# -- the streaming reader of ``eos check`` ---------------------------------------------------------


_NO_MOPS: tuple[Any, ...] = ()
#: The C scanner behind ``json.loads`` (see :func:`_loads`).
_SCAN_ONCE = json.JSONDecoder().scan_once
_TYPE_SET = frozenset(TYPES)
_FUNCTION_SET = frozenset(FUNCTIONS)
#: What one line holds once checked: index, process, type, f, polls, sends, keys, rebalance keys,
#: and, for an invocation that does more than announce sends, its micro-ops in order.
Record = tuple[int, int, str, str, Any, Any, tuple[Key, ...], tuple[Key, ...], tuple[Mop, ...]]


def _fast_mops(value: list[Any]) -> tuple[Any, Any, bool] | None:
    """Return (polls, sends, announces) of a well-formed ``value``, or None if anything is off.

    ``polls`` and ``sends`` are :class:`~engine.check.analysis.Rows` views of the micro-ops
    (empty tuples when there are none); ``announces`` says whether they are all sends with a
    null offset, all an invocation may hold. Only micro-ops that are all 5-item lists with a
    known tag, a string topic and value, and a non-negative integer partition and offset (or
    null, for a send) get through, with the exact types :func:`_mop` asks for. For anything
    else (micro-ops with a record key among them) the caller runs :func:`_mop` micro-op by
    micro-op, to build them or name the first problem.
    """
    n_polls = 0
    announces = True
    try:
        for tag, t, p, x, y in value:
            if type(t) is not str or type(p) is not int or p < 0:
                return None
            if tag == "send":
                if type(x) is not str:
                    return None
                if y is not None:
                    if type(y) is not int or y < 0:
                        return None
                    announces = False
            elif tag == "poll":
                if type(x) is not int or x < 0 or type(y) is not str:
                    return None
                n_polls += 1
            else:
                return None
    except (TypeError, ValueError):  # not a list of five
        return None
    if n_polls == 0:
        return _NO_MOPS, Rows(value), announces
    if n_polls == len(value):
        return Rows(value), _NO_MOPS, False
    # Both kinds (a transaction that polls and sends): one view of each, in client order.
    return Rows([m for m in value if m[0] == "poll"]), Rows([m for m in value if m[0] == "send"]), False


def _record(obj: object, lineno: int) -> Record:
    """Check one parsed line as :func:`op_from_json` does, with the same messages, and return its parts.

    The checks run in :func:`op_from_json`'s order, so the first problem of a line is the one
    named. Well-formed micro-ops are checked in one quick loop (:func:`_fast_mops`), others
    by :func:`op_from_json`'s own code, which names the problem.
    """
    if type(obj) is not dict:
        raise HistoryFormatError(f"line {lineno}: expected a JSON object, got {type(obj).__name__}")
    try:
        index, process, typ, f = obj["index"], obj["process"], obj["type"], obj["f"]
    except KeyError:
        for name in ("index", "process", "type", "f"):
            if name not in obj:
                raise HistoryFormatError(f"line {lineno}: missing field {name!r}") from None
        raise
    time_ms = obj.get("time_ms", 0)
    if not (type(index) is int and type(process) is int and type(time_ms) is int):
        raise HistoryFormatError(f"line {lineno}: index, process and time_ms must be integers")
    if type(typ) is not str or typ not in _TYPE_SET:
        raise HistoryFormatError(f"line {lineno}: type must be one of {', '.join(TYPES)}, got {typ!r}")
    if type(f) is not str or f not in _FUNCTION_SET:
        raise HistoryFormatError(f"line {lineno}: f must be one of {', '.join(FUNCTIONS)}, got {f!r}")
    value = obj.get("value") or _NO_MOPS
    if type(value) is not list and value is not _NO_MOPS:
        raise HistoryFormatError(f"line {lineno}: value must be a list of micro-ops")
    error = obj.get("error")
    if error is not None and type(error) is not str:
        json.dumps(error, sort_keys=True)  # as op_from_json does, refusals included
    keys = obj.get("keys") or _NO_MOPS
    rebalance = obj.get("rebalance_keys") or _NO_MOPS
    if (type(keys) is not list and keys is not _NO_MOPS) or (type(rebalance) is not list and rebalance is not _NO_MOPS):
        raise HistoryFormatError(f"line {lineno}: keys and rebalance_keys must be lists of [topic, partition]")
    ordered: tuple[Mop, ...] = ()
    if not value:
        polls = sends = _NO_MOPS
    else:
        split = _fast_mops(value)
        if split is not None:
            polls, sends, announces = split
            if typ == "invoke" and not announces:
                ordered = tuple(_mop(m, f"line {lineno}") for m in value)  # for the pairing to refuse
        else:
            ordered = tuple(_mop(m, f"line {lineno}") for m in value)
            polls = tuple(m for m in ordered if type(m) is Poll)
            sends = tuple(m for m in ordered if type(m) is Send)
            if typ != "invoke" or (not polls and all(m.offset is None for m in sends)):
                ordered = ()  # nothing the pairing could refuse
    key_rows = tuple(_key(k, f"line {lineno}") for k in keys) if keys else ()
    rebalance_rows = tuple(_key(k, f"line {lineno}") for k in rebalance) if rebalance else ()
    return index, process, typ, f, polls, sends, key_rows, rebalance_rows, ordered


def _loads(line: str) -> Any:
    """``json.loads(line)``, minus the work it does around its C scanner for a line that starts
    with ``{`` and ends with its object and a newline; any other line, and any line the scanner
    refuses, goes through ``json.loads`` itself, which then raises its own error.
    """
    if line[0] == "{":
        try:
            obj, end = _SCAN_ONCE(line, 0)
        except (ValueError, RecursionError, StopIteration):
            return json.loads(line)
        if end == len(line) or (end == len(line) - 1 and line[end] == "\n"):
            return obj
    return json.loads(line)


def _parse_record(line: str, lineno: int) -> Record:
    """Return the :data:`Record` of one non-blank line, or raise what :func:`_parse_line` raises."""
    try:
        return _record(_loads(line), lineno)
    except HistoryFormatError:
        raise
    except (ValueError, RecursionError) as exc:
        raise _json_error(exc, f"line {lineno}") from None


def analyse_jsonl(path: str | os.PathLike[str]) -> Analysis:
    """Read a JSON Lines history and return its :class:`~engine.check.analysis.Analysis`, in one pass.

    What ``eos check`` runs: the verdict, and the errors with their messages, are those of
    :func:`~engine.check.analysis.analyse` over :func:`load_jsonl`'s history, but no history
    is built. Each line is checked and folded into the analysis as it is read, then dropped;
    only the invocations still in flight are held (a completion without micro-ops takes its
    invocation's).

    As with :func:`load_jsonl`, every line is checked before the pairing is judged: a malformed
    line further down is reported before a pairing error (after the first pairing error, lines
    are only checked, no longer analysed).

    Raises
    ------
    HistoryFormatError
        Naming the first bad line, or saying the file holds no operation at all.
    OSError, UnicodeDecodeError
        If the file cannot be read, or is not UTF-8.
    """
    with gc_paused():
        return _analyse_lines(path)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Switch the cyclic garbage collector off for the block, and back on if it was on.

    Reading and checking a history build millions of short-lived lists and tuples and no
    reference cycle: the collector would only walk them again and again.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _analyse_lines(path: str | os.PathLike[str]) -> Analysis:
    """The body of :func:`analyse_jsonl`."""
    builder = AnalysisBuilder(keep_completions=False)
    add = builder.add
    pairing = Pairing()
    # position -> (index, process, f, sends, keys, rebalance keys) of each invocation in flight
    in_flight: dict[int, tuple[int, int, str, Any, tuple[Key, ...], tuple[Key, ...]]] = {}
    problem: HistoryFormatError | None = None
    pos = -1
    with open(path, encoding="utf-8") as lines:
        for lineno, line in enumerate(lines, start=1):
            if line.isspace() or not line:
                continue
            index, process, typ, f, polls, sends, keys, rebalance, ordered = _parse_record(line, lineno)
            pos += 1
            if problem is not None:
                continue
            try:
                inv = pairing.add(pos, index, process, typ, f, ordered)
            except HistoryFormatError as exc:
                problem = HistoryFormatError(f"line {lineno}: {exc}")
                continue
            if inv is None:
                in_flight[pos] = (index, process, f, sends, keys, rebalance)
                continue
            announced = in_flight.pop(inv)
            if not polls and not sends and (announced[3] or announced[4]):
                sends, keys = announced[3], keys or announced[4]
            add(index, process, typ, f, polls, sends, keys, rebalance)
    if pos < 0:
        raise HistoryFormatError(
            "no operations: the file is empty or blank; a history needs at least one invoke line "
            "(did the recorder write its file?)"
        )
    if problem is not None:
        raise problem
    for p in pairing.in_flight():
        index, process, f, sends, keys, rebalance = in_flight[p]
        add(index, process, "info", f, (), sends, keys, rebalance)
    return builder.finish()
