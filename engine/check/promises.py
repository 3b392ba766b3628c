"""End-to-end promises: every committed record of one topic becomes exactly one committed record of another.

Role
----
The history checkers judge what clients sent and read; they do not know what an application
is *for*. A consume-transform-produce application promises more: each record of its input
topic becomes one record of its output topic. :class:`Promise` says so, :func:`parse_promise`
reads its one string form (``"payments -> ledger"``, ``"payments -> ledger by value"``, with
``and nothing else``) for the pytest plugin and ``eos check`` alike, and :func:`check_promises`
judges it on the committed records of both topics (a final read_committed read):

* ``lost-input``: an input has no committed output; one anomaly per input partition, naming
  each input offset and its key;
* ``duplicated-output``: an input has two or more committed outputs; one anomaly per input,
  naming its offsets and every output ``topic/partition@offset``;
* ``unexpected-output`` (only with ``unexpected=True``, ``and nothing else``): an output
  matches no input; one anomaly per output partition.

Records are matched by key (the default), by value, or by a function of ``(key, value)`` (one
for both sides, or a pair: input, output). Inputs with the same match count once: the promise
is per distinct match, which is what a deduplicator promises.

:func:`scope_history` keeps only the named topics of a history, so the history checkers can
leave out a topic that carries duplicates on purpose.

Invariants
----------
Pure and deterministic: records are judged in (topic, partition, offset) order, anomalies come
out sorted, nothing iterates in hash order. Match results need only be hashable and comparable
with ``==``; they are shown with ``repr``.

What it does not do
-------------------
It reads no cluster: the caller gives the committed records (:func:`committed_reads` derives
them from a history's ``ok`` polls, with the record keys the polls recorded, if any:
``docs/history-format.md``). It does not judge order (see :mod:`engine.check.copier` for
lineage-carrying copiers).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from engine.check.anomaly import Anomaly
from engine.check.history import History, Key, Op, Poll

__all__ = [
    "CommittedRecord",
    "Promise",
    "check_promises",
    "committed_reads",
    "keyless",
    "parse_promise",
    "promises_of",
    "scope_history",
]

#: How many records one anomaly's message names; its offsets and count stay exact.
_SHOWN = 20
#: ``IN -> OUT [by key|by value] [and nothing else]``; topic names as Kafka allows them.
_SYNTAX = re.compile(
    r"^\s*(?P<src>[A-Za-z0-9._-]+)\s*->\s*(?P<dst>[A-Za-z0-9._-]+)"
    r"(?:\s+by\s+(?P<by>key|value))?(?P<only>\s+and\s+nothing\s+else)?\s*$"
)
_FORM = "'IN -> OUT', then optionally 'by key' (the default) or 'by value', then optionally 'and nothing else'"

Match = Callable[[Any, Any], Any]


class CommittedRecord(NamedTuple):
    """One committed record: ``key`` and ``value`` at ``offset`` of ``(topic, partition)``."""

    topic: str
    partition: int
    offset: int
    key: Any = None
    value: Any = None


def _by_key(key: Any, value: Any) -> Any:
    return key


def _by_value(key: Any, value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Promise:
    """Every committed record of ``source`` becomes exactly one committed record of ``target``.

    Parameters
    ----------
    source, target : str
        The input and output topics.
    match : ``"key"``, ``"value"``, a function, or a pair of functions
        How an input and an output are paired: equal keys, equal values, equal ``f(key, value)``,
        or ``f_in(key, value)`` of the input equal to ``f_out(key, value)`` of the output.
    unexpected : bool
        Also report outputs that match no input (``unexpected-output``).
    """

    source: str
    target: str
    match: str | Match | tuple[Match, Match] = "key"
    unexpected: bool = False

    def __post_init__(self) -> None:
        for name in ("source", "target"):
            topic = getattr(self, name)
            if not isinstance(topic, str) or not topic:
                raise ValueError(f"a promise's {name} is a topic name, got {topic!r}")
        m = self.match
        ok = m in ("key", "value") or callable(m)
        ok = ok or (isinstance(m, tuple) and len(m) == 2 and all(callable(f) for f in m))
        if not ok:
            raise ValueError(
                f"match is 'key', 'value', a function of (key, value), or a pair of them (input, output); got {m!r}"
            )

    @property
    def by(self) -> str:
        """How records are matched, in words: ``key``, ``value`` or ``function``."""
        return self.match if isinstance(self.match, str) else "function"

    def matchers(self) -> tuple[Match, Match]:
        """Return the input's and the output's match functions."""
        m = self.match
        if m == "key":
            return _by_key, _by_key
        if m == "value":
            return _by_value, _by_value
        if isinstance(m, tuple):
            return m
        assert callable(m)
        return m, m

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} by {self.by}" + (" and nothing else" if self.unexpected else "")


def parse_promise(text: str) -> Promise:
    """Read a promise's string form: ``"payments -> ledger"``, ``"payments -> ledger by value and nothing else"``.

    Raises
    ------
    ValueError
        For anything else, in one line naming the form.
    """
    if not isinstance(text, str):
        raise ValueError(f"a promise is a string such as 'payments -> ledger', or a Promise; got {text!r}")
    m = _SYNTAX.match(text)
    if m is None:
        raise ValueError(f"cannot read the promise {text!r}: expected {_FORM}")
    return Promise(m["src"], m["dst"], m["by"] or "key", unexpected=m["only"] is not None)


def promises_of(spec: str | Promise | Iterable[str | Promise] | None) -> tuple[Promise, ...]:
    """Return the promises of ``spec``: None, one string or :class:`Promise`, or a list of them.

    Raises
    ------
    ValueError
        For a string :func:`parse_promise` refuses or an item of another type.
    """
    if spec is None:
        return ()
    items = [spec] if isinstance(spec, (str, Promise)) else list(spec)
    return tuple(p if isinstance(p, Promise) else parse_promise(p) for p in items)


def _show(x: Any) -> str:
    if isinstance(x, (bytes, bytearray)):
        try:
            return repr(bytes(x).decode("utf-8"))
        except UnicodeDecodeError:
            return repr(bytes(x))
    return repr(x)


def _apply(f: Match, r: CommittedRecord, side: str, promise: Promise) -> Any:
    try:
        out = f(r.key, r.value)
        hash(out)
    except Exception as exc:
        where = f"{r.topic}/{r.partition}@{r.offset}"
        raise ValueError(f"promise {promise}: the {side} match function failed on {where}: {exc!r}") from exc
    return out


def check_promises(records: Iterable[tuple], promises: Sequence[Promise]) -> list[Anomaly]:
    """Return the ``lost-input``, ``duplicated-output`` and ``unexpected-output`` anomalies of ``promises``.

    Parameters
    ----------
    records : iterable of CommittedRecord-like tuples
        ``(topic, partition, offset, key, value)`` of every committed record read; a record read
        twice (same topic, partition, offset) counts once.
    promises : sequence of Promise
        The promises to judge.

    Raises
    ------
    ValueError
        If a match function raises or returns something unhashable.
    """
    by_topic: dict[str, dict[tuple[int, int], CommittedRecord]] = {}
    for r in records:
        rec = CommittedRecord(*r)
        by_topic.setdefault(rec.topic, {}).setdefault((rec.partition, rec.offset), rec)
    out: list[Anomaly] = []
    for promise in promises:
        f_in, f_out = promise.matchers()
        inputs = [by_topic.get(promise.source, {})[k] for k in sorted(by_topic.get(promise.source, {}))]
        outputs = [by_topic.get(promise.target, {})[k] for k in sorted(by_topic.get(promise.target, {}))]
        # match -> its inputs, in input order (dicts keep insertion order: deterministic)
        wanted: dict[Any, list[CommittedRecord]] = {}
        for r in inputs:
            wanted.setdefault(_apply(f_in, r, "input", promise), []).append(r)
        got: dict[Any, list[CommittedRecord]] = {}
        stray: list[CommittedRecord] = []
        for r in outputs:
            m = _apply(f_out, r, "output", promise)
            if m in wanted:
                got.setdefault(m, []).append(r)
            else:
                stray.append(r)
        lost: dict[Key, list[CommittedRecord]] = {}
        for m, ins in wanted.items():
            outs = got.get(m, [])
            if not outs:
                for r in ins:
                    lost.setdefault((r.topic, r.partition), []).append(r)
            elif len(outs) > 1:
                out.append(_duplicated(promise, m, ins, outs))
        out.extend(_lost(promise, key, rs) for key, rs in lost.items())
        if promise.unexpected:
            extra: dict[Key, list[CommittedRecord]] = {}
            for r in stray:
                extra.setdefault((r.topic, r.partition), []).append(r)
            out.extend(_unexpected(promise, key, rs) for key, rs in extra.items())
    return sorted(out, key=lambda a: (a.kind, a.key or ("", -1), a.offsets))


def _named(r: CommittedRecord, promise: Promise) -> str:
    what = f"value {_show(r.value)}" if promise.by == "value" else f"key {_show(r.key)}"
    return f"offset {r.offset} ({what})"


def _preview(parts: list[str]) -> str:
    return ", ".join(parts[:_SHOWN]) + (f", ... ({len(parts) - _SHOWN} more)" if len(parts) > _SHOWN else "")


def _lost(promise: Promise, key: Key, rs: list[CommittedRecord]) -> Anomaly:
    rs = sorted(rs, key=lambda r: r.offset)
    return Anomaly(
        "lost-input",
        key,
        tuple(r.offset for r in rs),
        (),
        (),
        f"{len(rs)} input record(s) of {key[0]}/{key[1]} have no committed record in {promise.target} "
        f"(by {promise.by}): " + _preview([_named(r, promise) for r in rs]),
    )


def _duplicated(promise: Promise, m: Any, ins: list[CommittedRecord], outs: list[CommittedRecord]) -> Anomaly:
    first = ins[0]
    where_in = ", ".join(f"{r.topic}/{r.partition}@{r.offset}" for r in ins[:_SHOWN])
    where_out = ", ".join(f"{r.topic}/{r.partition}@{r.offset}" for r in outs[:_SHOWN])
    return Anomaly(
        "duplicated-output",
        (first.topic, first.partition),
        tuple(r.offset for r in ins if (r.topic, r.partition) == (first.topic, first.partition)),
        (),
        (),
        f"input {where_in} ({promise.by} {_show(m)}) has {len(outs)} committed records in {promise.target}: "
        + where_out,
    )


def _unexpected(promise: Promise, key: Key, rs: list[CommittedRecord]) -> Anomaly:
    return Anomaly(
        "unexpected-output",
        key,
        tuple(r.offset for r in rs),
        (),
        (),
        f"{len(rs)} record(s) of {key[0]}/{key[1]} match no input of {promise.source} (by {promise.by}): "
        + _preview([_named(r, promise) for r in rs]),
    )


def committed_reads(history: History | Iterable[Op]) -> list[CommittedRecord]:
    """Return the records the ``ok`` ops of ``history`` read, once each, with the keys the polls recorded.

    A poll that recorded no key gives key None (histories written without keys: the simulator's
    scenarios, hand-written files); :func:`keyless` says which topics a promise ``by key``
    would then judge blind. A record read twice keeps its first read.
    """
    seen: dict[tuple[str, int, int], CommittedRecord] = {}
    for op in history:
        if op.type != "ok":
            continue
        for m in op.mops:
            if isinstance(m, Poll):
                rec = CommittedRecord(m.topic, m.partition, m.offset, m.key, m.value)
                seen.setdefault((m.topic, m.partition, m.offset), rec)
    return [seen[k] for k in sorted(seen)]


def keyless(records: Iterable[tuple], promises: Sequence[Promise]) -> list[tuple[Promise, str, int, int]]:
    """Return ``(promise, topic, records without a key, records)`` for each topic a promise ``by key`` reads blind.

    A promise that matches by key (``match="key"``) needs every committed record of its input
    and output topics to have one; ``eos check`` refuses the promise otherwise, since a history
    without keys would pair every input with every output. Topics with no record read are not
    listed (there is nothing to match). In promise order, input topic first.
    """
    counts: dict[str, list[int]] = {}
    for r in records:
        rec = CommittedRecord(*r)
        n = counts.setdefault(rec.topic, [0, 0])
        n[1] += 1
        if rec.key is None:
            n[0] += 1
    out: list[tuple[Promise, str, int, int]] = []
    for p in promises:
        if p.match != "key":
            continue
        for topic in dict.fromkeys((p.source, p.target)):
            missing, total = counts.get(topic, (0, 0))
            if missing:
                out.append((p, topic, missing, total))
    return out


def scope_history(history: History | Iterable[Op], topics: Iterable[str] | None) -> History:
    """Return ``history`` with only the sends, reads and assigned keys of ``topics`` (None: all of it).

    Every op stays, with its index, so the history is as valid as before; an op left with no
    micro-op is an op that touched nothing judged.
    """
    ops = list(history)
    if topics is None:
        return history if isinstance(history, History) else History(ops)
    keep = frozenset(topics)

    def mine(keys: tuple[Key, ...]) -> tuple[Key, ...]:
        return tuple(k for k in keys if k[0] in keep)

    scoped = [
        op._replace(
            mops=tuple(m for m in op.mops if m.topic in keep),
            keys=mine(op.keys),
            rebalance_keys=mine(op.rebalance_keys),
        )
        for op in ops
    ]
    return History(scoped)
