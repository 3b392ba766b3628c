"""The magics' own errors: one-line usage errors with "did you mean".

Role
----
Bad arguments and wrong state (no cluster yet, an unknown producer name, a transaction already
open) raise :class:`EosUsageError`, a subclass of IPython's ``UsageError``: IPython shows it as
one line, ``UsageError: ...``, with no traceback. Kafka's own errors (``ProducerFencedException``,
``InvalidTxnStateException``, ``OutOfOrderSequenceException``, ``NotEnoughReplicasException`` ...)
are the engine's catalogue (:mod:`engine.errors`) and already render as one named line through
``_render_traceback_``; they pass through unchanged.

Invariants
----------
* Every message says what to do next, in one line.
* A suggestion names an existing name only (``difflib``), never a guess of ours.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable
from typing import Any

from IPython.core.error import UsageError

__all__ = ["EosUsageError", "did_you_mean", "require", "unknown_name"]


class EosUsageError(UsageError):
    """A bad argument or a call in the wrong state; IPython shows it as one line."""

    def _render_traceback_(self) -> list[str]:
        return [f"UsageError: {' '.join(str(self).split())}"]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest existing name, or ``""``."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.5)
    return f"; did you mean '{close[0]}'?" if close else ""


def unknown_name(what: str, name: str, choices: Iterable[str], *, how: str) -> EosUsageError:
    """Build the error for a name that does not exist: what exists, the nearest name, how to make one."""
    existing = sorted(str(c) for c in choices)
    known = ", ".join(existing) if existing else "none yet"
    return EosUsageError(f"no {what} '{name}'{did_you_mean(name, existing)} (known: {known}); {how}")


def require(module: str, what: str) -> Any:
    """Import ``module`` for ``what``, or say in one line that this kernel does not have it.

    JupyterLite's Pyodide kernel has no pandas, pyarrow, pyspark or kio (they are not pure
    Python wheels on PyPI): the magic that needs one says so instead of a ModuleNotFoundError.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        where = " (the in-browser kernel of JupyterLite has none)" if sys.platform == "emscripten" else ""
        top = module.split(".")[0]
        raise EosUsageError(
            f"{what} needs {top}, which this kernel does not have{where}; "
            "run the notebook in a Jupyter installed with eos-magics (README: Use it in a notebook) for it"
        ) from None
