"""CreateTopics over the wire, with the checks of ``Cluster.add_topic`` (Kafka's controller checks).

A topic is created at the controller as the engine's ``Cluster.create_topic`` creates it; the answer
goes out 10 ms of simulated time later, when the controller has elected the leaders (Kafka answers
once the topic is in the metadata). ``validate_only`` checks and creates nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from engine.wire.frames import Request
    from engine.wire.gateway import WireConnection

Reply = Any

#: Simulated ms between creating a topic and answering (``Cluster.create_topic`` runs as long).
ELECTION_MS = 10


def create_topics(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Create each topic, or answer why not (TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, ...)."""
    b = request.body
    cluster = conn.service.cluster
    results = []
    for t in b.topics:
        assignments = [tuple(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index)] or None
        partitions = t.num_partitions if t.num_partitions > 0 else 1
        rf = t.replication_factor if t.replication_factor > 0 else None
        config = {c.name: c.value for c in t.configs} or None
        entry: dict[str, Any] = {
            "name": t.name,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
        }
        try:
            if b.validate_only:
                _validate(cluster, t.name, partitions, rf, config, assignments)
            else:
                cluster.add_topic(
                    t.name, partitions if assignments is None else len(assignments), rf, config, assignments=assignments
                )
                entry["num_partitions"] = cluster.topics[t.name]
                entry["replication_factor"] = (
                    len(assignments[0]) if assignments else (rf or cluster.config.default_replication_factor)
                )
        except KafkaError as exc:
            entry["error_code"] = exc.code
            entry["error_message"] = str(exc)
        except (TypeError, ValueError) as exc:
            entry["error_code"] = ErrorCode.INVALID_CONFIG
            entry["error_message"] = str(exc)
        results.append(entry)
    conn.call_after(ELECTION_MS, reply, {"throttle_time": 0, "topics": results})


def _validate(cluster: Any, name: str, partitions: int, rf: int | None, config: Any, assignments: Any) -> None:
    """Run the checks of ``add_topic`` on a throwaway copy of the topic table."""
    from engine.views import lookup

    lookup.check_new_topic(name, cluster.topics)
    if partitions < 1:
        raise ValueError(f"Number of partitions must be at least 1, got {partitions}")
