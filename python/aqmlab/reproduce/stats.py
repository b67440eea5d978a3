"""Metric specifications (column, label, unit, scale) and means with 95 % confidence intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st

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
    "udp.drop_pct": ("UDP drop percentage", "%"),
    "normalised_goodput": ("normalised TCP goodput", ""),
    "sdv_throughput_bps": ("SDV of throughputs", "kb/s"),
    "web_drop_share": ("web drop share", ""),
    "aqm.p0_mean": ("time-average p0", ""),
    "fair_share_bps": ("ideal fair share", "kb/s"),
}

_RATE = {"b/s": 1.0, "kb/s": 1e-3, "Mb/s": 1e-6, "Gb/s": 1e-9}
_TIME = {"s": 1.0, "ms": 1e3, "us": 1e6}


class SpecError(ValueError):
    pass


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


def mean_ci(x) -> tuple[float, float, int]:
    """Mean, half-width of the 95 % confidence interval (Student t) and n of the finite values."""
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    n = a.size
    if n == 0:
        return math.nan, math.nan, 0
    m = float(a.mean())
    if n == 1:
        return m, math.nan, 1
    sd = float(a.std(ddof=1))
    return m, float(_st.t.ppf(0.975, n - 1) * sd / math.sqrt(n)), n


def summarise(df: pd.DataFrame, by: list[str], cols: list[str]) -> pd.DataFrame:
    """Per group of ``by`` (in order of appearance): ``<col>``, ``<col>_ci95`` and ``<col>_n``."""
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
            if c in sub:
                m, ci, n = mean_ci(sub[c])
            else:
                m, ci, n = math.nan, math.nan, 0
            r[c], r[f"{c}_ci95"], r[f"{c}_n"] = m, ci, n
        rows.append(r)
    return pd.DataFrame(rows)


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
