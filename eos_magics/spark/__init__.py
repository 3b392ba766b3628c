"""The Spark bridge: a quiet session, runs as DataFrames, the EOS checks in Spark, a streaming source, sweeps.

Spark's own Kafka source and sink on a served cluster (:mod:`~.kafka`: spark-sql-kafka-0-10's
jars, options and the engine's log to judge what it read) are the other way in, over the wire.

Pictures of the analyses (:mod:`~.plots`: the LSO lag over the time it moved) take their pandas.

Nothing here is imported by ``%load_ext eos_magics``; pyspark is imported by the first call that
needs it. The engine never imports this package (it knows no Spark).
"""
