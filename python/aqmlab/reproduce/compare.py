"""The papers' published values and claims beside ours: the scorecard.

An experiment's ``reference.toml`` holds the only statements in the report typed in by hand,
each with its source in the paper:

``[[reference]]``: a **published value** at one point of the paper's figure or table::

    [[reference]]
    label = "TCP goodput, RED"          # what the value is
    source = "[CHOKeD] Table II"        # where it was published
    col = "tcp.goodput_m2b_bps"         # our runs column (runmetrics.py)
    unit = "Mb/s"                       # unit of the published value (our column is scaled to it)
    where = { scheme = "RED" }          # the paper's point: must select exactly one run point
    value = 0.211162                    # compared within `tolerance` (default 0.25, relative)
    stat = "max"                        # optional: our maximum (or min) over the points `where`
    at = { gamma = 600 }                #   selects, which must lie at the paper's point `at`
    note = "..."                        # how the value was read (population, window ...)
    explain = "unstated parameter: ..." # the reason, shown only if the value is missed

A value counts as matched only at the paper's point: with ``stat = "mean"`` (the default) the
selection must be one run point (an error otherwise); with ``stat = "max"``/``"min"`` both the
value and the place of the extreme must agree. A point that was not run (``--quick``) is "not
run", counted neither way.

``[[claim]]``: a **qualitative claim** of the paper as a checkable statement, of one ``kind``:

=========  ==========================================================================================
kind       holds when
=========  ==========================================================================================
``bound``  our mean at each point ``where`` selects (``stat = "each"``, default), or their mean /
           max / min (``stat``), satisfies ``min``, ``max`` or ``range``
``best``   the ``of`` coordinate's value ``is`` has the highest mean (``worst``: lowest) at every
           point of the other coordinates
``order``  the values of ``of`` are in the order ``order`` (highest first; ``ascending = true``:
           lowest first) at every point of the other coordinates
``trend``  along the coordinate ``along`` the mean is ``increasing``/``decreasing``
           (``direction``): from the first to the last point it moves that way by more than
           ``min_change`` (relative to the first, default 0), and never the other way by more
           than ``slack`` (relative to the largest, default 0.05)
=========  ==========================================================================================

Claims take ``text``, ``source``, ``col``, ``unit``, ``where``, ``note`` and ``explain`` as values do.

Each miss carries a one-line reason: the entry's ``explain`` (its first words name the kind:
"paper inconsistency", "unstated parameter", "known model difference", ...), else "unexplained".
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analysis.context import Context, Output
from ..analysis.stats import interval_for, metric, where_mask

COMMON = {"label", "text", "source", "col", "unit", "scale", "where", "note", "explain"}
VALUE_KEYS = COMMON | {"value", "tolerance", "stat", "at"}
CLAIM_KEYS = COMMON | {"kind", "min", "max", "range", "stat", "of", "is", "order", "ascending", "along",
                       "direction", "slack", "min_change"}
KINDS = ("bound", "best", "worst", "order", "trend")
REASON_KINDS = ("paper inconsistency", "unstated parameter", "known model difference", "set-up difference",
                "measurement", "quick mode", "unexplained")


def parse_references(raw: dict) -> tuple[list[dict], list[dict]]:
    """The ``[[reference]]`` (values) and ``[[claim]]`` entries of a reference.toml, checked."""
    from ..base.errors import ExperimentError

    extra = set(raw) - {"reference", "claim"}
    if extra:
        raise ExperimentError(f"{sorted(extra)[0]}: unknown key; the file holds [[reference]] and [[claim]] entries")
    refs, claims = list(raw.get("reference", [])), list(raw.get("claim", []))
    for i, r in enumerate(refs):
        w = f"reference[{i}]"
        _keys(r, VALUE_KEYS, w, ("label", "col"))
        if not isinstance(r.get("value"), (int, float)):
            raise ExperimentError(f"{w}.value: a published value is a number (bounds and ranges are "
                                  f"[[claim]] entries)")
        if r.get("stat", "mean") not in ("mean", "max", "min"):
            raise ExperimentError(f"{w}.stat: one of mean, max, min")
        if r.get("stat", "mean") != "mean" and "at" not in r:
            raise ExperimentError(f"{w}.at: a maximum or minimum needs the paper's point (at = {{...}})")
        _explain(r, w)
    for i, c in enumerate(claims):
        w = f"claim[{i}]"
        _keys(c, CLAIM_KEYS, w, ("text", "col"))
        kind = c.get("kind", "bound")
        if kind not in KINDS:
            raise ExperimentError(f"{w}.kind: one of {', '.join(KINDS)}")
        if kind == "bound":
            forms = [k for k in ("min", "max", "range") if k in c]
            if not forms or ("range" in forms and len(forms) > 1):
                raise ExperimentError(f"{w}: a bound needs min, max, min and max, or range")
            if c.get("stat", "each") not in ("each", "mean", "max", "min"):
                raise ExperimentError(f"{w}.stat: one of each, mean, max, min")
        elif kind in ("best", "worst"):
            for k in ("of", "is"):
                if k not in c:
                    raise ExperimentError(f"{w}.{k}: missing (the coordinate and the value that is {kind})")
        elif kind == "order":
            if "of" not in c or not isinstance(c.get("order"), list) or len(c["order"]) < 2:
                raise ExperimentError(f"{w}: an order needs of = \"<coordinate>\" and order = [two or more values]")
        elif kind == "trend":
            if "along" not in c or c.get("direction") not in ("increasing", "decreasing"):
                raise ExperimentError(f"{w}: a trend needs along = \"<coordinate>\" and direction = "
                                      f"\"increasing\" or \"decreasing\"")
        _explain(c, w)
    return refs, claims


def _keys(d: dict, known: set, w: str, required: tuple) -> None:
    """Unknown keys and missing required strings of one entry are errors."""
    from ..base.errors import ExperimentError

    for k in d:
        if k not in known:
            raise ExperimentError(f"{w}.{k}: unknown key; known: {', '.join(sorted(known))}")
    for k in required:
        if not isinstance(d.get(k), str):
            raise ExperimentError(f"{w}.{k}: missing")


def _explain(d: dict, w: str) -> None:
    from ..base.errors import ExperimentError

    e = d.get("explain")
    if e is None:
        return
    if not isinstance(e, str) or not any(e.startswith(k) for k in REASON_KINDS):
        raise ExperimentError(f"{w}.explain: starts with the kind of reason, one of: {', '.join(REASON_KINDS)}")


# ----------------------------------------------------------------------------- evaluation


def _metric(r: dict, label: str):
    return metric({k: r[k] for k in ("col", "unit", "scale") if k in r} | {"label": label}, "reference")


def _points(ctx: Context, r: dict, m) -> tuple[list, list[str]]:
    """Our mean (scaled) at each run point ``where`` selects: [(coords, Interval, scaled mean)]."""
    runs = ctx.runs
    if runs.empty or m.col not in runs.columns:
        return [], []
    sel = runs[where_mask(runs, r.get("where"))]
    keys = [c for c in ctx.coords if c in sel.columns]
    if sel.empty:
        return [], keys
    grp = sel.groupby([sel[k].astype(str) for k in keys], sort=False) if keys else [((), sel)]
    out = []
    for _, sub in grp:
        iv = interval_for(m.col, sub[m.col])
        if np.isfinite(iv.mean):
            out.append((dict(zip(keys, sub[keys].iloc[0])), iv, iv.mean * m.scale))
    return out, keys


def _fmt(m, iv, scale=None) -> str:
    s = m.scale if scale is None else scale
    lo, hi = sorted((iv.lo * s, iv.hi * s))
    return f"{m.fmt_iv(iv.mean * s, lo, hi, iv.method)} {m.unit}".strip()


def _base(r: dict, label: str) -> dict:
    return {"label": label, "source": r.get("source", ""), "note": r.get("note", ""), "ours": "-",
            "ok": None, "agreement": "not run", "reason": ""}


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
    tol = r.get("tolerance", 0.25)
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
    ok = abs(v - r["value"]) <= tol * abs(r["value"]) if r["value"] != 0 else abs(v) <= tol
    if r["value"] != 0:
        out["agreement"] = f"{100 * (v - r['value']) / abs(r['value']):+.0f} % ({'within' if ok else 'outside'} " \
                           f"±{100 * tol:.0f} %)"
    else:
        out["agreement"] = f"{'within' if ok else 'outside'} ±{tol:g}"
    if stat != "mean":
        out["agreement"] += "; extreme at the paper's point" if at_ok else "; extreme at another point"
    return _verdict(out, r, bool(ok and at_ok))


def _bound_ok(c: dict, v: float) -> bool:
    lo = c["range"][0] if "range" in c else c.get("min", -math.inf)
    hi = c["range"][1] if "range" in c else c.get("max", math.inf)
    return lo <= v <= hi


def _bound_text(c: dict) -> str:
    u = f" {c['unit']}" if c.get("unit") else ""
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


def evaluate_claim(ctx: Context, c: dict) -> dict:
    """One claim: does it hold in our runs?"""
    m = _metric(c, c["text"])
    out = _base(c, c["text"])
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
                got = sorted(want, key=lambda k: vals[k], reverse=not c.get("ascending", False))
                n += 1
                if got != want:
                    fails.append(f"{_at(key)}: {' > '.join(got) if not c.get('ascending') else ' < '.join(got)}")
            else:
                if str(c["is"]) not in vals or len(vals) < 2:
                    continue
                n += 1
                top = (max if kind == "best" else min)(vals, key=lambda k: vals[k])
                if top != str(c["is"]):
                    fails.append(f"{_at(key)}: {top}")
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


# ----------------------------------------------------------------------------- the scorecard


def score(ctx: Context) -> dict:
    """Values and claims of an experiment, evaluated: ``{"values": [...], "claims": [...]}``."""
    return {"values": [evaluate(ctx, r) for r in ctx.exp.references],
            "claims": [evaluate_claim(ctx, c) for c in ctx.exp.claims]}


def tally(rows: list[dict]) -> tuple[int, int, int]:
    """(matched, compared, not run) of evaluated values or claims."""
    ok = sum(1 for x in rows if x["ok"] is True)
    n = sum(1 for x in rows if x["ok"] is not None)
    return ok, n, len(rows) - n


def misses(sc: dict) -> list[str]:
    """One line per missed value or claim: what, and the kind of its reason (the full reason is in
    the experiment's table of values and claims)."""
    out = []
    for kind, rows in (("value", sc["values"]), ("claim", sc["claims"])):
        for x in rows:
            if x["ok"] is False:
                out.append(f"{kind} \u201c{x['label']}\u201d — {x['reason'].split(':', 1)[0]}")
    return out


def reference_output(ctx: Context) -> Output | None:
    exp = ctx.exp
    if not exp.references and not exp.claims:
        return None
    from ..analysis.markdown import md_table as _md

    sc = score(ctx)
    parts = []
    if sc["values"]:
        parts.append(("Published values", _md(
            ["quantity", "published", "source", "ours", "agreement", "reason if missed"],
            [[x["label"] + (f" ({x['note']})" if x["note"] else ""), x["published"], x["source"], x["ours"],
              x["agreement"], x["reason"]] for x in sc["values"]])))
    if sc["claims"]:
        parts.append(("Claims of the paper", _md(
            ["claim", "source", "ours", "verdict", "reason if not reproduced"],
            [[x["label"] + (f" ({x['note']})" if x["note"] else ""), x["source"], x["ours"],
              ("reproduced: " if x["ok"] else "not reproduced: " if x["ok"] is False else "") + x["agreement"],
              x["reason"]] for x in sc["claims"]])))
    md = "\n\n".join(f"{t}\n\n{m}" for t, m in parts)
    ctx.out.mkdir(parents=True, exist_ok=True)
    p1, p2 = ctx.out / "reference.csv", ctx.out / "reference.md"
    pd.DataFrame([dict(x, kind="value") for x in sc["values"]] + [dict(x, kind="claim") for x in sc["claims"]]
                 ).to_csv(p1, index=False)
    p2.write_text(md + "\n", encoding="utf-8")
    v, c = tally(sc["values"]), tally(sc["claims"])
    notes = [f"{v[0]} of {v[1]} published values matched" + (f" ({v[2]} not run)" if v[2] else "")
             + f"; {c[0]} of {c[1]} claims reproduced" + (f" ({c[2]} not run)" if c[2] else "") + "."]
    o = Output("table", "reference", "Published values and claims", [p1, p2], markdown=md, notes=notes)
    o.score = sc
    o.parts = parts
    return o
