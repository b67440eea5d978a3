"""Model curves to draw over simulation results (the models of python/aqmlab/models/).

A figure asks for one with ``model = { name = "...", params = {...}, y = { "<run column>" =
"<model column>" } }``. Each function here takes the figure's x values (in the units of its x axis)
and the params, and returns a DataFrame with an ``x`` column and model columns. The x axis must be
the one the model's ``x`` parameter names:

=================  =================================================================  ===========
name               model (models.md)                                                  columns
=================  =================================================================  ===========
``choke``          [TWL] CHOKe fluid model (§2); x = UDP rate, ``x_unit`` =          ``b``, ``mu0``,
                   ``"x0/c"`` (default) or ``"kb/s"``; params of ``ChokeParams``       ``tcp_share``,
                   plus ``packet_size`` (bytes, 1000). With ``x = "N"``: x = the      ``udp_throughput_bps``,
                   number of TCP flows at the fixed UDP rate ``x0`` (in ``x_unit``)    ``tcp_throughput_bps``,
                                                                                       ``tcp_throughput_per_flow_bps``
``perfect_choke``  Perfect CHOKe (§2.8), same x and params                            ``b``, ``mu0``,
                                                                                       ``udp_throughput_bps``
``ward``           the WARD reference curve ``s·exp(−2s)`` (§5, qualitative);         ``mu0``,
                   x = UDP rate in kb/s, ``capacity_kbps`` (1000)                     ``udp_throughput_bps``,
                                                                                       ``udp_drop_pct``
``chokew``         CHOKeW steady state (§3), solved for p0 at each x; ``classes`` =   ``p0``,
                   ``[{name, n, weight, rtt | rate_pps}]`` where ``n`` may be a       ``class.<name>.throughput_bps``,
                   ``${...}`` template of the x axis; ``capacity`` (pkt/s, 125),      ``class.<name>.throughput_per_flow_bps``,
                   ``queue`` (packets, 150), ``packet_size`` (1000)                   ``utilisation``
=================  =================================================================  ===========
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..sweep import SweepError, expand
from .stats import SpecError

MODELS = ("choke", "perfect_choke", "ward", "chokew")


def _grid(xs, dense: int, log: bool):
    xs = np.asarray(sorted(set(float(x) for x in xs)), dtype=float)
    if dense and len(xs) >= 2:
        lo, hi = xs.min(), xs.max()
        g = np.geomspace(lo, hi, dense) if log and lo > 0 else np.linspace(lo, hi, dense)
        xs = np.unique(np.concatenate([xs, g]))
    return xs


def _choke_params(params: dict):
    from ..models import ChokeParams

    keys = {"N", "c", "d", "min_th", "max_th", "max_p", "beta_mode"}
    return ChokeParams(**{k: v for k, v in params.items() if k in keys})


def _x0(x, params, P):
    unit = params.get("x_unit", "x0/c")
    if unit == "x0/c":
        return x * P.c
    if unit == "kb/s":
        return x * 1e3 / (8 * params.get("packet_size", 1000))
    raise SpecError(f"model.params.x_unit: {unit!r}; one of x0/c, kb/s")


def choke(xs, params: dict, log: bool = True) -> pd.DataFrame:
    from ..models import choke_sweep

    P = _choke_params(params)
    cbps = P.c * 8 * params.get("packet_size", 1000)
    if params.get("x") == "N":
        return _choke_over_n(xs, params, P, cbps)
    grid = _grid(xs, 60, log)
    df = choke_sweep(_x0(grid, params, P), P)
    return pd.DataFrame({"x": grid, "b": df["b"].to_numpy(), "mu0": df["mu0"].to_numpy(),
                         "tcp_share": df["tcp_share"].to_numpy(),
                         "udp_throughput_bps": df["mu0"].to_numpy() * cbps,
                         "tcp_throughput_bps": df["tcp_share"].to_numpy() * cbps})


def _choke_over_n(xs, params: dict, P, cbps: float) -> pd.DataFrame:
    """The [TWL] model against the number of TCP flows (x = N, an integer) at a fixed UDP rate
    ``x0`` (in ``x_unit``, default x0/c); N below the root of §2.7's condition has no equilibrium
    with CHOKe always on, and its row is NaN when the solver finds none."""
    from dataclasses import replace

    from ..models import solve_choke

    if "x0" not in params:
        raise SpecError("model.params.x0: the UDP rate is needed when x = \"N\"")
    x0 = float(_x0(np.asarray([float(params["x0"])]), params, P)[0])
    rows = []
    for n in sorted({int(round(float(x))) for x in xs}):
        s = solve_choke(x0, replace(P, N=n))
        ok = s.converged
        mu0 = s.mu0 if ok else math.nan
        tcp = s.tcp_share if ok else math.nan
        rows.append({"x": float(n), "b": s.b if ok else math.nan, "mu0": mu0, "tcp_share": tcp,
                     "udp_throughput_bps": mu0 * cbps, "tcp_throughput_bps": tcp * cbps,
                     "tcp_throughput_per_flow_bps": tcp * cbps / n})
    return pd.DataFrame(rows)


def perfect_choke(xs, params: dict, log: bool = True) -> pd.DataFrame:
    from ..models import solve_perfect_choke

    P = _choke_params(params)
    cbps = P.c * 8 * params.get("packet_size", 1000)
    grid = _grid(xs, 60, log)
    sols = [solve_perfect_choke(float(x0), P) for x0 in _x0(grid, params, P)]
    mu0 = np.array([s.mu0 for s in sols])
    return pd.DataFrame({"x": grid, "b": [s.b for s in sols], "mu0": mu0, "udp_throughput_bps": mu0 * cbps})


def ward(xs, params: dict, log: bool = True) -> pd.DataFrame:
    from ..models.ward import reference_share

    cap = float(params.get("capacity_kbps", 1000.0))
    grid = _grid(xs, 80, log)
    s = grid / cap
    mu0 = reference_share(s)
    return pd.DataFrame({"x": grid, "mu0": mu0, "udp_throughput_bps": mu0 * cap * 1e3,
                         "udp_drop_pct": 100.0 * (1.0 - np.exp(-2.0 * s))})


def chokew(xs, params: dict, log: bool = False, xname: str = "x") -> pd.DataFrame:
    from ..models import ChokewParams, FlowClass, solve_chokew

    P = ChokewParams(capacity=float(params.get("capacity", 125.0)), queue=float(params.get("queue", 150.0)))
    pkt_bits = 8 * float(params.get("packet_size", 1000))
    rows = []
    for x in sorted(set(xs)):
        env = {xname: x, "x": x}
        classes = []
        for c in params.get("classes", []):
            try:
                n = int(float(expand(str(c["n"]), env)))
            except (SweepError, KeyError, ValueError) as e:
                raise SpecError(f"model.params.classes: {e}")
            if n < 1:
                continue
            classes.append(FlowClass(c["name"], n=n, weight=float(c.get("weight", 1.0)),
                                     rtt=c.get("rtt"), rate=c.get("rate_pps")))
        sol = solve_chokew(classes, P)
        row = {"x": x, "p0": sol.p0 if sol.converged else math.nan,
               "utilisation": sol.utilisation if sol.converged else math.nan}
        if sol.converged:
            for _, r in sol.classes.iterrows():
                row[f"class.{r['class']}.throughput_bps"] = r["class_throughput_pps"] * pkt_bits
                row[f"class.{r['class']}.throughput_per_flow_bps"] = r["throughput_pps"] * pkt_bits
        rows.append(row)
    return pd.DataFrame(rows)


def evaluate(spec: dict, xs, log: bool, xname: str) -> pd.DataFrame:
    name = spec.get("name")
    params = dict(spec.get("params", {}))
    if name == "choke":
        return choke(xs, params, log)
    if name == "perfect_choke":
        return perfect_choke(xs, params, log)
    if name == "ward":
        return ward(xs, params, log)
    if name == "chokew":
        return chokew(xs, params, log, xname)
    raise SpecError(f"model.name: {name!r}; one of {', '.join(MODELS)}")
