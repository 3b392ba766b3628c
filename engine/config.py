"""Configuration with Kafka's own key names.

Users pass dicts keyed exactly as in Kafka (``"enable.idempotence"``, ``"acks"``,
``"min.insync.replicas"``); each is parsed into a frozen dataclass whose fields are the same
names in snake_case. Unknown keys and bad values raise :class:`~engine.errors.ConfigError`
naming the key, with a "did you mean" suggestion, before anything starts.

Defaults are Kafka's (4.x) except where a simulated run needs a shorter time; each such
difference is marked "sim default" in the field's comment.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
from collections.abc import Mapping
from typing import Any, TypeVar

from engine.errors import ConfigError

T = TypeVar("T")


def _key(field_name: str) -> str:
    return field_name.replace("_", ".")


#: An optional field (default None, e.g. a topic override) is coerced as its annotation's type.
_OPTIONAL_TYPES = {"int | None": 0, "bool | None": False}


def _coerce(key: str, value: Any, default: Any, annotation: Any = None) -> Any:
    if default is None and value is not None:
        default = _OPTIONAL_TYPES.get(str(annotation))
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(key, value, "must be true or false")
    if isinstance(default, int) and default is not None:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ConfigError(key, value, "must be an integer")
        try:
            return int(value)
        except ValueError:
            raise ConfigError(key, value, "must be an integer") from None
    return value


def parse_config(cls: type[T], values: Mapping[str, Any] | None, *, what: str, extra_keys: tuple[str, ...] = ()) -> T:
    """Build ``cls`` from a dict of Kafka-named keys; raise ConfigError on unknown keys or bad values."""
    fields = {_key(f.name): f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in (values or {}).items():
        if key in extra_keys:
            continue
        f = fields.get(key)
        if f is None:
            close = difflib.get_close_matches(key, list(fields), n=1)
            fix = f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(sorted(fields))}"
            raise ConfigError(key, value, f"unknown {what} configuration", fix=fix)
        kwargs[f.name] = _coerce(key, value, f.default, f.type)
    return cls(**kwargs)


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Broker and cluster settings (Kafka names, dots become underscores)."""

    default_replication_factor: int = 3
    #: A Metadata request naming an unknown topic creates it (Kafka's ``auto.create.topics.enable``);
    #: only wire clients (``eos serve``) ask so: the engine's own clients never do.
    auto_create_topics_enable: bool = True
    #: The partition count of an auto-created topic (Kafka's ``num.partitions``).
    num_partitions: int = 1
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_backoff_ms: int = 1_000
    replica_fetch_max_bytes: int = 1 << 20
    broker_heartbeat_interval_ms: int = 2_000
    broker_session_timeout_ms: int = 9_000
    log_segment_bytes: int = 1 << 20  # sim default: Kafka's is 1 GiB
    #: The largest record batch a leader appends (its encoded size, compressed as sent); a bigger
    #: one is refused with MESSAGE_TOO_LARGE. Kafka's default: 1 MiB plus the 12-byte log overhead.
    message_max_bytes: int = 1_048_588
    log_flush_interval_ms: int = 1_000  # sim default: the OS page-cache flush period
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    transaction_max_timeout_ms: int = 900_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_version: int = 2
    group_initial_rebalance_delay_ms: int = 0  # sim default: Kafka's is 3 s
    #: KIP-848 consumer groups: a member not heard from in this long is fenced (Kafka's default).
    group_consumer_session_timeout_ms: int = 45_000
    #: KIP-848: the heartbeat interval the coordinator tells members (Kafka's default).
    group_consumer_heartbeat_interval_ms: int = 5_000
    #: KIP-848 server-side assignors offered, the first the default (Kafka's default).
    group_consumer_assignors: str = "uniform,range"
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_interval_ms: int = 600_000

    def __post_init__(self) -> None:
        if self.min_insync_replicas < 1:
            raise ConfigError("min.insync.replicas", self.min_insync_replicas, "must be at least 1")
        if self.num_partitions < 1:
            raise ConfigError("num.partitions", self.num_partitions, "must be at least 1")
        if self.transaction_version not in (1, 2):
            raise ConfigError("transaction.version", self.transaction_version, "must be 1 or 2")
        if self.message_max_bytes < 0:
            raise ConfigError("message.max.bytes", self.message_max_bytes, "must be at least 0")


def cluster_config(
    brokers: int,
    config: Mapping[str, Any] | None = None,
    *,
    min_insync_replicas: int = 2,
    replication_factor: int = 3,
) -> dict[str, Any]:
    """Return the broker settings a new test or notebook cluster gets: a durable shape its size allows.

    Kafka's own defaults (``min.insync.replicas=1``) would let an acked write live on one replica;
    the notebook's and the pytest plugin's clusters ask for 2 of 3, each capped at ``brokers``.

    Parameters
    ----------
    brokers : int
        How many brokers the cluster has.
    config : mapping, optional
        Kafka broker settings; they win over the shape.
    min_insync_replicas, replication_factor : int
        ``min.insync.replicas`` and ``default.replication.factor`` (each at most ``brokers``).

    Returns
    -------
    dict
        The configuration to build the cluster with.
    """
    cfg: dict[str, Any] = {
        "min.insync.replicas": min(min_insync_replicas, brokers),
        "default.replication.factor": min(replication_factor, brokers),
    }
    cfg.update(config or {})
    return cfg


@dataclasses.dataclass(frozen=True, slots=True)
class TopicConfig:
    """Per-topic overrides."""

    min_insync_replicas: int | None = None
    unclean_leader_election_enable: bool | None = None
    segment_bytes: int | None = None
    #: Overrides the broker's ``message.max.bytes`` for this topic (Kafka's ``max.message.bytes``).
    max_message_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.max_message_bytes is not None and self.max_message_bytes < 0:
            raise ConfigError("max.message.bytes", self.max_message_bytes, "must be at least 0")


class IsolationLevel(enum.StrEnum):
    """The consumer's ``isolation.level``: which records its fetches may return (KIP-98).

    ``read_uncommitted`` reads up to the high watermark, aborted and open transactions included;
    ``read_committed`` reads only up to the last stable offset and drops aborted transactions
    (:mod:`engine.client.read_committed`). A ``str`` subclass (``StrEnum``: ``str`` plus ``Enum``)
    equal to Kafka's spelling, so code that compares with ``"read_committed"`` keeps working, and
    ``str()`` gives that spelling. The one type end to end: the consumer config holds it, requests
    (``FetchRequest``, ``ListOffsetsRequest``) carry it, the broker compares with it, and the wire
    codec converts it to and from Kafka's int at the edge. Validation messages list
    ``tuple(IsolationLevel)``: ``read_committed`` first, as Kafka's docs name them.
    """

    READ_COMMITTED = "read_committed"
    READ_UNCOMMITTED = "read_uncommitted"


#: Client keys a copied confluent-kafka config carries that mean nothing here: accepted, ignored.
IGNORED_CLIENT_KEYS = ("bootstrap.servers",)

ACKS = {"all": -1, "-1": -1, -1: -1, "1": 1, 1: 1, "0": 0, 0: 0}


@dataclasses.dataclass(frozen=True, slots=True)
class ProducerConfig:
    """Producer settings with Kafka's names and defaults (Kafka ≥ 3.0: idempotence on)."""

    client_id: str = ""
    enable_idempotence: bool = True
    acks: Any = "all"
    retries: int = 2_147_483_647
    max_in_flight_requests_per_connection: int = 5
    batch_size: int = 16_384
    linger_ms: int = 5
    request_timeout_ms: int = 30_000
    delivery_timeout_ms: int = 120_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1_000
    metadata_max_age_ms: int = 300_000
    max_request_size: int = 1_048_576
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000
    max_block_ms: int = 60_000

    @property
    def transactional(self) -> bool:
        """Whether the producer is transactional: ``transactional.id`` is set.

        The one place that decides it: the producer, its transaction manager, the cluster, the
        drop-in and the views all ask this (Kafka's ``ProducerConfig`` reads ``transactional.id``
        the same way in ``KafkaProducer.configureTransactionState``).
        """
        return self.transactional_id is not None

    @classmethod
    def transactional_in(cls, values: Mapping[str, Any] | None) -> bool:
        """Return :attr:`transactional` for a Kafka-named dict not parsed yet (the drop-in's librdkafka layer)."""
        return cls(transactional_id=(values or {}).get("transactional.id")).transactional

    def __post_init__(self) -> None:
        if self.acks not in ACKS:
            raise ConfigError("acks", self.acks, "must be one of 'all', -1, 0, 1")
        object.__setattr__(self, "acks", ACKS[self.acks])
        if self.transactional_id is not None and not self.enable_idempotence:
            raise ConfigError(
                "enable.idempotence",
                False,
                "a transactional producer must be idempotent",
                fix="remove 'enable.idempotence': False",
            )
        if self.enable_idempotence:
            if self.acks != -1:
                raise ConfigError(
                    "acks",
                    self.acks,
                    "must be 'all' when enable.idempotence is true",
                    fix="set acks='all', or enable.idempotence=False",
                )
            if self.retries == 0:
                raise ConfigError(
                    "retries",
                    0,
                    "must be above 0 when enable.idempotence is true",
                    fix="raise retries, or set enable.idempotence=False",
                )
            if self.max_in_flight_requests_per_connection > 5:
                raise ConfigError(
                    "max.in.flight.requests.per.connection",
                    self.max_in_flight_requests_per_connection,
                    "must be at most 5 when enable.idempotence is true: the broker keeps only the last 5 "
                    "batches per producer",
                    fix="use 5 or fewer",
                )
        if self.max_in_flight_requests_per_connection < 1:
            raise ConfigError(
                "max.in.flight.requests.per.connection",
                self.max_in_flight_requests_per_connection,
                "must be at least 1",
            )
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ConfigError(
                "delivery.timeout.ms",
                self.delivery_timeout_ms,
                "must be at least linger.ms + request.timeout.ms",
            )


#: The client-side assignors a consumer may name, and the rebalance protocol each runs (KIP-429).
ASSIGNOR_PROTOCOLS = {"range": "EAGER", "roundrobin": "EAGER", "cooperative-sticky": "COOPERATIVE"}


def _strategy(value: str) -> str:
    """Check ``partition.assignment.strategy`` and return it without blanks (``"range,roundrobin"``)."""
    key = "partition.assignment.strategy"
    names = [n.strip() for n in str(value).split(",") if n.strip()]
    if not names:
        raise ConfigError(key, value, "names no assignor", fix="use range, roundrobin or cooperative-sticky")
    for name in names:
        if name not in ASSIGNOR_PROTOCOLS:
            raise ConfigError(
                key, value, f"unknown assignor {name!r}", fix="use range, roundrobin or cooperative-sticky"
            )
    if len({ASSIGNOR_PROTOCOLS[n] for n in names}) > 1:
        reason = "mixes eager and cooperative assignors (librdkafka refuses online migration between them)"
        raise ConfigError(key, value, reason, fix="name only cooperative-sticky, or only range and roundrobin")
    return ",".join(dict.fromkeys(names))


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """Consumer settings with Kafka's names; auto-commit is off by default here (EOS practice)."""

    client_id: str = ""
    group_id: str | None = None
    #: KIP-345 static membership: a restart with the same id keeps the assignment, and close()
    #: sends no LeaveGroup (as the Java client and librdkafka do for static members).
    group_instance_id: str | None = None
    #: Given as Kafka's spelling (or the enum), held as :class:`IsolationLevel`.
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    auto_offset_reset: str = "earliest"
    enable_auto_commit: bool = False
    #: librdkafka's key: store each returned record's position for commit() (False: store_offsets()).
    enable_auto_offset_store: bool = True
    auto_commit_interval_ms: int = 5_000
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 52_428_800
    max_partition_fetch_bytes: int = 1_048_576
    max_poll_records: int = 500
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1_000
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    #: The assignors offered in JoinGroup, in order of preference (``range``, ``roundrobin``,
    #: ``cooperative-sticky``; comma-separated). All eager or all cooperative, as librdkafka requires:
    #: the protocol (:data:`ASSIGNOR_PROTOCOLS`) is what ``Consumer.rebalance_protocol()`` returns.
    partition_assignment_strategy: str = "range"

    #: ``classic`` (JoinGroup/SyncGroup) or ``consumer`` (KIP-848: engine/client/consumer_member.py).
    group_protocol: str = "classic"
    #: KIP-848: the coordinator's assignor to use (``uniform``, ``range``); None: the coordinator's default.
    group_remote_assignor: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partition_assignment_strategy", _strategy(self.partition_assignment_strategy))
        if self.group_protocol not in ("classic", "consumer"):
            raise ConfigError("group.protocol", self.group_protocol, "must be classic or consumer")
        if self.isolation_level not in tuple(IsolationLevel):
            raise ConfigError("isolation.level", self.isolation_level, f"must be {' or '.join(IsolationLevel)}")
        object.__setattr__(self, "isolation_level", IsolationLevel(self.isolation_level))
        if self.auto_offset_reset not in ("earliest", "latest", "none"):
            raise ConfigError("auto.offset.reset", self.auto_offset_reset, "must be earliest, latest or none")
