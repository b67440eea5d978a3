"""Figures for the models, optionally with simulation results overlaid.

Uses matplotlib's object API with the Agg canvas (no pyplot, no global backend change), so it works
without a display and does not disturb a notebook's own settings. Every function returns a
:class:`matplotlib.figure.Figure`; :func:`save_figure` writes it as PNG, SVG or PDF by extension.
Model curves are lines, simulation results are markers.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..base.errors import ModelError, ParameterError

__all__ = [
    "save_figure",
    "plot_choke_sweep",
    "plot_choke_profile",
    "plot_chokew",
    "plot_chokew_p0_sweep",
    "plot_raqm",
    "plot_ward",
]

_RC = {
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "lines.linewidth": 1.4,
    "lines.markersize": 4.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.bbox": "tight",
}
MODEL_COLOR = "#1f4e99"
SIM_COLOR = "#c0392b"
ALT_COLOR = "#2e8b57"
GREY = "#666666"
SUFFIXES = {".png": "png", ".svg": "svg", ".pdf": "pdf"}


def _with_rc(fn):
    """Run a plotting function inside our rc settings (text picks its style up when created)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import matplotlib as mpl

        with mpl.rc_context(_RC):
            return fn(*args, **kwargs)

    return wrapper


def _figure(ncols: int, width: float = 7.0, height: float = 2.6, nrows: int = 1):
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    return fig, axes


def save_figure(fig: Figure, path) -> Path:
    """Write ``fig`` to ``path``; the extension (.png, .svg, .pdf) selects the format."""
    p = Path(path)
    fmt = SUFFIXES.get(p.suffix.lower())
    if fmt is None:
        raise ParameterError(f"--plot {p}: unknown file type '{p.suffix or '(none)'}'; use .png, .svg or .pdf")
    if not p.parent.exists():
        raise ParameterError(f"--plot {p}: directory {p.parent} does not exist")
    import matplotlib as mpl

    try:
        with mpl.rc_context(_RC):
            fig.savefig(p, format=fmt, dpi=300, bbox_inches="tight")
    except OSError as e:
        raise ModelError(f"--plot {p}: cannot write: {e.strerror or e}")
    return p


def _panel_label(ax, text):
    ax.set_title(text, loc="left")


# ----------------------------------------------------------------------------- CHOKe


@_with_rc
def plot_choke_sweep(model: pd.DataFrame, sim: pd.DataFrame | None = None, marks=None) -> Figure:
    """Three panels against ``x0/c``: backlog ``b``, UDP share ``mu0``, TCP share ``N mu1``.

    ``model`` is a :func:`choke_sweep` table (``mu0_perfect`` is drawn if present); ``sim`` a
    :func:`runs.sweep_points` table (``s``, ``queue_mean``, ``udp_share``, ``tcp_share``).
    ``marks``: x0/c values whose model UDP share is marked (the rates of the profile figure).
    """
    m = model[model["converged"]].sort_values("x0_over_c")
    fig, ax = _figure(3, width=7.2, height=2.5)
    N = int(model["N"].iloc[0]) if "N" in model else None
    s = m["x0_over_c"]
    ax[0].plot(s, m["b"], color=MODEL_COLOR, label="model")
    ax[1].plot(s, m["mu0"], color=MODEL_COLOR, label="CHOKe model")
    if "mu0_perfect" in m and m["mu0_perfect"].notna().any():
        ax[1].plot(s, m["mu0_perfect"], color=ALT_COLOR, ls="--", label="Perfect CHOKe model")
    ax[2].plot(s, m["tcp_share"], color=MODEL_COLOR, label="model")
    if marks is not None:
        for x in marks:
            sel = (m["x0_over_c"] - x).abs()
            if len(sel) and sel.min() < 1e-9 * max(x, 1):
                ax[1].plot([x], [m.loc[sel.idxmin(), "mu0"]], "o", mfc="none", color=MODEL_COLOR)
    if sim is not None and len(sim):
        ax[0].plot(sim["s"], sim["queue_mean"], "o", color=SIM_COLOR, label="simulation")
        ax[1].plot(sim["s"], sim["udp_share"], "o", color=SIM_COLOR, label="simulation")
        ax[2].plot(sim["s"], sim["tcp_share"], "o", color=SIM_COLOR, label="simulation")
    labels = ["(a) mean backlog", "(b) UDP bandwidth share", f"(c) TCP share{f' ({N} flows)' if N else ''}"]
    ylabels = ["backlog b (packets)", r"UDP share $\mu_0$", r"TCP share $N\mu_1$"]
    for a, t, yl in zip(ax, labels, ylabels):
        a.set_xscale("log")
        a.set_xlabel(r"UDP rate $x_0/c$")
        a.set_ylabel(yl)
        _panel_label(a, t)
    ax[1].set_ylim(bottom=0)
    ax[2].set_ylim(top=1.0)
    ax[1].legend(loc="best", frameon=False)
    if sim is not None and len(sim):
        ax[0].legend(loc="best", frameon=False)
    return fig


@_with_rc
def plot_choke_profile(solutions, sim: dict | None = None, n: int = 301) -> Figure:
    """Two panels over the queue position ``y`` (0 = tail): ``rho0(y)`` and ``v(y)/c``.

    ``solutions``: converged :class:`ChokeSolution` objects (one curve each). ``sim``: optional
    ``{x0: DataFrame(y, rho_udp)}`` from :func:`runs.spatial_distribution`, drawn in the colour of the
    solution with the same ``x0``.
    """
    sols = [s for s in solutions if s.converged]
    if not sols:
        raise ModelError("nothing to plot: no converged solution")
    fig, ax = _figure(2, width=6.4, height=2.6)
    cmap = _colors(len(sols))
    sim = sim or {}
    for col, s in zip(cmap, sols):
        pr = s.profile(n)
        lab = f"$x_0 = {s.x0 / s.params.c:.3g}c$"
        ax[0].plot(pr["y"], pr["rho0"], color=col, label=f"model, {lab}" if sim else lab)
        ax[1].plot(pr["y"], pr["v"] / s.params.c, color=col, label=lab)
        key = min(sim, key=lambda k: abs(k - s.x0), default=None)
        # a run's UDP rate is measured (bytes sent over the window), so match within 1 %
        if key is not None and abs(key - s.x0) <= 0.01 * max(s.x0, 1e-9):
            d = sim[key]
            step = max(1, len(d) // 40)
            ax[0].plot(d["y"].iloc[::step], d["rho_udp"].iloc[::step], "o", ms=3, color=col, mfc="none",
                       label=f"simulation, {lab}")
    ax[0].set_xlabel("queue position y (packets from the tail)")
    ax[0].set_ylabel(r"UDP fraction $\rho_0(y)$")
    _panel_label(ax[0], "(a) spatial distribution of UDP packets")
    ax[0].set_ylim(bottom=0)
    ax[1].set_xlabel("queue position y (packets from the tail)")
    ax[1].set_ylabel(r"velocity $v(y)/c$")
    _panel_label(ax[1], "(b) packet velocity")
    ax[1].axhline(1.0, color=GREY, lw=0.6, ls=":")
    ax[0].legend(loc="best", frameon=False)
    return fig


def _colors(n):
    import matplotlib as mpl

    cm = mpl.colormaps["viridis"]
    return [cm(v) for v in np.linspace(0.05, 0.85, max(n, 1))][:n] if n > 1 else [MODEL_COLOR]


# ----------------------------------------------------------------------------- CHOKeW


@_with_rc
def plot_chokew(sol, sim: pd.DataFrame | None = None) -> Figure:
    """Per-class bars: (a) per-flow throughput share, model vs simulation; (b) drop probability q
    against the starvation level q = 1. ``sim`` columns: ``class``, ``throughput_share``."""
    sol.require()
    df = sol.classes
    fig, ax = _figure(2, width=6.6, height=2.6)
    x = np.arange(len(df))
    w = 0.38 if sim is not None else 0.6
    ax[0].bar(x - (w / 2 if sim is not None else 0), df["throughput_share"], w, color=MODEL_COLOR, label="model")
    if sim is not None:
        simv = df["class"].map(dict(zip(sim["class"], sim["throughput_share"])))
        ax[0].bar(x + w / 2, simv, w, color=SIM_COLOR, label="simulation")
    ax[0].set_xticks(x, [f"{c}\n(w={wt:g})" for c, wt in zip(df["class"], df["weight"])])
    ax[0].set_ylabel("per-flow throughput / capacity")
    _panel_label(ax[0], f"(a) per-flow share, $p_0$ = {sol.p0:.3g}")
    ax[0].legend(loc="best", frameon=False)
    ax[1].bar(x, df["q"], 0.6, color=[SIM_COLOR if s else MODEL_COLOR for s in df["starved"]])
    ax[1].axhline(1.0, color=GREY, ls="--", lw=0.8, label="starvation (q = 1)")
    if df["starved"].any():
        ax[1].bar([], [], color=SIM_COLOR, label="starved: outside the model")
    ax[1].set_xticks(x, list(df["class"]))
    ax[1].set_ylabel("drop probability q")
    _panel_label(ax[1], "(b) drop probability")
    ax[1].legend(loc="best", frameon=False)
    return fig


@_with_rc
def plot_chokew_p0_sweep(sweep: pd.DataFrame) -> Figure:
    """(a) per-flow throughput share of each class and (b) utilisation against ``p0``."""
    fig, ax = _figure(2, width=6.6, height=2.6)
    cols = _colors(sweep["class"].nunique())
    for col, (name, g) in zip(cols, sweep.groupby("class", sort=False)):
        ax[0].plot(g["p0"], g["throughput_share"], color=col, label=f"{name} (w={g['weight'].iloc[0]:g})")
    ax[0].set_xscale("log")
    ax[0].set_xlabel(r"basic drawing factor $p_0$")
    ax[0].set_ylabel("per-flow throughput / capacity")
    _panel_label(ax[0], "(a) per-flow share")
    ax[0].legend(loc="best", frameon=False)
    u = sweep.drop_duplicates("p0")
    ax[1].plot(u["p0"], u["utilisation"], color=MODEL_COLOR)
    ax[1].axhline(1.0, color=GREY, ls="--", lw=0.8, label="capacity")
    ax[1].set_xscale("log")
    ax[1].set_yscale("log")
    ax[1].set_xlabel(r"basic drawing factor $p_0$")
    ax[1].set_ylabel("offered throughput / capacity")
    _panel_label(ax[1], "(b) total throughput")
    ax[1].legend(loc="best", frameon=False)
    return fig


# ----------------------------------------------------------------------------- RAQM


@_with_rc
def plot_raqm(trajectories, gain_line: float | None = None) -> Figure:
    """(a) the design constant c(x) with the static gain m (if given) and its unstable band;
    (b) the normalised rate x_k = r_k / r0 per period; (c) the Lyapunov function V_k / r0^2."""
    from .raqm import c_of_x, unstable_band

    fig, ax = _figure(3, width=7.4, height=2.5)
    xx = np.linspace(0.02, 1.98, 400)
    ax[0].plot(xx, c_of_x(xx), color=MODEL_COLOR, label=r"$c(x) = \hat\alpha r_0$")
    ax[0].axhline(4.0, color=GREY, ls=":", lw=0.8)
    if gain_line is not None:
        ax[0].axhline(gain_line, color=SIM_COLOR, ls="--", lw=1.0, label=f"static m = {gain_line:g}")
        band = unstable_band(gain_line)
        if band:
            ax[0].axvspan(*band, color=SIM_COLOR, alpha=0.12, lw=0, label=r"$\alpha \geq \hat\alpha$")
    ax[0].set_ylim(0, 12)
    ax[0].set_xlabel(r"$x = r_k / r_0$")
    ax[0].set_ylabel(r"$\hat\alpha\, r_0$")
    _panel_label(ax[0], "(a) stability bound")
    ax[0].legend(loc="upper center", frameon=False)
    cols = _colors(len(trajectories))
    k_show = 40  # the first periods show the character of each trajectory; (c) shows them all
    for col, t in zip(cols, trajectories):
        st = t.steps
        lab = (f"m = {t.gain:g}" if t.mode == "static" else rf"$\varepsilon$ = {t.gain:g}") + f" ({t.outcome})"
        head = st[st["k"] <= k_show]
        ax[1].plot(head["k"], head["x"], "-o", ms=2.2, lw=0.8, color=col, label=lab)
        v = st["V"] / t.r0 ** 2
        ax[2].plot(st["k"], np.where(v > 0, v, np.nan), "-", lw=1.0, color=col, label=lab)
    ax[1].axhline(1.0, color=GREY, ls=":", lw=0.8)
    ax[1].set_xlabel("period k")
    ax[1].set_ylabel(r"$x_k = r_k / r_0$")
    _panel_label(ax[1], f"(b) input rate (first {k_show} periods)")
    ax[2].set_yscale("log")
    ax[2].set_xlabel("period k")
    ax[2].set_ylabel(r"$V_k / r_0^2 = (x_k - 1)^2$")
    _panel_label(ax[2], "(c) Lyapunov function")
    ax[2].legend(loc="center right", frameon=False)
    return fig


# ----------------------------------------------------------------------------- WARD


@_with_rc
def plot_ward(curve: pd.DataFrame, sim: pd.DataFrame | None = None) -> Figure:
    """UDP share against ``s = x0/c``: the WARD reference curve, the large-N CHOKe curve, the stated
    WARD peak 1/(2e), and simulation points (``s``, ``udp_share``) if given."""
    from .ward import PEAK_S, PEAK_SHARE

    fig, ax = _figure(1, width=4.2, height=2.9)
    a = ax[0]
    a.plot(curve["s"], curve["mu0_reference"], color=MODEL_COLOR,
           label=r"WARD reference $s\,e^{-2s}$ (reconstruction)")
    a.plot(curve["s"], curve["mu0_choke_large_n"], color=ALT_COLOR, ls="--", label=r"CHOKe, large-N limit")
    a.axhline(PEAK_SHARE, color=GREY, ls=":", lw=0.8)
    a.annotate(r"$1/(2e)$", (curve["s"].min(), PEAK_SHARE), textcoords="offset points", xytext=(2, 3),
               fontsize=7.5, color=GREY)
    a.plot([PEAK_S], [PEAK_SHARE], "o", mfc="none", color=MODEL_COLOR)
    if sim is not None and len(sim):
        a.plot(sim["s"], sim["udp_share"], "o", color=SIM_COLOR, label="simulation")
    a.set_xscale("log")
    a.set_ylim(bottom=0)
    a.set_xlabel(r"UDP rate $s = x_0 / c$")
    a.set_ylabel(r"UDP bandwidth share $\mu_0$")
    a.legend(loc="upper left", frameon=False)
    return fig

