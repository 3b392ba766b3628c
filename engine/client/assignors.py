"""The client-side assignors a consumer offers, and the one the group leader runs.

Role
----
``partition.assignment.strategy`` names the assignors a consumer offers in JoinGroup, preferred
first; the coordinator selects one every member offers (``JoinGroupResponse.protocol_name``) and
the leader runs it over every member's :class:`~engine.protocol.Subscription`:

==================  ===========  ==============================================================
name                protocol     module
==================  ===========  ==============================================================
range               EAGER        :mod:`engine.client.assignor` (Kafka's ``RangeAssignor``)
roundrobin          EAGER        :mod:`engine.client.roundrobin_assignor`
cooperative-sticky  COOPERATIVE  :mod:`engine.client.sticky_assignor` (KIP-429)
==================  ===========  ==============================================================

Invariants
----------
* The rebalance protocol of a consumer is that of its assignors, all of one kind
  (:data:`engine.config.ASSIGNOR_PROTOCOLS`; the config refuses a mix, as librdkafka does).
* :func:`assign` is a pure function: the same members and metadata give the same assignment.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.client.assignor import range_assign
from engine.client.roundrobin_assignor import ROUNDROBIN, roundrobin_assign
from engine.client.sticky_assignor import COOPERATIVE_STICKY, StickyMember, cooperative_sticky_assign
from engine.config import ASSIGNOR_PROTOCOLS
from engine.protocol import Subscription

EAGER = "EAGER"
COOPERATIVE = "COOPERATIVE"


def strategies(value: str) -> tuple[str, ...]:
    """Return the assignor names of a checked ``partition.assignment.strategy`` (preferred first)."""
    return tuple(value.split(","))


def protocol_of(names: tuple[str, ...]) -> str:
    """Return ``"COOPERATIVE"`` or ``"EAGER"`` (what confluent-kafka's ``rebalance_protocol()`` says)."""
    return ASSIGNOR_PROTOCOLS[names[0]] if names else EAGER


def assign(
    name: str,
    members: Mapping[str, Subscription],
    partitions_per_topic: Mapping[str, int],
    instance_ids: Mapping[str, str | None] | None = None,
) -> dict[str, list[tuple[str, int]]]:
    """Run assignor ``name`` over the members' subscriptions: ``{member_id: sorted partitions}``."""
    if name == COOPERATIVE_STICKY:
        sticky = {m: StickyMember(s.topics, s.owned, s.generation) for m, s in members.items()}
        return cooperative_sticky_assign(sticky, partitions_per_topic)
    topics = {m: s.topics for m, s in members.items()}
    if name == ROUNDROBIN:
        return roundrobin_assign(topics, partitions_per_topic, instance_ids)
    return range_assign(topics, partitions_per_topic)
