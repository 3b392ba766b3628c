"""Fixtures of the JupyterLite tests: the built site served on 127.0.0.1, Debian's chromium, lite/drive.py.

* ``lite_site`` (session): ``build/lite/site`` (``bash scripts/build-lite.sh``; ``LITE_SITE`` names another).
  Missing: skipped, except with ``CI=true``, where that is a failure (CI builds it first).
* ``lite_url`` (session): the site served from a thread on 127.0.0.1, a free port (``lite.drive.serve``).
* ``lite_browser`` (session): headless ``/usr/bin/chromium`` through Playwright, with no host but loopback
  resolvable (never ``playwright install``). Missing: skipped, failed with ``CI=true``.
* ``drive`` (session): the module ``lite/drive.py`` (``run_in_site``, ``run_in_cpython``), which opens a
  notebook in the site, aborts and counts every request not to 127.0.0.1, Run All, reads the cells back.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.browser.conftest import lite_drive

REPO = Path(__file__).resolve().parents[2]
CI = os.environ.get("CI") == "true"


def _missing(reason: str) -> None:
    if CI:
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def drive() -> ModuleType:
    """lite/drive.py, loaded by path (lite/ is not a package of the project)."""
    return lite_drive()


@pytest.fixture(scope="session")
def lite_site() -> Path:
    site = Path(os.environ.get("LITE_SITE", REPO / "build" / "lite" / "site"))
    if not (site / "jupyter-lite.json").is_file():
        _missing(f"no JupyterLite site at {site}: build it with `bash scripts/build-lite.sh` (about 2 minutes)")
    return site


@pytest.fixture(scope="session")
def lite_url(drive: ModuleType, lite_site: Path) -> Iterator[str]:
    with drive.serve(lite_site) as url:
        yield url


@pytest.fixture(scope="module")
def lite_browser(drive: ModuleType) -> Iterator[object]:
    """Headless chromium for one test module. Module, not session: while a sync Playwright is open it
    marks an asyncio loop running in the main thread, and the browser tests that a test worker runs
    after this module (their own sync Playwright) would fail behind it."""
    if not drive.CHROMIUM.exists():
        _missing(f"{drive.CHROMIUM} is missing: apt-get install chromium (never `playwright install`)")
    with drive.chromium() as browser:
        yield browser


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Screenshots go to test-artifacts/lite/ (gitignored)."""
    path = REPO / "test-artifacts" / "lite"
    path.mkdir(parents=True, exist_ok=True)
    return path
