"""``%eos_producer``, ``%eos_consumer``, ``%eos_produce``, ``%eos_consume``: clients and their records."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics import said
from eos_magics.magics import FamilyMagics
from eos_magics.parsing import key_values, topic_partitions


@magics_class
class ClientMagics(FamilyMagics):
    """Producers, consumers, and what they send and read."""

    @line_magic
    @magic_arguments()
    @argument("name", help="the producer's variable name, e.g. p1")
    @argument("--transactional-id", "-t", default=None, help="make it transactional (runs init_transactions)")
    @argument("--no-init", action="store_true", help="with -t: do not run init_transactions() yet")
    @argument("--config", nargs="+", metavar="KEY=VALUE", help="producer settings, e.g. linger.ms=5 acks=all")
    def eos_producer(self, line: str) -> Any:
        """Create an idempotent producer (transactional with -t) bound to NAME; returns it.

        %eos_producer p1 -t orders-app --config transaction.timeout.ms=10000
        """
        args = parse_argstring(self.eos_producer, line)
        s = self.session
        p = s.producer(
            args.name, transactional_id=args.transactional_id, config=key_values(args.config), init=not args.no_init
        )
        if args.transactional_id is not None and not args.no_init:
            s.say(said.transaction(s.cluster, p, "init"))
        return p

    @line_magic
    @magic_arguments()
    @argument("name", help="the consumer's variable name, e.g. c1")
    @argument("--group", "-g", default=None, help="group.id (needed for --subscribe and offset commits)")
    @argument(
        "--isolation",
        "-i",
        default=None,
        choices=["read_committed", "read_uncommitted"],
        help="isolation.level (default: %%config EosMagics.isolation_level)",
    )
    @argument("--assign", "-a", nargs="+", metavar="TOPIC:PARTITION", help="assign partitions, e.g. orders:0")
    @argument("--subscribe", "-s", nargs="+", metavar="TOPIC", help="subscribe to topics (with --group)")
    @argument("--config", nargs="+", metavar="KEY=VALUE", help="consumer settings, e.g. enable.auto.commit=false")
    def eos_consumer(self, line: str) -> Any:
        """Create a consumer bound to NAME, assigned or subscribed; returns it.

        %eos_consumer c1 --isolation read_committed --assign orders:0 orders:1
        """
        args = parse_argstring(self.eos_consumer, line)
        return self.session.consumer(
            args.name,
            group_id=args.group,
            isolation_level=args.isolation,
            assign=topic_partitions(args.assign),
            subscribe=args.subscribe,
            config=key_values(args.config),
        )

    @line_magic
    @magic_arguments()
    @argument("producer", help="a producer's name")
    @argument("topic", help="the topic")
    @argument("values", nargs="+", help="record values, one record each (quote values with spaces)")
    @argument("--key", "-k", default=None, help="the records' key (the partitioner hashes it)")
    @argument("--partition", "-p", type=int, default=None, help="the partition (default: by key, or sticky)")
    @argument("--header", nargs="+", metavar="KEY=VALUE", help="record headers")
    @argument("--no-wait", action="store_true", help="queue only: do not flush (reports come later)")
    def eos_produce(self, line: str) -> Any:
        """Produce records and (unless --no-wait) flush; returns the delivery reports (offsets or errors).

        %eos_produce p1 orders o-1 o-2 o-3 --partition 0
        """
        args = parse_argstring(self.eos_produce, line)
        return self.session.produce(
            args.producer,
            args.topic,
            args.values,
            key=args.key,
            partition=args.partition,
            headers=key_values(args.header, "--header") or None,
            wait=not args.no_wait,
        )

    @line_magic
    @magic_arguments()
    @argument("consumer", help="a consumer's name")
    @argument("--max", "-n", type=int, default=100, help="at most this many records (default 100)")
    @argument("--timeout", type=float, default=1.0, help="wait at most this many simulated seconds (default 1)")
    def eos_consume(self, line: str) -> Any:
        """Poll a consumer; returns the records read (topic, partition, offset, key, value).

        %eos_consume c1 --max 10
        """
        args = parse_argstring(self.eos_consume, line)
        return self.session.consume(args.consumer, args.max, args.timeout)
