"""The configs a cluster describes and alters: Kafka's names, string values, sources, read-only flags.

Role
----
One table for every way in: the wire's DescribeConfigs, IncrementalAlterConfigs and CreateTopics
(v5's ``configs``, :mod:`engine.wire.handlers_admin`) and the drop-in ``AdminClient``
(``eos_magics.kafka.admin``) both call :func:`describe` and :func:`alter`, so they answer the same
values and the same errors. They describe only what the engine models (:mod:`engine.config`):
a topic's ``min.insync.replicas``, ``unclean.leader.election.enable``, ``segment.bytes`` and
``max.message.bytes`` (and, fixed at Kafka's defaults, :data:`FIXED_TOPIC_CONFIGS`:
``cleanup.policy``, ``retention.ms``, ``retention.bytes``), and the broker settings of
:class:`~engine.config.BrokerConfig` that Kafka 4.4 also has. Values are strings as Kafka writes
them (``true``/``false``, decimal ints), with Kafka's ``ConfigSource``:

* a topic override (set at creation or by IncrementalAlterConfigs): ``DYNAMIC_TOPIC_CONFIG``;
* a broker setting the cluster was built with (differs from the engine's default):
  ``STATIC_BROKER_CONFIG``, as a key of ``server.properties``;
* otherwise ``DEFAULT_CONFIG``, the engine's default (Kafka's own except where
  :mod:`engine.config` marks a "sim default": ``log.segment.bytes`` is 1 MiB here).

``read_only`` is Kafka's (measured on Kafka 4.4: a broker config is writable only where it is
dynamically updatable, ``DynamicBrokerConfig.AllDynamicConfigs``; topic configs are all writable);
nothing here is sensitive.

:func:`describe` and :func:`alter` raise the engine's exception for Kafka's error code, as
``ConfigHelper.describeConfigs`` and ``ConfigAdminManager`` answer them: UNKNOWN_TOPIC_OR_PARTITION
for a missing topic, INVALID_REQUEST for a broker other than the one asked or a resource type the
engine does not model, INVALID_CONFIG for an unknown name, a bad value, APPEND/SUBTRACT on a
non-list config. Altering broker configs is not served (INVALID_REQUEST).

Invariants
----------
Configs are listed sorted by name; the same cluster state gives the same answer.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from engine.config import BrokerConfig, TopicConfig, parse_config
from engine.errors import ErrorCode, exception_for
from engine.views import lookup


class ConfiguredCluster(lookup.ClusterState, Protocol):
    """What the config views read and alter of a cluster: its broker config and topic overrides."""

    @property
    def topic_configs(self) -> dict[str, TopicConfig]:
        """Each topic's overrides (altered in place)."""
        ...


#: Kafka's ``ConfigSource`` ids (DescribeConfigsResponse.json).
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

#: Kafka's ``ConfigResource.Type`` ids.
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

#: Kafka's ``ConfigType`` ids (DescribeConfigs v3+).
_BOOLEAN, _INT, _LONG, _LIST = 1, 3, 5, 7

#: Topic configs described at Kafka's default and never alterable: what the engine does is what
#: Kafka does at that value. Its logs delete nothing and compact nothing, which is Kafka's
#: ``cleanup.policy=delete`` with no size limit (``retention.bytes=-1``) for any run shorter than
#: ``retention.ms`` (7 days of simulated time). Name -> (value, the broker synonym Kafka names,
#: its value, the ConfigType). Kafka: ``LogConfig`` and ``ServerLogConfigs`` defaults.
FIXED_TOPIC_CONFIGS: dict[str, tuple[str, str, str, int]] = {
    "cleanup.policy": ("delete", "log.cleanup.policy", "delete", _LIST),
    "retention.bytes": ("-1", "log.retention.bytes", "-1", _LONG),
    "retention.ms": ("604800000", "log.retention.hours", "168", _LONG),
}

#: Topic config -> the broker config it falls back to (Kafka's ``ServerTopicConfigSynonyms``).
TOPIC_TO_BROKER = {
    "max.message.bytes": "message.max.bytes",
    "min.insync.replicas": "min.insync.replicas",
    "segment.bytes": "log.segment.bytes",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}

#: Broker configs of the engine that Kafka 4.4 does not list (a feature level; an internal one).
_NOT_KAFKA_CONFIGS = frozenset({"transaction.version", "producer.id.expiration.check.interval.ms"})
#: Broker configs Kafka 4.4 can update dynamically (read_only False there).
_DYNAMIC_BROKER = frozenset(
    {
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "log.segment.bytes",
        "log.flush.interval.ms",
        "message.max.bytes",
        "producer.id.expiration.ms",
    }
)
#: Kafka's LONG-typed ones among them (the rest are INT or BOOLEAN).
_LONGS = frozenset({"log.flush.interval.ms", "producer.id.expiration.ms", "replica.lag.time.max.ms"})
_BROKER_DEFAULTS = BrokerConfig()


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _type(name: str, value: Any) -> int:
    if isinstance(value, bool):
        return _BOOLEAN
    return _LONG if name in _LONGS else _INT


def _entry(
    name: str, value: Any, source: int, read_only: bool, synonyms: list[dict[str, Any]], kind: int | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "value": _text(value),
        "read_only": read_only,
        "config_source": source,
        "is_default": source == DEFAULT_CONFIG,
        "is_sensitive": False,
        "synonyms": synonyms,
        "config_type": _type(name, value) if kind is None else kind,
        "documentation": None,
    }


def broker_configs(cluster: ConfiguredCluster, broker_id: int) -> list[dict[str, Any]]:
    """Return every broker config the engine models, as DescribeConfigs lists them for ``broker_id``."""
    config = cluster.config
    out = [
        _entry(key, broker_id, STATIC_BROKER_CONFIG, True, [{"name": key, "value": str(broker_id), "source": 4}])
        for key in ("broker.id", "node.id")
    ]
    for f in dataclasses.fields(BrokerConfig):
        key = f.name.replace("_", ".")
        if key in _NOT_KAFKA_CONFIGS:
            continue
        value = getattr(config, f.name)
        source = DEFAULT_CONFIG if value == getattr(_BROKER_DEFAULTS, f.name) else STATIC_BROKER_CONFIG
        synonyms = [{"name": key, "value": _text(value), "source": source}]
        out.append(_entry(key, value, source, key not in _DYNAMIC_BROKER, synonyms))
    return sorted(out, key=lambda e: e["name"])


def topic_configs(cluster: ConfiguredCluster, topic: str) -> list[dict[str, Any]]:
    """Return the topic configs the engine models for ``topic`` (its overrides, else the broker's)."""
    overrides = cluster.topic_configs.get(topic) or TopicConfig()
    out = []
    for key in sorted(TOPIC_TO_BROKER):
        broker_key = TOPIC_TO_BROKER[key]
        broker_value = getattr(cluster.config, broker_key.replace(".", "_"))
        broker_default = getattr(_BROKER_DEFAULTS, broker_key.replace(".", "_"))
        broker_source = DEFAULT_CONFIG if broker_value == broker_default else STATIC_BROKER_CONFIG
        synonyms = [{"name": broker_key, "value": _text(broker_value), "source": broker_source}]
        own = getattr(overrides, key.replace(".", "_"))
        if own is not None:
            synonyms.insert(0, {"name": key, "value": _text(own), "source": DYNAMIC_TOPIC_CONFIG})
            out.append(_entry(key, own, DYNAMIC_TOPIC_CONFIG, False, synonyms))
        else:
            out.append(_entry(key, broker_value, broker_source, False, synonyms))
    for key, (value, synonym, synonym_value, kind) in FIXED_TOPIC_CONFIGS.items():
        synonyms = [{"name": synonym, "value": synonym_value, "source": DEFAULT_CONFIG}]
        out.append(_entry(key, value, DEFAULT_CONFIG, False, synonyms, kind))
    return sorted(out, key=lambda e: e["name"])


def select(entries: list[dict[str, Any]], keys: Any, synonyms: bool) -> list[dict[str, Any]]:
    """Keep the entries named in ``keys`` (None: all), with synonyms only when asked for."""
    chosen = [e for e in entries if keys is None or e["name"] in keys]
    return chosen if synonyms else [{**e, "synonyms": []} for e in chosen]


def altered(current: TopicConfig, changes: list[tuple[str, int, str | None]]) -> TopicConfig:
    """Return ``current`` with IncrementalAlterConfigs' ``(name, operation, value)`` changes applied.

    SET (0) and DELETE (1) are served; APPEND (2) and SUBTRACT (3) apply to list configs only, and
    the engine models none, so they raise ``ValueError`` as Kafka refuses them (INVALID_CONFIG).
    Unknown names and bad values raise ``ConfigError`` (a ``ValueError``).
    """
    values = {
        key: getattr(current, key.replace(".", "_"))
        for key in TOPIC_TO_BROKER
        if getattr(current, key.replace(".", "_")) is not None
    }
    for name, op, value in changes:
        if name not in TOPIC_TO_BROKER:
            if name in FIXED_TOPIC_CONFIGS:
                msg = (
                    f"Topic config {name} is fixed at Kafka's default {FIXED_TOPIC_CONFIGS[name][0]} in the "
                    f"simulation (its logs delete and compact nothing); it alters {', '.join(TOPIC_TO_BROKER)}"
                )
            elif name in _KAFKA_TOPIC_CONFIGS:
                msg = f"Topic config {name} is not modelled by the simulation; it serves {', '.join(TOPIC_TO_BROKER)}"
            else:
                msg = f"Unknown topic config name: {name}"
            raise ValueError(msg)
        if op == 0:
            values[name] = value
        elif op == 1:
            values.pop(name, None)
        elif op in (2, 3):
            msg = f"Config value append/subtract is not allowed for config key {name}: it is not a list"
            raise ValueError(msg)
        else:
            msg = f"Unknown alter config operation {op} for {name}"
            raise ValueError(msg)
    return parse_config(TopicConfig, values, what="topic")


#: Kafka 4.4's topic config names (a known but unmodelled one gets a message saying so).
_KAFKA_TOPIC_CONFIGS = frozenset(
    {
        "cleanup.policy",
        "compression.type",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "index.interval.bytes",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "preallocate",
        "retention.bytes",
        "retention.ms",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
    }
)


def describe(cluster: ConfiguredCluster, resource_type: int, name: str, broker_id: int) -> list[dict[str, Any]]:
    """Return the configs of one resource as ``broker_id`` answers DescribeConfigs (with synonyms).

    Raises the exception for Kafka's code: UNKNOWN_TOPIC_OR_PARTITION for a
    topic the cluster does not have, INVALID_REQUEST for another broker's id or an unmodelled type.
    """
    if resource_type == RESOURCE_TOPIC:
        if name not in lookup.partition_counts(cluster):
            raise exception_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        return topic_configs(cluster, name)
    if resource_type == RESOURCE_BROKER:
        if name not in ("", str(broker_id)):
            msg = f"Unexpected broker id, expected {broker_id} or empty string, but received {name}"
            raise exception_for(ErrorCode.INVALID_REQUEST, msg)
        return broker_configs(cluster, broker_id)
    msg = f"Resource type {resource_type} is not served (topics and brokers are)"
    raise exception_for(ErrorCode.INVALID_REQUEST, msg)


def alter(
    cluster: ConfiguredCluster,
    resource_type: int,
    name: str,
    changes: list[tuple[str, int, str | None]],
    validate_only: bool,
) -> None:
    """Apply IncrementalAlterConfigs' ``(name, operation, value)`` changes to a topic (unless ``validate_only``).

    Raises the exception for INVALID_REQUEST for a broker (altering broker configs
    is not served) or another type, UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG (see :func:`altered`).
    """
    if resource_type != RESOURCE_TOPIC:
        msg = "Altering broker configs is not served by the simulation (topic configs are)"
        raise exception_for(ErrorCode.INVALID_REQUEST, msg)
    if name not in lookup.partition_counts(cluster):
        raise exception_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    try:
        new = altered(cluster.topic_configs.get(name) or TopicConfig(), changes)
    except ValueError as exc:
        raise exception_for(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if not validate_only:
        cluster.topic_configs[name] = new


__all__ = [
    "DEFAULT_CONFIG",
    "DYNAMIC_TOPIC_CONFIG",
    "FIXED_TOPIC_CONFIGS",
    "RESOURCE_BROKER",
    "RESOURCE_TOPIC",
    "STATIC_BROKER_CONFIG",
    "alter",
    "altered",
    "broker_configs",
    "describe",
    "select",
    "topic_configs",
]
