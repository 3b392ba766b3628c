"""The black-box EOS checks over exported client histories, in Spark (one module per checker family).

:func:`eos_magics.spark.history_checks.check_history_spark` is the entry point; the modules
here hold the pieces: :mod:`~eos_magics.spark.checks.frames` (the shared intermediates),
:mod:`~eos_magics.spark.checks.offsets_dups`, :mod:`~eos_magics.spark.checks.lost_writes`,
:mod:`~eos_magics.spark.checks.aborted_reads`, :mod:`~eos_magics.spark.checks.polls`,
:mod:`~eos_magics.spark.checks.sends` and :mod:`~eos_magics.spark.checks.cycles`; the driver
words the collected rows with :func:`engine.check.messages.history_anomaly`. Importing any of
them imports pyspark.
"""
