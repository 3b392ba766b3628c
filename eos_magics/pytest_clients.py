"""The pytest plugin's helpers for the clients an application holds: pause, resume, kill, restart.

Role
----
:class:`AppClients` is a base of :class:`eos_magics.pytest_plugin.EosTestCluster`. Its helpers
take what an application holds: the drop-in's ``Producer``/``Consumer`` (through their public
``engine`` and ``config``), the engine's clients, and, where the cluster's own helpers took
them, node names and broker ids. ``docs/testing.md`` ("Crashing and restarting your
application") is the user's guide.

* ``kill`` is a process crash (:meth:`engine.Cluster.crash`): no LeaveGroup, no EndTxn, no
  flush. A killed consumer is marked closed, so that healing (which restarts every crashed
  node) does not bring it back into its group; every later call on a killed client raises.
* ``restart(client)`` kills the client if it is alive and returns a new one of the same kind
  and configuration; ``restart(broker)`` is :meth:`engine.Cluster.restart`, as before.

Invariants
----------
* Importing this module imports the standard library only (the plugin loads it): the engine is
  imported inside the helpers.
* The helpers change the simulation only as the cluster's own crash, pause and resume do.

What it does not do
-------------------
It does not stop the application's code: a test kills the clients from a hook and raises to
end the application's call, as the process would have ended.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AppClients"]


class AppClients:
    """Pause, resume, kill and restart the application's clients (a base of ``EosTestCluster``).

    Subclasses set ``cluster`` (the :class:`engine.Cluster`) and ``_killed`` (an empty list).
    """

    cluster: Any
    _killed: list[Any]

    def _client_of(self, obj: Any) -> Any:
        """Return the engine client behind ``obj`` (a drop-in client or an engine client), else None."""
        from engine.client.base import ClientNode

        inner = getattr(obj, "engine", obj) if not isinstance(obj, ClientNode) else obj
        return inner if isinstance(inner, ClientNode) and inner.world is self.cluster.world else None

    def _node(self, obj: Any, helper: str) -> str | int:
        if isinstance(obj, (str, int)) and not isinstance(obj, bool):
            return obj  # a node name or a broker id: the cluster says whether it exists
        return self._required(obj, f"{helper}()", ", node names or broker ids").name

    def pause(self, *nodes: Any) -> None:
        """Pause nodes (zombies until :meth:`resume`): clients the application holds, node names, broker ids."""
        for name in [self._node(n, "pause") for n in nodes]:
            self.cluster.pause(name)

    def resume(self, *nodes: Any) -> None:
        """Resume paused nodes: clients the application holds, node names, broker ids."""
        for name in [self._node(n, "resume") for n in nodes]:
            self.cluster.resume(name)

    def kill(self, *clients: Any) -> None:
        """Kill the clients' process (``kill -9``): no LeaveGroup, no EndTxn, no flush.

        Queued records are lost and the brokers see the connections close (a process crash,
        :meth:`engine.Cluster.crash`). A killed client stays dead: healing does not bring it back
        into its group, and each later call on it raises (``KafkaException`` or ``RuntimeError``
        through the drop-in, ``IllegalStateError`` on an engine client). A client already dead
        is left as it is.

        Parameters
        ----------
        *clients
            The drop-in's ``Producer``/``Consumer`` objects the application holds, or engine clients.
        """
        from engine.client.consumer import Consumer
        from engine.sim.node import NodeStatus

        found = [self._required(obj, "kill()", "") for obj in clients]
        for client in found:
            if client in self._killed:
                continue
            if client.status is not NodeStatus.DOWN:
                self.cluster.crash(client.name)
            if isinstance(client, Consumer):
                client.closed = True  # the process is gone: a restart at heal must not rejoin its group
            self._killed.append(client)

    def _required(self, obj: Any, call: str, or_else: str) -> Any:
        """Return the engine client behind ``obj``; TypeError naming ``call`` and what it takes otherwise."""
        client = self._client_of(obj)
        if client is None:
            raise TypeError(
                f"{call} takes the application's clients (a confluent_kafka Producer or Consumer of this "
                f"test, or an engine client){or_else}; got {obj!r}"
            )
        return client

    def killed(self, client: Any) -> bool:
        """Return whether :meth:`kill` (or :meth:`restart`) killed ``client``."""
        return self._client_of(client) in self._killed

    def restart(self, node: Any) -> Any:
        """Start a client again, as a restarted process would; or restart a crashed broker or node.

        Parameters
        ----------
        node : client, int or str
            A client the application holds (the drop-in's ``Producer``/``Consumer``, or an engine
            client): it is killed if still alive, and a new client of the same kind is returned,
            built with the same configuration (a new ``client.id`` if one was set). The
            application then calls ``init_transactions()`` or ``subscribe()`` again. A broker id
            or node name: :meth:`engine.Cluster.restart` (a crashed broker comes back from its disk).

        Returns
        -------
        The new client (None for a broker or node name).
        """
        if isinstance(node, (str, int)) and not isinstance(node, bool):
            self.cluster.restart(node)
            return None
        client = self._client_of(node)
        if client is None:
            raise TypeError(
                "restart() takes a client the application holds (a confluent_kafka Producer or Consumer of "
                f"this test, or an engine client), a broker id or a node name; got {node!r}"
            )
        self.kill(client)
        if client is not node:  # the drop-in: the same class, the same configuration
            return type(node)(node.config)
        return self._engine_twin(client)

    def _engine_twin(self, client: Any) -> Any:
        """Return a new engine client with ``client``'s settings (those that differ from the defaults)."""
        import dataclasses

        from engine.client.consumer import Consumer

        cfg = client.config
        default = type(cfg)()
        conf = {
            f.name.replace("_", "."): getattr(cfg, f.name)
            for f in dataclasses.fields(cfg)
            if getattr(cfg, f.name) != getattr(default, f.name)
        }
        if conf.get("client.id"):
            base, n = conf["client.id"], 2
            while f"{base}-{n}" in self.cluster.world.nodes:
                n += 1
            conf["client.id"] = f"{base}-{n}"
        return self.cluster.consumer(conf) if isinstance(client, Consumer) else self.cluster.producer(conf)
