"""One pass over a history that builds the per-key version order every checker reads.

Role
----
:func:`analyse` walks the completions of a history once and fills, per key
``(topic, partition)``, the structures of ``eos-checking.md`` §1.2:

* the **version order** ``offsets``: offset -> value, from sends whose effects are provably
  visible (``ok``, or ``info`` proven committed because an ``ok`` op read one of its sends) and
  from *all* polls, whatever the op's outcome (Kafka pollers must return only safe data);
* the values read by ``ok`` ops (``read``: value -> first offset) and every other sighting
  (``seen``), from which duplicates and lost writes follow;
* the writer of each committed value, the values of failed and of unresolved ``info`` sends;
* the evidence the ordering checkers need, kept in *offset* space (see below).

The dense index of an offset is its rank among the offsets of the key that hold a known value
(offsets are sparse because control records take offsets). Ranks are only computed where they
can matter: two offsets ``o`` and ``o + 1`` that both hold values are adjacent in the dense
index, so the pass records a pair for later rank arithmetic only when the offsets are not
consecutive. The hot loop does one dict operation per polled record (value -> first offset);
the offset -> value direction is built afterwards, once per key, by inverting that dict in C.

The pass is :class:`AnalysisBuilder`, fed one completion at a time: :func:`analyse` feeds it
a :class:`~engine.check.history.History`, and :func:`engine.check.jsonl.analyse_jsonl` feeds it
straight from a file's lines, without building any record. It keeps nothing per micro-op
beyond what the checkers read: a committed op's sends are summarised on the spot (where each
key's sends start and end, and the pairs that are not consecutive), and who read what is
kept per key as runs of first reads, plus the few ``ok`` ops that read a value again.

Invariants
----------
* Only ``ok`` ops count as readers (for lost writes, unseen values, aborted reads, proofs).
* An ``info`` op with any send read by an ``ok`` op is treated as committed, and then all of
  its sends must be visible; other ``info`` sends are neither required nor forbidden.
* Nothing iterates a set in hash order in a way that reaches output; checkers sort.

What it does not do
-------------------
It reports nothing by itself; the checker modules turn this evidence into anomalies. It does
not parse values, so it works for histories from any client.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import filterfalse
from operator import itemgetter
from typing import Any

from engine.check.history import History, Key, Op, Poll, Send

__all__ = [
    "Analysis",
    "AnalysisBuilder",
    "KeyState",
    "Rows",
    "SendSummary",
    "analyse",
    "as_analysis",
    "send_summary",
]

#: Where one op's sends landed, as :func:`send_summary` returns it: ``(firsts, gaps)``, both flat.
SendSummary = tuple[tuple[Any, ...], tuple[Any, ...]]

#: Forward gaps up to this many offsets are resolved by membership tests, longer ones by bisection.
_SMALL_GAP = 8

_POLL_ONLY = frozenset({Poll})
_SEND_ONLY = frozenset({Send})


class Rows:
    """Micro-ops of one kind as the file holds them: ``[tag, topic, partition, x, y]`` lists.

    Iterating yields ``(topic, partition, x, y)``, the row a :class:`Poll` or :class:`Send`
    would unpack to, built in C as it is consumed; :mod:`engine.check.jsonl` hands the
    micro-ops of a line to :class:`AnalysisBuilder` this way, without building a record.
    """

    __slots__ = ("rows",)

    def __init__(self, rows: list[list[Any]]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return map(_ROW, self.rows)


_ROW = itemgetter(1, 2, 3, 4)


@dataclass(slots=True)
class KeyState:
    """Everything known about one key after the pass.

    Attributes
    ----------
    offsets : dict
        Version order: offset -> a value seen there; built after the pass from the sightings.
    conflicts : dict
        offset -> every distinct value seen there, only for offsets with two or more.
    read : dict
        value -> first offset at which an ``ok`` op read it.
    seen : dict
        value -> first offset from any other source (committed sends, non-ok polls), built
        when the pass ends, without the sightings listed in ``confirmed``.
    sightings : dict
        ``seen`` while the pass runs, as value -> (offset, value): the value kept is the very
        object the sighting brought, so that an ok read of the value at that offset, later,
        keys ``read`` with it and drops its own copy. Emptied into ``seen`` when the pass ends.
    confirmed : list
        Values whose sighting an ok read confirmed (same offset, and the value's first read)
        and which were then taken out of ``sightings``: such a sighting agrees with ``read``
        and needs no cross-check, so ``sightings`` only holds the values in flight. The
        sighting was the value's first, the offset every later duplicate is named against,
        which is what :func:`_cross_check_duplicates` restores from this list.
    dup_offsets : dict
        value -> every offset it was seen at, only for values seen at two or more.
    writer : dict
        value -> history index of the committed op (ok or proven info) that sent it.
    failed : dict
        value -> history index of the ``fail`` op that sent it.
    unknown : dict
        value -> history index of the unproven ``info`` op that sent it.
    sorted_offsets : list
        Sorted keys of ``offsets``; the dense index of an offset is its position here.
    poll_gaps : list of int
        Flat triples ``op_index, before_offset, after_offset``: consecutive reads of this key
        inside one op whose offsets are not consecutive (rebalance keys left out). Flat ints
        rather than tuples, so that millions of reads do not feed the cyclic garbage collector.
    unplaced : list
        Values of committed sends acknowledged without an offset (with ``seen``, where to
        look for committed values no ok op read: see :meth:`unread_writes`).
    run_starts, run_ops : list of int
        Who read each value first: the ``ok`` op ``run_ops[i]`` added the values of ``read``
        from position ``run_starts[i]`` on (in ``read``'s insertion order), until the next run.
    in_order : bool
        Whether ``offsets`` iterates in offset order (then :meth:`values_in_order` is free).
    key : tuple
        The key itself: one tuple, shared by everything that names the key.
    """

    offsets: dict[int, str] = field(default_factory=dict)
    conflicts: dict[int, set[str]] = field(default_factory=dict)
    read: dict[str, int] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    sightings: dict[str, tuple[int, str]] = field(default_factory=dict)
    confirmed: list[str] = field(default_factory=list)
    dup_offsets: dict[str, set[int]] = field(default_factory=dict)
    writer: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    unknown: dict[str, int] = field(default_factory=dict)
    sorted_offsets: list[int] = field(default_factory=list)
    poll_gaps: list[int] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)
    run_starts: list[int] = field(default_factory=list)
    run_ops: list[int] = field(default_factory=list)
    in_order: bool = False
    key: Key = ("", -1)

    def note_duplicate(self, value: str, first: int, other: int) -> None:
        """Record that ``value`` was seen at ``first`` and at ``other`` (a duplicate)."""
        offs = self.dup_offsets.get(value)
        if offs is None:
            offs = self.dup_offsets[value] = {first}
        offs.add(other)

    def index(self, offset: int) -> int:
        """Return the dense index of ``offset`` (its rank among offsets holding values)."""
        return bisect_left(self.sorted_offsets, offset)

    def delta(self, before: int, after: int) -> int:
        """Return ``index(after) - index(before)``; 1 means adjacent in the version order."""
        if after == before + 1:
            return 1
        if before < after <= before + _SMALL_GAP:
            # Short forward gaps (a control marker or two) are the common case: counting the
            # offsets in between beats two binary searches over a long list.
            offsets = self.offsets
            if after == before + 2:
                return 2 if before + 1 in offsets else 1
            n = 1
            for o in range(before + 1, after):
                if o in offsets:
                    n += 1
            return n
        s = self.sorted_offsets
        return bisect_left(s, after) - bisect_left(s, before)

    def locate(self, value: str) -> int | None:
        """Return the offset where ``value`` was read by an ok op, else first seen, else None."""
        o = self.read.get(value)
        return self.seen.get(value) if o is None else o

    def values_in_order(self) -> Iterable[str]:
        """Return the values of the version order, in offset order."""
        if self.in_order:
            return self.offsets.values()
        return map(self.offsets.__getitem__, self.sorted_offsets)

    def unread_writes(self) -> list[str]:
        """Return the committed values (keys of ``writer``) that no ``ok`` op read, in no set order.

        A committed value is in ``seen`` (its acknowledged offset) or in ``unplaced``, and only
        an ok read of it takes it out of ``seen``: the walk is over those, not over every write.
        """
        read, writer = self.read, self.writer
        found = {v for v in self.seen if v not in read and v in writer}
        found.update(v for v in self.unplaced if v not in read)
        return list(found)

    def offsets_of(self, value: str) -> list[int]:
        """Return every known offset of ``value``, ascending (empty when never placed)."""
        offs = self.dup_offsets.get(value)
        if offs is not None:
            return sorted(offs)
        o = self.read.get(value)
        if o is None:
            o = self.seen.get(value)
        return [] if o is None else [o]


@dataclass(slots=True)
class Analysis:
    """The evidence gathered by :func:`analyse`; checkers read it and never change it.

    Attributes
    ----------
    keys : dict
        Key -> :class:`KeyState`.
    completions : list of Op or None
        Every completion, in history order (invocations folded in); None when the analysis
        was fed without records (:func:`engine.check.jsonl.analyse_jsonl`).
    proven : set of int
        Indexes of ``info`` ops proven committed.
    send_ops : list
        ``(op_index, process, type, summary, sends)`` for every ``ok`` or ``info`` op with
        sends, and ``(op_index, process, "crash", None, None)`` markers, in completion order.
        ``summary`` is :func:`send_summary`'s, made during the pass when every offset is
        known; otherwise (``info`` ops, sends without an offset) ``sends`` is kept instead.
    rereads : list
        ``(op_index, polls)`` for the ``ok`` ops that read some value already read by an
        ``ok`` op (or twice): with each key's first-read runs, every ``ok`` read of a value.
    mixed_ok : list
        ``(op_index, polls)`` for ``ok`` ops that both sent and polled (readers that can sit on
        a dependency cycle).
    precommitted : list
        ``(op_index, key, values)`` where an op polled values it sent itself.
    poll_jumps : list
        ``(process, key, prev_op, prev_last_offset, op, first_offset)``: successive ``ok``
        polls of a key by one process whose offsets are not consecutive.
    stats : dict
        Counts: ops, reads, sends, keys.
    """

    keys: dict[Key, KeyState] = field(default_factory=dict)
    completions: list[Op] | None = field(default_factory=list)
    proven: set[int] = field(default_factory=set)
    send_ops: list[tuple[int, int, str, SendSummary | None, Sequence[Send] | None]] = field(default_factory=list)
    rereads: list[tuple[int, Sequence[Poll]]] = field(default_factory=list)
    mixed_ok: list[tuple[int, Sequence[Poll]]] = field(default_factory=list)
    precommitted: list[tuple[int, Key, tuple[str, ...]]] = field(default_factory=list)
    poll_jumps: list[tuple[int, Key, int, int, int, int]] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)

    def state(self, key: Key) -> KeyState:
        """Return the :class:`KeyState` of ``key``, creating an empty one."""
        ks = self.keys.get(key)
        if ks is None:
            ks = self.keys[key] = KeyState(key=key)
        return ks

    def is_committed(self, op: Op) -> bool:
        """True for ``ok`` ops and for ``info`` ops proven committed."""
        return op.type == "ok" or (op.type == "info" and op.index in self.proven)

    def sorted_keys(self) -> list[Key]:
        """Return the keys in (topic, partition) order."""
        return sorted(self.keys)

    def ok_readers(self, wanted: dict[Key, set[str]]) -> dict[tuple[Key, str], list[tuple[int, int]]]:
        """Return ``(key, value) -> [(op index, offset), ...]``: every ``ok`` read of the wanted values.

        A targeted scan, for the few values a checker needs every reader of: the first read of
        each comes from its key's runs, the others from :attr:`rereads`. A pair may be listed
        twice.
        """
        readers: dict[tuple[Key, str], list[tuple[int, int]]] = {}
        for key, vals in wanted.items():
            ks = self.keys.get(key)
            if ks is None:
                continue
            read = ks.read
            for pos, v in enumerate(read):
                if v in vals:
                    op = ks.run_ops[bisect_right(ks.run_starts, pos) - 1]
                    readers.setdefault((key, v), []).append((op, read[v]))
        for idx, polls in self.rereads:
            for t, p, o, v in polls:
                vals = wanted.get((t, p))
                if vals is not None and v in vals:
                    readers.setdefault((self.keys[(t, p)].key, v), []).append((idx, o))
        return readers


def as_analysis(history: Analysis | History | Iterable[Op]) -> Analysis:
    """Return ``history`` if it is already an :class:`Analysis`, else analyse it."""
    if isinstance(history, Analysis):
        return history
    return analyse(history)


def analyse(history: History | Iterable[Op]) -> Analysis:
    """Walk ``history`` once and return the :class:`Analysis` the checkers read.

    Parameters
    ----------
    history : History or iterable of Op
        A plain iterable is wrapped in a :class:`History` (which validates pairing).
    """
    if not isinstance(history, History):
        history = History(history)
    builder = AnalysisBuilder(keep_completions=True)
    add = builder.add
    for op in history.completions():
        mops = op.mops
        if not mops:
            polls = sends = ()
        else:
            kinds = frozenset(map(type, mops))
            if kinds == _POLL_ONLY:
                polls, sends = mops, ()
            elif kinds == _SEND_ONLY:
                polls, sends = (), mops
            else:
                polls = tuple(m for m in mops if type(m) is Poll)
                sends = tuple(m for m in mops if type(m) is Send)
        add(op.index, op.process, op.type, op.f, polls, sends, op.keys, op.rebalance_keys, op)
    return builder.finish()


class AnalysisBuilder:
    """The pass of :func:`analyse`, fed one completion at a time, in completion order.

    ``polls`` are ``(topic, partition, offset, value)`` rows and ``sends`` ``(topic,
    partition, value, offset)`` rows, the field orders of :class:`Poll` and :class:`Send`: any
    sized collection that can be iterated more than once will do (tuples of :class:`Poll`, or
    :class:`Rows`). The builder keeps them only where :class:`Analysis` says so (``info``
    sends, sends without an offset, polls of ``ok`` ops that also sent), and keeps the polls
    of an op that read a value again as plain rows.
    """

    __slots__ = ("_a", "_n_ops", "_n_reads", "_n_sends", "_pending_info", "_positions")

    def __init__(self, *, keep_completions: bool = True) -> None:
        """With ``keep_completions``, :attr:`Analysis.completions` lists the records passed to :meth:`add`."""
        self._a = Analysis(completions=[] if keep_completions else None)
        # process -> key -> (last offset read, op index): the position each consumer reached.
        self._positions: dict[int, dict[Key, tuple[int, int]]] = {}
        self._pending_info: list[tuple[int, Sequence[Send]]] = []
        self._n_ops = self._n_reads = self._n_sends = 0

    def add(
        self,
        index: int,
        process: int,
        type: str,  # the Jepsen field name, kept on purpose
        f: str,
        polls: Sequence[Poll],
        sends: Sequence[Send],
        keys: Iterable[Key] = (),
        rebalance_keys: Iterable[Key] = (),
        op: Op | None = None,
    ) -> None:
        """Fold in one completion (``op`` is the record itself, listed when completions are kept)."""
        a = self._a
        self._n_ops += 1
        if a.completions is not None and op is not None:
            a.completions.append(op)
        if f == "assign" or f == "subscribe":
            # A failed assign changes nothing; ok and info (maybe applied) trim positions to
            # the keys still assigned, because a fresh assignment may legally start anywhere.
            positions = self._positions
            if type != "fail" and process in positions:
                keep = set(keys)
                pos = positions[process]
                positions[process] = {k: v for k, v in pos.items() if k in keep}
            return
        if f == "crash":
            # A crashed client comes back as a new consumer and producer: forget its positions.
            self._positions.pop(process, None)
            a.send_ops.append((index, process, "crash", None, None))
            return
        ok = type == "ok"
        if polls:
            n = len(polls)
            self._n_reads += n
            first, last, new = _scan_polls(a, index, polls, ok, rebalance_keys)
            if ok:
                if new != n:
                    a.rereads.append((index, polls if isinstance(polls, tuple) else _compact(a, polls)))
                _advance_positions(a, process, index, self._positions, first, last)
        if sends:
            self._n_sends += len(sends)
            if ok:
                summary = _commit_sends(a, index, sends, summarise=True)
                a.send_ops.append((index, process, "ok", summary, None if summary is not None else sends))
            elif type == "fail":
                for t, p, v, _o in sends:
                    a.state((t, p)).failed.setdefault(v, index)
            else:
                self._pending_info.append((index, sends))
                a.send_ops.append((index, process, "info", None, sends))
        if polls and sends:
            _note_precommitted(a, index, polls, sends)
            if ok:
                a.mixed_ok.append((index, polls))

    def finish(self) -> Analysis:
        """Resolve the ``info`` ops, build each key's version order, and return the analysis."""
        a = self._a
        _resolve_info(a, self._pending_info)
        self._pending_info = []
        for ks in a.keys.values():
            _build_version_order(ks, _cross_check_duplicates(ks))
        a.stats = {"ops": self._n_ops, "reads": self._n_reads, "sends": self._n_sends, "keys": len(a.keys)}
        return a


def send_summary(a: Analysis, sends: Iterable[Send], locate: Callable[[KeyState, str], int | None]) -> SendSummary:
    """Return where one committed op's sends landed, as :mod:`engine.check.sends` reads it.

    The summary is ``(firsts, gaps)``: ``firsts`` holds, flat, ``key, first offset, first
    value, last offset`` per key, in the order the op first sent to it; ``gaps`` holds, flat,
    ``key, offset, value, next offset, next value`` for two successive sends to one key whose
    offsets are not consecutive (only those need the version order). A send acknowledged
    without an offset is placed by ``locate(key_state, value)``, and skipped if that finds
    nothing. The pass makes the same summary while it commits the sends (:func:`_commit_sends`).
    """
    keys = a.keys
    first: dict[Key, tuple[int, str]] = {}
    prev: dict[Key, tuple[int, str]] = {}
    gaps: list[Any] = []
    ct: str | None = None
    cp = -1
    key: Key = ("", -1)
    ks = None
    for t, p, v, o in sends:
        if p != cp or t != ct:
            ct, cp = t, p
            ks = keys[(t, p)]
            key = ks.key
        if o is None:
            o = locate(ks, v)
            if o is None:
                continue
        before = prev.get(key)
        if before is None:
            first[key] = (o, v)
        elif o != before[0] + 1:
            gaps += (key, before[0], before[1], o, v)
        prev[key] = (o, v)
    flat: list[Any] = []
    for key, (o, v) in first.items():
        flat += (key, o, v, prev[key][0])
    return tuple(flat), tuple(gaps)


def _scan_polls(
    a: Analysis, idx: int, polls: Iterable[Poll], ok: bool, rebalance_keys: Iterable[Key]
) -> tuple[dict[Key, int], dict[Key, int], int]:
    """Fold one op's polls into the sightings; return first and last offset per key, and how many values were new.

    This is the hot loop of the checker (one iteration per polled record). It does one dict
    operation per record (value -> first offset), touches the key's state only when the key
    changes, and leaves rank arithmetic for later: the version order itself is rebuilt per
    key, once, by :func:`_build_version_order`. For an ``ok`` op, each run of reads of one key
    is noted in the key's first-read runs, and the values it added to ``read`` are counted
    (fewer than the polls means the op read some value again).
    """
    keys = a.keys
    # Keys whose assignment changed during the op may legally jump or rewind inside it: their
    # gaps go to a list that is dropped.
    exempt = frozenset(rebalance_keys)
    dropped: list[int] = []
    first: dict[Key, int] = {}
    last: dict[Key, int] = {}
    new = start = 0
    ct: str | None = None
    cp = -1
    key: Key | None = None
    prev = 0
    ks = rd = gaps = seen = confirmed = None
    for t, p, o, v in polls:
        if p != cp or t != ct:
            if key is not None:
                last[key] = prev
                if ok:
                    new += len(rd) - start
            ct, cp = t, p
            ks = keys.get((t, p))
            if ks is None:
                ks = keys[(t, p)] = KeyState(key=(t, p))
            key = ks.key
            seen = ks.sightings
            if ok:
                rd = ks.read
                confirmed = ks.confirmed
                start = len(rd)
                ks.run_starts.append(start)
                ks.run_ops.append(idx)
            gaps = dropped if key in exempt else ks.poll_gaps
            before = last.get(key)
            if before is None:
                first[key] = o
                prev = o - 1
            else:
                prev = before
        if o != prev + 1:
            gaps += (idx, prev, o)
        prev = o
        if ok:
            s = seen.pop(v, None)
            if s is None:
                y = rd.setdefault(v, o)
            elif s[0] == o:
                # The read confirms a sighting at the same offset: key the read with the
                # sighting's objects (this poll's copies are dropped), and if the value's first
                # read is at that offset, the sighting is done with (see KeyState.confirmed).
                o, v = s
                y = rd.setdefault(v, o)
                if y == o:
                    confirmed.append(v)
                else:
                    seen[v] = s
            else:
                seen[v] = s
                y = rd.setdefault(v, o)
        else:
            y = seen.setdefault(v, (o, v))[0]
        if y != o:
            ks.note_duplicate(v, y, o)
    if key is not None:
        last[key] = prev
        if ok:
            new += len(rd) - start
    return first, last, new


def _compact(a: Analysis, polls: Iterable[Poll]) -> tuple[tuple[Any, ...], ...]:
    """Return ``polls`` as plain rows naming their key's topic string, to outlive their line."""
    keys = a.keys
    return tuple((keys[(t, p)].key[0], p, o, v) for t, p, o, v in polls)


def _advance_positions(
    a: Analysis,
    process: int,
    idx: int,
    positions: dict[int, dict[Key, tuple[int, int]]],
    first: dict[Key, int],
    last: dict[Key, int],
) -> None:
    """Compare an ok poll with the process's previous one per key, then move its position."""
    pos = positions.get(process)
    if pos is None:
        pos = positions[process] = {}
    for key, start in first.items():
        before = pos.get(key)
        if before is not None and start != before[0] + 1:
            a.poll_jumps.append((process, key, before[1], before[0], idx, start))
        pos[key] = (last[key], idx)


def _commit_sends(a: Analysis, idx: int, sends: Iterable[Send], *, summarise: bool = False) -> SendSummary | None:
    """Record the sends of a committed op: their writer, and their offsets when acknowledged.

    With ``summarise``, also return :func:`send_summary`'s summary of them, made in the same
    loop, or None if a send has no offset (its place is known only after the pass).
    """
    keys = a.keys
    ct: str | None = None
    cp = -1
    writer = seen = ks = None
    # The summary: per key, the first (offset, value) and the last; the gaps, flat.
    first: dict[Key, tuple[int, str]] = {}
    last: dict[Key, tuple[int, str]] = {}
    gaps: list[Any] = []
    key: Key = ("", -1)
    before: int | None = None
    bv = ""
    complete = summarise
    for t, p, v, o in sends:
        if p != cp or t != ct:
            if complete and before is not None:
                last[key] = (before, bv)
            ct, cp = t, p
            ks = keys.get((t, p))
            if ks is None:
                ks = keys[(t, p)] = KeyState(key=(t, p))
            key = ks.key
            writer, seen = ks.writer, ks.sightings
            held = last.get(key)
            before, bv = (None, "") if held is None else held
        writer.setdefault(v, idx)
        if o is None:
            ks.unplaced.append(v)
            complete = False
            continue
        y = seen.setdefault(v, (o, v))[0]
        if y != o:
            ks.note_duplicate(v, y, o)
        if complete:
            if before is None:
                first[key] = (o, v)
            elif o != before + 1:
                gaps += (key, before, bv, o, v)
            before = o
            bv = v
    if not complete:
        return None
    if before is not None:
        last[key] = (before, bv)
    flat: list[Any] = []
    for key, (o, v) in first.items():
        flat += (key, o, v, last[key][0])
    return tuple(flat), tuple(gaps)


def _note_precommitted(a: Analysis, idx: int, polls: Iterable[Poll], sends: Iterable[Send]) -> None:
    """Record values an op polled that it had sent itself (read before its own commit)."""
    sent: dict[Key, set[str]] = {}
    for t, p, v, _o in sends:
        sent.setdefault((t, p), set()).add(v)
    own: dict[Key, list[str]] = {}
    for t, p, _o, v in polls:
        mine = sent.get((t, p))
        if mine is not None and v in mine:
            own.setdefault((t, p), []).append(v)
    for key, values in own.items():
        a.precommitted.append((idx, a.keys[key].key, tuple(values)))


def _resolve_info(a: Analysis, pending: list[tuple[int, Sequence[Send]]]) -> None:
    """Treat info ops with a send read by an ok op as committed; park the others as unknown.

    No fix-point is needed: proofs come only from ``ok`` reads, which do not depend on how any
    ``info`` op is resolved.
    """
    keys = a.keys
    for idx, sends in pending:
        proven = False
        for t, p, v, _o in sends:
            ks = keys.get((t, p))
            if ks is not None and v in ks.read:
                proven = True
                break
        if proven:
            a.proven.add(idx)
            _commit_sends(a, idx, sends)
        else:
            for t, p, v, _o in sends:
                a.state((t, p)).unknown.setdefault(v, idx)


def _cross_check_duplicates(ks: KeyState) -> list[str]:
    """Find values that ok reads place at one offset and other sightings at another.

    Returns the values seen but never read by an ok op, in ``seen``'s order: one walk over
    ``seen`` serves both.
    """
    if ks.sightings:
        ks.seen = {v: o for v, (o, _v) in ks.sightings.items()}
        ks.sightings = {}
    dups = ks.dup_offsets
    if dups and ks.confirmed:
        # A confirmed sighting was the value's first: every duplicate of it was named against
        # that offset, which is the value's first read (see KeyState.confirmed).
        read = ks.read
        for v in filter(dups.__contains__, ks.confirmed):
            dups[v].add(read[v])
    ks.confirmed = []
    if not ks.seen:
        return []
    read = ks.read
    unread: list[str] = []
    # filterfalse walks the items in C and hands back only (value, offset) pairs that ok reads
    # do not confirm: unread values, and values read at another offset.
    for v, o in filterfalse(read.items().__contains__, ks.seen.items()):
        r = read.get(v)
        if r is None:
            unread.append(v)
        else:
            ks.note_duplicate(v, r, o)
    return unread


def _build_version_order(ks: KeyState, unread: list[str]) -> None:
    """Invert the sightings (value -> offset) into the version order (offset -> value).

    Every sighting is in ``read``, ``seen`` (``unread`` lists the values only there) or
    ``dup_offsets``. The inversion runs in C for the values ``ok`` reads placed; an offset
    claimed by two values shows up as a shorter inverted dict, and only then are the claims
    walked one by one to name them.
    """
    read = ks.read
    offsets = dict(zip(read.values(), read.keys(), strict=True))
    if len(offsets) != len(read):
        offsets = {}
        for v, o in read.items():
            x = offsets.setdefault(o, v)
            if x != v:
                _claim(ks, offsets, o, v, x)
    # Values seen elsewhere but never read by an ok op (usually few: unread or failed pollers).
    seen = ks.seen
    for v in sorted(unread, key=seen.__getitem__):
        o = seen[v]
        x = offsets.setdefault(o, v)
        if x != v:
            _claim(ks, offsets, o, v, x)
    for v in sorted(ks.dup_offsets):
        for o in sorted(ks.dup_offsets[v]):
            x = offsets.setdefault(o, v)
            if x != v:
                _claim(ks, offsets, o, v, x)
    ks.offsets = offsets
    ks.sorted_offsets = order = sorted(offsets)
    # Reads usually come in offset order, and then so does the inverted dict.
    ks.in_order = order == list(offsets)


def _claim(ks: KeyState, offsets: dict[int, str], offset: int, value: str, holder: str) -> None:
    """Record that ``offset``, held by ``holder`` in the version order, is also claimed by ``value``."""
    vals = ks.conflicts.get(offset)
    if vals is None:
        vals = ks.conflicts[offset] = {holder}
    vals.add(value)
