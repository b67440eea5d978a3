"""RAQM stability analysis ([RAQM] Wang, Li, Hou, Sohraby, Tang, §2.2-2.4).

Read the specification first: ``spec/models.md`` §4 (the discrete model (1)-(6), Lemmas 1-2,
Theorem 1 with the bound (11), the design rule (13) and the closed-form maps of §4.2) and
``spec/aqm.md`` §11 (the RAQM algorithm). The user-facing page is ``docs/models/raqm.md``.

The model: every period the router measures the aggregate input rate ``r_k`` and multiplies the drop
probability by ``exp(alpha (r_k - r0))``; the TCP sources answer with ``r = eta H / sqrt(p)``
(Padhye's simplified law). With ``x = r / r0`` and no measurement filter the loop is the
one-dimensional map ``x -> x exp(-alpha r0 (x - 1) / 2)``. The Lyapunov function ``V = (r - r0)^2``
decreases at a step iff ``alpha`` is below ``alpha_hat(r_k) = c(x) / r0`` with
``c(x) = 2 ln((2 - x)/x) / (1 - x)`` (>= 4, = 4 at x = 1).

Public functions: :func:`c_of_x`, :func:`alpha_hat`, :func:`unstable_band`, :func:`static_map`,
:func:`adaptive_map`, :func:`iterate_raqm` (the literal iteration of Eqs. (2)-(5), returning a
:class:`RaqmTrajectory` whose ``outcome`` says whether it converged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize

from ..base.errors import NotConvergedError, ParameterError
from .common import check_int, check_real

__all__ = [
    "c_of_x",
    "alpha_hat",
    "unstable_band",
    "static_map",
    "adaptive_map",
    "iterate_raqm",
    "RaqmTrajectory",
]


def c_of_x(x):
    """Design constant ``c(x) = 2 ln((2 - x)/x) / (1 - x)`` of Eq. (13) for ``x = r_k / r0`` in (0, 2).

    Written as ``4 atanh(d) / d`` with ``d = 1 - x``, which is exact and has the limit 4 at x = 1
    (no 0/0). ``c(0.5) = 4 ln 3``; ``c(1 - d) = c(1 + d)``.
    """
    x = np.asarray(x, dtype=float)
    if np.any((x <= 0) | (x >= 2)):
        raise ParameterError("x: c(x) is defined for 0 < x < 2 (r_k between 0 and 2 r0)")
    d = 1.0 - x
    small = np.abs(d) < 1e-4
    ds = np.where(small, 0.5, d)  # placeholder away from 0 for the exact branch
    with np.errstate(divide="ignore"):  # x within 1e-16 of 0 or 2 rounds to d = +-1: c = inf
        exact = 4.0 * np.arctanh(ds) / ds
    series = 4.0 * (1.0 + d * d / 3.0 + d ** 4 / 5.0)
    return np.where(small, series, exact)[()]


def alpha_hat(r_k, r0):
    """Stability bound of Theorem 1, Eq. (11): ``(ln(2 r0 - r_k) - ln r_k) / (0.5 (r0 - r_k))``.

    Equal to ``c(r_k / r0) / r0``; defined for ``0 < r_k < 2 r0`` (at ``r_k = r0`` it is the limit
    ``4 / r0``).
    """
    r0 = check_real("r0", r0, gt=0)
    return c_of_x(np.asarray(r_k, dtype=float) / r0) / r0


def unstable_band(m: float):
    """For a static gain ``alpha = m / r0``: the interval of ``x = r/r0`` where ``alpha >= alpha_hat``.

    Empty (returns None) for ``m <= 4``; otherwise ``(x_lo, x_hi)`` symmetric about 1 with
    ``c(x_lo) = c(x_hi) = m``: inside it a step does not reduce ``V``, so the loop cannot settle at
    ``x = 1``.
    """
    m = check_real("m", m, gt=0)
    if m <= 4.0:
        return None
    d = optimize.brentq(lambda d: float(c_of_x(1.0 - d)) - m, 1e-12, 1.0 - 1e-15, xtol=1e-15)
    return (1.0 - d, 1.0 + d)


def static_map(x, m: float):
    """One step of the normalised loop with static gain ``alpha = m / r0`` (models.md §4.2)."""
    x = np.asarray(x, dtype=float)
    return x * np.exp(-m * (x - 1.0) / 2.0)


def adaptive_map(x, eps: float):
    """One step with adaptive gain ``alpha = eps * alpha_hat(r_k)``: ``x^(1-eps) (2 - x)^eps``."""
    x = np.asarray(x, dtype=float)
    return x ** (1.0 - eps) * (2.0 - x) ** eps


@dataclass
class RaqmTrajectory:
    """The iteration of the RAQM model, one row per period in ``steps``.

    Columns: ``k``, ``rate`` (measured ``r_k``), ``x`` (= r_k / r0), ``p`` (drop probability after
    the update of period k), ``alpha`` (gain used at k), ``alpha_hat`` (bound at r_k, NaN outside
    ``0 < x < 2``), ``V`` (``(r_k - r0)^2``), ``dV`` (``V_{k+1} - V_k``).

    ``outcome`` is ``converged`` (``|x - 1| < tol`` over the last ``window`` steps), ``oscillating``
    (bounded, not settling) or ``diverged`` (``x`` left every bound or ``p`` under/overflowed);
    ``converged`` is ``outcome == "converged"``.
    """

    steps: pd.DataFrame
    outcome: str
    message: str
    mode: str
    gain: float
    r0: float
    f_prime: float
    extra: dict = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        return self.outcome == "converged"

    def require(self) -> "RaqmTrajectory":
        if not self.converged:
            raise NotConvergedError(f"RAQM iteration: {self.message}")
        return self

    def as_dict(self) -> dict:
        return {"outcome": self.outcome, "converged": self.converged, "message": self.message,
                "mode": self.mode, "gain": self.gain, "r0": self.r0, "f_prime": self.f_prime,
                **self.extra, "steps": self.steps.to_dict(orient="records")}


def iterate_raqm(
    x_start: float,
    *,
    m: float | None = None,
    epsilon: float | None = None,
    steps: int = 200,
    r0: float = 1.0,
    f_prime: float = 0.0,
    eta_h: float = 1.0,
    c_max: float | None = None,
    alpha_fallback: float = 2.0,
    tol: float = 1e-6,
    window: int = 5,
) -> RaqmTrajectory:
    """Iterate the RAQM model literally: Eq. (5) for the TCP rate, Eq. (2) for the measurement,
    Eq. (3) for the drop probability (unclamped, as in the analysis).

    Give exactly one of ``m`` (static gain ``alpha = m / r0``) or ``epsilon`` (adaptive gain
    ``alpha = epsilon * alpha_hat(r_k)``; outside ``0 < x < 2`` where ``alpha_hat`` is undefined the
    gain falls back to ``alpha_fallback / r0``, as the algorithm does; ``c_max`` optionally caps
    ``c(x)`` as the algorithm's safety option). ``x_start = r_1 / r0`` sets the first drop probability
    via ``p_0 = (eta_h / (x_start r0))^2``. ``f_prime`` is the filter weight of Eq. (2) (0 = none, the
    setting of the closed-form maps). ``eta_h`` is the product ``eta H`` of Eq. (5); it cancels out of
    ``x`` and only scales ``p``.
    """
    x_start = check_real("x_start", x_start, gt=0)
    steps = check_int("steps", steps, ge=2)
    r0 = check_real("r0", r0, gt=0)
    f_prime = check_real("f_prime", f_prime, ge=0, lt=1)
    eta_h = check_real("eta_h", eta_h, gt=0)
    tol = check_real("tol", tol, gt=0)
    window = check_int("window", window, ge=1)
    if (m is None) == (epsilon is None):
        raise ParameterError("give exactly one of m (static gain alpha = m/r0) or epsilon (adaptive gain)")
    if m is not None:
        m = check_real("m", m, gt=0)
        mode, gain = "static", m
    else:
        epsilon = check_real("epsilon", epsilon, gt=0)
        mode, gain = "adaptive", epsilon
    if c_max is not None:
        c_max = check_real("c_max", c_max, ge=4)

    p_prev = (eta_h / (x_start * r0)) ** 2  # p_0 so that the first measured rate is x_start r0
    r_meas_prev = None
    rows = []
    outcome = None
    for k in range(1, steps + 1):
        with np.errstate(all="ignore"):
            true_rate = eta_h / math.sqrt(p_prev) if p_prev > 0 else math.inf  # Eq. (5)
        r_k = true_rate if r_meas_prev is None else (1 - f_prime) * true_rate + f_prime * r_meas_prev
        x = r_k / r0
        in_dom = 0 < x < 2
        ah = float(alpha_hat(r_k, r0)) if in_dom else math.nan
        if mode == "static":
            alpha = m / r0
        elif in_dom:
            cx = float(c_of_x(x))
            if c_max is not None:
                cx = min(cx, c_max)
            alpha = epsilon * cx / r0
        else:
            alpha = alpha_fallback / r0
        expo = alpha * (r_k - r0)
        p_k = p_prev * math.exp(expo) if expo < 700 else math.inf  # Eq. (3), unclamped
        rows.append({"k": k, "rate": r_k, "x": x, "p": p_k, "alpha": alpha, "alpha_hat": ah,
                     "V": (r_k - r0) ** 2})
        if not (math.isfinite(r_k) and math.isfinite(p_k)) or p_k <= 0 or x > 1e12 or x < 1e-12:
            outcome = "diverged"
            break
        p_prev = p_k
        r_meas_prev = r_k
    df = pd.DataFrame(rows)
    df["dV"] = df["V"].shift(-1) - df["V"]
    xs = df["x"].to_numpy()
    if outcome is None:
        tail = xs[-window:]
        if len(xs) >= window and np.all(np.abs(tail - 1) < tol):
            outcome = "converged"
        elif np.all(np.isfinite(xs)) and np.max(np.abs(xs)) < 1e6:
            outcome = "oscillating"
        else:  # pragma: no cover - caught above
            outcome = "diverged"
    err = abs(xs[-1] - 1) if len(xs) else math.nan
    msgs = {
        "converged": f"converged to r0 (|x - 1| < {tol:g} over the last {window} periods)",
        "oscillating": f"did not converge in {steps} periods (final |x - 1| = {err:.3g}); the rate keeps "
                       f"oscillating around r0",
        "diverged": f"diverged at period {len(xs)} (x = {xs[-1]:.3g})",
    }
    extra = {"x_start": x_start}
    if mode == "static":
        band = unstable_band(m)
        extra["unstable_band"] = list(band) if band else None
    return RaqmTrajectory(df, outcome, msgs[outcome], mode, gain, r0, f_prime, extra)
