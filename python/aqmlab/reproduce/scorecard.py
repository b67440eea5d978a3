"""The report's front page: the papers' published values and claims beside ours, counted per paper,
per figure or table and per experiment, every miss with its reason, and one figure of every
published value against ours.

Input: the evaluated values and claims of each experiment (``Done.score``, compare.py) and the
papers' inventories (papers.py), which say which figures and tables each paper has.
"""

from __future__ import annotations

from pathlib import Path

from . import report as rep
from .compare import item_ok, items, tally, uncounted
from .crosscheck import DEFECT, ENGINE_KINDS, NS2
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
    return next((k for k in ENGINE_KINDS + REASON_KINDS if reason.startswith(k)), "unexplained")


def one_line(reason: str, limit: int = 180) -> str:
    """A reason's first clause, short enough for one line of the front page (the whole reason is in
    the experiment's section)."""
    kind = reason_kind(reason)
    rest = reason[len(kind):].lstrip(" :—-")
    if not rest:
        return f"*{kind}*: **no reason written**"
    for stop in ("; ", ". "):
        if stop in rest:
            rest = rest.split(stop, 1)[0]
    if len(rest) > limit:
        rest = rest[:limit].rsplit(" ", 1)[0] + " …"
    return f"*{kind}*" + (f": {rest}" if rest else "")


#: how the roles of uncounted rows read in the totals
ROLE_TEXT = {"context": "set-up values (context)", "other reading": "values and claims of another reading of the "
             "paper", "no information": "values a plain fair allocation matches (no information)"}
#: how items are counted (the front page says it; docs/reproduce.md says it at length)
COUNTING = ("An item is a number the paper prints as a result, or one of its statements: a set-up value it "
            "restates (a target, a threshold, a fair share computed from the set-up) is context; where the "
            "experiment runs several readings of the paper, only its main reading is counted; a value that a "
            "plain fair allocation would match within its tolerance carries no information about the scheme "
            "and is not counted (the claim the paper draws from it is); a number printed once is one item, and "
            "the claims that check parts of one statement are one item, missed if any part misses.")


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
        un = sum(uncounted(vals + cls).values())
        rows.append([f"[{p}]", str(len(mine)), _frac(tally(vals)), _frac(tally(cls)),
                     str(len(items(vals)) + len(items(cls))) + (f" (+{un} not counted)" if un else ""), cover])
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
        nmiss = sum(1 for rows in (d.score["values"], d.score["claims"]) for it in items(rows)
                    if item_ok(it) is False)
        rows.append([link, _frac(v), _frac(c), str(nmiss)])
    return rows


def missed_items(done) -> list[tuple]:
    """(done, kind, the item's failing rows) of every counted item that missed, in report order;
    their position in this list (from 1) is the miss's number, which the summary figure prints
    beside each value outside its band."""
    out = []
    for d in done:
        if not d.score:
            continue
        for kind, rows in (("value", d.score["values"]), ("claim", d.score["claims"])):
            for it in items(rows):
                if item_ok(it) is False:
                    out.append((d, kind, [x for x in it if x["ok"] is False]))
    return out


def misses(done) -> list[str]:
    out = []
    for n, (d, kind, xs) in enumerate(missed_items(done), 1):
        figs = list(dict.fromkeys(f for x in xs for f in x["figure"]))
        where = f"[{d.exp.paper}] {', '.join(figs)}" if figs else f"[{d.exp.paper}]"
        parts = []
        for x in xs:
            what = f"published {x['published']}, ours {x['ours']}" if kind == "value" else f"ours: {x['ours']}"
            what += _engine_text(x, kind)
            parts.append(f"\u201c{x['label']}\u201d: {what} — {one_line(x['reason'])}")
        stmt = xs[0]["item"].split(": ", 1)[1] if "statement" in xs[0]["item"] else ""
        out.append(f"**#{n}** {where} ({_link(d.exp.id)}), {kind}" + (f" ({stmt}, {len(xs)} parts missed)" if stmt
                                                                      else "") + " " + "; ".join(parts))
    return out


def _engine_text(x: dict, kind: str, engine: str = NS2) -> str:
    """ns-2.35's result of a row for the list of misses, or why it did not run the row's points."""
    e = x.get("crosscheck", {}).get(engine)
    if e and e["ok"] is not None:
        return f", {engine} {e['ours']}" if kind == "value" else f"; {engine}: {e['ours']}"
    why = x.get("not_run", {}).get(engine)
    return f" ({engine} not run: {why})" if why else ""


def _kind_of(x: dict) -> str:
    k = reason_kind(x["reason"])
    return "no reason written" if not x["reason"][len(k):].strip(" :—-") else k


def by_reason(done) -> list[list[str]]:
    """Missed items by the kind of their reason (an item's first failing part decides); a kind the
    ns-2.35 column gave says which kinds its misses had before."""
    count: dict = {}
    was: dict = {}
    for _, kind, xs in missed_items(done):
        k = _kind_of(xs[0])
        count.setdefault(k, [0, 0])[0 if kind == "value" else 1] += 1
        if k in ENGINE_KINDS:
            b = reason_kind(xs[0].get("reason_before", ""))
            was.setdefault(k, {}).setdefault(b, 0)
            was[k][b] += 1
    order = list(ENGINE_KINDS) + list(REASON_KINDS) + [k for k in count if k not in REASON_KINDS + ENGINE_KINDS]
    return [[f"*{k}*" + (" (before ns-2.35: " + ", ".join(f"{n} {b}" for b, n in was[k].items()) + ")"
                         if k in was else ""), str(count[k][0]), str(count[k][1]), str(sum(count[k]))]
            for k in order if k in count]


def engine_summary(done, engine: str = NS2) -> tuple[list[str], list[str]]:
    """What ``engine``'s column found over the counted items: a few sentences, and the candidate
    defects (misses of ours where it matches the paper), each a line."""
    its = [(d, kind, it) for d in done if d.score
           for kind, rows in (("value", d.score["values"]), ("claim", d.score["claims"])) for it in items(rows)]
    measured = [(d, kind, it) for d, kind, it in its if any(engine in x.get("crosscheck", {}) for x in it)]
    unrun: dict = {}  # a refusal -> the counted items it kept from ns-2.35
    for d, kind, it in its:
        if not any(engine in x.get("crosscheck", {}) for x in it):
            for why in dict.fromkeys(w for x in it for w in x.get("not_run", {}).get(engine, "").split("; ") if w):
                unrun[why] = unrun.get(why, 0) + 1
    if not measured and not unrun:
        return [], []
    compared = [(d, kind, it) for d, kind, it in measured
                if any(x.get("crosscheck", {}).get(engine, {}).get("ok") is not None for x in it)]
    ours_ok = [t for t in compared if item_ok(t[2]) is True]
    theirs_miss = [t for t in ours_ok if any(x.get("crosscheck", {}).get(engine, {}).get("ok") is False for x in t[2])]
    missed = [t for t in compared if item_ok(t[2]) is False]
    kinds: dict = {}
    for _, _, it in missed:
        k = _kind_of(next(x for x in it if x["ok"] is False))
        kinds[k] = kinds.get(k, 0) + 1
    defects = []
    for d, kind, it in missed:
        for x in it:
            if x["ok"] is False and x["reason"].startswith(DEFECT):
                e = x["crosscheck"][engine]
                defects.append(f"{_link(d.exp.id)}, {kind} “{x['label']}”: the paper "
                               f"{x.get('published', '')}, {engine} {e['ours']}, aqmlab {x['ours']}")
    text = [f"{len(compared)} counted items rest only on run points {engine} ran ({len(measured) - len(compared)} "
            f"more were not run at their point in this mode): aqmlab matches the paper in {len(ours_ok)} of them "
            f"({len(theirs_miss)} of which {engine} misses), and misses it in {len(missed)}"
            + (": " + ", ".join(f"{n} *{k}*" for k, n in kinds.items()) if kinds else "") + "."]
    neither = [x for _, _, it in missed for x in it if x["ok"] is False
               and x.get("crosscheck", {}).get(engine, {}).get("with_aqmlab") is False
               and x["crosscheck"][engine]["ok"] is False]
    if neither:
        near = [x["crosscheck"][engine].get("nearer") for x in neither]
        text.append(f"Where {engine} misses the paper and lies outside the tolerance of ours too ({len(neither)} "
                    f"missed values), its number is nearer ours by ratio in "
                    f"{sum(1 for n in near if n and n[0] == 'aqmlab')} and nearer the paper's in "
                    f"{sum(1 for n in near if n and n[0] == 'the paper')}.")
    if unrun:
        text.append("Items resting on points ns-2.35 cannot express, by the translator's refusal (an item can have "
                    "several): " + "; ".join(f"{n} — {why}" for why, n in sorted(unrun.items(), key=lambda t: -t[1]))
                    + ".")
    return text, defects


def totals(done) -> tuple:
    vals = [x for _, k, x in _rows(done) if k == "value"]
    cls = [x for _, k, x in _rows(done) if k == "claim"]
    return tally(vals), tally(cls)


def summary_figure(done, out: Path) -> tuple[list[Path], str]:
    """Every counted published value compared against ours (log–log), one marker per paper, the
    default tolerance band shaded; each value outside its band is labelled with its miss's number
    (#1, #2, … in the list of misses). Values ≤ 0 cannot be drawn on log axes; they are counted in
    the caption."""
    number = {id(x): n for n, (_, _, xs) in enumerate(missed_items(done), 1) for x in xs}
    pts = [(d.exp.paper or "other", x) for d, k, x in _rows(done) if k == "value" and x["ok"] is not None
           and x["ours_value"] is not None and x.get("role", "scored") == "scored"]
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
        for _, x in good:
            if id(x) in number:
                ax.annotate(f"#{number[id(x)]}", (x["published_value"], x["ours_value"]), fontsize=3.2,
                            xytext=(1.5, 1.5), textcoords="offset points", color="0.25")
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
    caption = (f"Every counted published value compared ({len(good)}) against ours, both on log scales; the "
               f"diagonal is agreement and the shaded band the default tolerance (±{100 * TOLERANCE:.0f} %; some "
               f"values state their own, and bounded metrics near their bound compare the distance to it); each "
               f"value that missed carries its number in the list of misses below (#1, #2, …)."
               + (f" Not drawn: {left} value(s) where the paper's or ours is 0 or negative." if left else ""))
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
    un = uncounted([x for _, _, x in _rows(done)])
    blocks = [("h2", "Scorecard")]
    blocks.append(("p", f"**{tv[0]} of {tv[1]} published values matched, {tc[0]} of {tc[1]} claims reproduced**"
                        + (f" ({tv[2] + tc[2]} counted items not run in this mode)" if tv[2] + tc[2] else "")
                        + f"; {tv[1] + tv[2] + tc[1] + tc[2]} items counted in all."
                        + (" Shown beside them but not counted: " + ", ".join(
                            f"{v} {ROLE_TEXT.get(k, k)}" for k, v in un.items()) + "." if un else "")))
    blocks.append(("p", COUNTING + f" A published value is matched when our mean over seeds at the paper's own "
                        f"point lies within ±{100 * TOLERANCE:.0f} % of it (unless the entry states another "
                        f"tolerance); a claim is reproduced when the statement, checked as the paper words it (a "
                        f"direction or an order where the paper gives no magnitude), holds in our runs. Every miss "
                        f"names the kind of its reason: " + ", ".join(f"*{k}*" for k in REASON_KINDS)
                        + (", and where ns-2.35 ran its points " + " or ".join(f"*{k}*" for k in ENGINE_KINDS)
                           if any(x.get("crosscheck") for _, _, x in _rows(done)) else "") + "."))
    rows = per_paper(done, invs)
    if rows:
        blocks.append(("h3", "By paper"))
        blocks.append(("table", _md(["paper", "experiments", "values matched", "claims reproduced", "items counted",
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
    from .audit import audit

    probs = audit([d.exp for d in done if d.exp is not None and not d.skipped and d.score])
    if probs:
        blocks.append(("h3", "Counting problems"))
        blocks.append(("p", "Values the counting rules above would not count as they are recorded (a set-up "
                            "value, a number counted twice, a value a fair allocation matches); they are counted "
                            "all the same until their files say otherwise:"))
        blocks.append(("ul", probs))
    ms = misses(done)
    reasons = by_reason(done)
    if reasons:
        blocks.append(("h3", "Misses by reason"))
        blocks.append(("table", _md(["kind of reason", "values", "claims", "items"], reasons)))
    text, defects = engine_summary(done)
    if text:
        blocks.append(("h3", "The ns-2.35 column"))
        blocks.append(("p", " ".join(text) + " An item's run points are run in ns-2.35 when it can express their "
                            "scheme, TCP and traffic (docs/crosscheck.md); the item is then evaluated on ns-2.35's runs "
                            "as on ours. A miss of ours where ns-2.35 lies within the item's tolerance of ours (a "
                            "claim: gives the same verdict) is *" + ENGINE_KINDS[0] + "*; one where ns-2.35 matches "
                            "the paper is *" + DEFECT + "*, a candidate defect of aqmlab."))
        if defects:
            blocks.append(("p", f"**Candidate defects ({len(defects)}): ns-2.35 matches the paper where aqmlab does "
                                "not. Each is to be found and fixed, or named as a deliberate difference:**"))
            blocks.append(("ul", defects))
        else:
            blocks.append(("p", "**No candidate defect:** ns-2.35 matches the paper at none of aqmlab's misses."))
    blocks.append(("h3", "Every miss"))
    blocks.append(("ul", ms) if ms else ("p", "None."))
    (out / "scorecard.md").write_text(rep.to_markdown(blocks), encoding="utf-8")
    return blocks
