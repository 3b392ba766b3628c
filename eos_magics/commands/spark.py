"""``%eos_spark``: the Spark session, temp views, the checks in Spark, a live stream, the Kafka source, sweeps.

======================================  ========================================================
line                                    does
======================================  ========================================================
``start [--master URL] [--memory M]``   start (or reuse) the quiet session; bound as ``spark``
``[--kafka]``                           (``--kafka``: Spark's Kafka source's jars required)
``status``                              what runs: master, version, memory, the JVM log file
``stop``                                stop the session and its JVM (a local one)
``views [--scenario S --seed N          register a run as temp views (``records``,
[--mutant M] | --dir D] [--prefix P]``  ``history`` ...): the current cluster by default
``check [--prefix P] [--mode M]``       the EOS checks in Spark over the registered views
``stream TOPIC [--isolation L]``        a streaming DataFrame of a topic of the current cluster
``kafka [TOPIC] [--isolation L]         Spark's own Kafka source on the served cluster (``%eos_serve``):
[--stream]``                            the topic as a DataFrame, or without one the options
``sweep S --seeds A..B [--mutant M]``   seeds mapped over the executors: a DataFrame of verdicts
======================================  ========================================================

Spark is imported by the first ``%eos_spark`` line, never by ``%load_ext``.
"""

from __future__ import annotations

import shlex
from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics.errors import EosUsageError, did_you_mean, require
from eos_magics.magics import FamilyMagics
from eos_magics.parsing import phrase

ACTIONS = ("start", "status", "stop", "views", "check", "stream", "kafka", "sweep")


@magics_class
class SparkMagics(FamilyMagics):
    """The Spark bridge."""

    @line_magic
    @magic_arguments()
    @argument("action", help=f"one of {', '.join(ACTIONS)}")
    @argument(
        "target",
        nargs="*",
        help="stream, kafka: the topic; sweep: the scenario or 'all' (spaces allowed, no quotes needed)",
    )
    @argument("--master", help="start: local[N], spark://HOST:PORT, yarn, k8s://URL or sc://HOST:PORT")
    @argument("--memory", help="start: driver memory such as 512m (fixed when the JVM first starts)")
    @argument("--kafka", action="store_true", help="start: with Spark's Kafka source (spark-sql-kafka-0-10) required")
    @argument("--stream", action="store_true", help="kafka: a streaming DataFrame (readStream) instead of a batch")
    @argument("--scenario", help="views: a catalog scenario to run and register")
    @argument("--seed", type=int, default=7, help="views: the scenario's seed (default 7)")
    @argument("--seeds", help="sweep: seeds as A..B or a count N (1..N)")
    @argument("--mutant", help="views, sweep: a weakened configuration M1..M19")
    @argument("--dir", help="views: an export directory (eos export ... --out DIR)")
    @argument("--prefix", default="", help="views, check: put before every view name")
    @argument("--mode", default=None, help="check: eos, subscribe or at-least-once (default: the run's own)")
    @argument("--isolation", default="read_committed", help="stream, kafka: read_committed or read_uncommitted")
    @argument("--name", help="views, stream, kafka: the session cluster (default: the current one)")
    def eos_spark(self, line: str) -> Any:
        """Spark over the simulated cluster: a quiet session, runs as temp views, checks, a stream, sweeps.

        ``%eos_spark start`` binds the session as ``spark``; ``%eos_spark views`` registers the
        current cluster (or ``--scenario``, or ``--dir``) as temp views for ``spark.sql``;
        ``%eos_spark check`` judges them in Spark; ``%eos_spark stream orders --isolation
        read_committed`` gives a streaming DataFrame of a topic as a consumer at that level sees
        it, live; ``%eos_spark kafka orders --isolation read_committed`` reads the served cluster
        (``%eos_serve``) with Spark's own Kafka source (``--stream`` for a stream; no topic: the
        options for ``spark.read.format("kafka")``); ``%eos_spark sweep NAME --seeds 1..50`` runs
        seeds on the executors.
        """
        args = parse_argstring(self.eos_spark, line)
        require("pyspark", "%eos_spark")
        args.target = phrase(args.target) or None
        args.scenario = phrase(args.scenario) or None
        if args.action not in ACTIONS:
            raise EosUsageError(
                f"unknown action {args.action!r}{did_you_mean(args.action, ACTIONS)}; use one of {', '.join(ACTIONS)}"
            )
        return getattr(self, f"_{args.action}")(args)

    # -- the session --------------------------------------------------------------------------

    def _start(self, args: Any) -> Any:
        from eos_magics.spark import session

        spark = _bridge(session.start, args.master, memory=args.memory, kafka=True if args.kafka else None)
        self.session.bind("spark", spark)
        return session.status()

    def _status(self, args: Any) -> Any:
        from eos_magics.spark import session

        return session.status() or "Spark is not running; start it with %eos_spark start"

    def _stop(self, args: Any) -> str:
        from eos_magics.spark import session

        return "Spark stopped" if session.stop() else "Spark was not running"

    def _spark(self) -> Any:
        from eos_magics.spark import session

        running = session.active()
        if running is None:
            raise EosUsageError("Spark is not running; start it first: %eos_spark start")
        return running

    # -- data -------------------------------------------------------------------------------

    def _views(self, args: Any) -> Any:
        from eos_magics.spark.views import register

        spark = self._spark()
        if args.dir and args.scenario:
            raise EosUsageError("give --dir or --scenario, not both")
        if args.dir:
            source: Any = args.dir
        elif args.scenario:
            source = _run_scenario(args.scenario, args.seed, args.mutant)
        else:
            source = self.session.export(args.name)
        views = _bridge(register, spark, source, prefix=args.prefix)
        return ViewList(views, args.prefix)

    def _check(self, args: Any) -> Any:
        from eos_magics.spark.verdict import check_views

        spark = self._spark()
        return _bridge(check_views, spark, prefix=args.prefix, mode=args.mode)

    def _stream(self, args: Any) -> Any:
        from eos_magics.spark.source import read_stream

        if not args.target:
            raise EosUsageError("name the topic: %eos_spark stream TOPIC [--isolation read_committed]")
        spark = self._spark()
        topic = self.session.require_topic(args.target) if args.name is None else args.target
        feed = self.session.feed(args.name)
        return _bridge(read_stream, spark, feed, topic, isolation=args.isolation)

    def _kafka(self, args: Any) -> Any:
        from eos_magics.spark import kafka

        entry = self.session.entry(args.name)
        served = entry.served
        if served is None:
            raise EosUsageError(f"cluster '{entry.name}' is not served; serve it first: %eos_serve")
        if not args.target:
            return KafkaOptions(_bridge(kafka.options, served, isolation=args.isolation))
        spark = self._spark()
        topic = self.session.require_topic(args.target) if args.name is None else args.target
        return _bridge(kafka.read, spark, served, topic, isolation=args.isolation, stream=args.stream)

    def _sweep(self, args: Any) -> Any:
        from eos_magics.spark.sweep import seeds_option, sweep

        if not args.target:
            raise EosUsageError("name the scenario: %eos_spark sweep NAME --seeds 1..50")
        spark = self._spark()
        seeds = seeds_option(args.seeds) if args.seeds else "1..10"
        return _bridge(sweep, spark, args.target, seeds, args.mutant)


class KafkaOptions(dict):
    """The options of Spark's Kafka source for a served cluster: ``spark.read.format("kafka").options(**it)``."""

    def __repr__(self) -> str:
        lines = [f"    .option({k!r}, {v!r})" for k, v in self.items()]
        return "\n".join(['spark.read.format("kafka")', *lines, '    .option("subscribe", TOPIC).load()'])

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


class ViewList:
    """The temp views ``%eos_spark views`` registered: ``.views`` by view name, ``.tables`` by table name."""

    def __init__(self, views: dict[str, Any], prefix: str = "") -> None:
        self.views = views
        self.prefix = prefix

    @property
    def tables(self) -> dict[str, Any]:
        """The DataFrames by table name (the prefix taken off): what ``eos_magics.spark.analyses`` takes."""
        return {name[len(self.prefix) :]: df for name, df in self.views.items()}

    def __getitem__(self, name: str) -> Any:
        return self.views[name]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.views)

    def __repr__(self) -> str:
        names = " ".join(shlex.quote(n) for n in self.views)
        return f"temp views: {names}\nquery them with spark.sql('SELECT ... FROM {next(iter(self.views), 'records')}')"


def _run_scenario(name: str, seed: int, mutant: str | None) -> Any:
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.harness import run_spec
    from engine.scenarios.mutants import MUTANTS, get_mutant

    if name not in BY_NAME:
        raise EosUsageError(f"no catalog scenario {name!r}{did_you_mean(name, BY_NAME)}; list them: %eos_scenario list")
    m = None
    if mutant:
        try:
            m = get_mutant(mutant)
        except KeyError:
            raise EosUsageError(
                f"no mutant {mutant!r}{did_you_mean(mutant, MUTANTS)}; list them: %eos_scenario mutants"
            ) from None
    return run_spec(BY_NAME[name], seed, mutant=m)


def _bridge(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the bridge; its one-line errors become usage errors (one line in the notebook)."""
    from eos_magics.spark.errors import SparkBridgeError

    try:
        return fn(*args, **kwargs)
    except SparkBridgeError as exc:
        raise EosUsageError(str(exc)) from None
