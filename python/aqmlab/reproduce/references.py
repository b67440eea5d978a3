"""The format of ``reference.toml``: the papers' published values, tables and claims, read and checked.

They are evaluated against our runs by compare.py.

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

Every entry may also say where in the paper it comes from: ``figure = "Table 2"`` (the paper's
figure or table, as its inventory ``papers/<tag>.toml`` lists it; a list for several) and
``line = 106`` (the line of the paper's text, or ``[first, last]``).

``[[table]]``: a **published table**, cell by cell; each numeric cell is one published value::

    [[table]]
    figure = "Table 1"                     # required, as are source and rows/columns/cells
    source = "[WARD] §3.2, Table 1"
    line = 110
    title = "..."
    where = { scheme = "WARD" }            # common to every cell (optional)
    rows = [{ label = "TCP_avg", col = "tcp.throughput_per_flow_bps", unit = "kb/s" }, ...]
    columns = { coord = "load", values = [0, 0.1, 0.2] }    # or a list like rows
    cells = [[29.30, 27.35, 26.51], ["–", 64.60, 95.26]]   # a string: a cell the paper leaves empty
    cell_explain = [["TCP_avg", "0.1", "measurement: ..."]]  # optional, per cell
    cell_roles = [["TCP_avg", "0.1", "no_information", "why"]]  # optional: a cell not counted (context, ...)

Rows and columns are lists of tables with ``label`` and any of ``col``, ``unit``, ``scale``,
``where``, ``stat``, ``at``, ``explain``, ``tolerance``, ``note``, or the shorthand ``{ coord,
values, labels }``; ``col``, ``unit`` and ``scale`` are given once among the table, the row and the
column; ``where`` and ``at`` are merged. The report prints the table as the paper does, each cell
``paper / ours (ours ÷ paper)``.

A value counts as matched only at the paper's point: with ``stat = "mean"`` (the default) the
selection must be one run point (an error otherwise); with ``stat = "max"``/``"min"`` both the
value and the place of the extreme must agree. A point that was not run (``--quick``) is "not
run", counted neither way.

``[[claim]]``: a **qualitative claim** of the paper as a checkable statement, of one ``kind``:

=========  ==========================================================================================
kind       holds when
=========  ==========================================================================================
``bound``  our mean at each point ``where`` selects (``stat = "each"``, default), or their mean /
           max / min (``stat``), satisfies ``min``, ``max`` or ``range`` (with ``relative_to =
           "<column>"``: the ratio of ``col`` to that column, run by run)
``best``   the ``of`` coordinate's value ``is`` has the highest mean (``worst``: lowest) at every
           point of the other coordinates (strictly: a tie is not highest; orders are strict too)
           (with ``x = "<column>"`` and ``along = "<coordinate>"``: compared where the curves of
           ``col`` against our mean ``x`` overlap, each read by linear interpolation; "at the same
           average queue")
``order``  the values of ``of`` are in the order ``order`` (highest first; ``ascending = true``:
           lowest first) at every point of the other coordinates; or, with ``cols = [...]``
           (and ``labels``) instead of ``col``/``of``, the means of those columns are in that
           order at every point ``where`` selects
``peak``   along the coordinate ``along`` the mean rises to a maximum at an interior point and
           falls after it (``lowest = true``: a valley), by more than ``min_change`` (relative to
           the extreme) each side, never back by more than ``slack``; where is not checked
``flows``  the fraction of the flows ``flows`` selects (``{ transport = "tcp" }``) whose per-flow
           ``col`` lies between ``at_least`` and ``at_most`` times the fair share satisfies ``min``
           / ``max`` at each point ("most TCP flows achieve their fair share")
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

COMMON = {"label", "text", "source", "col", "unit", "scale", "where", "note", "explain", "figure", "line", "context",
          "no_information", "statement", "reading"}
VALUE_KEYS = COMMON | {"value", "tolerance", "stat", "at", "complement", "abs_tolerance", "not_setup"}
CLAIM_KEYS = COMMON | {"kind", "min", "max", "range", "stat", "of", "is", "order", "ascending", "along",
                       "direction", "slack", "min_change", "cols", "labels", "lowest", "x", "flows", "at_least",
                       "at_most", "relative_to"}
TABLE_KEYS = {"figure", "source", "line", "title", "where", "tolerance", "explain", "note", "rows", "columns",
              "cells", "cell_explain", "cell_roles", "col", "unit", "scale", "stat", "at", "complement", "abs_tolerance", "context",
              "no_information", "not_setup"}
#: what a row or column of a ``[[table]]`` may set for its cells
AXIS_KEYS = {"label", "col", "unit", "scale", "where", "stat", "at", "explain", "tolerance", "note", "complement",
             "abs_tolerance", "context", "no_information", "not_setup"}
KINDS = ("bound", "best", "worst", "order", "trend", "peak", "flows")
REASON_KINDS = ("paper inconsistency", "unstated parameter", "known model difference", "set-up difference",
                "measurement", "quick mode", "unexplained")
#: relative tolerance of a published value when its entry gives none
TOLERANCE = 0.25


def parse_references(raw: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """The published values (``[[reference]]`` entries and every numeric cell of the ``[[table]]``
    entries), the ``[[claim]]`` entries and the tables of a reference.toml, checked.

    Each value and claim gets ``loc``, where it is in the file (for error messages); a table's
    cells get ``table`` (the table's index) and ``cell`` (row, column)."""
    from ..base.errors import ExperimentError

    extra = set(raw) - {"reference", "claim", "table"}
    if extra:
        raise ExperimentError(f"{sorted(extra)[0]}: unknown key; the file holds [[reference]], [[table]] and "
                              f"[[claim]] entries")
    refs, claims = list(raw.get("reference", [])), list(raw.get("claim", []))
    for i, r in enumerate(refs):
        w = f"reference[{i}]"
        _keys(r, VALUE_KEYS, w, ("label", "col"))
        _check_value(r, w)
        r["loc"] = w
    tables = []
    for t, spec in enumerate(raw.get("table", [])):
        tab, cells = _parse_table(spec, f"table[{t}]", t)
        tables.append(tab)
        refs += cells
    for i, c in enumerate(claims):
        w = f"claim[{i}]"
        _keys(c, CLAIM_KEYS, w, ("text",) if "cols" in c else ("text", "col"))
        kind = c.get("kind", "bound")
        if kind not in KINDS:
            raise ExperimentError(f"{w}.kind: one of {', '.join(KINDS)}")
        if "cols" in c:
            cols = c["cols"]
            if kind != "order" or "col" in c or "of" in c:
                raise ExperimentError(f"{w}.cols: only an order claim compares columns (kind = \"order\", no col, "
                                      f"no of)")
            if not isinstance(cols, list) or len(cols) < 2 or not all(isinstance(x, str) for x in cols):
                raise ExperimentError(f"{w}.cols: two or more column names")
            labels = c.get("labels", cols)
            if not isinstance(labels, list) or len(labels) != len(cols):
                raise ExperimentError(f"{w}.labels: one label per column of cols")
        elif "labels" in c:
            raise ExperimentError(f"{w}.labels: only with cols")
        elif kind == "bound":
            forms = [k for k in ("min", "max", "range") if k in c]
            if not forms or ("range" in forms and len(forms) > 1):
                raise ExperimentError(f"{w}: a bound needs min, max, min and max, or range")
            if c.get("stat", "each") not in ("each", "mean", "max", "min"):
                raise ExperimentError(f"{w}.stat: one of each, mean, max, min")
            if "relative_to" in c and (not isinstance(c["relative_to"], str) or "unit" in c or "scale" in c):
                raise ExperimentError(f"{w}.relative_to: a runs column to divide col by (the bound is then a "
                                      f"ratio, without unit or scale)")
            if ("range" in c or ("min" in c and "max" in c)) and "relative_to" not in c:
                lo, hi = c["range"] if "range" in c else (c["min"], c["max"])
                blo, bhi = metric_bounds(c)
                if lo < blo or hi > bhi:
                    raise ExperimentError(f"{w}.range: [{lo:g}, {hi:g}] leaves the range of {c['col']} ([{blo:g}, "
                                          f"{bhi:g}]): a band around a value near a bound cannot fail on that side; "
                                          f"read 'about x' by its distance to the bound")
        elif kind in ("best", "worst"):
            for k in ("of", "is"):
                if k not in c:
                    raise ExperimentError(f"{w}.{k}: missing (the coordinate and the value that is {kind})")
            if "x" in c and not (isinstance(c["x"], str) and isinstance(c.get("along"), str)):
                raise ExperimentError(f"{w}: comparing at the same x needs x = \"<column>\" and along = "
                                      f"\"<coordinate>\" (the points of each curve)")
        elif kind == "order":
            if "of" not in c or not isinstance(c.get("order"), list) or len(c["order"]) < 2:
                raise ExperimentError(f"{w}: an order needs of = \"<coordinate>\" and order = [two or more values], "
                                      f"or cols = [two or more columns]")
        elif kind == "peak":
            if "along" not in c or not isinstance(c.get("lowest", False), bool):
                raise ExperimentError(f"{w}: a peak needs along = \"<coordinate>\" (and lowest = true for a valley)")
        elif kind == "flows":
            if not isinstance(c.get("flows", {}), dict) or not ("at_least" in c or "at_most" in c) or not (
                    "min" in c or "max" in c):
                raise ExperimentError(f"{w}: a flows claim needs flows = {{ transport = \"tcp\" }}, at_least and/or "
                                      f"at_most (multiples of the fair share) and min and/or max (the fraction of "
                                      f"those flows)")
        elif kind == "trend":
            if "along" not in c or c.get("direction") not in ("increasing", "decreasing"):
                raise ExperimentError(f"{w}: a trend needs along = \"<coordinate>\" and direction = "
                                      f"\"increasing\" or \"decreasing\"")
        _explain(c, w)
        _source_keys(c, w)
        _role_keys(c, w)
        c["loc"] = w
    return refs, claims, tables


def _check_value(r: dict, w: str) -> None:
    from ..base.errors import ExperimentError

    if not isinstance(r.get("value"), (int, float)) or isinstance(r.get("value"), bool):
        raise ExperimentError(f"{w}.value: a published value is a number (bounds and ranges are "
                              f"[[claim]] entries)")
    if r.get("stat", "mean") not in ("mean", "max", "min"):
        raise ExperimentError(f"{w}.stat: one of mean, max, min")
    if r.get("stat", "mean") != "mean" and "at" not in r:
        raise ExperimentError(f"{w}.at: a maximum or minimum needs the paper's point (at = {{...}})")
    tol = r.get("tolerance", TOLERANCE)
    if not isinstance(tol, (int, float)) or isinstance(tol, bool) or tol < 0:
        raise ExperimentError(f"{w}.tolerance: a relative tolerance, a number ≥ 0 (0.25 = ±25 %)")
    if "complement" in r and not isinstance(r["complement"], bool):
        raise ExperimentError(f"{w}.complement: true or false (compare the distance to the metric's nearer bound)")
    if "abs_tolerance" in r:
        a = r["abs_tolerance"]
        if not isinstance(a, (int, float)) or isinstance(a, bool) or a < 0:
            raise ExperimentError(f"{w}.abs_tolerance: an absolute tolerance in the value's unit, a number ≥ 0")
        if r.get("complement"):
            raise ExperimentError(f"{w}: give complement or abs_tolerance, not both")
    _explain(r, w)
    _source_keys(r, w)
    _role_keys(r, w)
    if role_of(r)[0] == "scored":
        _check_band(r, w)


def _source_keys(d: dict, w: str) -> None:
    """``figure`` (the paper's figure or table: a string or a list of them) and ``line`` (the line of
    the paper's text, or [first, last])."""
    from ..base.errors import ExperimentError

    f = d.get("figure")
    if f is not None and not (isinstance(f, str) or (isinstance(f, list) and f and all(isinstance(x, str) for x in f))):
        raise ExperimentError(f"{w}.figure: the paper's figure or table, e.g. \"Table 2\" (or a list of them)")
    ln = d.get("line")
    if ln is not None:
        ok = (isinstance(ln, int) and not isinstance(ln, bool) and ln > 0) or (
            isinstance(ln, list) and len(ln) == 2 and all(isinstance(x, int) and x > 0 for x in ln) and ln[0] <= ln[1])
        if not ok:
            raise ExperimentError(f"{w}.line: a line number of the paper's text, or [first, last]")


#: the roles of a recorded entry: only ``scored`` entries are counted; the others are shown, labelled
ROLES = ("scored", "context", "no information", "other reading")


def _role_keys(d: dict, w: str) -> None:
    """``context`` (a set-up value, not a result), ``no_information`` (a value a plain fair
    allocation matches) and ``statement`` (the statement a claim is part of) are non-empty strings."""
    from ..base.errors import ExperimentError

    for k in ("context", "no_information", "statement", "not_setup", "reading"):
        if k in d and not (isinstance(d[k], str) and d[k].strip()):
            raise ExperimentError(f"{w}.{k}: a non-empty string (" + {
                "context": "which set-up value this is: it is shown, not counted",
                "no_information": "why a plain fair allocation matches it: it is shown, not counted",
                "statement": "a name for the paper's statement; the claims that share it count as one item",
                "not_setup": "why a value equal to a number of its set-up is a result of the paper",
                "reading": "which other reading of the paper this entry is: it is shown beside, not counted"}[k] + ")")
    if sum(k in d for k in ("context", "no_information", "reading")) > 1:
        raise ExperimentError(f"{w}: one of context, no_information and reading, not two")


def role_of(d: dict) -> tuple[str, str]:
    """(role, why) of an entry as its file declares it (readings are added by the experiment)."""
    if "context" in d:
        return "context", d["context"]
    if "no_information" in d:
        return "no information", d["no_information"]
    if "reading" in d:
        return "other reading", d["reading"]
    return "scored", ""


def band(r: dict) -> tuple[float, float, str]:
    """The band of values that match a published value (in its unit), and how it is read:
    relative to the value (``tolerance``), absolute (``abs_tolerance``), or relative to the
    distance from the metric's nearer bound (``complement``: 1 − J for a Jain index near 1)."""
    v = float(r["value"])
    tol = float(r.get("tolerance", TOLERANCE))
    if "abs_tolerance" in r:
        a = float(r["abs_tolerance"])
        return v - a, v + a, f"±{a:g}"
    if r.get("complement"):
        b = nearer_bound(r)
        c = v - b
        lo, hi = sorted((b + c * (1 - tol), b + c * (1 + tol)))
        return lo, hi, f"±{100 * tol:.0f} % of the distance to {b:g}"
    if v == 0:
        return -tol, tol, f"±{tol:g}"
    return v - tol * abs(v), v + tol * abs(v), f"±{100 * tol:.0f} %"


def metric_bounds(r: dict) -> tuple[float, float]:
    """The range the entry's column can take, in the entry's unit."""
    import math

    from ..analysis.stats import bounds, metric

    m = metric({k: r[k] for k in ("col", "unit", "scale") if k in r})
    lo, hi = bounds(m.col)
    s = m.scale
    lo, hi = (lo * s if math.isfinite(lo) else lo), (hi * s if math.isfinite(hi) else hi)
    return (lo, hi) if s >= 0 else (hi, lo)


def nearer_bound(r: dict) -> float:
    """The bound of the entry's metric nearer its published value (the upper one for a Jain index
    of 0.97, the lower one for 0.19): ``complement`` compares the distance to it."""
    import math

    lo, hi = metric_bounds(r)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        from ..base.errors import ExperimentError

        raise ExperimentError(f"{r.get('loc', r.get('label'))}.complement: {r['col']} is not bounded on both sides")
    return hi if r["value"] - lo > hi - r["value"] else lo


def band_problem(r: dict) -> str:
    """Why a published value's band cannot fail at a bound of its metric ('' when it can): a band
    that reaches a bound the value is not at (a Jain index of 0.97 within ±25 % matches anything
    from 0.73 to the ceiling)."""
    lo, hi, how = band(r)
    blo, bhi = metric_bounds(r)
    v = float(r["value"])
    for b in (blo, bhi):
        if lo <= b <= hi and b != v:
            return (f"the band {lo:g} to {hi:g} ({how}) reaches {b:g}, the bound of {r['col']}: compare the "
                    f"distance to the bound (complement = true) or give an abs_tolerance that stays inside")
    return ""


def _check_band(r: dict, w: str) -> None:
    from ..base.errors import ExperimentError

    why = band_problem(r)
    if why:
        raise ExperimentError(f"{w}: {why}")


def figures_of(d: dict) -> list[str]:
    """The paper's figures and tables an entry names (``figure``), as a list."""
    f = d.get("figure")
    return [] if f is None else [f] if isinstance(f, str) else list(f)


def line_text(d: dict) -> str:
    ln = d.get("line")
    if ln is None:
        return ""
    return f"l. {ln}" if isinstance(ln, int) else f"ll. {ln[0]}–{ln[1]}"


def _table_axis(v, w: str) -> list[dict]:
    """A table's rows or columns: a list of tables, or ``{coord, values, labels}``."""
    from ..base.errors import ExperimentError

    if isinstance(v, dict):
        for k in v:
            if k not in ("coord", "values", "labels"):
                raise ExperimentError(f"{w}.{k}: unknown key; the shorthand is {{ coord, values, labels }}")
        coord, values = v.get("coord"), v.get("values")
        if not isinstance(coord, str) or not isinstance(values, list) or not values:
            raise ExperimentError(f"{w}: give coord = \"<coordinate>\" and values = [...]")
        labels = v.get("labels", [f"{x:g}" if isinstance(x, float) else str(x) for x in values])
        if not isinstance(labels, list) or len(labels) != len(values):
            raise ExperimentError(f"{w}.labels: one label per value")
        return [{"label": str(lab), "where": {coord: x}} for lab, x in zip(labels, values)]
    if not isinstance(v, list) or not v or not all(isinstance(x, dict) for x in v):
        raise ExperimentError(f"{w}: a list of {{ label = ..., ... }} tables, or {{ coord, values }}")
    for i, x in enumerate(v):
        for k in x:
            if k not in AXIS_KEYS:
                raise ExperimentError(f"{w}[{i}].{k}: unknown key; known: {', '.join(sorted(AXIS_KEYS))}")
        if not isinstance(x.get("label"), str):
            raise ExperimentError(f"{w}[{i}].label: missing")
        if "where" in x and not isinstance(x["where"], dict):
            raise ExperimentError(f"{w}[{i}].where: expected a table {{ coordinate = value }}")
    return [dict(x) for x in v]


def _parse_table(spec: dict, w: str, index: int) -> tuple[dict, list[dict]]:
    """One ``[[table]]``: the table (for the report's grid) and its numeric cells as published values."""
    from ..base.errors import ExperimentError

    if not isinstance(spec, dict):
        raise ExperimentError(f"{w}: expected a table")
    for k in spec:
        if k not in TABLE_KEYS:
            raise ExperimentError(f"{w}.{k}: unknown key; known: {', '.join(sorted(TABLE_KEYS))}")
    if not isinstance(spec.get("figure"), str):
        raise ExperimentError(f"{w}.figure: missing (the paper's table, e.g. \"Table 2\")")
    if not isinstance(spec.get("source"), str):
        raise ExperimentError(f"{w}.source: missing")
    _source_keys(spec, w)
    if "explain" in spec:
        _explain(spec, w)
    rows, cols = _table_axis(spec.get("rows"), f"{w}.rows"), _table_axis(spec.get("columns"), f"{w}.columns")
    cells = spec.get("cells")
    if not isinstance(cells, list) or len(cells) != len(rows) or not all(
            isinstance(r, list) and len(r) == len(cols) for r in cells):
        raise ExperimentError(f"{w}.cells: {len(rows)} rows of {len(cols)} cells (a number, or a string for a cell "
                              f"the paper leaves empty)")
    rlabels, clabels = [r["label"] for r in rows], [c["label"] for c in cols]
    cex = {}
    for k, e in enumerate(spec.get("cell_explain", [])):
        if not (isinstance(e, list) and len(e) == 3 and all(isinstance(x, str) for x in e)):
            raise ExperimentError(f"{w}.cell_explain[{k}]: [row label, column label, reason]")
        if e[0] not in rlabels or e[1] not in clabels:
            raise ExperimentError(f"{w}.cell_explain[{k}]: no cell {e[0]!r}, {e[1]!r}")
        _explain({"explain": e[2]}, f"{w}.cell_explain[{k}]")
        cex[(e[0], e[1])] = e[2]
    croles = {}
    for k, e in enumerate(spec.get("cell_roles", [])):
        if not (isinstance(e, list) and len(e) == 4 and all(isinstance(x, str) for x in e)
                and e[2] in ("context", "no_information", "not_setup")):
            raise ExperimentError(f"{w}.cell_roles[{k}]: [row label, column label, \"context\" | \"no_information\" | "
                                  f"\"not_setup\", why]")
        if e[0] not in rlabels or e[1] not in clabels:
            raise ExperimentError(f"{w}.cell_roles[{k}]: no cell {e[0]!r}, {e[1]!r}")
        croles.setdefault((e[0], e[1]), {})[e[2]] = e[3]
    for x in rows + cols:
        if "explain" in x:
            _explain(x, f"{w}")
    out = []
    for i, row in enumerate(rows):
        for j, col in enumerate(cols):
            v = cells[i][j]
            cw = f"{w}.cells[{i}][{j}]"
            if isinstance(v, str):
                continue  # a cell the paper leaves empty
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise ExperimentError(f"{cw}: a number, or a string for a cell the paper leaves empty")
            e = {"label": f"{spec['figure']}: {row['label']}, {col['label']}", "value": v, "source": spec["source"],
                 "figure": spec["figure"], "table": index, "cell": (i, j), "loc": cw}
            if "line" in spec:
                e["line"] = spec["line"]
            for k in ("col", "unit", "scale", "stat"):
                given = [d[k] for d in (spec, row, col) if k in d]
                if len(given) > 1:
                    raise ExperimentError(f"{cw}: {k} is given {len(given)} times (table, row, column: give it once)")
                if given:
                    e[k] = given[0]
            if "col" not in e:
                raise ExperimentError(f"{cw}: no col (give it on the table, its row or its column)")
            for k in ("where", "at"):
                merged: dict = {}
                for d in (spec, row, col):
                    for key, val in (d.get(k) or {}).items():
                        if key in merged:
                            raise ExperimentError(f"{cw}: {k}.{key} is given twice (table, row, column)")
                        merged[key] = val
                if merged:
                    e[k] = merged
            for k in ("tolerance", "note", "complement", "abs_tolerance", "context", "no_information", "not_setup"):
                for d in (row, col, spec):
                    if k in d:
                        e[k] = d[k]
                        break
            e.update(croles.get((row["label"], col["label"]), {}))
            reason = cex.get((row["label"], col["label"])) or row.get("explain") or col.get("explain") or spec.get(
                "explain")
            if reason:
                e["explain"] = reason
            _check_value(e, cw)
            out.append(e)
    tab = {"index": index, "figure": spec["figure"], "title": spec.get("title", ""), "source": spec["source"],
           "line": spec.get("line"), "note": spec.get("note", ""), "rows": rlabels, "columns": clabels,
           "cells": cells}
    return tab, out


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
