"""The client configs that reach a served cluster (or any SASL/PLAIN Kafka): one per client library.

Role
----
``eos serve`` prints them, its ready file holds them, the pytest fixture ``eos_server`` hands them
out, and the conformance targets (``eos serve``, real Kafka, librdkafka's mock) give them to the
case programs; all of them build them here, so the names stay one set:

* :func:`confluent_config`: confluent-kafka (librdkafka) properties, ``bootstrap.servers`` and,
  with a password, ``security.protocol=SASL_PLAINTEXT``, ``sasl.mechanism=PLAIN``, the user and
  the password;
* :func:`kafka_python_from_confluent`: the same as keyword arguments of kafka-python's and
  aiokafka's clients (``bootstrap_servers``, ``security_protocol``, ``sasl_mechanism``,
  ``sasl_plain_username``, ``sasl_plain_password``: both libraries use these names).

Invariants
----------
* Pure functions of their arguments: no sockets, no clock.
* :func:`kafka_python_config` is :func:`kafka_python_from_confluent` of :func:`confluent_config`.
"""

from __future__ import annotations

from typing import Any

from engine.wire.handlers_session import SASL_USER

__all__ = ["confluent_config", "kafka_python_config", "kafka_python_from_confluent"]

#: confluent-kafka's security properties -> kafka-python's and aiokafka's keyword arguments.
KAFKA_PYTHON_NAMES = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
}


def confluent_config(bootstrap: str, password: str | None) -> dict[str, str]:
    """Return the confluent-kafka (librdkafka) config that reaches ``bootstrap`` (SASL/PLAIN with a password).

    Parameters
    ----------
    bootstrap : str
        ``host:port,host:port,...``.
    password : str or None
        The SASL/PLAIN password of user ``eos``; None for a cluster without authentication.
    """
    config = {"bootstrap.servers": bootstrap}
    if password is not None:
        config.update(
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": SASL_USER,
                "sasl.password": password,
            }
        )
    return config


def kafka_python_from_confluent(config: dict[str, Any]) -> dict[str, Any]:
    """Return kafka-python / aiokafka keyword arguments for a confluent-kafka ``config``.

    Only the bootstrap servers and the security settings carry over; other properties are
    librdkafka's own and are left out.
    """
    out: dict[str, Any] = {"bootstrap_servers": str(config["bootstrap.servers"]).split(",")}
    out.update({KAFKA_PYTHON_NAMES[k]: v for k, v in config.items() if k in KAFKA_PYTHON_NAMES})
    return out


def kafka_python_config(bootstrap: str, password: str | None) -> dict[str, Any]:
    """Return :func:`confluent_config` as keyword arguments for kafka-python and aiokafka."""
    return kafka_python_from_confluent(confluent_config(bootstrap, password))
