"""The Spark reports read as tables and pictures that fit the page, as notebook 05 shows them.

Goal: ``%eos_spark check`` renders as the house's HTML table (one row per run, then each failing
run's anomalies with ``%eos_check``'s columns, history and white-box), narrow enough for a
1280 px page, while ``print`` keeps the plain text; the LSO-lag picture fits its time axis to
the time the lag moved, and says what it leaves out. Method: notebook 05's runs through a real
IPython shell over the module's Spark session (the zombie-fencing run under M6, registered as
``m6_`` views), and ``copier: random aborts`` seed 7 registered with
``eos_magics.spark.views.register``; HTML is parsed as XML and measured with
``eos_magics.views.base.min_width_px``; the picture is drawn with matplotlib's Agg backend.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator

import matplotlib
import pytest

from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from eos_magics._testing import dispose, run
from eos_magics._testing import testing_shell as new_shell
from eos_magics.spark import analyses
from eos_magics.spark.views import register
from eos_magics.views.base import PAGE_WIDTH_PX, min_width_px

matplotlib.use("Agg")

M6_VIEWS = '%eos_spark views --scenario "transactions: zombie fencing" --seed 3 --mutant M6 --prefix m6_'


@pytest.fixture
def ip(spark) -> Iterator:
    shell = new_shell()
    yield shell
    dispose(shell)


@pytest.fixture(scope="module")
def copier_lag(spark):
    """Notebook 05's LSO lag: ``copier: random aborts`` seed 7, topic ``out``, as pandas."""
    tables = register(spark, run_spec(BY_NAME["copier: random aborts"], 7), prefix="lag_")
    lag = analyses.lso_lag({name[4:]: df for name, df in tables.items()}).where("topic = 'out'").toPandas()
    assert lag.time_ms.max() > 25_000 and lag[lag.lso_lag > 0].time_ms.max() < 5_000  # the shape notebook 05 had
    return lag


# -- 3. %eos_spark check is a table -------------------------------------------------------------------------


@pytest.mark.slow
def test_spark_check_renders_as_a_table_of_runs_then_the_failing_runs_anomalies(ip) -> None:
    run(ip, M6_VIEWS)
    verdicts = run(ip, "%eos_spark check --prefix m6_")
    assert repr(verdicts).startswith("FAIL transactions-zombie-fencing-s3-M6")  # print keeps the text
    root = ET.fromstring(f"<root>{verdicts._repr_html_()}</root>")
    from eos_magics.spark.verdict import RUN_COLUMNS

    runs, anomalies = list(root.iter("table"))
    assert ["".join(th.itertext()) for th in runs.iter("th")] == list(RUN_COLUMNS)
    (row,) = [["".join(td.itertext()) for td in tr.iter("td")] for tr in runs.iter("tr") if tr.find("td") is not None]
    assert row[:3] == ["transactions-zombie-fencing-s3-M6", "eos", "FAIL"]
    kinds = {("".join(tr[1].itertext()), "".join(tr[2].itertext())) for tr in anomalies.iter("tr") if len(tr) > 2}
    assert {("G1a", "C5"), ("L3-epoch-regression", "L3"), ("L4-data-after-marker", "L4")} <= kinds
    assert min_width_px(verdicts._repr_html_()) <= PAGE_WIDTH_PX
    assert verdicts.view().to_pandas().shape == (1, len(RUN_COLUMNS))


@pytest.mark.slow
def test_one_runs_verdict_renders_as_its_anomaly_table(ip) -> None:
    run(ip, M6_VIEWS)
    (verdict,) = list(run(ip, "%eos_spark check --prefix m6_"))
    table = verdict.view()
    assert table.column("kind").count("L3-epoch-regression") == len(
        [a for a in verdict.forbidden_invariants if a.kind == "L3-epoch-regression"]
    )
    assert "not checked in Spark (Python only): L11, L12, L13" in verdict._repr_html_()
    assert min_width_px(verdict._repr_html_()) <= PAGE_WIDTH_PX


# -- 4. the LSO-lag picture fits its axis to the activity ----------------------------------------------------


@pytest.mark.slow
def test_the_lso_lag_axis_fits_the_time_the_lag_moved_and_notes_the_cut(copier_lag) -> None:
    from eos_magics.spark import plots

    ax = plots.lso_lag(copier_lag)
    busy_until = copier_lag[copier_lag.lso_lag > 0].time_ms.max()
    lo, hi = ax.get_xlim()
    assert lo == copier_lag.time_ms.min()
    assert busy_until < hi < busy_until * 1.2, (busy_until, hi)
    assert ax.get_title(loc="right").endswith(f"{copier_lag.time_ms.max():,} ms not shown: no lag there (HW = LSO)")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["out-0", "out-1", "out-2"]
    assert copier_lag.time_ms.max() > 25_000  # the data are left whole: only the axis is cut
    matplotlib.pyplot.close(ax.figure)


def test_active_span_keeps_the_drop_that_ends_the_last_lag_and_the_whole_range_without_lag() -> None:
    from eos_magics.spark.plots import active_span, trim_note

    assert active_span([0, 10, 20, 1000], [0, 3, 0, 0], pad=0.0) == (0.0, 20.0)
    assert active_span([0, 10, 20, 1000], [0, 3, 0, 0]) == (0.0, 21.0)
    assert active_span([0, 10, 1000], [0, 0, 0]) == (0.0, 1000.0)
    assert active_span([0, 10], [0, 5]) == (0.0, 10.0)
    assert trim_note(0, 1000, 21) == "t=21..1,000 ms not shown: no lag there (HW = LSO)"
    assert trim_note(0, 1000, 1000) == ""
    with pytest.raises(ValueError, match="as many values as times"):
        active_span([0, 1], [0])
