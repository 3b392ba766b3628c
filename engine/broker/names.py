"""Node names of the broker package: the controller's, and a broker's from its id.

Role
----
The one place the broker's rooms learn which node a broker id (or the controller) is on the
simulated network, so that none of them reaches for :class:`~engine.broker.broker.Broker` to ask.
"""

from __future__ import annotations

#: The controller's node name (KRaft's quorum, one node here).
CONTROLLER = "controller"


def broker_name(broker_id: int) -> str:
    """Return the node name of a broker id."""
    return f"broker-{broker_id}"
