"""Fixtures of the magics tests: a fresh ``TestingShell`` with ``eos_magics`` loaded, disposed afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from eos_magics._testing import TestingShell, dispose, testing_shell


@pytest.fixture
def ip() -> Iterator[TestingShell]:
    shell = testing_shell()
    yield shell
    dispose(shell)
