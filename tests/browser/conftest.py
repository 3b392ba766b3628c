"""Fixtures of the browser tests: a real JupyterLab server, Debian's chromium driven by Playwright, a helper.

* ``jupyter_server`` (session): copies ``served_notebooks_dir`` (default: the repository's ``notebooks/``)
  into a temp root dir and starts ``.venv/bin/jupyter lab`` on a free port with a random token, isolated
  from the user's Jupyter config, data, settings and IPython profile, with the repository root on the
  kernel's ``PYTHONPATH``. Tests may write more notebooks into ``jupyter_server.root_dir``.
* ``browser`` (session): headless ``/usr/bin/chromium`` (Debian's package) through ``playwright.sync_api``,
  with ``CHROMIUM_ARGS`` (never ``playwright install``: browser downloads are blocked). Without chromium the
  tests are skipped, except with ``CI=true``, where that is a failure.
* ``page`` (per test): a fresh browser context and page, recording console errors and page errors.
* ``lab`` (per test): a ``Lab`` helper over ``page`` to open a notebook, run cells (one by one, or all
  with the Run menu), wait for output and take screenshots into ``artifacts_dir``
  (``test-artifacts/browser/``, gitignored); ``Lab.screenshot_output`` takes a cell's output at
  :data:`SCREENSHOT_WIDTH` px, the width of the pictures in ``docs/screenshots/``. A failing test
  leaves ``<test name>-failed.png`` there and shows the console errors.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def lite_drive():
    """lite/drive.py, loaded by path: its chromium path and launch flags are the one list both suites use."""
    name = "eos_lite_drive"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "lite" / "drive.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return sys.modules[name]


CHROMIUM = lite_drive().CHROMIUM
CHROMIUM_ARGS = lite_drive().CHROMIUM_ARGS
SERVER_START_TIMEOUT = 60.0
# Playwright's default timeout for each wait, in milliseconds: a kernel start or a cell's output.
WAIT_MS = 30_000
# The browser's width for screenshots of outputs (docs/screenshots/ are taken at this width).
SCREENSHOT_WIDTH = 1280


def _jupyter_executable() -> Path:
    for bin_dir in (REPO / ".venv" / "bin", Path(sys.executable).parent):
        if (bin_dir / "jupyter").exists():
            return bin_dir / "jupyter"
    raise RuntimeError(f"no jupyter next to {sys.executable} nor in {REPO / '.venv/bin'}; run scripts/setup.sh")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class JupyterServer:
    url: str  # http://127.0.0.1:<port>
    token: str
    root_dir: Path  # the served directory: a copy of served_notebooks_dir
    log_path: Path
    startup_seconds: float

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


def _get(url: str, token: str) -> bytes:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=2) as response:
        return response.read()


def _stop(proc: subprocess.Popen, server: JupyterServer) -> None:
    """Graceful first (the API shuts the kernels down too: they run in their own sessions), then terminate, kill."""
    if proc.poll() is None:
        request = urllib.request.Request(
            f"{server.url}/api/shutdown", method="POST", headers={"Authorization": f"token {server.token}"}
        )
        try:
            urllib.request.urlopen(request, timeout=5).close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="session")
def served_notebooks_dir() -> Path:
    """The directory whose notebooks the server serves (copied first). Override in a conftest to serve another."""
    return REPO / "notebooks"


@pytest.fixture(scope="session")
def jupyter_server(served_notebooks_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    base = tmp_path_factory.mktemp("jupyter")
    root = base / "root"
    shutil.copytree(served_notebooks_dir, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    # Silence the "Would you like to get notified about official Jupyter news?" toast in screenshots.
    settings = base / "lab-settings"
    notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "lab-workspaces"),
        # The user's own Jupyter config, kernel specs, runtime files and IPython profile stay out.
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "IPYTHONDIR": str(base / "ipython"),
        # The kernel imports engine, widgets and eos_magics from this tree.
        "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    token = secrets.token_hex(16)
    port = _free_port()
    log_path = base / "server.log"
    command = [
        str(_jupyter_executable()),
        "lab",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
    ]
    started = time.monotonic()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
    server = JupyterServer(f"http://127.0.0.1:{port}", token, root, log_path, startup_seconds=0.0)
    try:
        while True:
            try:
                _get(f"{server.url}/api/status", token)
                break
            except (OSError, urllib.error.URLError):
                pass
            if proc.poll() is not None or time.monotonic() - started > SERVER_START_TIMEOUT:
                why = (
                    f"exited with {proc.returncode}"
                    if proc.poll() is not None
                    else f"not up in {SERVER_START_TIMEOUT}s"
                )
                pytest.fail(f"jupyter lab {why}: {' '.join(command)}\n--- server log ---\n{server.log_tail()}")
            time.sleep(0.1)
        server.startup_seconds = time.monotonic() - started
        yield server
    finally:
        _stop(proc, server)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where browser tests leave screenshots: test-artifacts/browser/ under the repository root (gitignored)."""
    path = REPO / "test-artifacts" / "browser"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless chromium for one test module. Module, not session: while a sync Playwright is open it
    marks an asyncio loop running in the main thread, and later tests that run a loop of their own
    (``asyncio.run``, the JupyterLite tests' own Playwright) would fail behind it."""
    if not CHROMIUM.exists():
        reason = (
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); "
            "never `playwright install` (browser downloads are blocked)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(browser, request: pytest.FixtureRequest, artifacts_dir: Path) -> Iterator[object]:
    """A fresh page (own context: no shared storage). ``page.console_errors`` lists console and page errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    new_page = context.new_page()
    errors: list[str] = []
    new_page.on("console", lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    new_page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    new_page.console_errors = errors
    yield new_page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        try:
            new_page.screenshot(path=str(artifacts_dir / f"{request.node.name}-failed.png"))
        except Exception as exc:  # a crashed page must not hide the test's own failure
            errors.append(f"no failure screenshot: {exc}")
        if errors:
            report.sections.append(("browser console errors", "\n".join(errors)))
    context.close()


@dataclass
class Lab:
    """Drive JupyterLab in ``page``: open a notebook, run cells, wait for output, take screenshots.

    ``timings`` records seconds per step (``open``, ``kernel idle``) for the report; cell numbers are 1-based.
    """

    page: object
    server: JupyterServer
    artifacts_dir: Path
    timings: dict[str, float] = field(default_factory=dict)
    next_cell: int = 1

    @property
    def console_errors(self) -> list[str]:
        return self.page.console_errors

    def open(self, notebook: str) -> None:
        """Open ``notebook`` (a path under the served root) with a fresh workspace (``&reset``); wait for its cells."""
        started = time.monotonic()
        self.page.goto(f"{self.server.url}/lab/tree/{notebook}?token={self.server.token}&reset")
        self.page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
        self.timings["open"] = time.monotonic() - started

    def wait_for_kernel_idle(self) -> None:
        """Wait until the notebook's kernel has started and reports idle: the status bar reads "<kernel> | Idle".

        Not the toolbar's execution indicator: its ``data-status`` is already "idle" while there is no kernel yet.
        """
        started = time.monotonic()
        self.page.wait_for_function(
            """() => [...document.querySelectorAll("#jp-main-statusbar .jp-StatusBar-TextItem")]
                .some(e => / [|] Idle$/.test(e.textContent) && !e.textContent.startsWith("No Kernel"))"""
        )
        self.timings["kernel idle"] = time.monotonic() - started

    def _cells(self):
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")

    def select_cell(self, number: int) -> None:
        """Make cell ``number`` active, the notebook in command mode and focused (as after a click and Escape)."""
        # The prompt, not the editor: a rendered markdown cell's editor is hidden.
        self._cells().nth(number - 1).locator(".jp-InputPrompt").first.click()
        self.page.keyboard.press("Escape")

    def run_cells(self, upto: int) -> None:
        """Run cells 1..``upto`` in order: click the first cell, Escape, then Shift+Enter ``upto`` times."""
        self.select_cell(1)
        for _ in range(upto):
            self.page.keyboard.press("Shift+Enter")
        self.next_cell = upto + 1

    def run_cell(self, number: int) -> None:
        """Run cell ``number`` alone (select it, Shift+Enter); the next cell is then ``number + 1``."""
        self.select_cell(number)
        self.page.keyboard.press("Shift+Enter")
        self.next_cell = number + 1

    def run_next_cell(self) -> None:
        """Run the cell after the last one run by this helper (the first if none).

        Tracked here, not taken from JupyterLab's active cell: clicking a widget in an output makes that
        output's cell the active one.
        """
        self.run_cell(self.next_cell)

    def run_all(self, timeout_ms: float = 120_000) -> None:
        """Run every cell with the Run menu's "Run All Cells", as a reader does; wait until the last code cell ran.

        Done when the last code cell's prompt shows an execution count it did not show before and the
        kernel is idle. Run All stops at an error (a cell tagged ``raises-exception`` excepted): the wait
        then fails with the error outputs of the notebook.
        """
        prompt = self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt").last
        before = (prompt.text_content() or "").strip()
        self.page.locator(".lm-MenuBar-item", has_text="Run").first.click()
        self.page.locator(".lm-Menu-item:visible", has_text="Run All Cells").first.click()
        try:
            self.page.wait_for_function(
                r"""(before) => { const all = document.querySelectorAll(
                        ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt");
                    const t = (all[all.length - 1].textContent || "").trim();
                    return /^\[\d+\]:$/.test(t) && t !== before; }""",
                arg=before,
                timeout=timeout_ms,
            )
        except Exception as exc:
            raise AssertionError(
                f"Run All did not reach the last cell; error outputs:\n{self.error_outputs()}"
            ) from exc
        self.wait_for_kernel_idle()

    def error_outputs(self) -> str:
        """The text of every error output in the open notebook (tracebacks), for failure messages."""
        stderr = "[data-mime-type='application/vnd.jupyter.stderr']"
        errors = self.page.locator(f".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output{stderr}")
        return "\n---\n".join((errors.nth(i).text_content() or "")[-1500:] for i in range(errors.count()))

    def wait_for_output(self, text: str, cell: int | None = None):
        """Wait for an output containing ``text`` (in cell ``cell`` if given); returns its locator.

        Looks only in output areas: a ``text=`` selector would also match the cell's source code.
        """
        scope = self._cells().nth(cell - 1) if cell is not None else self.page
        output = scope.locator(f".jp-OutputArea-output:has-text({json.dumps(text)})").first
        output.wait_for()
        return output

    def screenshot(self, name: str) -> Path:
        path = self.artifacts_dir / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path

    def screenshot_output(self, cell: int, name: str, *, width: int = SCREENSHOT_WIDTH, height: int = 2400) -> Path:
        """Save the output area of cell ``cell`` as ``<artifacts>/<name>.png``, the browser ``width`` px wide.

        The left sidebar (the file browser) is closed, so the notebook has the width, and the viewport
        is made tall enough for a dashboard, so the picture is the whole output, not a scrolled window
        of it (JupyterLab scrolls the notebook panel, not the page). To refresh a picture in
        ``docs/screenshots/``, copy it from ``test-artifacts/browser/`` (see the README there).
        """
        open_tab = self.page.locator("#jp-left-stack:not(.lm-mod-hidden)")
        if open_tab.count():  # clicking the current tab of the left bar closes its panel
            self.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").first.click()
        self.page.set_viewport_size({"width": width, "height": height})
        output = self._cells().nth(cell - 1).locator(".jp-OutputArea").first
        output.scroll_into_view_if_needed()
        self.page.wait_for_timeout(300)  # the layout settles after the resize (panels re-flow)
        path = self.artifacts_dir / f"{name}.png"
        output.screenshot(path=str(path))
        return path


@pytest.fixture
def lab(page, jupyter_server: JupyterServer, artifacts_dir: Path) -> Lab:
    return Lab(page, jupyter_server, artifacts_dir)
