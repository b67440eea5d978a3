"""Figures of an experiment, declared in its experiment.toml as ``[[figures]]`` tables.

Keys every kind takes: ``name`` (file stem), ``title``, ``kind``, ``where`` (``{column = value or
[values]}`` selecting runs), ``xlabel``/``ylabel`` (defaults from the axis and metric, with units),
``logx``, ``logy``, ``xlim``, ``ylim``, ``hlines`` (``[{y = number or metric column, label = ...}]``),
``panels`` (a coordinate: one subplot per value) and ``caption``.

=================  ====================================================================================
kind               what it draws; its own keys
=================  ====================================================================================
``xy``             mean over seeds with 95 % CI bars of ``y`` (a metric or a list) against ``x`` (a
                   coordinate or a metric, which then gets horizontal CI bars); one line per
                   ``series`` (coordinates, default the variants) and y metric. ``model`` overlays a
                   model curve (overlays.py)
``bar``            the same data as grouped bars over a categorical ``x`` coordinate
``timeseries``     a column ``y`` of a measured link's time series against time (``link``; default
                   the bottleneck, or the only measured link), first seed of each point; one line
                   per series
``flow_timeseries``  ``y`` of the per-flow time series (``flow_series``), summed over the flows
                   selected by ``flows`` (``{column = value}``); first seed
``windowed_jain``  Jain's index of the flows' throughputs in consecutive ``window`` seconds (from
                   ``flow_series``), mean over seeds; ``sessions = {group = n}`` counts a group's
                   many connections as ``n`` equal users
``flows_bar``      per-flow ``y`` (default throughput, kb/s) against ``flow_id`` (the flows table's numbering), mean
                   over seeds with CI, the ideal fair share as a line; one panel per variant
``group_bar``      per-flow average of ``y`` within each value of ``by`` (a flows column, default
                   ``group``), mean over seeds with CI; ``fair_share`` line
``rcf``            relative cumulative frequency of a flows column ``value`` (default goodput):
                   ``series = [{label, where, flows}]``, flows pooled over seeds
``latency_cdf``    the distribution of per-packet delays (``latency`` table: ``metric = "owd"``, one-way
                   delay, or ``"rtt"``) in ms, one curve per ``series`` (columns of the latency
                   table or coordinates; default the varied coordinates and ``group``), flows and
                   seeds pooled; ``tail = true`` draws the fraction of packets above each delay on
                   a log axis (Flent's tail view)
``queue_profile``  the queue's composition by position (fraction of UDP packets at each position
                   from the tail, from ``queue_snapshots``), mean over seeds with a band; per series
``hook``           ``function`` in the experiment's ``hook.py``: ``function(ctx, spec) -> Output``
=================  ====================================================================================

Every figure is written in the context's style (aqmlab.plotstyle: ``paper``, the default, gives
``<name>.pdf``, ``.svg`` and a 300 dpi ``.png``; ``draft`` a titled ``.png`` and ``.svg``) and comes
with automatic comparison sentences (which series is highest where, time averages, model agreement) for the report.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .canvas import INTERVAL_KINDS, as_run  # noqa: F401
from .canvas import LOOK as _LOOK
from .canvas import finish as _finish
from .canvas import key_label as _key_label
from .canvas import new as _new
from .canvas import select as _select
from .canvas import series_keys as _series_keys
from .canvas import series_mask as _series_mask
from .context import Context, Output
from .latency import fig_latency_cdf as _latency_cdf
from .marks import (MARKERS, PALETTE, bounds_cols, data_file, record, style_of, ticks_at,  # noqa: F401
                    unit_groups, y_label)
from .plotstyle import pyplot as _plt
from .stats import SpecError, err, interval_short, metric, metrics, summarise, where_mask

KINDS = ("xy", "bar", "timeseries", "flow_timeseries", "windowed_jain", "flows_bar", "group_bar", "rcf", "queue_profile",
         "latency_cdf", "hook")
COMMON = {"name", "title", "kind", "where", "xlabel", "ylabel", "logx", "logy", "xlim", "ylim", "hlines",
          "panels", "caption", "shared_y"}
OWN = {
    "xy": {"x", "y", "series", "model", "legend"},
    "bar": {"x", "y", "series"},
    "timeseries": {"y", "series", "seed", "link"},
    "flow_timeseries": {"y", "series", "flows"},
    "windowed_jain": {"window", "series", "sessions", "column"},
    "flows_bar": {"y", "fair_share"},
    "group_bar": {"y", "by", "fair_share", "labels"},
    "rcf": {"value", "series"},
    "queue_profile": {"series"},
    "latency_cdf": {"metric", "series", "tail"},
    "hook": {"function"},
}


def check_figure(spec: dict, exp, where: str) -> None:
    """Check a figure spec when the experiment is loaded (keys, kinds, coordinates, metrics)."""
    from ..base.errors import ExperimentError

    if not isinstance(spec, dict):
        raise ExperimentError(f"{where}: expected a table")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ExperimentError(f"{where}.kind: {kind!r}; one of {', '.join(KINDS)}")
    if not isinstance(spec.get("name"), str):
        raise ExperimentError(f"{where}.name: missing (the file stem)")
    for k in spec:
        if k not in COMMON | OWN[kind]:
            raise ExperimentError(f"{where}.{k}: unknown key for kind {kind!r}; known: "
                                  f"{', '.join(sorted(COMMON | OWN[kind]))}")
    coords = exp.coord_names
    for k in ("panels",):
        if k in spec and spec[k] not in coords:
            raise ExperimentError(f"{where}.{k}: {spec[k]!r} is not a coordinate ({', '.join(coords)})")
    for s in spec.get("series", []) if kind in ("xy", "bar", "timeseries", "flow_timeseries", "windowed_jain") else []:
        if s not in coords:
            raise ExperimentError(f"{where}.series: {s!r} is not a coordinate ({', '.join(coords)})")
    if kind in ("xy", "bar"):
        if "x" not in spec or "y" not in spec:
            raise ExperimentError(f"{where}: kind {kind!r} needs x and y")
        if kind == "bar" and spec["x"] not in coords:
            raise ExperimentError(f"{where}.x: {spec['x']!r} is not a coordinate ({', '.join(coords)})")
    try:
        if "y" in spec:
            metrics(spec["y"], f"{where}.y")
    except SpecError as e:
        raise ExperimentError(str(e))
    if kind == "hook" and not (exp.path / "hook.py").is_file():
        raise ExperimentError(f"{where}: kind 'hook' needs {exp.path / 'hook.py'}")


# ----------------------------------------------------------------------------- helpers


def _panels(df: pd.DataFrame, spec: dict):
    p = spec.get("panels")
    if not p:
        return [(None, df)]
    return [(v, df[df[p].astype(str) == str(v)]) for v in dict.fromkeys(df[p])]


def _panel_title(ax, ctx: Context, spec: dict, value) -> None:
    if value is not None:
        ax.set_title(f"{ctx.coord_label(spec['panels'])} = {ctx.label(value)}", fontsize=10)


def _label(key: tuple, m, n_y: int, ctx: Context | None = None) -> str:
    parts = [ctx.label(k) if ctx is not None else str(k) for k in key]
    if n_y > 1 or not parts:
        parts.append(m.label)
    return ": ".join(parts)


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)


def _hlines(ax, spec: dict, df: pd.DataFrame, scale: float = 1.0) -> None:
    for h in spec.get("hlines", []):
        y = h.get("y")
        if isinstance(y, str):
            if y not in df.columns:
                continue
            y = float(df[y].mean()) * float(h.get("scale", scale))
        if y is None or not np.isfinite(y):
            continue
        ax.axhline(y, color=h.get("color", "k"), ls=h.get("style", "--"), lw=1, label=h.get("label"))


def _rank_sentences(tab: pd.DataFrame, x: str, keys: list, label_of, m, higher_word="highest") -> list[str]:
    """Which series is highest at how many x values, and the order of their means over x."""
    if len(keys) < 2:
        return []
    piv = {}
    for k in keys:
        sub = tab[tab["__series"] == k]
        piv[k] = dict(zip(sub[x].astype(str), sub[m.col]))
    xs = list(dict.fromkeys(tab[x].astype(str)))
    wins = {k: 0 for k in keys}
    counted = 0
    for xv in xs:
        vals = {k: piv[k].get(xv, math.nan) for k in keys}
        vals = {k: v for k, v in vals.items() if np.isfinite(v)}
        if len(vals) < 2:
            continue
        counted += 1
        wins[max(vals, key=vals.get)] += 1
    if not counted:
        return []
    def _mean(k):  # a series with no value at any point (e.g. the classic-only mix's L4S share) has no mean
        v = [x for x in (piv[k].get(xv, math.nan) for xv in xs) if np.isfinite(x)]
        return float(np.mean(v)) if v else math.nan

    means = {k: _mean(k) for k in keys}
    order = sorted((k for k in keys if np.isfinite(means[k])), key=lambda k: -means[k])
    best = max(wins, key=wins.get)
    s1 = (f"{m.label}: {label_of(best)} is {higher_word} at {wins[best]} of {counted} "
          f"{'point' if counted == 1 else 'points'}")
    s2 = "; mean over the points: " + ", ".join(f"{label_of(k)} {m.fmt(means[k] * m.scale)}" for k in order)
    return [s1 + s2 + (f" {m.unit}" if m.unit else "") + "."]


# ----------------------------------------------------------------------------- xy and bar


def _xy_data(ctx: Context, spec: dict):
    df = _select(ctx, ctx.runs, spec)
    ys = metrics(spec["y"], "y")
    x = spec["x"]
    series = list(spec.get("series", ctx.default_series()))
    panel = spec.get("panels")
    by = [c for c in [panel] + series if c]
    # x a coordinate: one point per value; x a metric: one point per run point (every coordinate)
    by += [x] if x in ctx.coords else [c for c in ctx.coords if c not in by]
    cols = [m.col for m in ys] + ([x] if x not in ctx.coords else [])
    for c in cols:
        if c not in ctx.runs.columns:
            raise SpecError(f"{c!r} is neither a coordinate ({', '.join(ctx.coords)}) nor a column of the runs "
                            f"table (see aqmlab.runmetrics)")
    missing = [c for c in cols if c not in df.columns]
    tab = summarise(df, by, cols) if len(df) else pd.DataFrame(columns=by + cols)
    for c in missing:
        tab[c] = math.nan
    return df, tab, ys, x, series, panel


def fig_xy(ctx: Context, spec: dict) -> Output:
    df, tab, ys, x, series, panel = _xy_data(ctx, spec)
    x_is_coord = x in ctx.coords
    xm = None if x_is_coord else metric(x, "x")
    groups = unit_groups(ys)
    panels = _panels(tab, spec)
    if len(groups) > 1 and panel:
        raise SpecError(f"figure {spec['name']}: y metrics in different units ("
                        + ", ".join(g[0].unit or "no unit" for g in groups) + ") cannot share panels; "
                        "draw them in separate figures")
    # metrics in different units: one panel each, with its own y axis and label
    cells = [(pv, sub, g) for pv, sub in panels for g in groups]
    fig, axes = _new(len(cells), dict(spec, shared_y=False) if len(groups) > 1 else spec)
    notes = []
    keys_all = _series_keys(tab, series)
    numeric_x = _numeric(tab[x].dropna()) if len(tab) else True
    xs_all = sorted(set(tab[x].dropna().to_numpy(dtype=float))) if numeric_x and x_is_coord and len(tab) else []
    for ax, (pv, sub, ms) in zip(axes, cells):
        _panel_title(ax, ctx, spec, pv)
        xs_cat = list(dict.fromkeys(sub[x].astype(str))) if not numeric_x else None
        for m in ms:
            yi = ys.index(next(y for y in ys if y.col == m.col))
            mtab = sub.copy()
            mtab["__series"] = [tuple(r) for r in mtab[series].itertuples(index=False, name=None)] if series else [()] * len(mtab)
            for key in keys_all:
                s = mtab[mtab["__series"] == key]
                if s.empty:
                    continue
                if numeric_x:
                    s = s.sort_values(x)
                    if not x_is_coord:  # points in the order of the measured x
                        s = s[np.isfinite(s[x].to_numpy(dtype=float))]
                    xv = s[x].to_numpy(dtype=float) * (xm.scale if xm else 1.0)
                else:
                    xv = np.array([xs_cat.index(v) for v in s[x].astype(str)], dtype=float)
                yv = s[m.col].to_numpy(dtype=float) * m.scale
                yerr = err(s, m.col, m.scale)
                xerr = err(s, x, xm.scale) if xm is not None else None
                # (a metric alone on its axis is named by the axis: the series keeps one look in every panel)
                label = (_label(key, m, len(ms), ctx) if key or "model" not in spec else
                         ("simulation" if len(ms) == 1 else f"simulation: {m.label}"))
                color, marker = style_of(fig, label)
                # one line that the axis' label already names needs no legend
                alone = not key and len(ms) == 1 and len(groups) == 1 and "model" not in spec and not spec.get("hlines")
                ax.errorbar(xv, yv, yerr=yerr, xerr=xerr, marker=marker, color=color, capsize=3 if yerr is not None
                            or xerr is not None else 0, ms=4, lw=1.2, label="_" + label if alone else label)
                record(fig, panel=None if pv is None else ctx.label(pv), series=label, metric=m.axis_label,
                        x=list(s[x].astype(str)) if not numeric_x else xv, y=yv, **bounds_cols(s, m.col, m.scale))
            where = f"({ctx.coord_label(panel)} = {ctx.label(pv)}) " if pv is not None else ""
            if x_is_coord:
                notes += [where + n for n in
                          _rank_sentences(mtab, x, keys_all, lambda k, m=m: _key_label(ctx, k, m.label), m)]
            else:
                for key in keys_all:
                    s = mtab[mtab["__series"] == key]
                    xv, yv = s[x].to_numpy(dtype=float) * xm.scale, s[m.col].to_numpy(dtype=float) * m.scale
                    if np.isfinite(xv).any() and np.isfinite(yv).any():
                        notes.append(where + f"{_key_label(ctx, key, m.label)}: {xm.label} "
                                     f"{xm.fmt(np.nanmin(xv))}–{xm.fmt(np.nanmax(xv))} {xm.unit}, {m.label} "
                                     f"{m.fmt(np.nanmin(yv))}–{m.fmt(np.nanmax(yv))} {m.unit} over {len(s)} points.")
        if not numeric_x:
            cats = [ctx.label(c) for c in xs_cat]
            ax.set_xticks(range(len(xs_cat)))
            ax.set_xticklabels(cats, rotation=30 if max(map(len, cats), default=0) > 6 else 0)
        elif spec.get("logx") and 1 < len(xs_all) <= 12 and min(xs_all) > 0:
            ticks_at(ax, xs_all)  # a log axis labelled at the swept values
        if len(groups) > 1:
            ax.set_ylabel(y_label(ms))
        if "model" in spec and numeric_x:
            notes += _overlay(ax, ctx, spec, sub, ms, x, xm)
        _hlines(ax, spec, df)
    xlabel = ctx.coord_label(x) if x_is_coord else xm.axis_label
    ylabel = None if len(groups) > 1 else y_label(ys)
    files = _finish(fig, axes, spec, ctx, xlabel, ylabel, legend=spec.get("legend", True))
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=spec.get("caption", ""))


def _overlay(ax, ctx: Context, spec: dict, tab: pd.DataFrame, ys, x, xm) -> list[str]:
    from . import overlays

    mspec = spec["model"]
    mapping = mspec.get("y", {})
    xs = tab[x].dropna().to_numpy(dtype=float)
    if xs.size == 0:
        return []
    try:
        model = overlays.evaluate(mspec, xs, bool(spec.get("logx")), x)
    except Exception as e:  # a model that fails must not stop the report
        return [f"model {mspec.get('name')}: not drawn ({type(e).__name__}: {e})."]
    notes = []
    for i, m in enumerate(ys):
        mc = mapping.get(m.col)
        if mc is None or mc not in model.columns:
            continue
        mm = model[["x", mc]].dropna()
        ax.plot(mm["x"], mm[mc] * m.scale, color="k", ls=(0, (4, 2)), lw=1.2 - 0.2 * i,
                label=f"model: {m.label}" if len(ys) > 1 else "model")
        sim = tab.groupby(x)[m.col].mean()
        mod = np.interp(sim.index.to_numpy(dtype=float), mm["x"].to_numpy(), mm[mc].to_numpy()) if len(mm) else []
        a = agreement(sim.to_numpy(dtype=float), np.asarray(mod, dtype=float))
        if a is not None:
            mad, frac, n = a
            notes.append(f"{m.label}: simulation and model ({mspec.get('name')}) differ by {m.fmt(mad * m.scale)}"
                         f"{' ' + m.unit if m.unit else ''} on average over {n} points ({100 * frac:.0f} % of the "
                         f"largest value of either).")
    return notes


def agreement(sim: np.ndarray, model: np.ndarray):
    """Simulation against model at the same points: the mean absolute difference, that difference
    as a fraction of the largest absolute value of either (a scale that cannot vanish near a zero
    of the model, unlike a relative difference: in [0, 2] whatever the values), and the number of
    points; None without a finite pair or when every value is 0."""
    ok = np.isfinite(sim) & np.isfinite(model)
    if not ok.any():
        return None
    s, v = sim[ok], model[ok]
    scale = float(max(np.abs(s).max(), np.abs(v).max()))
    mad = float(np.abs(s - v).mean())
    if scale == 0:
        return None
    return mad, mad / scale, int(ok.sum())


def fig_bar(ctx: Context, spec: dict) -> Output:
    df, tab, ys, x, series, panel = _xy_data(ctx, spec)
    groups = unit_groups(ys)
    panels = _panels(tab, spec)
    if len(groups) > 1 and panel:
        raise SpecError(f"figure {spec['name']}: y metrics in different units ("
                        + ", ".join(g[0].unit or "no unit" for g in groups) + ") cannot share panels; "
                        "draw them in separate figures")
    cells = [(pv, sub, g) for pv, sub in panels for g in groups]
    fig, axes = _new(len(cells), dict(spec, shared_y=False) if len(groups) > 1 else spec)
    keys_all = _series_keys(tab, series)
    notes = []
    for ax, (pv, sub, ms) in zip(axes, cells):
        _panel_title(ax, ctx, spec, pv)
        width = 0.8 / max(1, len(keys_all) * len(ms))
        cats = list(dict.fromkeys(sub[x].astype(str)))
        sub = sub.copy()
        sub["__series"] = [tuple(r) for r in sub[series].itertuples(index=False, name=None)] if series else [()] * len(sub)
        b = 0
        for key in keys_all:
            for m in ms:
                s = sub[sub["__series"] == key]
                pos = np.array([cats.index(v) for v in s[x].astype(str)], dtype=float) - 0.4 + width * (b + 0.5)
                label = _label(key, m, len(ms), ctx)
                yerr = err(s, m.col, m.scale)
                yv = s[m.col].to_numpy(dtype=float) * m.scale
                ax.bar(pos, yv, width, yerr=yerr, capsize=2 if yerr is not None else 0,
                       color=style_of(fig, label)[0], label=label)
                record(fig, panel=None if pv is None else ctx.label(pv), series=label, metric=m.axis_label,
                        x=[ctx.label(v) for v in s[x].astype(str)], y=yv, **bounds_cols(s, m.col, m.scale))
                b += 1
        ax.set_xticks(range(len(cats)))
        shown = [ctx.label(c) for c in cats]
        ax.set_xticklabels(shown, rotation=30 if max(map(len, shown), default=0) > 10 else 0)
        if len(groups) > 1:
            ax.set_ylabel(y_label(ms))
        _hlines(ax, spec, df)
        for m in ms:
            notes += _rank_sentences(sub, x, keys_all, lambda k, m=m: _key_label(ctx, k, m.label), m)
        if len(ms) > 1 and len(keys_all) == 1:
            for c in cats:
                row = sub[sub[x].astype(str) == c]
                vals = {m.label: float(row[m.col].mean()) * m.scale for m in ms}
                best = max(vals, key=lambda k: vals[k] if np.isfinite(vals[k]) else -np.inf)
                notes.append(f"{ctx.coord_label(x)} = {ctx.label(c)}: " + ", ".join(
                    f"{k} {ms[0].fmt(v)}" for k, v in vals.items()) + (f" {ms[0].unit}" if ms[0].unit else "")
                             + f"; highest: {best}.")
    ylabel = None if len(groups) > 1 else y_label(ys)
    files = _finish(fig, axes, spec, ctx, ctx.coord_label(x), ylabel)
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=spec.get("caption", ""))


# ----------------------------------------------------------------------------- time series


def _first_seed(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if "seed" not in df.columns or df.empty:
        return df
    if not keys:
        return df[df["seed"] == df["seed"].min()]
    first = df.groupby([df[k].astype(str) for k in keys])["seed"].transform("min")
    return df[df["seed"] == first]


def _ts_plot(ctx: Context, spec: dict, table: str, agg_flows: dict | None) -> Output:
    ts = ctx.table(table)
    if ts.empty:
        raise SpecError(f"figure {spec['name']}: the runs have no {table} table")
    ts = _select(ctx, ts, spec)
    if table == "timeseries" and "link" in ts.columns:
        ts = _one_link(ts, spec)
    m = metric(spec.get("y", "queue_pkts" if table == "timeseries" else "throughput_bps"), "y")
    series = list(spec.get("series", ctx.default_series()))
    panel = spec.get("panels")
    keys = [c for c in [panel] + series if c]
    ts = _first_seed(ts, [c for c in ctx.coords])
    if agg_flows is not None:
        need = [k for k in agg_flows if k not in ts.columns]
        if need:  # flow attributes (transport, app, priority, ...) come from the flows table
            keys_f = list(ctx.coords) + ["seed", "flow_id"]
            flows = ctx.table("flows")[keys_f + need]
            ts = ts.merge(flows, on=keys_f, how="left")
        mask = where_mask(ts, agg_flows)
        # (a sum over flows none of which has the value, e.g. a pacing rate of senders that do not pace, is none)
        ts = ts[mask].groupby(keys + ["seed", "time_s"], sort=False, as_index=False)[m.col].sum(min_count=1)
    panels = _panels(ts, spec)
    skeys = _series_keys(ts, series)
    # several traces on one axis hide each other: unless the spec asks to overlay them, each series
    # gets its own row (one column per panel), with shared axes, as the papers draw queue traces
    stacked = len(skeys) > 1 and not spec.get("overlay", False)
    if stacked:
        plt = _plt()
        nr, nc = len(skeys), len(panels)
        from . import plotstyle

        size = ((6.4 if nc == 1 else 4.8 * nc, 1.9 * nr + 0.8) if _LOOK["style"] == "draft" else
                plotstyle.figsize("paper", nr, nc, _LOOK["columns"], row_height=1.0 if nr > 2 else 1.3))
        fig, axs = plt.subplots(nr, nc, figsize=size, sharex=True,
                                sharey=True, squeeze=False)
        fig._aqmlab_stacked = True
        cells = [(axs[si][pi], pi, [si]) for si in range(nr) for pi in range(nc)]
    else:
        fig, axs1 = _new(len(panels), spec)
        cells = [(ax, pi, list(range(len(skeys)))) for pi, ax in enumerate(axs1)]
    axes = [c[0] for c in cells]
    stats = {pi: [] for pi in range(len(panels))}
    for ax, pi, sis in cells:
        pv, sub = panels[pi]
        if not stacked or sis[0] == 0:
            _panel_title(ax, ctx, spec, pv)
        for si in sis:
            key = skeys[si]
            s = sub[_series_mask(sub, series, key)].sort_values("time_s")
            if s.empty:
                continue
            lbl = _key_label(ctx, key, m.label)
            ax.plot(s["time_s"], s[m.col] * m.scale, lw=0.7, alpha=0.85, color=style_of(fig, lbl)[0], label=lbl,
                    drawstyle="steps-post" if table != "timeseries" else "default")
            v = s[m.col].to_numpy(dtype=float) * m.scale
            record(fig, panel=None if pv is None else ctx.label(pv), series=lbl, metric=m.axis_label,
                    x=s["time_s"].to_numpy(dtype=float), y=v)
            finite = np.isfinite(v).any()  # (a series without any value: a sender that does not pace)
            stats[pi].append((lbl, float(np.nanmean(v)) if finite else math.nan,
                              float(np.nanstd(v)) if finite else math.nan))
        _hlines(ax, spec, sub)
    notes = []
    for pi, st in stats.items():
        if st:
            pv = panels[pi][0]
            where = f"({ctx.coord_label(panel)} = {ctx.label(pv)}) " if pv is not None else ""
            notes.append(where + f"time average of {m.label} (± standard deviation over time, first seed): " +
                         ", ".join(f"{l} {m.fmt(a)} ± {m.fmt(sd)}" if np.isfinite(a) else f"{l} none"
                                   for l, a, sd in st) +
                         (f" {m.unit}" if m.unit else "") + ".")
    files = _finish(fig, axes, spec, ctx, "time (s)", m.axis_label)
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=spec.get("caption", ""))


def _one_link(ts: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """The rows of the link the figure draws: `link`, else the bottleneck, else the only one."""
    names = list(dict.fromkeys(ts["link"]))
    want = spec.get("link") or ("bottleneck" if "bottleneck" in names or len(names) != 1 else names[0])
    if want not in names:
        raise SpecError(f"figure {spec['name']}: no measured link {want!r} in the time series; "
                        f"give link = one of {', '.join(map(repr, names))}")
    return ts[ts["link"] == want]


def fig_timeseries(ctx: Context, spec: dict) -> Output:
    return _ts_plot(ctx, spec, "timeseries", None)


def fig_flow_timeseries(ctx: Context, spec: dict) -> Output:
    return _ts_plot(ctx, spec, "flow_series", spec.get("flows", {}))


def fig_windowed_jain(ctx: Context, spec: dict) -> Output:
    fs = ctx.table("flow_series")
    if fs.empty:
        raise SpecError(f"figure {spec['name']}: the runs have no flow_series table "
                        f"(set simulation.flow_series_interval)")
    fs = _select(ctx, fs, spec)
    window = float(spec.get("window", 10.0))
    col = spec.get("column", "throughput_bps")
    sessions = spec.get("sessions", {})
    series = list(spec.get("series", ctx.default_series()))
    keys = [c for c in ctx.coords]
    fs = fs.assign(window=np.floor(fs["time_s"] / window) * window)
    # the users whose shares are compared: flows, except that the connections of each web session
    # (flows table column `session`) make one user per session
    fs = fs.assign(unit="f" + fs["flow_id"].astype(str))
    flows = ctx.table("flows")
    if sessions and "session" in flows.columns:
        on = keys + ["seed", "flow_id"]
        fs = fs.merge(flows[on + ["session"]], on=on, how="left")
        web = fs["group"].isin(list(sessions)) & (fs["session"] >= 0)
        fs.loc[web, "unit"] = "s" + fs.loc[web, "session"].astype(int).astype(str)
    rows = []
    for (kv, seed, w), sub in fs.groupby([fs[keys].astype(str).agg("\x1f".join, axis=1) if keys else 0, "seed", "window"],
                                         sort=False):
        samples = max(sub["time_s"].nunique(), 1)
        # a user's rate in the window: its bytes over the window's samples (a user without a row in
        # some sample moved nothing then)
        per_unit = sub.groupby(["group", "unit"])[col].sum() / samples
        vals = []
        for g, s in per_unit.groupby(level=0):
            v = list(s.to_numpy(dtype=float))
            if g in sessions:
                n = int(sessions[g])
                if "session" not in fs.columns:  # no session ids: the group's rate shared equally
                    v = [float(sum(v)) / n] * n
                else:  # sessions idle for the whole window are users at rate 0
                    v += [0.0] * max(n - len(v), 0)
            vals += v
        from ..base.metrics import jain

        first = sub.iloc[0]
        rows.append({**{k: first[k] for k in keys}, "seed": seed, "time_s": w, "jain": jain(vals)})
    tab = pd.DataFrame(rows)
    panel = spec.get("panels")
    summ = summarise(tab, ([panel] if panel else []) + [c for c in series] + ["time_s"], ["jain"])
    panels = _panels(summ, spec)
    fig, axes = _new(len(panels), spec)
    notes = []
    for ax, (pv, sub) in zip(axes, panels):
        _panel_title(ax, ctx, spec, pv)
        where = f"({ctx.coord_label(panel)} = {ctx.label(pv)}) " if pv is not None else ""
        for key in _series_keys(sub, series):
            s = sub[_series_mask(sub, series, key)].sort_values("time_s")
            lbl = _key_label(ctx, key, "Jain's index")
            color, marker = style_of(fig, lbl)
            yerr = err(s, "jain")
            ax.errorbar(s["time_s"] + window / 2, s["jain"], yerr=yerr, marker=marker, ms=3,
                        capsize=2 if yerr is not None else 0, lw=1, color=color, label=lbl)
            record(fig, panel=None if pv is None else ctx.label(pv), series=lbl, metric="Jain's index",
                    x=(s["time_s"] + window / 2).to_numpy(dtype=float), y=s["jain"].to_numpy(dtype=float),
                    **bounds_cols(s, "jain", 1.0))
            notes.append(f"{where}{lbl}: time-average windowed Jain's index {np.nanmean(s['jain']):.3f}.")
    files = _finish(fig, axes, spec, ctx, "time (s)", f"Jain's index over {window:g} s windows")
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=spec.get("caption", ""))


# ----------------------------------------------------------------------------- per-flow bars


def fig_flows_bar(ctx: Context, spec: dict) -> Output:
    flows = _select(ctx, ctx.table("flows"), spec)
    m = metric(spec.get("y", {"col": "throughput_bps", "label": "throughput", "unit": "kb/s"}), "y")
    if "panels" not in spec and ctx.exp.variants:
        spec = dict(spec, panels=ctx.exp.variants_name)
    panels = _panels(flows, spec)
    fig, axes = _new(len(panels), spec)
    notes = []
    runs = _select(ctx, ctx.runs, spec)
    for ax, (pv, sub) in zip(axes, panels):
        ax.set_title(ctx.label(pv) if pv is not None else "", fontsize=10)
        per = summarise(sub.sort_values("flow_id"), ["flow_id"], [m.col])
        kinds = sub.groupby("flow_id")["transport"].first()
        colors = [PALETTE[1] if kinds.get(f) == "udp" else PALETTE[0] for f in per["flow_id"]]
        yerr = err(per, m.col, m.scale)
        # flows numbered as the flows table numbers them (flow_id, from 0), in the figure, its data and its notes
        ax.bar(per["flow_id"], per[m.col] * m.scale, 0.8, yerr=yerr, color=colors,
               capsize=1.5 if yerr is not None else 0)
        record(fig, panel=None if pv is None else ctx.label(pv), series=[kinds.get(f) for f in per["flow_id"]],
                metric=m.axis_label, x=per["flow_id"].to_numpy(), y=per[m.col].to_numpy(dtype=float) * m.scale,
                **bounds_cols(per, m.col, m.scale))
        fair = _fair_share_line(ax, spec, runs, pv, m)
        _hlines(ax, spec, sub)
        if len(per):
            top = per.iloc[int(np.nanargmax(per[m.col].to_numpy()))]
            fid = int(top["flow_id"])
            txt = f"flow_id {fid} ({kinds.get(fid)}) {m.fmt(top[m.col] * m.scale)} {m.unit}"
            if np.isfinite(fair) and fair > 0:
                txt += f" = {top[m.col] * m.scale / fair:.1f} × the fair share"
            from ..base.metrics import jain

            notes.append((f"{pv}: " if pv is not None else "") + f"largest {m.label}: {txt}; Jain's index of the "
                         f"per-flow means {jain(per[m.col]):.3f}.")
        from matplotlib.patches import Patch

        handles, labels = ax.get_legend_handles_labels()
        handles += [Patch(color=PALETTE[0], label="TCP"), Patch(color=PALETTE[1], label="UDP")]
        ax.legend(handles=handles, fontsize=8)
    files = _finish(fig, axes, spec, ctx, "flow (flow_id)", m.axis_label, legend=False)
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=spec.get("caption", ""))


def _fair_share_line(ax, spec: dict, runs: pd.DataFrame, pv, m) -> float:
    """Draw the ideal fair share (M13) of the panel's runs unless the spec turns it off; returns it
    (NaN when not drawn)."""
    if not spec.get("fair_share", True):
        return math.nan
    r = runs if pv is None else runs[runs[spec["panels"]].astype(str) == str(pv)]
    fair = float(r["fair_share_bps"].mean()) * m.scale if len(r) else math.nan
    if np.isfinite(fair):
        ax.axhline(fair, color="k", ls="--", lw=1, label=f"ideal fair share ({m.fmt(fair)} {m.unit})")
    return fair


def fig_group_bar(ctx: Context, spec: dict) -> Output:
    flows = _select(ctx, ctx.table("flows"), spec)
    m = metric(spec.get("y", {"col": "throughput_bps", "label": "average throughput per flow", "unit": "kb/s"}), "y")
    by = spec.get("by", "group")
    labels = spec.get("labels", {})
    runkeys = [c for c in ctx.coords] + ["seed"]
    per_run = flows.groupby(runkeys + [by], sort=False, as_index=False)[m.col].mean()
    panels = _panels(per_run, spec)
    fig, axes = _new(len(panels), spec)
    notes = []
    runs = _select(ctx, ctx.runs, spec)
    for ax, (pv, sub) in zip(axes, panels):
        _panel_title(ax, ctx, spec, pv)
        summ = summarise(sub.assign(**{by: sub[by].map(_category)}), [by], [m.col])
        cats = [str(labels.get(str(c), ctx.label(c))) for c in summ[by]]
        yerr = err(summ, m.col, m.scale)
        ax.bar(range(len(cats)), summ[m.col] * m.scale, 0.6, yerr=yerr, capsize=3 if yerr is not None else 0,
               color=[style_of(fig, c)[0] for c in cats])
        record(fig, panel=None if pv is None else ctx.label(pv), series=cats, metric=m.axis_label, x=cats,
                y=summ[m.col].to_numpy(dtype=float) * m.scale, **bounds_cols(summ, m.col, m.scale))
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats)
        fair = _fair_share_line(ax, spec, runs, pv, m)
        _hlines(ax, spec, sub)
        vals = summ[m.col].to_numpy(dtype=float) * m.scale
        if len(vals) > 1 and np.all(np.isfinite(vals)):
            hi, lo = int(np.argmax(vals)), int(np.argmin(vals))
            s = (f"{cats[hi]} {m.fmt(vals[hi])} vs {cats[lo]} {m.fmt(vals[lo])} {m.unit} "
                 f"(ratio {vals[hi] / vals[lo]:.2f})" if vals[lo] > 0 else f"{cats[hi]} highest")
            if np.isfinite(fair) and fair > 0:
                s += f"; fair share {m.fmt(fair)} {m.unit}"
            notes.append((f"({ctx.coord_label(spec['panels'])} = {pv}) " if pv is not None else "") +
                         f"{m.label}: highest {s}.")
    files = _finish(fig, axes, spec, ctx, by, m.axis_label)
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=spec.get("caption", ""))


def _category(v):
    """A category value as text: numbers rounded to 9 significant digits (so 0.006000000000000001 is 0.006)."""
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.9g}"
    return str(v)


def fig_rcf(ctx: Context, spec: dict) -> Output:
    flows = _select(ctx, ctx.table("flows"), spec)
    m = metric(spec.get("value", {"col": "goodput_bps", "label": "goodput", "unit": "Mb/s"}), "value")
    fig, axes = _new(1, spec)
    ax = axes[0]
    notes = []
    series = spec.get("series") or [{"label": str(k), "where": {ctx.exp.variants_name: k}}
                                    for k in ctx.exp.variant_labels(ctx.quick)]
    for si, s in enumerate(series):
        sub = flows[where_mask(flows, s.get("where")) & where_mask(flows, s.get("flows"))]
        v = np.sort(sub[m.col].to_numpy(dtype=float) * m.scale)
        if v.size == 0:
            continue
        y = np.arange(1, v.size + 1) / v.size
        lbl = ctx.label(s.get("label", f"series {si}"))
        ax.step(np.concatenate([[0], v]), np.concatenate([[0], y]), where="post", color=style_of(fig, lbl)[0],
                label=lbl, lw=1.3)
        record(fig, series=lbl, metric=m.axis_label, x=v, y=y)
        notes.append(f"{lbl}: median {m.label} {m.fmt(float(np.median(v)))} {m.unit}, "
                     f"10th–90th percentile {m.fmt(float(np.quantile(v, 0.1)))}–{m.fmt(float(np.quantile(v, 0.9)))} "
                     f"{m.unit} ({v.size} flows pooled over seeds).")
    ax.set_ylim(0, 1.02)
    files = _finish(fig, axes, spec, ctx, m.axis_label, "relative cumulative frequency")
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=spec.get("caption", ""))


def fig_queue_profile(ctx: Context, spec: dict) -> Output:
    """The queue's composition by position (the spatial distribution of docs/metrics.md): the
    fraction of snapshots whose packet at position ``y`` from the tail is UDP, per run on its own
    mean backlog, then averaged over the runs of each series at equal relative positions, with the
    interval over seeds as a band."""
    from ..run.snapshots import spatial_distribution
    from .stats import MIN_T_SEEDS, interval_short

    snaps = _select(ctx, ctx.table("snapshots"), spec)
    if snaps.empty:
        raise SpecError(f"figure {spec['name']}: the runs have no queue snapshots (simulation.queue_snapshots = true)")
    series = list(spec.get("series", ctx.default_series()))
    panel = spec.get("panels")
    runkey = [c for c in ("run", "seed") if c in snaps.columns] or list(ctx.coords)
    panels = _panels(snaps, spec)
    fig, axes = _new(len(panels), spec)
    notes, grid = [], np.linspace(0.0, 1.0, 101)
    for ax, (pv, sub) in zip(axes, panels):
        _panel_title(ax, ctx, spec, pv)
        for si, key in enumerate(_series_keys(sub, series)):
            s = sub[_series_mask(sub, series, key)]
            profiles, backlogs = [], []
            for _, one in s.groupby([s[c].astype(str) for c in runkey], sort=False):
                try:
                    prof = spatial_distribution(one, n_grid=200)
                except Exception:  # a run whose queue was always empty has no profile
                    continue
                b = prof.attrs["b_avg"]
                profiles.append(np.interp(grid, prof["y"].to_numpy() / b, prof["rho_udp"].to_numpy()))
                backlogs.append(b)
            if not profiles:
                continue
            a = np.vstack(profiles)
            mean, n = a.mean(axis=0), len(profiles)
            yv = grid * float(np.mean(backlogs))
            lbl = _key_label(ctx, key, "UDP")
            color = style_of(fig, lbl)[0]
            ax.plot(yv, mean, color=color, lw=1.2, label=lbl)
            record(fig, panel=None if pv is None else ctx.label(pv), series=lbl, metric="UDP fraction", x=yv, y=mean,
                    n=n)
            if n >= MIN_T_SEEDS:
                from scipy import stats as st

                h = st.t.ppf(0.975, n - 1) * a.std(axis=0, ddof=1) / np.sqrt(n)
                ax.fill_between(yv, np.clip(mean - h, 0, 1), np.clip(mean + h, 0, 1), color=color, alpha=0.2, lw=0)
            elif n == 2:
                ax.fill_between(yv, a.min(axis=0), a.max(axis=0), color=color, alpha=0.2, lw=0)
            where = f"({ctx.coord_label(panel)} = {pv}) " if pv is not None else ""
            notes.append(f"{where}{lbl}: UDP fraction {mean[0]:.3f} at the tail, {mean[-1]:.3f} at the head of a "
                         f"mean backlog of {np.mean(backlogs):.1f} packets ({n} run{'s' if n != 1 else ''}"
                         + (f"; band: {interval_short('t95' if n >= MIN_T_SEEDS else 'range')}" if n > 1 else "")
                         + ").")
        ax.set_ylim(0, 1.02)
    files = _finish(fig, axes, spec, ctx, "position y in the queue (packets from the tail)", "UDP fraction rho0(y)")
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=spec.get("caption", ""))


def fig_latency_cdf(ctx: Context, spec: dict) -> Output:
    """Per-packet delay distributions (:mod:`aqmlab.analysis.latency`)."""
    return _latency_cdf(ctx, spec)


FIGURES = {"xy": fig_xy, "bar": fig_bar, "timeseries": fig_timeseries, "flow_timeseries": fig_flow_timeseries,
           "windowed_jain": fig_windowed_jain, "flows_bar": fig_flows_bar, "group_bar": fig_group_bar,
           "rcf": fig_rcf, "queue_profile": fig_queue_profile, "latency_cdf": fig_latency_cdf}


def make_figure(ctx: Context, spec: dict, kinds: dict | None = None) -> Output:
    """Draw figure ``spec``: one of :data:`FIGURES`, or of ``kinds`` (what a higher layer draws:
    ``aqmlab.reproduce.hooks`` adds the ``hook`` kind, an experiment's own ``hook.py``)."""
    from . import plotstyle

    draw = {**FIGURES, **(kinds or {})}[spec["kind"]]
    _LOOK.update(style=plotstyle.check(getattr(ctx, "style", "paper")), columns=getattr(ctx, "columns", None))
    with plotstyle.rc_context(_LOOK["style"]):
        out = draw(ctx, spec)
    note = as_run(ctx, spec) + "."
    out.caption = f"{out.caption} ({note})" if out.caption else note[0].upper() + note[1:]
    return out


# helpers for hooks
new_figure = _new
finish_figure = _finish
