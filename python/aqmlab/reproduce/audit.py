"""The scorecard's counting rules, checked on the experiment files (docs/reproduce.md, "How items
are counted").

A counted published value must be a number the paper prints as a result, printed once, that a
plain fair allocation would not match and whose band can fail. The file format makes the reviewer
say so (references.py: ``context``, ``no_information``, ``complement``, readings in
experiment.toml); this module checks what the files say against the set-up itself:

* **set-up value**: a counted value equal (within 0.5 %) to a number of its own point's set-up —
  a rate of the scenario or of an override, a fair share computed from it (the bottleneck rate over
  the flows, times a group's flows), or, for a queue, a threshold, buffer or target of the AQM or a
  coordinate — is a set-up value restated, unless the entry says why it is a result
  (``not_setup``);
* **one number counted twice**: two counted values of one paper with the same figure, line and
  value (a table's distinct cells aside), or a table cell restated as a single value;
* **no information**: a counted per-flow, group or share value whose band contains the plain fair
  allocation at its point (the bottleneck rate over the flows, times the flows it covers);
* **a band that cannot fail** at a bound of its metric is refused when the file is read
  (references.band_problem).

``audit(exps)`` returns one line per problem; the test suite requires none on the packaged
experiments and shows each check failing on a deliberately bad file.
"""

from __future__ import annotations

import json
import re

import pandas as pd

from .references import band, band_problem

#: a number in a scenario or override, with its unit if it has one
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(Gb/s|Mb/s|kb/s|b/s|bps|ms|us|s\b)?")
_RATE = {"Gb/s": 1e9, "Mb/s": 1e6, "kb/s": 1e3, "b/s": 1.0, "bps": 1.0}
#: AQM and queue settings whose numbers are set-up values for a queue length
_QUEUE_KEYS = re.compile(r"\b(limit|min_th|max_th|t_min|t_max|q0|q_ref|b0|l_th|l_minus|l_plus|minth|maxth|"
                         r"min_th_in|max_th_in|target_pkts|buffer)\s*=\s*\"?(\d+(?:\.\d+)?)")
#: a share-of-capacity or per-flow rate column and the population it covers
_PER_FLOW = re.compile(r"(^|\.)(throughput|goodput|goodput_m2b|goodput_m2c)_per_flow_bps$|^fair_share_bps$|"
                       r"(^|\.)throughput_(max|min)_per_flow_bps$|(^|\.)goodput_min_bps$")
_TOTAL = re.compile(r"^(tcp|udp|all|group\.[\w-]+)\.(throughput|goodput|goodput_m2b|goodput_m2c)_bps$")
_SHARE = re.compile(r"^(tcp|udp|all|group\.[\w-]+|bottleneck\.groups\.[\w-]+)\.share$")


def _kind(col: str) -> str:
    if col.endswith("_bps"):
        return "rate"
    if col.endswith("_pkts") or col.startswith("aqm.avg"):
        return "queue"
    if col.endswith(".share"):
        return "share"
    return "other"


class _Points:
    """The points of an experiment's full grid: coordinates, and per point the scenario's rates,
    its queue settings and the fair allocation of each flow population (from the engine's
    validation of the point, so overrides and templates are applied as the run applies them)."""

    def __init__(self, exp):
        from .. import _core

        self.exp = exp
        pts = exp.sweep(False).points()
        self.coords = pd.DataFrame([p.coords for p in pts])
        self.info = []
        for p in pts:
            text = p.source.text + "\n" + "\n".join(p.overrides)
            info = json.loads(_core.validate(p.source.text, p.source.name, p.overrides))
            rates, queue = set(), set()
            for num, unit in _NUMBER.findall(text):
                if unit in _RATE:
                    rates.add(float(num) * _RATE[unit])
            for _, num in _QUEUE_KEYS.findall(text):
                queue.add(float(num))
            cap = float(info.get("bottleneck_rate_bps") or 0.0)
            flows = int(info.get("flows") or 0)
            counts = {"all": flows, "tcp": 0, "udp": 0}
            for g in info.get("groups", []):
                counts[g["transport"]] = counts.get(g["transport"], 0) + int(g["count"])
                counts["group." + g["name"]] = int(g["count"])
                counts["bottleneck.groups." + g["name"]] = int(g["count"])
            fair = cap / flows if flows else None
            if fair:
                rates.add(fair)
                rates |= {fair * n for n in counts.values() if n}
            self.info.append({"rates": rates, "queue": queue, "cap": cap, "flows": flows, "counts": counts,
                              "fair": fair, "coords": p.coords})

    def selected(self, where: dict | None) -> list[dict]:
        from ..analysis.stats import where_mask

        if self.coords.empty:
            return list(self.info)
        m = where_mask(self.coords, {k: v for k, v in (where or {}).items() if k in self.coords.columns})
        return [self.info[i] for i in range(len(self.info)) if bool(m.iloc[i])]


def _in_col_units(r: dict) -> tuple[float, float, float]:
    """The published value and its band, in the column's stored unit."""
    from ..analysis.stats import metric

    m = metric({k: r[k] for k in ("col", "unit", "scale") if k in r})
    lo, hi, _ = band(r)
    s = m.scale or 1.0
    lo, hi = sorted((lo / s, hi / s))
    return float(r["value"]) / s, lo, hi


def fair_allocation(col: str, pt: dict) -> float | None:
    """What a plain fair allocation gives column ``col`` at a point (None where it says nothing):
    the bottleneck rate over the flows per flow, times the flows of a population for its total, and
    their fraction of the flows for its share."""
    fair = pt["fair"]
    if not fair:
        return None
    if _PER_FLOW.search(col):
        return fair
    m = _TOTAL.match(col)
    if m and pt["counts"].get(m.group(1)):
        return fair * pt["counts"][m.group(1)]
    m = _SHARE.match(col)
    if m and pt["counts"].get(m.group(1)):
        return pt["counts"][m.group(1)] / pt["flows"]
    return None


def setup_match(r: dict, pts: list[dict]) -> str:
    """The set-up number a counted value equals ('' when none)."""
    v, _, _ = _in_col_units(r)
    if v == 0:
        return ""
    kind = _kind(r["col"])
    for pt in pts:
        numbers = {"rate": pt["rates"], "queue": pt["queue"] | {float(x) for x in pt["coords"].values()
                                                                 if isinstance(x, (int, float))},
                   "share": set(), "other": set()}[kind]
        if kind in ("share", "other"):
            numbers = {float(x) for x in pt["coords"].values() if isinstance(x, (int, float)) and not
                       isinstance(x, bool)}
        for n in numbers:
            if n and abs(v - n) <= 0.005 * abs(n):
                return f"{n:g}" + (" b/s" if kind == "rate" else "")
    return ""


def near_fair(r: dict, pts: list[dict]) -> str:
    """The plain fair allocation inside a counted value's band ('' when none is)."""
    _, lo, hi = _in_col_units(r)
    for pt in pts:
        f = fair_allocation(r["col"], pt)
        if f is not None and lo <= f <= hi:
            return f"{f:.4g}" + (" b/s" if r["col"].endswith("_bps") else "")
    return ""


def audit(exps) -> list[str]:
    """Every breach of the counting rules in the experiments' reference files (module doc)."""
    problems = []
    seen: dict = {}
    for e in exps:
        vals = [r for r in e.references if r.get("role", "scored") == "scored"]
        marked = [r for r in e.references if "no_information" in r]
        if not vals and not marked:
            continue
        grid = _Points(e)
        for r in marked:
            if not near_fair(r, grid.selected(r.get("where"))):
                problems.append(f"{e.id}: {r['loc']} ({r['label']}): marked no_information, but no plain fair "
                                f"allocation lies in its band: it can tell the paper's allocation from a fair one "
                                f"and is counted")
        for r in vals:
            where = f"{e.id}: {r['loc']} ({r['label']})"
            why = band_problem(r)
            if why:
                problems.append(f"{where}: {why}")
            pts = grid.selected(r.get("where"))
            hit = setup_match(r, pts)
            if hit and "not_setup" not in r:
                problems.append(f"{where}: equals a number of its set-up ({hit}): a set-up value restated is "
                                f"context, not a result (say context = \"...\", or not_setup = \"why it is a "
                                f"result\")")
            fair = near_fair(r, pts)
            if fair:
                problems.append(f"{where}: a plain fair allocation ({fair}) lies in its band: it carries no "
                                f"information about the scheme (say no_information = \"...\" and count the "
                                f"claim the paper draws from it)")
            if r.get("table") is not None:
                key = (e.paper, "cell", r["label"])
            else:
                key = (e.paper, tuple(sorted(x for x in ([r["figure"]] if isinstance(r.get("figure"), str) else
                                                         r.get("figure", [])))), str(r.get("line")),
                       float(r["value"]), r.get("unit", ""))
            if key in seen and not (r.get("statement") and seen[key][1] == (e.id, r.get("statement"))):
                problems.append(f"{where}: the same printed number as {seen[key][0]}: one number is one item "
                                f"(keep one; or, where the paper prints it once for several groups, give them one "
                                f"statement = \"...\", which counts once)")
            elif key not in seen:
                seen[key] = (where, (e.id, r.get("statement")))
        # a single value that restates one of the experiment's own table cells
        cells = {(round(float(r["value"]), 9), r["figure"]) for r in vals if r.get("table") is not None}
        for r in vals:
            figs = [r["figure"]] if isinstance(r.get("figure"), str) else r.get("figure", [])
            if r.get("table") is None and any((round(float(r["value"]), 9), f) in cells for f in figs):
                problems.append(f"{e.id}: {r['loc']} ({r['label']}): restates a cell of its table (the same "
                                f"figure and number): one number is one item")
    return problems
