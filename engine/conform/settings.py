"""The broker settings both conformance targets share: Kafka 4.4 and ``eos serve``.

Role
----
Kafka's defaults are tuned for production: a crashed broker is fenced after 9 s, a new group
waits 3 s before its first rebalance, the internal topics have 50 partitions each. A test suite
that waits for those is slow, and one that shortens them on one target only compares two
different clusters. :data:`BROKER_SETTINGS` is the one place for the values: the reference
cluster (:mod:`engine.conform.realtime_reference`) writes all of them into every node's
``server.properties``, and :func:`serve_config` gives the subset the engine models, as the
``--config KEY=VALUE`` items of ``eos serve`` (or the ``config`` of
:class:`~engine.wire.journal.ServeSpec`).

Invariants
----------
* Every key is Kafka's own name and every value is a string, as in ``server.properties``.
* Values are short but realistic: each is one a production cluster could run with, so a client
  program that passes here is not relying on a setting nobody uses.
* A key the engine does not model is listed in :data:`NOT_MODELLED` with what the engine does
  instead; :func:`serve_config` leaves it out (the engine would refuse it with a ConfigError).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from engine.config import BrokerConfig

#: Kafka broker settings for tests, each with why (Kafka's default in brackets).
BROKER_SETTINGS: dict[str, str] = {
    # A new classic group rebalances at once instead of waiting for more members [3000].
    "group.initial.rebalance.delay.ms": "0",
    # Clients may ask for session timeouts down to 6 s [6000]: Kafka's default, kept because the
    # engine fixes it (engine.group.membership.GROUP_MIN_SESSION_TIMEOUT_MS).
    "group.min.session.timeout.ms": "6000",
    # KIP-848 consumer groups (group.protocol=consumer): the broker, not the client, owns the
    # session timeout and heartbeat interval. A crashed member is fenced 6 s after its last
    # heartbeat [45000, min 45000], members heartbeat every second [5000, min 5000].
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
    # __consumer_offsets: replicated like user data [3], 5 partitions instead of 50 [50] so the
    # reference cluster starts fast; the coordinator of a group is still Kafka's hash mod 5 on both.
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "5",
    # __transaction_state: Kafka's production shape [3, min.isr 2], 5 partitions [50].
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "5",
    # A crashed broker is fenced (and leaves every ISR) 3 s after its last heartbeat [9000, 2000].
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    # A follower that stops fetching (a paused broker) leaves the ISR after 10 s [30000; 10000
    # before Kafka 2.5].
    "replica.lag.time.max.ms": "10000",
    # Timed-out transactions are aborted within 1 s of their timeout [10000].
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    # Expired transactional ids are looked for every 10 s [3600000]; they expire after
    # transactional.id.expiration.ms (7 days), so this only bounds the cleaner's sleep.
    "transaction.remove.expired.transaction.cleanup.interval.ms": "10000",
    # acks=all needs two live replicas [1]: the usual exactly-once deployment.
    "min.insync.replicas": "2",
    # Topics created without a replication factor get 3 [1], and one partition [1].
    "default.replication.factor": "3",
    "num.partitions": "1",
    # Kafka's default [true]: a Metadata or Produce for an unknown topic creates it.
    "auto.create.topics.enable": "true",
}

#: Keys of :data:`BROKER_SETTINGS` the engine does not take as broker config, and what it does.
NOT_MODELLED: dict[str, str] = {
    "group.min.session.timeout.ms": "fixed at 6000 (GROUP_MIN_SESSION_TIMEOUT_MS), the value used here",
    "group.consumer.min.session.timeout.ms": "the lower bound Kafka checks the session timeout against; "
    "the engine takes group.consumer.session.timeout.ms as given",
    "group.consumer.min.heartbeat.interval.ms": "the lower bound Kafka checks the heartbeat interval against; "
    "the engine takes group.consumer.heartbeat.interval.ms as given",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "transactional ids never expire",
}


def _engine_keys() -> frozenset[str]:
    return frozenset(f.name.replace("_", ".") for f in dataclasses.fields(BrokerConfig))


def kafka_settings(overrides: Mapping[str, object] | None = None) -> dict[str, str]:
    """Return :data:`BROKER_SETTINGS` with ``overrides`` applied (values as strings)."""
    settings = dict(BROKER_SETTINGS)
    for key, value in (overrides or {}).items():
        settings[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return settings


def serve_config(settings: Mapping[str, object] | None = None) -> dict[str, str]:
    """Return the settings the engine models, for ``eos serve --config`` or ``ServeSpec.config``.

    Parameters
    ----------
    settings
        Kafka settings (default :data:`BROKER_SETTINGS`); keys the engine does not model are left
        out (:data:`NOT_MODELLED` names them).
    """
    known = _engine_keys()
    return {k: str(v) for k, v in (BROKER_SETTINGS if settings is None else settings).items() if k in known}


def serve_args(settings: Mapping[str, object] | None = None) -> list[str]:
    """Return :func:`serve_config` as command-line items: ``["--config", "KEY=VALUE", ...]``."""
    args: list[str] = []
    for key, value in serve_config(settings).items():
        args += ["--config", f"{key}={value}"]
    return args
