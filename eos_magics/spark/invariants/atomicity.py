"""L6 (atomicity) in Spark: each partition's markers match the coordinator's decisions, one for one.

Role
----
The twin of :func:`engine.check.invariants.transactions.check_atomicity`. Per (run, partition,
producer id) the markers of the authoritative log (in offset order) are aligned with the
decisions naming that partition (:mod:`.decisions`, in the reference's order) by a fold in SQL
(``aggregate``), the same greedy walk as the reference's ``_align``: a marker equal (epoch,
type) to the next decision consumes it; one equal to the previous decision is a duplicate (L4's);
one equal to a later decision marks the decisions skipped as missing; any other marker matches
nothing.

Invariants
----------
* ``L6-atomicity`` per missing decision (no offsets) and per marker matching nothing (offsets:
  the marker); a producer with decisions naming a partition but no marker there misses them
  all (only partitions the run knows are looked at).
* Under transaction version 2, for producers with no decision at all, one (producer id, epoch)
  with both COMMIT and ABORT markers across partitions is one ``L6-atomicity`` with no key
  (offsets: the markers, ordered by type, partition, offset).
* ``L6-incomplete`` per decision never completed (no key; offsets: its ``__transaction_state``
  offset).

What it does not do
-------------------
It does not check consumer-offset commits staged by a transaction (the copier's L11 does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias

from engine.check import messages as msg
from engine.check.invariants.transactions import L6_ATOMICITY, L6_INCOMPLETE
from eos_magics.spark.invariants import decisions
from eos_magics.spark.invariants._frames import RUN, TP, emit, sentence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from eos_magics.spark.invariants._frames import Frames

_PRODUCER = [*TP, "producer_id"]
_WANT = "named_struct('epoch', m.epoch, 'ctype', m.ctype)"
_AHEAD = f"array_position(slice(keys, acc.i + 1, greatest(size(keys) - acc.i, 0)), {_WANT})"
_ALIGN = f"""
aggregate(markers,
  named_struct('i', 0, 'miss', cast(array() as array<int>),
               'bad', cast(array() as array<struct<offset:bigint,epoch:bigint,ctype:string>>)),
  (acc, m) -> CASE
    WHEN get(keys, acc.i) = {_WANT} THEN named_struct('i', acc.i + 1, 'miss', acc.miss, 'bad', acc.bad)
    WHEN acc.i > 0 AND get(keys, acc.i - 1) = {_WANT} THEN acc
    WHEN {_AHEAD} > 0 THEN named_struct(
      'i', cast(acc.i + {_AHEAD} as int),
      'miss', concat(acc.miss, IF({_AHEAD} > 1, sequence(acc.i, cast(acc.i + {_AHEAD} - 2 as int)), array())),
      'bad', acc.bad)
    ELSE named_struct('i', acc.i, 'miss', acc.miss, 'bad', concat(acc.bad, array(m)))
  END,
  acc -> named_struct(
    'miss', concat(acc.miss, IF(acc.i < size(keys), sequence(acc.i, size(keys) - 1), array())),
    'bad', acc.bad))
"""


def _markers(fr: Frames) -> DataFrame:
    closed = fr.auth_spans.where(F.col("marker_offset").isNotNull())
    mark = F.struct(
        F.col("marker_offset").alias("offset"),
        F.col("marker_epoch").alias("epoch"),
        F.col("control_type").alias("ctype"),
    )
    return closed.groupBy(*_PRODUCER).agg(F.sort_array(F.collect_list(mark)).alias("markers"))


def aligned(fr: Frames) -> DataFrame:
    """L6-atomicity of producers the coordinator knows: missing decisions and markers matching none."""
    decided = decisions.by_partition(fr)
    known = decisions.decisions(fr).select(RUN, "producer_id").distinct()
    dec = F.struct(
        "rank",
        F.col("producer_epoch").alias("epoch"),
        F.col("control_type").alias("ctype"),
        "transactional_id",
    )
    decs = decided.join(fr.partition_keys, TP).groupBy(*_PRODUCER).agg(F.sort_array(F.collect_list(dec)).alias("decs"))
    df = (
        _markers(fr)
        .join(known, [RUN, "producer_id"])
        .join(decs, _PRODUCER, "full")
        .select(
            *_PRODUCER,
            F.expr("coalesce(markers, array())").alias("markers"),
            F.expr("coalesce(decs, array())").alias("decs"),
        )
        .withColumn("keys", F.expr("transform(decs, d -> named_struct('epoch', d.epoch, 'ctype', d.ctype))"))
        .withColumn("walk", F.expr(_ALIGN))
    )
    missing = df.select(*_PRODUCER, F.explode("walk.miss").alias("k"), "decs").select(
        *_PRODUCER, F.expr("get(decs, k)").alias("d")
    )
    msg_missing = sentence(
        msg.L6_MISSING,
        transactional_id=F.col("d.transactional_id"),
        control_type=F.col("d.ctype"),
        producer_epoch=F.col("d.epoch"),
    )
    decided_text = F.expr(
        "IF(size(decs) = 0, 'nothing', array_join(transform(decs, d -> concat(d.ctype, '@', d.epoch)), ', '))"
    )
    bad = df.select(*_PRODUCER, F.explode("walk.bad").alias("m"), decided_text.alias("decided"))
    msg_bad = sentence(
        msg.L6_UNDECIDED, control_type=F.col("m.ctype"), marker_offset=F.col("m.offset"), marker_epoch=F.col("m.epoch")
    )
    return emit(missing, L6_ATOMICITY, offsets=F.array(), message=msg_missing).unionByName(
        emit(bad, L6_ATOMICITY, offsets=F.array("m.offset"), message=msg_bad)
    )


def disagreeing(fr: Frames) -> DataFrame:
    """L6-atomicity under transaction version 2 for producers without decisions: COMMIT and ABORT of one epoch."""
    known = decisions.decisions(fr).select(RUN, "producer_id").distinct()
    where = F.struct(F.col("control_type").alias("ctype"), "topic", "partition", F.col("marker_offset").alias("offset"))
    df = (
        fr.auth_spans.where(F.col("marker_offset").isNotNull())
        .join(known, [RUN, "producer_id"], "left_anti")
        .groupBy(RUN, "producer_id", "marker_epoch")
        .agg(F.size(F.collect_set("control_type")).alias("types"), F.sort_array(F.collect_list(where)).alias("where"))
        .where(F.col("types") > 1)
        .join(fr.versions, RUN, "left")
        .where(F.coalesce(F.col("transaction_version"), F.lit(2)) >= 2)
    )
    places = F.expr(
        "array_join(transform(where, w -> concat(w.ctype, ' in ', w.topic, '-', w.partition, '@', w.offset)), ', ')"
    )
    message = sentence(msg.L6_DISAGREE, places=places)
    return emit(df, L6_ATOMICITY, offsets=F.expr("transform(where, w -> w.offset)"), message=message, keyed=False)


def incomplete(fr: Frames) -> DataFrame:
    """L6-incomplete: a decision never followed by its COMPLETE_*."""
    df = decisions.decisions(fr).where(~F.col("completed"))
    message = sentence(msg.L6_INCOMPLETE)
    return emit(df, L6_INCOMPLETE, offsets=F.array("offset"), message=message, keyed=False)


def check(fr: Frames) -> list[DataFrame]:
    """Return the L6 anomaly frames."""
    return [aligned(fr), disagreeing(fr), incomplete(fr)]
