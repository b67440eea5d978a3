"""The tables the commands print: a run's summary (``aqmlab run``, ``aqmlab emulate``) and a
sweep's means over seeds (``aqmlab sweep``)."""

from __future__ import annotations

import math

from ..base.units import fmt_num, fmt_rate, fmt_time, rate_unit


def _dumbbell_lines(s: dict) -> list[str]:
    b = s["bottleneck"]
    lines = [
        f"bottleneck: {b['aqm']}, {fmt_rate(b['capacity_bps'])}, buffer {b['limit']} {b['queue_unit']}  "
        f"utilisation {b['utilisation'] * 100:.1f}%  mean queue {b['queue_mean_pkts']:.1f} pkts  "
        f"queueing delay mean {fmt_time(b['delay_mean_s'])} p99 {fmt_time(b['delay_p99_s'])}"
    ]
    drops = "  ".join(f"{k} {v}" for k, v in b["drops"].items() if v)
    lines.append(
        f"bottleneck drops: {b['drops_total']} of {b['arrivals']} arrivals ({b['drop_ratio'] * 100:.1f}%)"
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
                f"{(l['utilisation'] or 0) * 100:>5.1f}% {l['queue_mean_pkts']:>7.1f} {fmt_time(l['delay_mean_s']):>9} "
                f"{fmt_time(l['delay_p99_s']):>9} {l['drops_total']:>7} {l['drop_ratio'] * 100:>10.1f}%  {reasons.strip()}"
            )
    return lines, [l["name"] for l in busy]


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
    share_cols = "".join(f" {n[:9]:>9}" for n in shown)
    head = (f"{'group':<12} {'type':<13} {'flows':>5} {'throughput':>12} {'share':>7}{share_cols} {'goodput/flow':>13} "
            f"{'drops':>7} {'timeouts':>8} {'Jain(thr)':>9}")
    if shown:
        lines += ["", "share: of the capacity of the group's measured link; per link: of that link's capacity"]
    lines += ["", head, "-" * len(head)]
    for g in s["groups"]:
        kind = f"{g['variant'] if g['transport'] == 'tcp' else g['transport']}/{g['app']}"
        per_link = ""
        for n in shown:
            x = links[n]["groups"].get(g["name"])
            per_link += f" {x['share'] * 100:>8.1f}%" if x else f" {'-':>9}"
        share = f"{g['share'] * 100:>6.1f}%" if g.get("share") is not None else f"{'-':>7}"
        lines.append(
            f"{g['name'][:12]:<12} {kind:<13} {g['flows']:>5} {fmt_rate(g['throughput_bps']):>12} "
            f"{share}{per_link} {fmt_rate(g['goodput_per_flow_bps']):>13} "
            f"{sum(g['drops'].values()):>7} {g['timeouts']:>8} {fmt_num(g['jain_throughput']):>9}"
        )
    lines += _latency_lines(s)
    f = s["fairness"]
    lines.append("")
    web = [g for g in s["groups"] if g.get("app") == "web"]
    probes = sum(g["flows"] for g in s["groups"] if g.get("app") == "probe")
    if not web:
        lines.append(
            f"Jain's index: throughput, all flows{f' but the {probes} probes' if probes else ''} "
            f"{fmt_num(f['jain_throughput_all'])}; "
            f"TCP flows {fmt_num(f['jain_throughput_tcp'])}; TCP goodput {fmt_num(f['jain_goodput_tcp'])}"
        )
    else:  # each web connection is a flow of its own: say so, and give the index over users too
        n_all = sum(g["flows"] for g in s["groups"] if g.get("app") != "probe")
        n_tcp = sum(g["flows"] for g in s["groups"] if g.get("transport") == "tcp")
        conns = sum(g["flows"] for g in web)
        lines.append(
            f"Jain's index over flows, each of the {conns} web connections one flow: throughput, all {n_all} flows "
            f"{fmt_num(f['jain_throughput_all'])}; {n_tcp} TCP flows {fmt_num(f['jain_throughput_tcp'])}; "
            f"TCP goodput {fmt_num(f['jain_goodput_tcp'])}"
        )
        users = _users_jain(res)
        if users is not None:
            lines.append(f"Jain's index over users, each web session one user: throughput, all {users[1]} users "
                         f"{fmt_num(users[0])} (sweeps: users.jain_throughput)")
    return "\n".join(lines)


def _latency_lines(s: dict) -> list[str]:
    """The groups' delay percentiles (``simulation.latency``, probe groups), as Flent's summary
    gives its ping's: one-way delay and round-trip time, in the window."""
    rows = [g for g in s["groups"] if g.get("owd_samples")]
    if not rows:
        return []
    head = (f"{'latency':<12} {'one-way p50':>11} {'p90':>9} {'p99':>9} {'p99.9':>9} {'max':>9}   "
            f"{'RTT p50':>9} {'p99':>9} {'max':>9}")
    lines = ["", head, "-" * len(head)]
    for g in rows:
        t = lambda k: fmt_time(g.get(k))
        rtt = (f"{t('rtt_p50_s'):>9} {t('rtt_p99_s'):>9} {t('rtt_max_s'):>9}" if g.get("rtt_samples")
               else f"{'-':>9} {'-':>9} {'-':>9}")
        lines.append(f"{g['name'][:12]:<12} {t('owd_p50_s'):>11} {t('owd_p90_s'):>9} {t('owd_p99_s'):>9} "
                     f"{t('owd_p999_s'):>9} {t('owd_max_s'):>9}   {rtt}")
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


SWEEP_SHOW = [("bottleneck.utilisation", "util", "{:.3f}"), ("bottleneck.queue_mean_pkts", "queue", "{:.1f}"),
              ("bottleneck.delay_mean_s", "delay s", "{:.3f}"), ("tcp.goodput_bps", "TCP goodput", None),
              ("udp.share", "UDP share", "{:.3f}"), ("fairness.jain_throughput_all", "Jain", "{:.3f}")]


def sweep_table(runs, coords) -> str:
    """Mean over seeds of a few metrics per point, with the interval over seeds, as printed by
    `aqmlab sweep`: ``mean ± h`` (95 % Student-t interval, three seeds or more, clipped to the
    metric's range) or ``mean (min–max)`` with two seeds."""
    from ..analysis.stats import interval_for

    cols = [(c, h, f) for c, h, f in SWEEP_SHOW if c in runs.columns and runs[c].notna().any()]
    keys = runs[coords].astype(str).agg("\x1f".join, axis=1) if coords else None
    groups = [(tuple(g[c].iloc[0] for c in coords), g) for _, g in runs.groupby(keys, sort=False)] if coords \
        else [((), runs)]
    heads = list(coords) + ["seeds"] + [h for _, h, _ in cols]
    rows, methods = [], set()
    for idx, g in groups:
        cells = [str(v) for v in idx] + [str(len(g))]
        for c, _, f in cols:
            iv = interval_for(c, g[c])
            methods.add(iv.method)
            if iv.mean != iv.mean:
                cells.append("-")
                continue
            fmt = (lambda v: f.format(v)) if f is not None else None
            if fmt is None:  # a rate: the spread in the mean's unit
                unit, k = rate_unit(iv.mean)
                m, half = f"{iv.mean / k:.2f} {unit}", f"{max(iv.mean - iv.lo, iv.hi - iv.mean) / k:.2f}"
                lo, hi = f"{iv.lo / k:.2f}", f"{iv.hi / k:.2f}"
            else:
                m, half, lo, hi = fmt(iv.mean), fmt(max(iv.mean - iv.lo, iv.hi - iv.mean)), fmt(iv.lo), fmt(iv.hi)
            cells.append(f"{m} ± {half}" if iv.method == "t95" else f"{m} ({lo}–{hi})" if iv.method == "range" else m)
        rows.append(cells)
    width = [max(len(h), *(len(r[j]) for r in rows)) for j, h in enumerate(heads)]
    line = lambda cells: "  ".join(c.rjust(w) if j >= len(coords) else c.ljust(w) for j, (c, w) in enumerate(zip(cells, width)))
    out = [line(heads), "-" * len(line(heads))] + [line(r) for r in rows]
    if "t95" in methods:
        out.append("± : half-width of the 95 % Student-t confidence interval over seeds (clipped to the metric's range)")
    if "range" in methods:
        out.append("(a–b): the lowest and highest of two seeds (three or more give a confidence interval)")
    return "\n".join(out)
