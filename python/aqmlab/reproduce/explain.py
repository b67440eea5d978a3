"""A miss's reason, written from the run it explains (issue 40: a report that never contradicts
itself).

An ``explain`` in reference.toml is a template. A number measured in the run being reported is
written as a placeholder and filled in from that run, quick or full:

``{{ours}}``
    the entry's own result, as the comparison shows it;
``{{<column>}}``, ``{{<column> @ key=value, key=value}}``, ``{{<column> in <unit>}}``
    our mean over the seeds of a runs column at the entry's point (``where``), or at the point the
    ``@`` part moves it to (``scheme=RED``, ``N=40|400`` for several values: their range is shown);
    ``in`` scales it to a unit (``Mb/s``, ``ms``, ``%``);
``{{seeds}}``
    the seeds per point of the run.

A number that is not from the run being reported stands in a segment that says where it comes from,
from its marker to the end of its parenthesis, or of its sentence (or of the whole reason, when the
marker follows the reason's kind):

``full settings:``
    measured with the experiment's full settings (5 seeds, the papers' durations, every point);
``tried:``
    measured in runs of other settings, which the segment names (a lead the paper leaves open);
``arithmetic:``
    arithmetic on the paper's and the set-up's own numbers (a delay as a queue length, a rate in
    packets per second).

Every other number must be the paper's (a published value or a set-up number of the experiment's
files) or a citation (§4.6, Eq. 3, Fig. 4.9, Table II, ns-2.35). :func:`template_problems` finds the
numbers that are none of these; the test suite requires none in the packaged experiments.
"""

from __future__ import annotations

import math
import re

MARKERS = ("full settings:", "tried:", "arithmetic:")
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")
_NUM = re.compile(r"(?<![\w.\-/])(\d+(?:\.\d+)?)(?![\w.]*\d)")
#: citations and names whose digits are not quantities
_CITE = re.compile(r"(§\s*[\dA-Z][\d.\-–A-Za-z]*|\bEqs?\.?\s*\(?\d+(?:\.\d+)?\)?(?:\s*(?:-|–|and|,)\s*\(?\d+(?:\.\d+)?\)?)*|"
                   r"\bFigs?\.\s*[\d.\-–A-Za-z]+(?:\s*(?:-|–|and|,)\s*[\d.\-–A-Za-z]+)*|"
                   r"\bTables?\s+[IVX\d]+(?:\s*(?:-|–|and|,)\s*[IVX\d]+)*|\bll?\.\s*\d+(?:\s*[-–]\s*\d+)?|"
                   r"\blines?\s+\d+(?:\s*[-–]\s*\d+)?|\bRFC\s*\d+|\bDecision\s+D\d+|\bns-?\d[\d.a-z]*|"
                   r"\b\d(?:\.\d+)+[a-z]\d*\b|\bAppendix\s+[A-Z]|\[\d+\]|\b[A-Za-z]+\(\d+\)|\bM\d+[a-z]?\b|"
                   r"\bD\d+\b|\{[^{}]*\})")


# ----------------------------------------------------------------------------- rendering

def _where(spec: str) -> dict:
    out = {}
    for part in spec.split(","):
        if "=" not in part:
            continue
        k, v = (x.strip() for x in part.split("=", 1))
        vals = [_scalar(x.strip()) for x in v.split("|")]
        out[k] = vals if len(vals) > 1 else vals[0]
    return out


def _scalar(v: str):
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def _value(ctx, entry: dict, field: str) -> str:
    """One placeholder, filled in from ``ctx``'s runs."""
    from ..analysis.stats import interval_for, metric, where_mask

    if field == "seeds":
        runs = ctx.runs
        return str(int(runs["seed"].nunique())) if "seed" in runs.columns and len(runs) else "?"
    col, _, rest = field.partition("@")
    col, unit = col.strip(), ""
    if " in " in col:
        col, unit = (x.strip() for x in col.split(" in ", 1))
    if " in " in rest:
        rest, unit = (x.strip() for x in rest.rsplit(" in ", 1))
    where = dict(entry.get("where") or {})
    where.update(_where(rest))
    m = metric({"col": col, "unit": unit} if unit else {"col": col})
    runs = ctx.runs
    if runs.empty or m.col not in runs.columns:
        return f"(no {m.col} in this run)"
    where = {k: v for k, v in where.items() if k in runs.columns}
    sel = runs[where_mask(runs, where)]
    keys = [c for c in ctx.coords if c in sel.columns]
    means = []
    for _, sub in (sel.groupby([sel[k].astype(str) for k in keys], sort=False) if keys else [((), sel)]):
        iv = interval_for(m.col, sub[m.col])
        if math.isfinite(iv.mean):
            means.append(iv.mean * m.scale)
    if not means:
        return f"(no {m.col} at this point in this run)"
    u = f" {m.unit}" if m.unit else ""
    lo, hi = min(means), max(means)
    return (_num(lo) if lo == hi else f"{_num(lo)}–{_num(hi)}") + u


def _num(v: float) -> str:
    """A measured number as text reads it: whole numbers from 100 up (19 980), one decimal from
    10, two from 1, three significant digits below."""
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{v:,.0f}".replace(",", " ")
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:#.3g}"


def render(ctx, entry: dict, row: dict) -> str:
    """An entry's ``explain`` with its placeholders filled in from this run."""
    text = entry.get("explain", "")

    def fill(mt):
        f = mt.group(1).strip()
        if f == "ours":
            return row.get("ours", "-")
        try:
            return _value(ctx, entry, f)
        except Exception as err:  # a bad placeholder shows in the text, not as a failed report
            return f"({f}: {err})"

    # a unit the column brings and the text repeats ("{{queue}} packets")
    return re.sub(r"\b(packets|kb/s|Mb/s|ms|s|%) \1\b", r"\1", _PLACEHOLDER.sub(fill, text))


def placeholders(text: str) -> list[str]:
    return [m.group(1).strip() for m in _PLACEHOLDER.finditer(text)]


# ----------------------------------------------------------------------------- checking

def _segments_outside_markers(text: str) -> str:
    """``text`` with its marked segments (a marker to the end of its parenthesis or sentence) blanked."""
    out, i = [], 0
    low = text.lower()
    while i < len(text):
        hits = [(low.find(m, i), m) for m in MARKERS if low.find(m, i) >= 0]
        if not hits:
            out.append(text[i:])
            break
        j, m = min(hits)
        out.append(text[i:j])
        if re.fullmatch(r"[a-z ]+:\s*", text[:j]):  # right after the kind: the whole reason
            break
        depth = 0
        k = j + len(m)
        while k < len(text):
            ch = text[k]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth < 0:  # the parenthesis the marker stands in closes
                    break
            elif depth == 0 and text.startswith(". ", k) and k + 2 < len(text) and text[k + 2].isupper():
                break  # the sentence ends
            k += 1
        i = k
    return "".join(out)


def numbers_of(text: str) -> list[str]:
    """The numbers of ``text`` outside placeholders, marked segments and citations."""
    t = _PLACEHOLDER.sub(" ", text)
    t = _segments_outside_markers(t)
    t = _CITE.sub(" ", t)
    return _NUM.findall(t)


def _matches(n: str, static: set) -> bool:
    v = float(n)
    d = len(n.split(".", 1)[1]) if "." in n else 0
    for s in static:
        for f in (1.0, 100.0):  # as printed, or a fraction written as a percentage
            x = s * f
            if x == v or round(x, d) == v:
                return True
    return False


def template_problems(text: str, static: set) -> list[str]:
    """The numbers of an explanation that come from no run, no marked segment, no citation and are
    none of the paper's or the set-up's numbers (:func:`static_numbers`)."""
    return [n for n in numbers_of(text) if not _matches(n, static)]


_ANY_NUMBER = re.compile(r"(?<![\w])(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def _numbers_in(obj, skip=("explain", "note", "notes", "cell_explain")) -> set:
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k not in skip:
                out |= _numbers_in(v, skip)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            out |= _numbers_in(v, skip)
    elif isinstance(obj, bool):
        pass
    elif isinstance(obj, (int, float)):
        out.add(float(obj))
    elif isinstance(obj, str):
        out |= {float(x) for x in _ANY_NUMBER.findall(obj)}
    return out


def static_numbers(exp, exps=()) -> set:
    """The numbers an explanation may state without a marker: the published values, bounds, labels
    and sources of every experiment of the same paper, and the set-up of this one (its experiment
    file but its notes, and its scenario files)."""
    from ..base.compat import tomllib

    nums = set()
    for e in [exp, *[x for x in exps if x.paper == exp.paper and x is not exp]]:
        f = e.path / "reference.toml"
        if f.is_file():
            nums |= _numbers_in(tomllib.loads(f.read_text(encoding="utf-8")))
    nums |= _numbers_in({k: v for k, v in exp.raw.items() if k not in ("notes", "description", "figures", "tables")})
    for f in exp.path.glob("*.toml"):
        if f.name not in ("experiment.toml", "reference.toml"):
            nums |= _numbers_in(tomllib.loads(f.read_text(encoding="utf-8")))
    return nums
