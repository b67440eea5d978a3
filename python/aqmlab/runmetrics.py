"""One run's results as one flat row of metrics, for sweep tables.

:func:`run_row` turns a :class:`~aqmlab.api.Result` into a ``dict`` of scalars whose keys are
dotted names. Every value comes from the run's summary, flows table and time series as defined in
docs/metrics.md; nothing here is specific to one experiment. The keys:

=====================================  =========================================================
key                                    value
=====================================  =========================================================
``bottleneck.<k>``                     every number of ``summary.bottleneck`` (``utilisation``,
                                       ``queue_mean_pkts``, ``delay_mean_s``, ``drop_ratio``, ...);
                                       ``bottleneck.drops.<reason>`` per drop reason
``fairness.<k>``                       ``summary.fairness`` (Jain's index, M4)
``group.<name>.<k>``                   every number of a ``summary.groups`` entry
                                       (``throughput_bps``, ``goodput_per_flow_bps``, ...)
``all.<k>``, ``tcp.<k>``, ``udp.<k>``  aggregates over all flows / one transport (below)
``app.<app>.<k>``                      aggregates over the flows of one application (``bulk``,
                                       ``cbr``, and others the engine reports)
``priority.<level>.<k>``               aggregates over the flows of one priority level
``variant.<v>.<k>``                    aggregates over the TCP flows of one congestion-control
                                       variant, when the flows table has a ``variant`` column
``aqm.<state>_mean``                   time average over the measurement window of each
                                       ``aqm_<state>`` column of the time series (M7b, M11);
                                       ``aqm.<state>_p05`` its 5th percentile over the samples
``bottleneck.queue_p05_pkts``, ...     5th, 50th and 95th percentiles of the sampled queue
                                       length (``queue_pkts``) over the window
``run.duration_s``, ``run.warmup_s``   the run length and warm-up as run (figure titles state them)
``fair_share_bps``                     M13: capacity / number of flows that started
``normalised_goodput``                 M15: TCP goodput / capacity
``tcp.starved``, ``group.<g>.starved``  TCP flows (of a group) whose goodput is below 10 % of the
                                       ideal fair share (:data:`STARVED`; our definition)
``sdv_throughput_bps``                 M14: sample standard deviation of all flows' throughputs
``web_drop_share``                     M9: drops of ``web`` flows / drops of all flows (NaN if no
                                       web flows or no drops)
=====================================  =========================================================

Aggregates ``<k>`` over a set of flows: ``flows`` (count), ``throughput_bps``, ``goodput_bps``,
``goodput_m2b_bps``, ``goodput_m2c_bps`` (sums, M1/M2/M2b/M2c), the same ``*_per_flow`` means,
``share`` (sum, M3), ``drops_total``, ``bneck_arrivals``, ``drop_pct`` (M9: ``100 · (drops_total −
drops_link_loss) / bneck_arrivals``), ``jain_throughput``, ``jain_goodput`` (M4) and ``timeouts``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: a TCP flow is counted as starved when its goodput is below this fraction of the fair share (M13)
STARVED = 0.1

_SUMS = ("throughput_bps", "goodput_bps", "goodput_m2b_bps", "goodput_m2c_bps", "share", "drops_total",
         "bneck_arrivals", "timeouts")
_PER_FLOW = ("throughput_bps", "goodput_bps", "goodput_m2b_bps", "goodput_m2c_bps")


def jain(x) -> float:
    """Jain's index (Σx)²/(n·Σx²); 1 when every value is 0, NaN for no values."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return math.nan
    s2 = float((x * x).sum())
    return 1.0 if s2 == 0 else float(x.sum() ** 2 / (x.size * s2))


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _flatten(prefix: str, d: dict, out: dict) -> None:
    for k, v in d.items():
        if isinstance(v, dict):
            _flatten(f"{prefix}{k}.", v, out)
        elif _number(v):
            out[f"{prefix}{k}"] = float(v)
        elif v is None:
            out[f"{prefix}{k}"] = math.nan


def aggregate(flows: pd.DataFrame) -> dict:
    """The aggregates listed in the module notes over the rows of ``flows``."""
    out: dict = {"flows": float(len(flows))}
    for c in _SUMS:
        if c in flows:
            out[c] = float(flows[c].sum())
    n = len(flows)
    for c in _PER_FLOW:
        if c in flows:
            out[c.replace("_bps", "_per_flow_bps")] = float(flows[c].sum() / n) if n else math.nan
    if "bneck_arrivals" in flows and "drops_total" in flows:
        arr = float(flows["bneck_arrivals"].sum())
        lost = float(flows["drops_total"].sum() - flows.get("drops_link_loss", pd.Series(0.0)).sum())
        out["drop_pct"] = 100.0 * lost / arr if arr > 0 else math.nan
    if "throughput_bps" in flows:
        out["jain_throughput"] = jain(flows["throughput_bps"])
    if "goodput_bps" in flows:
        out["jain_goodput"] = jain(flows["goodput_bps"])
    return out


def _put(prefix: str, d: dict, row: dict) -> None:
    for k, v in d.items():
        row[f"{prefix}.{k}"] = v


def run_row(result) -> dict:
    """The flat metrics of one run (see the module notes)."""
    s = result.summary
    row: dict = {}
    b = s["bottleneck"]
    _flatten("bottleneck.", {k: v for k, v in b.items() if k != "queue_unit"}, row)
    _flatten("fairness.", s.get("fairness", {}), row)
    for g in s.get("groups", []):
        _flatten(f"group.{g['name']}.", {k: v for k, v in g.items() if k != "name"}, row)

    f = result.flows
    _put("all", aggregate(f), row)
    for t in ("tcp", "udp"):
        _put(t, aggregate(f[f["transport"] == t]), row)
    for app, sub in f.groupby("app", sort=True):
        _put(f"app.{app}", aggregate(sub), row)
    for level, sub in f.groupby("priority", sort=True):
        _put(f"priority.{int(level)}", aggregate(sub), row)
    if "variant" in f.columns:
        tcp = f[f["transport"] == "tcp"]
        for v, sub in tcp.groupby("variant", sort=True):
            if v:
                _put(f"variant.{v}", aggregate(sub), row)

    cap = float(b["capacity_bps"])
    sc = s["scenario"]
    row["run.duration_s"] = float(sc["duration_s"])
    row["run.warmup_s"] = float(sc.get("warmup_s", 0.0))
    started = f[f["start_s"] < sc["duration_s"]] if "start_s" in f else f
    row["fair_share_bps"] = cap / len(started) if len(started) else math.nan
    row["normalised_goodput"] = float(f.loc[f["transport"] == "tcp", "goodput_bps"].sum()) / cap
    # starved flows: TCP goodput below STARVED of the ideal fair share
    tcp = started[started["transport"] == "tcp"] if "transport" in started else started.iloc[0:0]
    low = tcp["goodput_bps"] < STARVED * row["fair_share_bps"] if len(tcp) else pd.Series(dtype=bool)
    row["tcp.starved"] = float(low.sum())
    if "group" in tcp:
        for g in s.get("groups", []):
            row[f"group.{g['name']}.starved"] = float(low[tcp["group"] == g["name"]].sum())
    row["sdv_throughput_bps"] = float(f["throughput_bps"].std(ddof=1)) if len(f) > 1 else math.nan
    web = f[f["app"] == "web"]
    total_drops = float(f["drops_total"].sum() - f["drops_link_loss"].sum())
    if len(web) and total_drops > 0:
        row["web_drop_share"] = float(web["drops_total"].sum() - web["drops_link_loss"].sum()) / total_drops
    else:
        row["web_drop_share"] = math.nan

    ts = result.timeseries
    if ts is not None and len(ts):
        win = ts[ts["time_s"] >= sc.get("warmup_s", 0.0)]
        for c in ts.columns:
            if c.startswith("aqm_"):
                row[f"aqm.{c[4:]}_mean"] = float(win[c].mean()) if len(win) else math.nan
                row[f"aqm.{c[4:]}_p05"] = float(win[c].quantile(0.05)) if len(win) else math.nan
        if "queue_pkts" in ts.columns:
            for q in (5, 50, 95):
                row[f"bottleneck.queue_p{q:02d}_pkts"] = float(win["queue_pkts"].quantile(q / 100)) if len(win) else math.nan
    return row
