"""Bad input and wrong state in every ``%eos`` magic: one line, ``UsageError``, and nothing lost.

Goal: every bad argument of every magic (a missing positional, a bad choice, a bad int, an
unknown client, topic, partition, broker, node, message type, scenario or mutant, the wrong kind
of client, a call in the wrong state) raises IPython's ``UsageError`` (our ``EosUsageError`` or
the argument parser's own) with a one-line message, never a raw ``TypeError``/``ValueError``/
``KeyError`` traceback; an unknown name suggests the nearest existing one. The shell shows one
``UsageError: ...`` line and no traceback. Kafka's own errors (``TopicExistsException``,
``ProducerFencedException``, ``IllegalStateError`` ...) pass through as one named line. After
any error the session is intact: the same objects are bound, the cluster's fingerprint has not
moved (the bad call changed nothing), simulated time still runs, the records written before are
still there and the transactional producer still commits.

Method: a fresh ``testing_shell()`` per case with one small world (a 3-broker cluster, topics
``orders`` with 2 partitions and ``out``, an idempotent producer ``p1``, a transactional ``t1``,
a consumer ``c1`` of ``orders:0`` in group ``g``, two records on ``orders-0``). Each bad cell is
run as typed; the exception and what the shell printed (``capsys``) are checked, then the world.
Cases that were bugs in ``eos_magics`` when they were found are listed with the bug as their
reason (``fixed``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from engine.admin import AbortTransactionError
from engine.errors import (
    IllegalStateError,
    InvalidReplicationFactorException,
    InvalidTopicException,
    KafkaError,
    TopicExistsException,
    TransactionalIdNotFoundException,
)
from eos_magics._testing import TestingShell as Shell
from eos_magics._testing import dispose, run
from eos_magics._testing import testing_shell as new_shell
from eos_magics.errors import EosUsageError

LOST_ACK = "idempotence: lost ack retry"


@pytest.fixture
def bare() -> Iterator[Shell]:
    ip = new_shell()
    yield ip
    dispose(ip)


@pytest.fixture
def world() -> Iterator[Shell]:
    ip = new_shell()
    run(ip, "%eos_cluster create --seed 42")
    run(ip, "%eos_topic create orders --partitions 2")
    run(ip, "%eos_topic create out")
    run(ip, "%eos_producer p1")
    run(ip, "%eos_producer t1 -t app")
    run(ip, "%eos_consumer c1 --assign orders:0 --group g")
    run(ip, "%eos_produce p1 orders keep-1 keep-2 -p 0")
    yield ip
    dispose(ip)


NAMES = ("cluster", "p1", "t1", "c1")


def snapshot(ip: Shell) -> dict[str, Any]:
    """What a bad call must not change."""
    c = ip.user_ns["cluster"]
    session = next(o for o in ip.configurables if type(o).__name__ == "EosMagics").session
    return {
        "objects": {n: id(ip.user_ns[n]) for n in NAMES},
        "clusters": (list(session.entries), session.current),
        "clients": list(session.entry("cluster").clients),
        "topics": dict(c.topics),
        "brokers": [(b.broker_id, b.status) for b in c.describe_brokers()],
        "rules": c.world.network.active_rule_ids(),
        "blocked": set(c.world.network.blocked),
        "now": c.now_ms,
        "fingerprint": c.fingerprint(),
        "log": c.dump_log("orders", 0),
    }


def assert_nothing_lost(ip: Shell, before: dict[str, Any], *, unchanged: bool = True) -> None:
    """The session survived: same objects, same state (with ``unchanged``), time runs, records and txns work."""
    after = snapshot(ip)
    if unchanged:
        assert after == before
    else:
        assert after["objects"] == before["objects"]
        assert after["clusters"] == before["clusters"]
        assert after["topics"] == before["topics"]
    c = ip.user_ns["cluster"]
    assert run(ip, "%eos_time run 10") == c.now_ms
    values = run(ip, "%eos_consume c1").column("value")
    assert values[:2] == ["keep-1", "keep-2"]
    run(ip, "%%eos_txn t1\n%eos_produce t1 out still-works\n")
    assert "payload: still-works" in c.dump_log("out", 0)


def shown(capsys: pytest.CaptureFixture[str]) -> str:
    """What the shell printed: IPython writes a plain UsageError to stderr, a ``_render_traceback_`` to stdout."""
    captured = capsys.readouterr()
    return captured.out + captured.err


def assert_one_line_usage_error(error: BaseException, shown: str, fragment: str) -> None:
    assert isinstance(error, UsageError)
    message = str(error)
    assert "\n" not in message
    assert fragment in message
    if isinstance(error, EosUsageError):
        assert error._render_traceback_() == [f"UsageError: {message}"]
    assert f"UsageError: {message}" in shown
    assert "Traceback" not in shown


# -- before any cluster ------------------------------------------------------------------------------------

NEEDS_A_CLUSTER = [
    "%eos_cluster describe",
    "%eos_cluster reset",
    "%eos_cluster delete",
    "%eos_topic list",
    "%eos_topic create orders",
    "%eos_topic describe orders",
    "%eos_producer p1",
    "%eos_producer t1 -t app",
    "%eos_consumer c1",
    "%eos_produce p1 orders a",
    "%eos_consume c1",
    "%eos_txn begin t1",
    "%%eos_txn t1\nran = True\n",
    "%eos_fault crash 1",
    "%eos_fault heal",
    "%eos_fault drop --type ProduceResponse",
    "%eos_fault release",
    "%eos_fault rules",
    "%eos_time run 10",
    "%eos_time step",
    "%eos_time now",
    "%eos_time until True",
    "%eos_dump_log orders",
    "%eos_dump_log __transaction_state",
    "%eos_producer_state orders",
    "%eos_transactions list",
    "%eos_consumer_groups list",
    "%eos_check",
]


@pytest.mark.parametrize("cell", NEEDS_A_CLUSTER)
def test_before_any_cluster_every_magic_says_create_one(
    bare: Shell, cell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UsageError) as caught:
        run(bare, cell)
    assert_one_line_usage_error(caught.value, shown(capsys), "no cluster yet; create one first")
    assert "%eos_cluster create" in str(caught.value)
    assert "ran" not in bare.user_ns  # a cell body never ran
    run(bare, "%eos_cluster create")  # and the session is usable
    assert run(bare, "%eos_time now") == bare.user_ns["cluster"].now_ms


def test_use_before_any_cluster_names_none(bare: Shell) -> None:
    with pytest.raises(EosUsageError, match=r"no cluster 'x' \(known: none yet\)"):
        run(bare, "%eos_cluster use --name x")
    assert run(bare, "%eos_cluster list").rows == ()


# -- bad input with a world ------------------------------------------------------------------------------------

BAD = [
    # %eos_cluster
    ("%eos_cluster", "the following arguments are required: action"),
    ("%eos_cluster bogus", "invalid choice: 'bogus'"),
    ("%eos_cluster create --name c9 --brokers 0", "--brokers must be at least 1, got 0"),
    ("%eos_cluster create --name c9 --brokers -2", "--brokers must be at least 1, got -2"),
    ("%eos_cluster create --name c9 --brokers x", "argument --brokers: invalid int value: 'x'"),
    ("%eos_cluster create --name c9 --seed abc", "argument --seed: invalid int value: 'abc'"),
    ("%eos_cluster create --name c9 --config foo", "--config takes KEY=VALUE pairs"),
    ("%eos_cluster create --name c9 --config =1", "--config takes KEY=VALUE pairs"),
    ("%eos_cluster create --name c9 --config not.a.setting=1", "unknown broker configuration"),
    ("%eos_cluster create --name c9 --config min.insync.replicas=abc", "must be an integer"),
    ("%eos_cluster create --name 1bad", "cluster name must be a Python identifier"),
    ("%eos_cluster create --name class", "cluster name must be a Python identifier"),
    ("%eos_cluster describe --seed 3", "--brokers, --seed and --config are for create, not describe"),
    ("%eos_cluster reset --brokers 3", "are for create, not reset"),
    ("%eos_cluster list --config a=b", "are for create, not list"),
    ("%eos_cluster describe --name nope", "no cluster 'nope' (known: cluster)"),
    ("%eos_cluster use", "use needs --name NAME"),
    ("%eos_cluster use --name clustr", "no cluster 'clustr'; did you mean 'cluster'?"),
    ("%eos_cluster delete --name clustr", "did you mean 'cluster'?"),
    ("%eos_cluster reset --name nope", "no cluster 'nope'"),
    # %eos_topic
    ("%eos_topic", "the following arguments are required: action"),
    ("%eos_topic destroy orders", "invalid choice: 'destroy'"),
    ("%eos_topic create", "%eos_topic create needs a topic name"),
    ("%eos_topic create t9 --partitions 0", "--partitions must be at least 1, got 0"),
    ("%eos_topic create t9 --partitions x", "argument --partitions: invalid int value"),
    ("%eos_topic create t9 --rf x", "invalid int value: 'x'"),
    ("%eos_topic create t9 --config bogus", "--config takes KEY=VALUE pairs"),
    ("%eos_topic create t9 --config no.such.config=1", "unknown topic configuration"),
    ("%eos_topic describe ordrs", "no topic 'ordrs'; did you mean 'orders'?"),
    # %eos_producer
    ("%eos_producer", "the following arguments are required: name"),
    ("%eos_producer 1p", "client name must be a Python identifier"),
    ("%eos_producer for", "client name must be a Python identifier"),
    ("%eos_producer cluster", "'cluster' names the cluster"),
    ("%eos_producer p9 -t", "argument --transactional-id/-t: expected one argument"),
    ("%eos_producer p9 --config nope", "--config takes KEY=VALUE pairs"),
    ("%eos_producer p9 --config linger.ms=abc", "'linger.ms': must be an integer"),
    ("%eos_producer p9 --config acks=maybe", "'acks': must be one of"),
    ("%eos_producer p9 --config no.such=1", "unknown producer configuration"),
    ("%eos_producer p9 -t x --config enable.idempotence=false", "a transactional producer must be idempotent"),
    # %eos_consumer
    ("%eos_consumer", "the following arguments are required: name"),
    ("%eos_consumer c9 --isolation bogus", "argument --isolation/-i: invalid choice: 'bogus'"),
    ("%eos_consumer c9 --assign orders", "name partitions as TOPIC:PARTITION"),
    ("%eos_consumer c9 --assign orders:x", "name partitions as TOPIC:PARTITION"),
    ("%eos_consumer c9 --assign :0", "name partitions as TOPIC:PARTITION"),
    ("%eos_consumer c9 --assign orders:5", "topic 'orders' has partitions 0..1, not 5"),
    ("%eos_consumer c9 --assign orders:0,out:1", "topic 'out' has partitions 0..0, not 1"),
    ("%eos_consumer c9 --assign ordrs:0", "no topic 'ordrs'; did you mean 'orders'?"),
    ("%eos_consumer c9 --subscribe orders", "--subscribe needs a consumer group: add --group NAME"),
    ("%eos_consumer c9 --subscribe ordrs --group g", "did you mean 'orders'?"),
    ("%eos_consumer c9 --assign orders:0 --subscribe orders --group g", "pass --assign or --subscribe, not both"),
    ("%eos_consumer c9 --config nope", "--config takes KEY=VALUE pairs"),
    ("%eos_consumer c9 --config max.poll.records=abc", "'max.poll.records': must be an integer"),
    ("%eos_consumer c9 --config isolation.level=bogus", "must be read_committed or read_uncommitted"),
    ("%eos_consumer c9 --config no.such=1", "unknown consumer configuration"),
    # %eos_produce
    ("%eos_produce", "the following arguments are required: producer, topic, values"),
    ("%eos_produce p1", "the following arguments are required: topic, values"),
    ("%eos_produce p1 orders", "the following arguments are required: values"),
    ("%eos_produce p9 orders a", "no producer 'p9'; did you mean 'p1'?"),
    ("%eos_produce c1 orders a", "'c1' is a consumer, not a producer"),
    ("%eos_produce p1 ordrs a", "no topic 'ordrs'; did you mean 'orders'?"),
    ("%eos_produce p1 orders a --partition 2", "topic 'orders' has partitions 0..1, not 2"),
    ("%eos_produce p1 orders a --partition -1", "topic 'orders' has partitions 0..1, not -1"),
    ("%eos_produce p1 orders a --partition x", "argument --partition/-p: invalid int value: 'x'"),
    ("%eos_produce p1 orders a --header bad", "--header takes KEY=VALUE pairs"),
    ("%eos_produce p1 orders a --header =x", "--header takes KEY=VALUE pairs"),
    # %eos_consume
    ("%eos_consume", "the following arguments are required: consumer"),
    ("%eos_consume c9", "no consumer 'c9'; did you mean 'c1'? (known: c1)"),
    ("%eos_consume p1", "'p1' is a producer, not a consumer"),
    ("%eos_consume c1 --max 0", "--max must be at least 1, got 0"),
    ("%eos_consume c1 --max x", "argument --max/-n: invalid int value: 'x'"),
    ("%eos_consume c1 --timeout -1", "--timeout is simulated seconds >= 0"),
    ("%eos_consume c1 --timeout x", "argument --timeout: invalid float value: 'x'"),
    # %eos_txn, line form
    ("%eos_txn", "the following arguments are required: args"),
    ("%eos_txn begin", "use %eos_txn init|begin|commit|abort PRODUCER"),
    ("%eos_txn start t1", "use %eos_txn init|begin|commit|abort PRODUCER"),
    ("%eos_txn begin t1 extra", "use %eos_txn init|begin|commit|abort PRODUCER"),
    ("%eos_txn begin p1", "'p1' has no transactional.id; create a producer with --transactional-id ID"),
    ("%eos_txn begin c1", "'c1' is a consumer, not a producer"),
    ("%eos_txn begin t9", "no producer 't9'; did you mean 't1'?"),
    ("%eos_txn begin t1 --abort", "--offsets-from and --abort belong to the cell form"),
    ("%eos_txn commit t1 --offsets-from c1", "--offsets-from and --abort belong to the cell form"),
    # %%eos_txn, cell form: the body must not run
    ("%%eos_txn\nran = True\n", "the following arguments are required: args"),
    ("%%eos_txn p1\nran = True\n", "'p1' has no transactional.id"),
    ("%%eos_txn c1\nran = True\n", "'c1' is a consumer, not a producer"),
    ("%%eos_txn t9\nran = True\n", "no producer 't9'; did you mean 't1'?"),
    ("%%eos_txn t1 t1\nran = True\n", "use %%eos_txn PRODUCER [--offsets-from CONSUMER] [--abort]"),
    ("%%eos_txn t1 --offsets-from c9\nran = True\n", "no consumer 'c9'; did you mean 'c1'?"),
    ("%%eos_txn t1 --offsets-from p1\nran = True\n", "'p1' is a producer, not a consumer"),
    # %eos_fault
    ("%eos_fault", "the following arguments are required: action"),
    ("%eos_fault explode 1", "unknown fault 'explode'"),
    ("%eos_fault crash", "crash takes one node: a broker id or a node name"),
    ("%eos_fault crash 1 2", "crash takes one node"),
    ("%eos_fault isolate", "isolate takes one node"),
    ("%eos_fault crash 9", "no broker 9; brokers are 1, 2, 3"),
    ("%eos_fault crash brokr-1", "no node 'brokr-1'; did you mean 'broker-1'?"),
    ("%eos_fault pause p9", "no node 'p9'; did you mean 'p1'?"),
    ("%eos_fault cut 1", "cut takes two groups: %eos_fault cut 1 --from 2 3"),
    ("%eos_fault cut --from 2", "cut takes two groups"),
    ("%eos_fault cut 1 --from 9", "no broker 9"),
    ("%eos_fault cut 1 --from x", "no node 'x'"),
    ("%eos_fault cut 1 --from 1", "a node cannot be cut from itself"),
    ("%eos_fault drop 1", "drop names messages, not nodes: use --type, --src, --dst, --kind"),
    ("%eos_fault drop --type Bogus", "no message type 'Bogus'"),
    ("%eos_fault drop --type ProduceRespnse", "no message type 'ProduceRespnse'; did you mean 'ProduceResponse'?"),
    ("%eos_fault hold --type EndTxnRequst", "did you mean 'EndTxnRequest'?"),
    ("%eos_fault drop --count -1", "--count must be >= 0"),
    ("%eos_fault drop --count x", "argument --count: invalid int value: 'x'"),
    ("%eos_fault drop --kind bogus", "argument --kind: invalid choice: 'bogus'"),
    ("%eos_fault drop --src 9", "no broker 9"),
    ("%eos_fault drop --dst nobody", "no node 'nobody'"),
    ("%eos_fault drop --skip -1", "skip must be an int >= 0"),
    ("%eos_fault delay --type ProduceRequest", "delay needs --ms"),
    ("%eos_fault delay --type ProduceRequest --ms -5", "delay_ms must be an int >= 0"),
    ("%eos_fault delay --type ProduceRequest --ms x", "argument --ms: invalid int value: 'x'"),
    ("%eos_fault release --rule 99", "no message fault rule 99"),
    ("%eos_fault release --rule x", "argument --rule: invalid int value: 'x'"),
    # %eos_time
    ("%eos_time", "the following arguments are required: action"),
    ("%eos_time fly", "argument action: invalid choice: 'fly'"),
    ("%eos_time run", "run takes one amount of simulated time, e.g. %eos_time run 500"),
    ("%eos_time run x", "run takes simulated milliseconds: a whole number (500) or with a unit (500ms, 1s, 2m)"),
    ("%eos_time run -5", "run takes simulated milliseconds"),
    ("%eos_time run 1 2", "run takes one amount of simulated time"),
    ("%eos_time run 1.5", "run takes simulated milliseconds"),
    ("%eos_time run 1.5ms", "run takes simulated milliseconds"),
    ("%eos_time run 1h", "run takes simulated milliseconds"),
    ("%eos_time step 0", "events must be at least 1, got 0"),
    ("%eos_time step x", "step takes a whole number of events"),
    ("%eos_time step 1 2", "step takes a whole number of events"),
    ("%eos_time until", "until needs a condition"),
    ("%eos_time until 1 +", "until: '1 +' is not a Python expression"),
    ("%eos_time until False --max-ms 0", "--max-ms must be at least 1, got 0"),
    ("%eos_time until False --max-ms x", "argument --max-ms: invalid int value: 'x'"),
    # %eos_dump_log
    ("%eos_dump_log", "the following arguments are required: topic"),
    ("%eos_dump_log ordrs", "no topic 'ordrs'; did you mean 'orders'?"),
    ("%eos_dump_log orders -p 2", "topic 'orders' has partitions 0..1, not 2"),
    ("%eos_dump_log orders -p -1", "not -1"),
    ("%eos_dump_log orders -p x", "argument --partition/-p: invalid int value: 'x'"),
    ("%eos_dump_log orders -b 9", "no broker 9; brokers are 1, 2, 3"),
    ("%eos_dump_log orders --txn-index -b 0", "no broker 0"),
    ("%eos_dump_log orders --transactional-id app", "--transactional-id goes with __transaction_state"),
    # %eos_producer_state
    ("%eos_producer_state", "the following arguments are required: topic"),
    ("%eos_producer_state ordrs", "did you mean 'orders'?"),
    ("%eos_producer_state orders -p 5", "topic 'orders' has partitions 0..1, not 5"),
    ("%eos_producer_state orders -b 7", "no broker 7"),
    # %eos_transactions
    ("%eos_transactions", "the following arguments are required: action"),
    ("%eos_transactions bogus", "argument action: invalid choice: 'bogus'"),
    ("%eos_transactions list extra", "list takes no argument"),
    ("%eos_transactions describe", "describe needs a transactional id"),
    ("%eos_transactions describe-producers", "describe-producers needs a topic"),
    ("%eos_transactions describe-producers ordrs", "did you mean 'orders'?"),
    ("%eos_transactions describe-producers orders -p 9", "not 9"),
    ("%eos_transactions describe-producers orders -b 9", "no broker 9"),
    ("%eos_transactions find-hanging", "find-hanging needs --broker ID or a topic"),
    ("%eos_transactions find-hanging -b 9", "no broker 9"),
    ("%eos_transactions find-hanging ordrs", "did you mean 'orders'?"),
    ("%eos_transactions find-hanging orders -p 7", "not 7"),
    ("%eos_transactions abort", "abort needs a topic"),
    ("%eos_transactions abort orders", "abort needs --start-offset"),
    ("%eos_transactions abort orders -p 4 --start-offset 0", "not 4"),
    ("%eos_transactions partition", "partition needs a topic"),
    ("%eos_transactions partition orders -p 3", "not 3"),
    # %eos_consumer_groups
    ("%eos_consumer_groups", "the following arguments are required: action"),
    ("%eos_consumer_groups bogus", "argument action: invalid choice: 'bogus'"),
    ("%eos_consumer_groups describe", "describe needs --group GROUP"),
    ("%eos_consumer_groups describe --group", "argument --group/-g: expected one argument"),
    ("%eos_consumer_groups describe -g G --members --state", "describe takes one of --offsets, --members, --state"),
    ("%eos_consumer_groups describe -g G --offsets --members", "describe takes one of --offsets, --members, --state"),
    ("%eos_consumer_groups describe -g G --verbose", "--verbose goes with --members or --state"),
    ("%eos_consumer_groups list --group G", "list takes no --group (describe does)"),
    ("%eos_consumer_groups list --state", "list takes no --state (describe does)"),
    # %eos_check
    ("%eos_check --mode bogus", "argument --mode: invalid choice: 'bogus'"),
    ("%eos_check --cluster nope", "no cluster 'nope'"),
    ("%eos_check extra", "unrecognized arguments: extra"),
    # %eos_scenario
    ("%eos_scenario", "the following arguments are required: action"),
    ("%eos_scenario bogus", "argument action: invalid choice: 'bogus'"),
    ("%eos_scenario run", "run needs a scenario name"),
    ("%eos_scenario sweep", "sweep needs a scenario name"),
    ("%eos_scenario list extra", "list takes no name"),
    ("%eos_scenario mutants extra", "mutants takes no name"),
    ("%eos_scenario run dmo", "no scenario 'dmo'; did you mean 'demo'?"),
    ("%eos_scenario run demo --seed x", "argument --seed: invalid int value: 'x'"),
    ("%eos_scenario run demo --mutant M10", "'demo' takes no --mutant/--swarm; pick a catalog scenario"),
    ("%eos_scenario run demo --swarm", "'demo' takes no --mutant/--swarm"),
    (f"%eos_scenario run {LOST_ACK} --mutant M99", "no mutant 'M99'; did you mean 'M9'?"),
    ("%eos_scenario sweep nope --seeds 2 --quiet", "no catalog scenario 'nope'"),
    ("%eos_scenario sweep demo --seeds 1 --quiet", "no catalog scenario 'demo'"),
    (f"%eos_scenario sweep {LOST_ACK} --seeds 0 --quiet", "--seeds must be at least 1, got 0"),
    (f"%eos_scenario sweep {LOST_ACK} --seeds x", "argument --seeds: invalid int value: 'x'"),
    (f"%eos_scenario sweep {LOST_ACK} --first-seed x", "argument --first-seed: invalid int value: 'x'"),
    (f"%eos_scenario sweep {LOST_ACK} --seeds 1 --mutant M99 --quiet", "no mutant 'M99'"),
    # unknown options anywhere
    ("%eos_produce p1 orders a --bogus", "unrecognized arguments: --bogus"),
    ("%eos_topic list --bogus", "unrecognized arguments: --bogus"),
]


def fixed(cell: str, fragment: str, reason: str) -> Any:
    """A case that was a bug when the test was written (``reason`` says what it was); it must hold now."""
    return pytest.param(cell, fragment, id=cell)


# Each of these was a bug in eos_magics when it was found; the reason stays as the record.
BUGS = [
    fixed(
        "%eos_fault restart 1",
        "restart",
        "a node fault in the wrong state (restart/resume an up broker, pause a paused one) raises the engine's "
        "IllegalNodeTransitionError (a plain RuntimeError: full traceback); Session._engine converts only "
        "TypeError/ValueError/ConfigError (eos_magics/session.py _engine)",
    ),
    fixed("%eos_fault resume 2", "resume", "as restart: IllegalNodeTransitionError passes through Session._engine"),
    fixed("%eos_fault heal 1", "heal", "heal ignores its nodes: Session.fault returns before checking them"),
    fixed("%eos_time now 5", "now", "now ignores its argument (eos_magics/commands/clock.py returns before the check)"),
    fixed(
        "%eos_fault hold --type ProduceRequest --ms 5",
        "--ms",
        "--ms is accepted (and ignored) for drop/hold/duplicate; only delay uses it",
    ),
    fixed(
        "%eos_fault drop --type ProduceRequest --kind response",
        "--kind",
        "a --kind that contradicts --type installs a rule that can never match, silently",
    ),
    fixed(
        "%eos_transactions find-hanging -b 1 --max-transaction-timeout -3",
        "--max-transaction-timeout",
        "the view's ValueError is not converted: InspectMagics.eos_transactions calls views.transactions "
        "without Session._engine (eos_magics/commands/inspect.py)",
    ),
    fixed(
        "%eos_transactions abort orders --start-offset -5",
        "--start-offset",
        "raw ValueError 'start offset must be >= 0' from the admin client (eos_magics/commands/inspect.py)",
    ),
    fixed(
        "%eos_check --save /nonexistent/dir/h.jsonl",
        "/nonexistent/dir/h.jsonl",
        "--save to a missing directory raises a raw FileNotFoundError traceback, after the final read already ran "
        "(eos_magics/session.py check)",
    ),
    fixed(
        "%eos_time until nope > 1",
        "nope",
        "a NameError (or any error) in the until condition shows a traceback through session.py and the "
        "scheduler; only SyntaxError becomes a UsageError (eos_magics/commands/clock.py)",
    ),
]


@pytest.mark.parametrize(("cell", "fragment"), [*BAD, *BUGS])
def test_bad_input_is_a_one_line_usage_error_and_nothing_is_lost(
    world: Shell, cell: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(world)
    capsys.readouterr()
    with pytest.raises(UsageError) as caught:
        run(world, cell)
    assert_one_line_usage_error(caught.value, shown(capsys), fragment)
    assert "ran" not in world.user_ns
    assert_nothing_lost(world, before)


def test_unknown_message_type_lists_the_real_ones(world: Shell) -> None:
    with pytest.raises(EosUsageError) as caught:
        run(world, "%eos_fault drop --type ProduceRespnse")
    message = str(caught.value)
    assert "ProduceRequest, ProduceResponse" in message
    assert "EndTxnRequest" in message


def test_unknown_scenario_and_mutant_list_the_real_ones(world: Shell) -> None:
    with pytest.raises(EosUsageError) as caught:
        run(world, "%eos_scenario run isolation: lso of by one")
    assert "did you mean 'isolation: lso off by one'?" in str(caught.value)
    assert "list them with %eos_scenario list" in str(caught.value)
    with pytest.raises(EosUsageError) as caught:
        run(world, f"%eos_scenario run {LOST_ACK} --mutant M0")
    assert "(known: M1, M10," in str(caught.value)


def test_unknown_node_lists_each_name_once(world: Shell) -> None:
    with pytest.raises(EosUsageError) as caught:
        run(world, "%eos_fault crash brokr-1")
    known = str(caught.value).split("(known: ")[1].split(")")[0].split(", ")
    assert len(known) == len(set(known))


# -- Kafka's own errors pass through as one named line ------------------------------------------------------------

PASS_THROUGH = [
    ("%eos_topic create orders", TopicExistsException, True),
    ("%eos_topic create t9 --rf 4", InvalidReplicationFactorException, True),
    ("%eos_topic create t9 --rf 0", InvalidReplicationFactorException, True),
    ("%eos_topic create bad/name", InvalidTopicException, True),
    ("%eos_topic create __consumer_offsets", InvalidTopicException, True),
    ("%eos_txn commit t1", IllegalStateError, True),
    ("%eos_txn abort t1", IllegalStateError, True),
    ("%eos_txn init t1", IllegalStateError, True),
    ("%eos_produce t1 orders outside", IllegalStateError, True),
    # DescribeTransactions crosses the network to the coordinator: time moves, nothing else.
    ("%eos_transactions describe nope", TransactionalIdNotFoundException, False),
    ("%eos_transactions abort orders -p 0 --start-offset 5", AbortTransactionError, False),  # the admin node runs
]


@pytest.mark.parametrize(("cell", "error", "unchanged"), PASS_THROUGH)
def test_kafka_errors_pass_through_as_one_named_line(
    world: Shell, cell: str, error: type[Exception], unchanged: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(world)
    capsys.readouterr()
    with pytest.raises(error) as caught:
        run(world, cell)
    assert isinstance(caught.value, (KafkaError, IllegalStateError))
    assert not isinstance(caught.value, UsageError)
    (line,) = caught.value._render_traceback_()
    assert line.startswith(error.__name__)
    printed = shown(capsys)
    assert line in printed
    assert "Traceback" not in printed
    assert_nothing_lost(world, before, unchanged=unchanged)


def test_txn_in_the_wrong_state_leaves_it_usable(world: Shell) -> None:
    run(world, "%eos_txn begin t1")
    with pytest.raises(IllegalStateError, match="IN_TRANSACTION"):
        run(world, "%eos_txn begin t1")
    with pytest.raises(IllegalStateError, match="IN_TRANSACTION"):
        run(world, "%%eos_txn t1\nran = True\n")
    assert "ran" not in world.user_ns  # begin failed before the body
    run(world, "%eos_produce t1 out inside")
    run(world, "%eos_txn commit t1")
    run(world, "%eos_time run 100")
    assert "payload: inside" in world.user_ns["cluster"].dump_log("out", 0)


def test_a_syntax_error_in_a_txn_body_opens_no_transaction(world: Shell) -> None:
    with pytest.raises(SyntaxError):
        run(world, "%%eos_txn t1\nx = 1 +\n")
    run(world, "%%eos_txn t1\n%eos_produce t1 out after\n")  # begin works: nothing was left open
    run(world, "%eos_time run 100")
    assert "payload: after" in world.user_ns["cluster"].dump_log("out", 0)


def test_check_with_no_history_yet(bare: Shell) -> None:
    run(bare, "%eos_cluster create")
    with pytest.raises(EosUsageError, match="nothing to judge yet: produce or consume something first"):
        run(bare, "%eos_check")


# -- bugs that need their own story ---------------------------------------------------------------------------------


def test_offsets_from_a_consumer_without_a_group_is_refused_before_the_body(world: Shell) -> None:
    run(world, "%eos_consumer nog --assign orders:0")
    run(world, "%eos_consume nog")
    with pytest.raises(UsageError, match="group"):
        run(world, "%%eos_txn t1 --offsets-from nog\nran = True\n")
    assert "ran" not in world.user_ns
    run(world, "%%eos_txn t1\n%eos_produce t1 out next\n")


def test_reset_of_another_cluster_keeps_the_current_one(world: Shell) -> None:
    run(world, "%eos_cluster create --name c2 --seed 2")
    run(world, "%eos_cluster use --name cluster")
    run(world, "%eos_cluster reset --name c2")
    assert run(world, "%eos_cluster list").column("current") == [True, False]


def test_a_client_cannot_take_another_clusters_name(world: Shell) -> None:
    run(world, "%eos_cluster create --name c2")
    c2 = world.user_ns["c2"]
    run(world, "%eos_cluster use --name cluster")
    with pytest.raises(UsageError, match="c2"):
        run(world, "%eos_producer c2")
    assert world.user_ns["c2"] is c2


def test_a_cluster_cannot_take_a_clients_name(world: Shell) -> None:
    p1 = world.user_ns["p1"]
    with pytest.raises(UsageError, match="p1"):
        run(world, "%eos_cluster create --name p1")
    assert world.user_ns["p1"] is p1


def test_a_refused_config_value_does_not_break_a_reload(bare: Shell) -> None:
    run(bare, "%config EosMagics.brokers = 0")
    run(bare, "%reload_ext eos_magics")
    run(bare, "%eos_cluster create")
    assert len(bare.user_ns["cluster"].brokers) == 3


def test_session_api_bad_values_are_usage_errors(tmp_path: Path) -> None:
    from eos_magics import Session

    s = Session()
    with pytest.raises(EosUsageError, match="no cluster yet"):
        s.cluster  # noqa: B018 - the property raises
    with pytest.raises(EosUsageError, match="--brokers must be an integer"):
        s.create_cluster(brokers="3")
    with pytest.raises(EosUsageError, match="--brokers must be an integer"):
        s.create_cluster(brokers=True)
    with pytest.raises(EosUsageError, match="config must be a dict"):
        s.create_cluster(config=["min.insync.replicas=2"])  # type: ignore[arg-type]
    with pytest.raises(EosUsageError, match="cluster name must be a Python identifier"):
        s.create_cluster(name=3)  # type: ignore[arg-type]
    s.create_cluster(seed=1)
    s.create_topic("orders")
    s.producer("p1")
    s.consumer("c1", assign=[("orders", 0)])
    with pytest.raises(EosUsageError, match="values must be a list of record values"):
        s.produce("p1", "orders", "abc")
    with pytest.raises(EosUsageError, match="nothing to produce"):
        s.produce("p1", "orders", [])
    with pytest.raises(EosUsageError, match="--partition must be an integer"):
        s.produce("p1", "orders", ["a"], partition="0")  # type: ignore[arg-type]
    with pytest.raises(EosUsageError, match="--timeout is simulated seconds"):
        s.consume("c1", timeout=True)
    with pytest.raises(EosUsageError, match="--max must be an integer"):
        s.consume("c1", max_messages=1.5)  # type: ignore[arg-type]
    with pytest.raises(EosUsageError, match="milliseconds must be an integer"):
        s.run(1.5)  # type: ignore[arg-type]
    with pytest.raises(EosUsageError, match="milliseconds must be at least 0"):
        s.run(-1)
    with pytest.raises(EosUsageError, match="unknown fault 'crsh'; did you mean 'crash'"):
        s.fault("crsh", 1)
    with pytest.raises(EosUsageError, match="isolation level must be one of"):
        s.consumer("c2", isolation_level="dirty")
    with pytest.raises(EosUsageError, match="mode must be one of"):
        s.check("strict")
    with pytest.raises(EosUsageError, match="--seed must be an integer"):
        s.run_scenario("demo", seed="7")  # type: ignore[arg-type]
    with pytest.raises(EosUsageError, match="still false after 50 simulated ms"):
        s.until(lambda: False, max_ms=50)
    assert s.produce("p1", "orders", ["ok"]).column("offset") == [0]  # nothing was lost on the way
