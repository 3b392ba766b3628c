"""The Spark bridge's one error: a short line that says what to do, never a JVM traceback.

:class:`SparkBridgeError` is raised for bad arguments (an unknown scenario, a master URL Spark
cannot use), a missing or wrong-schema export directory, a refused streaming token. It is a
``ValueError``, and IPython shows it as one line through ``_render_traceback_``.
"""

from __future__ import annotations

__all__ = ["SparkBridgeError"]


class SparkBridgeError(ValueError):
    """A bad argument or input of the Spark bridge; the message says what to do next."""

    def _render_traceback_(self) -> list[str]:
        return [f"SparkBridgeError: {' '.join(str(self).split())}"]
