"""The rooms of :class:`eos_magics.session.Session`, one concern each; ``Session`` is their one public entry point.

``entries`` (a named cluster and what a new one gets), ``calls`` (argument checks and the engine's
errors as usage errors), ``clusters`` (the named clusters of a session), ``clients`` (topics and
named clients), ``producing`` (records and transactions), ``faults`` (faults and simulated time),
``judge`` (client histories and the EOS check), ``outlets`` (export, the Spark feed, serving),
``catalog`` (scenarios and sweeps), ``databases`` (the last run's service databases, read with SQL).
"""
