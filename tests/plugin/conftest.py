"""The pytest plugin's tests run inner pytest sessions through pytester.

``pytest_plugins = ["pytester"]`` would do, but pytest refuses ``pytest_plugins`` in a conftest
below the root when the whole suite runs; loading the plugin here when this folder's conftest is
read gives the same ``pytester`` fixture to these tests only.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Load pytester (once)."""
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")
