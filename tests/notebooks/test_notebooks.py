"""The notebooks in ``notebooks/`` are stories that must stay true: each is checked and executed here.

Goal: a notebook is committed clean (no outputs, no execution counts, valid nbformat, the python3
kernel), reads as a story (at least five markdown cells) that asserts its own claims (at least one
``assert``), and runs top to bottom without an error, so CI fails the day one of its claims stops
being true. Method: every ``notebooks/*.ipynb`` is picked up by the glob (a notebook someone adds is
tested without touching this file); nbclient executes it twice, top to bottom, in one fresh ``python3``
kernel (Run All twice is the most common thing people do, so a second run must work as the first) whose working
directory is the repository root, with ``TZ=UTC``, ``PYTHONHASHSEED=0`` and the repository root on
``PYTHONPATH``. A cell tagged ``raises-exception`` may raise (nbclient's own rule) and, since it is
there to show an error, must raise; any other error fails the test.
"""

from __future__ import annotations

import ast
import copy
import os
import pathlib
import re
from typing import Any

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
RAISES = "raises-exception"


def _ids(paths: list[pathlib.Path]) -> list[str]:
    return [p.name for p in paths]


def _read(path: pathlib.Path) -> Any:
    return nbformat.read(path, as_version=4)


def _asserts(cell: Any) -> int:
    """How many ``assert`` statements a code cell holds (IPython's own transformer turns magics into calls)."""
    from IPython.core.inputtransformer2 import TransformerManager

    tree = ast.parse(TransformerManager().transform_cell(cell.source))
    return sum(isinstance(node, ast.Assert) for node in ast.walk(tree))


def test_the_notebooks_directory_has_notebooks() -> None:
    assert NOTEBOOKS, f"no notebooks found under {ROOT / 'notebooks'}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_committed_clean_valid_and_on_the_python3_kernel(path: pathlib.Path) -> None:
    nb = _read(path)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", f"{path.name}: kernelspec must be python3"
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        assert cell.outputs == [], f"{path.name} cell {i}: committed with outputs; clear them before committing"
        assert cell.execution_count is None, f"{path.name} cell {i}: execution_count must be null"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_tells_a_story_and_asserts_its_claims(path: pathlib.Path) -> None:
    nb = _read(path)
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    asserts = sum(_asserts(c) for c in nb.cells if c.cell_type == "code")
    assert len(markdown) >= 5, f"{path.name}: {len(markdown)} markdown cells; a story needs at least 5"
    assert asserts >= 1, f"{path.name}: no assert in any code cell; every claim shown must be asserted"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_no_cell_ends_by_showing_what_a_file_write_returns(path: pathlib.Path) -> None:
    """``path.write_text(...)`` as a cell's last line shows its return, a stray count (``207``)."""
    from IPython.core.inputtransformer2 import TransformerManager

    for i, cell in enumerate(_read(path).cells):
        if cell.cell_type != "code" or cell.source.rstrip().endswith(";"):
            continue
        body = ast.parse(TransformerManager().transform_cell(cell.source)).body
        last = body[-1] if body else None
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
            called = last.value.func
            name = called.attr if isinstance(called, ast.Attribute) else ""
            assert name not in ("write_text", "write_bytes"), f"{path.name} cell {i}: shows {name}'s count"


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_links_open_from_the_server_root_the_readme_starts(path: pathlib.Path) -> None:
    """A relative link (``../docs/mutants.md``) resolves inside the repository, which the README's
    ``jupyter lab`` command serves as its root; a root of ``notebooks/`` would make it a 404."""
    for readme in (ROOT / "README.md", ROOT / "notebooks" / "README.md"):
        launch = "jupyter lab notebooks/00-tour.ipynb --ServerApp.root_dir=."
        assert launch in readme.read_text(), f"{readme.relative_to(ROOT)}: serve the repository root"
    for cell in _read(path).cells:
        if cell.cell_type != "markdown":
            continue
        for target in LINK.findall(cell.source):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (path.parent / target).resolve()
            assert resolved.is_relative_to(ROOT), f"{path.name}: link {target} leaves the repository"
            assert resolved.exists(), f"{path.name}: link {target} points at nothing"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_executes_twice_in_one_kernel_without_error(
    path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbclient import NotebookClient

    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    pythonpath = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) if not pythonpath else os.pathsep.join([str(ROOT), pythonpath]))
    nb = _read(path)
    once = len(nb.cells)
    nb.cells = nb.cells + copy.deepcopy(nb.cells)  # Run All, then Run All again in the same kernel
    raised: list[int] = []  # a UsageError is shown on stderr, not as an error output: ask the execute reply
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT)}},
        on_cell_error=lambda cell, cell_index, execute_reply: raised.append(cell_index),
    )
    client.execute()  # raises CellExecutionError on the first error of a cell not tagged raises-exception
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and RAISES in cell.metadata.get("tags", []):
            run = "first" if i < once else "second"
            assert i in raised, f"{path.name} cell {i % once} is tagged {RAISES} but raised nothing on the {run} run"
