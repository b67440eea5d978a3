"""CHOKeW steady-state model ([CHOKeW] Wen, Fang, Sun, IEEE TPDS 2008, §3).

Read the specification first: ``spec/models.md`` §3 (equations (1)-(16d), the TCP response
function of §3.4, the solution procedure of §3.5 and the properties P1-P8 of §3.6). The user-facing
page is ``docs/models/chokew.md``.

The model: flows are grouped into classes of identical flows (count ``n``, priority weight ``w``,
and either a TCP round-trip time or a fixed unresponsive rate). An arrival of a weight-``w`` flow
draws ``p = p0 / w`` queued packets; a match drops it together with the matched packet. With
``r`` the fraction of the queue that belongs to the flow, an arrival enters with probability
``eta = (1 - r)^p`` and the flow loses ``q = 2 (1 - eta)`` of its packets (matched drops come in
pairs). TCP flows send ``lambda = alpha sqrt(3 / (2 q))`` (Floyd-Fall) with
``alpha = 1 / (RTT + D)`` and ``D = queue / capacity``; the queue fractions follow Little's law for
a leaky buffer, ``r_i = mu_i / sum_j mu_j`` with ``mu_i = lambda_i eta_i``.

Solution (models.md §3.5, three nested monotone root problems, each bracketed, so each has a
unique root when it has one): for fixed ``p0`` and total entering rate ``M`` solve every class's
``r M = mu(r)``; choose ``M`` so that the fractions add up to one; choose ``p0`` so that the link
is saturated (or take ``p0`` as given).

Public functions: :func:`solve_chokew`, :func:`chokew_p0_sweep`, :func:`starvation_bound`,
:func:`q_of`, :func:`eta_of`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize

from ..base.errors import NotConvergedError, ParameterError
from .common import check_choice, check_int, check_real

__all__ = [
    "FlowClass",
    "ChokewParams",
    "ChokewSolution",
    "solve_chokew",
    "chokew_p0_sweep",
    "starvation_bound",
    "q_of",
    "eta_of",
]

_LOG_R_MIN = -700.0
_R_MAX = 1.0 - 1e-15


@dataclass(frozen=True)
class FlowClass:
    """``n`` identical flows with priority weight ``weight`` (>= 1 by CHOKeW's convention, any > 0
    accepted). A TCP class gives ``rtt`` (round-trip propagation delay, s); an unresponsive class
    gives ``rate`` (its constant sending rate per flow, pkt/s). ``alpha`` (pkt/s) overrides the TCP
    factor ``1 / (rtt + D)`` if given."""

    name: str
    n: int = 1
    weight: float = 1.0
    rtt: float | None = None
    rate: float | None = None
    alpha: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "n", check_int(f"{self.name}: n", self.n, ge=1))
        object.__setattr__(self, "weight", check_real(f"{self.name}: weight", self.weight, gt=0))
        given = [x is not None for x in (self.rtt, self.rate)]
        if sum(given) != 1 and not (self.alpha is not None and self.rate is None):
            raise ParameterError(f"{self.name}: give exactly one of rtt (TCP class) or rate (unresponsive class)")
        if self.rtt is not None:
            object.__setattr__(self, "rtt", check_real(f"{self.name}: rtt", self.rtt, ge=0))
        if self.rate is not None:
            object.__setattr__(self, "rate", check_real(f"{self.name}: rate", self.rate, gt=0))
        if self.alpha is not None:
            object.__setattr__(self, "alpha", check_real(f"{self.name}: alpha", self.alpha, gt=0))

    @property
    def responsive(self) -> bool:
        return self.rate is None


@dataclass(frozen=True)
class ChokewParams:
    """capacity: bottleneck capacity (pkt/s; 1 Mb/s with 1000-B packets = 125);
    queue: the mean queue length used for the waiting time ``D = queue / capacity`` in TCP's RTT
    (CHOKeW holds its queue between L- and L+, so (125 + 175)/2 = 150 packets by default);
    eta: ``maclaurin`` (the paper's ``(1 - r)^p``, equations (16)) or ``exact`` (equation (4),
    ``(1 - r)^m (1 - f r)`` with ``m = floor(p)``, ``f = p - m``)."""

    capacity: float = 125.0
    queue: float = 150.0
    eta: str = "maclaurin"

    def __post_init__(self):
        object.__setattr__(self, "capacity", check_real("capacity", self.capacity, gt=0))
        object.__setattr__(self, "queue", check_real("queue", self.queue, ge=0))
        check_choice("eta", self.eta, ("maclaurin", "exact"))

    @property
    def D(self) -> float:
        return self.queue / self.capacity


# ----------------------------------------------------------------------------- element formulas


def _log_eta(r: float, p: float, mode: str) -> float:
    if r <= 0:
        return 0.0
    if r >= 1:
        return -math.inf if p > 0 else 0.0
    if mode == "maclaurin":
        return p * math.log1p(-r)
    m = math.floor(p)
    f = p - m
    return m * math.log1p(-r) + math.log1p(-f * r)


def eta_of(r, p, mode: str = "maclaurin"):
    """Entry probability of an arrival: ``(1 - r)^p`` (maclaurin) or ``(1 - r)^m (1 - f r)`` (exact)."""
    return np.vectorize(lambda a, b: math.exp(_log_eta(a, b, mode)))(r, p)[()]


def q_of(r, p, mode: str = "maclaurin"):
    """Drop probability ``q = 2 (1 - eta)`` (equation (16b) in maclaurin mode)."""
    return np.vectorize(lambda a, b: -2.0 * math.expm1(_log_eta(a, b, mode)))(r, p)[()]


def starvation_bound(r):
    """Largest drawing factor that does not starve a flow holding a fraction ``r`` of the queue:
    ``q < 1`` iff ``p < -1 / log2(1 - r)`` (equation (9)); 68.97 at r = 0.01, 1 at r = 1/2."""
    r = np.asarray(r, dtype=float)
    if np.any((r <= 0) | (r >= 1)):
        raise ParameterError("r: must lie in (0, 1)")
    return (-1.0 / np.log2(1.0 - r))[()]


# ----------------------------------------------------------------------------- solver


@dataclass
class _Cls:
    fc: FlowClass
    p: float
    alpha: float  # TCP only


def _log_lambda(c: _Cls, log_eta: float) -> float:
    """log of the sending rate: fixed for unresponsive, Floyd-Fall for TCP (q = 2(1 - eta))."""
    if not c.fc.responsive:
        return math.log(c.fc.rate)
    q = -2.0 * math.expm1(log_eta)
    if q <= 0:
        return math.inf
    return math.log(c.alpha) + 0.5 * (math.log(1.5) - math.log(q))


def _class_r(c: _Cls, logM: float, mode: str) -> float:
    """Root of ``r M = mu(r)`` on (0, 1): the left side increases, the right side decreases."""

    def F(x):
        r = math.exp(x)
        le = _log_eta(r, c.p, mode)
        return x + logM - (_log_lambda(c, le) + le)

    lo, hi = _LOG_R_MIN, math.log(_R_MAX)
    flo, fhi = F(lo), F(hi)
    if flo >= 0:
        return math.exp(lo)
    if fhi <= 0:
        return _R_MAX
    return math.exp(optimize.brentq(F, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=300))


def _fractions(cls: list[_Cls], mode: str):
    """Find the total entering rate M with ``sum_k n_k r_k(M) = 1``; return (log M, r list)."""

    def S(logM):
        return sum(c.fc.n * _class_r(c, logM, mode) for c in cls) - 1.0

    lo, hi = -5.0, 5.0
    for _ in range(200):
        if S(lo) > 0:
            break
        lo -= 10.0
    else:
        raise NotConvergedError("could not bracket the total entering rate M (low side)")
    for _ in range(200):
        if S(hi) < 0:
            break
        hi += 10.0
    else:
        raise NotConvergedError("could not bracket the total entering rate M (high side)")
    logM = optimize.brentq(S, lo, hi, xtol=1e-13, rtol=1e-14, maxiter=300)
    return logM, [_class_r(c, logM, mode) for c in cls]


def _evaluate(classes, p0: float, P: ChokewParams) -> pd.DataFrame:
    cls = [_Cls(fc, p0 / fc.weight, fc.alpha if fc.alpha is not None else
                (1.0 / (fc.rtt + P.D) if fc.responsive else math.nan)) for fc in classes]
    for c in cls:
        if c.fc.responsive and not (math.isfinite(c.alpha) and c.alpha > 0):
            raise ParameterError(f"{c.fc.name}: rtt + queue/capacity must be > 0 for a TCP class")
    logM, rs = _fractions(cls, P.eta)
    rows = []
    for c, r in zip(cls, rs):
        le = _log_eta(r, c.p, P.eta)
        eta = math.exp(le)
        q = -2.0 * math.expm1(le)
        lam = math.exp(_log_lambda(c, le))
        mu = lam * eta
        thr = lam * (1.0 - q)
        starved = q >= 1.0
        rows.append({
            "class": c.fc.name,
            "kind": "tcp" if c.fc.responsive else "udp",
            "n": c.fc.n,
            "weight": c.fc.weight,
            "rtt_s": c.fc.rtt if c.fc.rtt is not None else math.nan,
            "p": c.p,
            "r": r,
            "eta": eta,
            "q": q,
            "survival": 1.0 - q,
            "pass_prob": (1.0 - q) / eta if eta > 0 else math.nan,
            "lambda_pps": lam,
            "mu_pps": mu,
            "throughput_pps": max(thr, 0.0),
            "throughput_share": max(thr, 0.0) / P.capacity,
            "class_throughput_pps": c.fc.n * max(thr, 0.0),
            "class_share": c.fc.n * max(thr, 0.0) / P.capacity,
            "backlog_pkts": P.D * mu,
            # -1 / log2(1 - r), through log1p: for r below 1e-16, 1 - r rounds to 1 and log2 to 0
            "p_bound": -math.log(2.0) / math.log1p(-r) if 0 < r < 1 else math.nan,
            "r_starve": -math.expm1(-math.log(2.0) / c.p) if c.p > 0 else math.nan,
            "starved": starved,
        })
    df = pd.DataFrame(rows)
    df.attrs["M"] = math.exp(logM)
    return df


@dataclass
class ChokewSolution:
    """Steady state of the CHOKeW model.

    ``classes``: one row per class (columns ``p`` drawing factor, ``r`` queue fraction per flow,
    ``q`` drop probability, ``eta`` entry probability, ``lambda_pps`` sending rate, ``mu_pps``
    entering rate, ``throughput_pps`` / ``throughput_share`` per flow, ``class_share``,
    ``p_bound`` the starvation bound of (9) at that ``r``, ``starved``). ``in_domain`` is False when a
    class is starved (``q >= 1``); its throughput is then reported as 0, as the model prescribes no
    negative rates. If ``converged`` is False the table is empty and ``message`` says why.
    """

    converged: bool
    message: str
    p0: float = math.nan
    utilisation: float = math.nan
    M: float = math.nan
    D: float = math.nan
    in_domain: bool = False
    starved: list = field(default_factory=list)
    classes: pd.DataFrame = field(default_factory=pd.DataFrame)
    params: ChokewParams | None = None

    def require(self) -> "ChokewSolution":
        if not self.converged:
            raise NotConvergedError(f"CHOKeW model: {self.message}")
        return self

    def as_dict(self) -> dict:
        return {
            "converged": self.converged, "message": self.message, "p0": self.p0,
            "utilisation": self.utilisation, "M_pps": self.M, "D_s": self.D,
            "in_domain": self.in_domain, "starved": list(self.starved),
            "classes": self.classes.to_dict(orient="records"),
        }


def _check_classes(classes) -> list[FlowClass]:
    classes = list(classes)
    if not classes:
        raise ParameterError("classes: give at least one flow class")
    names = [c.name for c in classes]
    if len(set(names)) != len(names):
        raise ParameterError(f"classes: names must be unique, got {', '.join(names)}")
    if sum(c.n for c in classes) < 2:
        raise ParameterError("classes: the model needs at least two flows in total (a lone flow owns the "
                             "whole queue, r = 1, and every draw matches)")
    return classes


def _finish(df: pd.DataFrame, p0: float, P: ChokewParams) -> ChokewSolution:
    starved = list(df.loc[df["starved"], "class"])
    util = float(df["class_throughput_pps"].sum() / P.capacity)
    msg = "ok" if not starved else (
        f"class(es) {', '.join(starved)} starved (q >= 1, drawing factor above the bound p < -1/log2(1 - r)): "
        f"outside the model's domain, throughput reported as 0")
    return ChokewSolution(True, msg, p0=p0, utilisation=util, M=df.attrs["M"], D=P.D,
                          in_domain=not starved, starved=starved, classes=df, params=P)


def solve_chokew(classes, params: ChokewParams | None = None, p0: float | None = None) -> ChokewSolution:
    """Solve (16a)-(16d) for the given flow classes.

    Without ``p0`` the basic drawing factor is chosen so that the link is saturated
    (total throughput = capacity, models.md §3.5 step 3); with ``p0`` it is taken as given (to mirror
    a measured value) and ``utilisation`` reports the resulting load.
    """
    P = params or ChokewParams()
    classes = _check_classes(classes)
    if p0 is not None:
        p0 = check_real("p0", p0, gt=0)
        try:
            return _finish(_evaluate(classes, p0, P), p0, P)
        except NotConvergedError as e:
            return ChokewSolution(False, str(e), params=P)

    def T(lp):
        return _evaluate(classes, math.exp(lp), P)["class_throughput_pps"].sum() - P.capacity

    try:
        lo, hi = math.log(1e-3), math.log(10.0)
        tlo, thi = T(lo), T(hi)
        steps = 0
        while tlo < 0 and steps < 40:
            hi, thi = lo, tlo
            lo -= 2.0
            tlo = T(lo)
            steps += 1
        while thi > 0 and steps < 40:
            lo, tlo = hi, thi
            hi += 2.0
            thi = T(hi)
            steps += 1
        if tlo < 0:
            return ChokewSolution(False, "the offered load cannot saturate the link even with almost no "
                                         "matched drops (too little traffic); give p0 explicitly", params=P)
        if thi > 0:
            return ChokewSolution(False, "no drawing factor p0 <= 1e35 brings the throughput down to the "
                                         "capacity", params=P)
        lp = optimize.brentq(T, lo, hi, xtol=1e-13, rtol=1e-13, maxiter=300)
        p0 = math.exp(lp)
        return _finish(_evaluate(classes, p0, P), p0, P)
    except NotConvergedError as e:
        return ChokewSolution(False, str(e), params=P)


def chokew_p0_sweep(classes, p0_values, params: ChokewParams | None = None) -> pd.DataFrame:
    """Evaluate the model at each given ``p0`` (no saturation condition); one row per (p0, class).

    Adds ``p0`` and ``utilisation`` (total throughput / capacity at that ``p0``) to the columns of
    :class:`ChokewSolution.classes`.
    """
    P = params or ChokewParams()
    classes = _check_classes(classes)
    frames = []
    for v in np.atleast_1d(np.asarray(p0_values, dtype=float)):
        v = check_real("p0", v, gt=0)
        df = _evaluate(classes, v, P)
        df.insert(0, "p0", v)
        df.insert(1, "utilisation", df["class_throughput_pps"].sum() / P.capacity)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)
