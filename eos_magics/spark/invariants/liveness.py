"""L14 in Spark: at the end every partition has a live, loaded leader whose LSO reached its HW.

Role
----
The twin of :func:`engine.check.invariants.liveness.check_liveness`: ``partitions`` joined with
the replica row of the controller's leader.

Invariants
----------
* ``L14-no-leader`` per partition whose leader is none (-1), has no replica row, is not ``up``
  or not loaded as leader (no offsets).
* ``L14-lso-below-hw`` per other partition whose leader's LSO is known and not its HW
  (offsets: LSO, HW).

What it does not do
-------------------
The copier-finishes and visibility-lag parts of liveness are the workload checkers'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias

from engine.check import messages as m
from engine.check.invariants.liveness import L14_LSO, L14_NO_LEADER
from eos_magics.spark.invariants._frames import TP, emit, sentence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from eos_magics.spark.invariants._frames import Frames


def check(fr: Frames) -> list[DataFrame]:
    """Return the L14 anomaly frames."""
    reps = fr.t["replicas"].select(
        *TP,
        F.col("broker_id").alias("leader"),
        F.lit(True).alias("_found"),
        "status",
        "is_leader",
        F.col("hw").cast("long").alias("hw"),
        F.col("lso").cast("long").alias("lso"),
    )
    parts = fr.t["partitions"].select(*TP, "leader")
    df = parts.join(reps, [*TP, "leader"], "left")
    found = F.coalesce(F.col("_found"), F.lit(False)) & (F.col("leader") >= 0)
    led = found & (F.col("status") == "up") & F.col("is_leader")
    status = F.when(F.col("_found").isNull(), "no replica").otherwise(F.col("status"))
    why = F.when(F.col("leader") < 0, "none").otherwise(sentence(m.L14_LEADER, status=status))
    none = df.where(~led)
    msg_none = sentence(m.L14_NO_LEADER, why=why)
    stuck = df.where(led & F.col("lso").isNotNull() & (F.col("lso") != F.col("hw")))
    msg_stuck = sentence(m.L14_LSO)
    return [
        emit(none, L14_NO_LEADER, offsets=F.array(), message=msg_none),
        emit(stuck, L14_LSO, offsets=F.array("lso", "hw"), message=msg_stuck),
    ]
