"""ns-2's packet trace read into aqmlab's counters (docs/metrics.md definitions).

A trace line is ``<event> <time> <from> <to> <type> <size> <flags> <fid> <src> <dst> <seq> <uid>``
(ns-2's ``Trace::format``; times rounded to the microsecond). The script traces each link only for
the events the plan asks (:attr:`aqmlab.ns2.plan.Link.trace`), so every line is one of:

* ``+`` on a flow's first link: a packet the source sent (its count, retransmissions, the segment
  timed for the RTT); on a measured link (or a queue whose drops depend on its length): an arrival
  at the queue;
* ``-`` on such a link: the start of a transmission (throughput, utilisation, queueing delay);
* ``d`` anywhere: a drop, charged to the flow and hop; its reason is ``overflow`` when the packet
  did not fit the buffer as aqmlab counts it (``qlen + u > limit``) and ``early`` otherwise (a
  DropTail drop is always ``overflow``);
* ``r`` on a flow's last data link: a delivery (goodput, first receptions); on its last ACK link: an
  ACK back at the sender (RTT samples, completion).

Windowed counters count events at ``warmup <= t < duration``; the queue's time average integrates
over [warmup, duration]. :func:`read_trace` also checks packet conservation: every data packet a
source sent is delivered once, dropped once or still in the network at the end, and on every
measured link ``arrivals + queued at the warm-up = transmitted + drops + queued at the end``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..base.errors import SimulationError
from .plan import Plan

QUEUE_REASONS = ("early", "forced", "matched_arrival", "matched_victim", "overflow")


def _zero() -> dict:
    return {"arrivals": 0, "transmitted": 0, "tx_bytes": 0, "drops": 0}


@dataclass
class LinkCounts:
    arrivals: int = 0
    transmitted: int = 0
    tx_bytes: int = 0
    drops: dict = field(default_factory=lambda: dict.fromkeys(QUEUE_REASONS, 0))
    q_int_pkts: float = 0.0  # packet-seconds over the window
    q_int_bytes: float = 0.0
    q_max: int = 0
    q_start: int = 0
    q_end: int = 0
    delays: list = field(default_factory=list)  # queueing delays (s) of transmissions in the window
    groups: dict = field(default_factory=dict)  # group index -> _zero()
    acks: dict = field(default_factory=_zero)
    # time series: per sample k, (queue pkts, queue bytes, bytes sent since the previous sample, drops since)
    series: list = field(default_factory=list)


@dataclass
class FlowCounts:
    sent_pkts: int = 0
    sent_bytes: int = 0
    retx_pkts: int = 0
    delivered_pkts: int = 0
    delivered_bytes: int = 0
    goodput_bytes: int = 0
    delivered_retx_bytes: int = 0
    max_seq_received: int = -1  # whole run
    min_seq_sent: int = -1
    bneck_arrivals: int = 0
    bneck_tx_pkts: int = 0
    bneck_tx_bytes: int = 0
    hop_drops: list = field(default_factory=list)  # per hop of the data path: {reason: n}
    ack_hop_drops: list = field(default_factory=list)  # per hop of the ACK path
    rtt: list = field(default_factory=list)  # whole run (s)
    done_ns: int | None = None  # the ACK of the last segment offered reached the sender
    # per-flow series: bytes per interval j (the interval ending at sample j + 1), and the running
    # count of retransmissions at each
    series_tx: dict = field(default_factory=dict)
    series_good: dict = field(default_factory=dict)
    series_retx: dict = field(default_factory=dict)
    retx_total: int = 0
    # whole run, for the conservation check
    total_sent: int = 0
    total_delivered: int = 0
    total_dropped: int = 0


@dataclass
class Counts:
    links: dict  # link index -> LinkCounts (the measured links)
    flows: list  # FlowCounts, by fid
    in_flight: int = 0
    lines: int = 0


class _Q:
    """A traced queue's length and where its waiting packets arrived."""

    __slots__ = ("pkts", "bytes", "since", "waiting", "full_pkts", "unit_bytes", "limit", "droptail")

    def __init__(self, limit: int, unit_bytes: bool, droptail: bool):
        self.pkts = 0
        self.bytes = 0
        self.since = 0.0
        self.waiting: dict = {}  # uid -> (arrival time, size, fits)
        self.limit = limit
        self.unit_bytes = unit_bytes
        self.droptail = droptail


class _Reader:
    """The state of reading one trace (:func:`read_trace`): the plan's links and flows indexed for
    the lookups a line needs, the counts, and per flow what its TCP timing and completion need."""

    def __init__(self, plan: Plan, last_seq: dict | None, stop_at: dict | None):
        self.plan = plan
        self.W = self.plan.warmup_ns / 1e9
        self.D = self.plan.duration_ns / 1e9
        self.dt = self.plan.sample_ns / 1e9
        self.links = self.plan.links
        self.flows = self.plan.flows
        self.measured = {i for i, l in enumerate(self.links) if l.measured}
        self.counts = Counts({i: LinkCounts() for i in self.measured}, [FlowCounts() for _ in self.flows])
        # per link: the flows' hop index on it (data and ACK paths)
        self.first_of, self.last_of, self.last_ack_of = {}, {}, {}
        self.hop_of: dict = {}
        self.ack_hop_of: dict = {}
        for f in self.flows:
            fc = self.counts.flows[f.fid]
            fc.hop_drops = [dict.fromkeys(QUEUE_REASONS + ("link_loss",), 0) for _ in f.path]
            fc.ack_hop_drops = [0] * len(f.ack_path)
            self.first_of[(f.path[0], f.fid)] = True
            self.last_of[(f.path[-1], f.fid)] = True
            self.last_ack_of[(f.ack_path[-1], f.fid)] = True
            for h, li in enumerate(f.path):
                self.hop_of[(li, f.fid)] = h
            for h, li in enumerate(f.ack_path):
                self.ack_hop_of[(li, f.fid)] = h
        # the measured link of each flow: the last measured link of its data path
        self.mlink = {}
        for f in self.flows:
            m = [li for li in f.path if li in self.measured]
            if m:
                self.mlink[f.fid] = m[-1]
        self.key_of = {f"{l.src} {l.dst}": i for i, l in enumerate(self.links)}
        self.queues = {i: _Q(l.limit, l.queue_unit == "bytes", l.queue.kind == "DropTail") for i, l in enumerate(self.links)
                  if {"+", "-"} <= l.trace and l.name != "access"}
        self.group_of = [f.group for f in self.flows]
        self.tcp = [f.transport == "tcp" for f in self.flows]
        # per flow: highest sequence number sent, timing state (seq, time), sequence numbers received
        self.max_sent = [-1] * len(self.flows)
        self.hi_ack = [-1] * len(self.flows)  # the highest ACK back at the sender before its stop
        self.timed: list = [None] * len(self.flows)
        self.received: list = [set() for _ in self.flows]
        self.retx_uid: list = [set() for _ in self.flows]
        self.outstanding: list = [set() for _ in self.flows]
        self.last_seq = dict(last_seq or {})
        self.stop_at = stop_at or {}
        self.stop_s = {fid: ns / 1e9 for fid, ns in self.stop_at.items()}
        # time series
        self.k_next = 0
        self.fdt = self.plan.series_ns / 1e9 if self.plan.series_ns else None
        self.ser_tx = {i: 0 for i in self.measured}
        self.ser_drops = {i: 0 for i in self.measured}

        self.warm_done = self.W <= 0.0
        for i in self.measured:
            if self.warm_done:
                self.counts.links[i].q_start = 0
        self.n = 0

    def advance(self, q: _Q, lc: LinkCounts | None, t: float) -> None:
        """Integrate the queue's length from its last change to ``t`` (within the window)."""
        if lc is not None:
            a, b = max(q.since, self.W), min(t, self.D)
            if b > a:
                lc.q_int_pkts += q.pkts * (b - a)
                lc.q_int_bytes += q.bytes * (b - a)
        q.since = t

    def sample_until(self, t: float) -> None:
        while self.k_next * self.dt < self.D and self.k_next * self.dt <= t:
            for i in self.measured:
                q = self.queues.get(i)
                self.counts.links[i].series.append((q.pkts if q else 0, q.bytes if q else 0, self.ser_tx[i], self.ser_drops[i]))
                self.ser_tx[i] = 0
                self.ser_drops[i] = 0
            self.k_next += 1

    def line(self, p: list) -> None:
        """One line of the trace, split."""
        if len(p) < 12:
            return
        ev = p[0]
        t = float(p[1])
        if t >= self.D:
            return
        if not self.warm_done and t >= self.W:
            for i in self.measured:
                q = self.queues.get(i)
                self.counts.links[i].q_start = self.counts.links[i].q_max = q.pkts if q else 0
            self.warm_done = True
        if self.k_next * self.dt <= t:
            # (a sample is taken before the events at its instant: arrivals, transmissions and drops
            # at exactly that time count in the next interval)
            self.sample_until(t - 1e-12)
        li = self.key_of.get(f"{p[2]} {p[3]}")
        if li is None:
            return
        fid = int(p[7])
        if fid < 0 or fid >= len(self.flows):
            return
        is_ack = p[4] == "ack"
        size = int(p[5])
        seq = int(p[10])
        uid = p[11]
        win = t >= self.W
        fc = self.counts.flows[fid]
        lc = self.counts.links.get(li)
        q = self.queues.get(li)
        e = (t, li, fid, is_ack, size, seq, uid, win)
        if ev == "+":
            self.enqueued(e, fc, lc, q)
        elif ev == "-":
            self.dequeued(e, fc, lc, q)
        elif ev == "d":
            self.dropped(e, fc, lc, q)
        elif ev == "r":
            self.received_at(e, fc)

    def enqueued(self, e: tuple, fc: FlowCounts, lc: LinkCounts | None, q: _Q | None) -> None:
        """A packet enters a link (``+``): sent by its source at its first link; queued."""
        t, li, fid, is_ack, size, seq, uid, win = e
        if not is_ack and (li, fid) in self.first_of:
            fc.total_sent += 1
            self.outstanding[fid].add(uid)
            retx = seq <= self.max_sent[fid]
            if fc.min_seq_sent < 0:
                fc.min_seq_sent = seq
            if win:
                fc.sent_pkts += 1
                fc.sent_bytes += size
                if retx and self.tcp[fid]:
                    fc.retx_pkts += 1
            if retx and self.tcp[fid]:
                fc.retx_total += 1
                if self.fdt:
                    fc.series_retx[max(0, math.ceil(t / self.fdt) - 1)] = fc.retx_total
            if self.tcp[fid]:
                if retx:
                    self.retx_uid[fid].add(uid)
                    self.timed[fid] = None  # Karn: the timing stops at any retransmission
                else:
                    self.max_sent[fid] = seq
                    if self.timed[fid] is None:
                        self.timed[fid] = (seq, t)
            else:
                self.max_sent[fid] = max(self.max_sent[fid], seq)
        if q is not None:
            self.advance(q, lc, t)
            if lc is not None and win and q.pkts > lc.q_max:
                lc.q_max = q.pkts  # (the length left by the previous event)
            fits = (q.bytes + size <= q.limit) if q.unit_bytes else (q.pkts + 1 <= q.limit)
            q.waiting[uid] = (t, size, fits)
            q.pkts += 1
            q.bytes += size
            if lc is not None:
                if win:
                    lc.arrivals += 1
                    g = lc.acks if is_ack else lc.groups.setdefault(self.group_of[fid], _zero())
                    g["arrivals"] += 1
                    if not is_ack and self.mlink.get(fid) == li:
                        fc.bneck_arrivals += 1

    def dequeued(self, e: tuple, fc: FlowCounts, lc: LinkCounts | None, q: _Q | None) -> None:
        """A packet starts its transmission (``-``)."""
        t, li, fid, is_ack, size, seq, uid, win = e
        if q is None:
            return
        self.advance(q, lc, t)
        if lc is not None and win and q.pkts > lc.q_max:
            lc.q_max = q.pkts
        t0, sz, _ = q.waiting.pop(uid, (t, size, True))
        q.pkts -= 1
        q.bytes -= sz
        if lc is not None and win:
            lc.transmitted += 1
            lc.tx_bytes += size
            lc.delays.append(round(t - t0, 9))  # (trace times are whole microseconds)
            self.ser_tx[li] += size
            g = lc.acks if is_ack else lc.groups.setdefault(self.group_of[fid], _zero())
            g["transmitted"] += 1
            g["tx_bytes"] += size
            if not is_ack and self.mlink.get(fid) == li:
                fc.bneck_tx_pkts += 1
                fc.bneck_tx_bytes += size
        elif lc is not None:
            self.ser_tx[li] += size
        if self.fdt and lc is not None and not is_ack and self.mlink.get(fid) == li:
            j = max(0, math.ceil(t / self.fdt) - 1)
            fc.series_tx[j] = fc.series_tx.get(j, 0) + size

    def dropped(self, e: tuple, fc: FlowCounts, lc: LinkCounts | None, q: _Q | None) -> None:
        """A packet is dropped (``d``): by the queue, early or overflowing, or lost."""
        t, li, fid, is_ack, size, seq, uid, win = e
        reason = "overflow"
        if q is not None:
            self.advance(q, lc, t)
            w = q.waiting.pop(uid, None)
            if w is not None:
                q.pkts -= 1
                q.bytes -= w[1]
                if not q.droptail and w[2]:
                    reason = "early"
        if is_ack:
            h = self.ack_hop_of.get((li, fid))
            if h is not None and win:
                fc.ack_hop_drops[h] += 1
        else:
            fc.total_dropped += 1
            self.outstanding[fid].discard(uid)
            h = self.hop_of.get((li, fid))
            if h is not None and win:
                fc.hop_drops[h][reason] += 1
        if lc is not None:
            self.ser_drops[li] += 1
            if win:
                lc.drops[reason] += 1
                g = lc.acks if is_ack else lc.groups.setdefault(self.group_of[fid], _zero())
                g["drops"] += 1

    def received_at(self, e: tuple, fc: FlowCounts) -> None:
        """A packet leaves a link (``r``): delivered at its last link; an ACK back at its sender."""
        t, li, fid, is_ack, size, seq, uid, win = e
        if not is_ack and (li, fid) in self.last_of:
            fc.total_delivered += 1
            if uid not in self.outstanding[fid]:
                raise SimulationError(f"ns-2 trace: packet {uid} of flow {fid} delivered but never sent "
                                      "(or delivered twice)")
            self.outstanding[fid].discard(uid)
            first = seq not in self.received[fid]
            self.received[fid].add(seq)
            if self.fdt and first:
                j = max(0, math.ceil(t / self.fdt) - 1)
                fc.series_good[j] = fc.series_good.get(j, 0) + size
            if seq > fc.max_seq_received:
                fc.max_seq_received = seq
            if win:
                fc.delivered_pkts += 1
                fc.delivered_bytes += size
                if first:
                    fc.goodput_bytes += size
                if uid in self.retx_uid[fid]:
                    fc.delivered_retx_bytes += size
        elif is_ack and (li, fid) in self.last_ack_of:
            if seq > self.hi_ack[fid] and t < self.stop_s.get(fid, self.D):
                self.hi_ack[fid] = seq
            tm = self.timed[fid]
            if tm is not None and seq >= tm[0]:
                fc.rtt.append(t - tm[1])
                self.timed[fid] = None
            if fc.done_ns is None:
                ls = self.last_seq.get(fid)
                if ls is None and fid in self.stop_s and t >= self.stop_s[fid]:
                    ls = self.last_seq[fid] = self.max_sent[fid]
                if ls is not None and seq >= ls:
                    fc.done_ns = int(round(t * 1e9))

    def finish(self) -> Counts:
        """The end: the last samples, the queues' integrals, conservation."""
        self.sample_until(self.D - 1e-12)
        for fid, ns in self.stop_at.items():
            fc = self.counts.flows[fid]
            if fc.done_ns is None and self.max_sent[fid] >= 0 and self.hi_ack[fid] >= self.max_sent[fid]:
                fc.done_ns = ns  # everything sent was acknowledged by the stop: done at the stop itself
        if not self.warm_done:
            for i in self.measured:
                q = self.queues.get(i)
                self.counts.links[i].q_start = q.pkts if q else 0
        for i in self.measured:
            q = self.queues.get(i)
            lc = self.counts.links[i]
            if q is not None:
                self.advance(q, lc, self.D)
                lc.q_end = q.pkts
                lc.q_max = max(lc.q_max, q.pkts)
        self.counts.lines = self.n
        self.counts.in_flight = sum(len(o) for o in self.outstanding)
        _check(self.plan, self.counts, self.outstanding)
        return self.counts


def read_trace(plan: Plan, trace_path: str, last_seq: dict | None = None, stop_at: dict | None = None) -> Counts:
    """Read ``trace_path`` (written by the plan's script) into :class:`Counts`.

    ``last_seq`` maps a fid to the last sequence number its application offers (a sized transfer):
    its completion is the first ACK at the sender that covers it. ``stop_at`` maps a fid to its
    TCP ``stop`` (ns): then the last segment offered is the highest sent before it."""
    r = _Reader(plan, last_seq, stop_at)
    with open(trace_path, "r", encoding="ascii", errors="replace") as fh:
        for line in fh:
            r.n += 1
            r.line(line.split())
    return r.finish()

def _check(plan: Plan, counts: Counts, outstanding: list) -> None:
    """Packet conservation (module notes); a violation is a SimulationError naming it."""
    for f in plan.flows:
        fc = counts.flows[f.fid]
        left = len(outstanding[f.fid])
        if fc.total_sent != fc.total_delivered + fc.total_dropped + left:
            raise SimulationError(f"ns-2 trace: flow {f.fid} sent {fc.total_sent} packets but {fc.total_delivered} "
                                  f"were delivered, {fc.total_dropped} dropped and {left} are in the network")
    for i, lc in counts.links.items():
        total = sum(lc.drops.values())
        if lc.arrivals + lc.q_start != lc.transmitted + total + lc.q_end:
            raise SimulationError(f"ns-2 trace: link {plan.links[i].name}: {lc.arrivals} arrivals + {lc.q_start} "
                                  f"queued at the warm-up != {lc.transmitted} transmitted + {total} dropped + "
                                  f"{lc.q_end} queued at the end")


def percentile(sorted_values: list, q: float) -> float:
    """The nearest-rank ``q`` percentile (the value of rank ``ceil(q n)``) of sorted values; NaN for none."""
    n = len(sorted_values)
    if not n:
        return math.nan
    return sorted_values[max(0, min(n - 1, math.ceil(q * n) - 1))]


__all__ = ["read_trace", "Counts", "LinkCounts", "FlowCounts", "percentile", "QUEUE_REASONS"]
