"""``eos reference`` refuses bad arguments with one line (no JVM started)."""

from __future__ import annotations

import pytest

from engine.cli import EXIT_USAGE, main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reference", "--brokers", "0"], "--brokers must be at least 1"),
        (["reference", "--heap-mb", "64"], "--heap-mb must be at least 128"),
        (["reference", "--config", "novalue"], "eos reference: --config 'novalue': use KEY=VALUE"),
    ],
)
def test_bad_arguments_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
