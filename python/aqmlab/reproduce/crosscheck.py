"""The third column: each published value and claim measured in ns-2.35 too, where ns-2.35 ran the
run points it rests on, and a miss arbitrated by it (docs/reproduce.md, "The ns-2.35 column").

For an item whose every run point ns-2.35 ran (:func:`ran_all_points`), the item is evaluated on
ns-2.35's runs exactly as on ours (:func:`aqmlab.reproduce.compare.evaluate` / ``evaluate_claim``)
and the result is kept in the row's ``crosscheck`` under the engine's name. ns-2.35 agrees with
aqmlab when its value lies within the item's tolerance of ours (the item's band, centred on our
value), or for a claim when both give the same verdict. Then, for a miss of ours:

* ns-2.35 misses too and agrees with us: the reason becomes :data:`AGREES` with the three numbers
  (the reason written for the miss stays beside it, "Before ns-2.35: ...");
* ns-2.35 matches the paper: the reason becomes :data:`DEFECT` — a candidate defect of aqmlab, listed
  on the scorecard's front page;
* ns-2.35 agrees with neither: the reason stays, and says so with ns-2.35's number.
"""

from __future__ import annotations

import math

import numpy as np

from ..analysis.markdown import md_table
from ..analysis.stats import SpecError, interval_for, where_mask
from .references import band, nearer_bound

NS2 = "ns-2.35"
AGREES = "ns-2.35 agrees with aqmlab"
DEFECT = "ns-2.35 matches the paper"
#: the reason kinds the ns-2.35 column gives (never written in a reference file)
ENGINE_KINDS = (AGREES, DEFECT)
BEFORE = "Before ns-2.35: "


def _points(ctx, where) -> set | None:
    runs = ctx.runs
    if runs.empty:
        return set()
    try:
        sel = runs[where_mask(runs, where)]
    except SpecError:
        return None
    keys = [c for c in ctx.coords if c in runs.columns]
    return {tuple(str(v) for v in row) for row in sel[keys].itertuples(index=False)}


def ran_all_points(ctx, other, entry: dict) -> bool:
    """Whether ``other`` ran every run point of ours the entry selects (its ``where``), and ours ran one."""
    ours, theirs = _points(ctx, entry.get("where")), _points(other, entry.get("where"))
    return bool(ours) and theirs is not None and ours <= theirs


def measure(ctx, other, entry: dict, row: dict, kind: str, evaluate) -> dict | None:
    """The entry evaluated on ``other``'s runs by ``evaluate`` (compare.evaluate or evaluate_claim,
    as for ours), and whether it agrees with ours (``row``); None when ``other`` did not run every
    point the entry rests on."""
    if not ran_all_points(ctx, other, entry):
        return None
    y = evaluate(other, entry)
    out = {"ours": y["ours"], "value": y.get("ours_value"), "ok": y["ok"], "agreement": y["agreement"],
           "with_aqmlab": None}
    if kind == "value":
        a, b = row.get("ours_value"), y.get("ours_value")
        if a is not None and b is not None:
            lo, hi, how = band(dict(entry, value=a))
            out["with_aqmlab"] = bool(lo <= b <= hi)
            out["band"] = how
            out["nearer"] = nearer(entry, a, b)
    elif y["ok"] is not None and row["ok"] is not None:
        out["with_aqmlab"] = y["ok"] == row["ok"]
    return out


def nearer(entry: dict, ours: float, theirs: float) -> tuple | None:
    """Whose number the other engine's ``theirs`` is nearer, ours or the paper's, by ratio: ("aqmlab"
    or "the paper", theirs ÷ ours, theirs ÷ the paper's). A metric compared by its distance to a bound
    (``complement``) is compared by those distances. None when a number is not positive or both are
    as near."""
    p = entry.get("value")
    if not isinstance(p, (int, float)):
        return None
    if entry.get("complement"):
        b = nearer_bound(entry)
        p, ours, theirs = abs(b - p), abs(b - ours), abs(b - theirs)
    if min(p, ours, theirs) <= 0:
        return None
    to_ours, to_paper = theirs / ours, theirs / p
    if abs(math.log(to_ours)) == abs(math.log(to_paper)):
        return None
    return ("aqmlab" if abs(math.log(to_ours)) < abs(math.log(to_paper)) else "the paper", to_ours, to_paper)


def arbitrate(row: dict, engine: str, e: dict, kind: str) -> None:
    """A miss of ours, its reason rewritten by what ``engine`` measured (see the module notes)."""
    if row["ok"] is not False or e["ok"] is None:
        return
    before = row["reason"]
    pub = row.get("published", "")
    if kind == "value":
        three = f"{engine} {e['ours']}, aqmlab {row['ours']}, the paper {pub}"
    else:
        three = f"{engine}: {e['ours']}; aqmlab: {row['ours']}"
    if e["ok"] is True:
        row["reason"] = (f"{DEFECT}: a candidate defect of aqmlab — {three}: {engine} reproduces the paper where "
                         f"aqmlab does not. {BEFORE}{before}")
    elif e["with_aqmlab"]:
        how = (f"within the item's tolerance ({e.get('band', '')}) of ours" if kind == "value"
               else "the same verdict")
        row["reason"] = f"{AGREES}: {three} ({engine} {how}, not the paper's). {BEFORE}{before}"
    elif e["with_aqmlab"] is False:
        near = e.get("nearer")
        who = "ours" if near and near[0] == "aqmlab" else "the paper's"
        side = (f"; nearer {who} by ratio: {engine} ÷ aqmlab {near[1]:.3g}, {engine} ÷ the paper {near[2]:.3g}"
                if near else "")
        row["reason"] = f"{before} ({engine} agrees with neither: {three}{side})"
    row["reason_before"] = before


def refusal_line(msg: str, full: bool = False) -> str:
    """A translator's refusal without the file it names: ``<key path>: <why>`` (``full``: with the
    translator's explanation after it)."""
    head, sep, rest = msg.partition(".toml: ")
    text = (rest if sep and "\n" not in head and " " not in head else msg).splitlines()[0]
    return text if full else ": ".join(text.split(": ")[:2])


def not_run(ctx, entry: dict, refused: dict) -> str:
    """Why an engine did not run the points ``entry`` rests on (its ``where``): the refusals of those
    of our runs it refused (``refused``: a run's ``run`` column -> the refusal), each once; '' if none."""
    runs = ctx.runs
    if runs.empty or "run" not in runs.columns or not refused:
        return ""
    try:
        sel = runs[where_mask(runs, entry.get("where"))]
    except SpecError:
        return ""
    return "; ".join(dict.fromkeys(refused[k] for k in sel["run"] if k in refused))


def add_engines(ctx, others: dict, exp, values: list, claims: list, evaluators: dict, refused=None) -> None:
    """Fill in every row's ``crosscheck`` from the other engines' runs and arbitrate the misses
    (``evaluators``: "value" and "claim" -> the function that evaluates one on a context). A row the
    engine could not measure because it refused its points gets the refusals in ``not_run``
    (``refused``: engine name -> {a run's ``run`` column -> the translator's one-line refusal})."""
    others, refused = others or {}, refused or {}
    for name in dict.fromkeys(list(others) + list(refused)):
        for kind, entries, rows in (("value", exp.references, values), ("claim", exp.claims, claims)):
            for r, x in zip(entries, rows):
                e = measure(ctx, others[name], r, x, kind, evaluators[kind]) if name in others else None
                if e is not None:
                    x["crosscheck"][name] = e
                    arbitrate(x, name, e, kind)
                elif why := not_run(ctx, r, refused.get(name, {})):
                    x.setdefault("not_run", {})[name] = why


def cell(x: dict, engine: str = NS2) -> str:
    """A row's ``engine`` value as a cell, or ''."""
    e = x.get("crosscheck", {}).get(engine)
    if not e:
        why = x.get("not_run", {}).get(engine)
        return f"not run: {why}" if why else ""
    if e["ok"] is None:
        return e["agreement"]
    tail = "; agrees with aqmlab" if e["with_aqmlab"] else "; differs from aqmlab" if e["with_aqmlab"] is False else ""
    return f"{e['ours']} ({'✓' if e['ok'] else '✗'}{tail})"


# ----------------------------------------------------------------------------- the engine check

#: the columns the engine check puts side by side (those both engines' runs have)
CHECK = [("bottleneck.utilisation", "utilisation", 1.0, ""), ("bottleneck.queue_mean_pkts", "mean queue", 1.0, "pkts"),
         ("bottleneck.drop_ratio", "drop ratio", 1.0, ""), ("tcp.throughput_bps", "TCP", 1e-3, "kb/s"),
         ("udp.throughput_bps", "UDP", 1e-3, "kb/s"), ("tcp.timeouts", "TCP timeouts", 1.0, ""),
         ("fairness.jain_throughput_tcp", "Jain (TCP)", 1.0, "")]


def _mean(runs, keys, point, col) -> float:
    sel = runs
    for k, v in zip(keys, point):
        sel = sel[sel[k].astype(str) == v]
    if col not in sel.columns or sel.empty:
        return math.nan
    return float(interval_for(col, sel[col]).mean)


def _num(v: float) -> str:
    if not np.isfinite(v):
        return "–"
    return f"{v:.4g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"


def engine_check(ctx, other, engine: str = NS2) -> tuple[str, list[list]]:
    """The run points ``engine`` ran, each metric of :data:`CHECK` as ``aqmlab / engine (engine ÷ aqmlab)``:
    the TCP and engine side of an experiment, whatever its schemes (Markdown, and the rows as numbers)."""
    keys = [c for c in ctx.coords if c in other.runs.columns]
    pts = sorted({tuple(str(v) for v in row) for row in other.runs[keys].itertuples(index=False)}) if keys else [()]
    cols = [c for c in CHECK if c[0] in ctx.runs.columns and c[0] in other.runs.columns]
    grid, raw = [], []
    for p in pts:
        line = [", ".join(f"{k} = {v}" for k, v in zip(keys, p)) or "the base scenario"]
        for col, _, scale, _ in cols:
            a, b = _mean(ctx.runs, keys, p, col) * scale, _mean(other.runs, keys, p, col) * scale
            ratio = f" ({b / a:.2f})" if np.isfinite(a) and np.isfinite(b) and a != 0 else ""
            line.append(f"{_num(a)} / {_num(b)}{ratio}")
            raw.append({"point": line[0], "metric": col, "aqmlab": a, engine: b})
        grid.append(line)
    head = ["run point"] + [f"{label}" + (f" ({unit})" if unit else "") for _, label, _, unit in cols]
    return md_table(head, grid), raw
