"""The tables the commands print: a run's summary (``aqmlab run``, ``aqmlab emulate``) and a
sweep's means over seeds (``aqmlab sweep``)."""

from __future__ import annotations

import math

from ..base.units import fmt_delay, fmt_num, fmt_pct, fmt_rate, is_delay, rate_unit


def _dumbbell_lines(s: dict) -> list[str]:
    b = s["bottleneck"]
    lines = [
        f"bottleneck: {b['aqm']}, {fmt_rate(b['capacity_bps'])}, buffer {b['limit']} {b['queue_unit']}  "
        f"utilisation {fmt_pct(b['utilisation'])}  mean queue {b['queue_mean_pkts']:.1f} pkts  "
        f"queueing delay mean {fmt_delay(b['delay_mean_s'])} p99 {fmt_delay(b['delay_p99_s'])}"
    ]
    drops = "  ".join(f"{k} {v}" for k, v in b["drops"].items() if v)
    lines.append(
        f"bottleneck drops: {b['drops_total']} of {b['arrivals']} arrivals ({fmt_pct(b['drop_ratio'])})"
        + (f": {drops}" if drops else "")
    )
    if b.get("ce_marks"):
        lines.append(f"ECN: {b['ce_marks']} packets delivered with a CE mark instead of being dropped")
    if b.get("link_loss_drops"):
        lines.append(f"random link loss before the bottleneck queue: {b['link_loss_drops']} packets")
    return lines


def congested(link: dict) -> bool:
    """A measured link that dropped packets in the window or was busy at least 95 % of it."""
    return bool(link["drops_total"] or link.get("link_loss_drops") or (link["utilisation"] or 0) >= 0.95)


def _links_lines(s: dict) -> tuple[list[str], list[str]]:
    """One line per congested measured link; returns the lines and the congested links' names."""
    links = sorted(s["links"].values(), key=lambda l: l["index"])
    busy = [l for l in links if congested(l)]
    t = s.get("topology", {})
    lines = [f"network: {t.get('type', '?')}, {len(t.get('nodes', []))} nodes, {len(t.get('links', []))} links, "
             f"{len(links)} measured, {len(busy)} congested"]
    if busy:
        head = (f"{'link':<12} {'aqm':<9} {'capacity':>10} {'util':>6} {'queue':>7} {'delay':>9} {'p99':>9} "
                f"{'drops':>7} {'of arrivals':>11}  by reason")
        lines += ["", head, "-" * len(head)]
        for l in busy:
            reasons = "  ".join(f"{k} {v}" for k, v in l["drops"].items() if v)
            if l.get("link_loss_drops"):
                reasons += f"  link_loss {l['link_loss_drops']}"
            lines.append(
                f"{l['name'][:12]:<12} {l['aqm'][:9]:<9} {fmt_rate(l['capacity_bps']):>10} "
                f"{fmt_pct(l['utilisation'] or 0):>6} {l['queue_mean_pkts']:>7.1f} {fmt_delay(l['delay_mean_s']):>9} "
                f"{fmt_delay(l['delay_p99_s']):>9} {l['drops_total']:>7} {fmt_pct(l['drop_ratio']):>11}  "
                f"{reasons.strip()}"
            )
    return lines, [l["name"] for l in busy]


def group_link(s: dict, group: str) -> str | None:
    """The link a group's share is read at in the printed tables: on a dumbbell its measured link;
    on other networks its **bottleneck**, the congested measured link it crosses with the smallest
    capacity (of equals, the one that dropped the largest fraction of its arrivals, then the last
    on its path); the group's measured link when it crosses no congested one; None without either."""
    links = s.get("links", {})
    g = next((x for x in s.get("groups", []) if x["name"] == group), {})
    crossed = [l for l in sorted(links.values(), key=lambda l: l["index"]) if group in l.get("groups", {})]
    busy = [l for l in crossed if congested(l)]
    if not busy or ("bottleneck" in s and set(links) <= {"bottleneck"}):
        return g.get("measured_link")
    order = {name: i for i, name in enumerate(g.get("path") or [])}
    best = min(busy, key=lambda l: (l["capacity_bps"], -(l["drop_ratio"] or 0), -order.get(l["name"], l["index"])))
    return best["name"]


def group_share(s: dict, g: dict):
    """The group's throughput and share (a fraction) at :func:`group_link`, and that link's name;
    the summary's figures when the link has no entry for it."""
    at = group_link(s, g["name"])
    entry = s.get("links", {}).get(at, {}).get("groups", {}).get(g["name"]) if at else None
    if entry is not None:
        return entry["throughput_bps"], entry["share"], at
    return g.get("throughput_bps"), g.get("share"), at


def _jain_cell(v, n: int) -> str:
    """Jain's index as printed: ``-`` without flows, and for an allocation of nothing (undefined)."""
    return fmt_num(v) if v is not None else "-"


def summary_table(res) -> str:
    """The table `aqmlab run` (and `aqmlab emulate`) prints for a :class:`~aqmlab.run.result.Result`."""
    s = res.summary
    sc = s["scenario"]
    lines = [
        f"{sc['name']}  seed {sc['seed']}  {sc['flows']} flows  window {sc['warmup_s']:g}-{sc['duration_s']:g} s"
        + (f"  ({res.wall_seconds:.2f} s wall)" if not math.isnan(res.wall_seconds) else "")
    ]
    if sc.get("overrides"):
        lines.append("overrides: " + "; ".join(sc["overrides"]))
    links = s.get("links", {})
    plain_dumbbell = "bottleneck" in s and set(links) <= {"bottleneck"}
    if plain_dumbbell:
        lines += _dumbbell_lines(s)
        shown = []
    else:
        more, shown = _links_lines(s)
        lines += more
        if len(shown) < 2:  # one congested link: the 'at' column says it
            shown = []
    share_cols = "".join(f" {n[:9]:>9}" for n in shown)
    at_col = f" {'at':<9}" if not plain_dumbbell else ""
    head = (f"{'group':<12} {'type':<13} {'flows':>5} {'throughput':>12} {'share':>7}{at_col}{share_cols} "
            f"{'goodput/flow':>13} {'drops':>7} {'loss':>7} {'timeouts':>8} {'Jain(thr)':>9}")
    if not plain_dumbbell:
        lines += ["", "throughput and share: at the link named in 'at', the group's bottleneck (the congested link it "
                  "crosses with the least capacity; its measured link if it crosses none)"
                  + ("; per link: of that link's capacity" if shown else "")]
    lines += ["", head, "-" * len(head)]
    undefined = []
    for g in s["groups"]:
        kind = f"{g['variant'] if g['transport'] == 'tcp' else g['transport']}/{g['app']}"
        per_link = ""
        for n in shown:
            x = links[n]["groups"].get(g["name"])
            per_link += f" {fmt_pct(x['share']):>9}" if x else f" {'-':>9}"
        thr, share, at = (group_share(s, g) if not plain_dumbbell
                          else (g["throughput_bps"], g.get("share"), None))
        at_cell = f" {(at or '-')[:9]:<9}" if not plain_dumbbell else ""
        if g["flows"] and g.get("jain_throughput") is None:
            undefined.append(g["name"])
        lines.append(
            f"{g['name'][:12]:<12} {kind:<13} {g['flows']:>5} {fmt_rate(thr):>12} "
            f"{fmt_pct(share):>7}{at_cell}{per_link} {fmt_rate(g['goodput_per_flow_bps']):>13} "
            f"{sum(g['drops'].values()):>7} {fmt_pct(g.get('loss')):>7} {g['timeouts'] if g['timeouts'] is not None else '-':>8} "
            f"{_jain_cell(g['jain_throughput'], g['flows']):>9}"
        )
    lines.append("loss: of the group's data packets dropped or delivered in the window, the fraction dropped "
                 "(anywhere on their path)")
    lines += rto_notes(s)
    if undefined:
        lines.append(f"Jain(thr) -: undefined for {', '.join(undefined)}: every flow had throughput 0 (an allocation "
                     "of nothing is neither fair nor unfair)")
    lines += _latency_lines(s)
    f = s["fairness"]
    lines.append("")
    web = [g for g in s["groups"] if g.get("app") == "web"]
    probes = sum(g["flows"] for g in s["groups"] if g.get("app") == "probe")
    n_all = sum(g["flows"] for g in s["groups"] if g.get("app") != "probe")
    n_tcp = sum(g["flows"] for g in s["groups"] if g.get("transport") == "tcp")
    J = lambda v, n: _jain_text(v, n)
    if not web:
        but = f" but the {probes} probe{'s' if probes != 1 else ''}" if probes else ""
        lines.append(
            f"Jain's index: throughput, all flows{but} {J(f['jain_throughput_all'], n_all)}; "
            f"TCP flows {J(f['jain_throughput_tcp'], n_tcp)}; TCP goodput {J(f['jain_goodput_tcp'], n_tcp)}"
        )
    else:  # each web connection is a flow of its own: say so, and give the index over users too
        conns = sum(g["flows"] for g in web)
        lines.append(
            f"Jain's index over flows, each of the {conns} web connections one flow: throughput, all {n_all} flows "
            f"{J(f['jain_throughput_all'], n_all)}; {n_tcp} TCP flows {J(f['jain_throughput_tcp'], n_tcp)}; "
            f"TCP goodput {J(f['jain_goodput_tcp'], n_tcp)}"
        )
        users = _users_jain(res)
        if users is not None:
            lines.append(f"Jain's index over users, each web session one user: throughput, all {users[1]} users "
                         f"{J(users[0], users[1])} (sweeps: users.jain_throughput)")
    return "\n".join(lines)


def rto_notes(s: dict) -> list[str]:
    """A one-line note per group some of whose flows spent more than a tenth of the window
    recovering from retransmission timeouts (flows table ``rto_recovery_s``): a flow stalled by its
    timer answers a question about the queue differently from one that recovers by ACKs."""
    sc = s["scenario"]
    window = sc["duration_s"] - sc["warmup_s"]
    out = []
    for g in s["groups"]:
        n = g.get("rto_recovery_flows")
        if not n:
            continue
        out.append(f"note: {n} flow{'s' if n != 1 else ''} of {g['name']} spent more than a tenth of the window "
                   f"recovering from retransmission timeouts (longest {g['rto_recovery_max_s']:.1f} s of "
                   f"{window:g} s; flows table rto_recovery_s; docs/tcp.md#timeouts-and-what-a-user-sees)")
    return out


def _jain_text(v, n: int) -> str:
    """Jain's index in a sentence: ``-`` without flows, ``undefined (all 0)`` for an allocation of nothing."""
    if v is None or v != v:
        return "undefined (all 0)" if n else "-"
    return fmt_num(v)


def _latency_lines(s: dict) -> list[str]:
    """The groups' delay percentiles (``simulation.latency``, probe groups), as Flent's summary
    gives its ping's: one-way delay and round-trip time in ms, in the window, and the group's loss
    (the fraction of its packets that did not arrive)."""
    rows = [g for g in s["groups"] if g.get("owd_samples")]
    if not rows:
        return []
    head = (f"{'latency':<12} {'one-way p50':>11} {'p90':>9} {'p99':>9} {'p99.9':>9} {'max':>9}   "
            f"{'RTT p50':>9} {'p99':>9} {'max':>9}   {'loss':>7}")
    lines = ["", head, "-" * len(head)]
    for g in rows:
        t = lambda k: fmt_delay(g.get(k))
        rtt = (f"{t('rtt_p50_s'):>9} {t('rtt_p99_s'):>9} {t('rtt_max_s'):>9}" if g.get("rtt_samples")
               else f"{'-':>9} {'-':>9} {'-':>9}")
        lines.append(f"{g['name'][:12]:<12} {t('owd_p50_s'):>11} {t('owd_p90_s'):>9} {t('owd_p99_s'):>9} "
                     f"{t('owd_p999_s'):>9} {t('owd_max_s'):>9}   {rtt}   {fmt_pct(g.get('loss')):>7}")
    return lines


def _users_jain(res):
    """Jain's index of the users' throughputs (a web session's connections summed into one user, every
    other flow a user of its own), and the number of users; None without the flows' columns."""
    from ..base.metrics import jain

    cols = dict(res.columns("flows") or [])
    thr, sess, app = cols.get("throughput_bps"), cols.get("session"), cols.get("app")
    if thr is None:
        return None
    users: dict = {}
    for i, v in enumerate(thr):
        if app is not None and app[i] == "probe":
            continue
        sid = sess[i] if sess is not None else -1
        key = ("s", int(sid)) if sid is not None and sid == sid and sid >= 0 else ("f", i)
        users[key] = users.get(key, 0.0) + (0.0 if v is None or v != v else float(v))
    return jain(users.values()), len(users)


# ----------------------------------------------------------------------------- a sweep's table


def _ratio(col: str) -> bool:
    """A column that is a fraction of 1 (a share, a utilisation, a loss, a ratio): printed in %."""
    leaf = col.rsplit(".", 1)[-1]
    return "jain" not in col and (leaf in ("share", "utilisation", "loss", "drop_ratio", "normalised_goodput",
                                           "web_drop_share") or leaf.endswith(("_share", "_ratio", "_fraction")))




def _scale(col: str, mean: float) -> tuple[float, str, int]:
    """How column ``col`` is printed around ``mean``: the factor from its stored unit, the unit shown
    and the decimals (every number of one cell in the same unit, so ``±`` carries the mean's)."""
    a = abs(mean) if mean == mean else 0.0
    if col.endswith("_bps"):
        unit, k = rate_unit(mean)
        return 1 / k, f" {unit}", 2
    if col.endswith("_pct"):
        return 1.0, "%", 1
    if _ratio(col):
        p = a * 100
        return 100.0, "%", 1 if p >= 1 or p == 0 else min(4, 1 - math.floor(math.log10(p)))
    if is_delay(col):
        return 1e3, " ms", 1 if a * 1e3 >= 1 or a == 0 else 3
    if col.endswith("_s"):
        return 1.0, " s", 2
    if "jain" in col:
        return 1.0, "", 3
    return 1.0, "", 1 if a >= 100 else 2 if a >= 10 else 3


def fmt_cell(col: str, iv) -> str:
    """A mean over seeds with its interval, each number with its unit: ``41.1% ± 0.3%`` (a 95 %
    t-interval), ``99.8% [99.1%, 100.0%]`` (one clipped to the metric's range), ``41.1% (40.9%–41.3%)``
    (two seeds: their range), ``41.1%`` (one seed); ``-`` when undefined."""
    if iv.mean != iv.mean:
        return "-"
    k, unit, d = _scale(col, iv.mean)
    f = lambda v: f"{v * k + 0.0:.{d}f}{unit}"
    if iv.method == "t95" and (not iv.clipped or f(iv.lo) == f(iv.mean) == f(iv.hi)):
        return f"{f(iv.mean)} ± {f(max(iv.hi - iv.mean, iv.mean - iv.lo))}"  # (clipped below what is printed)
    if iv.method == "t95":
        return f"{f(iv.mean)} [{f(iv.lo)}, {f(iv.hi)}]"
    if iv.method == "range":
        return f"{f(iv.mean)} ({f(iv.lo)}–{f(iv.hi)})"
    return f(iv.mean)


def default_columns(runs, summary: dict | None = None) -> list[tuple[str, str]]:
    """What ``aqmlab sweep`` prints by default, as (column, header), from the groups of one run's
    ``summary`` (docs/reproduce.md, "What a sweep prints"): the bottleneck's utilisation and mean
    queueing delay (a dumbbell); one TCP group's aggregate goodput, or with several each TCP group's
    share (who wins, BBR or CUBIC); the UDP flows' share; a probe group's one-way delay (median and
    99th percentile) and loss; Jain's index over all flows. On other networks a group's share is at its
    bottleneck (:func:`group_link`). Without a summary: the same from the columns alone."""
    cols: list[tuple[str, str]] = []
    groups = (summary or {}).get("groups") or []
    dumbbell = summary is None or ("bottleneck" in summary and set(summary.get("links", {})) <= {"bottleneck"})
    if dumbbell:
        cols += [("bottleneck.utilisation", "util"), ("bottleneck.delay_mean_s", "delay")]

    def share(g):
        at = group_link(summary, g["name"]) if summary is not None and not dumbbell else None
        return (f"links.{at}.groups.{g['name']}.share" if at else f"group.{g['name']}.share",
                f"{g['name']} share" + (f" at {at}" if at else ""))

    tcp = [g for g in groups if g.get("transport") == "tcp"]
    udp = [g for g in groups if g.get("transport") == "udp" and g.get("app") != "probe"]
    probes = [g for g in groups if g.get("app") == "probe"]
    if not groups or (len(tcp) == 1 and dumbbell):
        cols.append(("tcp.goodput_bps", "TCP goodput"))
    else:
        cols += [share(g) for g in tcp]
    if not groups or (udp and dumbbell):
        cols.append(("udp.share", "UDP share"))
    else:
        cols += [share(g) for g in udp]
    for g in probes:
        n = g["name"]
        cols += [(f"group.{n}.owd_p50_s", f"{n} delay p50"), (f"group.{n}.owd_p99_s", f"{n} p99"),
                 (f"group.{n}.loss", f"{n} loss")]
    cols.append(("fairness.jain_throughput_all", "Jain"))
    return [(c, h) for c, h in dict.fromkeys(cols) if c in runs.columns and runs[c].notna().any()]


def show_columns(show: str, runs, summary: dict | None = None) -> list[tuple[str, str]]:
    """``--show COL,...``: columns of the runs table (``group.*.share``: a pattern; ``+COL``: added to
    the default columns), as (column, header). An unknown column is an error that names the closest."""
    import fnmatch

    from ..base.errors import UserError, did_you_mean

    items = [i.strip() for i in show.split(",") if i.strip()]
    out = default_columns(runs, summary) if any(i.startswith("+") for i in items) else []
    metrics = [c for c in runs.columns if c not in ("seed", "run", "scenario", "aqm")]
    for item in items:
        name = item.lstrip("+")
        if any(ch in name for ch in "*?["):
            hits = [c for c in metrics if fnmatch.fnmatchcase(c, name)]
            if not hits:
                raise UserError(f"--show {name}: matches no column of the runs table (`aqmlab list metrics` lists "
                                "them)")
            out += [(c, c) for c in hits]
        elif name in runs.columns:
            out.append((name, name))
        else:
            near = did_you_mean(name, metrics) or (
                "; columns with that text: " + ", ".join(c for c in metrics if name.lower() in c.lower())[:200]
                if any(name.lower() in c.lower() for c in metrics) else "")
            raise UserError(f"--show {name}: not a column of the runs table{near} (`aqmlab list metrics` lists "
                            "them, and each definition)")
    return list(dict.fromkeys(out))


def check_show(show: str | None, coords=()) -> None:
    """``--show`` before any run: each plain name must be a column a runs table can have (the
    catalogue of :mod:`aqmlab.run.columns`, or a varied key); patterns are checked once the runs are made."""
    from ..base.errors import UserError
    from ..run.columns import is_runs_column, nearest

    for item in [i.strip().lstrip("+") for i in (show or "").split(",") if i.strip()]:
        if any(ch in item for ch in "*?[") or item in coords or is_runs_column(item):
            continue
        near = nearest(item)
        raise UserError(f"--show {item}: not a column of a runs table"
                        + (f"; did you mean {' or '.join(near)}?" if near else "")
                        + " (`aqmlab list metrics` lists them, and each definition)")


class SweepTable:
    """The table `aqmlab sweep` prints, and writes as ``table.csv``, ``table.md`` and ``table.tex``:
    the mean over seeds of some metrics per point, with the interval over seeds; the columns of
    ``show`` (``--show``; :func:`show_columns`) or the defaults (:func:`default_columns`), each cell
    as :func:`fmt_cell` prints it."""

    def __init__(self, runs, coords, show=None, summary: dict | None = None):
        from ..analysis.stats import interval_for

        self.coords = list(coords)
        self.cols = show_columns(show, runs, summary) if show else default_columns(runs, summary)
        keys = runs[coords].astype(str).agg("\x1f".join, axis=1) if coords else None
        groups = [(tuple(g[c].iloc[0] for c in coords), g) for _, g in runs.groupby(keys, sort=False)] if coords \
            else [((), runs)]
        self.heads = self.coords + ["seeds"] + [h for _, h in self.cols]
        self.rows, self.data, methods, clipped = [], [], set(), False
        for idx, g in groups:
            cells = [str(v) for v in idx] + [str(len(g))]
            record = dict(zip(self.coords, idx), seeds=len(g))
            for c, _ in self.cols:
                iv = interval_for(c, g[c])
                methods.add(iv.method)
                cells.append(fmt_cell(c, iv))
                clipped |= cells[-1].endswith("]")
                record.update({c: iv.mean, f"{c} low": iv.lo, f"{c} high": iv.hi, f"{c} n": iv.n,
                               f"{c} interval": iv.method})
            self.rows.append(cells)
            self.data.append(record)
        self.legend = []
        if "t95" in methods:
            self.legend.append("± : half-width of the 95 % Student-t confidence interval over seeds"
                               + ("; [a, b]: the interval clipped to the metric's range" if clipped else ""))
        if "range" in methods:
            self.legend.append("(a–b): the lowest and highest of two seeds (three or more give a confidence interval)")
        if any(c != h for c, h in self.cols):
            self.legend.append("columns: " + ", ".join(f"{h} = {c}" for c, h in self.cols if c != h)
                               + " (`aqmlab list metrics NAME` defines each; --show COL,... chooses them)")

    def text(self) -> str:
        width = [max(len(h), *(len(r[j]) for r in self.rows)) for j, h in enumerate(self.heads)]
        line = lambda cells: "  ".join(c.rjust(w) if j >= len(self.coords) else c.ljust(w)
                                       for j, (c, w) in enumerate(zip(cells, width)))
        return "\n".join([line(self.heads), "-" * len(line(self.heads))] + [line(r) for r in self.rows] + self.legend)

    def save(self, out, caption: str = "") -> list:
        """``table.csv`` (means and intervals in the columns' stored units), ``table.md`` and
        ``table.tex`` (LaTeX, booktabs) in the folder ``out``."""
        import csv
        from pathlib import Path

        from ..analysis.latex import tex_table
        from ..analysis.markdown import md_table
        from ..base.io import atomic_write_bytes

        d = Path(out)
        files = [d / "table.csv", d / "table.md", d / "table.tex"]
        import io

        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(self.data[0]) if self.data else self.heads, lineterminator="\n")
        w.writeheader()
        w.writerows(self.data)
        notes = " ".join(l for l in self.legend if not l.startswith("columns:"))
        atomic_write_bytes(files[0], buf.getvalue().encode("utf-8"))
        atomic_write_bytes(files[1], (md_table(self.heads, self.rows) + "\n\n" + "\n\n".join(self.legend)
                                      + "\n").encode("utf-8"))
        atomic_write_bytes(files[2], tex_table(self.heads, self.rows, f"{caption} {notes}".strip(),
                                               "sweep").encode("utf-8"))
        return files


def sweep_table(runs, coords, show=None, summary: dict | None = None) -> str:
    """The text of :class:`SweepTable`."""
    return SweepTable(runs, coords, show, summary).text()
