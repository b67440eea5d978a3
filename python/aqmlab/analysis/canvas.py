"""What every figure kind draws on: a grid of panels in the context's style (:func:`new`), its
labels, scales, legend, data file and files (:func:`finish`), the selection of rows and series,
and what a figure shows as run (:func:`as_run`). Used by :mod:`.figures` and :mod:`.latency`."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .context import Context
from .marks import data_file
from .plotstyle import pyplot as _plt
from .stats import SpecError, interval_note, interval_short, where_mask


#: the style and width of the figure being drawn (set by make_figure from its Context)
LOOK = {"style": "paper", "columns": None}


def new(n_panels: int, spec: dict):
    """A grid of ``n_panels`` panels (at most three per row). Panels compare one quantity, so they
    share their y axis (``shared_y = false`` in the spec gives each its own)."""
    from . import plotstyle

    plt = _plt()
    ncols = n_panels if n_panels <= 3 else math.ceil(math.sqrt(n_panels))  # 4 panels: 2 x 2
    nrows = math.ceil(n_panels / ncols)
    share = n_panels > 1 and spec.get("shared_y", True)
    fig, axes = plt.subplots(nrows, ncols, figsize=plotstyle.figsize(LOOK["style"], nrows, ncols, LOOK["columns"]),
                             squeeze=False, sharey=share)
    fig._aqmlab_shared_y = share
    axes = axes.ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, list(axes[:n_panels])


def finish(fig, axes, spec: dict, ctx: Context, xlabel: str, ylabel: str, legend: bool = True) -> list[Path]:
    from . import plotstyle

    plt = _plt()
    style = getattr(ctx, "style", LOOK["style"])
    stacked = getattr(fig, "_aqmlab_stacked", False)
    shared_y = stacked or getattr(fig, "_aqmlab_shared_y", False)
    one_ylabel = stacked and style == "paper"  # one label for a column of traces, not one per row
    def lowest(ax):  # no visible panel below it in its column
        ss = ax.get_subplotspec()
        below = [a for a in axes if a.get_subplotspec().colspan == ss.colspan
                 and a.get_subplotspec().rowspan.start > ss.rowspan.start and a.get_visible()]
        return not below

    for ax in axes:
        if (not stacked and style != "paper") or lowest(ax):
            ax.set_xlabel(spec.get("xlabel", xlabel))
        if not one_ylabel and (not shared_y or ax.get_subplotspec().is_first_col()) and (
                ylabel is not None or "ylabel" in spec):
            ax.set_ylabel(spec.get("ylabel", ylabel))
        if spec.get("logx") and not getattr(ax, "_aqmlab_fixed_x", False):
            ax.set_xscale("log")
        if spec.get("logy"):
            ax.set_yscale("log")
        if "xlim" in spec:
            ax.set_xlim(*spec["xlim"])
        if "ylim" in spec:
            ax.set_ylim(*spec["ylim"])
        ax.grid(True, alpha=0.3)
        if spec["kind"] in ("bar", "flows_bar", "group_bar") and "ylim" not in spec and not spec.get("logy"):
            lo, hi = ax.get_ylim()
            if lo < 0 <= min((p.get_height() for p in ax.patches), default=0):
                ax.set_ylim(0, hi)
        if legend and style != "paper" and ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, framealpha=0.8)
    data = data_file(fig, ctx, spec, spec.get("xlabel", xlabel))
    if style == "paper":  # no title in the image: the caption carries it
        if one_ylabel:
            fig.supylabel(spec.get("ylabel", ylabel), fontsize=8)
        plotstyle.polish(fig, axes, style, legend=legend)
        files = plotstyle.save(fig, ctx.out / spec["name"], style)
        plt.close(fig)
        return files + data
    title = spec.get("title", spec["name"])
    if ctx.quick:
        title += "  [quick]"
    import textwrap

    width = int(fig.get_figwidth() * 13)
    lines = textwrap.wrap(title, width) + textwrap.wrap(as_run(ctx, spec, short=True), width)
    fig.suptitle("\n".join(lines), fontsize=11)
    fig.tight_layout()
    ctx.out.mkdir(parents=True, exist_ok=True)
    files = []
    for ext in ("png", "svg"):
        p = ctx.out / f"{spec['name']}.{ext}"
        fig.savefig(p, dpi=130 if ext == "png" else None)
        files.append(p)
    plt.close(fig)
    return files + data


def select(ctx: Context, df: pd.DataFrame, spec: dict) -> pd.DataFrame:
    try:
        return df[where_mask(df, spec.get("where"))]
    except SpecError as e:
        raise SpecError(f"figure {spec['name']}: {e}")


def series_keys(df: pd.DataFrame, series: list[str]) -> list[tuple]:
    if not series:
        return [()]
    return list(dict.fromkeys(tuple(r) for r in df[series].itertuples(index=False, name=None)))


def series_mask(df: pd.DataFrame, series: list[str], key: tuple) -> pd.Series:
    m = pd.Series(True, index=df.index)
    for c, v in zip(series, key):
        m &= df[c].astype(str) == str(v)
    return m


def key_label(ctx: Context, key: tuple, default: str = "") -> str:
    return ": ".join(ctx.label(k) for k in key) or default


#: kinds whose marks carry an interval over seeds
INTERVAL_KINDS = {"xy", "bar", "windowed_jain", "flows_bar", "group_bar"}


def as_run(ctx: Context, spec: dict, short: bool = False) -> str:
    """What a figure shows as run: seeds, run length, and what its error bars are (from the runs
    actually made, never a fixed number); ``short`` for the figure's own title."""
    text = ctx.as_run()
    if spec.get("kind") in INTERVAL_KINDS:
        m = ctx.interval_method()
        text += "; bars: " + (interval_short(m) if short else interval_note([m]))
    elif spec.get("kind") in ("timeseries", "flow_timeseries"):
        text += "; first seed of each point"
    return text
