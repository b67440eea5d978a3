"""An emulation run's results in the simulator's format (docs/metrics.md, docs/emulation.md).

The forwarder counts packets on the wire (arrivals, drops by reason, transmissions, deliveries, the
bottleneck's queue and delays); the receivers count what the applications got (goodput); the TCP
senders add what only the kernel knows (RTT, retransmission timeouts, completion of sized
transfers). Flows are matched across the three by their 5-tuple.
"""

from __future__ import annotations

import math
import platform

import numpy as np
import pandas as pd

from ..run.result import Result
from ..run.summary import FLOW_COLUMNS, REASONS, clean, fairness, group_entry, link_entry
from .netns import receiver_addr, sender_addr

PROTO = {6: "tcp", 17: "udp", 1: "icmp"}
#: the flows table's columns of emulation alone, after the simulator's (docs/emulation.md)
EMULATION_COLUMNS = ["src", "dst", "app_sent_pkts"]
NAN = float("nan")


def assemble(spec, report: dict, receiver: dict, senders: list[dict], overrides=(), cmd=None, tun_drops=0,
             wall=NAN) -> Result:
    plan = spec.plan
    dur = plan["duration_ns"] / 1e9
    warm = plan["warmup_ns"] / 1e9
    w = dur - warm
    f = report["flows"]
    nf = len(f["proto"])
    fw_index = {(f["proto"][i], f["s_addr"][i], f["s_port"][i]): i for i in range(nf)}
    rx_tcp = {(r["peer"][0], r["peer"][1]): r for r in receiver["tcp"]}
    rx_udp = {(r["peer"][0], r["peer"][1]): r for r in receiver["udp"]}
    cap = report["bottleneck"]["capacity_bps"]

    rows = []
    used = set()
    for g, sr in zip(spec.groups, senders):
        agent = {r["flow_id"]: r for r in sr["tcp"] + sr["udp"]}
        for p in g.pairs:
            h = p["host"]
            a = agent.get(p["flow_id"], {})
            proto = 6 if g.transport == "tcp" else 17
            key = (proto, sender_addr(h), a.get("sport"))
            i = fw_index.get(key)
            if i is not None:
                used.add(i)
            rx = (rx_tcp if proto == 6 else rx_udp).get((sender_addr(h), a.get("sport")))
            rows.append(_row(g, p, a, i, f, rx, cap, w, dur, warm))
    # traffic the scenario did not describe: a user command's, or anything else the forwarder saw
    extra_group = "cmd" if cmd else "other"
    for i in range(nf):
        if i in used:
            continue
        proto = f["proto"][i]
        rx = (rx_tcp if proto == 6 else rx_udp if proto == 17 else {}).get((f["s_addr"][i], f["s_port"][i]))
        rows.append(_row(None, None, {}, i, f, rx, cap, w, dur, warm, extra_group))
    # the simulator's columns in its order (what the emulator cannot measure is NaN), then its own
    flows = pd.DataFrame(rows).reindex(columns=[*FLOW_COLUMNS[1:], *EMULATION_COLUMNS, "_fw"])
    flows.insert(0, "flow_id", np.arange(len(flows), dtype=np.int64))

    # groups: the scenario's, then the extra traffic
    groups = []
    names = [(g.name, g) for g in spec.groups]
    if (flows["group"] == extra_group).any():
        names.append((extra_group, None))
    for name, g in names:
        m = flows[flows["group"] == name]
        groups.append(_group_summary(name, g, m, cap, w))
    records = flows.to_dict("records")
    b = report["bottleneck"]
    bottleneck = {**link_entry(b, cap, w), "ce_marks": int(flows["ce_marks"].sum())}
    c = report["counts"]
    t = report["timing"]
    summary = {
        "scenario": {
            "name": plan["name"],
            "description": plan["description"],
            "seed": plan["seed"],
            "duration_s": dur,
            "warmup_s": warm,
            "window_s": w,
            "flows": len(flows),
            "aqmlab_version": plan["aqmlab_version"],
        },
        "bottleneck": bottleneck,
        "groups": groups,
        "fairness": fairness(records),
        "engine": {
            "events": t["wakeups"],
            "packets_created": c["packets_read"],
            "packets_delivered": c["packets_written"],
            "packets_dropped": c["packets_dropped"] + c["packets_unroutable"],
            "packets_in_flight": c["packets_in_flight"],
            "data_packets_delivered": int(sum(f["total_delivered_pkts"])),
            "conservation": "ok",
        },
        "emulation": {
            "kernel": platform.release(),
            "groups": [{"name": g.name, "transport": g.transport,
                        "scenario_variant": g.plan["tcp"]["variant"] if g.plan["tcp"] else None,
                        "linux_cc": g.cc, "sack": g.sack if g.transport == "tcp" else None, "mtu": g.mtu,
                        }
                       for g in spec.groups],
            "forwarder": {**t, "packets_unroutable": c["packets_unroutable"]},
            "tun_queue_drops": tun_drops,
            "agent_errors": sorted({r["error"] for s in senders for r in s["tcp"] + s["udp"] if r.get("error")}),
            "wall_s": wall,
        },
    }
    if overrides:
        summary["scenario"]["overrides"] = list(overrides)
    if cmd:
        summary["emulation"]["cmd"] = cmd
    ts = pd.DataFrame({name: values for name, values in report["timeseries"]})
    snaps = None
    if "snapshots" in report:
        s = report["snapshots"]
        fl = np.asarray(s["flow"], dtype=np.int64)
        # forwarder flow index -> flow_id of the flows table
        fid = np.full(max(nf, 1), -1, dtype=np.int64)
        for row_id, fi in zip(flows["flow_id"], flows["_fw"]):
            if fi >= 0:
                fid[fi] = row_id
        ids = fid[fl] if len(fl) else fl
        snaps = pd.DataFrame({"time_s": s["time_s"], "position_from_tail": s["position_from_tail"],
                              "queue_len": s["queue_len"], "flow_id": ids,
                              "group": flows["group"].to_numpy()[ids] if len(ids) else [],
                              "transport": flows["transport"].to_numpy()[ids] if len(ids) else []})
        summary["queue_snapshots"] = {"count": s["count"], "interval_s": plan["sample_interval_ns"] / 1e9}
    fseries = None
    iv = plan.get("flow_series_interval_ns")
    if iv:
        fseries = _flow_series(flows, senders, iv / 1e9)
    flows = flows.drop(columns=["_fw"])
    return Result(clean(summary), flows, ts, wall, snaps, fseries)


#: bytes of IP, TCP and timestamp-option headers on every segment of the emulated senders
HEADERS = 52
SERIES_COLUMNS = ["time_s", "flow_id", "group", "transport", "throughput_bps", "goodput_bps", "cwnd",
                  "pacing_rate_bps", "srtt_s", "retx_pkts", "delivery_rate_bps"]


def _flow_series(flows: pd.DataFrame, senders: list[dict], iv: float) -> pd.DataFrame:
    """The per-flow series from the senders' TCP_INFO samples (agent.SERIES_FIELDS), in the
    simulator's columns plus Linux's delivery rate (docs/emulation.md, Results)."""
    group = dict(zip(flows["flow_id"], flows["group"]))
    cols = {c: [] for c in SERIES_COLUMNS}
    for sr in senders:
        for r in sr["tcp"]:
            rows = r.get("series") or []
            prev_t, prev_acked, prev_wire = None, 0, 0
            for t_ns, cwnd, pacing, rtt_us, retx, dlv, acked, sent, segs in rows:
                t = t_ns / 1e9
                wire = (sent or 0) + HEADERS * (segs or 0)
                dt = iv if prev_t is None else t - prev_t
                cols["time_s"].append(t)
                cols["flow_id"].append(r["flow_id"])
                cols["group"].append(group.get(r["flow_id"], ""))
                cols["transport"].append("tcp")
                cols["throughput_bps"].append((wire - prev_wire) * 8 / dt if dt > 0 else NAN)
                cols["goodput_bps"].append(((acked or 0) - prev_acked) * 8 / dt if dt > 0 else NAN)
                cols["cwnd"].append(float(cwnd) if cwnd is not None else NAN)
                # ~0 is Linux's "no pacing rate set" (sk_max_pacing_rate's default)
                cols["pacing_rate_bps"].append(pacing * 8.0 if pacing is not None and pacing < (1 << 63) else NAN)
                cols["srtt_s"].append(rtt_us / 1e6 if rtt_us else NAN)
                cols["retx_pkts"].append(float(retx) if retx is not None else NAN)
                cols["delivery_rate_bps"].append(dlv * 8.0 if dlv is not None else NAN)
                prev_t, prev_acked, prev_wire = t, acked or 0, wire
    df = pd.DataFrame(cols)
    return df.sort_values(["time_s", "flow_id"], kind="stable").reset_index(drop=True)


def _row(g, p, a, i, f, rx, cap, w, dur, warm, extra_group=None) -> dict:
    """One row of the flows table (columns as docs/metrics.md; emulation's differences in
    docs/emulation.md)."""
    def fw(name, default=0.0):
        return float(f[name][i]) if i is not None else default

    if g is not None:
        transport, app = g.transport, g.app
        group, prio = g.name, g.plan["priority"]
        variant = g.cc if transport == "tcp" else "none"
        recovery = ("sack" if g.sack else "newreno") if transport == "tcp" else "none"
        host = p["host"]
        rtt_prop = p["rtt_prop_ns"] / 1e9
        stop = g.plan["stop_ns"] / 1e9 if g.plan["stop_ns"] is not None else NAN
        start = a.get("start_s")
        start = p["start_ns"] / 1e9 if start is None else start
        src = f"{sender_addr(host)}:{a.get('sport') or 0}"
        dst = f"{receiver_addr(host)}:9"
    else:
        proto = f["proto"][i]
        transport, app = PROTO.get(proto, str(proto)), extra_group
        group, prio, variant, recovery, host = extra_group, 1, "unknown" if proto == 6 else "none", "unknown", -1
        rtt_prop, stop, start = NAN, NAN, f["first_seen_s"][i]
        src, dst = f"{f['s_addr'][i]}:{f['s_port'][i]}", f"{f['r_addr'][i]}:{f['r_port'][i]}"
    # goodput: what the receiving application got (payload bytes); without a receiver report (a
    # user command's traffic), the forwarder's count of new payload bytes delivered
    if rx is not None:
        good = float(rx["bytes_window"])
    else:
        good = fw("progress_bytes") if i is not None else 0.0
    thr = fw("bneck_tx_bytes") * 8 / w
    delivered = fw("delivered_bytes")
    active = min(stop if math.isfinite(stop) else dur, dur) - max(start if start is not None else dur, warm)
    m2b = (delivered - fw("delivered_retx_bytes")) * 8 / active if active > 0 else NAN
    if transport == "udp" and rx is not None:
        size = g.plan["udp"]["packet_size"] - 28 if g is not None else 0
        m2c = (rx["max_seq"] + 1) * size * 8 / dur if size else fw("total_progress_bytes") * 8 / dur
    else:
        m2c = fw("total_progress_bytes") * 8 / dur
    drops = {r: fw(f"drops_{r}") for r in REASONS}
    ie, iw = a.get("info_end"), a.get("info_warmup")

    def kernel(name, window=True):
        if not ie or name not in ie:
            return NAN
        base = (iw or {}).get(name, 0) if window and warm > 0 else 0
        return float(ie[name] - base)

    rtt_min = ie.get("min_rtt_us") / 1e6 if ie and ie.get("min_rtt_us") else NAN
    completion = a.get("completion_s")
    row = {
        "group": group,
        "transport": transport,
        "app": app,
        "variant": variant,
        "recovery": recovery,
        "host": host,
        "session": -1,
        "priority": prio,
        "start_s": start,
        "rtt_prop_s": rtt_prop,
        "throughput_bps": thr,
        "goodput_bps": good * 8 / w,
        "delivered_bps": delivered * 8 / w,
        "goodput_m2b_bps": m2b,
        "goodput_m2c_bps": m2c,
        "share": thr / cap,
        "sent_pkts": fw("sent_pkts"),
        "sent_bytes": fw("sent_bytes"),
        "retx_pkts": fw("retx_pkts"),
        "delivered_pkts": fw("delivered_pkts"),
        "delivered_bytes": delivered,
        "goodput_bytes": good,
        "bneck_arrivals": fw("bneck_arrivals"),
        "bneck_tx_pkts": fw("bneck_tx_pkts"),
        **{f"drops_{r}": drops[r] for r in REASONS},
        "drops_total": sum(drops.values()),
        "ack_drops": fw("ack_drops"),
        "timeouts": kernel("total_rto") if transport == "tcp" else 0.0,
        # ms spent in the loss state after timeouts (tcpi_total_rto_time, Linux >= 6.7)
        "rto_recovery_s": kernel("total_rto_time") / 1e3 if transport == "tcp" else 0.0,
        "fast_retransmits": NAN,
        "ce_marks": fw("ce_marks"),
        "ecn_reductions": NAN,
        "rtt_mean_s": a.get("rtt_mean_s") if a.get("rtt_mean_s") is not None else NAN,
        "rtt_min_s": rtt_min,
        "completion_time_s": completion - start if completion is not None and start is not None else NAN,
        "stop_s": stop,
        # the emulated network is the dumbbell (docs/topology.md); the forwarder counts drops per
        # direction, not per hop, so the per-hop columns are empty
        "measured_link": "bottleneck",
        "path": "access bottleneck access" if g is not None else "",
        "hop_drops": "",
        "ack_path": "access reverse access" if g is not None else "",
        "ack_hop_drops": "",
        "src": src,
        "dst": dst,
        "app_sent_pkts": _app_sent(a, warm),
        "_fw": i if i is not None else -1,
    }
    return row


def _app_sent(a: dict, warm: float) -> float:
    """UDP datagrams the sending application handed to its socket in the window (NaN for TCP)."""
    if "sent_pkts" not in a:
        return NAN
    base = a.get("sent_pkts_warmup") if warm > 0 else 0
    return float(a["sent_pkts"] - (base or 0))


def _group_summary(name, g, m: pd.DataFrame, cap: float, window_s: float) -> dict:
    """A group's summary entry (:func:`aqmlab.run.summary.group_entry`); ``g`` None for the traffic
    the scenario did not describe."""
    n = len(m)
    if g is not None:
        transport, app = g.transport, g.app
        variant = g.cc if g.transport == "tcp" else "none"
    else:
        transport = m["transport"].iloc[0] if n and m["transport"].nunique() == 1 else "mixed"
        app, variant = name, "unknown" if transport == "tcp" else "none"
    return group_entry(name, transport, app, variant, m.to_dict("records"), cap, window_s)
