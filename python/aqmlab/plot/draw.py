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
``flow_series`` each flow's ``y`` over time, one line per flow (``flow_id 3 (cubic)``), first  ``cwnd``
               seed; at most :data:`MAX_FLOW_LINES` flows (needs
               ``simulation.flow_series_interval``)
``latency``    the distribution of per-packet delays in ms (``owd``: one-way, ``rtt``:     ``owd``
               round trip), one curve per group (and per run or varied key), flows and
               seeds pooled; ``tail`` the fraction of packets slower than each delay on a
               log axis (needs ``simulation.latency = true`` or a probe group)
=============  =========================================================================  =============
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import PlotError

KINDS = {"line": "xy", "bar": "bar", "cdf": "rcf", "timeseries": "timeseries", "flows": "flows_bar",
         "queue": "queue_profile", "latency": "latency_cdf", "flow_series": "flow_timeseries"}
#: the most flows one flow_series figure draws (each is a line)
MAX_FLOW_LINES = 12
#: how some columns are named on axes, legends and panels unless --label says otherwise
DEFAULT_LABELS = {"aqm": "AQM", "bottleneck.aqm.type": "AQM", "bottleneck.aqm": "AQM", "scenario": "scenario",
                  "run": "run", "seed": "seed"}
TABLE_FILES = {"flows": "flows", "timeseries": "timeseries", "snapshots": "queue_snapshots",
               "flow_series": "flow_series", "latency": "latency"}


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
    res.latency = _read_table(d, "latency")
    return res


@dataclass
class Data:
    """What a figure is drawn from: the runs table, the grouping columns and the result tables."""

    runs: object  # DataFrame
    dims: list  # the sweeps' varied keys (and "run" for run folders)
    tables: dict = field(default_factory=dict)  # name -> DataFrame (each with "run" and "seed")
    sources: list = field(default_factory=list)


def _from_memory(sources) -> Data | None:
    """What a Python caller has at hand: the DataFrame :func:`aqmlab.sweep` returns (its runs), or a
    :class:`~aqmlab.sweep.SweepResult` (its runs and every result table); None for anything else."""
    import pandas as pd

    runs = sources if isinstance(sources, pd.DataFrame) else getattr(sources, "runs", None)
    if not isinstance(runs, pd.DataFrame):
        return None
    if runs.empty:
        raise PlotError("the runs table has no rows")
    cols = list(runs.columns)
    if "seed" not in cols:
        raise PlotError("a DataFrame to plot is the runs table aqmlab.sweep returns (its columns: the varied keys, "
                        "seed, run, scenario and the metrics); this one has no seed column")
    dims = cols[: cols.index("seed")] or ["run"]
    tables = {}
    if hasattr(sources, "table") and not isinstance(sources, pd.DataFrame):
        for name in TABLE_FILES:
            t = sources.table(name)
            if t is not None and len(t.columns):
                tables[name] = t
    return Data(runs.copy(), dims, tables, ["<DataFrame>"])


def load(sources) -> Data:
    """Read run folders and sweep folders (or ``runs.csv``/``runs.parquet`` files) into one Data; or
    take the DataFrame :func:`aqmlab.sweep` returns, or a :class:`~aqmlab.sweep.SweepResult`, as they are."""
    import pandas as pd

    from ..run.metrics import run_row

    mem = _from_memory(sources)
    if mem is not None:
        return mem
    if isinstance(sources, (str, Path)):
        sources = [sources]
    if not sources:
        raise PlotError("give at least one run or sweep folder")
    runs, dims, tables = [], [], {k: [] for k in TABLE_FILES}
    paths = []
    for s in sources:
        p = Path(s)
        if not p.exists():
            raise PlotError(f"{p}: no such file or folder")
        paths.append(p.parent if p.is_file() and p.name in ("runs.csv", "runs.parquet") else p)
    sweeps = [p for p in paths if _is_sweep(p)]
    singles = [p for p in paths if not _is_sweep(p) and (p / "summary.json").is_file()]
    if sweeps and singles:
        raise PlotError(f"{singles[0]} is a run folder and {sweeps[0]} a sweep folder: plot run folders together or "
                        "sweep folders together (to compare a run with a sweep, make it a point of the sweep: --vary)")
    many_sweeps = len(sweeps) > 1
    for p in paths:
        if _is_sweep(p):
            r = _read_table(p, "runs")
            if r is None or r.empty:
                raise PlotError(f"{p}: its runs table has no rows (a sweep whose runs were not gathered)")
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
                             ("flow_series", res.flow_series), ("latency", res.latency)):
                if df is not None and len(df.columns):
                    df = df.copy()
                    df.insert(0, "seed", sc.get("seed"))
                    df.insert(0, "run", p.name)
                    tables[name].append(df)
        else:
            raise PlotError(f"{p}: neither a run folder (summary.json) nor a sweep folder (runs.csv or runs.parquet)")
    all_runs = pd.concat(runs, ignore_index=True, sort=False)
    if "aqm" not in all_runs.columns:  # sweeps gathered before runs had it: from a varied discipline
        for k in ("bottleneck.aqm.type", "bottleneck.aqm"):
            if k in all_runs.columns:
                all_runs.insert(0, "aqm", [_aqm_name(v) for v in all_runs[k]])
                break
    out = {k: pd.concat(v, ignore_index=True, sort=False) for k, v in tables.items() if v}
    return Data(all_runs, dims, out, [str(p) for p in paths])


def _aqm_name(v) -> str:
    """The ``type`` of a varied discipline (``{type="red", ...}`` as written), or the value itself."""
    from ..base.compat import tomllib

    if isinstance(v, str) and v.strip().startswith("{"):
        try:
            return str(tomllib.loads(f"v = {v}")["v"].get("type", v))
        except (tomllib.TOMLDecodeError, AttributeError):
            return v
    return str(v)


def short_labels(values) -> dict:
    """Readable names for values written as TOML tables (a varied discipline, ``{type="red",
    min_th=40, max_th=80}``): ``red (max_th=80)`` — the ``type`` first, then only the keys whose
    values differ between the tables, so ``{type="red", ...}`` and ``{type="choke", ...}`` with
    the same thresholds are ``red`` and ``choke``. Returns ``{value: name}`` for the values that
    are tables (others are left as they are); names are kept distinct."""
    from ..base.compat import tomllib

    tables = {}
    for v in dict.fromkeys(values):
        if isinstance(v, str) and v.strip().startswith("{"):
            try:
                t = tomllib.loads(f"v = {v}")["v"]
            except tomllib.TOMLDecodeError:
                continue
            if isinstance(t, dict):
                tables[v] = t
    if not tables:
        return {}
    keys = list(dict.fromkeys(k for t in tables.values() for k in t))
    differ = [k for k in keys if k != "type" and len({repr(t.get(k)) for t in tables.values()}) > 1]
    out = {}
    for v, t in tables.items():
        parts = [f"{k}={_plain(t[k])}" for k in differ if k in t]
        head = str(t.get("type", ""))
        name = (f"{head} ({', '.join(parts)})" if parts else head) if head else ", ".join(parts)
        out[v] = name or v
    if len(set(out.values())) < len(out):  # two tables shown alike: show every key
        out = {v: ", ".join(f"{k}={_plain(x)}" for k, x in t.items()) for v, t in tables.items()}
    return out


def _plain(x) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_plain(v) for v in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k}={_plain(v)}" for k, v in x.items()) + "}"
    return str(x)


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
            near = _similar(c, list(available))
            raise PlotError(f"{what} {c}: not a column of the {hint_table} table"
                            + (f"; did you mean {', '.join(near)}?" if near else
                               f" (columns include: {', '.join(list(available)[:12])}, ...)"))


def _similar(name: str, available: list) -> list:
    import difflib

    near = [a for a in available if name.lower() in str(a).lower()][:4]
    return near or difflib.get_close_matches(name, [str(a) for a in available], n=3, cutoff=0.6)


def _check_numeric(cols, table, what: str, hint_table: str = "runs") -> None:
    import pandas as pd

    for c in cols:
        if not pd.api.types.is_numeric_dtype(table[c]) or pd.api.types.is_bool_dtype(table[c]):
            examples = [k for k in ("udp.share", "tcp.goodput_bps", "bottleneck.utilisation", "goodput_bps",
                                    "throughput_bps", "queue_pkts") if k in table.columns][:2]
            raise PlotError(f"{what} {c}: a text column of the {hint_table} table, not numbers; give a numeric "
                            f"column{' such as ' + ' or '.join(examples) if examples else ''}")


def _ymetric(col: str) -> dict:
    """A y column as a metric spec with a readable label and unit (docs/metrics.md)."""
    from ..analysis.stats import describe_column

    label, unit = describe_column(col)
    return {"col": col, "label": label, "unit": unit}


def _numberlike(s) -> bool:
    """Numbers, or rates and durations written with units (drawn on a numeric axis)."""
    import pandas as pd

    from ..base.units import parse_duration, parse_rate

    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        return True
    vals = [v for v in s.dropna()]
    for parse in (parse_rate, parse_duration):
        try:
            if vals and all(isinstance(v, str) for v in vals):
                [parse(v) for v in vals]
                return True
        except ValueError:
            continue
    return False


def spec_for(kind: str, data: Data, *, x=None, y=None, by=None, panels=None, where=None, name=None, title=None,
             xlabel=None, ylabel=None, logx=False, logy=False, link=None, tail=False) -> tuple[dict, list]:
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
    if link is not None and kind != "timeseries":
        raise PlotError("--link: only with --kind timeseries (the link whose time series is drawn)")
    if tail and kind != "latency":
        raise PlotError("--tail: only with --kind latency (the fraction of packets slower than each delay)")
    if kind in ("line", "bar"):
        if not ys:
            raise PlotError(f"--y: {kind} needs the metric(s) to plot, e.g. --y udp.share or --y tcp.goodput_bps "
                            f"(any column of runs.csv)")
        _check_columns(ys, runs.columns, "--y")
        _check_numeric(ys, runs, "--y")
        _check_columns(by, runs.columns, "--by")
        _check_columns([panels] if panels else [], runs.columns, "--panels")
        _check_columns(list(where or {}), runs.columns, "--where")
        sel = _check_rows(runs, where, "runs")
        dims = [d for d in dims if sel[d].nunique(dropna=False) > 1] or dims[:1]  # what varies in the selection
        free = [d for d in dims if d not in by and d != panels and d != "run"]
        x = x or next((d for d in free if _numberlike(runs[d])), None) or next(iter(free), None) or \
            (dims[0] if dims else None)
        if x is None:
            raise PlotError("--x: nothing varies between the sources; give --x COLUMN")
        _check_columns([x], runs.columns, "--x")
        if not by:
            by = [d for d in dims if d != x and d != "run" and d != panels]
        by = [b for b in by if b != panels]  # a panel's column is not also a series: one look per series
        spec.update(x=x, y=[_ymetric(c) for c in ys] if len(ys) > 1 else _ymetric(ys[0]), series=by)
        coords = ([panels] if panels else []) + by + ([x] if _categorical(runs[x]) or x in data.dims else [])
        if kind == "bar" and x not in coords:
            coords.append(x)
    elif kind == "cdf":
        col = ys[0] if ys else "goodput_bps"
        flows = _table(data, "flows", "cdf", "the sources have no flows table (sweeps keep it with --tables flows)")
        _check_columns([col], flows.columns, "--y", "flows")
        _check_numeric([col], flows, "--y", "flows")
        _check_columns(list(where or {}), flows.columns, "--where", "flows")
        _check_columns(by, flows.columns, "--by", "flows")
        sel = _check_rows(flows, where, "flows")
        by = by or _varying(dims, sel)
        keys = list(dict.fromkeys(tuple(r) for r in sel[by].itertuples(index=False, name=None))) if by else [None]
        series = [{"label": "all flows"} if k is None else
                  {"label": ", ".join(map(str, k)), "where": dict(zip(by, k))} for k in keys]
        m = _ymetric(col)
        if m["unit"] == "kb/s":
            m["unit"] = "Mb/s" if col.endswith("_bps") and float(sel[col].abs().max() or 0) >= 1e6 else "kb/s"
        spec.update(value=m, series=series)
        coords = by
    elif kind == "timeseries":
        ts = _table(data, "timeseries", "timeseries", "the sources have no timeseries table (sweeps keep it with "
                    "--tables timeseries)")
        col = ys[0] if ys else "queue_pkts"
        sel = _selection(ts, "timeseries", col, where, by, panels)
        by = by or [d for d in _varying(dims, sel) if d != panels]
        if "link" in ts.columns:
            names = list(dict.fromkeys(sel["link"]))
            if link is None and "bottleneck" not in names and len(names) > 1:
                raise PlotError(f"--link: the sources measure several links ({', '.join(names)}); give --link NAME")
            if link is not None and link not in names:
                raise PlotError(f"--link {link}: not a measured link of the sources; one of: {', '.join(names)}")
            spec["link"] = link or ("bottleneck" if "bottleneck" in names else names[0])
        elif link is not None and link != "bottleneck":
            raise PlotError(f"--link {link}: the sources measure only the bottleneck")
        spec.update(y=_ymetric(col), series=by)
        coords = ([panels] if panels else []) + by
    elif kind == "flow_series":
        fs = _table(data, "flow_series", "flow_series", "the sources have no per-flow series (run with "
                    "simulation.flow_series_interval = \"1s\", say; sweeps keep them with --tables flow_series)")
        col = ys[0] if ys else "cwnd"
        sel = _selection(fs, "flow_series", col, where, by, panels)
        if sel[col].notna().sum() == 0:
            raise PlotError(f"--y {col}: no flow of the selection has it (cwnd, pacing_rate_bps, srtt_s and retx_pkts "
                            "are TCP senders'; pacing_rate_bps only for a sender that paces)")
        if not by and sel["flow_id"].nunique() > MAX_FLOW_LINES:
            raise PlotError(f"--kind flow_series: {sel['flow_id'].nunique()} flows would be as many lines; choose up "
                            f"to {MAX_FLOW_LINES} with --where flow_id=0,1,2 or --where group=NAME (or --by group)")
        by = by or (["flow"] + [d for d in _varying(dims, sel) if d != panels and d != "seed"])
        spec.update(y=_ymetric(col), series=by, overlay=True)
        spec["flows"] = {}
        coords = ([panels] if panels else []) + [b for b in by if b != "flow"]
    elif kind == "flows":
        col = ys[0] if ys else "throughput_bps"
        flows = _table(data, "flows", "flows", "the sources have no flows table (sweeps keep it with --tables flows)")
        _check_columns([col], flows.columns, "--y", "flows")
        _check_numeric([col], flows, "--y", "flows")
        _check_columns(list(where or {}), flows.columns, "--where", "flows")
        _check_columns(by[:1] + ([panels] if panels else []), flows.columns, "--panels" if panels else "--by", "flows")
        if len(by) > 1:
            raise PlotError("--by: flows draws one panel per value of one column; give one column (or --panels)")
        sel = _check_rows(flows, where, "flows")
        pan = panels or (by[0] if by else next(iter(_varying(dims, sel)), None))
        spec.update(y=_ymetric(col))
        if pan:
            spec["panels"] = pan
        coords = [pan] if pan else []
        panels = None
    elif kind == "latency":
        lat = _table(data, "latency", "latency", "the sources recorded no delays (run with simulation.latency = true, or "
                     "add a probe group: app = \"probe\"; sweeps keep them with --tables latency)")
        m = ys[0] if ys else "owd"
        if len(ys) > 1 or m not in ("owd", "rtt"):
            raise PlotError(f"--y {y}: latency draws one of owd (one-way delay) or rtt (round-trip time)")
        if not (lat["metric"] == m).any():
            raise PlotError(f"--y {m}: the sources have no {'round-trip' if m == 'rtt' else 'one-way'} samples"
                            + (" (RTTs come from TCP flows and probes with echo = true)" if m == "rtt" else ""))
        _check_columns(list(where or {}), lat.columns, "--where", "latency")
        _check_columns(by, lat.columns, "--by", "latency")
        _check_columns([panels] if panels else [], lat.columns, "--panels", "latency")
        if panels:
            raise PlotError("--panels: latency draws one panel (use --by or --where)")
        sel = _check_rows(lat, where, "latency")
        by = by or (_varying(dims, sel) + (["group"] if sel["group"].nunique() > 1 or not _varying(dims, sel)
                                           else []))
        spec.update(metric=m, series=by)
        if tail:
            spec["tail"] = True
        coords = by
    else:  # queue
        snaps = _table(data, "snapshots", "queue", "the sources have no queue_snapshots table (run with "
                       "simulation.queue_snapshots = true; sweeps keep it with --tables queue_snapshots)")
        _check_columns(list(where or {}), snaps.columns, "--where", "queue_snapshots")
        _check_columns(by, snaps.columns, "--by", "queue_snapshots")
        _check_columns([panels] if panels else [], snaps.columns, "--panels", "queue_snapshots")
        sel = _check_rows(snaps, where, "queue_snapshots")
        by = by or [d for d in _varying(dims, sel) if d != panels]
        spec.update(series=by)
        coords = ([panels] if panels else []) + by
    if panels and kind != "flows":
        spec["panels"] = panels
    for k, v in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
        if v:
            spec[k] = v
    if logx:
        spec["logx"] = True
    if logy:
        spec["logy"] = True
    yname = (ys[0] if ys else {"cdf": "goodput", "timeseries": "queue", "flows": "throughput",
                               "queue": "udp-by-position", "latency": "owd", "flow_series": "cwnd"}.get(kind, kind))
    spec["name"] = name or re.sub(r"[^\w.-]+", "-", f"{kind}-{yname}").strip("-")
    spec.setdefault("title", spec["name"])
    return spec, list(dict.fromkeys(c for c in coords if c))


def _selection(table, name: str, col: str, where, by: list, panels):
    """The rows of a time-series ``table`` a figure of its column ``col`` draws, after checking that
    ``--y``, ``--where``, ``--by`` and ``--panels`` name its columns (and ``--y`` a numeric one)."""
    _check_columns([col], table.columns, "--y", name)
    _check_numeric([col], table, "--y", name)
    _check_columns(list(where or {}), table.columns, "--where", name)
    _check_columns(by, table.columns, "--by", name)
    _check_columns([panels] if panels else [], table.columns, "--panels", name)
    return _check_rows(table, where, name)


def _varying(dims: list, table) -> list:
    """The columns of ``dims`` that take more than one value in ``table`` (the default groups)."""
    return [d for d in dims if d in table.columns and table[d].nunique(dropna=False) > 1]


def _table(data: Data, name: str, kind: str, missing: str):
    t = data.tables.get(name)
    if t is None or not len(t.columns):
        raise PlotError(f"{kind}: {missing}")
    if t.empty:
        raise PlotError(f"{kind}: the sources' {TABLE_FILES[name]} tables have no rows")
    return t


def _check_rows(table, where, what: str):
    """The rows of ``table`` that ``where`` keeps; an error naming the values there are when none."""
    from ..analysis.stats import where_mask

    if table.empty:
        raise PlotError(f"no rows: the sources' {what} table is empty")
    sel = table[where_mask(table, where)] if where else table
    if sel.empty:
        have = "; ".join(f"{k} has {', '.join(map(str, list(dict.fromkeys(table[k].astype(str)))[:8]))}"
                         for k in where)
        cond = " ".join(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in where.items())
        raise PlotError(f"--where {cond}: no rows match ({have})")
    return sel


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


def _labels(items, known=None) -> tuple[dict, list]:
    """``--label OLD=NEW`` (repeatable; a dict from Python) as a dict, and the OLDs that name nothing
    in ``known`` (the texts a figure can show: column names, values of the varied keys and of the
    tables' text columns). OLD may itself contain ``=`` (a category such as ``red (max_th=80)``, a
    varied key's value ``min_th=40``): of the ways to split ``OLD=NEW`` at an ``=``, the one whose
    OLD is a known text is taken (the longest if several are)."""
    if not items:
        return {}, []
    known = set(known or ())
    if isinstance(items, dict):
        pairs = [(str(k), str(v)) for k, v in items.items()]
    else:
        pairs = []
        for it in [items] if isinstance(items, str) else items:
            text = str(it)
            cuts = [i for i, ch in enumerate(text) if ch == "="]
            if not cuts or not text[: cuts[0]].strip():
                raise PlotError(f"--label {it}: expected OLD=NEW (a value, series or column as shown, and its new name)")
            fits = [i for i in cuts if text[:i].strip() in known]
            i = max(fits) if fits else cuts[0]
            pairs.append((text[:i].strip(), text[i + 1:].strip()))
    out = dict(pairs)
    return out, [k for k in out if known and k not in known]


def _shown_texts(data: Data) -> set:
    """What a figure of ``data`` can show and ``--label`` can rename: column names, the values of the
    varied keys and of ``aqm``/``scenario``/``run``, and of the tables' text columns (``group``,
    ``flow``, ...), written as figures write them (a float to 9 significant digits)."""
    import pandas as pd

    out = set(DEFAULT_LABELS.values())
    text = lambda v: f"{float(v):.9g}" if isinstance(v, float) else str(v)
    for t in [data.runs] + list(data.tables.values()):
        out.update(map(str, t.columns))
        for c in t.columns:
            if c in data.dims or c in ("aqm", "scenario", "run", "sweep", "seed", "flow_id") \
                    or not pd.api.types.is_numeric_dtype(t[c]):
                out.update(text(v) for v in t[c].dropna().unique()[:10000])
    return out


def _out_folder(out) -> Path:
    """``--out``: a folder that exists or can be made (checked before anything is drawn)."""
    from ..base.io import os_reason

    d = Path(out)
    if d.exists() and not d.is_dir():
        raise PlotError(f"--out {d}: exists and is not a folder; give a folder")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PlotError(f"--out {d}: cannot create the folder ({os_reason(e)}); give a folder you can write to")
    return d


def plot(sources, kind: str = "line", out="plots", style: str = "paper", columns: int | None = None, **kw):
    """Draw one figure from run and sweep folders — or from the DataFrame :func:`aqmlab.sweep`
    returns (figures of the runs table: ``line``, ``bar``), or a :class:`~aqmlab.sweep.SweepResult`
    (every kind its tables allow); returns the figure's Output (files, caption,
    comparison sentences). Keyword arguments as :func:`spec_for` (``x``, ``y``, ``by``, ``panels``,
    ``where``, ``name``, ``title``, ``xlabel``, ``ylabel``, ``logx``, ``logy``, ``link``), and
    ``labels``: ``{shown text: new text}`` or ``"OLD=NEW"`` strings renaming series, categories,
    panels and column names. The figure's plotted data is written beside it as ``<name>.csv``."""
    from ..analysis import plotstyle
    from ..analysis.figures import make_figure
    from ..base.errors import SpecError
    from ..base.io import name_problem

    try:
        plotstyle.check(style)
    except ValueError as e:
        raise PlotError(f"--style: {e}")
    if columns not in (None, 1, 2):
        raise PlotError(f"--width {columns}: 1 or 2 (paper columns)")
    if kw.get("name") is not None:
        why = name_problem(kw["name"])
        if why:
            raise PlotError(f"--name {kw['name']}: give a file name {why}; the files go into --out")
    raw_labels = kw.pop("labels", None)
    warn = kw.pop("warn", None)
    _labels(raw_labels)  # (a malformed one is refused before anything is read)
    data = load(sources)
    if isinstance(kw.get("where"), (list, tuple)):
        kw["where"] = _where(kw["where"])
    # values written as TOML tables (a varied discipline) are shown by what differs between them
    for t in [data.runs] + list(data.tables.values()):
        for c in data.dims:
            if c in t.columns:
                names = short_labels(t[c])
                if names:
                    t[c] = [names.get(v, v) for v in t[c]]
    fs = data.tables.get("flow_series")
    if fs is not None and "flow_id" in fs.columns:  # a flow's line is named as the flows table numbers it
        fs = data.tables["flow_series"] = fs.sort_values(["flow_id", "time_s"], kind="stable", ignore_index=True)
        fs["flow"] = [f"flow_id {int(i)}" + (f" ({g})" if isinstance(g, str) else "")
                      for i, g in zip(fs["flow_id"], fs["group"] if "group" in fs.columns else [None] * len(fs))]
    labels, unmatched = _labels(raw_labels, _shown_texts(data))
    for old in unmatched:
        near = _similar(old, sorted(_shown_texts(data)))
        msg = (f"--label {old}={labels[old]}: {old!r} is no series, category, panel or column of this figure's "
               f"data, so nothing is renamed" + (f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""))
        if warn is not None:
            warn(msg)
        else:
            import warnings

            warnings.warn(msg, UserWarning, stacklevel=2)
    if kind == "line" and kw.get("x") in data.runs.columns:
        unit = _numeric_units(data, kw["x"])
        if unit and not kw.get("xlabel"):
            kw["xlabel"] = f"{labels.get(kw['x'], kw['x'])} ({unit})"
    _spread(data, _split(kw.get("by")) + _split(kw.get("panels")) + list((kw.get("where") or {}).keys()))
    spec, coords = spec_for(kind, data, **kw)
    if kind == "line" and "xlabel" not in spec and spec["x"] in data.runs.columns:
        unit = _numeric_units(data, spec["x"])  # the default x, written with units
        if unit:
            spec["xlabel"] = f"{labels.get(spec['x'], spec['x'])} ({unit})"
    ctx = context(data, coords, _out_folder(out), style, columns)
    ctx.labels = {**DEFAULT_LABELS, **labels}
    try:
        return make_figure(ctx, spec)
    except SpecError as e:
        raise PlotError(str(e))
