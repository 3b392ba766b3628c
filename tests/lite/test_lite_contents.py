"""The site's contents: the notebooks as committed, never the working tree's executed copies; docs links open.

Method: a copy of this tree (its tracked and untracked, not ignored files) is committed in a fresh git
repository under ``tmp_path``; then its working copy of the tour gets what running it in JupyterLab leaves
behind (outputs, execution counts, saved widget state), as the README has a newcomer do before opening the
site. ``scripts/build-lite.sh`` of that copy builds its site (the tour and 04 only; the build venv and the
download cache of ``build/lite``, which the ``lite_site`` fixture needs built). Headless Debian chromium
opens the tour in it: no cell has an output or a count, and no stale text is on the page. Then 04 opens,
and a click on its link ``../docs/history-format.md`` opens that doc in the lab, with its own text.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
STALE = "STALE OUTPUT FROM THE WORKING TREE"


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src = REPO / os.fsdecode(name)
        if src.is_file() and not src.is_symlink():
            (dest / src.relative_to(REPO)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / src.relative_to(REPO))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "copy"], cwd=dest, check=True)


def _execute_in_place(notebook: Path) -> None:
    """What a run in JupyterLab saves: outputs and counts in every code cell, the widgets' state."""
    nb = json.loads(notebook.read_text())
    count = 0
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            count += 1
            cell["execution_count"] = count
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": [f"{STALE} {count}\n"]}]
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    notebook.write_text(json.dumps(nb, indent=1))


def test_the_site_takes_committed_notebooks_and_opens_04s_docs_link(drive, lite_site, lite_browser, tmp_path):
    tree = tmp_path / "tree"
    _copy_tree(tree)
    _execute_in_place(tree / "notebooks" / "00-tour.ipynb")
    assert subprocess.run(["git", "status", "--short"], cwd=tree, capture_output=True, text=True).stdout.strip()
    out = tmp_path / "lite"
    env = {
        **os.environ,
        "LITE_OUT": str(out),
        "LITE_VENV": str(lite_site.parent / "venv"),
        "LITE_CACHE": str(lite_site.parent / "cache"),
        "LITE_NOTEBOOKS": "00-tour 04-checking-eos",
    }
    done = subprocess.run(
        ["bash", str(tree / "scripts" / "build-lite.sh")], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = out / "site"
    assert STALE not in (site / "files" / "00-tour.ipynb").read_text()

    doc = (REPO / "docs" / "history-format.md").read_text().splitlines()[0].lstrip("# ").strip()
    with drive.serve(site) as url:
        with drive.open_notebook(lite_browser, url, "00-tour.ipynb") as page:
            cells = [c for c in drive.notebook_cells(page) if c["type"] == "code"]
            dirty = [i for i, c in enumerate(cells) if c["outputs"] or c["count"] is not None]
            assert cells and not dirty, f"code cells {dirty} of the tour open with outputs or counts"
            assert STALE not in page.locator(".jp-NotebookPanel").first.inner_text()

        with drive.open_notebook(lite_browser, url, "04-checking-eos.ipynb") as page:
            link = "a[href*='history-format.md']"
            for index in range(len(drive.notebook_cells(page))):  # the notebook renders cells near the view
                page.evaluate(
                    "async (i) => { const nb = window.jupyterapp.shell.currentWidget.content;"
                    " nb.activeCellIndex = i; await nb.scrollToItem(i); }",
                    index,
                )
                if page.locator(link).count():
                    break
            page.locator(link).first.click()
            page.wait_for_function(
                "(want) => { const w = window.jupyterapp.shell.currentWidget;"
                " return w && w.title.label === 'history-format.md' && w.node.textContent.includes(want); }",
                arg=doc,
                timeout=30_000,
            )
