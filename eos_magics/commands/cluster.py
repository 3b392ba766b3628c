"""``%eos_cluster`` and ``%eos_topic``: build, describe, reset and delete clusters; create topics."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics.errors import EosUsageError
from eos_magics.magics import FamilyMagics, kafka_views
from eos_magics.parsing import key_values


@magics_class
class ClusterMagics(FamilyMagics):
    """Clusters and topics."""

    @line_magic
    @magic_arguments()
    @argument("action", choices=["create", "describe", "reset", "delete", "use", "list"])
    @argument("--name", default=None, help="the cluster's name and variable (default: cluster)")
    @argument("--brokers", type=int, default=None, help="how many brokers (default: %%config EosMagics.brokers)")
    @argument("--seed", type=int, default=None, help="the seed: same seed, same run")
    @argument("--config", nargs="+", metavar="KEY=VALUE", help="broker settings, e.g. min.insync.replicas=2")
    def eos_cluster(self, line: str) -> Any:
        """Create, describe, reset (same seed, fresh run), delete, use or list simulated clusters.

        %eos_cluster create --brokers 3 --seed 42 --config min.insync.replicas=2
        """
        args = parse_argstring(self.eos_cluster, line)
        views = kafka_views()
        s = self.session
        if args.action == "create":
            cluster = s.create_cluster(
                args.name or "cluster", brokers=args.brokers, seed=args.seed, config=key_values(args.config)
            )
            return views.cluster_summary(cluster, s.current)
        if args.brokers is not None or args.seed is not None or args.config:
            raise EosUsageError(f"--brokers, --seed and --config are for create, not {args.action}")
        if args.action == "list":
            return views.clusters(s)
        if args.action == "delete":
            s.delete_cluster(args.name)
            return None
        if args.action == "reset":
            cluster = s.reset_cluster(args.name)
        elif args.action == "use":
            if args.name is None:
                raise EosUsageError("use needs --name NAME")
            cluster = s.use(args.name)
        else:
            cluster = s.entry(args.name).cluster
        return views.cluster_summary(cluster, s.entry(args.name).name)

    @line_magic
    @magic_arguments()
    @argument("action", choices=["create", "describe", "list"])
    @argument("topic", nargs="?", help="the topic's name")
    @argument("--partitions", type=int, default=None, help="how many partitions (default 1)")
    @argument("--replication-factor", "--rf", type=int, default=None, help="replicas per partition (default 3)")
    @argument("--config", nargs="+", metavar="KEY=VALUE", help="topic settings, e.g. min.insync.replicas=2")
    def eos_topic(self, line: str) -> Any:
        """Create a topic, describe one (leaders, ISR, HW, LSO per partition) or list their names.

        ``list`` prints names, one per line, as ``kafka-topics.sh --list`` does (internal topics
        such as ``__consumer_offsets`` included once they exist); ``describe`` without a topic
        describes every user topic, as ``--describe`` without ``--topic`` does.

        %eos_topic create orders --partitions 2 --rf 3 --config min.insync.replicas=2
        """
        args = parse_argstring(self.eos_topic, line)
        views = kafka_views()
        s = self.session
        if args.action == "list":
            if args.topic is not None:
                raise EosUsageError(f"list takes no topic; describe one with %eos_topic describe {args.topic}")
            return _topic_names(s.cluster)
        if args.action == "describe" and args.topic is None:
            return views.topics(s.cluster)
        if args.topic is None:
            raise EosUsageError(f"%eos_topic {args.action} needs a topic name, e.g. %eos_topic {args.action} orders")
        if args.action == "create":
            s.create_topic(args.topic, args.partitions, args.replication_factor, key_values(args.config))
            return views.topics(s.cluster, args.topic)
        return views.topics(s.cluster, s.require_topic(args.topic))


def _topic_names(cluster: Any) -> Any:
    """``kafka-topics.sh --list``: every topic's name, one per line, sorted."""
    from eos_magics.views.base import View

    names = sorted(cluster.topics)
    return View("\n".join(names), title=f"{len(names)} topic{'' if len(names) == 1 else 's'}", data=names)
