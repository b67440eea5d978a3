"""An ns-2.35 run's results as aqmlab's own tables (docs/metrics.md; what differs: docs/crosscheck.md).

:func:`assemble` turns the trace's counts (:mod:`aqmlab.ns2.trace`) and the script's event lines
into a :class:`~aqmlab.run.result.Result` with the flows table, ``summary.json`` and the time
series of an ``aqmlab run``: the same columns and keys, each computed by the definition of
docs/metrics.md, the summary's sums and indices by :mod:`aqmlab.run.summary` (as for emulated
runs). What ns-2 does not tell is undefined (NaN, JSON null), never guessed: the bytes of state a
discipline keeps, the fast retransmits of the Vegas agent, a RED's applied probability.
"""

from __future__ import annotations

import math

from ..base.version import __version__
from ..run.result import Result
from ..run.summary import FLOW_COLUMNS, QUEUE_REASONS, REASONS, clean, fairness, group_entry, link_entry
from .plan import Plan
from .trace import Counts, percentile

NAN = float("nan")



def read_events(path: str) -> dict:
    """The script's event lines: ``counters[tag][fid] = (nrexmit_, ncwndcuts1_)``, ``samples[(k, link)]
    = {column: value}`` and ``end`` (the time of the last line, or None if the run did not end)."""
    counters: dict = {}
    samples: dict = {}
    windows: dict = {}
    end = None
    with open(path, encoding="ascii", errors="replace") as fh:
        for line in fh:
            p = line.split()
            if not p:
                continue
            if p[0] == "C" and len(p) == 5:
                counters.setdefault(p[1], {})[int(p[2])] = (int(p[3]), int(p[4]))
            elif p[0] == "S" and len(p) == 5:
                samples.setdefault((int(p[1]), int(p[2])), {})[p[3]] = float(p[4])
            elif p[0] == "W" and len(p) == 6:
                windows[(int(p[1]), int(p[2]))] = (float(p[3]), float(p[4]) / 8 * float(p[5]))
            elif p[0] == "E" and len(p) == 2:
                end = float(p[1])
    return {"counters": counters, "samples": samples, "windows": windows, "end": end}


def _delta(ev: dict, fid: int) -> tuple[float, float]:
    """(timeouts, window reductions) of a TCP agent over the window."""
    end = ev["counters"].get("end", {}).get(fid)
    warm = ev["counters"].get("warmup", {}).get(fid, (0, 0))
    if end is None:
        return NAN, NAN
    return float(end[0] - warm[0]), float(end[1] - warm[1])


def flow_rows(plan: Plan, counts: Counts, ev: dict) -> list[dict]:
    """One flows-table row per flow, by the definitions of docs/metrics.md."""
    W = (plan.duration_ns - plan.warmup_ns) / 1e9
    D = plan.duration_ns / 1e9
    warm = plan.warmup_ns / 1e9
    rows = []
    for f in plan.flows:
        c = counts.flows[f.fid]
        g = plan.groups[f.group]
        m = [li for li in f.path if plan.links[li].measured]
        ml = plan.links[m[-1]] if m else None
        thr = c.bneck_tx_bytes * 8 / W if ml else NAN
        start = f.start_ns / 1e9
        stop = f.stop_ns / 1e9 if f.stop_ns is not None else NAN
        active = min(stop if math.isfinite(stop) else D, D) - max(start, warm)
        drops = {r: 0 for r in REASONS}
        for h in c.hop_drops:
            for r, v in h.items():
                drops[r] += v
        if f.transport == "tcp":
            timeouts, cuts = _delta(ev, f.fid)
            # ns-2 halves the window (slowdown, counted in ncwndcuts1_) at every timeout and fast
            # retransmit of Reno, NewReno and Sack1; the Vegas agent also cuts it on its own
            fast = cuts - timeouts if g.variant != "vegas" else NAN
        else:
            timeouts, fast = 0.0, 0.0
        base = max(c.min_seq_sent, 0)
        rows.append({
            "flow_id": f.fid,
            "group": g.name,
            "transport": f.transport,
            "app": f.app,
            "variant": g.variant,
            "recovery": g.recovery,
            "host": f.host,
            "session": -1,
            "priority": g.priority,
            "start_s": start,
            "rtt_prop_s": f.rtt_prop_ns / 1e9,
            "throughput_bps": thr,
            "goodput_bps": c.goodput_bytes * 8 / W,
            "delivered_bps": c.delivered_bytes * 8 / W,
            "goodput_m2b_bps": (c.delivered_bytes - c.delivered_retx_bytes) * 8 / active if active > 0 else NAN,
            "goodput_m2c_bps": ((c.max_seq_received - base + 1) * f.packet_size * 8 / D
                                if c.max_seq_received >= 0 else 0.0),
            "share": thr / ml.rate_bps if ml else NAN,
            "sent_pkts": float(c.sent_pkts),
            "sent_bytes": float(c.sent_bytes),
            "retx_pkts": float(c.retx_pkts),
            "delivered_pkts": float(c.delivered_pkts),
            "delivered_bytes": float(c.delivered_bytes),
            "goodput_bytes": float(c.goodput_bytes),
            "bneck_arrivals": float(c.bneck_arrivals) if ml else NAN,
            "bneck_tx_pkts": float(c.bneck_tx_pkts) if ml else NAN,
            **{f"drops_{r}": float(drops[r]) for r in REASONS},
            "drops_total": float(sum(drops.values())),
            "ack_drops": float(sum(c.ack_hop_drops)),
            "timeouts": timeouts,
            "rto_recovery_s": NAN,  # ns-2 keeps no such time
            "fast_retransmits": fast,
            "ce_marks": 0.0,
            "ecn_reductions": 0.0,
            "rtt_mean_s": math.fsum(c.rtt) / len(c.rtt) if c.rtt else NAN,
            "rtt_min_s": min(c.rtt) if c.rtt else NAN,
            "completion_time_s": (c.done_ns - f.start_ns) / 1e9 if c.done_ns is not None else NAN,
            "stop_s": stop,
            "measured_link": ml.name if ml else "",
            "path": " ".join(plan.links[li].name for li in f.path),
            "hop_drops": " ".join(str(sum(h.values())) for h in c.hop_drops),
            "ack_path": " ".join(plan.links[li].name for li in f.ack_path),
            "ack_hop_drops": " ".join(str(v) for v in c.ack_hop_drops),
        })
    return rows


def _link_summary(plan: Plan, i: int, counts: Counts) -> dict:
    l = plan.links[i]
    lc = counts.links[i]
    W = (plan.duration_ns - plan.warmup_ns) / 1e9
    d = sorted(lc.delays)
    nodes = plan.nodes
    entry = link_entry({
        "aqm": l.queue.aqm, "delay_s": l.delay_ns / 1e9, "limit": l.limit, "queue_unit": l.queue_unit,
        "arrivals": lc.arrivals, "transmitted": lc.transmitted, "transmitted_bytes": lc.tx_bytes,
        "drops": lc.drops, "link_loss_drops": 0,
        "queue_mean_pkts": lc.q_int_pkts / W, "queue_mean_bytes": lc.q_int_bytes / W, "queue_max_pkts": lc.q_max,
        "delay_mean_s": math.fsum(d) / len(d) if d else None,
        # (percentiles of the exact delays, by nearest rank; aqmlab's engine reads them from a histogram of
        # 3 significant digits, and counts a zero wait as 1 ns there)
        "delay_p50_s": percentile([max(x, 1e-9) for x in d], 0.50) if d else None,
        "delay_p95_s": percentile([max(x, 1e-9) for x in d], 0.95) if d else None,
        "delay_p99_s": percentile([max(x, 1e-9) for x in d], 0.99) if d else None,
        "delay_samples": len(d),
    }, float(l.rate_bps), W)
    groups = {}
    for gi, g in sorted(lc.groups.items()):
        name = plan.groups[gi].name
        groups[name] = {"arrivals": g["arrivals"], "transmitted": g["transmitted"], "drops": g["drops"],
                        "throughput_bps": g["tx_bytes"] * 8 / W, "share": g["tx_bytes"] * 8 / W / l.rate_bps}
    a = lc.acks
    entry.update({
        "name": l.name, "index": l.index, "from": nodes[l.src], "to": nodes[l.dst],
        "queue_pkts_start": lc.q_start, "queue_pkts_end": lc.q_end,
        "state_bytes": None,  # (what ns-2's queue keeps is not reported)
        "groups": groups,
        "acks": {"arrivals": a["arrivals"], "transmitted": a["transmitted"], "drops": a["drops"],
                 "throughput_bps": a["tx_bytes"] * 8 / W},
    })
    return entry


def _names(plan: Plan, links) -> list:
    return [plan.links[li].name for li in links if plan.links[li].name != "access"]


def summary(plan: Plan, counts: Counts, rows: list, ns_path: str, overrides=()) -> dict:
    W = (plan.duration_ns - plan.warmup_ns) / 1e9
    net = [l for l in plan.links if l.name != "access"]
    links = {plan.links[i].name: _link_summary(plan, i, counts) for i in plan.measured()}
    groups = []
    for gi, g in enumerate(plan.groups):
        mine = [r for r in rows if r["group"] == g.name]
        fl = [f for f in plan.flows if f.group == gi]
        mls = {r["measured_link"] for r in mine}
        cap = sum(plan.links[li].rate_bps for li in {next((x for x in reversed(f.path) if plan.links[x].measured),
                                                           None) for f in fl} - {None})
        e = group_entry(g.name, g.transport, g.app, g.variant, mine, float(cap) if len(mls) == 1 else 0.0)
        if len(mls) != 1:  # several measured links: the sum of the shares at each
            e["share"] = math.fsum(r["share"] for r in mine if math.isfinite(r["share"])) if mine else None
        paths = {tuple(_names(plan, f.path)) for f in fl}
        acks = {tuple(_names(plan, f.ack_path)) for f in fl}
        e.update({"from": g.frm, "to": g.to,
                  "path": list(next(iter(paths))) if len(paths) == 1 else None,
                  "ack_path": list(next(iter(acks))) if len(acks) == 1 else None,
                  "measured_link": next(iter(mls)) if len(mls) == 1 and next(iter(mls)) else None})
        groups.append(e)
    sent = sum(c.total_sent for c in counts.flows)
    delivered = sum(c.total_delivered for c in counts.flows)
    dropped = sum(c.total_dropped for c in counts.flows)
    out = {
        "scenario": {"name": plan.name, "description": plan.description, "seed": plan.seed,
                     "duration_s": plan.duration_ns / 1e9, "warmup_s": plan.warmup_ns / 1e9, "window_s": W,
                     "flows": len(rows), "aqmlab_version": __version__},
        "topology": {"type": plan.topology["type"], "routing": plan.topology["routing"],
                     "nodes": plan.topology["nodes"],
                     "links": [{"name": l.name, "from": plan.nodes[l.src], "to": plan.nodes[l.dst],
                                "rate_bps": float(l.rate_bps), "delay_s": l.delay_ns / 1e9, "aqm": l.queue.aqm,
                                "monitored": l.measured} for l in net]},
        "links": links,
        "groups": groups,
        "fairness": fairness(rows),
        "engine": {"name": "ns-2.35", "ns": ns_path, "ns2_seed": plan.ns2_seed, "trace_lines": counts.lines,
                   "data_packets_sent": sent, "data_packets_delivered": delivered,
                   "data_packets_dropped": dropped, "data_packets_in_flight": counts.in_flight,
                   "conservation": "ok", "notes": list(plan.notes)},
    }
    if plan.topology["type"] == "dumbbell" and "bottleneck" in links:
        out["bottleneck"] = {**links["bottleneck"], "ce_marks": 0}
    if overrides:
        out["scenario"]["overrides"] = list(overrides)
    return clean(out)


def timeseries(plan: Plan, counts: Counts, ev: dict) -> list:
    """The time series as columns: one row per sample per measured link, in network order."""
    dt = plan.sample_ns / 1e9
    measured = plan.measured()
    state_cols = sorted({c for i in measured for c, _ in plan.links[i].queue.state})
    cols = {c: [] for c in ("time_s", "link", "queue_pkts", "queue_bytes", "utilisation", "drops", *state_cols)}
    n = max((len(counts.links[i].series) for i in measured), default=0)
    for k in range(n):
        for i in measured:
            s = counts.links[i].series
            if k >= len(s):
                continue
            qp, qb, tx, dr = s[k]
            cols["time_s"].append(k * dt)
            cols["link"].append(plan.links[i].name)
            cols["queue_pkts"].append(float(qp))
            cols["queue_bytes"].append(float(qb))
            cols["utilisation"].append(tx * 8 / (plan.links[i].rate_bps * dt) if k else NAN)
            cols["drops"].append(float(dr))
            got = ev["samples"].get((k, i), {})
            for c in state_cols:
                cols[c].append(got.get(c, NAN))
    return list(cols.items())


SERIES_COLUMNS = ["time_s", "flow_id", "group", "transport", "throughput_bps", "goodput_bps", "cwnd",
                  "pacing_rate_bps", "srtt_s", "retx_pkts"]


def flow_series(plan: Plan, counts: Counts, ev: dict, rows: list) -> list:
    """The per-flow series (docs/metrics.md, "flow_series table") as columns: at t = Δf, 2Δf, ...
    every flow that has started, but a finished one that moved nothing in the interval; the
    window and smoothed RTT are ns-2's own (its SRTT in ticks of tcpTick_)."""
    dt = plan.series_ns / 1e9
    D = plan.duration_ns / 1e9
    cols = {c: [] for c in SERIES_COLUMNS}
    k = 1
    while k * dt < D:
        t = k * dt
        for f in plan.flows:
            if f.start_ns / 1e9 > t:
                continue
            c = counts.flows[f.fid]
            r = rows[f.fid]
            tx, good = c.series_tx.get(k - 1, 0), c.series_good.get(k - 1, 0)
            prev = (k - 1) * dt
            done = r["completion_time_s"]
            finished = ((f.start_ns / 1e9 + done < prev) if math.isfinite(done)
                        else (f.transport == "udp" and f.stop_ns is not None and f.stop_ns / 1e9 < prev))
            if finished and not tx and not good:
                continue
            w = ev["windows"].get((k, f.fid))
            retx = max((v for j, v in c.series_retx.items() if j <= k - 1), default=0)
            cols["time_s"].append(t)
            cols["flow_id"].append(f.fid)
            cols["group"].append(r["group"])
            cols["transport"].append(f.transport)
            cols["throughput_bps"].append(tx * 8 / dt if r["measured_link"] else NAN)
            cols["goodput_bps"].append(good * 8 / dt)
            cols["cwnd"].append(w[0] if w else NAN)
            cols["pacing_rate_bps"].append(NAN)
            cols["srtt_s"].append(w[1] if w and w[1] > 0 else NAN)
            cols["retx_pkts"].append(float(retx) if f.transport == "tcp" else NAN)
        k += 1
    return list(cols.items())


def assemble(plan: Plan, counts: Counts, ev: dict, ns_path: str, resolved: str, overrides=(),
             wall: float = NAN) -> Result:
    rows = flow_rows(plan, counts, ev)
    s = summary(plan, counts, rows, ns_path, overrides)
    flows = [(c, [r[c] for r in rows]) for c in FLOW_COLUMNS]
    series = flow_series(plan, counts, ev, rows) if plan.series_ns else None
    res = Result(s, flows, timeseries(plan, counts, ev), wall, flow_series=series)
    res._scenario = resolved
    return res


__all__ = ["assemble", "flow_rows", "summary", "timeseries", "read_events", "FLOW_COLUMNS", "QUEUE_REASONS"]
