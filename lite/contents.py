"""The JupyterLite site's contents: the notebooks as committed, without outputs, and the docs they link to.

Role: step 5 of ``scripts/build-lite.sh``. Writes ``OUT/NAME.ipynb`` for each notebook and ``OUT/docs/``,
then checks that every relative link of those notebooks opens a file of the contents.

Invariants:

* A notebook comes from ``git show HEAD:notebooks/NAME.ipynb``, never from the working tree, whose copy
  has the outputs, counts and widget state of whatever ran it last (the README has readers run the tour in
  JupyterLab first). Outputs, execution counts and ``metadata.widgets`` are dropped from that too. Outside
  a git checkout (an unpacked archive) the working tree's file is taken, stripped the same way.
* The docs come from ``HEAD:docs`` the same way (the whole folder: docs link to each other and to their
  images). A notebook at the contents' root links ``../docs/x.md``; JupyterLab resolves a path above the
  root to the root (``PathExt.resolve``), so that opens ``docs/x.md`` in the site, as in JupyterLab
  started at the repository's root.
* A relative link (no scheme, not ``#...``) that resolves to no file of the contents fails the build,
  but for a notebook that ``LITE_NOTEBOOKS`` left out (a note).
"""

from __future__ import annotations

import argparse
import io
import json
import posixpath
import re
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|href=\"([^\"]+)\"")


def _git(*args: str) -> bytes | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=False)
    except FileNotFoundError:
        return None
    return done.stdout if done.returncode == 0 else None


def committed(path: str) -> bytes:
    """``HEAD:path``, or the working tree's file outside a git checkout (or if ``path`` is not committed)."""
    data = _git("show", f"HEAD:{path}")
    if data is None:
        sys.stderr.write(f"contents: {path} is not in git's HEAD: the working tree's copy, stripped\n")
        data = (ROOT / path).read_bytes()
    return data


def strip(notebook: dict) -> dict:
    """The notebook without outputs, execution counts or saved widget state."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    notebook.get("metadata", {}).pop("widgets", None)
    return notebook


def write_docs(out: Path) -> None:
    """``HEAD:docs`` into ``out/docs`` (the working tree's docs/ outside a git checkout)."""
    archive = _git("archive", "--format=tar", "HEAD", "docs")
    if archive is None:
        sys.stderr.write("contents: no git HEAD: the working tree's docs/\n")
        for src in (ROOT / "docs").rglob("*"):
            if src.is_file():
                dest = out / src.relative_to(ROOT)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(src.read_bytes())
        return
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(out, filter="data")


def links(notebook: dict) -> list[str]:
    """The relative links of the notebook's markdown cells (no scheme, no bare ``#anchor``), anchors cut."""
    found = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for match in LINK.finditer(source):
            href = match.group(1) or match.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I) or href.startswith(("#", "/")):
                continue
            found.append(href.split("#", 1)[0])
    return [h for h in found if h]


def resolve(href: str) -> str:
    """Where JupyterLab opens ``href`` of a notebook at the contents' root: ``..`` stops at the root."""
    return posixpath.normpath(posixpath.join("/", href)).lstrip("/")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the contents folder (lite_dir/files)")
    ap.add_argument("notebooks", nargs="+", help="names under notebooks/, without .ipynb")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    write_docs(args.out)
    dead = []
    for name in args.notebooks:
        notebook = strip(json.loads(committed(f"notebooks/{name}.ipynb")))
        (args.out / f"{name}.ipynb").write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
        for href in links(notebook):
            if not (args.out / resolve(href)).is_file():
                # a notebook left out by LITE_NOTEBOOKS is the chooser's business; a doc is this script's
                if href.endswith(".ipynb"):
                    sys.stderr.write(f"contents: note: {name} links {href}, not in this site\n")
                else:
                    dead.append(f"{name}: {href}")
    if dead:
        sys.stderr.write("contents: links to no file of the site:\n  " + "\n  ".join(dead) + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
