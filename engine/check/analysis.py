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

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import filterfalse

from engine.check.history import History, Key, Op, Poll, Send

__all__ = ["Analysis", "KeyState", "analyse", "as_analysis"]

#: Forward gaps up to this many offsets are resolved by membership tests, longer ones by bisection.
_SMALL_GAP = 8

_POLL_ONLY = frozenset({Poll})
_SEND_ONLY = frozenset({Send})


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
        value -> first offset from any other source (committed sends, non-ok polls).
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
    """

    offsets: dict[int, str] = field(default_factory=dict)
    conflicts: dict[int, set[str]] = field(default_factory=dict)
    read: dict[str, int] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    dup_offsets: dict[str, set[int]] = field(default_factory=dict)
    writer: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    unknown: dict[str, int] = field(default_factory=dict)
    sorted_offsets: list[int] = field(default_factory=list)
    poll_gaps: list[int] = field(default_factory=list)

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
    completions : list of Op
        Every completion, in history order (invocations folded in).
    proven : set of int
        Indexes of ``info`` ops proven committed.
    send_ops : list
        ``(op, sends)`` for every op with sends, and ``(crash_op, ())`` markers, in order.
    mixed_ok : list
        ``(op, polls)`` for ``ok`` ops that both sent and polled (readers that can sit on a
        dependency cycle).
    precommitted : list
        ``(op_index, key, values)`` where an op polled values it sent itself.
    poll_jumps : list
        ``(process, key, prev_op, prev_last_offset, op, first_offset)``: successive ``ok``
        polls of a key by one process whose offsets are not consecutive.
    stats : dict
        Counts: ops, reads, sends, keys.
    """

    keys: dict[Key, KeyState] = field(default_factory=dict)
    completions: list[Op] = field(default_factory=list)
    proven: set[int] = field(default_factory=set)
    send_ops: list[tuple[Op, tuple[Send, ...]]] = field(default_factory=list)
    mixed_ok: list[tuple[Op, tuple[Poll, ...]]] = field(default_factory=list)
    precommitted: list[tuple[int, Key, tuple[str, ...]]] = field(default_factory=list)
    poll_jumps: list[tuple[int, Key, int, int, int, int]] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)

    def state(self, key: Key) -> KeyState:
        """Return the :class:`KeyState` of ``key``, creating an empty one."""
        ks = self.keys.get(key)
        if ks is None:
            ks = self.keys[key] = KeyState()
        return ks

    def is_committed(self, op: Op) -> bool:
        """True for ``ok`` ops and for ``info`` ops proven committed."""
        return op.type == "ok" or (op.type == "info" and op.index in self.proven)

    def sorted_keys(self) -> list[Key]:
        """Return the keys in (topic, partition) order."""
        return sorted(self.keys)


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
    a = Analysis()
    completions = a.completions
    # process -> key -> (last offset read, op index): the position each consumer reached.
    positions: dict[int, dict[Key, tuple[int, int]]] = {}
    pending_info: list[tuple[Op, tuple[Send, ...]]] = []
    n_reads = n_sends = 0
    for op in history.completions():
        completions.append(op)
        f = op.f
        if f == "assign" or f == "subscribe":
            # A failed assign changes nothing; ok and info (maybe applied) trim positions to
            # the keys still assigned, because a fresh assignment may legally start anywhere.
            if op.type != "fail" and op.process in positions:
                keep = set(op.keys)
                pos = positions[op.process]
                positions[op.process] = {k: v for k, v in pos.items() if k in keep}
            continue
        if f == "crash":
            # A crashed client comes back as a new consumer and producer: forget its positions.
            positions.pop(op.process, None)
            a.send_ops.append((op, ()))
            continue
        mops = op.mops
        if not mops:
            continue
        kinds = frozenset(map(type, mops))
        if kinds == _POLL_ONLY:
            polls, sends = mops, ()
        elif kinds == _SEND_ONLY:
            polls, sends = (), mops
        else:
            polls = tuple(m for m in mops if type(m) is Poll)
            sends = tuple(m for m in mops if type(m) is Send)
        if polls:
            n_reads += len(polls)
            ok = op.type == "ok"
            first, last = _scan_polls(a, op, polls, ok)
            if ok:
                _advance_positions(a, op, positions, first, last)
        if sends:
            n_sends += len(sends)
            a.send_ops.append((op, sends))
            if op.type == "ok":
                _commit_sends(a, op.index, sends)
            elif op.type == "fail":
                for t, p, v, _o in sends:
                    a.state((t, p)).failed.setdefault(v, op.index)
            else:
                pending_info.append((op, sends))
        if polls and sends:
            _note_precommitted(a, op, polls, sends)
            if op.type == "ok":
                a.mixed_ok.append((op, polls))
    _resolve_info(a, pending_info)
    for ks in a.keys.values():
        _cross_check_duplicates(ks)
        _build_version_order(ks)
    a.stats = {"ops": len(completions), "reads": n_reads, "sends": n_sends, "keys": len(a.keys)}
    return a


def _scan_polls(a: Analysis, op: Op, polls: tuple[Poll, ...], ok: bool) -> tuple[dict[Key, int], dict[Key, int]]:
    """Fold one op's polls into the sightings; return first and last offset per key.

    This is the hot loop of the checker (one iteration per polled record). It does one dict
    operation per record (value -> first offset), builds a key tuple only when the key changes,
    and leaves rank arithmetic for later: the version order itself is rebuilt per key, once,
    by :func:`_build_version_order`.
    """
    keys = a.keys
    idx = op.index
    # Keys whose assignment changed during the op may legally jump or rewind inside it: their
    # gaps go to a list that is dropped.
    exempt = frozenset(op.rebalance_keys)
    dropped: list[int] = []
    first: dict[Key, int] = {}
    last: dict[Key, int] = {}
    ct: str | None = None
    cp = -1
    key: Key | None = None
    prev = 0
    ks = rd = gaps = None
    for t, p, o, v in polls:
        if p != cp or t != ct:
            if key is not None:
                last[key] = prev
            ct, cp = t, p
            key = (t, p)
            ks = keys.get(key)
            if ks is None:
                ks = keys[key] = KeyState()
            rd = ks.read if ok else ks.seen
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
        y = rd.setdefault(v, o)
        if y != o:
            ks.note_duplicate(v, y, o)
    if key is not None:
        last[key] = prev
    return first, last


def _advance_positions(
    a: Analysis,
    op: Op,
    positions: dict[int, dict[Key, tuple[int, int]]],
    first: dict[Key, int],
    last: dict[Key, int],
) -> None:
    """Compare an ok poll with the process's previous one per key, then move its position."""
    pos = positions.get(op.process)
    if pos is None:
        pos = positions[op.process] = {}
    for key, start in first.items():
        before = pos.get(key)
        if before is not None and start != before[0] + 1:
            a.poll_jumps.append((op.process, key, before[1], before[0], op.index, start))
        pos[key] = (last[key], op.index)


def _commit_sends(a: Analysis, idx: int, sends: Iterable[Send]) -> None:
    """Record the sends of a committed op: their writer, and their offsets when acknowledged."""
    keys = a.keys
    ct: str | None = None
    cp = -1
    writer = seen = ks = None
    for t, p, v, o in sends:
        if p != cp or t != ct:
            ct, cp = t, p
            key = (t, p)
            ks = keys.get(key)
            if ks is None:
                ks = keys[key] = KeyState()
            writer, seen = ks.writer, ks.seen
        writer.setdefault(v, idx)
        if o is not None:
            y = seen.setdefault(v, o)
            if y != o:
                ks.note_duplicate(v, y, o)


def _note_precommitted(a: Analysis, op: Op, polls: Iterable[Poll], sends: Iterable[Send]) -> None:
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
        a.precommitted.append((op.index, key, tuple(values)))


def _resolve_info(a: Analysis, pending: list[tuple[Op, tuple[Send, ...]]]) -> None:
    """Treat info ops with a send read by an ok op as committed; park the others as unknown.

    No fix-point is needed: proofs come only from ``ok`` reads, which do not depend on how any
    ``info`` op is resolved.
    """
    keys = a.keys
    for op, sends in pending:
        proven = False
        for t, p, v, _o in sends:
            ks = keys.get((t, p))
            if ks is not None and v in ks.read:
                proven = True
                break
        if proven:
            a.proven.add(op.index)
            _commit_sends(a, op.index, sends)
        else:
            for t, p, v, _o in sends:
                a.state((t, p)).unknown.setdefault(v, op.index)


def _cross_check_duplicates(ks: KeyState) -> None:
    """Find values that ok reads place at one offset and other sightings at another."""
    if not ks.seen or not ks.read:
        return
    read = ks.read
    # filterfalse walks the items in C and hands back only (value, offset) pairs that ok reads
    # do not confirm: unread values, and values read at another offset.
    for v, o in filterfalse(read.items().__contains__, ks.seen.items()):
        r = read.get(v)
        if r is not None:
            ks.note_duplicate(v, r, o)


def _build_version_order(ks: KeyState) -> None:
    """Invert the sightings (value -> offset) into the version order (offset -> value).

    Every sighting is in ``read``, ``seen`` or ``dup_offsets``. The inversion runs in C for
    the values ``ok`` reads placed; an offset claimed by two values shows up as a shorter
    inverted dict, and only then are the claims walked one by one to name them.
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
    for v in sorted(filterfalse(read.__contains__, ks.seen), key=ks.seen.__getitem__):
        o = ks.seen[v]
        x = offsets.setdefault(o, v)
        if x != v:
            _claim(ks, offsets, o, v, x)
    for v in sorted(ks.dup_offsets):
        for o in sorted(ks.dup_offsets[v]):
            x = offsets.setdefault(o, v)
            if x != v:
                _claim(ks, offsets, o, v, x)
    ks.offsets = offsets
    ks.sorted_offsets = sorted(offsets)


def _claim(ks: KeyState, offsets: dict[int, str], offset: int, value: str, holder: str) -> None:
    """Record that ``offset``, held by ``holder`` in the version order, is also claimed by ``value``."""
    vals = ks.conflicts.get(offset)
    if vals is None:
        vals = ks.conflicts[offset] = {holder}
    vals.add(value)
