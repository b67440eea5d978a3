"""Published reference values (experiments.md §5) beside ours.

An experiment's ``reference.toml`` lists ``[[reference]]`` entries; these are the only numbers in
the report typed in by hand::

    [[reference]]
    label = "TCP goodput, RED"          # what the value is
    source = "[CHOKeD] Table II"        # where it was published
    col = "tcp.goodput_m2b_bps"         # our runs column (runmetrics.py)
    unit = "Mb/s"                       # unit of the published value (our column is scaled to it)
    where = { scheme = "RED" }          # which runs
    value = 0.211162                    # an approximate value (compared within `tolerance`, default 0.25
                                        # relative), or: min = x / max = x (a bound), range = [lo, hi]
    stat = "mean"                       # over the selected points: mean (default), max, min, or
                                        # each (every point must satisfy the bound or range)
    at = { gamma_kbps = 600 }           # with stat max/min: where the paper found the extreme

Our value is the mean over seeds at each point, then the ``stat`` over the points; with one point
the 95 % confidence interval is shown too.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .context import Context, Output
from .stats import mean_ci, metric, where_mask

KEYS = {"label", "source", "col", "unit", "scale", "where", "value", "min", "max", "range", "stat", "at",
        "tolerance", "note"}


def parse_references(raw: dict) -> list[dict]:
    from .experiment import ExperimentError

    refs = raw.get("reference", [])
    extra = set(raw) - {"reference"}
    if extra:
        raise ExperimentError(f"{sorted(extra)[0]}: unknown key; the file holds [[reference]] entries")
    for i, r in enumerate(refs):
        w = f"reference[{i}]"
        for k in r:
            if k not in KEYS:
                raise ExperimentError(f"{w}.{k}: unknown key; known: {', '.join(sorted(KEYS))}")
        for k in ("label", "col"):
            if not isinstance(r.get(k), str):
                raise ExperimentError(f"{w}.{k}: missing")
        forms = [k for k in ("value", "min", "max", "range") if k in r]
        if len(forms) != 1 and set(forms) != {"min", "max"}:
            raise ExperimentError(f"{w}: give exactly one of value, min, max, range")
        if r.get("stat", "mean") not in ("mean", "max", "min", "each"):
            raise ExperimentError(f"{w}.stat: one of mean, max, min, each")
    return list(refs)


def _published(r: dict) -> str:
    u = f" {r['unit']}" if r.get("unit") else ""
    if "value" in r:
        return f"{r['value']:g}{u}"
    if "range" in r:
        lo, hi = r["range"]
        return f"{lo:g}{u}" if lo == hi else f"{lo:g}–{hi:g}{u}"
    if "min" in r and "max" in r:
        return f"{r['min']:g}–{r['max']:g}{u}"
    if "min" in r:
        return f"> {r['min']:g}{u}"
    return f"≤ {r['max']:g}{u}"


def _ok(r: dict, v: float) -> bool:
    if "value" in r:
        return abs(v - r["value"]) <= r.get("tolerance", 0.25) * abs(r["value"])
    lo = r["range"][0] if "range" in r else r.get("min", -math.inf)
    hi = r["range"][1] if "range" in r else r.get("max", math.inf)
    return lo <= v <= hi


def evaluate(ctx: Context, r: dict) -> dict:
    """Our value for one reference entry and the verdict."""
    m = metric({k: r[k] for k in ("col", "unit", "scale") if k in r} | {"label": r["label"]}, "reference")
    runs = ctx.runs
    sel = runs[where_mask(runs, r.get("where"))] if len(runs) else runs
    out = {"label": r["label"], "source": r.get("source", ""), "published": _published(r), "ours": "-",
           "agreement": "not run", "ok": None}
    if sel.empty or m.col not in sel.columns:
        out["agreement"] = "no matching runs" if m.col in runs.columns or runs.empty else f"no column {m.col}"
        return out
    keys = [c for c in ctx.coords if c in sel.columns]
    grp = sel.groupby([sel[k].astype(str) for k in keys], sort=False) if keys else [((), sel)]
    points = []
    for kv, sub in grp:
        mu, ci, n = mean_ci(sub[m.col])
        points.append((dict(zip(keys, sub[keys].iloc[0])), mu * m.scale, ci * m.scale, n))
    points = [p for p in points if np.isfinite(p[1])]
    if not points:
        out["agreement"] = "no finite value"
        return out
    stat = r.get("stat", "mean")
    tol = r.get("tolerance", 0.25)
    if stat == "each":
        good = sum(_ok(r, p[1]) for p in points)
        vals = [p[1] for p in points]
        out["ours"] = f"{m.fmt(min(vals))}–{m.fmt(max(vals))} {m.unit}".strip()
        out["ok"] = good == len(points)
        out["agreement"] = f"{good} of {len(points)} points within"
        return out
    if stat in ("max", "min"):
        pick = max(points, key=lambda p: p[1]) if stat == "max" else min(points, key=lambda p: p[1])
        where = ", ".join(f"{k} = {v}" for k, v in pick[0].items() if k not in (r.get("where") or {}))
        out["ours"] = f"{m.fmt(pick[1], pick[2])} {m.unit}".strip() + (f" at {where}" if where else "")
        v = pick[1]
        if "at" in r:
            at_ok = all(str(pick[0].get(k)) == str(val) for k, val in r["at"].items())
            out["published"] += " at " + ", ".join(f"{k} = {val}" for k, val in r["at"].items())
            out["at_ok"] = at_ok
    else:
        if len(points) == 1:
            v, ci = points[0][1], points[0][2]
            out["ours"] = f"{m.fmt(v, ci)} {m.unit}".strip()
        else:
            v = float(np.mean([p[1] for p in points]))
            out["ours"] = f"{m.fmt(v)} {m.unit} (mean of {len(points)} points)".strip()
    ok = _ok(r, v)
    out["ok"] = ok
    if "value" in r and r["value"] != 0:
        rel = (v - r["value"]) / abs(r["value"])
        out["agreement"] = f"{100 * rel:+.0f} % ({'within' if ok else 'outside'} ±{100 * tol:.0f} %)"
    else:
        out["agreement"] = "consistent" if ok else "not consistent"
    if "at_ok" in out:
        out["agreement"] += "; extreme at the same point" if out["at_ok"] else "; extreme at another point"
    return out


def reference_output(ctx: Context) -> Output | None:
    refs = ctx.exp.references
    if not refs:
        return None
    from .tables import _md

    rows = [evaluate(ctx, r) for r in refs]
    md = _md(["quantity", "published", "source", "ours (mean ± 95 % CI)", "agreement"],
             [[x["label"], x["published"], x["source"], x["ours"], x["agreement"]] for x in rows])
    ctx.out.mkdir(parents=True, exist_ok=True)
    p1, p2 = ctx.out / "reference.csv", ctx.out / "reference.md"
    pd.DataFrame(rows).to_csv(p1, index=False)
    p2.write_text(md + "\n", encoding="utf-8")
    n_ok = sum(1 for x in rows if x["ok"])
    n = sum(1 for x in rows if x["ok"] is not None)
    notes = [f"{n_ok} of {n} published reference values matched (see the agreement column)."] if n else []
    return Output("table", "reference", "Published reference values", [p1, p2], markdown=md, notes=notes)
