"""``aqmlab plot`` from Python: figures of one's own run and sweep folders (see :mod:`aqmlab.plot.draw`
and docs/plotting.md)::

    from aqmlab.plot import plot
    out = plot(["udp-sweep"], kind="line", y="udp.share", x="flows[1].rate", by="bottleneck.aqm.type")

Uses :mod:`aqmlab.analysis` (the report's own figure code) and :mod:`aqmlab.run`; a sibling of
:mod:`aqmlab.reproduce`, :mod:`aqmlab.emulate` and :mod:`aqmlab.bench`, which it never imports.
"""

from ..base.errors import PlotError
from .draw import KINDS, TABLE_FILES, Data, context, load, plot, spec_for

__all__ = ["plot", "load", "spec_for", "context", "Data", "PlotError", "KINDS", "TABLE_FILES"]
