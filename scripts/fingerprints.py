"""Print the fingerprint of every registered scenario at seeds 1-3, one line a run, as a table.

A refactor that claims "behaviour unchanged" runs this before and after and diffs the two outputs:
``python scripts/fingerprints.py > before.txt`` ... ``python scripts/fingerprints.py | diff before.txt -``.
``--jobs N`` spreads the runs over N processes (the output order stays the registry's).
``tests/scenarios/fingerprints.txt`` holds the table of the last accepted change;
``tests/scenarios/test_fingerprint_table.py`` compares against it.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SEEDS = (1, 2, 3)


def names() -> list[str]:
    """Return every registered scenario name, sorted."""
    from engine.scenarios.registry import SCENARIOS, load_all

    load_all()
    return sorted(SCENARIOS)


def row(job: tuple[str, int]) -> str:
    """Return one run's line: name, seed, status, fingerprint."""
    from engine.scenarios.registry import get_scenario

    name, seed = job
    result = get_scenario(name)(seed)
    return f"{name}\t{seed}\t{result.status}\t{result.fingerprint}"


def table(jobs: int = 1) -> list[str]:
    """Return the whole table's lines, in name then seed order."""
    work = [(name, seed) for name in names() for seed in SEEDS]
    if jobs <= 1:
        return [row(w) for w in work]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(row, work))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes to spread the runs over (default 1)")
    args = parser.parse_args(argv)
    sys.stdout.write("\n".join(table(args.jobs)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
