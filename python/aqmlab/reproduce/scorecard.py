"""The report's front page: the papers' published values and claims beside ours, counted per paper,
per figure or table and per experiment, every miss with its reason, and one figure of every
published value against ours.

Input: the evaluated values and claims of each experiment (``Done.score``, compare.py) and the
papers' inventories (papers.py), which say which figures and tables each paper has.
"""

from __future__ import annotations

from pathlib import Path

from . import report as rep
from .compare import tally
from .references import REASON_KINDS, TOLERANCE
from .papers import inventories

#: one marker per paper in the summary figure (the rest cycle)
MARKERS = {"CHOKeW": "o", "TWL": "s", "CHOKeD": "^", "RAQM": "D", "WARD": "v"}


def _frac(t) -> str:
    """``matched / compared`` with what was recorded but not compared."""
    ok, n, nr = t
    if not n and not nr:
        return "none recorded"
    return f"{ok} / {n}" + (f" ({nr} not run)" if nr else "")


def _link(eid: str) -> str:
    return f"[{eid}](#{rep.anchor(eid)})"


def reason_kind(reason: str) -> str:
    return next((k for k in REASON_KINDS if reason.startswith(k)), "unexplained")


def one_line(reason: str, limit: int = 180) -> str:
    """A reason's first clause, short enough for one line of the front page (the whole reason is in
    the experiment's section)."""
    kind = reason_kind(reason)
    rest = reason[len(kind):].lstrip(" :—-")
    for stop in ("; ", ". "):
        if stop in rest:
            rest = rest.split(stop, 1)[0]
    if len(rest) > limit:
        rest = rest[:limit].rsplit(" ", 1)[0] + " …"
    return f"*{kind}*" + (f": {rest}" if rest else "")


def _rows(done) -> list[tuple]:
    """(done, kind, evaluated row) of every value and claim of every experiment that was drawn."""
    out = []
    for d in done:
        if d.score:
            out += [(d, "value", x) for x in d.score["values"]] + [(d, "claim", x) for x in d.score["claims"]]
    return out


def per_paper(done, invs) -> list[list[str]]:
    papers = []
    for d in done:
        if d.exp.paper and d.exp.paper not in papers:
            papers.append(d.exp.paper)
    rows = []
    for p in papers:
        mine = [d for d in done if d.exp.paper == p]
        vals = [x for d in mine if d.score for x in d.score["values"]]
        cls = [x for d in mine if d.score for x in d.score["claims"]]
        inv = invs.get(p)
        if inv is None and not vals and not cls:
            continue  # an experiment of our own: no paper to count
        if inv is not None:
            sims = [i for i in inv.items if i.simulation]
            named = {f for x in vals + cls for f in x["figure"]}
            cover = f"{sum(1 for i in sims if i.id in named)} of {len(sims)} with items recorded"
        else:
            cover = "no inventory"
        rows.append([f"[{p}]", str(len(mine)), _frac(tally(vals)), _frac(tally(cls)), str(len(vals) + len(cls)),
                     cover])
    return rows


def per_figure(done, invs) -> list[list[str]]:
    """One row per figure and table of each paper in the report, in the paper's order."""
    ran = {d.exp.id: d for d in done}
    rows = []
    for p in dict.fromkeys(d.exp.paper for d in done if d.exp.paper):
        inv = invs.get(p)
        if inv is None:
            continue
        for it in inv.items:
            vals = [x for d in done if d.exp.paper == p and d.score for x in d.score["values"] if it.id in x["figure"]]
            cls = [x for d in done if d.exp.paper == p and d.score for x in d.score["claims"] if it.id in x["figure"]]
            exps = ", ".join(_link(e) if e in ran else f"{e} (not in this report)" for e in it.experiments) or "—"
            if not it.simulation:
                note = "not a simulation result: " + it.why
            else:
                note = "; ".join(x for x in (it.values, it.why) if x)
            rows.append([f"[{p}] {it.id}", (it.title or "").replace("|", "\\|"), exps,
                         _frac(tally(vals)) if it.simulation else "—", _frac(tally(cls)) if it.simulation else "—",
                         note.replace("|", "\\|")])
        for eid, why in inv.extra:
            rows.append([f"[{p}] (no figure)", "", _link(eid) if eid in ran else f"{eid} (not in this report)",
                         "—", "—", ("reproduces no figure or table of the paper: " + why).replace("|", "\\|")])
    return rows


def per_experiment(done) -> list[list[str]]:
    rows = []
    for d in done:
        link = _link(d.exp.id)
        if d.skipped:
            rows.append([link, "-", "-", "not run: " + d.skipped.splitlines()[0]])
            continue
        if d.score is None:
            rows.append([link, "none recorded", "none recorded", "—"])
            continue
        v, c = tally(d.score["values"]), tally(d.score["claims"])
        nmiss = sum(1 for x in d.score["values"] + d.score["claims"] if x["ok"] is False)
        rows.append([link, _frac(v), _frac(c), str(nmiss)])
    return rows


def misses(done) -> list[str]:
    out = []
    for d, kind, x in _rows(done):
        if x["ok"] is not False:
            continue
        where = f"[{d.exp.paper}] {', '.join(x['figure'])}" if x["figure"] else f"[{d.exp.paper}]"
        what = f"published {x['published']}, ours {x['ours']}" if kind == "value" else f"ours: {x['ours']}"
        out.append(f"{where} ({_link(d.exp.id)}), {kind} \u201c{x['label']}\u201d: {what} — {one_line(x['reason'])}")
    return out


def totals(done) -> tuple:
    vals = [x for _, k, x in _rows(done) if k == "value"]
    cls = [x for _, k, x in _rows(done) if k == "claim"]
    return tally(vals), tally(cls)


def summary_figure(done, out: Path) -> tuple[list[Path], str]:
    """Every compared published value against ours (log–log), one marker per paper, the default
    tolerance band shaded. Values ≤ 0 cannot be drawn on log axes; they are counted in the caption."""
    pts = [(d.exp.paper or "other", x) for d, k, x in _rows(done) if k == "value" and x["ok"] is not None
           and x["ours_value"] is not None]
    good = [(p, x) for p, x in pts if x["published_value"] > 0 and x["ours_value"] > 0]
    if not good:
        return [], ""
    from ..analysis import plotstyle

    plt = plotstyle.pyplot()
    with plotstyle.rc_context("paper"):
        fig, ax = plt.subplots(figsize=(plotstyle.WIDTHS[1], 3.2))
        lo = min(min(x["published_value"], x["ours_value"]) for _, x in good) / 2
        hi = max(max(x["published_value"], x["ours_value"]) for _, x in good) * 2
        xs = [lo, hi]
        ax.fill_between(xs, [v * (1 - TOLERANCE) for v in xs], [v * (1 + TOLERANCE) for v in xs], color="0.85",
                        lw=0, label=f"±{100 * TOLERANCE:.0f} %")
        ax.plot(xs, xs, color="0.4", lw=0.6)
        for p in dict.fromkeys(p for p, _ in good):
            mine = [x for q, x in good if q == p]
            ax.scatter([x["published_value"] for x in mine], [x["ours_value"] for x in mine],
                       marker=MARKERS.get(p, "x"), s=10, lw=0.5, alpha=0.8,
                       label=f"[{p}] ({sum(1 for x in mine if x['ok'])} of {len(mine)} within)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_xlabel("published value (the paper's unit)")
        ax.set_ylabel("ours (the same unit)")
        ax.grid(True, alpha=0.3)
        plotstyle.polish(fig, [ax], "paper")
        files = plotstyle.save(fig, out / "scorecard", "paper")
        plt.close(fig)
    left = len(pts) - len(good)
    caption = (f"Every compared published value ({len(good)}) against ours, both on log scales; the diagonal is "
               f"agreement and the shaded band the default tolerance (±{100 * TOLERANCE:.0f} %; a few values "
               f"state their own)." + (f" Not drawn: {left} value(s) where the paper's or ours is 0 or negative."
                                      if left else ""))
    return files, caption


def front_page(done, out: Path, quick: bool) -> list:
    """The scorecard's blocks for report.md/html (empty when nothing was recorded)."""
    if not any(d.score for d in done):
        return []
    from ..analysis.markdown import md_table as _md

    roots = {d.exp.path.parent for d in done}
    invs = {}
    for r in roots:
        invs.update(inventories(r))
    (tv, tc) = totals(done)
    blocks = [("h2", "Scorecard")]
    blocks.append(("p", f"**{tv[0]} of {tv[1]} published values matched, {tc[0]} of {tc[1]} claims reproduced**"
                        + (f" ({tv[2] + tc[2]} recorded items not run in this mode)" if tv[2] + tc[2] else "")
                        + f"; {tv[1] + tv[2] + tc[1] + tc[2]} items recorded in all. A published value is matched "
                        f"when our mean over seeds at the paper's own point lies within ±{100 * TOLERANCE:.0f} % of "
                        f"it (unless the entry states another tolerance); a claim is reproduced when the statement, "
                        f"checked as the paper words it (a direction or an order where the paper gives no "
                        f"magnitude), holds in our runs. Every miss names the kind of its reason: "
                        + ", ".join(f"*{k}*" for k in REASON_KINDS) + "."))
    rows = per_paper(done, invs)
    if rows:
        blocks.append(("h3", "By paper"))
        blocks.append(("table", _md(["paper", "experiments", "values matched", "claims reproduced", "items recorded",
                                     "simulation figures and tables"], rows)))
    files, caption = summary_figure(done, out)
    if files:
        png = next(p for p in files if p.suffix == ".png")
        blocks.append(("img", (png.name, "every published value against ours")))
        blocks.append(("p", caption + " Files: " + ", ".join(f"[{p.name}]({p.name})" for p in files)))
    rows = per_figure(done, invs)
    if rows:
        blocks.append(("h3", "By figure and table"))
        blocks.append(("p", "Every figure and table of each paper: the experiments that reproduce it, its values and "
                            "claims, and why there is nothing to record where there is not (the papers' figures "
                            "are not in our copy of their text, so numbers that can only be read off a curve are "
                            "not available)."))
        blocks.append(("table", _md(["figure or table", "title", "experiments", "values matched", "claims reproduced",
                                     "note"], rows)))
    blocks.append(("h3", "By experiment"))
    blocks.append(("table", _md(["experiment", "values matched", "claims reproduced", "misses"],
                                per_experiment(done))))
    ms = misses(done)
    blocks.append(("h3", "Every miss"))
    blocks.append(("ul", ms) if ms else ("p", "None."))
    (out / "scorecard.md").write_text(rep.to_markdown(blocks), encoding="utf-8")
    return blocks
