"""The papers' published values, tables and claims (references.py) beside ours: each evaluated at
the paper's own point, and written as the experiment's reference.csv/.md (a published table as the
paper prints it, each cell ``paper / ours (ours ÷ paper)``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analysis.context import Context, Output
from ..analysis.stats import interval_for, metric, where_mask
from .references import TOLERANCE, band, figures_of, line_text, nearer_bound

# ----------------------------------------------------------------------------- evaluation


def _metric(r: dict, label: str):
    if r.get("relative_to"):  # a ratio of two columns: no unit
        return metric({"col": r["col"], "unit": "", "scale": 1.0, "label": label}, "reference")
    return metric({k: r[k] for k in ("col", "unit", "scale") if k in r} | {"label": label}, "reference")


def _points(ctx: Context, r: dict, m) -> tuple[list, list[str]]:
    """Our mean (scaled) at each run point ``where`` selects: [(coords, Interval, scaled mean)]."""
    runs = ctx.runs
    rel = r.get("relative_to")
    if runs.empty or m.col not in runs.columns or (rel and rel not in runs.columns):
        return [], []
    sel = runs[where_mask(runs, r.get("where"))]
    keys = [c for c in ctx.coords if c in sel.columns]
    if sel.empty:
        return [], keys
    grp = sel.groupby([sel[k].astype(str) for k in keys], sort=False) if keys else [((), sel)]
    out = []
    for _, sub in grp:
        # a claim relative to another column (relative_to): the ratio, run by run
        iv = interval_for("relative", sub[m.col] / sub[rel]) if rel else interval_for(m.col, sub[m.col])
        if np.isfinite(iv.mean):
            out.append((dict(zip(keys, sub[keys].iloc[0])), iv, iv.mean * m.scale))
    return out, keys


def _fmt(m, iv, scale=None) -> str:
    s = m.scale if scale is None else scale
    lo, hi = sorted((iv.lo * s, iv.hi * s))
    return f"{m.fmt_iv(iv.mean * s, lo, hi, iv.method)} {m.unit}".strip()


def _base(r: dict, label: str) -> dict:
    """An evaluated row. ``role`` says whether it is counted (references.ROLES); ``crosscheck``
    holds the same item measured by other engines (engine name -> {"ours", "value", "ok",
    "agreement", "with_aqmlab"}: :mod:`aqmlab.reproduce.crosscheck`), shown as further columns
    beside the paper's and ours."""
    return {"label": label, "source": r.get("source", ""), "note": r.get("note", ""), "ours": "-",
            "ok": None, "agreement": "not run", "reason": "", "figure": figures_of(r), "line": line_text(r),
            "table": r.get("table"), "cell": r.get("cell"), "published_value": r.get("value"),
            "ours_value": None, "tolerance": r.get("tolerance", TOLERANCE) if "value" in r else None,
            "role": r.get("role", "scored"), "role_why": r.get("role_why", ""), "item": r.get("loc", label),
            "crosscheck": {}}


def _verdict(out: dict, r: dict, ok) -> dict:
    out["ok"] = ok
    if ok is False:
        out["reason"] = r.get("explain", "unexplained")
    return out


def evaluate(ctx: Context, r: dict) -> dict:
    """One published value against ours at the paper's point."""
    m = _metric(r, r["label"])
    out = _base(r, r["label"])
    u = f" {r['unit']}" if r.get("unit") else ""
    out["published"] = f"{r['value']:g}{u}"
    pts, keys = _points(ctx, r, m)
    if m.col not in ctx.runs.columns and not ctx.runs.empty:
        out["agreement"] = f"no column {m.col}"
        return out
    stat = r.get("stat", "mean")
    where = r.get("where") or {}
    if stat == "mean":
        if len(pts) > 1:  # excluded when the file is read (experiment.py); kept out of the tally here
            out["agreement"] = f"where selects {len(pts)} run points, not the paper's one"
            return out
        if not pts:
            out["agreement"] = "not run at the paper's point" if ctx.quick else "no matching runs"
            return out
        _, iv, v = pts[0]
        out["ours"] = _fmt(m, iv)
        at_ok = True
    else:
        if not pts:
            return out
        pick = max(pts, key=lambda p: p[2]) if stat == "max" else min(pts, key=lambda p: p[2])
        if not all(any(str(p[0].get(k)) == str(val) for p in pts) for k, val in r["at"].items()):
            out["agreement"] = "not run at the paper's point" if ctx.quick else "the paper's point was not run"
            return out
        at_ok = all(str(pick[0].get(k)) == str(val) for k, val in r["at"].items())
        place = ", ".join(f"{k} = {v}" for k, v in pick[0].items() if k not in where)
        out["ours"] = _fmt(m, pick[1]) + (f" at {place}" if place else "")
        out["published"] += " at " + ", ".join(f"{k} = {val}" for k, val in r["at"].items())
        v = pick[2]
    out["ours_value"] = float(v)
    lo, hi, how = band(r)
    out["band"] = how
    ok = lo <= v <= hi
    word = "within" if ok else "outside"
    if "abs_tolerance" in r:
        out["agreement"] = f"{v - r['value']:+.3g}{u} ({word} {how})"
    elif r.get("complement"):
        b = nearer_bound(r)
        c_pub, c_ours = abs(b - r["value"]), abs(b - v)
        rel = f"{100 * (c_ours - c_pub) / c_pub:+.0f} %; " if c_pub else ""
        out["agreement"] = f"distance to {b:g}: ours {c_ours:.3g}, the paper's {c_pub:.3g} ({rel}{word} {how})"
    elif r["value"] != 0:
        out["agreement"] = f"{100 * (v - r['value']) / abs(r['value']):+.0f} % ({word} {how})"
    else:
        out["agreement"] = f"{word} {how}"
    if stat != "mean":
        out["agreement"] += "; extreme at the paper's point" if at_ok else "; extreme at another point"
    return _verdict(out, r, bool(ok and at_ok))


def _bound_ok(c: dict, v: float) -> bool:
    lo = c["range"][0] if "range" in c else c.get("min", -math.inf)
    hi = c["range"][1] if "range" in c else c.get("max", math.inf)
    return lo <= v <= hi


def _bound_text(c: dict) -> str:
    u = f" {c['unit']}" if c.get("unit") else ""
    if c.get("relative_to"):
        u = f" × {c['relative_to']}"
    if "range" in c:
        lo, hi = c["range"]
        return f"= {lo:g}{u}" if lo == hi else f"in [{lo:g}, {hi:g}]{u}"
    if "min" in c and "max" in c:
        return f"in [{c['min']:g}, {c['max']:g}]{u}"
    return f"≥ {c['min']:g}{u}" if "min" in c else f"≤ {c['max']:g}{u}"


def _groups(pts: list, exclude: list[str]) -> dict:
    """Points grouped by every coordinate except ``exclude``."""
    g: dict = {}
    for p in pts:
        key = tuple((k, str(v)) for k, v in p[0].items() if k not in exclude)
        g.setdefault(key, []).append(p)
    return g


def _at(key) -> str:
    return ", ".join(f"{k} = {v}" for k, v in key) or "the only point"


def _strictly_ordered(vals: list, ascending: bool) -> bool:
    """Each value above the next (below, ``ascending``): equal values are not in an order."""
    return all((a < b) if ascending else (a > b) for a, b in zip(vals, vals[1:]))


def _chain(names: list, vals: dict, m, ascending: bool) -> str:
    """``"A > B = C"``: the order found, ties shown as such."""
    out = names[0]
    for a, b in zip(names, names[1:]):
        out += (" = " if vals[a] == vals[b] else (" < " if ascending else " > ")) + b
    return out


def _order_of_cols(ctx: Context, c: dict, out: dict) -> dict:
    """An ``order`` claim over columns: at every point ``where`` selects, the means of ``cols`` are in
    that order (highest first; ``ascending``: lowest first)."""
    labels = [str(x) for x in c.get("labels", c["cols"])]
    series = []
    for col, lab in zip(c["cols"], labels):
        # every column in the claim's unit, or all unscaled: never each in its own default unit
        m = _metric(dict(c, col=col) if "unit" in c or "scale" in c else dict(c, col=col, unit="", scale=1.0), lab)
        if m.col not in ctx.runs.columns:
            if not ctx.runs.empty:
                out["agreement"] = f"no column {m.col}"
            return out
        pts, _ = _points(ctx, dict(c, col=col), m)
        series.append({tuple((k, str(v)) for k, v in p[0].items()): p[2] for p in pts})
    keys = [k for k in series[0] if all(k in s for s in series[1:])]
    if not keys:
        return out
    asc = c.get("ascending", False)
    fails = []
    for key in keys:
        vals = [s[key] for s in series]
        if not _strictly_ordered(vals, asc):
            got = sorted(range(len(vals)), key=lambda i: vals[i], reverse=not asc)
            fails.append(f"{_at(key)}: " + _chain([labels[i] for i in got], dict(zip(labels, vals)), None, asc))
    what = (" < " if asc else " > ").join(labels)
    out["ours"] = f"{what} at {len(keys) - len(fails)} of {len(keys)} points"
    out["agreement"] = "holds at every point" if not fails else "not at " + "; ".join(fails[:3]) + (
        " …" if len(fails) > 3 else "")
    return _verdict(out, c, not fails)


def evaluate_claim(ctx: Context, c: dict) -> dict:
    """One claim: does it hold in our runs?"""
    out = _base(c, c["text"])
    if "cols" in c:
        return _order_of_cols(ctx, c, out)
    if c.get("kind") == "flows":
        return _flows(ctx, c, out)
    m = _metric(c, c["text"])
    kind = c.get("kind", "bound")
    pts, keys = _points(ctx, c, m)
    if not pts:
        if m.col not in ctx.runs.columns and not ctx.runs.empty:
            out["agreement"] = f"no column {m.col}"
        return out
    if kind == "bound":
        stat = c.get("stat", "each")
        vals = [p[2] for p in pts]
        if stat == "each":
            good = [p for p in pts if _bound_ok(c, p[2])]
            out["ours"] = f"{m.fmt(min(vals))}–{m.fmt(max(vals))} {m.unit}".strip() if len(pts) > 1 else _fmt(m, pts[0][1])
            out["agreement"] = f"{len(good)} of {len(pts)} points {_bound_text(c)}"
            bad = [p for p in pts if not _bound_ok(c, p[2])]
            if bad and len(pts) > 1:
                where = set((c.get("where") or {}).keys())
                out["agreement"] += "; not at " + "; ".join(
                    _at(tuple((k, v) for k, v in p[0].items() if k not in where or isinstance(c["where"][k], list)))
                    + f" ({m.fmt(p[2])})" for p in bad[:4]) + (" …" if len(bad) > 4 else "")
            return _verdict(out, c, len(good) == len(pts))
        v = {"mean": np.mean, "max": np.max, "min": np.min}[stat](vals)
        out["ours"] = f"{stat} {m.fmt(v)} {m.unit}".strip()
        ok = _bound_ok(c, v)
        out["agreement"] = ("" if ok else "not ") + _bound_text(c)
        return _verdict(out, c, ok)
    if kind in ("best", "worst") and "x" in c:
        return _best_at_same_x(ctx, c, out, m, pts, keys)
    if kind in ("best", "worst", "order"):
        of = c["of"]
        if of not in keys:
            out["agreement"] = f"{of} is not a coordinate"
            return out
        fails, n = [], 0
        for key, ps in _groups(pts, [of]).items():
            vals = {str(p[0][of]): p[2] for p in ps}
            if kind == "order":
                want = [str(x) for x in c["order"] if str(x) in vals]
                if len(want) < 2:
                    continue
                n += 1
                if not _strictly_ordered([vals[k] for k in want], c.get("ascending", False)):
                    got = sorted(want, key=lambda k: vals[k], reverse=not c.get("ascending", False))
                    fails.append(f"{_at(key)}: " + _chain(got, vals, m, c.get("ascending", False)))
            else:
                if str(c["is"]) not in vals or len(vals) < 2:
                    continue
                n += 1
                me = vals[str(c["is"])]
                others = [v for k, v in vals.items() if k != str(c["is"])]
                ok = all(me > v for v in others) if kind == "best" else all(me < v for v in others)
                if not ok:  # a tie is not "highest" (or "lowest")
                    top = (max if kind == "best" else min)(vals, key=lambda k: vals[k])
                    tied = [k for k, v in vals.items() if v == vals[top]]
                    fails.append(f"{_at(key)}: " + (top if len(tied) == 1 else " = ".join(tied) + " (tie)"))
        if n == 0:
            return out
        if kind == "order":
            what = (" < " if c.get("ascending") else " > ").join(map(str, c["order"]))
        else:
            what = f"{c['is']} {'highest' if kind == 'best' else 'lowest'}"
        out["ours"] = f"{what} at {n - len(fails)} of {n} points"
        out["agreement"] = "holds at every point" if not fails else "not at " + "; ".join(fails[:3]) + (
            " …" if len(fails) > 3 else "")
        return _verdict(out, c, not fails)
    if kind == "peak":
        return _peak(c, out, m, pts, keys)
    # trend
    along = c["along"]
    if along not in keys:
        out["agreement"] = f"{along} is not a coordinate"
        return out
    slack = float(c.get("slack", 0.05))
    sign = 1.0 if c["direction"] == "increasing" else -1.0
    fails, n = [], 0
    for key, ps in _groups(pts, [along]).items():
        ps = sorted(ps, key=lambda p: float(p[0][along]))
        if len(ps) < 2:
            continue
        n += 1
        ys = np.array([p[2] for p in ps]) * sign
        scale = max(np.abs(ys).max(), 1e-300)
        back = np.diff(ys) < -slack * scale
        moved = ys[-1] - ys[0] > float(c.get("min_change", 0.0)) * abs(ys[0])
        if not ys[-1] > ys[0] or not moved or back.any():
            fails.append(_at(key) + f" ({m.fmt(ps[0][2])} → {m.fmt(ps[-1][2])})")
    if n == 0:
        return out
    out["ours"] = f"{c['direction']} along {along} in {n - len(fails)} of {n} series"
    out["agreement"] = "holds" if not fails else "not for " + "; ".join(fails[:3])
    return _verdict(out, c, not fails)


def _flows(ctx: Context, c: dict, out: dict) -> dict:
    """``flows``: the fraction of the selected flows (``flows = { transport = "tcp" }``) whose ``col``
    (a per-flow column) lies between ``at_least`` and ``at_most`` times their run's ideal fair share
    (``fair_share_bps``), as a mean over seeds at each point ``where`` selects, satisfies ``min``
    and ``max`` ("most TCP flows achieve their fair share": at_least = 0.75, min = 0.5)."""
    runs = ctx.runs
    if runs.empty:
        return out
    try:
        fl = ctx.table("flows")
    except Exception as err:  # no flows table gathered
        out["agreement"] = f"no flows table ({err})"
        return out
    col = c["col"]
    if col not in fl.columns or "run" not in fl.columns or "fair_share_bps" not in runs.columns:
        out["agreement"] = f"no per-flow column {col}"
        return out
    sel = fl[where_mask(fl, c.get("flows"))]
    fair = runs.set_index("run")["fair_share_bps"]
    x = sel[col] / sel["run"].map(fair)
    inside = (x >= float(c.get("at_least", -math.inf))) & (x <= float(c.get("at_most", math.inf)))
    frac = inside.groupby(sel["run"]).mean()
    r = runs[where_mask(runs, c.get("where"))].copy()
    r["_frac"] = r["run"].map(frac)
    keys = [k for k in ctx.coords if k in r.columns]
    pts = []
    for _, sub in (r.groupby([r[k].astype(str) for k in keys], sort=False) if keys else [((), r)]):
        v = float(sub["_frac"].mean())
        if math.isfinite(v):
            pts.append((dict(zip(keys, sub[keys].iloc[0])), v))
    if not pts:
        return out
    lo, hi = c.get("min", -math.inf), c.get("max", math.inf)
    band = ("" if "at_least" not in c else f"≥ {c['at_least']:g}") + (" and " if "at_least" in c and "at_most" in c
                                                                        else "") + (
        "" if "at_most" not in c else f"≤ {c['at_most']:g}")
    bad = [p for p in pts if not lo <= p[1] <= hi]
    vals = [p[1] for p in pts]
    out["ours"] = (f"{min(vals):.2f}" + (f"–{max(vals):.2f}" if max(vals) > min(vals) else "")
                   + f" of the flows at {band} × the fair share")
    out["agreement"] = f"{len(pts) - len(bad)} of {len(pts)} points with a fraction " + (
        f"≥ {lo:g}" if math.isfinite(lo) else "") + (" and " if math.isfinite(lo) and math.isfinite(hi) else "") + (
        f"≤ {hi:g}" if math.isfinite(hi) else "") + ("; not at " + "; ".join(
            _at(tuple((k, str(v)) for k, v in p[0].items())) + f" ({p[1]:.2f})" for p in bad[:4]) if bad else "")
    return _verdict(out, c, not bad)


def _best_at_same_x(ctx: Context, c: dict, out: dict, m, pts: list, keys: list) -> dict:
    """``best``/``worst`` with ``x = "<column>"`` and ``along = "<coordinate>"``: each value of ``of``
    makes a curve of our mean ``col`` against our mean ``x`` over the points of ``along``; against
    each other curve, wherever the two overlap in x (both read by linear interpolation between their
    points), ``is`` is higher (lower) at every x where either has a point. For a paper that compares
    schemes 'at the same average queue' when their x values differ."""
    of, along = c["of"], c.get("along")
    if of not in keys or along not in keys:
        out["agreement"] = f"{of if of not in keys else along} is not a coordinate"
        return out
    xm = _metric({"col": c["x"]}, c["x"])
    if xm.col not in ctx.runs.columns:
        out["agreement"] = f"no column {xm.col}"
        return out
    xs, _ = _points(ctx, dict(c, col=c["x"], unit="", scale=1.0), xm)
    xval = {tuple((k, str(v)) for k, v in p[0].items()): p[2] for p in xs}
    fails, n, checked = [], 0, 0
    for key, ps in _groups(pts, [of, along]).items():
        curves: dict = {}
        for p in ps:
            k = tuple((kk, str(vv)) for kk, vv in p[0].items())
            if k in xval and np.isfinite(xval[k]):
                curves.setdefault(str(p[0][of]), []).append((xval[k], p[2]))
        me = str(c["is"])
        if me not in curves or len(curves) < 2:
            continue
        for v in curves.values():
            v.sort()
        mx, my = [a for a, _ in curves[me]], [b for _, b in curves[me]]
        for other, v in curves.items():  # against each other curve, where the two overlap
            if other == me:
                continue
            ox, oy = [a for a, _ in v], [b for _, b in v]
            lo, hi = max(mx[0], ox[0]), min(mx[-1], ox[-1])
            grid = sorted({x for x in mx + ox if lo <= x <= hi})
            if not grid:
                continue
            n += 1
            for x in grid:
                mine, theirs = float(np.interp(x, mx, my)), float(np.interp(x, ox, oy))
                checked += 1
                if not (mine > theirs if c.get("kind") == "best" else mine < theirs):
                    fails.append(f"{_at(key)}{', ' if key else ''}{xm.col} = {x:.3g}: {other}")
    if n == 0:
        out["agreement"] = "the curves do not overlap in " + c["x"]
        return out
    word = "highest" if c.get("kind") == "best" else "lowest"
    out["ours"] = f"{c['is']} {word} at {checked - len(fails)} of {checked} x values where its curve overlaps another"
    out["agreement"] = "holds at every x" if not fails else "not at " + "; ".join(fails[:3]) + (
        " …" if len(fails) > 3 else "")
    return _verdict(out, c, not fails)


def _peak(c: dict, out: dict, m, pts: list, keys: list) -> dict:
    """``peak``: along ``along`` the mean rises to a maximum at an interior point and falls after it
    (``lowest``: falls to a minimum and rises after it), moving by more than ``min_change``
    (relative to the extreme) on each side and never back by more than ``slack`` (relative to the
    largest value, default 0.05). The paper need not say where the extreme is; we report ours."""
    along = c["along"]
    if along not in keys:
        out["agreement"] = f"{along} is not a coordinate"
        return out
    slack, minc = float(c.get("slack", 0.05)), float(c.get("min_change", 0.0))
    sign = -1.0 if c.get("lowest") else 1.0
    fails, places, n = [], [], 0
    for key, ps in _groups(pts, [along]).items():
        ps = sorted(ps, key=lambda p: float(p[0][along]))
        if len(ps) < 3:
            continue
        n += 1
        ys = np.array([p[2] for p in ps]) * sign
        k = int(np.argmax(ys))
        scale = max(np.abs(ys).max(), 1e-300)
        where = f"{along} = {ps[k][0][along]}"
        places.append(where)
        up, down = np.diff(ys[:k + 1]), np.diff(ys[k:])
        ok = (0 < k < len(ys) - 1 and ys[k] - ys[0] > minc * abs(ys[k]) and ys[k] - ys[-1] > minc * abs(ys[k])
              and not (up < -slack * scale).any() and not (down > slack * scale).any())
        if not ok:
            fails.append(_at(key) + f" (extreme at {where})")
    if n == 0:
        return out
    word = "valley" if c.get("lowest") else "peak"
    out["ours"] = f"{word} inside the range in {n - len(fails)} of {n} series (at " + "; ".join(
        dict.fromkeys(places)) + ")"
    out["agreement"] = "holds" if not fails else "not for " + "; ".join(fails[:3])
    return _verdict(out, c, not fails)


# ----------------------------------------------------------------------------- the scorecard


def score(ctx: Context, others: dict | None = None, refused: dict | None = None) -> dict:
    """Values and claims of an experiment, evaluated: ``{"values": [...], "claims": [...]}``. Each row's
    ``item`` names what it counts towards: its own entry, or the paper's statement it is part of.
    ``others``: engine name -> a Context of that engine's runs (``{"ns-2.35": ...}``): each row
    measured there too, and a miss arbitrated by it (:mod:`aqmlab.reproduce.crosscheck`); ``refused``:
    engine name -> the refusals of the runs it could not make (a row resting on them says why)."""
    exp = ctx.exp
    values = [evaluate(ctx, r) for r in exp.references]
    claims = [evaluate_claim(ctx, c) for c in exp.claims]
    from .explain import render

    for r, x in zip(exp.references + exp.claims, values + claims):
        x["item"] = f"{exp.id}: " + (f"statement {r['statement']}" if r.get("statement") else r.get("loc", x["label"]))
        if x["ok"] is False and r.get("explain"):
            x["reason"] = render(ctx, r, x)  # its numbers from this run (explain.py)
    if others or refused:
        from .crosscheck import add_engines

        add_engines(ctx, others, exp, values, claims, {"value": evaluate, "claim": evaluate_claim}, refused)
    return {"values": values, "claims": claims}


def items(rows: list[dict]) -> list[list[dict]]:
    """The counted items among evaluated rows: the scored rows, those of one statement together."""
    out: dict = {}
    for x in rows:
        if x.get("role", "scored") == "scored":
            out.setdefault(x.get("item") or id(x), []).append(x)
    return list(out.values())


def item_ok(rows: list[dict]):
    """An item is matched when every part compared matches, missed when one does not, not run
    when no part was compared."""
    states = [x["ok"] for x in rows]
    if all(s is None for s in states):
        return None
    return not any(s is False for s in states)


def tally(rows: list[dict]) -> tuple[int, int, int]:
    """(matched, compared, not run) of the counted items among evaluated values or claims (rows that
    are context, other readings or without information are not items)."""
    its = [item_ok(i) for i in items(rows)]
    ok = sum(1 for s in its if s is True)
    n = sum(1 for s in its if s is not None)
    return ok, n, len(its) - n


def uncounted(rows: list[dict]) -> dict:
    """How many rows of each role other than ``scored`` (shown, not counted)."""
    out: dict = {}
    for x in rows:
        if x.get("role", "scored") != "scored":
            out[x["role"]] = out.get(x["role"], 0) + 1
    return out


def _num(v: float) -> str:
    """A number as a table cell: up to four significant digits, no exponent for usual magnitudes."""
    if v is None or not math.isfinite(v):
        return "-"
    a = abs(v)
    if a == 0 or 1e-3 <= a < 1e6:
        return f"{v:.4g}"
    return f"{v:.3g}"


def cell_text(x: dict) -> str:
    """A published value beside ours: ``paper / ours (ours ÷ paper)``, with ✓ or ✗."""
    pub = _num(x["published_value"])
    if x["ok"] is None:
        return f"{pub} / {x['agreement']}" if x["agreement"] in ("not run", "not run at the paper's point") \
            else f"{pub} / –"
    ours = x["ours_value"]
    ratio = f" ({ours / x['published_value']:.2f})" if x["published_value"] else ""
    mark = '✓' if x['ok'] else '✗'
    if x.get("role", "scored") != "scored":
        mark = f"({mark}, {x['role']}: not counted)"
    e = x.get("crosscheck", {}).get("ns-2.35")
    ns2 = f"ns-2.35 {_num(e['value'])} / " if e and e.get("value") is not None else ""
    return f"{pub} / {ns2}{_num(ours)}{ratio} {mark}"


def counted_text(x: dict) -> str:
    """Whether a row is counted, and if not, why (its role and the reason)."""
    if x.get("role", "scored") == "scored":
        return "yes"
    return f"no, {x['role']}: {x.get('role_why', '')}".rstrip(": ")


def tally_text(rows: list[dict], what: str, done: str) -> str:
    """``3 of 4 published values matched (1 not run); shown, not counted: 2 context`` ."""
    ok, n, nr = tally(rows)
    un = uncounted(rows)
    return (f"{ok} of {n} {what} {done}" + (f" ({nr} not run)" if nr else "")
            + ("; shown, not counted: " + ", ".join(f"{k} {v}" for k, v in un.items()) if un else ""))


def table_grid(tab: dict, rows: list[dict]) -> str:
    """A published table as the paper prints it, each cell ``paper / ours (ratio)``."""
    from ..analysis.markdown import md_table as _md

    by_cell = {x["cell"]: x for x in rows if x.get("table") == tab["index"]}
    grid = []
    for i, r in enumerate(tab["rows"]):
        line = [r]
        for j in range(len(tab["columns"])):
            x = by_cell.get((i, j))
            line.append(cell_text(x) if x is not None else str(tab["cells"][i][j]))
        grid.append(line)
    return _md([""] + tab["columns"], grid)


def _table_notes(tab: dict, rows: list[dict]) -> list[str]:
    """The reasons of a table's missed cells, each once, with the cells it applies to."""
    mine = [x for x in rows if x.get("table") == tab["index"]]
    ns2 = [x for x in mine if x.get("crosscheck", {}).get("ns-2.35", {}).get("value") is not None]
    notes = [tally_text(mine, "cells", "matched") + " (cell: paper / ours (ours ÷ paper); ✓ within the cell's "
             "tolerance, stated below)."]
    if ns2:
        agree = sum(1 for x in ns2 if x["crosscheck"]["ns-2.35"]["with_aqmlab"])
        notes.append(f"Where ns-2.35 ran a cell's point ({len(ns2)} cells) the cell reads paper / ns-2.35 / ours "
                     f"(ours ÷ paper); ns-2.35 lies within the cell's tolerance of ours in {agree} of them.")
    unrun: dict = {}
    for x in mine:
        if why := x.get("not_run", {}).get("ns-2.35"):
            unrun.setdefault(why, []).append(x["label"].split(": ", 1)[-1])
    for why, cells in unrun.items():
        notes.append(f"Not run in ns-2.35 ({', '.join(cells)}): {why}.")
    for how in dict.fromkeys(x.get("band", "") for x in mine):
        if how:
            cells = [x["label"].split(": ", 1)[-1] for x in mine if x.get("band") == how]
            notes.append(f"Tolerance {how}: " + ("every cell" if len(cells) == len(mine) else
                                                 "; ".join(cells[:6]) + (" …" if len(cells) > 6 else "")) + ".")
    for why in dict.fromkeys(x["role_why"] for x in mine if x.get("role", "scored") != "scored"):
        cells = [x["label"].split(": ", 1)[-1] for x in mine if x["role_why"] == why]
        role = next(x["role"] for x in mine if x["role_why"] == why)
        notes.append(f"Not counted ({role}): {why} ({'; '.join(cells[:6])}{' …' if len(cells) > 6 else ''})")
    reasons: dict = {}
    for x in mine:
        if x["ok"] is False and x.get("role", "scored") == "scored":
            reasons.setdefault(x["reason"], []).append(x["label"].split(": ", 1)[-1])
    for reason, cells in reasons.items():
        notes.append(f"{reason} ({'; '.join(cells[:6])}{' …' if len(cells) > 6 else ''})")
    if tab.get("note"):
        notes.append(tab["note"])
    return notes


def reference_output(ctx: Context, others: dict | None = None, refused: dict | None = None) -> Output | None:
    exp = ctx.exp
    if not exp.references and not exp.claims:
        return None
    from ..analysis.markdown import md_table as _md
    from .crosscheck import cell as engine_cell

    sc = score(ctx, others, refused)
    engines = list(dict.fromkeys([*(others or {}), *(refused or {})]))  # a column each, beside the paper's and ours
    parts = []
    singles = [x for x in sc["values"] if x.get("table") is None]
    if singles:
        parts.append(("Published values", _md(
            ["quantity", "published", "source"] + engines + ["ours", "agreement", "counted", "reason if missed"],
            [[x["label"] + (f" ({x['note']})" if x["note"] else ""), x["published"], _cite(x)]
             + [engine_cell(x, n) or "–" for n in engines]
             + [x["ours"], x["agreement"], counted_text(x), x["reason"]] for x in singles])))
    for tab in exp.ref_tables:
        title = f"{tab['source']}" + (f": {tab['title']}" if tab["title"] else "")
        cite = f" ({line_text(tab)} of the paper's text)" if tab.get("line") else ""
        parts.append((title + cite, table_grid(tab, sc["values"]), _table_notes(tab, sc["values"])))
    if sc["claims"]:
        parts.append(("Claims of the paper", _md(
            ["claim", "source"] + engines + ["ours", "verdict", "counted", "reason if not reproduced"],
            [[x["label"] + (f" ({x['note']})" if x["note"] else ""), _cite(x)]
             + [engine_cell(x, n) or "–" for n in engines] + [x["ours"],
              ("reproduced: " if x["ok"] else "not reproduced: " if x["ok"] is False else "") + x["agreement"],
              counted_text(x) + (f" (part of {x['item'].split(': ', 1)[1]})" if "statement" in x["item"] else ""),
              x["reason"]] for x in sc["claims"]])))
    md = "\n\n".join(_part_md(p) for p in parts)
    ctx.out.mkdir(parents=True, exist_ok=True)
    p1, p2 = ctx.out / "reference.csv", ctx.out / "reference.md"
    pd.DataFrame([_csv_row(x, "value") for x in sc["values"]]
                 + [_csv_row(x, "claim") for x in sc["claims"]]).to_csv(p1, index=False)
    p2.write_text(md + "\n", encoding="utf-8")
    notes = [tally_text(sc["values"], "published values", "matched") + "; "
             + tally_text(sc["claims"], "claims", "reproduced") + "."]
    o = Output("table", "reference", "Published values and claims", [p1, p2], markdown=md, notes=notes)
    o.score = sc
    o.parts = parts
    return o


def _csv_row(x: dict, kind: str) -> dict:
    """A row of reference.csv: the evaluated row, each other engine's result in columns of its own."""
    out = {k: v for k, v in x.items() if k != "not_run"}
    if x["crosscheck"]:  # the engines that measured it (an empty one stays "{}", as without other engines)
        out["crosscheck"] = ", ".join(x["crosscheck"])
    out.update(kind=kind, figure="; ".join(x["figure"]))
    for name, e in x.get("crosscheck", {}).items():
        out.update({name: e["ours"], f"{name} value": e["value"], f"{name} ok": e["ok"],
                    f"{name} agrees with aqmlab": e["with_aqmlab"]})
    for name, why in x.get("not_run", {}).items():
        out[name] = f"not run: {why}"
    return out


def _part_md(part: tuple) -> str:
    """A part of reference.md: its title, its table and (for a published table) its notes."""
    text = f"{part[0]}\n\n{part[1]}"
    if len(part) > 2 and part[2]:
        text += "\n\n" + "\n".join(f"* {n}" for n in part[2])
    return text


def _cite(x: dict) -> str:
    return x["source"] + (f" ({x['line']})" if x.get("line") else "")
