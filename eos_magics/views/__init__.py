"""What every ``%eos`` magic returns: views with Kafka's text, HTML with small SVG pictures, pandas tables.

=============================  =====================================================================
module                         contents
=============================  =====================================================================
:mod:`~.base`                  :class:`View` (``text``, ``_repr_html_``) and :class:`TableView`
                               (``columns``, ``rows``, ``column()``, ``to_pandas()``)
:mod:`widgets.svg`             pure SVG pictures: the log strip, the producer dedup window, brokers, lag
:mod:`~.kafka`                 one factory per view (``dump_log``, ``transactions``, ...), gathered from
                               :mod:`~.logs`, :mod:`~.admin` and :mod:`~.results`
=============================  =====================================================================

Every view fits a 1280 px page: its tables and text wrap inside the output cell
(:func:`~.base.min_width_px` measures it against :data:`~.base.PAGE_WIDTH_PX`).

Importing this package is cheap: it imports the two base classes (standard library only); the
engine is imported with :mod:`~.kafka`, pandas only by ``to_pandas()``. Nothing here imports
ipywidgets or Spark.
"""

from __future__ import annotations

from eos_magics.views.base import TableView, View

__all__ = ["TableView", "View"]
