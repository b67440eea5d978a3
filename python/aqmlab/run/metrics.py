"""One run's results as one flat row of metrics, for sweep tables.

:func:`run_row` turns a :class:`~aqmlab.run.result.Result` into a ``dict`` of scalars (numbers, and
the ``aqm`` label) whose keys are dotted names. Every value comes from the run's summary, flows table and time series as defined in
docs/metrics.md; nothing here is specific to one experiment. The keys:

=====================================  =========================================================
key                                    value
=====================================  =========================================================
``aqm``                                the name of the measured queue discipline (the
                                       bottleneck's, or the one measured link's): a label, the
                                       only text among the metrics
``bottleneck.<k>``                     every number of ``summary.bottleneck`` (``utilisation``,
                                       ``queue_mean_pkts``, ``delay_mean_s``, ``drop_ratio``, ...);
                                       ``bottleneck.drops.<reason>`` per drop reason,
                                       ``bottleneck.groups.<name>.<k>`` per group (dumbbells)
``links.<link>.<k>``                   the same for every other measured link (``summary.links``):
                                       ``links.r1-r2.utilisation``, ``links.r1-r2.groups.udp.share``
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
                                       ``aqm_<state>`` column of the time series (M7b, M11): the
                                       bottleneck's, or the one measured link's;
                                       ``aqm.<state>_p05`` its 5th percentile, ``aqm.<state>_min``
                                       its minimum and ``aqm.<state>_std`` the sample standard
                                       deviation over the samples;
                                       ``links.<link>.aqm.<state>_mean`` (and ``_p05``, ``_min``, ``_std``) per link
                                       when there are several
``bottleneck.queue_p05_pkts``, ...     5th, 50th and 95th percentiles of the sampled queue
                                       length (``queue_pkts``) over the window;
                                       ``links.<link>.queue_p05_pkts``, ... per measured link
``bottleneck.queue_target_pkts``       the queue target of the bottleneck's discipline, for the
                                       controllers that have one (RAQM ``q0``, PI ``q_ref``, REM
                                       ``b0``: :data:`QUEUE_TARGETS`), as the resolved scenario
                                       sets it (absent for other disciplines);
                                       and, over the sampled queue in
                                       the window: ``queue_rms_err_pkts``, the root-mean-square
                                       distance of the queue from the target, and
                                       ``queue_excess_mean_pkts``, the mean of the queue's excess
                                       over the target (``max(0, q − target)``): the overshoot,
                                       its height and duration together
``snapshots.<k>``                      with queue snapshots (one measured link, or the bottleneck's):
                                       ``count`` (J), ``queue_mean_pkts`` (b_avg), ``udp_pkts_mean``
                                       (mean UDP packets per snapshot), ``udp_fraction`` (their
                                       ratio), and of the spatial distribution M10 (200 points):
                                       ``rho_udp_tail`` (y = 0), ``rho_udp_head`` (y = b_avg),
                                       ``rho_udp_mean`` (over the points), ``rho_udp_head_over_tail``
``run.duration_s``, ``run.warmup_s``   the run length and warm-up as run (figure titles state them)
``fair_share_bps``                     M13: capacity / number of flows that started (dumbbells)
``normalised_goodput``                 M15: TCP goodput / capacity (dumbbells)
``tcp.starved``, ``group.<g>.starved``  TCP flows (of a group) whose goodput is below 10 % of the
                                       ideal fair share (:data:`STARVED`; our definition)
``tcp.zero_goodput``,                  TCP flows (of a group) that started and delivered no data
``group.<g>.zero_goodput``             at all in the window (goodput exactly 0: [CHOKeW]'s starved
                                       flows, read off the RCF at goodput zero)
``tcp.goodput_min_bps``,               the lowest goodput of a TCP flow (of a group) that started
``group.<g>.goodput_min_bps``          (the foot of the RCF of goodput)
``sdv_throughput_bps``                 M14: sample standard deviation of all flows' throughputs
``web_drop_share``                     M9: drops of ``web`` flows / drops of all flows (NaN if no
                                       web flows or no drops)
``group.<g>.owd_p99_s``, ...           with ``simulation.latency = true`` or a probe group
                                       (``app = "probe"``): a group's one-way delay and RTT
                                       percentiles, from its summary entry (``owd_p50_s``,
                                       ``owd_p90_s``, ``owd_p99_s``, ``owd_p999_s``, ``owd_max_s``,
                                       ``owd_mean_s``, ``owd_samples`` and the same ``rtt_*`` but
                                       the mean; docs/metrics.md, "Latency distributions")
``users.jain_throughput``              Jain's index of the users' throughputs, a user being a flow
                                       except that the connections of one web session (flows
                                       column ``session`` >= 0) make one user, their throughputs
                                       summed; ``users.count`` the number of users;
                                       ``users.jain_throughput_tcp`` and ``users.count_tcp``
                                       the same over the TCP flows
=====================================  =========================================================

Probe flows (``app = "probe"``) are left out of every aggregate and index over flows (``all``,
``udp``, ``priority``, ``variant``, ``fair_share_bps``, ``users``, ...) but their own
``app.probe.*`` and ``group.<name>.*``: they measure the network, they are not traffic sharing it.

Aggregates ``<k>`` over a set of flows: ``flows`` (count), ``throughput_bps``, ``goodput_bps``,
``goodput_m2b_bps``, ``goodput_m2c_bps`` (sums, M1/M2/M2b/M2c), the same ``*_per_flow`` means,
``throughput_max_per_flow_bps`` and ``throughput_min_per_flow_bps`` (the largest and smallest flow's),
``share`` (sum, M3), ``drops_total``, ``bneck_arrivals``, ``drop_pct`` (M9: ``100 · (drops_total −
drops_link_loss) / bneck_arrivals``, in percent as [WARD] prints it), ``loss`` (a fraction: ``Σ
drops_total / (Σ drops_total + Σ delivered_pkts)``, the summary's group ``loss``), ``drops_matched`` (sum of the matched drops, arrivals and
victims) and ``drops_overflow`` (sum of the overflow drops), ``jain_throughput``, ``jain_goodput`` (M4)
and ``timeouts``. ``group.<name>.<k>`` also carries these aggregates over the group's flows where the
summary's group entry lacks the key (``group.udp1.drop_pct``, ``group.udp1.bneck_arrivals``, ...).
"""

from __future__ import annotations

import math

from ..base.metrics import jain
from .summary import loss_fraction

#: the parameter that holds a discipline's queue-length target, by ``type`` (``queue_target_pkts``)
QUEUE_TARGETS = {"raqm": "q0", "pi": "q_ref", "rem": "b0"}

#: a TCP flow is counted as starved when its goodput is below this fraction of the fair share (M13)
STARVED = 0.1

_SUMS = ("throughput_bps", "goodput_bps", "goodput_m2b_bps", "goodput_m2c_bps", "share", "drops_total",
         "bneck_arrivals", "timeouts")
_PER_FLOW = ("throughput_bps", "goodput_bps", "goodput_m2b_bps", "goodput_m2c_bps")

# Computed over plain Python lists (the engine's columns), not pandas: a sweep worker computes the row
# of every run it makes, and for small runs pandas' per-call cost would dominate. Sums are exact
# (math.fsum) and skip NaN, as pandas' sums and means do.


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


def _isnan(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _sum(values) -> float:
    """pandas' ``sum()``: NaN skipped, 0 for nothing."""
    return math.fsum(float(v) for v in values if not _isnan(v))


def _mean(values) -> float:
    vals = [float(v) for v in values if not _isnan(v)]
    return math.fsum(vals) / len(vals) if vals else math.nan


def _quantile(values, q: float) -> float:
    """pandas' ``quantile(q)`` (linear interpolation between the sorted non-NaN values)."""
    x = sorted(float(v) for v in values if not _isnan(v))
    if not x:
        return math.nan
    h = (len(x) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(x) - 1)
    t = h - lo
    a, b = x[lo], x[hi]
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t  # (numpy's form of the interpolation)


def _min(values) -> float:
    """The smallest non-NaN value (NaN for none)."""
    vals = [float(v) for v in values if not _isnan(v)]
    return min(vals) if vals else math.nan


def _std(values) -> float:
    """Sample standard deviation (ddof 1) of the non-NaN values."""
    vals = [float(v) for v in values if not _isnan(v)]
    if len(vals) < 2:
        return math.nan
    m = math.fsum(vals) / len(vals)
    return math.sqrt(math.fsum((v - m) ** 2 for v in vals) / (len(vals) - 1))


class _Table:
    """Columns by name, with row selections as index lists."""

    def __init__(self, columns):
        if hasattr(columns, "columns") and hasattr(columns, "to_dict"):  # a DataFrame
            columns = [(c, columns[c].tolist()) for c in columns.columns]
        self.cols = {name: list(values) for name, values in columns}
        self.n = len(next(iter(self.cols.values()))) if self.cols else 0

    def __contains__(self, c):
        return c in self.cols

    def col(self, c, rows):
        v = self.cols[c]
        return [v[i] for i in rows]

    def where(self, c, pred, rows):
        v = self.cols[c]
        return [i for i in rows if pred(v[i])]

    def groups(self, c, rows):
        """Row lists per distinct non-NaN value of column ``c``, sorted by value."""
        v = self.cols[c]
        out: dict = {}
        for i in rows:
            k = v[i]
            if not _isnan(k):
                out.setdefault(k, []).append(i)
        return sorted(out.items(), key=lambda kv: kv[0])


def aggregate(flows, rows=None) -> dict:
    """The aggregates listed in the module notes over ``rows`` of ``flows`` (all rows by default);
    ``flows`` is a DataFrame or ``(column, values)`` pairs."""
    f = flows if isinstance(flows, _Table) else _Table(flows)
    rows = range(f.n) if rows is None else rows
    n = len(rows)
    out: dict = {"flows": float(n)}
    for c in _SUMS:
        if c in f:
            out[c] = _sum(f.col(c, rows))
    for c in _PER_FLOW:
        if c in f:
            out[c.replace("_bps", "_per_flow_bps")] = _sum(f.col(c, rows)) / n if n else math.nan
    if "throughput_bps" in f:
        x = [float(v) for v in f.col("throughput_bps", rows) if not _isnan(v)]
        out["throughput_max_per_flow_bps"] = max(x) if x else math.nan
        out["throughput_min_per_flow_bps"] = min(x) if x else math.nan
    if "drops_matched_arrival" in f and "drops_matched_victim" in f:
        out["drops_matched"] = _sum(f.col("drops_matched_arrival", rows)) + _sum(f.col("drops_matched_victim", rows))
    if "drops_overflow" in f:
        out["drops_overflow"] = _sum(f.col("drops_overflow", rows))
    if "bneck_arrivals" in f and "drops_total" in f:
        arr = _sum(f.col("bneck_arrivals", rows))
        lost = _sum(f.col("drops_total", rows)) - (_sum(f.col("drops_link_loss", rows)) if "drops_link_loss" in f else 0.0)
        out["drop_pct"] = 100.0 * lost / arr if arr > 0 else math.nan
    if "drops_total" in f and "delivered_pkts" in f:
        out["loss"] = loss_fraction(f.col("drops_total", rows), f.col("delivered_pkts", rows))
    if "throughput_bps" in f:
        out["jain_throughput"] = jain(f.col("throughput_bps", rows))
    if "goodput_bps" in f:
        out["jain_goodput"] = jain(f.col("goodput_bps", rows))
    return out


def _put(prefix: str, d: dict, row: dict) -> None:
    for k, v in d.items():
        row[f"{prefix}.{k}"] = v


def _columns(result, name):
    if hasattr(result, "columns") and callable(result.columns):
        return result.columns(name)
    return getattr(result, name, None)


def run_row(result) -> dict:
    """The flat metrics of one run (see the module notes); ``result`` is an :class:`aqmlab.Result`."""
    s = result.summary
    row: dict = {}
    b = s.get("bottleneck")
    # the queue discipline measured (a label, not a number): the bottleneck's, else the only link's
    links = s.get("links", {})
    aqm = (b or {}).get("aqm") or (next(iter(links.values())).get("aqm") if len(links) == 1 else None)
    if aqm is not None:
        row["aqm"] = aqm
    if b is not None:
        _flatten("bottleneck.", {k: v for k, v in b.items() if k not in _LINK_LABELS}, row)
    for name, link in s.get("links", {}).items():
        if b is None or name != "bottleneck":
            _flatten(f"links.{name}.", {k: v for k, v in link.items() if k not in _LINK_LABELS}, row)
    _flatten("fairness.", s.get("fairness", {}), row)
    for g in s.get("groups", []):
        _flatten(f"group.{g['name']}.", {k: v for k, v in g.items() if k != "name"}, row)

    f = _Table(_columns(result, "flows"))
    # probe flows (app "probe") measure the network's delay; they are not traffic sharing it: every
    # aggregate below leaves them out but their own (app.probe.*, group.<probe group>.*)
    allrows = range(f.n)
    every = f.where("app", lambda v: v != "probe", allrows) if "app" in f else allrows
    _put("all", aggregate(f, every), row)
    for t in ("tcp", "udp"):
        _put(t, aggregate(f, f.where("transport", lambda v, t=t: v == t, every)), row)
    for name, rows in f.groups("group", allrows) if "group" in f else []:
        for k, v in aggregate(f, rows).items():
            row.setdefault(f"group.{name}.{k}", v)
    for app, rows in f.groups("app", allrows):
        _put(f"app.{app}", aggregate(f, rows), row)
    for level, rows in f.groups("priority", every):
        _put(f"priority.{int(level)}", aggregate(f, rows), row)
    tcp = f.where("transport", lambda v: v == "tcp", every)
    if "variant" in f:
        for v, rows in f.groups("variant", tcp):
            if v:
                _put(f"variant.{v}", aggregate(f, rows), row)

    cap = float(b["capacity_bps"]) if b is not None else math.nan
    sc = s["scenario"]
    row["run.duration_s"] = float(sc["duration_s"])
    row["run.warmup_s"] = float(sc.get("warmup_s", 0.0))
    started = f.where("start_s", lambda v: v < sc["duration_s"], every) if "start_s" in f else every
    row["fair_share_bps"] = cap / len(started) if len(started) else math.nan
    row["normalised_goodput"] = _sum(f.col("goodput_bps", tcp)) / cap
    # starved flows: TCP goodput below STARVED of the ideal fair share
    started_tcp = f.where("transport", lambda v: v == "tcp", started) if "transport" in f else []
    floor = STARVED * row["fair_share_bps"]
    low = f.where("goodput_bps", lambda v: v < floor, started_tcp) if started_tcp else []
    # (undefined without one capacity to share: other networks than a dumbbell)
    known = math.isfinite(row["fair_share_bps"])
    row["tcp.starved"] = float(len(low)) if known else math.nan
    # flows with no goodput at all (not a threshold: exactly zero)
    zero = f.where("goodput_bps", lambda v: v == 0, started_tcp) if started_tcp else []
    row["tcp.zero_goodput"] = float(len(zero))
    row["tcp.goodput_min_bps"] = _min(f.col("goodput_bps", started_tcp)) if started_tcp else math.nan
    if "group" in f:
        for g in s.get("groups", []):
            n_low = float(len(f.where("group", lambda v, n=g["name"]: v == n, low)))
            row[f"group.{g['name']}.starved"] = n_low if known else math.nan
            row[f"group.{g['name']}.zero_goodput"] = float(len(f.where("group", lambda v, n=g["name"]: v == n, zero)))
            mine = f.where("group", lambda v, n=g["name"]: v == n, started_tcp) if started_tcp else []
            row[f"group.{g['name']}.goodput_min_bps"] = _min(f.col("goodput_bps", mine)) if mine else math.nan
    row["sdv_throughput_bps"] = _std(f.col("throughput_bps", every)) if len(every) > 1 else math.nan
    web = f.where("app", lambda v: v == "web", every)
    total_drops = _sum(f.col("drops_total", every)) - _sum(f.col("drops_link_loss", every))
    if web and total_drops > 0:
        row["web_drop_share"] = (_sum(f.col("drops_total", web)) - _sum(f.col("drops_link_loss", web))) / total_drops
    else:
        row["web_drop_share"] = math.nan

    if "throughput_bps" in f:
        sess = f.cols.get("session")
        for name, rows in (("", every), ("_tcp", tcp)):
            users: dict = {}
            for i in rows:
                sid = sess[i] if sess is not None else -1
                key = ("s", int(sid)) if not _isnan(sid) and sid >= 0 else ("f", i)
                v = f.cols["throughput_bps"][i]
                users[key] = users.get(key, 0.0) + (0.0 if _isnan(v) else float(v))
            row[f"users.count{name}"] = float(len(users))
            row[f"users.jain_throughput{name}"] = jain(users.values())

    ts_cols = _columns(result, "timeseries")
    ts = _Table(ts_cols) if ts_cols is not None else None
    if ts is not None and ts.n:
        warm = sc.get("warmup_s", 0.0)
        win = ts.where("time_s", lambda v: v >= warm, range(ts.n))
        names = list(dict.fromkeys(ts.cols["link"])) if "link" in ts else []
        main = "bottleneck" if "bottleneck" in names else (names[0] if len(names) == 1 else None)
        for name in names if len(names) > 1 else []:
            rows = ts.where("link", lambda v, n=name: v == n, win)
            _ts_stats(ts, rows, f"links.{name}.aqm.", f"links.{name}.", row)
        if main is not None or not names:
            # the bottleneck's (or the only measured link's) under the keys of a dumbbell
            queue = "bottleneck." if main in (None, "bottleneck") else f"links.{main}."
            rows = ts.where("link", lambda v: v == main, win) if names else win
            _ts_stats(ts, rows, "aqm.", queue, row)
            if queue == "bottleneck." and b is not None and b.get("aqm") in QUEUE_TARGETS:
                _target_stats(ts, rows, _queue_target(result, b.get("aqm"), sc.get("overrides") or []), row)
    _snapshot_stats(result, s, row)
    return row


def _snapshot_stats(result, s: dict, row: dict) -> None:
    """The ``snapshots.*`` keys (module notes) of a run with queue snapshots."""
    info = s.get("queue_snapshots")
    cols = _columns(result, "snapshots") if info else None
    if not cols:
        return
    import pandas as pd

    from ..base.errors import RunDataError
    from .snapshots import spatial_distribution

    snaps = pd.DataFrame(dict(cols))
    if "link" in snaps.columns and snaps["link"].nunique() > 1:
        if not (snaps["link"] == "bottleneck").any():
            return
        snaps = snaps[snaps["link"] == "bottleneck"]
    count = int(info["count"])
    keys = ("count", "queue_mean_pkts", "udp_pkts_mean", "udp_fraction", "rho_udp_tail", "rho_udp_head",
            "rho_udp_mean", "rho_udp_head_over_tail")
    out = dict.fromkeys(keys, math.nan)
    out["count"] = float(count)
    if count > 0:
        n = float(len(snaps))
        udp = float(snaps["transport"].astype(str).str.strip().str.lower().eq("udp").sum()) if n else 0.0
        out["queue_mean_pkts"] = n / count
        out["udp_pkts_mean"] = udp / count
        out["udp_fraction"] = udp / n if n else math.nan
        try:
            rho = spatial_distribution(snaps, n_grid=200, count=count)["rho_udp"].tolist()
        except RunDataError:  # every snapshot empty
            rho = []
        if rho:
            out.update(rho_udp_tail=rho[0], rho_udp_head=rho[-1], rho_udp_mean=_mean(rho),
                       rho_udp_head_over_tail=rho[-1] / rho[0] if rho[0] > 0 else math.nan)
    _put("snapshots", {k: float(v) for k, v in out.items()}, row)


_LINK_LABELS = ("queue_unit", "name", "from", "to", "aqm", "index")


def _queue_target(result, kind, overrides) -> float:
    """The queue target (:data:`QUEUE_TARGETS`) of the bottleneck's discipline ``kind``: from the
    resolved scenario when the result has it, else from the overrides (``bottleneck.aqm={...}`` or
    ``bottleneck.aqm.<key>=...``; the last one wins); NaN when neither gives it."""
    from ..base.compat import tomllib

    key = QUEUE_TARGETS.get(kind)
    if key is None:
        return math.nan
    text = getattr(result, "scenario", None)
    if isinstance(text, str):
        try:
            aqm = tomllib.loads(text).get("bottleneck", {}).get("aqm", {})
            if isinstance(aqm, dict) and aqm.get("type") == kind and _number(aqm.get(key)):
                return float(aqm[key])
        except tomllib.TOMLDecodeError:
            pass
    target = math.nan
    for o in overrides:
        path, _, value = str(o).partition("=")
        path = path.strip()
        try:
            if path == "bottleneck.aqm":
                v = tomllib.loads("v = " + value)["v"]
                if isinstance(v, dict) and v.get("type") == kind:
                    target = float(v[key]) if _number(v.get(key)) else math.nan
            elif path == f"bottleneck.aqm.{key}":
                v = tomllib.loads("v = " + value)["v"]
                target = float(v) if _number(v) else math.nan
        except (tomllib.TOMLDecodeError, ValueError):
            continue
    return target


def _target_stats(ts: _Table, rows, target: float, row: dict) -> None:
    """``bottleneck.queue_target_pkts``, ``queue_rms_err_pkts`` and ``queue_excess_mean_pkts`` (module notes)."""
    row["bottleneck.queue_target_pkts"] = target
    row["bottleneck.queue_rms_err_pkts"] = row["bottleneck.queue_excess_mean_pkts"] = math.nan
    if math.isnan(target) or not rows or "queue_pkts" not in ts:
        return
    q = [float(v) for v in ts.col("queue_pkts", rows)]
    row["bottleneck.queue_rms_err_pkts"] = math.sqrt(math.fsum((v - target) ** 2 for v in q) / len(q))
    row["bottleneck.queue_excess_mean_pkts"] = math.fsum(max(0.0, v - target) for v in q) / len(q)


def _ts_stats(ts: _Table, rows, aqm: str, queue: str, row: dict) -> None:
    """Time averages, 5th percentiles and minima of the AQM's state over ``rows`` of the time series,
    and percentiles of the queue."""
    for c in ts.cols:
        if c.startswith("aqm_"):
            row[f"{aqm}{c[4:]}_mean"] = _mean(ts.col(c, rows)) if rows else math.nan
            row[f"{aqm}{c[4:]}_p05"] = _quantile(ts.col(c, rows), 0.05) if rows else math.nan
            row[f"{aqm}{c[4:]}_std"] = _std(ts.col(c, rows)) if rows else math.nan
            vals = [float(v) for v in ts.col(c, rows) if not _isnan(v)]
            row[f"{aqm}{c[4:]}_min"] = min(vals) if vals else math.nan
    if "queue_pkts" in ts:
        for q in (5, 50, 95):
            row[f"{queue}queue_p{q:02d}_pkts"] = _quantile(ts.col("queue_pkts", rows), q / 100) if rows else math.nan
