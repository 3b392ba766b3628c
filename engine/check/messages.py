"""The sentences of the anomalies that two engines report: each written once, from the record's own fields.

Role
----
The Python checkers (:mod:`engine.check`) and their Spark twins (:mod:`eos_magics.spark.checks`,
:mod:`eos_magics.spark.invariants`) report the same anomalies; the sentence a reader sees is
built here, for both:

* the history checkers' (C1-C12): :func:`history_anomaly` makes the whole record from kind,
  key, offsets, values, ops and the two numbers a sentence needs (``n``: the rank difference of
  an ordering anomaly; ``process``: the process of a ``nonmonotonic-send``). The Spark checks
  collect the few rows they report and call it on the driver.
* the white-box invariants' (L1-L14): each is a :class:`Sentence`, a ``str.format`` template
  whose fields are named after the Spark columns that hold them; Python fills it with
  :meth:`Sentence.format`, Spark renders the same template with ``format_string``
  (:meth:`Sentence.printf`), so an anomaly frame keeps its message column before any collect.
* the side-effects scenario's aborted-attempt ``effect-phantom`` (:func:`effect_phantom_attempts`).

Invariants
----------
A sentence depends only on the fields given, never on which engine found the anomaly; the
parity tests compare the sentences of both engines byte for byte.

What it does not do
-------------------
No detection; the sentences of checkers with no Spark twin (copier, sentinel, effects, saga,
deadlock) stay beside their checker, written once there.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.check.anomaly import Anomaly
from engine.check.history import Key

__all__ = ["SENTENCES", "Sentence", "effect_phantom_attempts", "history_anomaly", "where"]


def where(key: Key) -> str:
    """Return ``topic/partition``, as every sentence names a key."""
    return f"{key[0]}/{key[1]}"


def _ints(xs: Sequence[int]) -> str:
    return ", ".join(map(str, xs))


def _inconsistent(key: Key, offsets: Sequence[int], values: Sequence[str], ops: Sequence[int], n: int, p: Any) -> str:
    return f"offset {offsets[0]} of {where(key)} holds {len(values)} values: {', '.join(values)}"


def _duplicate(key: Key, offsets: Sequence[int], values: Sequence[str], ops: Sequence[int], n: int, p: Any) -> str:
    return f"value {values[0]!r} of {where(key)} appears at {len(offsets)} offsets: " + _ints(offsets)


def _lost(key: Key, offsets: Sequence[int], values: Sequence[str], ops: Sequence[int], n: int, p: Any) -> str:
    offset, bound = offsets
    return (
        f"value {values[0]!r} written by op {ops[0]} at offset {offset} of {where(key)} was never read, "
        f"although ok reads reached offset {bound}"
    )


def _unseen(key: Key, offsets: Sequence[int], values: Sequence[str], ops: Sequence[int], n: int, p: Any) -> str:
    shown = ", ".join(repr(v) for v in values[:5]) + (", ..." if len(values) > 5 else "")
    return f"{len(values)} committed value(s) of {where(key)} never read by an ok poll: {shown}"


def _g1a(key: Key, offsets: Sequence[int], values: Sequence[str], ops: Sequence[int], n: int, p: Any) -> str:
    writer, *readers = ops
    return (
        f"ok op(s) {_ints(readers)} read {values[0]!r} at offset {_ints(offsets)} of {where(key)}, "
        f"written by op {writer} which failed"
    )


def _precommitted(key: Key, offsets: Sequence[int], values: Sequence[str], ops: Sequence[int], n: int, p: Any) -> str:
    return (
        f"op {ops[0]} polled {', '.join(repr(v) for v in values)} from {where(key)}, "
        "which it had sent itself before committing"
    )


def _poll(key: Key, offsets: Sequence[int], values: Sequence[str], ops: Sequence[int], n: int, p: Any) -> str:
    before, after = offsets
    if n > 1:
        msg = f"read offset {after} right after offset {before} of {where(key)}, skipping {n - 1} value(s)"
    else:
        msg = f"read offset {after} after offset {before} of {where(key)}: went back {1 - n} position(s)"
    if len(ops) == 2:
        return f"op {ops[1]} " + msg + f" (previous poll: op {ops[0]})"
    return f"op {ops[0]} " + msg


def _int_send(key: Key, offsets: Sequence[int], values: Sequence[str], ops: Sequence[int], n: int, p: Any) -> str:
    before, after = offsets
    bv, v = values
    how = f"{n - 1} other value(s) landed between" if n > 1 else "the later send landed first"
    return f"op {ops[0]} sent {bv!r} then {v!r} to {where(key)}; they landed at offsets {before} and {after}: {how}"


def _send(key: Key, offsets: Sequence[int], values: Sequence[str], ops: Sequence[int], n: int, p: Any) -> str:
    before, after = offsets
    earlier_op, idx = ops
    return (
        f"op {idx} of process {p} sent {values[1]!r} to {where(key)} at offset {after}, "
        f"at or below offset {before} of its previous send op {earlier_op}"
    )


#: The sentence of each history anomaly kind with one, from ``(key, offsets, values, ops, n, process)``.
SENTENCES: dict[str, Callable[[Key, Sequence[int], Sequence[str], Sequence[int], int, Any], str]] = {
    "inconsistent-offsets": _inconsistent,
    "duplicate": _duplicate,
    "lost-write": _lost,
    "unseen": _unseen,
    "G1a": _g1a,
    "precommitted-read": _precommitted,
    "poll-skip": _poll,
    "nonmonotonic-poll": _poll,
    "int-poll-skip": _poll,
    "int-nonmonotonic-poll": _poll,
    "int-send-skip": _int_send,
    "int-nonmonotonic-send": _int_send,
    "nonmonotonic-send": _send,
}


def history_anomaly(
    kind: str,
    key: Key,
    offsets: Sequence[int],
    values: Sequence[str],
    ops: Sequence[int],
    *,
    n: int = 0,
    process: Any = None,
) -> Anomaly:
    """Return the :class:`Anomaly` of a history checker, its sentence included.

    ``n`` is the rank difference of an ordering anomaly (``poll-skip`` ... ``int-send-skip``),
    ``process`` the process of a ``nonmonotonic-send``; other kinds ignore them.
    """
    offsets, values, ops = tuple(offsets), tuple(values), tuple(ops)
    return Anomaly(kind, key, offsets, values, ops, SENTENCES[kind](key, offsets, values, ops, n, process))


@dataclass(frozen=True, slots=True)
class Sentence:
    """A white-box sentence: a ``str.format`` template whose fields name the values it shows.

    >>> s = Sentence("leader {leader}: LSO {lso} never reached HW {hw}")
    >>> s.format(leader=1, lso=3, hw=5)
    'leader 1: LSO 3 never reached HW 5'
    >>> s.printf()
    ('leader %s: LSO %s never reached HW %s', ('leader', 'lso', 'hw'))
    """

    template: str

    def format(self, **fields: Any) -> str:
        """Return the sentence with ``fields`` in place."""
        return self.template.format(**fields)

    def printf(self) -> tuple[str, tuple[str, ...]]:
        """Return the template as a ``printf`` format of ``%s`` and the field names in order (for Spark)."""
        text: list[str] = []
        names: list[str] = []
        for literal, name, spec, conv in string.Formatter().parse(self.template):
            text.append(literal.replace("%", "%%"))
            if name is not None:
                if spec or conv:
                    raise ValueError(f"a Sentence field takes no format spec or conversion: {self.template!r}")
                text.append("%s")
                names.append(name)
        return "".join(text), tuple(names)


def effect_phantom_attempts(names: Sequence[str], *, effect: str = "e-mail", row: str = "an invoice") -> str:
    """Return the ``effect-phantom`` sentence of effects naming rows of aborted or crashed attempts.

    At most three names are shown; the count is exact.
    """
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"{len(names)} {effect}(s) name {row} that was never committed (an aborted or crashed attempt): {shown}"


# -- the white-box invariants' sentences (fields named after the Spark columns that hold them) ----

#: L1-offset-order; ``how``: ``offsets held twice`` or ``hole``.
L1_OFFSET_ORDER = Sentence(
    "broker {broker_id}: batch at {base_offset} follows a batch ending before {expected} ({how})"
)
#: L1-replica-divergence; ``ours`` and ``theirs``: the first differing record of each replica.
L1_DIVERGENCE = Sentence(
    "broker {broker_id} differs from leader {auth_broker} at {n} offset(s) below HW {final_hw}, "
    "first at {offset}: {ours} vs {theirs}"
)
L2_GAP = Sentence(
    "producer {producer_id} epoch {producer_epoch}: batch at {base_offset} starts at sequence {base_sequence}, "
    "expected {expected} after the batch at {prev_offset}"
)
L2_DUPLICATE = Sentence(
    "producer {producer_id} epoch {producer_epoch} sequence {seq} written at {first_offset} and again at {offset}"
)
#: L3-epoch-regression; ``what``: ``data batch`` or ``<type> marker``.
L3_EPOCH = Sentence(
    "producer {producer_id}: {what} at {base_offset} has epoch {producer_epoch} after epoch {high_epoch} "
    "at {high_offset}"
)
#: L4-data-after-marker; ``stale``: the stale offsets as a list (``[3, 4]``).
L4_DATA_AFTER_MARKER = Sentence(
    "producer {producer_id}: transactional data at {stale} has an epoch below the marker (epoch {marker_epoch}) "
    "at {marker_offset} that ended its transaction"
)
L4_MARKER_EPOCH = Sentence(
    "producer {producer_id}: {control_type} marker at {marker_offset} has epoch {marker_epoch}, "
    "below its data's epoch {data_epoch}"
)
L4_MARKERS_OVER = Sentence(
    "producer {producer_id}: {n} {control_type} markers of epoch {marker_epoch} but the coordinator decided "
    "{allowed} for this partition"
)
L4_MARKER_REPEAT = Sentence(
    "producer {producer_id}: {control_type} marker at {marker_offset} repeats the one at {prev_offset} "
    "with no data between"
)
L4_NON_TXN_IN_TXN = Sentence(
    "producer {producer_id}: non-transactional batch at {base_offset} inside its open transaction"
)
L5_HANGING = Sentence(
    "producer {producer_id}: transaction open since offset {first_offset} ({n} batch(es)) has no marker"
)
L5_LSO = Sentence("leader {leader}: LSO {lso} is not the HW {hw}")
L6_MISSING = Sentence(
    "{transactional_id}: decided {control_type} for producer {producer_id} epoch {producer_epoch} "
    "but this partition has no marker for it"
)
#: L6-atomicity of a marker; ``decided``: ``COMMIT@3, ABORT@4`` or ``nothing``.
L6_UNDECIDED = Sentence(
    "producer {producer_id}: {control_type} marker at {marker_offset} with epoch {marker_epoch} matches "
    "no coordinator decision for this partition (decided: {decided})"
)
#: L6-atomicity across partitions; ``places``: ``COMMIT in t-0@5, ABORT in t-1@7``.
L6_DISAGREE = Sentence("producer {producer_id} epoch {marker_epoch}: markers disagree across partitions: {places}")
L6_INCOMPLETE = Sentence(
    "{transactional_id}: {control_type} of producer {producer_id} epoch {producer_epoch} "
    "(offset {offset} of __transaction_state) never reached COMPLETE"
)
L7_ORDER = Sentence(
    "leader {broker_id} epoch {leader_epoch} at {time_ms} ms: LSO {lso}, HW {hw}, LEO {leo} are not in order"
)
#: L7-hw-regression and L7-lso-regression; ``name``: ``HW`` or ``LSO``.
L7_BACK = Sentence(
    "leader {broker_id} epoch {leader_epoch}: {name} went from {before} ({prev_time} ms) back to {after} ({time_ms} ms)"
)
L8_LSO_ABOVE_HW = Sentence("{consumer} at {time_ms} ms: fetch answered with LSO {lso} above HW {hw}")
L8_BEYOND_LSO = Sentence(
    "{consumer} (read_committed) at {time_ms} ms: fetch from {fetch_offset} returned batches up to {next_offset}, "
    "beyond the LSO {lso}"
)
L9_MISSING = Sentence(
    "broker {broker_id}: aborted transaction of producer {producer_id} at {first_offset}..{last_offset} "
    "is missing from the index"
)
L9_UNMATCHED = Sentence(
    "broker {broker_id}: index entry producer {producer_id} at {first_offset}..{last_offset} matches no ABORT marker"
)
L10_TRANSITION = Sentence(
    "{transactional_id}: {before} -> {state} at offset {offset} ({source} history) is not a legal transition"
)
L10_EPOCH = Sentence(
    "{transactional_id}: producer {producer_id} epoch went from {prev_epoch} back to {producer_epoch} "
    "at offset {offset}"
)
#: L14-no-leader; ``why``: ``none``, ``broker 2 (down)`` or ``broker 2 (no replica)``.
L14_NO_LEADER = Sentence("no live leader at the end (controller says {why})")
#: The ``why`` of L14-no-leader when the controller names a leader; ``status``: ``down``, ``no replica`` ...
L14_LEADER = Sentence("broker {leader} ({status})")
L14_LSO = Sentence("leader {leader}: LSO {lso} never reached HW {hw}")
