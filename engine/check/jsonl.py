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
It judges nothing, and it does not stream: the whole history is built in memory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from engine.check.history import (
    FUNCTIONS,
    TYPES,
    History,
    HistoryFormatError,
    Key,
    Mop,
    Op,
    Poll,
    Send,
    short_repr,
)

__all__ = ["load_jsonl", "op_from_json", "op_to_json", "save_jsonl"]


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
        raise HistoryFormatError(f"{where}: a key must be [topic, partition], got {short_repr(raw)}")
    return (raw[0], raw[1])


def _mop(raw: object, where: str) -> Mop:
    if not isinstance(raw, list) or len(raw) != 5 or raw[0] not in ("send", "poll"):
        raise HistoryFormatError(
            f'{where}: a micro-op must be ["send", topic, partition, value, offset|null] or '
            f'["poll", topic, partition, offset, value], got {short_repr(raw)}'
        )
    f, topic, partition, a, b = raw
    if not isinstance(topic, str) or not _is_int(partition):
        raise HistoryFormatError(f"{where}: topic must be a string and partition an integer in {short_repr(raw)}")
    if f == "send":
        if not isinstance(a, str) or not (b is None or _is_int(b)):
            raise HistoryFormatError(
                f"{where}: send needs a string value and an integer or null offset: {short_repr(raw)}"
            )
        mop: Mop = Send(topic, partition, a, b)
    else:
        if not _is_int(a) or not isinstance(b, str):
            raise HistoryFormatError(f"{where}: poll needs an integer offset and a string value: {short_repr(raw)}")
        mop = Poll(topic, partition, a, b)
    if partition < 0:
        raise HistoryFormatError(f"{where}: partitions are never negative, got {short_repr(raw)}")
    if mop.offset is not None and mop.offset < 0:
        raise HistoryFormatError(f"{where}: offsets are never negative, got {short_repr(raw)}")
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
    except json.JSONDecodeError as exc:
        raise HistoryFormatError(f"{where}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise HistoryFormatError(f"{where}: JSON nested too deeply to be a history record") from None
    except ValueError as exc:  # e.g. an integer beyond sys.get_int_max_str_digits()
        reason = str(exc).split(":", 1)[0]
        raise HistoryFormatError(f"{where}: cannot read this JSON ({reason})") from None


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
