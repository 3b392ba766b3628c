"""Make JupyterLite 0.8.6's Run All go past a cell tagged ``raises-exception``, as JupyterLab's does.

Role: step 7 of ``scripts/build-lite.sh``, on the built site. JupyterLab sends a cell tagged
``raises-exception`` with ``stop_on_error: false`` (``OutputArea.execute``), and ipykernel then leaves the
cells queued behind it alone (``Kernel._abort_queues`` only when ``stop_on_error``). JupyterLite's kernels
manager (``@jupyterlite/services``, ``LiteKernelsManager.startNew``, since jupyterlite#1671) cancels every
queued request after any ``execute_reply`` with status ``error``, whatever the request asked: Run All
stopped at the tour's deliberate error and at 01's. The patch records the ids of execute requests that
asked ``stop_on_error: false`` and skips the cancel for their replies; every other error still cancels
the queue, as in JupyterLab.

Invariants: each replaced text occurs exactly once in exactly one file of ``SITE/build``, else the build
fails (the texts are of the pinned jupyterlite-core 0.8.6's minified bundle: a new pin needs them checked,
or the patch dropped if JupyterLite honours ``stop_on_error`` by then). Running it twice changes nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

MARK = "globalThis.__liteNoStop"
#: (old, new): the request handler records the ids; the reply handler skips the cancel for them.
EDITS = [
    (
        "else a(t)});let o=()=>",
        (
            'else("execute_request"===t.header.msg_type&&!1===t.content.stop_on_error&&'
            f"({MARK}??=new Set).add(t.header.msg_id),a(t))}});let o=()=>"
        ),
    ),
    (
        '"execute_reply"===e.header.msg_type&&"error"===e.content.status&&"interrupt"!==e.metadata.cause&&(',
        (
            '"execute_reply"===e.header.msg_type&&"error"===e.content.status&&"interrupt"!==e.metadata.cause&&'
            f"!({MARK}&&{MARK}.delete(e.parent_header.msg_id))&&("
        ),
    ),
]


def patch(site: Path) -> Path:
    """Patch the bundle of ``site`` in place; return the file patched."""
    files = [p for p in sorted((site / "build").glob("*.js")) if EDITS[1][0] in p.read_text(errors="replace")]
    done = [p for p in sorted((site / "build").glob("*.js")) if MARK in p.read_text(errors="replace")]
    if done and not files:
        return done[0]
    if len(files) != 1:
        raise SystemExit(f"patch_app: the kernels manager's cancel-on-error is in {len(files)} files of {site}/build")
    text = files[0].read_text()
    for old, new in EDITS:
        if text.count(old) != 1:
            raise SystemExit(f"patch_app: {old!r} occurs {text.count(old)} times in {files[0]}, not once")
        text = text.replace(old, new)
    files[0].write_text(text)
    return files[0]


if __name__ == "__main__":
    sys.stdout.write(f"patch_app: {patch(Path(sys.argv[1]))}\n")
