"""The ``latency_cdf`` figure: per-packet delay distributions from the ``latency`` table
(docs/metrics.md, "Latency distributions"), as Flent draws its pings: the cumulative distribution
in ms, or its tail (the fraction of packets slower than each delay) on a log axis."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .context import Context, Output
from .canvas import finish as _finish
from .canvas import key_label as _key_label
from .canvas import new as _new
from .canvas import select as _select
from .canvas import series_keys as _series_keys
from .canvas import series_mask as _series_mask
from .marks import record, style_of
from .stats import SpecError


#: the latency table's metrics: label on the axis
LATENCY_METRICS = {"owd": "one-way delay", "rtt": "round-trip time"}


def pooled_cdf(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The distribution of the samples of ``rows`` of a latency table (several flows, runs):
    delays in seconds, ascending, and the fraction of samples at or below each (exact over the
    buckets' values: each row's ``count`` samples at its ``delay_s``)."""
    if rows.empty:
        return np.array([]), np.array([])
    g = rows.groupby("delay_s", sort=True)["count"].sum()
    c = np.cumsum(g.to_numpy(dtype=float))
    return g.index.to_numpy(dtype=float), c / c[-1]


def _pooled_quantile(x: np.ndarray, cdf: np.ndarray, q: float) -> float:
    i = int(np.searchsorted(cdf, q - 1e-12))
    return float(x[min(i, len(x) - 1)])


def _loss_note(ctx: Context, sub: pd.DataFrame) -> str:
    """``; loss 9.5%``: the packets of the curve's groups and runs that never arrived (they have no
    delay), pooled over the runs: from the flows table (docs/metrics.md, "groups": ``loss``), else the
    mean of the runs' ``group.<name>.loss``; empty when neither is there."""
    from ..base.units import fmt_pct
    from ..run.summary import loss_fraction

    keys = [c for c in ("sweep", "run", "seed") if c in sub.columns]
    pairs = sub[keys + ["group"]].drop_duplicates()
    flows = ctx.table("flows")
    need = set(keys) | {"group", "drops_total", "delivered_pkts"}
    if not flows.empty and need <= set(flows.columns):
        rows = flows.merge(pairs, on=keys + ["group"])
        if not rows.empty:
            return f"; loss {fmt_pct(loss_fraction(rows['drops_total'], rows['delivered_pkts']))}"
    runs = ctx.runs
    on = [k for k in keys if k in runs.columns]
    if on:
        sel = runs.merge(pairs[on].drop_duplicates(), on=on)
        vals = [v for g in dict.fromkeys(pairs["group"]) if f"group.{g}.loss" in sel.columns
                for v in sel[f"group.{g}.loss"].dropna()]
        if vals:
            return f"; loss {fmt_pct(float(np.mean(vals)))} (mean over {len(vals)} runs)"
    return ""


def fig_latency_cdf(ctx: Context, spec: dict) -> Output:
    """Per-packet delays as Flent draws its pings: the cumulative distribution of one-way delay
    (or RTT) in ms, one curve per series, with ``tail`` the complementary distribution (fraction
    of packets slower than x) on a log axis, where the 99th and 99.9th percentiles are read."""
    lat = _select(ctx, ctx.table("latency"), spec)
    m = spec.get("metric", "owd")
    if m not in LATENCY_METRICS:
        raise SpecError(f"figure {spec['name']}: metric {m!r}: one of {', '.join(LATENCY_METRICS)}")
    if lat.empty or "metric" not in lat.columns:
        raise SpecError(f"figure {spec['name']}: the runs recorded no delays (set simulation.latency = true, or add "
                        f"a probe group: app = \"probe\")")
    lat = lat[lat["metric"] == m]
    if lat.empty:
        raise SpecError(f"figure {spec['name']}: no {LATENCY_METRICS[m]} samples"
                        + (" (round trips: TCP flows and probes with echo = true)" if m == "rtt" else ""))
    series = list(spec.get("series", list(ctx.default_series()) + ["group"]))
    series = [c for c in dict.fromkeys(series) if c in lat.columns]
    tail = bool(spec.get("tail"))
    fig, axes = _new(1, spec)
    ax = axes[0]
    notes = []
    for key in _series_keys(lat, series):
        sub = lat[_series_mask(lat, series, key)]
        x, cdf = pooled_cdf(sub)
        if x.size == 0:
            continue
        ms = x * 1e3
        lbl = _key_label(ctx, key, LATENCY_METRICS[m])
        color = style_of(fig, lbl)[0]
        if tail:
            above = 1.0 - cdf
            keep = above > 0  # (the slowest packet: nothing above it, off a log axis)
            ax.step(ms[keep], above[keep], where="post", color=color, label=lbl, lw=1.3)
            record(fig, series=lbl, metric=f"fraction above ({LATENCY_METRICS[m]})", x=ms, y=above)
        else:
            ax.step(np.concatenate([[ms[0]], ms]), np.concatenate([[0.0], cdf]), where="post", color=color,
                    label=lbl, lw=1.3)
            record(fig, series=lbl, metric=f"cumulative fraction ({LATENCY_METRICS[m]})", x=ms, y=cdf)
        n = int(sub["count"].sum())
        q = lambda p: f"{_pooled_quantile(ms, cdf, p):.3g}"
        notes.append(f"{lbl}: {LATENCY_METRICS[m]} median {q(0.5)} ms, 99th percentile {q(0.99)} ms, "
                     f"99.9th {q(0.999)} ms, max {ms[-1]:.3g} ms ({n} packets){_loss_note(ctx, sub)}.")
    if tail:
        ax.set_yscale("log")
        ylabel = "fraction of packets slower"
    else:
        ax.set_ylim(0, 1.02)
        ylabel = "cumulative fraction of packets"
    files = _finish(fig, axes, spec, ctx, f"{LATENCY_METRICS[m]} (ms)", ylabel)
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=spec.get("caption", ""))
