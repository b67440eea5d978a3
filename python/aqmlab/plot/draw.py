"""``aqmlab plot``: figures of one's own runs and sweeps, drawn by the code that draws the report.

Sources are run folders (written by ``aqmlab run``: ``summary.json``, ``flows``, ``timeseries``,
...) and sweep folders (written by ``aqmlab sweep``: ``runs``, ``flows``, ... tables), in any mix.
They become one table of runs — the sweep's varied keys, ``run`` (a run folder's name, a sweep
run's id), ``seed``, ``scenario``, ``aqm`` and every metric of :func:`aqmlab.run.metrics.run_row` —
and the per-flow, time-series and queue-snapshot tables of those runs. A figure groups them by
any column (``--by``), averages over seeds with intervals (95 % Student-t with three seeds or
more, the min–max with two), and is drawn by :mod:`aqmlab.analysis.figures` in the ``paper`` style
by default (:mod:`aqmlab.analysis.plotstyle`).

=============  =========================================================================  =============
kind           what                                                                      default ``y``
=============  =========================================================================  =============
``line``       ``y`` (metrics of the runs table) against ``x`` (a column), one line per    (required)
               ``--by`` group, mean over seeds with intervals
``bar``        the same as grouped bars over a categorical ``x``                           (required)
``cdf``        distribution (relative cumulative frequency) of a per-flow column, one     ``goodput_bps``
               curve per ``--by`` group, flows pooled over seeds
``timeseries`` a column of the bottleneck time series against time (first seed of each    ``queue_pkts``
               group), one row of panels per group
``flows``      per-flow bars (mean over seeds with intervals) with the ideal fair share,  ``throughput_bps``
               one panel per ``--by`` group
``queue``      the queue's composition by position: the fraction of UDP packets at each   (UDP)
               position from the tail (needs ``simulation.queue_snapshots = true``)
=============  =========================================================================  =============
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import PlotError

KINDS = {"line": "xy", "bar": "bar", "cdf": "rcf", "timeseries": "timeseries", "flows": "flows_bar",
         "queue": "queue_profile"}
TABLE_FILES = {"flows": "flows", "timeseries": "timeseries", "snapshots": "queue_snapshots",
               "flow_series": "flow_series"}


# ----------------------------------------------------------------------------- reading sources


def _read_table(d: Path, stem: str):
    import pandas as pd

    pq, csv = d / f"{stem}.parquet", d / f"{stem}.csv"
    try:
        if pq.is_file():
            return pd.read_parquet(pq)
        if csv.is_file():
            return pd.read_csv(csv)
    except Exception as e:  # a damaged file: say which
        raise PlotError(f"{pq if pq.is_file() else csv}: not a readable table ({type(e).__name__}: {e})")
    return None


def _run_folder(d: Path):
    """A run folder as a Result-like object (summary and tables)."""
    from ..run.result import Result

    try:
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PlotError(f"{d / 'summary.json'}: not readable ({e})")
    flows = _read_table(d, "flows")
    if flows is None:
        raise PlotError(f"{d}: no flows.csv or flows.parquet (a folder written by `aqmlab run`)")
    ts = _read_table(d, "timeseries")
    res = Result(summary, flows, ts)
    res.snapshots = _read_table(d, "queue_snapshots")
    res.flow_series = _read_table(d, "flow_series")
    return res


@dataclass
class Data:
    """What a figure is drawn from: the runs table, the grouping columns and the result tables."""

    runs: object  # DataFrame
    dims: list  # the sweeps' varied keys (and "run" for run folders)
    tables: dict = field(default_factory=dict)  # name -> DataFrame (each with "run" and "seed")
    sources: list = field(default_factory=list)


def load(sources) -> Data:
    """Read run folders and sweep folders (or ``runs.csv``/``runs.parquet`` files) into one Data."""
    import pandas as pd

    from ..run.metrics import run_row

    if not sources:
        raise PlotError("give at least one run or sweep folder")
    runs, dims, tables = [], [], {k: [] for k in TABLE_FILES}
    paths = [Path(s) for s in sources]
    many_sweeps = sum(1 for p in paths if _is_sweep(p)) > 1
    for p in paths:
        if not p.exists():
            raise PlotError(f"{p}: no such file or folder")
        if p.is_file() and p.name in ("runs.csv", "runs.parquet"):
            p = p.parent
        if _is_sweep(p):
            r = _read_table(p, "runs")
            cols = list(r.columns)
            d = cols[: cols.index("seed")] if "seed" in cols else []
            r = r.copy()
            if many_sweeps:
                r.insert(0, "sweep", p.name)
                d = ["sweep"] + d
            for k in d:
                if k not in dims:
                    dims.append(k)
            runs.append(r)
            for name, stem in TABLE_FILES.items():
                t = _read_table(p, stem)
                if t is not None:
                    if many_sweeps:
                        t = t.copy()
                        t.insert(0, "sweep", p.name)
                    tables[name].append(t)
        elif (p / "summary.json").is_file():
            res = _run_folder(p)
            sc = res.summary.get("scenario", {})
            row = {"run": p.name, "seed": sc.get("seed"), "scenario": sc.get("name"),
                   "aqm": res.summary.get("bottleneck", {}).get("aqm")}
            row.update(run_row(res))
            runs.append(pd.DataFrame([row]))
            if "run" not in dims:
                dims.append("run")
            for name, df in (("flows", res.flows), ("timeseries", res.timeseries), ("snapshots", res.snapshots),
                             ("flow_series", res.flow_series)):
                if df is not None and len(df.columns):
                    df = df.copy()
                    df.insert(0, "seed", sc.get("seed"))
                    df.insert(0, "run", p.name)
                    tables[name].append(df)
        else:
            raise PlotError(f"{p}: neither a run folder (summary.json) nor a sweep folder (runs.csv or runs.parquet)")
    all_runs = pd.concat(runs, ignore_index=True, sort=False)
    out = {k: pd.concat(v, ignore_index=True, sort=False) for k, v in tables.items() if v}
    return Data(all_runs, dims, out, [str(p) for p in paths])


def _is_sweep(p: Path) -> bool:
    return p.is_dir() and ((p / "runs.parquet").is_file() or (p / "runs.csv").is_file())


# ----------------------------------------------------------------------------- the figure context


class _Study:
    """What the figure code asks of an experiment, for figures outside any experiment."""

    variants: list = []
    variants_name = None
    id = "plot"
    path = Path(".")

    def __init__(self, labels: dict | None = None):
        self.labels = labels or {}

    def axis(self, name):
        return None

    def variant_labels(self, quick=False):
        return []


class _Res:
    def __init__(self, data: Data, coords: list):
        self.runs, self.coords, self._data = data.runs, coords, data

    def table(self, name: str):
        import pandas as pd

        t = self._data.tables.get(name)
        return t.copy() if t is not None else pd.DataFrame()


def context(data: Data, coords: list, out: Path, style: str = "paper", columns: int | None = None):
    from ..analysis.context import Context

    ctx = Context(_Study(), _Res(data, coords), out)
    ctx.style, ctx.columns = style, columns
    return ctx


# ----------------------------------------------------------------------------- building the spec


def _split(v) -> list:
    if not v:
        return []
    out = []
    for x in v if isinstance(v, (list, tuple)) else [v]:
        out += [s.strip() for s in str(x).split(",") if s.strip()]
    return out


def _where(items) -> dict:
    w = {}
    for it in items or []:
        k, sep, v = str(it).partition("=")
        if not sep or not k.strip():
            raise PlotError(f"--where {it}: expected COLUMN=VALUE or COLUMN=V1,V2")
        vals = [_value(x) for x in v.split(",")]
        w[k.strip()] = vals if len(vals) > 1 else vals[0]
    return w


def _value(s: str):
    s = s.strip()
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    return s


def _check_columns(cols, available, what: str, hint_table: str = "runs") -> None:
    for c in cols:
        if c not in available:
            near = [a for a in available if c.lower() in a.lower()][:6]
            raise PlotError(f"{what} {c}: not a column of the {hint_table} table"
                            + (f" (similar: {', '.join(near)})" if near else
                               f" (columns include: {', '.join(list(available)[:12])}, ...)"))


def spec_for(kind: str, data: Data, *, x=None, y=None, by=None, panels=None, where=None, name=None, title=None,
             xlabel=None, ylabel=None, logx=False, logy=False) -> tuple[dict, list]:
    """The figure spec (the keys of an experiment's ``[[figures]]``) and the grouping columns."""
    if kind not in KINDS:
        raise PlotError(f"--kind {kind}: one of {', '.join(KINDS)}")
    runs = data.runs
    by = _split(by)
    ys = _split(y)
    dims = [d for d in data.dims if d in runs.columns and runs[d].nunique(dropna=False) > 1] or list(data.dims[:1])
    spec = {"kind": KINDS[kind]}
    if where:
        spec["where"] = where
    if kind in ("line", "bar"):
        if not ys:
            raise PlotError(f"--y: {kind} needs the metric(s) to plot, e.g. --y udp.share or --y tcp.goodput_bps "
                            f"(any column of runs.csv)")
        _check_columns(ys, runs.columns, "--y")
        x = x or next((d for d in dims if d not in by and d != "run"), None) or (dims[0] if dims else None)
        if x is None:
            raise PlotError("--x: nothing varies between the sources; give --x COLUMN")
        _check_columns([x], runs.columns, "--x")
        if not by:
            by = [d for d in dims if d != x and d != "run"]
        spec.update(x=x, y=ys if len(ys) > 1 else ys[0], series=by)
        coords = ([panels] if panels else []) + by + ([x] if _categorical(runs[x]) or x in data.dims else [])
        if kind == "bar" and x not in coords:
            coords.append(x)
    elif kind == "cdf":
        col = ys[0] if ys else "goodput_bps"
        flows = data.tables.get("flows")
        if flows is None:
            raise PlotError("cdf: the sources have no flows table")
        _check_columns([col], flows.columns, "--y", "flows")
        by = by or [d for d in dims if d in flows.columns]
        _check_columns(by, flows.columns, "--by", "flows")
        keys = list(dict.fromkeys(tuple(r) for r in flows[by].itertuples(index=False, name=None))) if by else [None]
        series = [{"label": "all flows"} if k is None else
                  {"label": ", ".join(map(str, k)), "where": dict(zip(by, k))} for k in keys]
        spec.update(value={"col": col, "label": col.removesuffix("_bps").replace("_", " "),
                           "unit": "Mb/s" if col.endswith("_bps") else ""}, series=series)
        coords = by
    elif kind == "timeseries":
        ts = data.tables.get("timeseries")
        if ts is None:
            raise PlotError("timeseries: the sources have no timeseries table")
        col = ys[0] if ys else "queue_pkts"
        _check_columns([col], ts.columns, "--y", "timeseries")
        by = by or [d for d in dims if d in ts.columns]
        spec.update(y=col, series=by)
        coords = ([panels] if panels else []) + by
    elif kind == "flows":
        col = ys[0] if ys else "throughput_bps"
        flows = data.tables.get("flows")
        if flows is None:
            raise PlotError("flows: the sources have no flows table")
        _check_columns([col], flows.columns, "--y", "flows")
        pan = panels or (by[0] if by else next((d for d in dims if d in flows.columns), None))
        spec.update(y={"col": col, "label": col.removesuffix("_bps").replace("_", " "),
                       "unit": "kb/s" if col.endswith("_bps") else ""})
        if pan:
            spec["panels"] = pan
        coords = [pan] if pan else []
        panels = None
    else:  # queue
        snaps = data.tables.get("snapshots")
        if snaps is None:
            raise PlotError("queue: the sources have no queue_snapshots table (run with simulation.queue_snapshots "
                            "= true)")
        by = by or [d for d in dims if d in snaps.columns]
        spec.update(series=by)
        coords = ([panels] if panels else []) + by
    if panels and kind != "flows":
        _check_columns([panels], runs.columns, "--panels")
        spec["panels"] = panels
    for k, v in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
        if v:
            spec[k] = v
    if logx:
        spec["logx"] = True
    if logy:
        spec["logy"] = True
    yname = (ys[0] if ys else {"cdf": "goodput", "timeseries": "queue", "flows": "throughput",
                               "queue": "udp-by-position"}.get(kind, kind))
    spec["name"] = name or re.sub(r"[^\w.-]+", "-", f"{kind}-{yname}").strip("-")
    spec.setdefault("title", spec["name"])
    return spec, list(dict.fromkeys(c for c in coords if c))


def _spread(data: Data, cols) -> None:
    """Give every result table the runs-table columns ``cols`` it lacks (by run and seed), so that
    per-flow, time-series and snapshot figures can group by any column of the runs."""
    on = [c for c in ("sweep", "run", "seed") if c in data.runs.columns]
    for name, t in list(data.tables.items()):
        need = [c for c in dict.fromkeys(cols) if c in data.runs.columns and c not in t.columns]
        keys = [c for c in on if c in t.columns]
        if need and keys:
            data.tables[name] = t.merge(data.runs[keys + need].drop_duplicates(keys), on=keys, how="left")


def _numeric_units(data: Data, col: str) -> str | None:
    """A column of rates ("2Mb/s") or durations ("10ms") written with units becomes numbers (read by
    the scenario files' parser) in one unit, so a line plot gets a numeric axis; returns the unit."""
    from ..base.units import parse_duration, parse_rate

    vals = data.runs[col]
    if not all(isinstance(v, str) for v in vals):
        return None
    for parse, units in ((parse_rate, (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3), ("b/s", 1.0))),
                         (parse_duration, (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)))):
        try:
            nums = [parse(v) for v in vals]
        except ValueError:
            continue
        top = max(abs(x) for x in nums) if nums else 0.0
        unit, f = next(((u, f) for u, f in units if top >= f), units[-1])
        data.runs[col] = [x / f for x in nums]
        return unit
    return None


def _categorical(s) -> bool:
    import pandas as pd

    return not pd.api.types.is_numeric_dtype(s)


def plot(sources, kind: str = "line", out="plots", style: str = "paper", columns: int | None = None, **kw):
    """Draw one figure from run and sweep folders; returns the figure's Output (files, caption,
    comparison sentences). Keyword arguments as :func:`spec_for` (``x``, ``y``, ``by``, ``panels``,
    ``where``, ``name``, ``title``, ``xlabel``, ``ylabel``, ``logx``, ``logy``)."""
    from ..analysis import plotstyle
    from ..analysis.figures import make_figure
    from ..base.errors import SpecError

    try:
        plotstyle.check(style)
    except ValueError as e:
        raise PlotError(f"--style: {e}")
    if columns not in (None, 1, 2):
        raise PlotError(f"--width {columns}: 1 or 2 (paper columns)")
    data = load(sources)
    if isinstance(kw.get("where"), (list, tuple)):
        kw["where"] = _where(kw["where"])
    if kind == "line" and kw.get("x") in data.runs.columns:
        unit = _numeric_units(data, kw["x"])
        if unit and not kw.get("xlabel"):
            kw["xlabel"] = f"{kw['x']} ({unit})"
    _spread(data, _split(kw.get("by")) + _split(kw.get("panels")) + list((kw.get("where") or {}).keys()))
    spec, coords = spec_for(kind, data, **kw)
    ctx = context(data, coords, Path(out), style, columns)
    try:
        return make_figure(ctx, spec)
    except SpecError as e:
        raise PlotError(str(e))
