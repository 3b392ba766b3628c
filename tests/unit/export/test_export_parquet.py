"""Tests of ``engine.export.parquet``: an export on disk, written, added to, and read back with checks.

Goal: ``write_parquet`` then ``read_export`` gives back equal tables; the layout is
``DIR/<table>/<run_id>.parquet`` plus the manifest; writing more runs adds them, a run id already
there is refused unless ``overwrite=True``; and every bad directory (missing, no manifest,
another version, a missing table or file, a file that is not Parquet or has another schema) is
one ``ExportError`` line that says what to do, never a pyarrow traceback. Method: export two
small catalog runs once per module, write them into temporary directories, and damage copies.
"""

from __future__ import annotations

import json
import re
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.export import TABLES, ExportError, export_run, inspect_export, read_export, write_parquet
from engine.export.parquet import MANIFEST, check_target
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec

NAME = "idempotence: dedup window"


@pytest.fixture(scope="module")
def first():
    return export_run(run_spec(BY_NAME[NAME], 1))


@pytest.fixture(scope="module")
def second():
    return export_run(run_spec(BY_NAME[NAME], 2))


@pytest.fixture(scope="module")
def written(tmp_path_factory, first, second):
    """A directory holding both runs, written one after the other (never changed by a test)."""
    d = tmp_path_factory.mktemp("export") / "runs"
    write_parquet(first, d)
    second.write_parquet(d)  # the method form adds to the directory too
    return d


@pytest.fixture
def copy(tmp_path, written):
    """A private copy of ``written`` that a test may damage."""
    d = tmp_path / "copy"
    shutil.copytree(written, d)
    return d


def _one_line_error(call, *fragments: str) -> str:
    with pytest.raises(ExportError) as info:
        call()
    text = str(info.value)
    assert "\n" not in text
    assert "Traceback" not in text
    for f in fragments:
        assert f in text, (f, text)
    return text


# -- round trip and layout --------------------------------------------------------------------


def test_the_layout_is_one_file_per_table_and_run_plus_the_manifest(written, first, second):
    assert sorted(p.name for p in written.iterdir()) == sorted([*TABLES, MANIFEST])
    for name in TABLES:
        assert sorted(p.name for p in (written / name).iterdir()) == sorted(
            f"{r}.parquet" for r in [*first.run_ids, *second.run_ids]
        )
    manifest = json.loads((written / MANIFEST).read_text())
    assert manifest["schema_version"] == 1
    assert manifest["tables"] == list(TABLES)
    assert manifest["runs"] == [
        {"run_id": "idempotence-dedup-window-s1", "scenario": NAME, "seed": 1},
        {"run_id": "idempotence-dedup-window-s2", "scenario": NAME, "seed": 2},
    ]
    assert manifest["rows"]["idempotence-dedup-window-s1"] == first.row_counts()


def test_a_round_trip_gives_back_equal_tables_in_run_order(written, first, second):
    back = read_export(written)
    assert back.run_ids == first.run_ids + second.run_ids
    for name in TABLES:
        assert back[name].equals(pa.concat_tables([first[name], second[name]])), name
        assert back[name].schema.equals(TABLES[name])


def test_reading_some_tables_leaves_the_others_empty_with_their_schema(written, first, second):
    back = read_export(written, tables=["records", "history"])
    assert back["records"].num_rows == first["records"].num_rows + second["records"].num_rows > 0
    assert back["trace"].num_rows == 0
    assert back["trace"].schema.equals(TABLES["trace"])
    _one_line_error(lambda: read_export(written, tables=["recs"]), "no table named 'recs'")


def test_pandas_reads_a_table_directory_directly(written, first, second):
    df = pd.read_parquet(written / "records", dtype_backend="pyarrow")
    assert len(df) == first["records"].num_rows + second["records"].num_rows


def test_inspect_export_lists_the_files_and_rows_without_reading_them(written, first):
    found = inspect_export(written, ["faults"])
    assert list(found.files) == ["faults"]
    assert [p.name for p in found.files["faults"]] == [f"{r.run_id}.parquet" for r in found.runs]
    assert found.rows["idempotence-dedup-window-s1"]["faults"] == first["faults"].num_rows


# -- adding runs -------------------------------------------------------------------------------


def test_a_run_already_there_is_refused_unless_overwrite(copy, first):
    before = (copy / MANIFEST).read_text()
    _one_line_error(lambda: write_parquet(first, copy), "already holds run idempotence-dedup-window-s1", "overwrite")
    assert (copy / MANIFEST).read_text() == before
    write_parquet(first, copy, overwrite=True)
    back = read_export(copy)
    assert back.run_ids == ["idempotence-dedup-window-s2", "idempotence-dedup-window-s1"]
    assert back.select("idempotence-dedup-window-s1")["records"].equals(first["records"])


def test_a_multi_run_export_is_split_into_one_file_per_run(tmp_path, first, second):
    from engine.export import RunExport

    both = RunExport.concat([first, second])
    both.write_parquet(tmp_path / "both")
    back = read_export(tmp_path / "both")
    for name in TABLES:
        assert back[name].equals(both[name]), name
    assert pq.read_table(tmp_path / "both" / "trace" / "idempotence-dedup-window-s2.parquet").equals(second["trace"])


# -- bad directories: writing ------------------------------------------------------------------


def test_writing_refuses_a_file_a_foreign_directory_and_another_version(tmp_path, first, copy):
    f = tmp_path / "file.txt"
    f.write_text("x")
    _one_line_error(lambda: write_parquet(first, f), "is a file")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    _one_line_error(lambda: write_parquet(first, foreign), "holds no eos-export.json", "new or empty directory")
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    _set_version(copy, 99)
    _one_line_error(lambda: write_parquet(first, copy, overwrite=True), "version 99", "version 1")
    _one_line_error(lambda: check_target(copy), "version 99")


def test_writing_into_an_empty_directory_is_fine(tmp_path, first):
    (tmp_path / "empty").mkdir()
    write_parquet(first, tmp_path / "empty")
    assert read_export(tmp_path / "empty").run_ids == first.run_ids


def _set_version(d, version) -> None:
    m = json.loads((d / MANIFEST).read_text())
    m["schema_version"] = version
    (d / MANIFEST).write_text(json.dumps(m))


# -- bad directories: reading ------------------------------------------------------------------


def test_a_missing_directory(tmp_path):
    _one_line_error(lambda: read_export(tmp_path / "nowhere"), "does not exist", "eos export")


def test_a_directory_with_no_manifest(tmp_path):
    (tmp_path / "empty").mkdir()
    _one_line_error(lambda: read_export(tmp_path / "empty"), "has no eos-export.json", "eos export")


def test_a_manifest_of_another_version(copy):
    _set_version(copy, 2)
    _one_line_error(lambda: read_export(copy), "holds export schema version 2", "uses version 1", "eos export")


def test_a_manifest_that_is_not_json_or_not_ours(copy):
    (copy / MANIFEST).write_text("{not json")
    _one_line_error(lambda: read_export(copy), "cannot be read", "eos export")
    (copy / MANIFEST).write_text(json.dumps({"hello": 1}))
    _one_line_error(lambda: read_export(copy), "not an eos export manifest")
    (copy / MANIFEST).write_text(json.dumps({"format": "eos-export", "schema_version": 1, "runs": [{"x": 1}]}))
    _one_line_error(lambda: read_export(copy), "damaged run list")


def test_a_missing_table(copy):
    shutil.rmtree(copy / "group_offsets")
    _one_line_error(lambda: read_export(copy), "has no table group_offsets", "eos export")
    read_export(copy, tables=["records"])  # the tables asked for are all there


def test_a_missing_file(copy):
    (copy / "records" / "idempotence-dedup-window-s2.parquet").unlink()
    _one_line_error(
        lambda: read_export(copy), "table records has no file for run idempotence-dedup-window-s2", "eos export"
    )


def test_a_file_that_is_not_parquet(copy):
    (copy / "trace" / "idempotence-dedup-window-s1.parquet").write_bytes(b"PAR1 but not really")
    _one_line_error(lambda: read_export(copy), "is not a readable Parquet file", "eos export")


def test_a_file_whose_schema_differs(copy):
    path = copy / "records" / "idempotence-dedup-window-s1.parquet"
    t = pq.read_table(path)
    i = t.schema.get_field_index("offset")
    pq.write_table(t.set_column(i, pa.field("offset", pa.int32(), nullable=False), t["offset"].cast(pa.int32())), path)
    text = _one_line_error(lambda: read_export(copy), "table records", "column offset is int32, expected int64")
    assert re.search(r"re-export it with this version of eos: eos export", text)
    assert "idempotence-dedup-window-s1.parquet" in text
