"""Measures written once and used everywhere: Jain's index of fairness.

:func:`jain` is the one Python form of the index; :meth:`aqmlab.Result.jain`, the sweep tables'
``jain_*`` columns (:mod:`aqmlab.run.metrics`), the figures and the emulated runs' summaries all
call it. (The engine computes the summary's ``fairness`` section itself, in Rust, by the same
formula.)
"""

from __future__ import annotations

import math


def jain(x) -> float:
    """Jain's index (Σx)²/(n·Σx²); NaN for no values, for an allocation of nothing (every value 0:
    0/0, undefined) and when any value is NaN.

    Sums are exact (``math.fsum``), so the index does not depend on the order of the values."""
    x = [float(v) for v in x]
    if not x:
        return math.nan
    s2 = math.fsum(v * v for v in x)
    if math.isnan(s2):
        return math.nan
    return math.nan if s2 == 0 else math.fsum(x) ** 2 / (len(x) * s2)


__all__ = ["jain"]
