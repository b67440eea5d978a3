"""Tables of an experiment, declared as ``[[tables]]`` in its experiment.toml.

``kind = "metrics"`` (default): one row per value of the ``rows`` coordinates (default: every
coordinate), one column per metric of ``columns`` (metric specs as in stats.py), each cell the mean
over seeds ± the 95 % CI half-width. ``kind = "pivot"``: one ``value`` metric with the ``rows``
coordinate down and the ``cols`` coordinate across. Both take ``where``, ``name``, ``title``,
``caption``. Each table is written as ``<name>.csv`` (mean, ci95 and n in separate columns, in the
units shown) and ``<name>.md``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .context import Context, Output
from .stats import SpecError, metric, metrics, summarise, where_mask

KEYS = {"name", "title", "kind", "where", "rows", "columns", "cols", "value", "caption"}


def check_table(spec: dict, exp, where: str) -> None:
    from .experiment import ExperimentError

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


def _md(headers: list[str], rows: list[list[str]]) -> str:
    def esc(s):
        return str(s).replace("|", "\\|")

    out = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _write(ctx: Context, name: str, csv: pd.DataFrame, md: str) -> list:
    ctx.out.mkdir(parents=True, exist_ok=True)
    p1, p2 = ctx.out / f"{name}.csv", ctx.out / f"{name}.md"
    csv.to_csv(p1, index=False)
    p2.write_text(md + "\n", encoding="utf-8")
    return [p1, p2]


def table_metrics(ctx: Context, spec: dict) -> Output:
    df = ctx.runs[where_mask(ctx.runs, spec.get("where"))]
    cols = metrics(spec.get("columns", []), "columns")
    rows = list(spec.get("rows", [c for c in ctx.coords if df[c].nunique() > 1] if len(df) else []))
    summ = summarise(df, rows, [m.col for m in cols])
    csv = summ[rows].copy()
    headers = [ctx.coord_label(r) for r in rows]
    for m in cols:
        csv[f"{m.label} ({m.unit})" if m.unit else m.label] = summ[m.col] * m.scale
        csv[f"{m.label} ci95"] = summ[f"{m.col}_ci95"] * m.scale
        csv[f"{m.label} n"] = summ[f"{m.col}_n"]
        headers.append(m.axis_label)
    md_rows = []
    for i in range(len(summ)):  # not iterrows: it would turn integer coordinates into floats
        md_rows.append([str(summ[c].iloc[i]) for c in rows] +
                       [m.fmt(summ[m.col].iloc[i] * m.scale, summ[f"{m.col}_ci95"].iloc[i] * m.scale) for m in cols])
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
    files = _write(ctx, spec["name"], csv, md)
    return Output("table", spec["name"], spec.get("title", spec["name"]), files, markdown=md, notes=notes,
                  caption=spec.get("caption", ""))


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
            ci = float(sel[f"{m.col}_ci95"].iloc[0]) * m.scale if len(sel) else math.nan
            row_csv[f"{cv}"] = mean
            row_csv[f"{cv} ci95"] = ci
            row_md.append(m.fmt(mean, ci))
        csv_rows.append(row_csv)
        md_rows.append(row_md)
    md = f"{m.axis_label}; rows: {ctx.coord_label(r)}, columns: {ctx.coord_label(c)}\n\n" + _md(
        [ctx.coord_label(r)] + [str(v) for v in cvals], md_rows)
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
    files = _write(ctx, spec["name"], pd.DataFrame(csv_rows), md)
    return Output("table", spec["name"], spec.get("title", spec["name"]), files, markdown=md, notes=notes,
                  caption=spec.get("caption", ""))


def make_table(ctx: Context, spec: dict) -> Output:
    kind = spec.get("kind", "metrics")
    return table_pivot(ctx, spec) if kind == "pivot" else table_metrics(ctx, spec)
