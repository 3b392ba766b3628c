"""The one line a magic prints after it changed the cluster: what happened, at which simulated time.

Role
----
A magic that changes state (``%%eos_txn``, ``%eos_txn commit``, ``%eos_fault crash``, a message
rule) returns nothing worth displaying, yet the user must see what happened: was the transaction
committed, on which partitions, at which simulated time, and what comes next. Each function here
reads the cluster once, after the call, and returns that line; the magic prints it.

Invariants
----------
* One line each, starting with the simulated time (``t=1,234 ms``), so a notebook's outputs read
  as a timeline.
* A step Kafka finishes later says so and how to see it (a commit's markers are written after
  ``commit_transaction()`` returns: ``%eos_transactions list`` shows PrepareCommit until time
  moves).
* Reading never changes the cluster and never moves time.
"""

from __future__ import annotations

from typing import Any

__all__ = ["WRITING_MARKERS", "cut", "fault", "message_rule", "transaction"]

#: Transaction states whose markers are still being written (``TransactionState`` display names).
WRITING_MARKERS = {"PrepareCommit": "commit", "PrepareAbort": "abort"}


def _at(cluster: Any) -> str:
    return f"t={cluster.now_ms:,} ms"


def _partitions(tps: Any) -> str:
    return ", ".join(f"{t}-{p}" for t, p in tps)


def transaction(cluster: Any, producer: Any, action: str, *, because: str = "") -> str:
    """The line after ``init``, ``begin``, ``commit`` or ``abort`` of a transactional producer (``because``: why)."""
    who = f"{producer.name} ({producer.transactional_id})"
    if action == "init":
        return (
            f"{_at(cluster)}: {who} initialised: producer id {producer.producer_id}, epoch "
            f"{producer.producer_epoch} (any older instance with this transactional.id is fenced)"
        )
    if action == "begin":
        return f"{_at(cluster)}: {who} began a transaction (local: the coordinator hears of it with the first record)"
    done = "committed" if action == "commit" else "aborted"
    why = f" because {because}" if because else ""
    from engine.errors import KafkaError
    from engine.views.transactions import describe_transaction_row

    try:
        row = describe_transaction_row(cluster, producer.transactional_id)
    except KafkaError:  # the coordinator is down or moving: the call itself succeeded, say that much
        return f"{_at(cluster)}: {who} {done} its transaction{why}"
    if row.state in WRITING_MARKERS:
        return (
            f"{_at(cluster)}: {who} {done} its transaction on {_partitions(row.topic_partitions)}{why}; "
            f"the coordinator is still writing the {WRITING_MARKERS[row.state]} markers ({row.state}): "
            f"read_committed consumers and committed offsets see them once time moves (%eos_time run 100)"
        )
    return f"{_at(cluster)}: {who} {done} its transaction{why} (now {row.state})"


def fault(cluster: Any, action: str, node: Any = None, *, power: bool = False) -> str:
    """The line after a node fault (crash, restart, pause, resume, isolate) or ``heal``."""
    if action == "heal":
        return f"{_at(cluster)}: every fault healed: nodes back up, the network whole, message rules removed"
    what = f"broker {node}" if isinstance(node, int) else str(node)
    led = _led_by(cluster, node) if isinstance(node, int) else ""
    lines = {
        "crash": (
            "lost power: its unflushed writes are gone and nobody is told (peers time out)"
            if power
            else "crashed: its connections close, so clients see the disconnect at once"
        ),
        "restart": "restarted: it recovers its log and rejoins the ISR once caught up",
        "pause": "paused: it answers nothing until %eos_fault resume (peers time out)",
        "resume": "resumed",
        "isolate": "isolated from every other node (silent: peers time out)",
    }
    member = getattr(cluster.world.nodes.get(node), "group", None) if isinstance(node, str) else None
    if member is not None and not power:  # a consumer of a group, not a broker
        lines["crash"] = "crashed: its connections close; a group member sends no LeaveGroup, so its session runs out"
        lines["restart"] = "restarted: a new process (a subscribed consumer joins its group again)"
    return f"{_at(cluster)}: {what} {lines[action]}{led}"


def _led_by(cluster: Any, broker: int) -> str:
    """``; it led orders-0, orders-1`` for the user partitions a broker leads (internal ones counted)."""
    led = [(t, p) for t in sorted(cluster.topics) for p in range(cluster.topics[t]) if cluster.leader(t, p) == broker]
    user = [(t, p) for t, p in led if not t.startswith("__")]
    internal = len(led) - len(user)
    if not led:
        return ""
    parts = [_partitions(user)] if user else []
    if internal:
        parts.append(f"{internal} internal partition{'s' if internal > 1 else ''}")
    return f"; it led {' and '.join(parts)} (the controller moves them after broker.session.timeout.ms)"


def cut(cluster: Any, a: Any, b: Any, *, one_way: bool) -> str:
    """The line after a network cut."""
    arrow = "→" if one_way else "↔"
    return (
        f"{_at(cluster)}: network cut {' '.join(map(str, a))} {arrow} {' '.join(map(str, b))} (silent: peers time out)"
    )


def message_rule(cluster: Any, rule_id: int, action: str, body_type: str | None, count: int | None) -> str:
    """The line after a message rule (drop, delay, hold, duplicate) was added."""
    which = body_type or "message"
    how_many = "every matching" if count is None else ("the next" if count == 1 else f"the next {count}")
    end = " until %eos_fault release" if action == "hold" else ""
    return f"{_at(cluster)}: rule {rule_id}: {action} {how_many} {which}{end} (%eos_fault heal removes every rule)"
