"""The real-time edge of a served cluster: sockets, the wall clock, the password.

Everything here is outside the deterministic core on purpose: :mod:`engine.serve.realtime_clock` is the one
module of the engine that reads the wall clock, :mod:`engine.serve.realtime_server` the one that opens
sockets and runs an asyncio loop, :mod:`engine.serve.realtime_control` its control channel (faults from
outside) and the client of it. They feed :class:`engine.wire.service.WireService` timed inputs,
and the service (with the whole simulation) stays a pure function of them (``eos replay-wire``). The client configs
they hand out are :mod:`engine.wire.client_config`'s.
"""

from engine.serve.realtime_control import ControlClient
from engine.serve.realtime_server import ServedCluster, serve

__all__ = ["ControlClient", "ServedCluster", "serve"]
