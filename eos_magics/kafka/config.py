"""confluent-kafka configuration dicts, translated for the engine's clients.

Every key librdkafka knows (:data:`~eos_magics.kafka.config_keys.LIBRDKAFKA_KEYS`) falls in exactly
one of these tables (``tests/dropin/test_dropin_config.py`` checks it):

* :data:`PRODUCER_KEYS` / :data:`CONSUMER_KEYS`: the engine models it; the value is passed on under
  the engine's name (librdkafka's aliases included: ``queue.buffering.max.ms`` is ``linger.ms``).
  A key of the *other* kind is dropped, as librdkafka ignores it (e.g. ``group.id`` on a producer).
* :data:`IGNORED`: accepted and ignored because it changes nothing a simulated run can show
  (sockets, TLS, SASL, logging, statistics, compression, client-side buffering).
* :data:`UNMODELLED`: it would change behaviour the engine does not have; setting it raises
  :class:`~eos_magics.kafka.unsupported.NotSimulatedError`, unless the value is the one the
  engine behaves as (:data:`ACCEPTED_VALUES`, e.g. ``partitioner: murmur2_random``).
* :data:`CALLBACKS`, ``bootstrap.servers`` (which cluster: :mod:`.binding`), ``default.topic.config``
  (merged in, as librdkafka does), ``delivery.report.only.error`` and ``enable.partition.eof``
  (done by the drop-in's clients).

A key librdkafka does not know raises ``KafkaException`` with ``_INVALID_ARG`` and confluent-kafka's
text ``No such configuration property: "key"``; a bad value raises the same code with the
engine's explanation. :data:`LIBRDKAFKA_DEFAULTS` are librdkafka's defaults where they differ from
the engine's (Kafka's Java ones) and matter: a confluent-kafka program gets what it would get.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from engine.config import ProducerConfig
from eos_magics.kafka.config_keys import LIBRDKAFKA_KEYS
from eos_magics.kafka.errors import KafkaError, KafkaException
from eos_magics.kafka.unsupported import not_simulated

_SAME = ("client.id", "retry.backoff.ms", "retry.backoff.max.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms")

#: confluent key -> engine key, for producers.
PRODUCER_KEYS: dict[str, str] = {
    **{k: k for k in _SAME},
    "acks": "acks",
    "request.required.acks": "acks",
    "enable.idempotence": "enable.idempotence",
    "retries": "retries",
    "message.send.max.retries": "retries",
    "max.in.flight.requests.per.connection": "max.in.flight.requests.per.connection",
    "max.in.flight": "max.in.flight.requests.per.connection",
    "batch.size": "batch.size",
    "linger.ms": "linger.ms",
    "queue.buffering.max.ms": "linger.ms",
    "request.timeout.ms": "request.timeout.ms",
    "delivery.timeout.ms": "delivery.timeout.ms",
    "message.timeout.ms": "delivery.timeout.ms",
    "metadata.max.age.ms": "metadata.max.age.ms",
    "message.max.bytes": "max.request.size",
    "transactional.id": "transactional.id",
    "transaction.timeout.ms": "transaction.timeout.ms",
}

#: confluent key -> engine key, for consumers.
CONSUMER_KEYS: dict[str, str] = {
    **{k: k for k in _SAME},
    "group.id": "group.id",
    "isolation.level": "isolation.level",
    "auto.offset.reset": "auto.offset.reset",
    "enable.auto.commit": "enable.auto.commit",
    "auto.commit.enable": "enable.auto.commit",
    "enable.auto.offset.store": "enable.auto.offset.store",
    "auto.commit.interval.ms": "auto.commit.interval.ms",
    "fetch.wait.max.ms": "fetch.max.wait.ms",
    "fetch.max.bytes": "fetch.max.bytes",
    "max.partition.fetch.bytes": "max.partition.fetch.bytes",
    "fetch.message.max.bytes": "max.partition.fetch.bytes",
    "max.poll.records": "max.poll.records",
    "session.timeout.ms": "session.timeout.ms",
    "heartbeat.interval.ms": "heartbeat.interval.ms",
    "max.poll.interval.ms": "max.poll.interval.ms",
    "group.instance.id": "group.instance.id",
    "partition.assignment.strategy": "partition.assignment.strategy",
    "group.protocol": "group.protocol",
    "group.remote.assignor": "group.remote.assignor",
}

#: librdkafka's defaults that differ from the engine's, per client kind (engine keys).
LIBRDKAFKA_DEFAULTS: dict[str, dict[str, Any]] = {
    "producer": {"enable.idempotence": False, "delivery.timeout.ms": 300_000},
    "consumer": {
        "enable.auto.commit": True,
        "auto.offset.reset": "latest",
        "isolation.level": "read_committed",
        "partition.assignment.strategy": "range,roundrobin",
    },
}

#: librdkafka's spellings of ``auto.offset.reset``.
_OFFSET_RESET = {"smallest": "earliest", "beginning": "earliest", "largest": "latest", "end": "latest", "error": "none"}

_NET = "no sockets in the simulation"
_SEC = "no TLS or authentication in the simulation"
_LOG = "logging, debugging and statistics change nothing simulated"
_BUF = "client-side buffering and compression change no outcome the simulation shows"
_META = "the engine's clients refresh metadata on their own schedule"

#: Accepted and ignored (harmless), with the reason; keys ending in "." are prefixes.
IGNORED: dict[str, str] = {
    **dict.fromkeys(("ssl.", "sasl.", "https.", "ssl_ca", "ssl_certificate", "ssl_key"), _SEC),
    **dict.fromkeys(("ssl_engine_callback_data", "security.protocol", "enable.ssl.certificate.verification"), _SEC),
    **dict.fromkeys(("enable.sasl.oauthbearer.unsecure.jwt", "oauth_cb", "enable_sasl_queue"), _SEC),
    **dict.fromkeys(("socket.", "broker.address.", "client.dns.lookup", "connections.max.idle.ms"), _NET),
    **dict.fromkeys(("reconnect.backoff.jitter.ms", "enable.sparse.connections", "internal.termination.signal"), _NET),
    **dict.fromkeys(("api.version.", "broker.version.fallback", "message.copy.max.bytes"), _NET),
    **dict.fromkeys(("receive.message.max.bytes", "client.software.", "client.rack", "builtin.features"), _NET),
    **dict.fromkeys(("debug", "log_level", "log.", "logger", "log_cb", "enable.random.seed"), _LOG),
    **dict.fromkeys(("statistics.interval.ms", "stats_cb", "enabled_events", "enable.metrics.push"), _LOG),
    "throttle_cb": "brokers never throttle in the simulation (no quotas)",
    **dict.fromkeys(("metadata.recovery.", "metadata.request.timeout.ms", "topic.metadata."), _META),
    "coordinator.query.interval.ms": _META,
    **dict.fromkeys(("compression.", "batch.num.messages", "sticky.partitioning.linger.ms"), _BUF),
    **dict.fromkeys(("queue.buffering.max.messages", "queue.buffering.max.kbytes"), _BUF),
    "queue.buffering.backpressure.threshold": _BUF,
    **dict.fromkeys(("produce.offset.report", "check.crcs", "fetch.min.bytes", "fetch.error.backoff.ms"), _BUF),
    **dict.fromkeys(("fetch.queue.backoff.ms", "queued.", "consume.callback.max.messages"), _BUF),
    "group.protocol.type": "the classic protocol's protocol type (consumer): nothing else is served",
    "offset.store.sync.interval.ms": "used by the deprecated file offset store only",
}

_C_CALLBACK = "a librdkafka C callback that confluent-kafka sets itself"

#: Valid confluent-kafka settings the engine does not model: setting one raises (see ACCEPTED_VALUES).
UNMODELLED: dict[str, str] = {
    "partitioner": "the engine partitions keyed records with Kafka's murmur2 (librdkafka's murmur2_random)",
    "partitioner_cb": _C_CALLBACK,
    "msg_order_cmp": _C_CALLBACK,
    **dict.fromkeys(("opaque", "background_event_cb", "socket_cb", "connect_cb", "closesocket_cb"), _C_CALLBACK),
    **dict.fromkeys(("open_cb", "resolve_cb", "dr_cb", "dr_msg_cb", "consume_cb", "rebalance_cb"), _C_CALLBACK),
    **dict.fromkeys(("offset_commit_cb", "oauthbearer_token_refresh_cb", "default_topic_conf"), _C_CALLBACK),
    "enable.gapless.guarantee": "the engine's idempotent producer has no gapless mode",
    "queuing.strategy": "the engine's producer queues first in, first out",
    "allow.auto.create.topics": "the engine never creates a topic on demand; create it first",
    "offset.store.method": "offsets are stored in the group coordinator (broker) only",
    "offset.store.path": "offsets are stored in the group coordinator (broker) only",
    "topic.blacklist": "hiding topics from metadata is not simulated",
    "plugin.library.paths": "plugins do not run in the simulation",
    "interceptors": "plugins do not run in the simulation",
    "test.mock.num.brokers": "librdkafka's mock cluster: the simulation is the cluster",
    "test.mock.broker.rtt": "librdkafka's mock cluster: the simulation is the cluster",
    "share.acknowledgement.mode": "share groups (KIP-932) are not simulated",
}

#: Values of UNMODELLED keys that describe what the engine does anyway: accepted.
ACCEPTED_VALUES: dict[str, frozenset[str]] = {
    "partitioner": frozenset({"murmur2_random", "murmur2"}),
    "enable.gapless.guarantee": frozenset({"false"}),
    "queuing.strategy": frozenset({"fifo"}),
    "allow.auto.create.topics": frozenset({"false"}),
    "offset.store.method": frozenset({"broker"}),
}

#: Callbacks the Python binding takes in the config: key -> the client kinds that take it.
CALLBACKS: dict[str, tuple[str, ...]] = {
    "on_delivery": ("producer",),
    "on_commit": ("consumer",),
    "error_cb": ("producer", "consumer", "admin"),
}

#: Keys the drop-in's clients handle themselves (value: the kinds that use them).
CLIENT_FLAGS: dict[str, tuple[str, ...]] = {
    "delivery.report.only.error": ("producer",),
    "enable.partition.eof": ("consumer",),
}


@dataclasses.dataclass
class Settings:
    """A confluent config split up: what the engine gets, which cluster, callbacks and client flags."""

    engine: dict[str, Any]
    bootstrap: str | None = None
    callbacks: dict[str, Callable[..., Any]] = dataclasses.field(default_factory=dict)
    flags: dict[str, bool] = dataclasses.field(default_factory=dict)


def invalid(text: str) -> KafkaException:
    """Return confluent-kafka's configuration error: ``KafkaException`` with ``_INVALID_ARG``."""
    return KafkaException(KafkaError(KafkaError._INVALID_ARG, text))  # type: ignore[attr-defined]


def _ignored(key: str) -> bool:
    return key in IGNORED or any(key.startswith(p) for p in IGNORED if p.endswith("."))


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise invalid(f'Expected bool value for "{key}": true or false')


def settings(config: Any, kwargs: Mapping[str, Any], kind: str) -> Settings:
    """Split a confluent-kafka config (plus constructor keywords) for a ``kind`` of client.

    Raises TypeError for a config that is not a dict, ``KafkaException`` (``_INVALID_ARG``) for an
    unknown key or a bad callback, and ``NotSimulatedError`` for a setting the engine does not model.
    """
    if not isinstance(config, dict):
        raise TypeError("expected configuration dict")
    merged = {**config, **kwargs}
    nested = merged.pop("default.topic.config", None)
    if nested is not None:
        if not isinstance(nested, dict):
            raise TypeError("expected default.topic.config to be a dict")
        merged = {**nested, **merged}
    own = PRODUCER_KEYS if kind == "producer" else CONSUMER_KEYS if kind == "consumer" else {}
    out = Settings(engine={})
    if kind == "consumer" and str(merged.get("group.protocol", "classic")).lower() == "consumer":
        _refuse_broker_side(merged)
    for key, value in merged.items():
        if key in ("bootstrap.servers", "metadata.broker.list"):
            out.bootstrap = None if value is None else str(value)
        elif key == "partition.assignment.strategy" and kind == "consumer":
            out.engine[key] = assignment_strategy(value)
        elif key in own:
            engine_key = own[key]
            if engine_key == "auto.offset.reset":
                value = _OFFSET_RESET.get(value, value)
            elif engine_key == "group.protocol" and isinstance(value, str):
                value = value.lower()
            out.engine[engine_key] = value
        elif key in CALLBACKS:
            _callback(out, key, value, kind)
        elif key in CLIENT_FLAGS:
            if kind in CLIENT_FLAGS[key]:
                out.flags[key] = _as_bool(key, value)
        elif key in UNMODELLED:
            if str(value).lower() not in ACCEPTED_VALUES.get(key, frozenset()):
                not_simulated(f'configuration property "{key}"={value!r}', UNMODELLED[key])
        elif key in PRODUCER_KEYS or key in CONSUMER_KEYS or _ignored(key):
            continue  # the other kind's key, or harmless: librdkafka ignores it too
        elif key not in LIBRDKAFKA_KEYS:
            raise invalid(f'No such configuration property: "{key}"')
    if kind == "producer" and ProducerConfig.transactional_in(out.engine):
        out.engine.setdefault("enable.idempotence", True)  # librdkafka: a transactional producer is idempotent
    for engine_key, value in LIBRDKAFKA_DEFAULTS.get(kind, {}).items():
        out.engine.setdefault(engine_key, value)
    return out


#: librdkafka's client-side assignors and the rebalance protocol each runs (``rd_kafka_assignor``).
ASSIGNORS = {"range": "EAGER", "roundrobin": "EAGER", "cooperative-sticky": "COOPERATIVE"}


def assignment_strategy(value: Any) -> str:
    """Check ``partition.assignment.strategy`` as librdkafka does; return the names, comma-separated.

    An empty value is librdkafka's default ``range,roundrobin``; an unknown name and a mix of eager
    and cooperative assignors fail with librdkafka's own ``_INVALID_ARG`` texts.
    """
    names = [n.strip() for n in str(value).split(",") if n.strip()] or ["range", "roundrobin"]
    for name in names:
        if name not in ASSIGNORS:
            raise invalid(f"Failed to create consumer: Unsupported partition.assignment.strategy: {name}")
    if len({ASSIGNORS[n] for n in names}) > 1:
        raise invalid(
            f"Failed to create consumer: All partition.assignment.strategy ({value}) assignors must have the "
            "same protocol type, online migration between assignors with different protocol types is not supported"
        )
    return ",".join(dict.fromkeys(names))


#: Classic-protocol keys librdkafka refuses with ``group.protocol=consumer`` (KIP-848 sets them on
#: the broker: ``group.consumer.session.timeout.ms`` ...), and the reason it gives (librdkafka 2.16).
_NOT_FOR_CONSUMER_PROTOCOL = {
    "partition.assignment.strategy": "is not supported for `group.protocol=consumer`. Use `group.remote.assignor` "
    "instead",
    "session.timeout.ms": "is not supported for `group.protocol=consumer` or share consumer. It is defined broker side",
    "heartbeat.interval.ms": "is not supported for `group.protocol=consumer` or share consumer. It is defined "
    "broker side",
}


def _refuse_broker_side(merged: Mapping[str, Any]) -> None:
    for key, why in _NOT_FOR_CONSUMER_PROTOCOL.items():
        if key in merged:
            raise invalid(f"Failed to create consumer: `{key}` {why}")


def _callback(out: Settings, key: str, value: Any, kind: str) -> None:
    if kind not in CALLBACKS[key]:
        raise invalid(f'No such configuration property: "{key}"')
    if key == "error_cb":
        if not callable(value):
            raise TypeError("expected error_cb property as a callable function")
    elif not callable(value):
        raise invalid(f"{key} requires a callable object")
    out.callbacks[key] = value
