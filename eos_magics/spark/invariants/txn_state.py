"""L10 in Spark: per transactional id, epochs never go back and every transition is legal.

Role
----
The twin of :func:`engine.check.invariants.txn_state.check_txn_state`, over the history chosen
for each transactional id (:func:`.decisions.histories`), with the legal predecessors of
``engine.coordinator.txn_state.VALID_PREVIOUS_STATES`` as a literal map in the query.

Invariants
----------
* ``L10-illegal-transition`` per row whose previous state (``EMPTY`` before the first row) is
  not a legal predecessor of its state (key ``("__transaction_state", -1)``, offsets: the row's
  offset, values: the transactional id).
* ``L10-epoch-regression`` per row whose producer id is the previous row's and whose epoch is
  lower (offsets: previous offset, this offset; values: the transactional id).

What it does not do
-------------------
A state name the engine does not know is skipped here (the reference raises ``KeyError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias
from pyspark.sql.window import Window

from engine.check import messages as m
from engine.check.invariants.txn_state import L10_EPOCH, L10_TRANSITION
from engine.coordinator.txn_state import VALID_PREVIOUS_STATES, TransactionState
from engine.coordinator_lookup import TRANSACTION_STATE_TOPIC
from eos_magics.spark.invariants import decisions
from eos_magics.spark.invariants._frames import RUN, emit, sentence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from eos_magics.spark.invariants._frames import Frames

_TOPIC, _PARTITION = TRANSACTION_STATE_TOPIC, -1


def _legal() -> F.Column:
    pairs = []
    for state, before in sorted(VALID_PREVIOUS_STATES.items(), key=lambda kv: kv[0].name):
        pairs += [F.lit(state.name), F.array(*(F.lit(b.name) for b in sorted(before, key=lambda s: s.name)))]
    return F.create_map(*pairs)


def check(fr: Frames) -> list[DataFrame]:
    """Return the L10 anomaly frames."""
    w = Window.partitionBy(RUN, "transactional_id").orderBy("pos")
    rows = (
        decisions.histories(fr)
        .withColumn("before", F.coalesce(F.lag("state").over(w), F.lit(TransactionState.EMPTY.name)))
        .withColumn("prev_pid", F.lag("producer_id").over(w))
        .withColumn("prev_epoch", F.lag("producer_epoch").over(w))
        .withColumn("prev_offset", F.lag("offset").over(w))
        .withColumn("legal", F.try_element_at(_legal(), F.col("state")))
    )
    illegal = rows.where(F.col("legal").isNotNull() & ~F.array_contains("legal", F.col("before")))
    msg_illegal = sentence(m.L10_TRANSITION)
    back = rows.where(
        F.col("prev_pid").isNotNull()
        & (F.col("producer_id") == F.col("prev_pid"))
        & (F.col("producer_epoch") < F.col("prev_epoch"))
    )
    msg_back = sentence(m.L10_EPOCH)
    txn_id = F.array("transactional_id")
    return [
        emit(
            illegal,
            L10_TRANSITION,
            offsets=F.array("offset"),
            values=txn_id,
            message=msg_illegal,
            topic=F.lit(_TOPIC),
            partition=F.lit(_PARTITION),
        ),
        emit(
            back,
            L10_EPOCH,
            offsets=F.array("prev_offset", "offset"),
            values=txn_id,
            message=msg_back,
            topic=F.lit(_TOPIC),
            partition=F.lit(_PARTITION),
        ),
    ]
