"""The whole widget chain works in a real browser: server, kernel, anywidget front-end, browser -> kernel.

Method: write a two-cell notebook into the served directory. Cell 1 defines an anywidget whose ``_esm`` is
``widgets/_smoke.js`` of this tree (a button that increments the synced ``clicks`` trait) and displays it;
cell 2 prints ``clicks=<value>`` from the kernel. In headless chromium: run cell 1, click the rendered
button twice (the front-end sends each change to the kernel), run cell 2 and wait for ``clicks=2`` in its
output. The anywidget front-end comes from the labextension installed in the venv, not from a CDN. A
screenshot goes to ``test-artifacts/browser/smoke.png``; no console error is allowed.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow

SMOKE_ESM = Path(__file__).resolve().parents[2] / "widgets" / "_smoke.js"

CELL_WIDGET = f"""\
import pathlib

import anywidget
import traitlets


class Smoke(anywidget.AnyWidget):
    _esm = pathlib.Path({str(SMOKE_ESM)!r})
    clicks = traitlets.Int(0).tag(sync=True)


w = Smoke()
w"""

CELL_PRINT = 'print(f"clicks={w.clicks}")'


def test_button_clicks_in_the_browser_reach_the_kernel(lab, jupyter_server):
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(CELL_WIDGET), nbformat.v4.new_code_cell(CELL_PRINT)]
    )
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, jupyter_server.root_dir / "browser_smoke.ipynb")

    lab.open("browser_smoke.ipynb")
    lab.wait_for_kernel_idle()
    lab.run_cells(1)
    button = lab.page.locator(".eos-smoke-button")
    button.wait_for()
    button.click()
    button.click()
    lab.page.wait_for_selector(".eos-smoke-button:has-text('clicks: 2')")  # the front-end's model
    lab.run_next_cell()
    lab.wait_for_output("clicks=2", cell=2)  # the kernel's trait
    lab.screenshot("smoke")
    assert lab.console_errors == []
    print(
        f"server up {jupyter_server.startup_seconds:.1f}s, "
        + ", ".join(f"{k} {v:.1f}s" for k, v in lab.timings.items())
    )
