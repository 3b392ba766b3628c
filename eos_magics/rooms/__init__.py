"""The rooms :class:`eos_magics.session.Session` holds, one concern each; ``Session`` is their one public entry point.

Each room is an object that owns its state (declared in its ``__init__``) and is handed the rooms it
needs: ``clusters`` (the named clusters of a session; every other room but the catalog's two is
handed it), ``clients`` (topics and named clients), ``producing`` (records and transactions;
handed the clients), ``faults`` (faults and simulated time), ``judge`` (client histories and the
EOS check), ``outlets`` (export, the Spark feed, serving), ``catalog`` (scenarios and sweeps; it
keeps the last run), ``databases`` (the last run's service databases, read with SQL; handed the
catalog). ``entries`` (a named cluster and what a new one gets) and ``calls`` (argument checks and
the engine's errors as usage errors) are the plain functions and records they share.
"""
