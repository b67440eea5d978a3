r"""Tables of an experiment, declared as ``[[tables]]`` in its experiment.toml.

``kind = "metrics"`` (default): one row per value of the ``rows`` coordinates (default: every
coordinate), one column per metric of ``columns`` (metric specs as in stats.py), each cell the mean
over seeds with its interval (stats.py: ``± h`` for a 95 % t interval, ``[lo, hi]`` when it was
clipped to the metric's range or is the min–max of fewer than 3 seeds). ``kind = "pivot"``: one ``value`` metric with the ``rows``
coordinate down and the ``cols`` coordinate across. Both take ``where``, ``name``, ``title``,
``caption``. Each table is written as ``<name>.csv`` (mean, low, high, n and the interval kind in
separate columns, in the units shown), ``<name>.md`` and ``<name>.tex`` (LaTeX, booktabs: a ``table``
environment with its caption, to ``\input`` into a paper).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .context import Context, Output
from .latex import tex_table
from .markdown import md_table as _md
from .stats import SpecError, metric, metrics, summarise, where_mask

KEYS = {"name", "title", "kind", "where", "rows", "columns", "cols", "value", "caption"}


def check_table(spec: dict, exp, where: str) -> None:
    from ..base.errors import ExperimentError

    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise ExperimentError(f"{where}.name: missing (the file stem)")
    for k in spec:
        if k not in KEYS:
            raise ExperimentError(f"{where}.{k}: unknown key; known: {', '.join(sorted(KEYS))}")
    kind = spec.get("kind", "metrics")
    coords = exp.coord_names
    try:
        if kind == "metrics":
            metrics(spec.get("columns", []), f"{where}.columns")
            for r in spec.get("rows", []):
                if r not in coords:
                    raise ExperimentError(f"{where}.rows: {r!r} is not a coordinate ({', '.join(coords)})")
        elif kind == "pivot":
            for k in ("rows", "cols"):
                if spec.get(k) not in coords:
                    raise ExperimentError(f"{where}.{k}: {spec.get(k)!r} is not a coordinate ({', '.join(coords)})")
            metric(spec.get("value"), f"{where}.value")
        else:
            raise ExperimentError(f"{where}.kind: {kind!r}; one of metrics, pivot")
    except SpecError as e:
        raise ExperimentError(str(e))


def _write(ctx: Context, name: str, csv: pd.DataFrame, md: str, tex: str) -> list:
    ctx.out.mkdir(parents=True, exist_ok=True)
    p1, p2, p3 = ctx.out / f"{name}.csv", ctx.out / f"{name}.md", ctx.out / f"{name}.tex"
    csv.to_csv(p1, index=False)
    p2.write_text(md + "\n", encoding="utf-8")
    p3.write_text(tex, encoding="utf-8")
    return [p1, p2, p3]


def _cell(m, summ: pd.DataFrame, i: int) -> str:
    """One table cell: the mean with its interval (in the metric's unit)."""
    g = lambda k: float(summ[k].iloc[i]) * m.scale  # noqa: E731
    lo, hi = sorted((g(f"{m.col}_lo"), g(f"{m.col}_hi")))
    return m.fmt_iv(g(m.col), lo, hi, str(summ[f"{m.col}_method"].iloc[i]))


def _as_run(ctx: Context) -> str:
    from .stats import interval_note

    return f"{ctx.as_run()}; {interval_note([ctx.interval_method()])}"


def table_metrics(ctx: Context, spec: dict) -> Output:
    df = ctx.runs[where_mask(ctx.runs, spec.get("where"))]
    cols = metrics(spec.get("columns", []), "columns")
    rows = list(spec.get("rows", [c for c in ctx.coords if df[c].nunique() > 1] if len(df) else []))
    summ = summarise(df, rows, [m.col for m in cols])
    csv = summ[rows].copy()
    headers = [ctx.coord_label(r) for r in rows]
    for m in cols:
        csv[f"{m.label} ({m.unit})" if m.unit else m.label] = summ[m.col] * m.scale
        csv[f"{m.label} low"] = summ[f"{m.col}_lo"] * m.scale
        csv[f"{m.label} high"] = summ[f"{m.col}_hi"] * m.scale
        csv[f"{m.label} n"] = summ[f"{m.col}_n"]
        csv[f"{m.label} interval"] = summ[f"{m.col}_method"]
        headers.append(m.axis_label)
    md_rows = []
    for i in range(len(summ)):  # not iterrows: it would turn integer coordinates into floats
        md_rows.append([str(summ[c].iloc[i]) for c in rows] +
                       [_cell(m, summ, i) for m in cols])
    md = _md(headers, md_rows)
    notes = []
    categorical = len(rows) == 1 and (rows[0] == ctx.exp.variants_name or summ[rows[0]].map(
        lambda v: isinstance(v, str)).all())
    if categorical and len(summ) > 1:  # an order of the schemes (not of the values of a swept parameter)
        for m in cols:
            vals = [(str(k), v * m.scale) for k, v in zip(summ[rows[0]], summ[m.col]) if np.isfinite(v)]
            if len(vals) > 1:
                vals.sort(key=lambda t: -t[1])
                notes.append(f"{m.label}: " + " > ".join(f"{k} ({m.fmt(v)})" for k, v in vals) +
                             (f" {m.unit}" if m.unit else "") + ".")
    caption = _caption(ctx, spec)
    files = _write(ctx, spec["name"], csv, md, tex_table(headers, md_rows, caption, spec["name"]))
    return Output("table", spec["name"], spec.get("title", spec["name"]), files, markdown=md, notes=notes,
                  caption=caption)


def _caption(ctx: Context, spec: dict) -> str:
    c = spec.get("caption", "")
    return f"{c} ({_as_run(ctx)})" if c else _as_run(ctx)


def table_pivot(ctx: Context, spec: dict) -> Output:
    df = ctx.runs[where_mask(ctx.runs, spec.get("where"))]
    m = metric(spec["value"], "value")
    r, c = spec["rows"], spec["cols"]
    summ = summarise(df, [r, c], [m.col])
    rvals = list(dict.fromkeys(summ[r]))
    cvals = list(dict.fromkeys(summ[c]))
    csv_rows, md_rows = [], []
    for rv in rvals:
        row_csv = {r: rv}
        row_md = [str(rv)]
        for cv in cvals:
            sel = summ[(summ[r].astype(str) == str(rv)) & (summ[c].astype(str) == str(cv))]
            mean = float(sel[m.col].iloc[0]) * m.scale if len(sel) else math.nan
            row_csv[f"{cv}"] = mean
            row_csv[f"{cv} low"] = float(sel[f"{m.col}_lo"].iloc[0]) * m.scale if len(sel) else math.nan
            row_csv[f"{cv} high"] = float(sel[f"{m.col}_hi"].iloc[0]) * m.scale if len(sel) else math.nan
            row_md.append(_cell(m, sel, 0) if len(sel) else "-")
        csv_rows.append(row_csv)
        md_rows.append(row_md)
    what = f"{m.axis_label}; rows: {ctx.coord_label(r)}, columns: {ctx.coord_label(c)}"
    headers = [ctx.coord_label(r)] + [str(v) for v in cvals]
    md = f"{what}\n\n" + _md(headers, md_rows)
    notes = []
    if len(rvals) > 1 and r == ctx.exp.variants_name:  # which scheme is best in each column
        for cv in cvals:
            sel = summ[summ[c].astype(str) == str(cv)]
            sel = sel[np.isfinite(sel[m.col].astype(float))]
            if len(sel) > 1:
                hi, lo = sel[m.col].idxmax(), sel[m.col].idxmin()
                notes.append(f"{ctx.coord_label(c)} = {cv}: highest {m.label} with {ctx.coord_label(r)} = "
                             f"{summ.at[hi, r]} ({m.fmt(summ.at[hi, m.col] * m.scale)}), lowest with {summ.at[lo, r]} "
                             f"({m.fmt(summ.at[lo, m.col] * m.scale)}).")
    caption = _caption(ctx, spec)
    files = _write(ctx, spec["name"], pd.DataFrame(csv_rows), md,
                   tex_table(headers, md_rows, f"{what}. {caption}", spec["name"]))
    return Output("table", spec["name"], spec.get("title", spec["name"]), files, markdown=md, notes=notes,
                  caption=caption)


def make_table(ctx: Context, spec: dict) -> Output:
    kind = spec.get("kind", "metrics")
    return table_pivot(ctx, spec) if kind == "pivot" else table_metrics(ctx, spec)
