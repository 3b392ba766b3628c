"""eos-magics engine: a deterministic, fault-injectable simulated Kafka cluster in pure Python.

Public names::

    from engine import Cluster, Producer, Consumer, TopicPartition, Message

The engine knows nothing of Jupyter or Spark (import-linter enforces it). ``engine.sim`` is the
simulated world (time, network, faults, trace); the rest is Kafka's logic running inside it.
"""

from engine.client.consumer import Consumer
from engine.client.message import Message, TopicPartition
from engine.client.producer import Producer
from engine.cluster import Cluster

__all__ = ["Cluster", "Consumer", "Message", "Producer", "TopicPartition"]
