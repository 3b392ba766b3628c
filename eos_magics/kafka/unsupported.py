"""What the drop-in does not do, with the reason: one table, checked against confluent-kafka by the tests.

Every public method of confluent-kafka's ``Producer``, ``Consumer``, ``Message`` and
``admin.AdminClient``, and every public name of the ``confluent_kafka`` module the drop-in lacks,
is listed in :data:`NOT_SUPPORTED` (``tests/dropin/test_dropin_compat.py`` walks the installed
package and fails on a name that is neither simulated nor listed; ``docs/testing.md``, section
"What the drop-in does not do", must list the same keys). Calling one of these methods raises
:class:`NotSimulatedError` at once, in one line, rather than silently doing nothing.
"""

from __future__ import annotations

from typing import NoReturn

from eos_magics.kafka.errors import KafkaError, KafkaException

__all__ = ["NOT_SUPPORTED", "NotSimulatedError", "not_simulated"]

_NO_AUTH = "the simulation has no authentication: there are no credentials to set"
_NO_ACL = "the simulation has no authorisation: there are no ACLs"
_NO_SERDES = "serializing and deserializing clients (schema registry, serdes) are not simulated; encode values first"
_NO_SHARE = "share groups (KIP-932) are not simulated"
_HASH = "librdkafka's partitioner hashes are not exposed; the engine partitions with Kafka's murmur2"

#: ``"Class.method"`` or ``"confluent_kafka.name"`` -> why the drop-in does not provide it.
NOT_SUPPORTED: dict[str, str] = {
    "Producer.set_sasl_credentials": _NO_AUTH,
    "Consumer.set_sasl_credentials": _NO_AUTH,
    "AdminClient.set_sasl_credentials": _NO_AUTH,
    "Message.delivery_count": _NO_SHARE,
    "Message.deserialized_key": _NO_SERDES,
    "Message.deserialized_value": _NO_SERDES,
    "AdminClient.alter_configs": (
        "deprecated in confluent-kafka (replaces every config of the resource); use incremental_alter_configs"
    ),
    "AdminClient.create_acls": _NO_ACL,
    "AdminClient.describe_acls": _NO_ACL,
    "AdminClient.delete_acls": _NO_ACL,
    "AdminClient.alter_user_scram_credentials": _NO_AUTH,
    "AdminClient.describe_user_scram_credentials": _NO_AUTH,
    "AdminClient.create_partitions": "the engine cannot add partitions to an existing topic",
    "AdminClient.delete_records": (
        "the engine's logs never move their log start offset (no DeleteRecords, no retention): "
        "every record is kept from offset 0"
    ),
    "AdminClient.delete_consumer_groups": "the engine's group coordinator has no DeleteGroups",
    "AdminClient.alter_consumer_group_offsets": "the engine has no admin OffsetCommit; commit from a consumer",
    "AdminClient.elect_leaders": "elections are the controller's; crash or restart brokers to move leaders",
    "AdminClient.list_groups": "deprecated in confluent-kafka; use list_consumer_groups",
    "confluent_kafka.SerializingProducer": _NO_SERDES,
    "confluent_kafka.DeserializingConsumer": _NO_SERDES,
    "confluent_kafka.ShareConsumer": _NO_SHARE,
    "confluent_kafka.DeserializingShareConsumer": _NO_SHARE,
    "confluent_kafka.AcknowledgeType": _NO_SHARE,
    "confluent_kafka.Messages": _NO_SHARE,
    "confluent_kafka.aio": "the asyncio clients are not simulated; the simulation runs inside each blocking call",
    "confluent_kafka.kafkatest": "confluent-kafka's own system-test helpers",
    "confluent_kafka.IllegalStateException": "raised by the share consumer only, which is not simulated",
    "confluent_kafka.ConcurrentModificationException": "raised by the share consumer only, which is not simulated",
    "confluent_kafka.ThrottleEvent": "brokers never throttle in the simulation (no quotas)",
    "confluent_kafka.Uuid": "the engine's topics have no topic ids",
    "confluent_kafka.TopicCollection": "used by describe_topics, which is not simulated",
    "confluent_kafka.TopicPartitionInfo": "used by describe_topics, which is not simulated",
    "AdminClient.describe_topics": "not simulated yet; use list_topics",
    "confluent_kafka.ElectionType": "used by elect_leaders, which is not simulated",
    "confluent_kafka.murmur2": _HASH,
    "confluent_kafka.consistent": _HASH,
    "confluent_kafka.fnv1a": _HASH,
    "confluent_kafka.serialization": _NO_SERDES,
    "confluent_kafka.schema_registry": _NO_SERDES,
    "confluent_kafka.avro": _NO_SERDES,
    "confluent_kafka.error": "import KafkaError and KafkaException from confluent_kafka itself",
}


class NotSimulatedError(KafkaException, NotImplementedError):
    """A confluent-kafka call that has no meaning in the simulation (``args[0]`` is a ``_NOT_IMPLEMENTED`` error).

    It is a ``KafkaException`` (as confluent-kafka would raise for a failed call) and a
    ``NotImplementedError``, so either ``except`` catches it.
    """


def not_simulated(what: str, reason: str | None = None) -> NoReturn:
    """Raise :class:`NotSimulatedError` for ``what`` (a key of :data:`NOT_SUPPORTED`, or any call with ``reason``)."""
    why = reason if reason is not None else NOT_SUPPORTED.get(what, "it is not simulated")
    text = f"{what} is not supported by the eos-magics simulation: {why} (see docs/testing.md)"
    raise NotSimulatedError(KafkaError(KafkaError._NOT_IMPLEMENTED, text))  # type: ignore[attr-defined]
