"""Record batches flattened into records: one batch's offsets, sequences, keys and values, aligned.

Role
----
A batch holds its records as parallel tuples (``keys``, ``values``) under batch-wide fields
(``base_offset``, ``base_sequence``, the producer); every reader that shows records one a row
(the ground truth's ``records``, the exported ``records`` table, the Spark feed) needs the same
per-record columns. :func:`records_of` computes them once, for any batch-shaped value: an engine
:class:`~engine.log.records.RecordBatch` or a ground-truth ``BatchRow``.

Invariants
----------
* Record ``i`` has offset ``base_offset + i`` and sequence ``base_sequence + i``, or -1 when the
  batch has no sequence (``base_sequence`` < 0: not idempotent, or a control batch).
* ``keys`` has one entry per value: a batch with fewer keys than values gives None for the rest.
* Read only: the batch is not changed.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

__all__ = ["BatchRecords", "records_of"]


class _BatchLike(Protocol):
    @property
    def base_offset(self) -> int: ...

    @property
    def base_sequence(self) -> int: ...

    @property
    def keys(self) -> Any: ...

    @property
    def values(self) -> Any: ...


class BatchRecords(NamedTuple):
    """The records of one batch as aligned columns (all of one length)."""

    offsets: range
    sequences: range | list[int]
    keys: list[Any]
    values: list[Any]


def records_of(batch: _BatchLike) -> BatchRecords:
    """Return the per-record columns of one batch (see the module docstring).

    >>> from engine.log.records import RecordBatch
    >>> records_of(RecordBatch(base_offset=10, keys=("k",), values=(b"a", b"b"), base_sequence=4))
    BatchRecords(offsets=range(10, 12), sequences=range(4, 6), keys=['k', None], values=[b'a', b'b'])
    """
    values = list(batch.values)
    n = len(values)
    keys = list(batch.keys[:n])
    keys.extend([None] * (n - len(keys)))
    base = batch.base_sequence
    sequences = range(base, base + n) if base >= 0 else [-1] * n
    return BatchRecords(range(batch.base_offset, batch.base_offset + n), sequences, keys, values)
