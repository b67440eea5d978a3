"""What every figure kind shares in how it marks its data: one look (colour and marker) per series
across the panels of a figure, the plotted data kept and written beside the figure as CSV, metrics
grouped by unit onto axes with one label each, and log axes labelled at the swept values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .context import Context

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


def style_of(fig, label: str) -> tuple[str, str]:
    """The colour and marker of a series, by its label: the same series has the same look in every
    panel of a figure."""
    reg = fig.__dict__.setdefault("_aqmlab_looks", {})
    if label not in reg:
        i = len(reg)
        reg[label] = (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)])
    return reg[label]


def record(fig, **cols) -> None:
    """Keep what a figure plots (columns of equal length; scalars repeated), written beside it as
    ``<name>.csv`` by :func:`_finish`."""
    n = max((len(v) for v in cols.values() if isinstance(v, (list, tuple, np.ndarray, pd.Series))), default=1)
    frame = {k: (np.asarray(v) if isinstance(v, (list, tuple, np.ndarray, pd.Series)) else [v] * n)
             for k, v in cols.items() if v is not None}
    fig.__dict__.setdefault("_aqmlab_data", []).append(pd.DataFrame(frame))


def bounds_cols(tab: pd.DataFrame, col: str, scale: float) -> dict:
    """The interval of a summarised column as record columns (``lo``, ``hi``, ``n``)."""
    out = {}
    if f"{col}_lo" in tab.columns:
        out["lo"] = tab[f"{col}_lo"].to_numpy(dtype=float) * scale
        out["hi"] = tab[f"{col}_hi"].to_numpy(dtype=float) * scale
        out["n"] = tab[f"{col}_n"].to_numpy()
    return out


def unit_groups(ys: list) -> list[list]:
    """Metrics drawn on one axis share a unit: rates in one rate unit, times in one time unit (the
    first metric's); then the metrics grouped by unit, in order (each group gets its own axis)."""
    from .stats import RATE_UNITS as _RATE
    from .stats import TIME_UNITS as _TIME
    from .stats import Metric, auto_scale

    first = {}
    out = []
    for m in ys:
        for table in (_RATE, _TIME):
            if m.unit in table:
                u = first.setdefault(id(table), m.unit)
                if u != m.unit and m.col.endswith(("_bps", "_s")):
                    m = Metric(m.col, m.label, u, auto_scale(m.col, u))
        out.append(m)
    groups: dict = {}
    for m in out:
        groups.setdefault(m.unit, []).append(m)
    return list(groups.values())


def y_label(ms: list) -> str:
    """The label of an axis showing the metrics ``ms`` (one unit): the metric's own label, or the
    labels joined when they are short, with the unit."""
    if len(ms) == 1:
        return ms[0].axis_label
    words = [m.label.split() for m in ms]
    common = []  # the words all labels end with ("UDP bandwidth share", "TCP bandwidth share")
    while all(len(w) > len(common) for w in words) and len({w[-1 - len(common)] for w in words}) == 1:
        common.insert(0, words[0][-1 - len(common)])
    text = ", ".join(m.label for m in ms)
    if common and (len(text) > 32 or len(common) > 1):
        text = " ".join(common)
    elif len(text) > 32:
        text = {"kb/s": "rate", "Mb/s": "rate", "Gb/s": "rate", "b/s": "rate", "s": "time", "ms": "time",
                "us": "time", "packets": "packets", "bytes": "bytes", "%": "percentage"}.get(ms[0].unit, "value")
    return f"{text} ({ms[0].unit})" if ms[0].unit else text


def data_file(fig, ctx: Context, spec: dict, xlabel: str | None = None) -> list[Path]:
    """``<name>.csv`` beside the figure: every plotted point (panel, series, metric, x — named by
    the x axis' label —, y, and the interval ``lo``–``hi`` over ``n`` seeds where the figure has
    one), as drawn (scaled to the axes' units); nothing for a figure that recorded no data (a
    hook's own)."""
    parts = fig.__dict__.get("_aqmlab_data")
    if not parts:
        return []
    tab = pd.concat(parts, ignore_index=True, sort=False)
    tab = tab[[c for c in tab.columns if not tab[c].isna().all()]]
    if xlabel and "x" in tab.columns and xlabel not in tab.columns:
        tab = tab.rename(columns={"x": xlabel})
    ctx.out.mkdir(parents=True, exist_ok=True)
    path = ctx.out / f"{spec['name']}.csv"
    tab.to_csv(path, index=False)
    return [path]



def ticks_at(ax, values) -> None:
    """Major ticks of a log x axis at ``values`` (plain numbers), no minor labels."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(list(values)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax._aqmlab_fixed_x = True
