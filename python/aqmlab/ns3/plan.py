"""An aqmlab dumbbell as ns-3 builds it: the input of ``dumbbell.cc`` (docs/validation-ns3.md).

:func:`make_plan` reads the *resolved* scenario (every default filled in) and the engine's plan of
the dumbbell (``_core.emulation_plan``: each flow's drawn start instant, its access links) and
returns a :class:`Plan`: the text the ns-3 program reads, and the notes that say what ns-3 does
differently where the translation cannot match a parameter. What ns-3 (or this program) cannot run
is refused with a :class:`~aqmlab.base.errors.ScenarioError`, ``<key path>: ns-3 cannot run ...``.

Three places where ns-3 counts differently are carried over (docs/validation-ns3.md, "Matched
parameters"): an aqmlab segment of ``mss`` bytes is an IP packet of ``mss`` bytes in ns-3
(``SegmentSize = mss − 40``), and every device rate is raised by the 2-byte PPP header; the device
queue below the queue disc holds one packet, so packet thresholds are one lower in ns-3; and the
"bytes left" tests of CoDel and PIE are set to what they are with that packet counted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from .. import _core
from ..base.compat import tomllib
from ..base.errors import ScenarioError
from ..base.units import parse_duration

CANNOT = "ns-3 cannot run"
#: bytes of IP and TCP header on a data segment (no TCP options: timestamps are off)
HEADERS = 40
#: the PPP header ns-3's point-to-point devices add to every packet
PPP = 2

#: aqmlab congestion control -> ns-3 TypeId (the recovery is always ns-3's SACK recovery)
CC = {"cubic": "ns3::TcpCubic", "bbr": "ns3::TcpBbr", "dctcp": "ns3::TcpDctcp"}
RENO = ("reno", "newreno", "sack")

#: what ns-3 does that no setting of either simulator aligns (docs/validation-ns3.md lists them)
TCP_NOTES = (
    "retransmission timer: ns-3 restarts it on new ACKs only (on a recovery's first partial ACK, not the "
    "later ones) and never on a retransmission",
    "ns-3 opens each connection with a handshake: its data leaves one round trip after the start instant",
)
TCP_KEYS = {  # keys every group must share (ns-3 sets them as defaults of every socket)
    "mss", "ack_size", "initial_window", "max_window", "min_rto", "initial_rto", "max_rto", "max_backoff",
    "clock_granularity", "dupack_threshold", "limited_transmit", "rto_restart_on_retransmit", "delayed_ack",
    "delack_count", "delack_timeout", "byte_counting", "cubic_c", "cubic_beta", "cubic_fast_convergence",
    "cubic_tcp_friendly", "dctcp_g", "rack", "tlp", "prr", "hystart", "rto_estimator", "min_rtt_window",
}
PER_FLOW = {"variant", "recovery", "ecn", "pacing", "l4s"}
#: keys only some variants have (CUBIC's, DCTCP's): compared between the groups that have them
VARIANT_KEYS = ("cubic_", "dctcp_", "hystart")


def refuse(key: str, why: str) -> ScenarioError:
    return ScenarioError(f"{key}: {CANNOT} {why}")


@dataclass
class Plan:
    """The ns-3 program's input (:meth:`spec`) and what the translation could not match."""

    name: str
    seed: int
    rate_bps: float
    limit: int
    aqm: str
    mss: int
    warmup_s: float
    duration_s: float
    sample_s: float
    defaults: list = field(default_factory=list)  # (attribute path, value)
    qdisc: str = "ns3::FifoQueueDisc"
    lines: list = field(default_factory=list)  # the topology and flow lines
    flows: list = field(default_factory=list)  # per flow: dict(group, variant, start_s, rtt_prop_s, ...)
    notes: list = field(default_factory=list)

    def spec(self) -> str:
        head = [f"# {self.name}, seed {self.seed}: written by aqmlab.ns3.plan"]
        return "\n".join(head + [f"default {k} {v}" for k, v in self.defaults] + self.lines) + "\n"


def ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def wire(rate_bps: float, mss: int) -> int:
    """A device rate at which an IP packet of ``mss`` bytes plus PPP's 2 takes as long as ``mss`` in aqmlab."""
    return int(round(rate_bps * (mss + PPP) / mss))


def _time(v) -> str:
    return f"{ns(parse_duration(v) if isinstance(v, str) else float(v))}ns"


def _bool(v) -> str:
    return "true" if v else "false"


def min_bytes(aqm: dict, mss: int, notes: list) -> int:
    """CoDel's ``MinBytes`` for aqmlab's ``maxpacket``. aqmlab: "below" when at most ``maxpacket`` bytes
    are left waiting after the pop; ns-3: when fewer than ``MinBytes`` are left in the queue disc, which
    holds one waiting packet (the device queue's) fewer. At least 1: with 0, ns-3.44's CoDel drops the
    last packet of its queue and then reads the missing next one (``CoDelQueueDisc::DoDequeue``, after
    its ``end:`` label), and the program aborts."""
    want = aqm["maxpacket"] - mss + 1
    if want < 1:
        notes.append(f"bottleneck.aqm.maxpacket = {aqm['maxpacket']}: below one packet aqmlab never counts the "
                     "queue as below target by its bytes; ns-3 does when its queue disc is empty (MinBytes = 1: "
                     "with 0 ns-3.44's CoDel aborts)")
    return max(1, want)


def queue(aqm: dict, limit: int, mss: int, rate_bps: float, notes: list) -> tuple[str, list]:
    """The bottleneck's queue disc: (TypeId, [(attribute, value)]) — ``MaxSize`` is set by the program
    (``limit`` − 1 packets: one waits in the device queue)."""
    kind = aqm["type"]
    key = "bottleneck.aqm"
    if kind == "droptail":
        return "ns3::FifoQueueDisc", []
    if kind == "codel":
        return "ns3::CoDelQueueDisc", [("Target", _time(aqm["target"])), ("Interval", _time(aqm["interval"])),
                                       ("MinBytes", min_bytes(aqm, mss, notes)), ("UseEcn", _bool(aqm["ecn"]))]
    if kind == "fq_codel":
        if aqm["quantum"] != mss:
            notes.append(f"{key}.quantum: ns-3's quantum is the device MTU, {mss} B (aqmlab {aqm['quantum']} B)")
        notes.append(f"{key}.hash: ns-3 hashes the 5-tuple into the buckets (aqmlab: '{aqm['hash']}' of the flow)")
        notes.append(f"{key}: on overflow ns-3 drops up to 64 packets from the fattest bucket (aqmlab: one), and each "
                     "bucket's CoDel tests its own bytes left, not the whole queue's")
        return "ns3::FqCoDelQueueDisc", [
            ("Flows", aqm["flows"]), ("Target", _time(aqm["target"])), ("Interval", _time(aqm["interval"])),
            ("UseEcn", _bool(aqm["ecn"])), ("ns3::CoDelQueueDisc::MinBytes", min_bytes(aqm, mss, notes))]
    if kind in ("pie", "fq_pie"):
        attrs = [("QueueDelayReference", _time(aqm["target"])), ("Tupdate", _time(aqm["t_update"])),
                 ("A", aqm["alpha"]), ("B", aqm["beta"]), ("MaxBurstAllowance", _time(aqm["max_burst"])),
                 ("UseDequeueRateEstimator", "false"), ("UseEcn", _bool(aqm["ecn"]))]
        if kind == "pie":
            if aqm["qdelay_estimator"] == "rate":
                attrs[-2] = ("UseDequeueRateEstimator", "true")
                attrs.append(("DequeueThreshold", aqm["dq_threshold"]))
            elif aqm["qdelay_estimator"] != "departure":
                notes.append(f"{key}.qdelay_estimator: '{aqm['qdelay_estimator']}' has no ns-3 form; ns-3 uses "
                             "the last departure's sojourn ('departure')")
            if aqm["boost_above_250ms"]:
                raise refuse(f"{key}.boost_above_250ms", "Linux's boost above 250 ms (ns-3's PIE has none)")
            # ns-3 (packets): no early drop while at most 2 packets are in the queue disc, 3 waiting
            waiting = math.floor(2 * aqm["mean_pkt_size"] / mss)
            if waiting != 3:
                notes.append(f"{key}.mean_pkt_size: aqmlab drops no packet early while at most {waiting} wait; "
                             "ns-3 while at most 3 wait (2 in its queue disc)")
            return "ns3::PieQueueDisc", attrs + [("UseDerandomization", _bool(aqm["derandomize"])),
                                                  ("MarkEcnThreshold", aqm["mark_ecn_th"])]
        if aqm["quantum"] != mss:
            notes.append(f"{key}.quantum: ns-3's quantum is the device MTU, {mss} B (aqmlab {aqm['quantum']} B)")
        if aqm["bytemode"]:
            raise refuse(f"{key}.bytemode", "FQ-PIE in byte mode with a packet limit")
        notes.append(f"{key}: ns-3 runs RFC 8033's PIE in every bucket (its update and burst rules, no early drop "
                     "while the bucket holds at most 2 packets); aqmlab follows Linux's sch_fq_pie")
        return "ns3::FqPieQueueDisc", attrs + [("Flows", aqm["flows"]), ("UseDerandomization", "true"),
                                                ("MarkEcnThreshold", aqm["ecn_prob"])]
    if kind == "cake":
        mode = aqm["flow_mode"]
        if mode not in ("flowblind", "flows"):
            raise refuse(f"{key}.flow_mode", f"CAKE's host isolation ('{mode}'): ns-3 has COBALT "
                                              "('flowblind') and FQ-COBALT ('flows')")
        if aqm["shaped"]:
            notes.append(f"{key}.shaped: aqmlab derives CAKE's quantum ({max(300, min(1514, int(rate_bps / 8 / 4096)))} "
                         "B) and an MTU-time floor of the target from the rate; ns-3 does neither")
        attrs = [("Target", _time(aqm["target"])), ("Interval", _time(aqm["interval"])), ("UseEcn", "true")]
        notes.append(f"{key}: ns-3's COBALT raises BLUE's probability also when a packet waited 400 ms "
                     "(BlueThreshold); aqmlab's CAKE only on overflow")
        if mode == "flowblind":
            return "ns3::CobaltQueueDisc", attrs
        notes.append(f"{key}: ns-3's FQ-COBALT has one quantum (the device MTU, {mss} B) and no sparse/bulk or "
                     "decaying lists of CAKE's DRR++")
        return "ns3::FqCobaltQueueDisc", attrs + [("Flows", 1024), ("EnableSetAssociativeHash", "true"),
                                                   ("SetWays", 8)]
    if kind == "red":
        if aqm["mode"] != "packet":
            raise refuse(f"{key}.mode", "RED in byte mode with a packet limit")
        ns2 = aqm["variant"] == "ns2"  # ns-3's RED is ns-2's Queue/RED, as aqmlab's variant "ns2"
        if not aqm["uniformise"]:
            notes.append(f"{key}.uniformise = false: ns-3 always spreads early drops by the count since the last")
        if not ns2:
            notes.append(f"{key}.variant: ns-3's RED is ns-2's (aqmlab 'ns2': no test while one packet waits, the "
                         "first arrival in the ramp admitted untested); ns-3 runs it with fj93's spacing of drops "
                         "(Wait = false) and drops in the hard region")
        if aqm["idle_rule"] != "queue_empty":
            notes.append(f"{key}.idle_rule: ns-3 starts an idle period when the queue empties ('queue_empty')")
        # the device queue holds one of the waiting packets: the thresholds are one lower in the queue disc;
        # aqmlab's "ns2" variant marks ECN-capable packets in the hard region, as ns-3 without UseHardDrop
        return "ns3::RedQueueDisc", [
            ("MinTh", aqm["min_th"] - 1), ("MaxTh", aqm["max_th"] - 1), ("QW", aqm["w_q"]),
            ("LInterm", 1 / aqm["max_p"]), ("Gentle", _bool(aqm["gentle"])), ("Wait", _bool(ns2)),
            ("UseEcn", _bool(aqm["ecn"])), ("UseHardDrop", _bool(not ns2)), ("MeanPktSize", aqm["mean_pkt_size"]),
            ("LinkBandwidth", f"{int(rate_bps)}bps")]
    raise refuse(f"{key}.type", f"'{kind}': ns-3 has FIFO, RED, CoDel, FQ-CoDel, PIE, FQ-PIE, COBALT and "
                                f"FQ-COBALT (cake with flow_mode 'flowblind' or 'flows')")


def _recovery_notes(tcp: dict) -> list:
    """What ns-3's loss detection and recovery do differently from the scenario's."""
    out = []
    if tcp.get("rack"):
        out.append("tcp.rack = true: ns-3 has no RACK-TLP; it detects loss by SACK and duplicate ACKs (RFC 6675) "
                   "only, so a lost retransmission or a lost tail waits for the retransmission timer")
    else:
        out.append("after a timeout ns-3 keeps its SACK scoreboard (RFC 6675 §5.1) and resends only what is not "
                   "SACKed (aqmlab without rack: go-back-N)")
    if tcp.get("rto_estimator", "rfc6298") == "rfc6298":
        out.append("RTT: ns-3 takes a sample from every ACK of data sent once (aqmlab: one timed segment per "
                   "round trip)")
    else:
        out.append(f"tcp.rto_estimator = '{tcp['rto_estimator']}': ns-3's RTO is RFC 6298's on a sample from "
                   "every ACK, at least min_rto (Linux adds min_rto's share to SRTT instead)")
    if tcp.get("prr", False) is False:
        out.append("tcp.prr = false: ns-3 runs classic recovery (TcpClassicRecovery: cwnd = ssthresh at once)")
    if tcp.get("hystart") == "hystart++":
        out.append("tcp.hystart = 'hystart++': ns-3's CUBIC has Linux's HyStart, not HyStart++")
    return out


def _tcp_defaults(tcp: dict, notes: list) -> list:
    """The socket defaults every flow shares."""
    mss = tcp["mss"]
    iw = tcp["initial_window"]
    if iw != int(iw):
        raise refuse("tcp.initial_window", f"a fractional initial window ({iw})")
    if parse_duration(tcp["max_rto"]) != 60:
        notes.append(f"tcp.max_rto: ns-3 caps the retransmission timer at 60 s (aqmlab {tcp['max_rto']})")
    if tcp["ack_size"] != HEADERS:
        notes.append(f"tcp.ack_size: ns-3's ACKs have {HEADERS} B of headers (aqmlab {tcp['ack_size']} B)")
    buf = tcp["max_window"] * (mss - HEADERS)
    out = [
        ("ns3::TcpSocket::SegmentSize", mss - HEADERS),
        ("ns3::TcpSocket::InitialCwnd", int(iw)),
        ("ns3::TcpSocket::DelAckCount", tcp["delack_count"] if tcp["delayed_ack"] else 1),
        ("ns3::TcpSocket::DelAckTimeout", _time(tcp["delack_timeout"])),
        ("ns3::TcpSocket::SndBufSize", buf),
        ("ns3::TcpSocket::RcvBufSize", buf),
        ("ns3::TcpSocket::DataRetries", 1000),
        ("ns3::TcpSocket::ConnTimeout", _time(tcp["initial_rto"])),
        ("ns3::RttEstimator::InitialEstimation", _time(tcp["initial_rto"])),
        ("ns3::TcpSocketBase::MinRto", _time(tcp["min_rto"])),
        ("ns3::TcpSocketBase::ClockGranularity", _time(tcp["clock_granularity"])),
        ("ns3::TcpSocketBase::ReTxThreshold", tcp["dupack_threshold"]),
        ("ns3::TcpSocketBase::LimitedTransmit", _bool(tcp["limited_transmit"])),
        ("ns3::TcpSocketBase::Sack", "true"),
        ("ns3::TcpSocketBase::Timestamp", "false"),
        ("ns3::TcpSocketBase::WindowScaling", "true"),
        # PRR as Linux's unless the scenario turns it off (aqmlab presets without the key: RFC 6675's)
        ("ns3::TcpL4Protocol::RecoveryType",
         "ns3::TcpPrrRecovery" if tcp.get("prr", False) else "ns3::TcpClassicRecovery"),
        ("ns3::TcpSocketState::EnablePacing", "false"),
    ]
    if "cubic_c" in tcp:
        out += [("ns3::TcpCubic::C", tcp["cubic_c"]), ("ns3::TcpCubic::Beta", tcp["cubic_beta"]),
                ("ns3::TcpCubic::FastConvergence", _bool(tcp["cubic_fast_convergence"])),
                ("ns3::TcpCubic::TcpFriendliness", _bool(tcp["cubic_tcp_friendly"])),
                ("ns3::TcpCubic::HyStart", _bool(tcp.get("hystart", "off") != "off"))]
    if "dctcp_g" in tcp:
        out += [("ns3::TcpDctcp::DctcpShiftG", tcp["dctcp_g"]), ("ns3::TcpDctcp::DctcpAlphaOnInit", 1.0),
                ("ns3::TcpDctcp::UseEct0", "true")]
    return out


def make_plan(src, seed: int | None, overrides=()) -> Plan:
    """The ns-3 plan of a scenario (a :class:`~aqmlab.run.source.Source`), seed and overrides."""
    res = tomllib.loads(_core.resolve(src.text, src.name, list(overrides), seed, []))
    if res.get("topology", {}).get("type", "dumbbell") != "dumbbell":
        raise refuse("topology", "networks other than the dumbbell (this program builds a dumbbell)")
    ep = json.loads(_core.emulation_plan(src.text, src.name, list(overrides), seed))
    b, r = ep["bottleneck"], ep["reverse"]
    key = "bottleneck"
    if b["queue_unit"] != "packets":
        raise refuse(f"{key}.queue_unit", "a buffer in bytes (the translation counts packets)")
    if b["loss_rate"] or r["loss_rate"]:
        raise refuse(f"{key}.loss_rate", "random link loss")
    if r["aqm"] != "droptail":
        raise refuse("reverse.aqm", "a queue discipline on the reverse link")
    if r["delay_ns"] != b["delay_ns"]:
        raise refuse("reverse.delay", "a reverse delay other than the bottleneck's (one ns-3 channel)")
    if b["limit"] < 2:
        raise refuse(f"{key}.limit", "a buffer of one packet (the device queue holds one of the waiting packets)")

    groups = ep["groups"]
    tcps = []
    for i, (g, rg) in enumerate(zip(groups, res["flows"])):
        where = f"flows[{i}]"
        if g["transport"] != "tcp" or g["app"] != "bulk":
            raise refuse(f"{where}.app", f"'{g['transport']}/{g['app']}' (the program runs bulk TCP flows)")
        if g["size"] is not None or g["stop_ns"] is not None:
            raise refuse(f"{where}.size", "finite transfers or a stop (the program's flows send until the end)")
        tcps.append(rg["tcp"])
    notes: list = []
    first = tcps[0]
    for i, t in enumerate(tcps):
        for k in sorted(set(first) | set(t)):
            if k in PER_FLOW or k.startswith(VARIANT_KEYS) and (k not in first or k not in t):
                continue
            if k not in TCP_KEYS:
                if i == 0:
                    notes.append(f"tcp.{k} = {t[k]!r}: no ns-3 setting (not translated)")
                continue
            if t.get(k) != first.get(k):
                raise refuse(f"flows[{i}].tcp.{k}", f"groups that differ in {k} (ns-3 sets it for every socket)")
    mss = first["mss"]
    if mss <= HEADERS + 1:
        raise refuse("tcp.mss", f"segments of {mss} B (no room for 40 B of headers)")
    if any(t["rto_restart_on_retransmit"] for t in tcps):
        notes.append("tcp.rto_restart_on_retransmit = true: ns-3 does not restart the timer on a retransmission")
    notes.extend(TCP_NOTES)
    notes.extend(_recovery_notes(first))
    merged = {}
    for t in tcps:
        merged.update({k: v for k, v in t.items() if k.startswith(VARIANT_KEYS)})
    merged.update({k: first[k] for k in TCP_KEYS if k in first})

    aqm = res["bottleneck"]["aqm"]
    qdisc, qattrs = queue(aqm, b["limit"], mss, b["rate_bps"], notes)
    defaults = _tcp_defaults(merged, notes)
    short = qdisc.split("::")[1]
    for k, v in qattrs:
        defaults.append((k if k.startswith("ns3::") else f"ns3::{short}::{k}", v))

    pairs = [p for g in groups for p in g["pairs"]]
    rates = {p["sender_rate_bps"] for p in pairs} | {p["receiver_rate_bps"] for p in pairs}
    if len(rates) != 1:
        raise refuse("flows[].sender_rate", "access links of different rates (the program has one access rate)")
    access = rates.pop()
    lines = [f"bottleneck {wire(b['rate_bps'], mss)} {b['delay_ns']} {b['limit'] - 1} {qdisc}",
             f"reverse {wire(r['rate_bps'], mss)} {r['delay_ns']} {r['limit'] - 1}",
             f"access {wire(access, mss)} {ep['access_limit'] - 1}"]
    flows = []
    for i, (g, t) in enumerate(zip(groups, tcps)):
        variant = t["variant"]
        if t["recovery"] != "sack":
            raise refuse(f"flows[{i}].tcp.recovery", f"'{t['recovery']}' recovery (ns-3's recovery is SACK-based)")
        if variant in RENO:
            cc = "ns3::TcpLinuxReno" if t["byte_counting"] else "ns3::TcpNewReno"
        elif variant in CC:
            cc = CC[variant]
        else:
            raise refuse(f"flows[{i}].tcp.variant", f"'{variant}' (the comparison's ns-3 senders are Reno, CUBIC, "
                                                   "BBR and DCTCP)")
        if t.get("l4s"):
            raise refuse(f"flows[{i}].tcp.l4s", "ECT(1) senders (ns-3's DCTCP here sends ECT(0))")
        ecn = "On" if t["ecn"] else "Off"
        pace = 1 if t.get("pacing") else 0
        for p in g["pairs"]:
            lines.append(f"flow {cc} {p['start_ns'] / 1e9:.9f} {p['sender_delay_ns']} {p['receiver_delay_ns']} "
                         f"{ecn} {pace}")
            flows.append({"flow_id": p["flow_id"], "host": p["host"], "group": g["name"], "variant": variant,
                          "recovery": t["recovery"], "priority": g["priority"], "start_s": p["start_ns"] / 1e9,
                          "rtt_prop_s": p["rtt_prop_ns"] / 1e9, "cc": cc})
    sample = ep["sample_interval_ns"] / 1e9
    lines += [f"window {ep['warmup_ns'] / 1e9:.9f} {ep['duration_ns'] / 1e9:.9f}", f"sample {sample:.9f}",
              f"rng {max(1, int(ep['seed']))}"]
    seen = []
    for n in notes:  # keep the first of repeated notes
        if n not in seen:
            seen.append(n)
    return Plan(name=ep["name"], seed=int(ep["seed"]), rate_bps=b["rate_bps"], limit=b["limit"], aqm=aqm["type"],
                mss=mss, warmup_s=ep["warmup_ns"] / 1e9, duration_s=ep["duration_ns"] / 1e9, sample_s=sample,
                defaults=defaults, qdisc=qdisc, lines=lines, flows=flows, notes=seen)


__all__ = ["Plan", "make_plan", "queue", "wire", "refuse", "CANNOT", "HEADERS", "PPP", "TCP_NOTES"]
