"""``summary.json`` built in Python, for the engines whose counts are not the simulator's own.

aqmlab's engine writes its summary itself (Rust, ``crates/sim/src/results/``). The emulator
(:mod:`aqmlab.emulate.results`) and ns-2.35 (:mod:`aqmlab.ns2.results`) count packets elsewhere
and build the same summary from their flows table and link counts with these functions, so the
definitions of docs/metrics.md are written once for both: a group's sums, shares, per-flow means,
Jain's indices and completion times (:func:`group_entry`); the fairness section
(:func:`fairness`); a measured link's rates and ratios (:func:`link_entry`).

Rows are flows-table rows as dicts (column -> value). Undefined values are NaN in the rows and
``None`` (JSON null) in the summary (:func:`clean`).
"""

from __future__ import annotations

import math

from .. import _core
from ..base.metrics import jain

#: the flows table's columns in order, every engine's (the simulator writes them in Rust,
#: ``sim::results::flows::COLUMNS``; the emulator's and ns-2's tables follow it), and those of them
#: that hold strings
FLOW_COLUMNS, FLOW_STRING_COLUMNS = (list(c) for c in _core.flow_columns())

#: drop reasons, in the flows table's column order (docs/metrics.md, "Drop reasons")
REASONS = ("early", "forced", "matched_arrival", "matched_victim", "overflow", "link_loss")
#: the reasons a queue gives (link losses are not queue drops)
QUEUE_REASONS = REASONS[:5]


def _finite(v) -> bool:
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def clean(v):
    """JSON has no NaN: undefined values become null, numpy scalars plain numbers (recursively)."""
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # a numpy scalar
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def jain_or_none(values) -> float | None:
    """Jain's index (:func:`aqmlab.base.metrics.jain`) of ``values``; None (JSON null) for no values."""
    x = [float(v) for v in values]
    return None if not x else jain(x)


def count_or_none(values) -> int | None:
    """A sum of counts: an int over the defined values, None when none is defined."""
    x = [float(v) for v in values if _finite(v)]
    return int(math.fsum(x)) if x else None


def _sum(values) -> float:
    return math.fsum(float(v) for v in values if _finite(v))


def group_entry(name: str, transport: str, app: str, variant: str, rows: list, capacity_bps: float,
                window_s: float = math.nan) -> dict:
    """A ``summary.groups`` entry over the group's flow rows (docs/metrics.md, "groups");
    ``window_s``: the measurement window's length, for the flows long in RTO recovery."""
    n = len(rows)
    rto = [float(r["rto_recovery_s"]) for r in rows if _finite(r.get("rto_recovery_s"))]
    thr = [r["throughput_bps"] for r in rows]
    good = [r["goodput_bps"] for r in rows]
    fct = sorted(float(r["completion_time_s"]) for r in rows if _finite(r.get("completion_time_s")))
    thr_sum, good_sum = _sum(thr), _sum(good)
    return {
        "name": name,
        "transport": transport,
        "app": app,
        "variant": variant,
        "flows": n,
        "throughput_bps": thr_sum,
        "goodput_bps": good_sum,
        "share": thr_sum / capacity_bps if capacity_bps else None,
        "throughput_per_flow_bps": thr_sum / n if n else None,
        "goodput_per_flow_bps": good_sum / n if n else None,
        "jain_throughput": jain_or_none(thr),
        "jain_goodput": jain_or_none(v for v in good if _finite(v)),
        "drops": {r: int(_sum(x[f"drops_{r}"] for x in rows)) for r in REASONS},
        "loss": loss_fraction([r["drops_total"] for r in rows], [r["delivered_pkts"] for r in rows]),
        "timeouts": count_or_none(r["timeouts"] for r in rows),
        "fast_retransmits": count_or_none(r["fast_retransmits"] for r in rows),
        "ce_marks": int(_sum(r["ce_marks"] for r in rows)),
        "ecn_reductions": count_or_none(r["ecn_reductions"] for r in rows),
        "completed": len(fct),
        "completion_time_mean_s": math.fsum(fct) / len(fct) if fct else None,
        "completion_time_median_s": fct[len(fct) // 2] if fct else None,
        "rto_recovery_s": math.fsum(rto) if rto else None,
        "rto_recovery_max_s": max(rto) if rto else None,
        "rto_recovery_flows": sum(1 for x in rto if x > window_s / 10) if rto and _finite(window_s) else None,
    }


def loss_fraction(drops, delivered) -> float:
    """The fraction of a set of flows' data packets lost, of those whose fate was decided in the
    window: ``Σ drops_total / (Σ drops_total + Σ delivered_pkts)`` (docs/metrics.md, "groups");
    ``drops`` and ``delivered`` are the flows' two columns. NaN when nothing was dropped or delivered."""
    lost = _sum(drops)
    fated = lost + _sum(delivered)
    return lost / fated if fated > 0 else math.nan


def fairness(rows: list) -> dict:
    """The ``fairness`` section: Jain's index of every flow's throughput but probes', of the TCP flows'
    throughputs and of their (defined) goodputs."""
    every = [r for r in rows if r.get("app") != "probe"]
    tcp = [r for r in every if r["transport"] == "tcp"]
    return {
        "jain_throughput_all": jain_or_none(r["throughput_bps"] for r in every),
        "jain_throughput_tcp": jain_or_none(r["throughput_bps"] for r in tcp),
        "jain_goodput_tcp": jain_or_none(r["goodput_bps"] for r in tcp if _finite(r["goodput_bps"])),
    }


def link_entry(c: dict, capacity_bps: float, window_s: float) -> dict:
    """A measured link's summary entry (docs/metrics.md, "bottleneck"): ``c`` gives ``aqm``,
    ``delay_s``, ``limit``, ``queue_unit``, ``arrivals``, ``transmitted``, ``transmitted_bytes``,
    ``drops`` (by queue reason), ``link_loss_drops`` and the queue and delay statistics
    (``queue_mean_pkts``, ``queue_mean_bytes``, ``queue_max_pkts``, ``delay_mean_s``,
    ``delay_p50_s``, ``delay_p95_s``, ``delay_p99_s``, ``delay_samples``); the rates and ratios are
    computed here."""
    drops = {r: int(c["drops"].get(r, 0)) for r in QUEUE_REASONS}
    total = sum(drops.values())
    arrivals = int(c["arrivals"])
    out = {
        "aqm": c["aqm"],
        "capacity_bps": capacity_bps,
        "delay_s": c["delay_s"],
        "limit": c["limit"],
        "queue_unit": c["queue_unit"],
        "utilisation": c["transmitted_bytes"] * 8 / (capacity_bps * window_s),
        "throughput_bps": c["transmitted_bytes"] * 8 / window_s,
        "arrivals": arrivals,
        "transmitted": int(c["transmitted"]),
        "drops": drops,
        "drops_total": total,
        "link_loss_drops": int(c.get("link_loss_drops", 0)),
        "drop_ratio": total / arrivals if arrivals else 0.0,
    }
    for k in ("queue_mean_pkts", "queue_mean_bytes", "queue_max_pkts", "delay_mean_s", "delay_p50_s", "delay_p95_s",
              "delay_p99_s", "delay_samples"):
        out[k] = c[k]
    return out


__all__ = ["REASONS", "QUEUE_REASONS", "clean", "jain_or_none", "count_or_none", "group_entry", "loss_fraction", "fairness",
           "link_entry"]
