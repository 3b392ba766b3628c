"""The shared argument checks (``engine/args.py``): one answer for one mistake, at every entry point.

Each check is called directly with good and bad values; the public entry points that use them
are covered by ``tests/scenarios/test_api_validation.py`` and ``test_producer_error_paths.py``.
"""

from __future__ import annotations

import pytest

from engine import args


def test_check_int_refuses_bools_floats_and_values_below_the_minimum() -> None:
    assert args.check_int(3, "n", minimum=0) == 3
    for bad in (True, 1.0, "1", None):
        with pytest.raises(TypeError, match="n must be an int"):
            args.check_int(bad, "n")
    with pytest.raises(ValueError, match="n must be >= 0, got -1"):
        args.check_int(-1, "n", minimum=0)


def test_check_str_refuses_other_types_and_the_empty_string() -> None:
    with pytest.raises(TypeError, match="group id must be a str"):
        args.check_str(7, "group id")
    with pytest.raises(ValueError, match="group id must not be empty"):
        args.check_str("", "group id")


def test_wait_ms_takes_seconds_and_reads_none_and_minus_one_as_the_default() -> None:
    assert args.wait_ms(1.5, "poll()") == 1_500
    assert args.wait_ms(0, "poll()") == 0
    assert args.wait_ms(None, "poll()") is None
    assert args.wait_ms(-1, "poll()") is None
    assert args.call_wait_ms(None, "committed()", 30_000) == 30_000
    assert args.call_wait_ms(2, "committed()", 30_000) == 2_000


@pytest.mark.parametrize(
    ("timeout", "error"), [(-2, ValueError), (float("nan"), ValueError), ("1", TypeError), (True, TypeError)]
)
def test_wait_ms_refuses_negative_nan_and_non_numbers_saying_what_the_default_is(timeout: object, error: type) -> None:
    with pytest.raises(error, match=r"flush: timeout .* None/-1 for 120000 ms"):
        args.call_wait_ms(timeout, "flush", 120_000)
