"""Run a notebook in the built JupyterLite site, headless, offline, and the same notebook in CPython.

Used by ``tests/lite/test_lite_site.py`` and ``bench/bench_lite.py``, and from the shell to see which
cells of a notebook fail in the browser::

    .venv/bin/python lite/drive.py 00-tour.ipynb             # the site in build/lite/site
    .venv/bin/python lite/drive.py 01-idempotent-producer.ipynb --cpython --code "print(window.fingerprint())"
    .venv/bin/python lite/drive.py --serve 8000              # only serve it (.mjs and .wasm with their types)

Browser side (:func:`run_in_site`): the site is served from a thread on 127.0.0.1 (:func:`serve`); Debian's
``/usr/bin/chromium`` (never ``playwright install``) opens ``lab/index.html?path=NOTEBOOK``; every request
to a host other than 127.0.0.1 is aborted and counted, and chromium resolves no other host anyway
(``--host-resolver-rules``). It waits for the Pyodide kernel to be idle, runs the menu command Run All
(``notebook:run-all-cells``), waits until every code cell has run or the kernel is idle with cells left
unrun. JupyterLite 0.8 stops Run All at any error, even in a cell tagged ``raises-exception`` (which
JupyterLab runs past): after such a cell it goes on with Run All Below, as a reader would; after any other
error the rest stays unrun. Then it reads each cell's outputs from the notebook model and runs ``code``
(e.g. the fingerprints) in the same kernel. ``window.jupyterapp`` is exposed for that by answering
``jupyter-lite.json`` with ``exposeAppInBrowser`` set: the site's files are not changed.

CPython side (:func:`run_in_cpython`): nbclient in a fresh ``python3`` kernel of the running interpreter,
this tree on ``PYTHONPATH``, the same ``code`` after the last cell; cells tagged ``raises-exception`` may
raise, as in the browser.

Both return a :class:`NotebookRun`: per code cell its source, its outputs' text, its error; the kernel's
time on the cells (per cell, execute_input to execute_reply in the browser, nbclient's cell start to cell
done in CPython, summed), Run All's wall time, the time to a ready kernel, and the ``code``'s output.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import os
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "lite" / "site"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # Belt and braces to the request count: no host but loopback resolves.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


@dataclass
class Cell:
    index: int  # 0-based, markdown cells included (as in the .ipynb)
    source: str
    execution_count: int | None
    text: str  # the text/plain and stream outputs, joined
    error: str | None  # "Name: value" of an error output, if any
    outputs: list[dict[str, Any]] = field(repr=False, default_factory=list)
    tags: list[str] = field(default_factory=list)

    @property
    def may_raise(self) -> bool:
        return "raises-exception" in self.tags


@dataclass
class NotebookRun:
    where: str  # "pyodide" or "cpython"
    notebook: str
    cells: list[Cell]  # the code cells
    seconds: float  # the kernel's time on the cells: the sum over cells of execute_input -> execute_reply
    wall_seconds: float = 0.0  # Run All (or the first cell) to the last cell done, waits included
    code_output: str = ""  # what ``code`` printed, run after the notebook in the same kernel
    kernel_seconds: float = 0.0  # to a ready kernel (pyodide: page open to idle, loading Pyodide and the wheels)
    external_requests: list[str] = field(default_factory=list)  # aborted: not to 127.0.0.1
    local_paths: list[str] = field(default_factory=list)  # the site's files the page asked for (URL paths)
    console_errors: list[str] = field(default_factory=list)
    inspected: Any = None  # what ``inspect(page)`` returned
    continued_at: list[int] = field(default_factory=list)  # cells Run All Below started from, after Run All stopped

    def unexpected_errors(self) -> list[Cell]:
        """Cells that raised without the ``raises-exception`` tag."""
        return [c for c in self.cells if c.error and not c.may_raise]

    def not_run(self) -> list[Cell]:
        """Cells with code that did not run (an empty cell never gets an execution count)."""
        return [c for c in self.cells if c.execution_count is None and c.source.strip()]

    def summary(self) -> str:
        times = f"cells {self.seconds:.2f} s in the kernel, {self.wall_seconds:.2f} s wall"
        lines = [f"{self.where}: {self.notebook}: {times} (kernel ready in {self.kernel_seconds:.1f} s)"]
        for c in self.cells:
            status = "error" if c.error else ("not run" if c.execution_count is None else "ok")
            first = c.source.strip().splitlines()[0] if c.source.strip() else ""
            lines.append(f"  [{c.index:>2}] {status:<7} {first[:70]}")
            if c.error:
                lines.append(f"        {c.error[:300]}")
        if self.code_output:
            lines.append(f"  code: {self.code_output.strip()[:300]}")
        if self.external_requests:
            lines.append(f"  external requests: {self.external_requests[:10]}")
        return "\n".join(lines)


def _error_of(outputs: list[dict[str, Any]]) -> str | None:
    """``Name: value`` of the first error output (Pyodide's kernel names a class ``<class 'Name'>``)."""
    for out in outputs:
        if out.get("output_type") == "error":
            name = str(out.get("ename"))
            if name.startswith("<class '") and name.endswith("'>"):
                name = name[len("<class '") : -2].rsplit(".", 1)[-1]
            return f"{name}: {out.get('evalue')}"
    return None


def _cell_from_outputs(index: int, source: str, count: int | None, outputs: list[dict], tags: list[str]) -> Cell:
    text, error = [], _error_of(outputs)
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            text.append(out.get("text", "") if isinstance(out.get("text"), str) else "".join(out["text"]))
        elif kind in ("execute_result", "display_data"):
            plain = out.get("data", {}).get("text/plain", "")
            text.append(plain if isinstance(plain, str) else "".join(plain))
    return Cell(index, source, count, "".join(text), error, outputs, tags)


# ------------------------------------------------------------------------------------------------ serving


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".wasm": "application/wasm",
        ".json": "application/json",
        ".whl": "application/zip",
        ".ipynb": "application/json",
    }

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(site: Path = SITE) -> Iterator[str]:
    """Serve ``site`` on 127.0.0.1 (a free port) from a thread; yield its base URL."""
    handler = functools.partial(_Handler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="lite-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Headless Debian chromium through Playwright (raises FileNotFoundError without it)."""
    if not CHROMIUM.exists():
        raise FileNotFoundError(f"{CHROMIUM} is missing: apt-get install chromium (never `playwright install`)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


# ------------------------------------------------------------------------------------------------ browser

_CELLS_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.model.cells;
  const out = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i).toJSON();
    out.push({type: c.cell_type, source: Array.isArray(c.source) ? c.source.join("") : c.source,
              count: c.execution_count ?? null, outputs: c.outputs || [], tags: (c.metadata || {}).tags || []});
  }
  return out;
}"""

_STATUS_JS = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.sessionContext) return "no panel";
  const k = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return k ? k.status : "no kernel";
}"""

# Per cell, from the kernel's execute_input to its execute_reply as the page receives them: the time the
# kernel spent on the cell (with the worker's messaging), Run All's own waits and the page's rendering apart.
_TIMING_JS = """() => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  window.__liteTimes = {};
  kernel.anyMessage.connect((_, {msg, direction}) => {
    if (direction !== "recv" || !msg.parent_header || !msg.parent_header.msg_id) return;
    const t = performance.now(), id = msg.parent_header.msg_id;
    if (msg.header.msg_type === "execute_input") (window.__liteTimes[id] ??= {}).start = t;
    if (msg.header.msg_type === "execute_reply") (window.__liteTimes[id] ??= {}).end = t;
  });
}"""

_TIMES_JS = """() => Object.values(window.__liteTimes).filter(t => t.start !== undefined && t.end !== undefined)
  .map(t => (t.end - t.start) / 1000)"""

_EXECUTE_JS = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, store_history: false});
  const text = [];
  future.onIOPub = (msg) => {
    const c = msg.content;
    if (msg.header.msg_type === "stream") text.push(c.text);
    else if (msg.header.msg_type === "execute_result") text.push(c.data["text/plain"] || "");
    else if (msg.header.msg_type === "error") text.push(`${c.ename}: ${c.evalue}`);
  };
  await future.done;
  return text.join("");
}"""


def execute(page: Any, code: str) -> str:
    """Run ``code`` in the kernel of the page's notebook; return what it printed (and its result, its error)."""
    return page.evaluate(_EXECUTE_JS, code)


def _wait(page: Any, js: str, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = page.evaluate(js)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.1)


def _open_context(
    browser: Any, base_url: str, external: list[str], local: list[str], console: list[str]
) -> tuple[Any, Any]:
    """A browser context and page for the site at ``base_url``: every request to another host aborted and
    listed in ``external``, the site's paths in ``local``, console errors in ``console``, and
    ``window.jupyterapp`` exposed (``jupyter-lite.json`` answered with ``exposeAppInBrowser``)."""
    allowed = urllib.parse.urlparse(base_url).netloc
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(60_000)

    def route(r: Any) -> None:
        url = urllib.parse.urlparse(r.request.url)
        if url.scheme in ("data", "blob") or url.netloc == allowed:
            if url.path.endswith("/jupyter-lite.json") and url.netloc == allowed:
                response = r.fetch()
                config = response.json()
                config.setdefault("jupyter-config-data", {})["exposeAppInBrowser"] = True
                r.fulfill(response=response, json=config)
                return
            r.continue_()
            return
        r.abort()  # counted by seen(): every request fires the context's "request" event, routed or not

    def seen(request: Any) -> None:  # pages, workers and the service worker alike
        url = urllib.parse.urlparse(request.url)
        if url.scheme in ("data", "blob"):
            return
        if url.netloc == allowed:
            local.append(url.path)
        else:
            external.append(request.url)

    context.route("**/*", route)
    context.on("request", seen)
    page = context.new_page()
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    return context, page


@contextlib.contextmanager
def open_notebook(browser: Any, base_url: str, path: str, timeout_s: float = 300.0) -> Iterator[Any]:
    """The site's lab with ``path`` open and its kernel idle; yields the page (``window.jupyterapp`` set)."""
    context, page = _open_context(browser, base_url, [], [], [])
    try:
        page.goto(f"{base_url}/lab/index.html?path={urllib.parse.quote(path)}")
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=timeout_s * 1000)
        _wait(page, f"() => ({_STATUS_JS})() === 'idle'", timeout_s, "the Pyodide kernel to be idle")
        yield page
    finally:
        context.close()


def notebook_cells(page: Any) -> list[dict[str, Any]]:
    """The open notebook's cells from its model: type, source, count, outputs, tags."""
    return page.evaluate(_CELLS_JS)


def run_in_site(
    browser: Any,
    base_url: str,
    notebook: str,
    *,
    code: str = "",
    timeout_s: float = 600.0,
    screenshot: Path | None = None,
    inspect: Callable[[Any], Any] | None = None,
) -> NotebookRun:
    """Open ``notebook`` (a path in the site's contents) in JupyterLite, Run All, read the cells back.

    ``inspect(page)`` runs last, page still open (after ``code``); its value is the run's ``inspected``.
    """
    external: list[str] = []
    local: list[str] = []
    console: list[str] = []
    context, page = _open_context(browser, base_url, external, local, console)
    continued: list[int] = []
    try:
        started = time.monotonic()
        page.goto(f"{base_url}/lab/index.html?path={urllib.parse.quote(notebook)}")
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=timeout_s * 1000)
        _wait(page, f"() => ({_STATUS_JS})() === 'idle'", timeout_s, "the Pyodide kernel to be idle")
        kernel_seconds = time.monotonic() - started

        count_code = "() => window.jupyterapp.shell.currentWidget.content.model.cells.length"
        n_cells = page.evaluate(count_code)
        page.evaluate(_TIMING_JS)
        started = time.monotonic()
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        # Done: every code cell has a count, or the kernel is idle again with no cell pending ([*]).
        done_js = f"""() => {{
          const cells = ({_CELLS_JS})().filter(c => c.type === "code" && c.source.trim() !== "");
          const pending = document.querySelectorAll(".jp-NotebookPanel .jp-InputPrompt").length &&
            [...document.querySelectorAll(".jp-NotebookPanel .jp-InputArea-prompt")]
              .some(e => e.textContent.includes("*"));
          if (cells.every(c => c.count !== null) && !pending) return "all";
          return (({_STATUS_JS})() === "idle" && !pending) ? "stopped" : "";
        }}"""
        time.sleep(0.5)
        while _wait(page, done_js, timeout_s, f"Run All of {notebook} ({n_cells} cells)") == "stopped":
            # JupyterLite 0.8 cancels every queued cell after an error reply, even one tagged
            # raises-exception (JupyterLab sends it with stop_on_error false and goes on). Go on as a
            # reader does after the expected error: Run All Below from the first cell not run.
            raw = page.evaluate(_CELLS_JS)
            first = next(
                i for i, c in enumerate(raw) if c["type"] == "code" and c["count"] is None and c["source"].strip()
            )
            last_run = [c for c in raw[:first] if c["type"] == "code"][-1:]
            expected = last_run and _error_of(last_run[0]["outputs"]) and "raises-exception" in last_run[0]["tags"]
            if not expected:
                break  # a real error: leave the rest not run, as Run All does
            continued.append(first)
            page.evaluate(
                """(i) => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = i;
                           return window.jupyterapp.commands.execute('notebook:run-all-below'); }""",
                first,
            )
            time.sleep(0.5)
        wall_seconds = time.monotonic() - started
        cell_seconds = page.evaluate(_TIMES_JS)
        raw = page.evaluate(_CELLS_JS)
        code_output = execute(page, code) if code else ""
        inspected = inspect(page) if inspect is not None else None
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=False)
    finally:
        context.close()
    cells = [
        _cell_from_outputs(i, c["source"], c["count"], c["outputs"], c["tags"])
        for i, c in enumerate(raw)
        if c["type"] == "code"
    ]
    return NotebookRun(
        where="pyodide",
        notebook=notebook,
        cells=cells,
        seconds=sum(cell_seconds),
        wall_seconds=wall_seconds,
        code_output=code_output,
        kernel_seconds=kernel_seconds,
        external_requests=external,
        local_paths=local,
        console_errors=console,
        inspected=inspected,
        continued_at=continued,
    )


# ------------------------------------------------------------------------------------------------ CPython


def run_in_cpython(notebook: Path, *, code: str = "", timeout_s: float = 600.0) -> NotebookRun:
    """Execute ``notebook`` with nbclient in a fresh python3 kernel; ``code`` runs after it in that kernel."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    n_tour = len(nb.cells)
    if code:
        nb.cells.append(nbformat.v4.new_code_cell(code))
    marks: dict[str, float] = {}
    per_cell: list[float] = []

    def on_cell_execute(cell: Any, cell_index: int) -> None:
        marks.setdefault("first", time.monotonic())
        marks["cell"] = time.monotonic()

    def on_cell_executed(cell: Any, cell_index: int, execute_reply: Any) -> None:
        if cell_index < n_tour:
            marks["last"] = time.monotonic()
            per_cell.append(marks["last"] - marks["cell"])

    env_pythonpath = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env_pythonpath
    try:
        started = time.monotonic()
        client = NotebookClient(
            nb,
            timeout=timeout_s,
            kernel_name="python3",
            resources={"metadata": {"path": str(notebook.parent)}},
            on_cell_execute=on_cell_execute,
            on_cell_executed=on_cell_executed,
        )
        client.execute()
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
    cells = [
        _cell_from_outputs(i, c.source, c.execution_count, c.outputs, c.metadata.get("tags", []))
        for i, c in enumerate(nb.cells[:n_tour])
        if c.cell_type == "code"
    ]
    code_output = _cell_from_outputs(-1, code, None, nb.cells[-1].outputs, []).text if code else ""
    return NotebookRun(
        where="cpython",
        notebook=notebook.name,
        cells=cells,
        seconds=sum(per_cell),
        wall_seconds=marks.get("last", time.monotonic()) - marks.get("first", started),
        code_output=code_output,
        kernel_seconds=marks.get("first", started) - started,
    )


def serve_forever(site: Path, port: int) -> None:
    """Serve ``site`` on 127.0.0.1:``port`` until interrupted (``scripts/build-lite.sh --serve``)."""
    handler = functools.partial(_Handler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        sys.stdout.write(f"serving {site} on http://127.0.0.1:{port}/lab/index.html (Ctrl-C stops)\n")
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run a notebook in the built JupyterLite site (and in CPython).")
    ap.add_argument("notebook", nargs="?", help="a notebook of the site's contents, e.g. 00-tour.ipynb")
    ap.add_argument("--site", type=Path, default=SITE)
    ap.add_argument("--code", default="", help="code to run after the notebook, in the same kernel")
    ap.add_argument("--cpython", action="store_true", help="also run notebooks/NOTEBOOK in CPython")
    ap.add_argument("--screenshot", type=Path)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--serve", type=int, metavar="PORT", help="only serve the site on 127.0.0.1:PORT")
    args = ap.parse_args(argv)
    if not (args.site / "jupyter-lite.json").is_file():
        sys.stderr.write(f"no site at {args.site}: run bash scripts/build-lite.sh\n")
        return 2
    if args.serve is not None:
        serve_forever(args.site, args.serve)
        return 0
    if not args.notebook:
        ap.error("give a notebook, or --serve PORT")
    with serve(args.site) as url, chromium() as browser:
        run = run_in_site(
            browser, url, args.notebook, code=args.code, timeout_s=args.timeout, screenshot=args.screenshot
        )
    sys.stdout.write(run.summary() + "\n")
    if run.console_errors:
        sys.stdout.write("console errors:\n  " + "\n  ".join(e[:300] for e in run.console_errors[:20]) + "\n")
    if args.cpython:
        base = run_in_cpython(ROOT / "notebooks" / args.notebook, code=args.code, timeout_s=args.timeout)
        sys.stdout.write(base.summary() + "\n")
        sys.stdout.write(f"pyodide / cpython: {run.seconds / max(base.seconds, 1e-9):.2f}x\n")
    return 0 if not run.unexpected_errors() and not run.not_run() and not run.external_requests else 1


if __name__ == "__main__":
    sys.exit(main())
