"""The Spark bridge: a quiet session, runs as DataFrames, the EOS checks in Spark, a streaming source, sweeps.

Pictures of the analyses (:mod:`~.plots`: the LSO lag over the time it moved) take their pandas.

Nothing here is imported by ``%load_ext eos_magics``; pyspark is imported by the first call that
needs it. The engine never imports this package (it knows no Spark).
"""
