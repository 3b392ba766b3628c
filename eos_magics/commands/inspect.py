"""The Kafka tools' views: ``%eos_dump_log``, ``%eos_producer_state``, ``%eos_transactions``, ``%eos_consumer_groups``.

Each returns a view whose plain text is what the real tool prints (``kafka-dump-log.sh``,
``kafka-transactions.sh``, ``kafka-consumer-groups.sh``) and whose HTML adds a picture.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics.errors import EosUsageError
from eos_magics.magics import FamilyMagics, kafka_views

TRANSACTION_STATE = "__transaction_state"


@magics_class
class InspectMagics(FamilyMagics):
    """Look inside: logs, producer state, transactions, consumer groups, partitions, brokers."""

    def _partition(self, topic: str, partition: int) -> tuple[str, int]:
        s = self.session
        s.require_topic(topic)
        n = s.cluster.topics[topic]
        if not 0 <= partition < n:
            raise EosUsageError(f"topic '{topic}' has partitions 0..{n - 1}, not {partition}")
        return topic, partition

    @line_magic
    @magic_arguments()
    @argument("topic", help=f"a topic, or {TRANSACTION_STATE}")
    @argument("--partition", "-p", type=int, default=0, help="the partition (default 0)")
    @argument("--broker", "-b", type=int, default=None, help="read this broker's replica (default: the leader)")
    @argument("--txn-index", action="store_true", help="print the .txnindex (aborted transactions) instead")
    @argument("--transactional-id", default=None, help=f"{TRANSACTION_STATE}: only this transactional id")
    def eos_dump_log(self, line: str) -> Any:
        """A replica's log as ``kafka-dump-log.sh --print-data-log`` prints it, with a picture of it.

        %eos_dump_log orders -p 0            batches, markers, HW, LSO
        %eos_dump_log orders --txn-index     the aborted-transaction index
        %eos_dump_log __transaction_state    the coordinator's log (--transaction-log-decoder)
        """
        args = parse_argstring(self.eos_dump_log, line)
        views = kafka_views()
        c = self.session.cluster
        if args.topic == TRANSACTION_STATE:
            return views.transaction_state(c, args.transactional_id)
        if args.transactional_id is not None:
            raise EosUsageError(f"--transactional-id goes with {TRANSACTION_STATE}")
        topic, partition = self._partition(args.topic, args.partition)
        broker = self._broker(args.broker)
        if args.txn_index:
            return views.txn_index(c, topic, partition, broker)
        return views.dump_log(c, topic, partition, broker)

    def _broker(self, broker: int | None) -> int | None:
        if broker is not None and broker not in self.session.cluster.brokers:
            known = ", ".join(str(b) for b in sorted(self.session.cluster.brokers))
            raise EosUsageError(f"no broker {broker}; brokers are {known}")
        return broker

    @line_magic
    @magic_arguments()
    @argument("topic", help="a topic")
    @argument("--partition", "-p", type=int, default=0, help="the partition (default 0)")
    @argument("--broker", "-b", type=int, default=None, help="this broker's replica (default: the leader)")
    def eos_producer_state(self, line: str) -> Any:
        """The partition's producer-state table: producer id, epoch, sequences, the 5-batch window.

        %eos_producer_state orders -p 0
        """
        args = parse_argstring(self.eos_producer_state, line)
        views = kafka_views()
        topic, partition = self._partition(args.topic, args.partition)
        return views.producer_state(self.session.cluster, topic, partition, self._broker(args.broker))

    @line_magic
    @magic_arguments()
    @argument("action", choices=["list", "describe", "describe-producers", "find-hanging", "abort", "partition"])
    @argument("target", nargs="?", help="describe: a transactional id; the others: a topic")
    @argument("--partition", "-p", type=int, default=None, help="the partition (default 0; find-hanging: all)")
    @argument("--broker", "-b", type=int, default=None, help="describe-producers/find-hanging: this broker")
    @argument("--start-offset", type=int, default=None, help="abort: the hanging transaction's first offset")
    @argument("--max-transaction-timeout", type=int, default=None, help="find-hanging: minutes (default 15)")
    def eos_transactions(self, line: str) -> Any:
        """``kafka-transactions.sh``: list, describe ID, describe-producers TOPIC, find-hanging, abort TOPIC.

        %eos_transactions list
        %eos_transactions describe orders-app
        %eos_transactions describe-producers orders -p 0
        %eos_transactions find-hanging --broker 1
        %eos_transactions abort orders -p 0 --start-offset 12
        %eos_transactions partition orders -p 0     (leader, ISR, HW, LSO of one partition)
        """
        args = parse_argstring(self.eos_transactions, line)
        views = kafka_views()
        c = self.session.cluster
        for flag, value in (
            ("--start-offset", args.start_offset),
            ("--max-transaction-timeout", args.max_transaction_timeout),
        ):
            if value is not None and value < 0:
                raise EosUsageError(f"{flag} must be >= 0, got {value}")
        kw: dict[str, Any] = {}
        if args.action == "describe":
            if args.target is None:
                raise EosUsageError("describe needs a transactional id: %eos_transactions describe orders-app")
            kw["transactional_id"] = args.target
        elif args.action in ("describe-producers", "abort", "partition"):
            if args.target is None:
                raise EosUsageError(f"{args.action} needs a topic: %eos_transactions {args.action} orders -p 0")
            kw["topic"], kw["partition"] = self._partition(args.target, args.partition or 0)
            if args.action == "partition":
                return views.partition(c, kw["topic"], kw["partition"])
            if args.action == "abort":
                if args.start_offset is None:
                    raise EosUsageError("abort needs --start-offset (find it with %eos_transactions find-hanging)")
                kw["start_offset"] = args.start_offset
            else:
                kw["broker"] = self._broker(args.broker)
        elif args.action == "find-hanging":
            if args.target is not None:
                kw["topic"] = args.target
                if args.partition is not None:
                    kw["topic"], kw["partition"] = self._partition(args.target, args.partition)
                else:
                    self.session.require_topic(args.target)
            elif args.broker is None:
                raise EosUsageError("find-hanging needs --broker ID or a topic: %eos_transactions find-hanging -b 1")
            kw["broker"] = self._broker(args.broker)
            if args.max_transaction_timeout is not None:
                kw["max_transaction_timeout"] = args.max_transaction_timeout
        elif args.target is not None:
            raise EosUsageError("list takes no argument")
        return self.session.call_engine(views.transactions, c, args.action, **kw)

    @line_magic
    @magic_arguments()
    @argument("action", choices=["describe", "list"])
    @argument("--group", "-g", default=None, help="describe: the group id")
    @argument("--offsets", action="store_true", help="describe: offsets and lag per partition (the default)")
    @argument("--members", action="store_true", help="describe: one row per member")
    @argument("--state", action="store_true", help="describe: the group's state")
    @argument("--verbose", action="store_true", help="describe --members/--state: epochs and assignments")
    def eos_consumer_groups(self, line: str) -> Any:
        """``kafka-consumer-groups.sh``: describe a group's offsets and lag (to the LSO too), or list groups.

        %eos_consumer_groups describe --group copier --members --verbose
        """
        args = parse_argstring(self.eos_consumer_groups, line)
        views = kafka_views()
        c = self.session.cluster
        flags = [f"--{f}" for f in ("group", "offsets", "members", "state", "verbose") if getattr(args, f)]
        if args.action == "list":
            if flags:
                raise EosUsageError(f"list takes no {flags[0]} (describe does)")
            return views.consumer_groups(c, None)
        if args.group is None:
            raise EosUsageError("describe needs --group GROUP")
        if args.offsets + args.members + args.state > 1:
            raise EosUsageError("describe takes one of --offsets, --members, --state")
        if args.verbose and not (args.members or args.state):
            raise EosUsageError("--verbose goes with --members or --state")
        return views.consumer_groups(c, args.group, members=args.members, state=args.state, verbose=args.verbose)
