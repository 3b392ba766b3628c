"""``%eos_serve``: serve the current cluster to real Kafka clients over the wire protocol."""

from __future__ import annotations

import json
from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics.errors import EosUsageError, require
from eos_magics.magics import FamilyMagics


class ServedConfig(dict):
    """The client config of a served cluster: a dict, shown ready to paste into confluent-kafka."""

    def __init__(self, served: Any) -> None:
        super().__init__(served.client_config())
        self.served = served

    def _text(self) -> str:
        lines = [
            f"serving on {self.served.bootstrap} (simulated time follows the wall clock x{self.served.rate:g})",
            "confluent_kafka.Producer(" + json.dumps(dict(self), indent=4) + ")",
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self._text()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self._text())


@magics_class
class ServeMagics(FamilyMagics):
    """The wire-protocol server."""

    @line_magic
    @magic_arguments()
    @argument("action", nargs="?", default="start", choices=["start", "stop", "config"])
    @argument("--name", default=None, help="the cluster (default: the current one)")
    @argument("--port", type=int, default=0, help="first broker's port (default: free ports)")
    @argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    @argument("--no-auth", action="store_true", help="no SASL/PLAIN (default: a random password)")
    @argument("--rate", type=float, default=1.0, help="simulated seconds per real second (default 1.0)")
    def eos_serve(self, line: str) -> Any:
        """Serve a cluster to real Kafka clients on 127.0.0.1; return the client config to paste.

        %eos_serve                 start (or show) the server of the current cluster
        %eos_serve stop
        """
        args = parse_argstring(self.eos_serve, line)
        s = self.session
        if args.action == "stop":
            if not s.stop_serving(args.name):
                raise EosUsageError(f"cluster '{s.entry(args.name).name}' is not served; start with %eos_serve")
            return None
        require("kio", "%eos_serve (the Kafka wire protocol's codec)")
        served = s.serve(args.name, host=args.host, port=args.port, auth=not args.no_auth, rate=args.rate)
        return ServedConfig(served)
