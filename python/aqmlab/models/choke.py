"""CHOKe fluid model of Tang, Wang and Low ([TWL] "Understanding CHOKe", INFOCOM 2003).

Read the specification first: ``spec/models.md`` §2 (equations (1)-(16), the closed-form solution
of the queue ODEs in §2.4, the root-finding method of §2.5, the theorems of §2.7, Perfect CHOKe in
§2.8 and the large-N limit in §2.9). The user-facing page is ``docs/models/choke.md``.

The model: N identical TCP flows and one constant-rate UDP flow (rate ``x0``) share a RED+CHOKe
bottleneck of capacity ``c`` packets/s. The queue is a one-dimensional fluid with ``y = 0`` at the
tail and ``y = b`` at the head. Each arriving packet of flow i removes a queued packet of flow i with
probability ``1/b`` per packet, so the fluid of flow i thins by ``exp(beta * x_i * t)`` after ``t``
seconds in the queue (``beta = ln(1 - 1/b) < 0``). Solving the ODEs along a packet's path turns the
whole model into four equations in four unknowns ``(b, b0, x1, tau)``, which we solve with MINPACK's
hybrid method (``scipy.optimize.root``) on a transformed, bounded parametrisation, with continuation
in ``x0`` when a direct start fails.

Public functions:

* :func:`solve_choke` - one equilibrium, a :class:`ChokeSolution` (``.converged`` says if it is one).
* :func:`choke_sweep` - many ``x0`` values with continuation, a DataFrame (one row per ``x0``).
* :func:`solve_perfect_choke` - the oracle "Perfect CHOKe" of §2.8 (algebraic, non-leaky queue).
* :func:`choke_min_flows` - the smallest N for which CHOKe stays active (§2.7).
* :func:`large_n_share`, :func:`large_n_share_parametric` - the large-N limit of §2.9.
* :func:`equal_rate_x0` - the UDP rate at which ``x0 = x1`` (the flat ``rho0`` case of Theorem 2).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.integrate import solve_ivp

from ..base.errors import NotConvergedError, ParameterError
from .common import check_choice, check_int, check_real, expit, logit

__all__ = [
    "ChokeParams",
    "ChokeSolution",
    "PerfectChokeSolution",
    "solve_choke",
    "choke_sweep",
    "solve_perfect_choke",
    "choke_min_flows",
    "large_n_share",
    "large_n_share_parametric",
    "equal_rate_x0",
    "ode_profile",
]

#: a solution is accepted when every scaled residual (models.md §2.5) is below this
RESIDUAL_TOL = 1e-9
#: how close b may come to min_th or max_th (as a fraction of the RED range) before we call the
#: equilibrium "outside the linear RED branch" rather than a solution
EDGE_TOL = 1e-7


@dataclass(frozen=True)
class ChokeParams:
    """Parameters of the [TWL] setting; defaults are the paper's.

    N: number of TCP flows; c: capacity (pkt/s); d: round-trip propagation delay (s);
    min_th, max_th: RED thresholds (packets); max_p: RED drop probability at max_th;
    beta_mode: ``exact`` (beta = ln(1 - 1/b), as in the paper) or ``first_order`` (beta = -1/b).
    """

    N: int = 32
    c: float = 125.0
    d: float = 0.1
    min_th: float = 20.0
    max_th: float = 520.0
    max_p: float = 0.5
    beta_mode: str = "exact"

    def __post_init__(self):
        object.__setattr__(self, "N", check_int("N", self.N, ge=1))
        object.__setattr__(self, "c", check_real("c", self.c, gt=0))
        object.__setattr__(self, "d", check_real("d", self.d, ge=0))
        object.__setattr__(self, "min_th", check_real("min_th", self.min_th, ge=0))
        object.__setattr__(self, "max_th", check_real("max_th", self.max_th, gt=self.min_th))
        if self.max_th <= 1:
            raise ParameterError(f"max_th: must be > 1 packet, got {self.max_th:g}")
        object.__setattr__(self, "max_p", check_real("max_p", self.max_p, gt=0, le=1))
        check_choice("beta_mode", self.beta_mode, ("exact", "first_order"))

    @property
    def k(self) -> float:
        """RED slope ``max_p / (max_th - min_th)``."""
        return self.max_p / (self.max_th - self.min_th)

    @property
    def b_lo(self) -> float:
        """Lowest admissible backlog: min_th, but at least 1 packet so that ln(1 - 1/b) exists."""
        return max(self.min_th, 1.0)

    def red(self, b: float) -> float:
        """RED drop probability, equation (1)."""
        if b <= self.min_th:
            return 0.0
        if b >= self.max_th:
            return 1.0
        return self.k * (b - self.min_th)

    def beta(self, b: float) -> float:
        return math.log1p(-1.0 / b) if self.beta_mode == "exact" else -1.0 / b


# ----------------------------------------------------------------------------- core algebra


def _e_int(a: float, t: float) -> float:
    """``(1 - exp(a t)) / (-a)`` for a < 0: the integral of exp(a s) over [0, t]; t when a -> 0."""
    at = a * t
    if abs(at) < 1e-300:
        return t
    return math.expm1(at) / a


@dataclass
class _State:
    b: float
    b0: float
    x1: float
    tau: float
    r: float
    beta: float
    h0: float
    h1: float
    p0: float
    p1: float
    A0: float
    A1: float
    y_head: float
    v_head: float
    b0_head: float
    p1_tcp: float

    def residuals(self, c: float) -> np.ndarray:
        """Scaled residuals R1/b, R2/c, R3/b, R4 of models.md §2.5."""
        return np.array([
            (self.y_head - self.b) / self.b,
            (self.v_head - c) / c,
            (self.b0_head - self.b0) / self.b,
            self.p1 - self.p1_tcp,
        ])


def _state(b: float, b0: float, x1: float, tau: float, x0: float, P: ChokeParams) -> _State:
    N = P.N
    r = P.k * (b - P.min_th)  # linear branch; b is kept inside (min_th, max_th) by the parametrisation
    beta = P.beta(b)
    h0 = b0 / b
    h1 = (b - b0) / (N * b)
    p0 = 2 * h0 + (1 - h0) * r
    p1 = 2 * h1 + (1 - h1) * r
    A0 = x0 * (1 - h0) * (1 - r)
    A1 = x1 * (1 - h1) * (1 - r)
    Y0 = _e_int(beta * x0, tau)
    Y1 = _e_int(beta * x1, tau)
    y_head = A0 * Y0 + N * A1 * Y1
    v_head = A0 * math.exp(beta * x0 * tau) + N * A1 * math.exp(beta * x1 * tau)
    w = x1 * (P.d + tau)  # TCP window in packets
    p1_tcp = 2.0 / (2.0 + w * w)
    return _State(b, b0, x1, tau, r, beta, h0, h1, p0, p1, A0, A1, y_head, v_head, A0 * Y0, p1_tcp)


def _unpack(u, P: ChokeParams):
    lo, hi = P.b_lo, P.max_th
    b = lo + (hi - lo) * expit(u[0])
    b0 = b * expit(u[1])
    return b, b0, math.exp(u[2]), math.exp(u[3])


def _pack(b, b0, x1, tau, P: ChokeParams):
    lo, hi = P.b_lo, P.max_th
    fb = min(max((b - lo) / (hi - lo), 1e-12), 1 - 1e-12)
    f0 = min(max(b0 / b, 1e-15), 1 - 1e-12)
    return np.array([logit(fb), logit(f0), math.log(x1), math.log(tau)])


# ----------------------------------------------------------------------------- solutions

_SCALARS = (
    "b", "b0", "b1", "x1", "tau", "r", "beta", "h0", "h1", "p0", "p1", "A0", "A1",
    "mu0", "mu1", "tcp_share", "udp_throughput", "tcp_throughput", "D0", "D1", "residual",
)


@dataclass
class ChokeSolution:
    """Equilibrium of the [TWL] model for one UDP rate ``x0`` (pkt/s).

    If ``converged`` is False every number is NaN and ``message`` says why; ``last_iterate`` then
    holds the solver's final point for diagnosis. Shares: ``mu0`` (UDP), ``mu1`` (one TCP flow),
    ``tcp_share = N * mu1``. ``D0``/``D1`` are the throughput-balance diagnostics of §2.5 (not solved
    for; they vanish exactly only with ``beta_mode = first_order``).
    """

    x0: float
    params: ChokeParams
    converged: bool
    message: str = ""
    b: float = math.nan
    b0: float = math.nan
    b1: float = math.nan
    x1: float = math.nan
    tau: float = math.nan
    r: float = math.nan
    beta: float = math.nan
    h0: float = math.nan
    h1: float = math.nan
    p0: float = math.nan
    p1: float = math.nan
    A0: float = math.nan
    A1: float = math.nan
    mu0: float = math.nan
    mu1: float = math.nan
    tcp_share: float = math.nan
    udp_throughput: float = math.nan
    tcp_throughput: float = math.nan
    D0: float = math.nan
    D1: float = math.nan
    residual: float = math.nan
    nfev: int = 0
    last_iterate: dict = field(default_factory=dict)

    def require(self) -> "ChokeSolution":
        """Return self if converged, else raise NotConvergedError with the reason."""
        if not self.converged:
            raise NotConvergedError(f"CHOKe model at x0 = {self.x0:g} pkt/s: {self.message}")
        return self

    def as_dict(self) -> dict:
        d = {"x0": self.x0, "x0_over_c": self.x0 / self.params.c, "converged": self.converged,
             "message": self.message}
        d.update({k: getattr(self, k) for k in _SCALARS})
        return d

    # --- profiles along the queue (closed form, models.md §2.4)

    def profile(self, n: int = 201) -> pd.DataFrame:
        """Queue profile at ``n`` instants of a packet's trip, uniformly spaced in time.

        Columns: ``t_s`` (time since admission at the tail), ``y`` (position, 0 = tail, b = head),
        ``v`` (velocity, pkt/s), ``rho0``, ``rho1`` (UDP / one TCP flow's density), ``b0_behind``
        (UDP backlog between the tail and y), ``remaining_delay_s`` (time left to the head).
        """
        self.require()
        t = np.linspace(0.0, self.tau, int(n))
        return self._at_t(t)

    def profile_y(self, y) -> pd.DataFrame:
        """The same profile at given positions ``y`` (packets from the tail, within [0, b])."""
        self.require()
        y = np.asarray(y, dtype=float)
        if np.any(y < -1e-9) or np.any(y > self.b * (1 + 1e-9)):
            raise ParameterError(f"y: positions must lie in [0, b] = [0, {self.b:.6g}]")
        t = self._t_of_y(np.clip(y, 0.0, self.b))
        return self._at_t(t)

    def _at_t(self, t: np.ndarray) -> pd.DataFrame:
        P = self.params
        g0, g1 = self.beta * self.x0, self.beta * self.x1
        u0 = self.A0 * np.exp(g0 * t)
        u1 = self.A1 * np.exp(g1 * t)
        v = u0 + P.N * u1
        Y0 = np.expm1(g0 * t) / g0
        Y1 = np.expm1(g1 * t) / g1 if g1 != 0 else t
        y = self.A0 * Y0 + P.N * self.A1 * Y1
        return pd.DataFrame({
            "t_s": t,
            "y": y,
            "v": v,
            "rho0": u0 / v,
            "rho1": u1 / v,
            "b0_behind": self.A0 * Y0,
            "remaining_delay_s": self.tau - t,
        })

    def _t_of_y(self, y: np.ndarray) -> np.ndarray:
        """Invert y(t) (strictly increasing): interpolation on a dense grid, then Newton (dy/dt = v)."""
        tt = np.linspace(0.0, self.tau, 4001)
        prof = self._at_t(tt)
        t = np.interp(y, prof["y"].to_numpy(), tt)
        for _ in range(3):
            p = self._at_t(t)
            t = np.clip(t - (p["y"].to_numpy() - y) / p["v"].to_numpy(), 0.0, self.tau)
        return t


def _make_solution(x0: float, st: _State, P: ChokeParams, nfev: int) -> ChokeSolution:
    res = st.residuals(P.c)
    mu0 = st.A0 * math.exp(st.beta * x0 * st.tau) / P.c
    mu1 = (1 - mu0) / P.N
    return ChokeSolution(
        x0=x0, params=P, converged=True, message="ok",
        b=st.b, b0=st.b0, b1=(st.b - st.b0) / P.N, x1=st.x1, tau=st.tau, r=st.r, beta=st.beta,
        h0=st.h0, h1=st.h1, p0=st.p0, p1=st.p1, A0=st.A0, A1=st.A1,
        mu0=mu0, mu1=mu1, tcp_share=P.N * mu1, udp_throughput=mu0 * P.c,
        tcp_throughput=P.N * mu1 * P.c,
        D0=x0 * (1 - st.p0) - mu0 * P.c, D1=st.x1 * (1 - st.p1) - mu1 * P.c,
        residual=float(np.max(np.abs(res))), nfev=nfev,
    )


def _failed(x0: float, P: ChokeParams, msg: str, last=None, nfev=0) -> ChokeSolution:
    return ChokeSolution(x0=x0, params=P, converged=False, message=msg, nfev=nfev,
                         last_iterate=last or {})


def _try_root(x0: float, P: ChokeParams, guess, max_nfev: int):
    """One root-finding attempt from ``guess = (b, b0, x1, tau)``: (solution or None, info)."""
    u0 = _pack(*guess, P)

    def fun(u):
        b, b0, x1, tau = _unpack(u, P)
        return _state(b, b0, x1, tau, x0, P).residuals(P.c)

    best = None
    nfev = 0
    for method, opts in (("hybr", {"xtol": 1e-13, "maxfev": max_nfev}),
                         ("lm", {"xtol": 1e-14, "ftol": 1e-14, "maxiter": max_nfev})):
        with np.errstate(all="ignore"):
            try:
                sol = optimize.root(fun, u0, method=method, options=opts)
            except (ValueError, OverflowError, ZeroDivisionError):
                continue
        nfev += int(getattr(sol, "nfev", 0))
        if not np.all(np.isfinite(sol.x)):
            continue
        b, b0, x1, tau = _unpack(sol.x, P)
        st = _state(b, b0, x1, tau, x0, P)
        res = st.residuals(P.c)
        err = float(np.max(np.abs(res))) if np.all(np.isfinite(res)) else math.inf
        if best is None or err < best[1]:
            best = (st, err, sol.x)
        if err < RESIDUAL_TOL:
            break
    if best is None:
        return None, {"error": "solver produced no finite point"}, nfev
    st, err, u = best
    info = {"b": st.b, "b0": st.b0, "x1": st.x1, "tau": st.tau, "max_scaled_residual": err}
    frac = (st.b - P.b_lo) / (P.max_th - P.b_lo)
    if frac < EDGE_TOL or frac > 1 - EDGE_TOL:
        # the solver ran into a threshold: no equilibrium on the linear RED branch from this start
        info["edge"] = "min_th" if frac < 0.5 else "max_th"
        return None, info, nfev
    if err >= RESIDUAL_TOL:
        return None, info, nfev
    return st, info, nfev


def _default_guesses(x0: float, P: ChokeParams):
    """Starting points: the spec's first guess (§2.5), then a few other queue levels."""
    span = P.max_th - P.b_lo
    out = []
    for frac in (0.2, 0.05, 0.5, 0.01, 0.8):
        b = P.b_lo + span * frac
        tau = b / P.c
        r = P.red(b)
        b0 = b * min(x0 / (x0 + P.c), 0.45)
        h1 = (b - b0) / (P.N * b)
        p1 = min(2 * h1 + (1 - h1) * r, 0.999)
        x1_tcp = math.sqrt(max(2 / p1 - 2, 1e-12)) / (P.d + tau)
        for x1 in (P.c / P.N, x1_tcp):
            out.append((b, b0, x1, tau))
    return out


def _failure_message(info: dict, P: ChokeParams) -> str:
    edge = info.get("edge")
    nmin = choke_min_flows(P.c, P.d, P.min_th)
    if edge == "min_th":
        why = (f"with c = {P.c:g}, d = {P.d:g}, min_th = {P.min_th:g} CHOKe stays on only for "
               f"N >= {nmin:.2f} ([TWL] §IV), here N = {P.N}" if P.N < nmin else
               "at this UDP rate the TCP flows alone do not keep the backlog above min_th")
        return (f"no equilibrium with min_th < b < max_th: the backlog falls to min_th, so CHOKe is not "
                f"permanently active and the model does not apply ({why})")
    if edge == "max_th":
        return ("no equilibrium with min_th < b < max_th: the backlog reaches max_th (RED's hard region), "
                "outside the model's linear RED branch; raise max_th or max_p")
    err = info.get("max_scaled_residual")
    extra = f"; best max scaled residual {err:.2e} (tolerance {RESIDUAL_TOL:g})" if err is not None else ""
    hint = f"; note N = {P.N} < {nmin:.2f}, the smallest N for which CHOKe stays active" if P.N < nmin else ""
    return f"root finder did not converge{extra}{hint}"


def solve_choke(x0: float, params: ChokeParams | None = None, *, guess=None, max_nfev: int = 2000,
                continuation: bool = True) -> ChokeSolution:
    """Solve the [TWL] equilibrium for UDP rate ``x0`` (pkt/s).

    ``guess``: optional starting point ``(b, b0, x1, tau)`` (e.g. a neighbouring solution).
    If no start converges and ``continuation`` is on, the solver walks up from ``x0 = 0.05 c``
    in geometric steps, using each solution as the next start. Returns a :class:`ChokeSolution`;
    check ``.converged`` (or call ``.require()``).
    """
    P = params or ChokeParams()
    x0 = check_real("x0", x0, gt=0)
    starts = ([tuple(guess)] if guess is not None else []) + _default_guesses(x0, P)
    info: dict = {}
    nfev = 0
    for g in starts:
        st, info_g, n = _try_root(x0, P, g, max_nfev)
        nfev += n
        if st is not None:
            return _make_solution(x0, st, P, nfev)
        if _rank(info_g) < _rank(info):
            info = info_g
    if continuation:
        x_start = 0.05 * P.c
        if x0 > x_start * 1.0001 or x0 < x_start / 1.0001:
            base = solve_choke(x_start, P, max_nfev=max_nfev, continuation=False)
            if base.converged:
                sol = _walk(base, x0, P, max_nfev)
                if sol.converged:
                    return sol
                if sol.last_iterate:
                    info = sol.last_iterate
    return _failed(x0, P, _failure_message(info, P), info, nfev)


def _rank(info: dict):
    """Which failed attempt explains a failure best: one that hit a threshold, else the closest."""
    if not info:
        return (2, math.inf)
    return (0 if info.get("edge") else 1, info.get("max_scaled_residual", math.inf))


def _guess_of(sol: ChokeSolution):
    return (sol.b, sol.b0, sol.x1, sol.tau)


def _walk(sol: ChokeSolution, x_target: float, P: ChokeParams, max_nfev: int, depth: int = 0) -> ChokeSolution:
    """Continuation from a solved point to ``x_target``, halving the step (in log x0) on failure."""
    st, info, n = _try_root(x_target, P, _guess_of(sol), max_nfev)
    if st is not None:
        return _make_solution(x_target, st, P, n)
    if depth >= 12:
        return _failed(x_target, P, _failure_message(info, P), info, n)
    x_mid = math.sqrt(sol.x0 * x_target)
    mid = _walk(sol, x_mid, P, max_nfev, depth + 1)
    if not mid.converged:
        return _failed(x_target, P, mid.message, mid.last_iterate, n)
    return _walk(mid, x_target, P, max_nfev, depth + 1)


def choke_sweep(x0_values, params: ChokeParams | None = None, *, perfect: bool = False,
                max_nfev: int = 2000) -> pd.DataFrame:
    """Solve for every ``x0`` (pkt/s), by continuation from the smallest; one row per x0.

    Columns: ``x0``, ``x0_over_c``, ``converged``, ``message`` and the scalars of
    :class:`ChokeSolution` (``b``, ``b0``, ``x1``, ``tau``, ``mu0``, ``tcp_share``, ...). Rows that
    did not converge have NaN numbers and say why in ``message``. With ``perfect=True`` the columns
    ``mu0_perfect`` and ``b_perfect`` add the Perfect-CHOKe oracle of §2.8 for comparison.
    The row order is that of ``x0_values``.
    """
    P = params or ChokeParams()
    xs = [check_real("x0", x, gt=0) for x in np.atleast_1d(np.asarray(x0_values, dtype=float))]
    if not xs:
        raise ParameterError("x0: give at least one UDP rate")
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    sols: dict[int, ChokeSolution] = {}
    prev: ChokeSolution | None = None
    for i in order:
        x = xs[i]
        s = None
        if prev is not None:
            s = _walk(prev, x, P, max_nfev)
        if s is None or not s.converged:
            s = solve_choke(x, P, max_nfev=max_nfev)
        sols[i] = s
        if s.converged:
            prev = s
    rows = [sols[i].as_dict() for i in range(len(xs))]
    df = pd.DataFrame(rows)
    df.insert(2, "N", P.N)
    if perfect:
        ps = [solve_perfect_choke(x, P) for x in xs]
        df["mu0_perfect"] = [p.mu0 for p in ps]
        df["b_perfect"] = [p.b for p in ps]
    return df


# ----------------------------------------------------------------------------- ODE cross-check


def ode_profile(sol: ChokeSolution, rtol: float = 1e-10, atol: float = 1e-12, y_eval=None) -> dict:
    """Integrate the ODEs (15)-(16) from the tail (y = 0) to the head (y = b) numerically.

    Starts from the boundary values at the tail and integrates ``v``, ``rho0``, the delay
    ``int 1/v dy`` and the UDP backlog ``int rho0 dy``. Returns the values at the head
    (``v_head``, ``rho0_head``, ``tau``, ``b0``) and, if ``y_eval`` is given, the profile there.
    A cross-check of the closed form of §2.4 (they agree to ~1e-8).
    """
    sol.require()
    P = sol.params
    x0, x1, beta, N = sol.x0, sol.x1, sol.beta, P.N
    v_tail = sol.A0 + N * sol.A1
    rho_tail = sol.A0 / v_tail

    def rhs(_y, z):
        v, rho0 = z[0], z[1]
        dv = beta * (rho0 * (x0 - x1) + x1)
        drho = beta * (x0 - x1) * rho0 * (1 - rho0) / v
        return [dv, drho, 1.0 / v, rho0]

    def hits_zero(_y, z):
        return z[0]

    hits_zero.terminal = True
    out = solve_ivp(rhs, (0.0, sol.b), [v_tail, rho_tail, 0.0, 0.0], method="DOP853", rtol=rtol,
                    atol=atol, events=hits_zero, t_eval=y_eval, dense_output=False)
    if out.status != 0:
        return {"ok": False, "message": out.message}
    zb = out.y[:, -1] if y_eval is None else None
    if y_eval is not None:
        full = solve_ivp(rhs, (0.0, sol.b), [v_tail, rho_tail, 0.0, 0.0], method="DOP853",
                         rtol=rtol, atol=atol)
        zb = full.y[:, -1]
    res = {"ok": True, "v_head": zb[0], "rho0_head": zb[1], "tau": zb[2], "b0": zb[3]}
    if y_eval is not None:
        res["profile"] = pd.DataFrame({"y": out.t, "v": out.y[0], "rho0": out.y[1]})
    return res


# ----------------------------------------------------------------------------- Perfect CHOKe (§2.8)


@dataclass
class PerfectChokeSolution:
    """Equilibrium under the Perfect-CHOKe oracle (no in-queue drops, so shares = backlog shares)."""

    x0: float
    params: ChokeParams
    converged: bool
    message: str = ""
    b: float = math.nan
    r: float = math.nan
    mu0: float = math.nan
    mu1: float = math.nan
    x1: float = math.nan
    p1: float = math.nan
    tau: float = math.nan

    def require(self):
        if not self.converged:
            raise NotConvergedError(f"Perfect-CHOKe model at x0 = {self.x0:g} pkt/s: {self.message}")
        return self

    def as_dict(self):
        d = asdict(self)
        d.pop("params")
        return d


def solve_perfect_choke(x0: float, params: ChokeParams | None = None) -> PerfectChokeSolution:
    """Perfect CHOKe ([TWL] §IV): a one-dimensional root in the backlog ``b``.

    For a trial ``b``: RED gives ``r``; the UDP balance ``x0 (1 - 2 h0)(1 - r) = h0 c`` gives the UDP
    share ``h0``; the TCP flows share the rest, ``h1 = (1 - h0)/N``, lose ``p1 = 2 h1 + (1 - 2 h1) r``
    and send ``x1 = h1 c / (1 - p1)``; the residual is the TCP equilibrium (4) with ``tau = b/c``.
    """
    P = params or ChokeParams()
    x0 = check_real("x0", x0, gt=0)

    def parts(b):
        r = P.k * (b - P.min_th)
        h0 = x0 * (1 - r) / (P.c + 2 * x0 * (1 - r))
        h1 = (1 - h0) / P.N
        p1 = 2 * h1 + (1 - 2 * h1) * r
        x1 = h1 * P.c / (1 - p1) if p1 < 1 else math.inf
        tau = b / P.c
        return r, h0, h1, p1, x1, tau

    def F(b):
        r, h0, h1, p1, x1, tau = parts(b)
        return p1 - 2.0 / (2.0 + (x1 * (P.d + tau)) ** 2)

    lo, hi = max(P.min_th, 1e-9) * (1 + 1e-12) + 1e-12, P.max_th * (1 - 1e-12)
    grid = np.linspace(lo, hi, 400)
    vals = np.array([F(b) for b in grid])
    idx = np.nonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) <= 0)[0]
    if len(idx) == 0:
        where = "min_th" if vals[0] > 0 else "max_th"
        return PerfectChokeSolution(x0, P, False, f"no equilibrium with min_th < b < max_th (the backlog "
                                                   f"would sit at or beyond {where})")
    i = int(idx[0])
    b = optimize.brentq(F, grid[i], grid[i + 1], xtol=1e-13, rtol=1e-14)
    r, h0, h1, p1, x1, tau = parts(b)
    return PerfectChokeSolution(x0, P, True, "ok", b=b, r=r, mu0=h0, mu1=h1, x1=x1, p1=p1, tau=tau)


# ----------------------------------------------------------------------------- closed forms


def choke_min_flows(c: float, d: float, min_th: float) -> float:
    """Smallest N for which CHOKe stays active ([TWL] §IV).

    The real root of ``N^3 - N^2 - (c d + min_th)^2 / 2 = 0``; about 8.43 for the paper's
    ``c = 125, d = 0.1, min_th = 20``.
    """
    K = (c * d + min_th) ** 2 / 2.0
    f = lambda n: n ** 3 - n ** 2 - K  # noqa: E731  (increasing for n >= 2/3, f(1) = -K <= 0)
    hi = 2.0
    while f(hi) < 0:
        hi *= 2
    return optimize.brentq(f, 1.0, hi, xtol=1e-13)


def large_n_share(s: float, r: float = 0.0) -> float:
    """UDP share ``mu0`` in the large-N limit of §2.9 for ``s = x0 / c`` and RED probability ``r``.

    Solves ``(1-r)(s+mu)/(2-r) - mu + (1-mu) ln((1-r)(s+mu)/((2-r) mu)) = s`` for ``mu`` in (0, 1).
    """
    s = check_real("s", s, gt=0)
    r = check_real("r", r, ge=0, lt=1)
    a = (1 - r) / (2 - r)

    def G(u):  # in terms of u = ln mu, so that tiny shares (large s) are found to full precision
        mu = math.exp(u)
        return a * (s + mu) - mu + (1 - mu) * (math.log(a * (s + mu)) - u) - s

    lo = -740.0
    if G(lo) <= 0:  # the share is below the smallest double (s of order 1500 and more)
        return 0.0
    return math.exp(optimize.brentq(G, lo, 0.0, xtol=1e-15, rtol=1e-15, maxiter=500))


def large_n_share_parametric(z):
    """The r = 0 large-N curve in parametric form (z > 1): returns ``(s, mu0)``.

    ``mu0 = ln z / (z + ln z)``, ``s = mu0 (2 z - 1)``; the share peaks at ``1/(e+1)`` when ``z = e``.
    """
    z = np.asarray(z, dtype=float)
    if np.any(z <= 1):
        raise ParameterError("z: must be > 1")
    lz = np.log(z)
    mu = lz / (z + lz)
    return mu * (2 * z - 1), mu


def equal_rate_x0(params: ChokeParams | None = None, lo: float | None = None,
                  hi: float | None = None) -> ChokeSolution:
    """The equilibrium at which the UDP rate equals a TCP flow's sending rate (``x0 = x1``).

    There ``rho0(y)`` is flat (Theorem 2.3). Found with Brent's method on ``x0 - x1(x0)``.
    """
    P = params or ChokeParams()
    lo = lo if lo is not None else 0.05 * P.c / P.N
    hi = hi if hi is not None else 20 * P.c / P.N
    cache: dict = {"prev": None}

    def f(x):
        g = _guess_of(cache["prev"]) if cache["prev"] is not None else None
        s = solve_choke(x, P, guess=g)
        s.require()
        cache["prev"] = s
        return x - s.x1

    flo, fhi = f(lo), f(hi)
    if flo * fhi > 0:
        raise NotConvergedError(f"x0 = x1 not bracketed in [{lo:g}, {hi:g}] pkt/s")
    x = optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-15)
    return solve_choke(x, P, guess=_guess_of(cache["prev"])).require()
