"""The pytest plugin seen from outside: inner pytest sessions, their outcomes and their reports.

Goal: a clean run passes; ``eos_check`` fails a test whose client history has a forbidden anomaly
with the checker's report, and passes one whose anomalies the mode allows; every failure of a
test that used ``eos_cluster`` carries the seed, the fingerprint and a replay line, and the
replay line gives the same fingerprint; the same node id gives the same seed and fingerprint in
two processes with different ``PYTHONHASHSEED``, another node id another seed; ``--eos-seed``
and ``eos_seed`` override the node-id seed (the option over the marker); the markers pass
``--strict-markers``; bad marker arguments fail with one line; loading the plugin imports no
engine.

Method: ``pytester`` writes an inner test file and runs pytest on it, in this process where
nothing but the outcome matters and in subprocesses (``runpytest_subprocess``) where processes
must differ. The inner tests drive the engine's own clients through the fixture; the same
through ``confluent_kafka`` and the patch is in ``test_plugin_patch.py``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from eos_magics.pytest_plugin import derived_seed

#: Inner tests: one clean transactional run, and the anomalies the checker must name.
APP = """
import pytest

def transfer(eos, *, commit=True):
    p = eos.producer({"transactional.id": "t1"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("orders", value=b"o-1", partition=0)
    p.flush()  # written before the transaction ends (an abort purges what is not sent yet)
    if commit:
        p.commit_transaction()
    else:
        p.abort_transaction()

@pytest.mark.eos_cluster(topics={"orders": 1})
@pytest.mark.eos_check(mode="eos")
def test_commit(eos_cluster):
    transfer(eos_cluster)

@pytest.mark.eos_cluster(topics={"orders": 1})
@pytest.mark.eos_check(mode="eos")
def test_aborted_read(eos_cluster):
    transfer(eos_cluster, commit=False)
    reader = eos_cluster.consumer({"isolation.level": "read_uncommitted"})
    reader.assign([("orders", 0)])
    assert [m.value() for m in reader.consume(10, timeout=1.0)] == [b"o-1"]

def send_twice(eos):
    p = eos.producer()
    p.produce("orders", value=b"o-1", partition=0)
    p.produce("orders", value=b"o-1", partition=0)
    p.flush()

@pytest.mark.eos_cluster(topics={"orders": 1})
@pytest.mark.eos_check(mode="eos")
def test_twice_eos(eos_cluster):
    send_twice(eos_cluster)

@pytest.mark.eos_cluster(topics={"orders": 1})
@pytest.mark.eos_check(mode="at-least-once")
def test_twice_at_least_once(eos_cluster):
    send_twice(eos_cluster)
"""

#: Two tests with the same body: only their node ids, hence their seeds, differ.
SAME_BODY = """
import pytest

def work(eos):
    p = eos.producer()
    for i in range(20):
        p.produce("orders", value=f"o-{i}".encode())
    p.flush()
    eos.crash(eos.leader("orders", 0))
    eos.run_for(5_000)
    assert False, "the application's own failure"

@pytest.mark.eos_cluster(topics={"orders": 3})
def test_a(eos_cluster):
    work(eos_cluster)

@pytest.mark.eos_cluster(topics={"orders": 3})
def test_b(eos_cluster):
    work(eos_cluster)
"""

SECTION = re.compile(
    r"seed: (?P<seed>\d+) \((?P<source>[^)]*)\)\n"
    r"fingerprint: (?P<fingerprint>[0-9a-f]+) \(at \d+ simulated ms\)\n"
    r"replay: (?P<replay>.*)"
)


def sections(result: pytest.RunResult) -> dict[str, dict[str, str]]:
    """Return the ``eos`` sections of a run's failures by test name."""
    text = result.stdout.str()
    found = {}
    for m in SECTION.finditer(text):
        name = m["replay"].split("::")[1].split()[0]
        found[name] = m.groupdict()
    return found


def test_a_clean_run_passes_and_a_forbidden_anomaly_fails_with_the_checker_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_app=APP)
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "PASSED" not in out  # -q is not on: the summary names the failures only
    result.stdout.fnmatch_lines(
        [
            "*_ test_aborted_read _*",
            "eos_check(mode='eos'): the client history has forbidden anomalies",
            "FAIL: 1 forbidden, 0 allowed anomalies*",
            "forbidden: G1a x1",
            "*G1a*orders/0*written by op * which failed",
        ]
    )
    result.stdout.fnmatch_lines(["*_ test_twice_eos _*", "*forbidden: duplicate x1*"])
    found = sections(result)
    assert sorted(found) == ["test_aborted_read", "test_twice_eos"]
    seed = derived_seed("test_app.py::test_aborted_read")
    assert found["test_aborted_read"]["seed"] == str(seed)
    assert found["test_aborted_read"]["source"] == "the CRC-32 of the test's node id"
    assert found["test_aborted_read"]["replay"] == f"pytest test_app.py::test_aborted_read --eos-seed {seed}"


@pytest.mark.slow
def test_every_failure_carries_the_replay_line_and_the_same_node_id_replays_the_same_run_in_any_process(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_same=SAME_BODY)
    runs = []
    for hash_seed in ("1", "2"):
        monkeypatch.setenv("PYTHONHASHSEED", hash_seed)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
        result.assert_outcomes(failed=2)
        result.stdout.fnmatch_lines(["*AssertionError: the application's own failure*", "*- eos -*"])
        runs.append(sections(result))
    first, second = runs
    assert first == second, "same node id: same seed, same fingerprint, in another process"
    a, b = first["test_a"], first["test_b"]
    assert a["seed"] == str(derived_seed("test_same.py::test_a"))
    assert b["seed"] == str(derived_seed("test_same.py::test_b"))
    assert a["fingerprint"] != b["fingerprint"], "another node id: another seed, another run"

    # The replay line, as printed, reruns that test alone with its seed: the same run.
    replay = shlex.split(a["replay"])
    assert replay[0] == "pytest"
    again = sections(pytester.runpytest(*replay[1:], "-p", "no:cacheprovider"))
    assert list(again) == ["test_a"]
    assert again["test_a"]["fingerprint"] == a["fingerprint"]
    assert again["test_a"]["source"] == "from --eos-seed"
    # The seed is all that differs between test_a and test_b: test_b on test_a's seed is test_a's run.
    borrowed = sections(pytester.runpytest("test_same.py::test_b", "--eos-seed", a["seed"], "-p", "no:cacheprovider"))
    assert borrowed["test_b"]["fingerprint"] == a["fingerprint"]


def test_the_eos_seed_option_wins_over_the_marker_which_wins_over_the_node_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_seeds="""
        import pytest

        @pytest.mark.eos_seed(123)
        def test_marked(eos_cluster):
            print("SEED", "marked", eos_cluster.seed)

        def test_plain(eos_cluster):
            print("SEED", "plain", eos_cluster.seed)
        """
    )

    def seeds(*args: str) -> dict[str, int]:
        result = pytester.runpytest("-s", "-p", "no:cacheprovider", *args)
        result.assert_outcomes(passed=2)
        return {m[1]: int(m[2]) for m in re.finditer(r"SEED (\w+) (\d+)", result.stdout.str())}

    assert seeds() == {"marked": 123, "plain": derived_seed("test_seeds.py::test_plain")}
    assert seeds("--eos-seed", "7") == {"marked": 7, "plain": 7}


def test_the_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.eos_seed(seed):*",
            "@pytest.mark.eos_cluster(brokers=3, config=None, topics=None):*",
            "@pytest.mark.eos_check(mode='eos', settle_ms=5000, topics=None, promise=None):*",
        ]
    )
    help_text = pytester.runpytest("--help").stdout.str()
    assert "--eos-seed=N" in help_text


def test_bad_marker_arguments_fail_with_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.eos_cluster(brokrs=3)
        def test_typo(eos_cluster):
            pass

        @pytest.mark.eos_check(mode="exactly-once")
        def test_mode(eos_cluster):
            pass

        @pytest.mark.eos_seed("42")
        def test_seed(eos_cluster):
            pass

        @pytest.mark.eos_cluster(topics={"orders": 0})
        def test_topic(eos_cluster):
            pass

        @pytest.mark.eos_check
        def test_no_fixture():
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.eos_cluster: eos_cluster() got an unexpected keyword argument 'brokrs'",
            "@pytest.mark.eos_check: unknown mode 'exactly-once'; expected one of eos, *",
            "@pytest.mark.eos_seed: the seed must be an int, got '42'",
            "*InvalidPartitionsException*",
            "@pytest.mark.eos_check needs the eos_cluster fixture: *",
        ]
    )
    # the cluster of test_topic was built before its topic failed: its error carries the section
    assert list(sections(result)) == ["test_topic"]


def test_loading_the_plugin_imports_no_engine_and_pytest_finds_it_by_its_entry_point() -> None:
    code = (
        "import sys\n"
        "from importlib.metadata import entry_points\n"
        "import eos_magics.pytest_plugin\n"
        "print([m for m in ('engine', 'widgets', 'IPython', 'pandas') if m in sys.modules])\n"
        "print([e.value for e in entry_points(group='pytest11') if e.name == 'eos'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ)
    assert out.stdout.splitlines() == ["[]", "['eos_magics.pytest_plugin']"]
