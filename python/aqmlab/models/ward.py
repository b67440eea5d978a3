"""WARD fluid-model statement ([WARD] Ho, Chan, Chen, IET Communications 1(6), 2007, §2.1).

Read ``spec/models.md`` §5 first. The WARD paper cites a separate deterministic fluid model that is
*not* available to us; the only statement we have is its conclusion: with many TCP flows the UDP
share under WARD, as a function of the UDP rate, peaks at ``1/(2e) ~ 0.184`` and tends to 0 as the
UDP rate grows. The user-facing page is ``docs/models/ward.md``.

What this module provides, and what it does not:

* :data:`PEAK_SHARE` = ``1/(2e)``, the stated maximum.
* :func:`reference_share` - a *reference curve* ``mu0(s) = s exp(-2 s)`` (``s = x0 / c``). It comes
  from the simplest thinning argument (a queued UDP packet waits ``b/c``; each of the
  ``x0 b / c`` UDP arrivals in that time draws two of the ``b`` queued packets and removes it with
  probability ``2/b``; so a fraction ``exp(-2 s)`` survives), which reproduces the stated peak
  ``1/(2e)`` (at ``s = 1/2``) and the limit 0. It ignores the drops of UDP *arrivals* on a match,
  rule 3 and WARD's position weights. It is a reconstruction that matches the claim, **not** the
  WARD paper's model; use it as a qualitative guide only (a fuller
  reconstruction does not give 1/(2e)).
* :func:`ward_curve` - the reference curve next to the large-N CHOKe curve of [TWL]
  (peak ``1/(e+1)``), for comparison.
* :func:`share_curve_summary` - peak, its location and the last value of a measured share curve,
  to check a simulation sweep against the claim (rises, peaks near 0.18, falls towards 0).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..base.errors import ParameterError
from .common import check_real
from .choke import large_n_share

__all__ = ["PEAK_SHARE", "PEAK_S", "reference_share", "ward_curve", "share_curve_summary"]

#: the stated maximum UDP share under WARD, 1/(2e)
PEAK_SHARE = 1.0 / (2.0 * math.e)
#: where the reference curve s exp(-2 s) peaks (s = x0 / c)
PEAK_S = 0.5


def reference_share(s):
    """Reference UDP share ``s exp(-2 s)`` for normalised UDP rate ``s = x0 / c`` (see module notes)."""
    s = np.asarray(s, dtype=float)
    if np.any(~np.isfinite(s)) or np.any(s < 0):
        raise ParameterError("s: the normalised UDP rate x0/c must be finite and >= 0")
    return (s * np.exp(-2.0 * s))[()]


def ward_curve(s_values, c: float | None = None) -> pd.DataFrame:
    """Table over ``s = x0 / c``: ``mu0_reference`` (WARD reference curve) and ``mu0_choke_large_n``
    (CHOKe in the large-N limit with negligible RED drops, models.md §2.9). With ``c`` (pkt/s) the
    columns ``x0`` and ``udp_throughput_reference`` (pkt/s) are added."""
    s = np.atleast_1d(np.asarray(s_values, dtype=float))
    if s.size == 0 or np.any(~np.isfinite(s)) or np.any(s <= 0):
        raise ParameterError("s: give normalised UDP rates x0/c > 0")
    df = pd.DataFrame({"s": s, "mu0_reference": reference_share(s),
                       "mu0_choke_large_n": [large_n_share(v, 0.0) for v in s]})
    if c is not None:
        c = check_real("c", c, gt=0)
        df.insert(1, "x0", s * c)
        df["udp_throughput_reference"] = df["mu0_reference"] * c
    return df


def share_curve_summary(x, share) -> dict:
    """Peak share, the rate where it occurs, the share at the largest rate, and whether the curve
    rises before and falls after the peak (non-strictly). ``x`` need not be sorted."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(share, dtype=float)
    if x.shape != y.shape or x.size == 0:
        raise ParameterError("x and share must be non-empty and of the same length")
    o = np.argsort(x)
    x, y = x[o], y[o]
    i = int(np.nanargmax(y))
    up = bool(np.all(np.diff(y[: i + 1]) >= -1e-12))
    down = bool(np.all(np.diff(y[i:]) <= 1e-12))
    return {"peak_share": float(y[i]), "peak_at": float(x[i]), "last_share": float(y[-1]),
            "last_at": float(x[-1]), "unimodal": up and down}
