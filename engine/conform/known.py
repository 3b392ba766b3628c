"""Documented divergences: where ``eos serve`` answers differently from Kafka 4.4 on purpose.

Role
----
A case that differs from Kafka only in the keys an entry here names reads "documented" instead of
"diverges" (:func:`engine.conform.compare.compare`). Each entry says why the engine simplifies and
where Kafka does it (the class and method in apache/kafka), so a reader can judge whether the
simplification matters to their test. An entry never covers a key it does not name.

Invariants
----------
* Every entry names a registered case (``tests/conform`` checks) and at least one key.
* Nothing here hides a safety outcome: a record read, a committed offset or an ``eos check``
  verdict that differs is never documented away, only timings and descriptive values.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KNOWN", "Known"]


@dataclass(frozen=True)
class Known:
    """A documented divergence: the keys that may differ, why, and Kafka's source reference."""

    keys: tuple[str, ...]
    reason: str
    kafka: str

    def note(self) -> str:
        """Return the reason with its source reference, for the table."""
        return f"{self.reason} (Kafka: {self.kafka})"


#: Case name -> its documented divergence. (An earlier entry, describe_configs without cleanup.policy
#: and retention.ms, went when the engine described them at Kafka's defaults:
#: engine.views.configs.FIXED_TOPIC_CONFIGS.)
KNOWN: dict[str, Known] = {
    "java.timeout": Known(
        ("commit", "abort-after"),
        "a transaction-version-2 commit that arrives after the coordinator aborted the transaction "
        "(transaction.timeout.ms) is PRODUCER_FENCED on eos serve, which follows current Kafka "
        "(KAFKA-20785, apache/kafka#23204, merged after 4.4.0); Kafka 4.4.0 answers INVALID_TXN_STATE, "
        "fatal to the producer, so its abort then fails with a KafkaException. Nothing the case reads "
        "differs: the aborted records stay invisible on both",
        "TransactionCoordinator.endTransaction, the TV2 retry-epoch check meeting CompleteAbort",
    ),
}
