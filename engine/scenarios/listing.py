"""The text of ``eos scenarios`` and ``eos mutants --list``: every scenario, every weakened configuration.

Role
----
One line per scenario ``eos run`` knows (its description and the mutants it is built to catch),
and one line per mutant (the guarantee it removes). The commands print these lines and
``%eos_scenario list`` / ``%eos_scenario mutants`` show them, so both say the same.
"""

from __future__ import annotations

__all__ = ["mutant_lines", "scenario_lines"]


def scenario_lines() -> list[str]:
    """Return one line per scenario: its name, its description, and ``[catches M->check, ...]``."""
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.registry import DESCRIPTIONS, load_all

    load_all()
    width = max(len(n) for n in DESCRIPTIONS)
    lines = []
    for name in sorted(DESCRIPTIONS):
        spec = BY_NAME.get(name)
        catches = f"  [catches {', '.join(f'{m}->{c}' for m, c in spec.catches)}]" if spec and spec.catches else ""
        lines.append(f"{name:<{width}}  {DESCRIPTIONS[name]}{catches}")
    return lines


def mutant_lines() -> list[str]:
    """Return one line per mutant M1..M19: its id, its name and the guarantee it removes."""
    from engine.scenarios.mutants import MUTANTS

    return [f"{mid:<4} {m.name:<55} removes: {m.removes}" for mid, m in MUTANTS.items()]
