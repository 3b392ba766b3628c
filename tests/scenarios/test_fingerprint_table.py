"""Every registered scenario at seeds 1-3 has the fingerprint of the accepted table.

``tests/scenarios/fingerprints.txt`` is the output of ``python scripts/fingerprints.py``. A change
that means to alter runs (a bug fixed, an event added) regenerates it and says which rows moved and
why; a refactor leaves it as it is. The table is compared whole, so one run that drifts names itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TABLE = Path(__file__).with_name("fingerprints.txt")


def test_every_scenario_at_seeds_1_to_3_has_the_accepted_fingerprint() -> None:
    accepted = TABLE.read_text().splitlines()
    script = [sys.executable, str(ROOT / "scripts" / "fingerprints.py"), "--jobs", "2"]
    now = subprocess.run(script, check=True, capture_output=True, text=True, cwd=ROOT).stdout.splitlines()
    assert [line.split("\t")[0] for line in now[::3]] == [line.split("\t")[0] for line in accepted[::3]], (
        "the registry's names changed: regenerate the table with scripts/fingerprints.py"
    )
    moved = [f"{a}  ->  {b.split(chr(9))[-1]}" for a, b in zip(accepted, now, strict=True) if a != b]
    assert not moved, "runs changed:\n" + "\n".join(moved)
