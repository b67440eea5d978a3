"""Metric specifications (column, label, unit, scale) and means with 95 % confidence intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st

from ..base.errors import SpecError

#: labels and units of common run metrics (runmetrics.py), used when a spec gives only the column
KNOWN = {
    "bottleneck.utilisation": ("link utilisation", "%"),
    "bottleneck.queue_mean_pkts": ("average queue length", "packets"),
    "bottleneck.delay_mean_s": ("mean queueing delay", "s"),
    "bottleneck.drop_ratio": ("packet drop ratio", ""),
    "bottleneck.throughput_bps": ("bottleneck throughput", "Mb/s"),
    "fairness.jain_throughput_all": ("Jain's index (throughput, all flows)", ""),
    "fairness.jain_throughput_tcp": ("Jain's index (throughput, TCP flows)", ""),
    "fairness.jain_goodput_tcp": ("Jain's index (goodput, TCP flows)", ""),
    "tcp.goodput_bps": ("aggregate TCP goodput", "Mb/s"),
    "tcp.throughput_bps": ("aggregate TCP throughput", "Mb/s"),
    "tcp.goodput_m2b_bps": ("aggregate TCP goodput (M2b)", "Mb/s"),
    "tcp.goodput_m2c_bps": ("aggregate TCP goodput (M2c)", "Mb/s"),
    "tcp.throughput_per_flow_bps": ("average TCP throughput per flow", "kb/s"),
    "tcp.goodput_per_flow_bps": ("average TCP goodput per flow", "kb/s"),
    "udp.throughput_bps": ("UDP throughput", "kb/s"),
    "udp.goodput_bps": ("UDP goodput", "kb/s"),
    "udp.share": ("UDP bandwidth share", ""),
    "tcp.share": ("TCP bandwidth share", ""),
    "udp.drop_pct": ("UDP drop percentage", "%"),
    "normalised_goodput": ("normalised TCP goodput", ""),
    "sdv_throughput_bps": ("SDV of throughputs", "kb/s"),
    "web_drop_share": ("web drop share", ""),
    "aqm.p0_mean": ("time-average p0", ""),
    "fair_share_bps": ("ideal fair share", "kb/s"),
}

#: labels and units of the per-flow and time-series columns (docs/metrics.md), for figures of them
COLUMNS = {
    "queue_pkts": ("queue length", "packets"),
    "queue_bytes": ("queue length", "bytes"),
    "utilisation": ("link utilisation", "%"),
    "drops": ("drops per sample", "packets"),
    "aqm_avg": ("average queue (RED's estimate)", "packets"),
    "aqm_p": ("drop probability", ""),
    "aqm_p0": ("p0", ""),
    "throughput_bps": ("throughput", "kb/s"),
    "goodput_bps": ("goodput", "kb/s"),
    "delivered_bps": ("delivered rate", "kb/s"),
    "goodput_m2b_bps": ("goodput (M2b)", "kb/s"),
    "goodput_m2c_bps": ("goodput (M2c)", "kb/s"),
    "share": ("bandwidth share", ""),
    "rtt_mean_s": ("mean RTT", "ms"),
    "rtt_min_s": ("minimum RTT", "ms"),
    "rtt_prop_s": ("propagation RTT", "ms"),
    "completion_time_s": ("completion time", "s"),
    "cwnd_pkts": ("congestion window", "packets"),
    "cwnd": ("congestion window", "segments"),
    "pacing_rate_bps": ("pacing rate", "Mb/s"),
    "srtt_s": ("smoothed RTT", "ms"),
    "retx_pkts": ("segments retransmitted", "packets"),
    "drops_total": ("drops", "packets"),
    "timeouts": ("timeouts", ""),
    "fast_retransmits": ("fast retransmits", ""),
    "time_s": ("time", "s"),
}

#: how a column's name ends -> its unit as drawn (and the label without the suffix)
_SUFFIX_UNITS = (("_bps", "kb/s"), ("_pct", "%"), ("_pkts", "packets"), ("_bytes", "bytes"), ("_s", "ms"))


def describe_column(col: str) -> tuple[str, str]:
    """A label and unit for any column, for axes: the run metrics of :data:`KNOWN`, the per-flow and
    time-series columns of :data:`COLUMNS`, else read from the name (``links.r1-r2.delay_p99_s`` ->
    ``("r1-r2 delay p99", "ms")``: the unit from the suffix, underscores as spaces)."""
    if col in KNOWN:
        return KNOWN[col]
    if col in COLUMNS:
        return COLUMNS[col]
    name, unit = col, ""
    for suffix, u in _SUFFIX_UNITS:
        if col.endswith(suffix):
            name, unit = col[: -len(suffix)], u
            break
    parts = [p for p in name.split(".") if p not in ("bottleneck", "links", "group", "aqm")] or [name]
    label = " ".join(parts).replace("_", " ").strip()
    if name.startswith("aqm.") or "_mean" in name:
        label = label.replace(" mean", " (time average)")
    return label, unit


_RATE = {"b/s": 1.0, "kb/s": 1e-3, "Mb/s": 1e-6, "Gb/s": 1e-9}
_TIME = {"s": 1.0, "ms": 1e3, "us": 1e6}
#: rate and time units a metric may be drawn in, with the factor from bit/s and seconds
RATE_UNITS, TIME_UNITS = _RATE, _TIME


def auto_scale(col: str, unit: str) -> float:
    """The factor from a column's stored unit to ``unit``: bit/s columns (``*_bps``) to kb/s or
    Mb/s; seconds (``*_s``) to ms; fractions to % (columns not already in percent)."""
    if col.endswith("_bps") and unit in _RATE:
        return _RATE[unit]
    if col.endswith("_s") and unit in _TIME:
        return _TIME[unit]
    if unit == "%" and "pct" not in col:
        return 100.0
    return 1.0


@dataclass(frozen=True)
class Metric:
    col: str
    label: str
    unit: str = ""
    scale: float = 1.0

    @property
    def axis_label(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def fmt(self, v: float, ci: float = math.nan) -> str:
        if v is None or not np.isfinite(v):
            return "-"
        digits = _digits(v)
        s = f"{v:.{digits}f}"
        if ci is not None and np.isfinite(ci):
            s += f" ± {ci:.{digits}f}"
        return s

    def fmt_iv(self, v: float, lo: float, hi: float, method: str = "t95") -> str:
        """``mean ± h`` for a symmetric t interval, ``mean [lo, hi]`` for a clipped one or a
        min–max range (values already scaled)."""
        if v is None or not np.isfinite(v):
            return "-"
        digits = _digits(v)
        s = f"{v:.{digits}f}"
        if method == "none" or not (np.isfinite(lo) and np.isfinite(hi)):
            return s
        if method == "t95" and abs((hi - v) - (v - lo)) <= 1e-9 * max(1.0, abs(v)):
            return s + f" ± {hi - v:.{digits}f}"
        return s + f" [{lo:.{digits}f}, {hi:.{digits}f}]"


def _digits(v: float) -> int:
    a = abs(v)
    if a == 0 or a >= 100:
        return 1
    if a >= 10:
        return 2
    if a >= 1:
        return 3
    return min(6, 3 + int(-math.floor(math.log10(a))) - 1)


def metric(spec, where: str = "") -> Metric:
    """A metric from ``"column"`` or ``{col = ..., label = ..., unit = ..., scale = ...}``."""
    if isinstance(spec, str):
        spec = {"col": spec}
    if not isinstance(spec, dict) or "col" not in spec or not isinstance(spec["col"], str):
        raise SpecError(f"{where}: expected a column name or a table with col = \"...\"")
    unknown = set(spec) - {"col", "label", "unit", "scale"}
    if unknown:
        raise SpecError(f"{where}.{sorted(unknown)[0]}: unknown key; known: col, label, unit, scale")
    col = spec["col"]
    label, unit = KNOWN.get(col, (col, ""))
    label = spec.get("label", label)
    unit = spec.get("unit", unit)
    scale = float(spec["scale"]) if "scale" in spec else auto_scale(col, unit)
    return Metric(col, str(label), str(unit), scale)


def metrics(spec, where: str = "") -> list[Metric]:
    items = spec if isinstance(spec, list) else [spec]
    return [metric(s, f"{where}[{i}]" if isinstance(spec, list) else where) for i, s in enumerate(items)]


#: fewest seeds for a Student-t interval; with fewer, the interval is the range of the values
MIN_T_SEEDS = 3


def bounds(col: str) -> tuple[float, float]:
    """The range a metric column can take, so that no interval leaves it: Jain's indices, shares,
    utilisation, losses, fractions and ratios in [0, 1]; percentages in [0, 100]; rates, times, queue lengths, counts
    and AQM state averages at least 0; anything else unbounded."""
    c = col.lower()
    leaf = c.rsplit(".", 1)[-1]
    if "jain" in c or leaf in ("share", "utilisation", "drop_ratio", "normalised_goodput", "web_drop_share", "loss") \
            or leaf.endswith(("_share", "_ratio", "_fraction")):
        return 0.0, 1.0
    if leaf.endswith("_pct") or leaf == "pct":
        return 0.0, 100.0
    if (leaf.endswith(("_bps", "_s", "_pkts", "_bytes", "_total", "_mean")) or c.startswith(("bottleneck.drops.",))
            or leaf in ("flows", "arrivals", "departures", "timeouts", "bneck_arrivals", "drops", "jain", "starved")):
        return 0.0, math.inf
    return -math.inf, math.inf


@dataclass(frozen=True)
class Interval:
    """Mean of the finite values and an interval around it: the 95 % Student-t interval with at
    least :data:`MIN_T_SEEDS` values (``method = "t95"``), else the range min–max of the values
    (``"range"``; one value: ``"none"``, no interval). The interval is clipped to the metric's range
    (:func:`bounds`); ``clipped`` says whether it was."""

    mean: float
    lo: float
    hi: float
    n: int
    method: str
    clipped: bool = False

    @property
    def half(self) -> float:
        """The half-width of an unclipped t interval (NaN otherwise)."""
        return (self.hi - self.mean) if self.method == "t95" and not self.clipped else math.nan


def interval(x, lo: float = -math.inf, hi: float = math.inf) -> Interval:
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    n = a.size
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "none")
    m = float(a.mean())
    if n == 1:
        return Interval(m, m, m, 1, "none")
    if n < MIN_T_SEEDS:
        return Interval(m, float(a.min()), float(a.max()), n, "range")
    h = float(_st.t.ppf(0.975, n - 1) * a.std(ddof=1) / math.sqrt(n))
    l, u = max(m - h, lo), min(m + h, hi)
    return Interval(m, l, u, n, "t95", clipped=(l != m - h or u != m + h))


def interval_for(col: str, x) -> Interval:
    """:func:`interval` within the range of column ``col``."""
    return interval(x, *bounds(col))


def mean_ci(x) -> tuple[float, float, int]:
    """Mean, half-width of the 95 % Student-t interval and n of the finite values (the half-width
    is NaN with fewer than :data:`MIN_T_SEEDS` values)."""
    iv = interval(x)
    return iv.mean, (iv.hi - iv.mean) if iv.method == "t95" else math.nan, iv.n


def interval_short(method: str) -> str:
    """A figure title's name for the interval: ``"95 % t-interval"`` or ``"min–max of seeds"``."""
    return {"t95": "95 % t-interval", "range": "min–max of seeds"}.get(method, "no interval")


def interval_note(methods) -> str:
    """What the error bars of a figure or the intervals of a table are, from the methods used."""
    ms = set(methods) - {"none"}
    if not ms:
        return "one seed per point: no interval"
    parts = []
    if "t95" in ms:
        parts.append(f"95 % Student-t confidence interval over seeds (≥ {MIN_T_SEEDS} seeds), clipped to the "
                     f"metric's range")
    if "range" in ms:
        parts.append(f"min–max over the seeds (fewer than {MIN_T_SEEDS} seeds: no confidence interval)")
    return "; ".join(parts)


def summarise(df: pd.DataFrame, by: list[str], cols: list[str]) -> pd.DataFrame:
    """Per group of ``by`` (in order of appearance): ``<col>`` (mean), ``<col>_lo`` and ``<col>_hi``
    (the :class:`Interval`, within the column's range), ``<col>_n`` and ``<col>_method``."""
    rows = []
    if not by:
        groups = [((), df)]
    else:
        key = df[by].astype(str).agg("\x1f".join, axis=1) if len(by) > 1 else df[by[0]].astype(str)
        order = list(dict.fromkeys(key))
        groups = []
        for k in order:
            sub = df[key == k]
            groups.append((tuple(sub[c].iloc[0] for c in by), sub))
    for vals, sub in groups:
        r = dict(zip(by, vals))
        for c in cols:
            iv = interval_for(c, sub[c]) if c in sub else Interval(math.nan, math.nan, math.nan, 0, "none")
            r[c], r[f"{c}_lo"], r[f"{c}_hi"], r[f"{c}_n"], r[f"{c}_method"] = iv.mean, iv.lo, iv.hi, iv.n, iv.method
        rows.append(r)
    return pd.DataFrame(rows)


def err(tab: pd.DataFrame, col: str, scale: float = 1.0) -> np.ndarray | None:
    """Asymmetric error-bar lengths (2 × n) of a :func:`summarise` column, for matplotlib; ``None``
    when no mark has an interval (one seed per point: no bars, rather than bars of zero width)."""
    if f"{col}_method" in tab.columns and len(tab) and (tab[f"{col}_method"] == "none").all():
        return None
    m = tab[col].to_numpy(dtype=float)
    lo = np.nan_to_num(m - tab[f"{col}_lo"].to_numpy(dtype=float))
    hi = np.nan_to_num(tab[f"{col}_hi"].to_numpy(dtype=float) - m)
    return np.vstack([np.maximum(lo, 0.0), np.maximum(hi, 0.0)]) * abs(scale)


def where_mask(df: pd.DataFrame, where: dict | None) -> pd.Series:
    """Rows whose columns equal the given values (a list means any of them)."""
    m = pd.Series(True, index=df.index)
    for k, v in (where or {}).items():
        if k not in df.columns:
            raise SpecError(f"where.{k}: no such column")
        vals = v if isinstance(v, list) else [v]
        col = df[k]
        m &= col.isin(vals) | col.astype(str).isin([str(x) for x in vals])
    return m
