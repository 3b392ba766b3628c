"""X1/X2: the consume-transform-produce oracle of Kafka's ``transactions_test.py``.

Role
----
A copier reads input records and writes each one to an output topic inside a transaction,
carrying its *lineage* (input topic, partition, offset) in the output record. Given the input
records and the **committed** output records (as a read_committed consumer returned them), it
checks that:

* every input record has exactly one output (``copier-lost`` for none, ``copier-duplicate``
  for more than one), and no output names an input that does not exist (``copier-phantom``);
* with ``check_order``, within each output partition the outputs fed by one input partition
  appear in increasing input-offset order (``copier-order``).

Invariants
----------
Works on plain records (named tuples or any tuples in the documented field order), so the
records can come from the simulator, from a notebook, or from a real cluster. Output sorted.

What it does not do
-------------------
It does not read client histories and does not compare payloads: the lineage is the identity
of a record. Streams-style aggregate recomputation (X3) is not implemented here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from engine.check.anomaly import Anomaly
from engine.check.history import Key

__all__ = ["InputRecord", "OutputRecord", "check_copier"]

#: How many offsets one grouped anomaly lists; the count in its message is exact.
_SHOWN = 20


class InputRecord(NamedTuple):
    """A committed input record: ``value`` at ``offset`` of ``(topic, partition)``."""

    topic: str
    partition: int
    offset: int
    value: str | None = None


class OutputRecord(NamedTuple):
    """A committed output record and the input record it was copied from (its lineage)."""

    topic: str
    partition: int
    offset: int
    source_topic: str
    source_partition: int
    source_offset: int
    value: str | None = None


def _preview(offsets: list[int]) -> str:
    shown = ", ".join(map(str, offsets[:_SHOWN]))
    return shown + (", ..." if len(offsets) > _SHOWN else "")


def check_copier(inputs: Iterable[tuple], outputs: Iterable[tuple], *, check_order: bool = True) -> list[Anomaly]:
    """Return ``copier-lost``, ``copier-duplicate``, ``copier-phantom`` and ``copier-order`` anomalies.

    Parameters
    ----------
    inputs : iterable of InputRecord-like tuples
        ``(topic, partition, offset, ...)`` of every committed input record.
    outputs : iterable of OutputRecord-like tuples
        ``(topic, partition, offset, source_topic, source_partition, source_offset, ...)`` of
        every committed output record.
    check_order : bool
        Also check per-partition input order (the ``check_order`` variant of the Kafka test).
    """
    expected: set[tuple[str, int, int]] = {(r[0], r[1], r[2]) for r in inputs}
    copies: dict[tuple[str, int, int], list[tuple[Key, int]]] = {}
    outs = sorted((o[0], o[1], o[2], o[3], o[4], o[5]) for o in outputs)
    for t, p, o, st, sp, so in outs:
        copies.setdefault((st, sp, so), []).append(((t, p), o))
    out: list[Anomaly] = []

    lost: dict[Key, list[int]] = {}
    for t, p, o in sorted(expected - copies.keys()):
        lost.setdefault((t, p), []).append(o)
    for key, offsets in lost.items():
        out.append(
            Anomaly(
                "copier-lost",
                key,
                tuple(offsets),
                (),
                (),
                f"{len(offsets)} input record(s) of {key[0]}/{key[1]} have no committed output: offsets "
                + _preview(offsets),
            )
        )

    phantom: dict[Key, list[int]] = {}
    for (st, sp, so), where in sorted(copies.items()):
        if (st, sp, so) not in expected:
            for out_key, out_offset in where:
                phantom.setdefault(out_key, []).append(out_offset)
        elif len(where) > 1:
            out.append(
                Anomaly(
                    "copier-duplicate",
                    (st, sp),
                    (so, *(o for _k, o in where)),
                    (),
                    (),
                    f"input {st}/{sp} offset {so} was copied {len(where)} times: "
                    + ", ".join(f"{k[0]}/{k[1]}@{o}" for k, o in where),
                )
            )
    for key, offsets in sorted(phantom.items()):
        out.append(
            Anomaly(
                "copier-phantom",
                key,
                tuple(offsets),
                (),
                (),
                f"{len(offsets)} output record(s) of {key[0]}/{key[1]} name no existing input: offsets "
                + _preview(offsets),
            )
        )

    if check_order:
        # (output key, input key) -> (last input offset, output offset that carried it)
        last: dict[tuple[Key, Key], tuple[int, int]] = {}
        for t, p, o, st, sp, so in outs:
            lane = ((t, p), (st, sp))
            before = last.get(lane)
            if before is not None and so < before[0]:
                out.append(
                    Anomaly(
                        "copier-order",
                        (t, p),
                        (before[1], o),
                        (),
                        (),
                        f"output {t}/{p} offset {o} carries input {st}/{sp}@{so}, after output offset "
                        f"{before[1]} which carried the later input offset {before[0]}",
                    )
                )
            if before is None or so > before[0]:
                last[lane] = (so, o)
    return out
