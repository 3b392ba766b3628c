"""``%eos_serve``: a notebook's cluster served to a real confluent-kafka client, and the magics on it.

Goal: ``%eos_serve`` returns the client config ready to paste (SASL/PLAIN with the server's
password); an unchanged confluent-kafka transactional producer commits through it; the magics see
what it did (``%eos_transactions``, ``%eos_dump_log``); ``%eos_fault crash`` of the broker it is
connected to closes its socket as a process crash does; ``%eos_serve stop`` stops it, and stopping
a cluster that is not served is a one-line usage error.

Method: a fresh ``testing_shell()``; the served cluster runs in its own thread under the run's lock.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from eos_magics._testing import TestingShell as Shell
from eos_magics._testing import basic, run
from eos_magics.errors import EosUsageError


def test_a_served_notebook_cluster_takes_an_outside_transaction_and_the_magics_show_it(ip: Shell) -> None:
    cluster = basic(ip)
    config = run(ip, "%eos_serve")
    assert config["security.protocol"] == "SASL_PLAINTEXT" and config["sasl.username"] == "eos"
    assert "confluent_kafka.Producer(" in repr(config) and config["sasl.password"] in repr(config)
    assert run(ip, "%eos_serve").served is config.served, "a second %eos_serve started another server"
    p = Producer({**config, "transactional.id": "outside-app", "socket.timeout.ms": 10_000})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce("orders", value=b"from-outside", partition=0)
    p.commit_transaction(15)
    deadline = time.monotonic() + 5
    text = ""
    while time.monotonic() < deadline and "CompleteCommit" not in text:
        text = str(run(ip, "%eos_transactions list"))
        time.sleep(0.1)
    assert "outside-app" in text and "CompleteCommit" in text
    assert "from-outside" in str(run(ip, "%eos_dump_log orders -p 0"))
    leader = cluster.leader("orders", 0)
    run(ip, f"%eos_fault crash {leader}")
    deadline = time.monotonic() + 5
    closes: list[object] = []
    while time.monotonic() < deadline and not closes:
        with config.served.locked():
            closes = [e for e in cluster.world.trace if e.name == "wire.close" and "crashed" in str(e.detail)]
        time.sleep(0.1)
    assert closes, "the crash did not close the served connections to that broker"
    run(ip, "%eos_serve stop")
    with pytest.raises(EosUsageError, match="not served"):
        run(ip, "%eos_serve stop")
