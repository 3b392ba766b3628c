"""Tests of ``eos export``: runs (or a history file) written as Parquet tables.

Goal: ``eos export NAME --seed N --out DIR`` exits 0, writes every table of the run and prints
its row counts; ``--seeds A..B`` and ``--mutant`` name their runs; ``--history FILE.jsonl``
exports the history tables alone; and every bad argument (scenario, seeds, mutant, directory,
history file) exits 2 with one line on stderr. Method: call ``engine.cli.main`` in-process on a
small catalog scenario and compare what it wrote with ``export_run`` of the same run.
"""

from __future__ import annotations

import json

import pytest

from engine.check.jsonl import save_jsonl
from engine.cli import main
from engine.export import TABLES, export_run, read_export
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec

NAME = "idempotence: dedup window"
RUN_ID = "idempotence-dedup-window-s3"


@pytest.fixture(scope="module")
def expected():
    result = run_spec(BY_NAME[NAME], 3)
    return result, export_run(result)


def _eos(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    status = main(["export", *argv])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err.splitlines()


def test_one_run_is_written_and_its_row_counts_printed(capsys, tmp_path, expected):
    _, export = expected
    status, out, err = _eos(capsys, NAME, "--seed", "3", "--out", str(tmp_path / "runs"))
    assert status == 0, err
    assert out[0].startswith(f"{RUN_ID}: PASS {NAME} seed=3")
    assert out[1].split() == [f"{name}={n}" for name, n in export.row_counts().items()]
    assert out[-1] == f"wrote 1 run to {tmp_path / 'runs'}"
    back = read_export(tmp_path / "runs")
    assert back.run_ids == [RUN_ID]
    for name in TABLES:
        assert back[name].equals(export[name]), name


def test_a_seed_range_and_a_mutant_name_their_runs(capsys, tmp_path):
    status, out, _ = _eos(capsys, NAME, "--seeds", "1..2", "--mutant", "m3", "--out", str(tmp_path))
    assert status == 0
    ids = ["idempotence-dedup-window-s1-M3", "idempotence-dedup-window-s2-M3"]
    assert [line.split(":")[0] for line in out if not line.startswith(" ")][:2] == ids
    assert out[-1] == f"wrote 2 runs to {tmp_path}"
    manifest = json.loads((tmp_path / "eos-export.json").read_text())
    assert [r["run_id"] for r in manifest["runs"]] == ids


def test_a_second_export_adds_runs_and_refuses_a_run_already_there(capsys, tmp_path):
    assert _eos(capsys, NAME, "--seed", "1", "--out", str(tmp_path))[0] == 0
    assert _eos(capsys, NAME, "--seed", "2", "--out", str(tmp_path))[0] == 0
    status, out, err = _eos(capsys, NAME, "--seed", "2", "--out", str(tmp_path))
    assert (status, out, len(err)) == (2, [], 1)
    assert "already holds run idempotence-dedup-window-s2" in err[0]
    assert "--overwrite" in err[0]
    assert _eos(capsys, NAME, "--seed", "2", "--out", str(tmp_path), "--overwrite")[0] == 0
    assert read_export(tmp_path).run_ids == ["idempotence-dedup-window-s1", "idempotence-dedup-window-s2"]


def test_a_history_file_is_exported_alone(capsys, tmp_path, expected):
    result, export = expected
    path = tmp_path / "my session.jsonl"
    save_jsonl(result.history, path)
    status, out, err = _eos(capsys, "--history", str(path), "--out", str(tmp_path / "h"))
    assert status == 0, err
    assert out[0] == f"my-session: history {path}: {len(result.history)} records"
    back = read_export(tmp_path / "h")
    assert back.run_ids == ["my-session"]
    drop = ["run_id", "scenario", "seed"]
    for name in ("history", "history_mops"):
        assert back[name].num_rows > 0
        assert back[name].drop_columns(drop).equals(export[name].drop_columns(drop)), name
    assert all(back[name].num_rows == 0 for name in TABLES if not name.startswith("history"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["idempotence: dedup windw", "--out", "{d}"], "did you mean 'idempotence: dedup window'?"),
        (["nope", "--out", "{d}"], "run 'eos scenarios' to list them"),
        ([NAME, "--seeds", "3..1", "--out", "{d}"], "the range is empty"),
        ([NAME, "--seeds", "x..y", "--out", "{d}"], "takes a range A..B"),
        ([NAME, "--seed", "1", "--seeds", "1..2", "--out", "{d}"], "not both"),
        ([NAME, "--seeds", "1..5000", "--out", "{d}"], "at most 1000"),
        ([NAME, "--mutant", "M99", "--out", "{d}"], "no mutant 'M99'"),
        ([NAME, "--seed", "x", "--out", "{d}"], "invalid int value"),
        ([NAME], "the following arguments are required: --out"),
        (["--out", "{d}"], "name a scenario"),
        ([NAME, "--out", "{f}"], "is a file"),
        (["--history", "{d}/missing.jsonl", "--out", "{d}"], "no such file"),
        (["--history", "{bad}", "--out", "{d}"], "line 1"),
        (["--history", "{bad}", NAME, "--out", "{d}"], "exports a file alone"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, tmp_path, argv, message):
    f = tmp_path / "a-file"
    f.write_text("x")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"index": "one"}\n')
    args = [a.format(d=tmp_path / "out", f=f, bad=bad) for a in argv]
    status, out, err = _eos(capsys, *args)
    assert status == 2
    assert out == []
    assert len(err) == 1, err
    assert err[0].startswith("eos export: ")
    assert message in err[0]
    assert not (tmp_path / "out" / "eos-export.json").exists()
