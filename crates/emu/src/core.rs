//! The forwarder's core: routing, flows and links, in virtual time and without I/O.
//!
//! The emulated network is the simulator's dumbbell. Host pair i has a sender address
//! `sender_base + i + 1` (in the namespace of its flow group, reached through that namespace's
//! port) and a receiver address `receiver_base + i + 1` (in the receivers' namespace). A packet
//! read from a sender-side port travels
//! `sender access (S_i → R1) → bottleneck (R1 → R2) → receiver access (R2 → D_j)` and leaves by
//! the receivers' port; a packet read from the receivers' port travels
//! `receiver access (D_j → R2) → reverse (R2 → R1) → sender access (R1 → S_i)` and leaves by the
//! port of S_i's namespace. Each access link belongs to one host pair, as in the simulator.
//!
//! The packet's path: [`Core::ingress`] (parse, route, count) → `arrive` at a link (link loss,
//! the queue) → `advance_tx` (transmissions, lazily) → the link's event, `process_link` → on to
//! the next link, or `deliver` (counted, written out). A measured link (the bottleneck) has the
//! simulator's monitor (`sim::monitor::LinkMonitor`), which the path calls where it changes the
//! link's queue; nothing in the path knows which link is the bottleneck. What the run reports is
//! made in [`crate::report`].
//!
//! [`Core::ingress`] takes a packet read at virtual time `t`; [`Core::run_due`] processes every
//! event due by `t` in time order, handing departing packets to the caller's `emit`. The I/O loop
//! (`io.rs`) drives both from the wall clock; tests and the benchmark drive them directly.

use aqm::{DropReason, Dropped, Qdisc, Time};
use rustc_hash::FxHashMap;
use sim::monitor::{Counted, LinkMonitor};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::link::{Link, LinkConfig, Pool, Started};
use crate::packet::{self, Dir, EPkt, FlowKey, PROTO_TCP, PROTO_UDP, TCP_SYN};
pub use crate::report::{BottleneckReport, Counts, FlowCtr, FlowReport, Report};

pub const BNECK: usize = 0;
pub const REVERSE: usize = 1;

/// One host pair: the port of its sender's namespace and its four access links' parameters.
#[derive(Debug, Clone)]
pub struct PairConfig {
    pub port: u16,
    pub sender_rate_bps: f64,
    pub sender_delay: Time,
    pub receiver_rate_bps: f64,
    pub receiver_delay: Time,
}

/// Everything the forwarder needs: the bottleneck and reverse links, the host pairs, the run's
/// timing and the addressing plan.
#[derive(Debug, Clone)]
pub struct Config {
    pub bottleneck: LinkConfig,
    pub reverse: LinkConfig,
    /// DropTail buffer of every access link, in packets.
    pub access_limit: u64,
    pub pairs: Vec<PairConfig>,
    pub sender_base: u32,
    pub receiver_base: u32,
    /// The port of the receivers' namespace.
    pub receiver_port: u16,
    pub duration: Time,
    pub warmup: Time,
    pub sample_interval: Time,
    pub queue_snapshots: bool,
    pub seed: u64,
    /// Largest packet a port can deliver (its MTU), the size of the packet buffers.
    pub max_packet: usize,
}

/// Sequence-number state of a TCP flow, as seen on the wire.
#[derive(Debug, Clone, Copy, Default)]
struct TcpTrack {
    sent: bool,
    /// One past the highest sequence number sent.
    snd_max: u32,
    delivered: bool,
    /// One past the highest sequence number delivered.
    rcv_max: u32,
}

/// `a < b` in sequence space (RFC 9293 §3.4).
#[inline]
fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// The forwarder's state.
pub struct Core {
    cfg: Config,
    links: Vec<Link>,
    /// Pending link events: `[internal, external]`. A link whose delay line ends in a port (the
    /// last hop of a path) is external: its events are writes, due at their exact instants; the
    /// other links' events may be processed a little later in wall time (never out of order).
    heaps: [BinaryHeap<Reverse<(Time, u32)>>; 2],
    external: Vec<bool>,
    /// The shortest delay of a last-hop link: internal events handled this late still lead to
    /// writes on time.
    slack_cap: Time,
    sched: Vec<Time>,
    pool: Pool,
    flow_ids: FxHashMap<FlowKey, u32>,
    flows: Vec<(FlowKey, Time)>,
    ctr: Vec<FlowCtr>,
    tcp: Vec<TcpTrack>,
    /// The flows' counters at the start of the measurement window.
    base: Option<Vec<FlowCtr>>,
    /// The measured links' monitors (`Link::monitor` indexes them): the bottleneck's.
    monitors: Vec<LinkMonitor>,
    next_sample: Time,
    snaps: Option<sim::monitor::Snapshots>,
    scratch: Vec<Dropped<EPkt>>,
    counts: Counts,
}

/// Where a packet goes after its last link: `emit(port, bytes, t)` writes it out; `t` is the
/// virtual instant it reaches the end of its path.
pub type Emit<'a> = dyn FnMut(u16, &[u8], Time) + 'a;

impl Core {
    pub fn new(cfg: Config) -> Self {
        let mut links =
            vec![Link::new(&cfg.bottleneck, cfg.seed, "bottleneck"), Link::new(&cfg.reverse, cfg.seed, "reverse")];
        let access = |rate: f64, delay: Time| LinkConfig {
            rate_bps: rate,
            delay,
            limit: aqm::Limit::packets(cfg.access_limit),
            aqm: aqm::AqmConfig::DropTail(Default::default()),
            loss_rate: 0.0,
        };
        for p in &cfg.pairs {
            let s = access(p.sender_rate_bps, p.sender_delay);
            let r = access(p.receiver_rate_bps, p.receiver_delay);
            // sender access both ways, then receiver access both ways
            links.push(Link::new(&s, cfg.seed, "access"));
            links.push(Link::new(&s, cfg.seed, "access"));
            links.push(Link::new(&r, cfg.seed, "access"));
            links.push(Link::new(&r, cfg.seed, "access"));
        }
        let n = links.len();
        // the bottleneck is measured, as the simulator's dumbbell measures it
        links[BNECK].monitor = Some(0);
        let monitors = vec![LinkMonitor::new(BNECK as u32, cfg.warmup, 0, links[BNECK].q.disc.state_names())];
        let mut core = Core {
            pool: Pool::new(cfg.max_packet.max(64)),
            snaps: cfg.queue_snapshots.then(Default::default),
            links,
            heaps: [BinaryHeap::new(), BinaryHeap::new()],
            external: (0..n).map(|l| l >= 2 && matches!((l - 2) % 4, 1 | 2)).collect(),
            slack_cap: cfg.pairs.iter().map(|p| p.sender_delay.min(p.receiver_delay)).min().unwrap_or(0),
            sched: vec![Time::MAX; n],
            flow_ids: FxHashMap::default(),
            flows: Vec::new(),
            ctr: Vec::new(),
            tcp: Vec::new(),
            base: None,
            monitors,
            next_sample: 0,
            scratch: Vec::with_capacity(16),
            counts: Counts::default(),
            cfg,
        };
        for l in 0..2 {
            core.reschedule(l);
        }
        core
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// A buffer to read a packet into (give it back with [`Core::ingress`] or [`Core::release`]).
    #[inline]
    pub fn buffer(&mut self) -> (u32, &mut [u8]) {
        let s = self.pool.alloc();
        (s, self.pool.buf_mut(s))
    }

    /// Return a buffer that received no packet.
    #[inline]
    pub fn release(&mut self, slot: u32) {
        self.pool.free(slot);
    }

    #[inline]
    fn access(pair: usize) -> [usize; 4] {
        let b = 2 + 4 * pair;
        [b, b + 1, b + 2, b + 3]
    }

    #[inline]
    fn pair_of(&self, addr: u32, base: u32) -> Option<usize> {
        let i = addr.wrapping_sub(base).wrapping_sub(1) as usize;
        (i < self.cfg.pairs.len()).then_some(i)
    }

    /// When the caller must wake up next: the next write exactly, anything else (links inside the
    /// path, samples, the warm-up snapshot) up to `slack` ns late, but never later than the
    /// shortest last-hop delay, so that no write is delayed by it. Waking less often is what lets
    /// one thread forward tens of thousands of packets per second; the virtual-time order of
    /// events is kept whatever the slack ([`Core::run_due`] runs before every arrival).
    pub fn next_deadline(&mut self, slack: Time) -> Time {
        let warm = if self.base.is_none() && self.cfg.warmup > 0 { self.cfg.warmup } else { Time::MAX };
        let internal = self.top_of(0).min(self.next_sample).min(warm);
        self.top_of(1).min(internal.saturating_add(slack.min(self.slack_cap)))
    }

    /// The earliest valid entry of heap `h` (stale entries are discarded).
    #[inline]
    fn top_of(&mut self, h: usize) -> Time {
        while let Some(Reverse((t, l))) = self.heaps[h].peek().copied() {
            if self.sched[l as usize] == t {
                return t;
            }
            self.heaps[h].pop();
        }
        Time::MAX
    }

    /// The earliest link event, and its heap.
    #[inline]
    fn top(&mut self) -> (Time, usize) {
        let (a, b) = (self.top_of(0), self.top_of(1));
        if b < a {
            (b, 1)
        } else {
            (a, 0)
        }
    }

    #[inline]
    fn reschedule(&mut self, l: usize) {
        let n = self.links[l].next_event();
        if n != self.sched[l] {
            self.sched[l] = n;
            if n < Time::MAX {
                self.heaps[self.external[l] as usize].push(Reverse((n, l as u32)));
            }
        }
    }

    /// Process everything due at or before `t` (and before the end of the run), in time order: at
    /// one instant the warm-up snapshot first, then link events, then the sample.
    pub fn run_due(&mut self, t: Time, emit: &mut Emit<'_>) {
        let t = t.min(self.cfg.duration.saturating_sub(1));
        loop {
            let (link_t, h) = self.top();
            if self.base.is_none() && self.cfg.warmup > 0 {
                let w = self.cfg.warmup;
                if w <= t && w <= link_t && w <= self.next_sample {
                    self.snapshot_warmup();
                    continue;
                }
            }
            if link_t <= t && link_t <= self.next_sample {
                let Reverse((lt, l)) = self.heaps[h].pop().expect("heap entry");
                self.sched[l as usize] = Time::MAX;
                self.process_link(l as usize, lt, emit);
                continue;
            }
            if self.next_sample <= t {
                self.sample();
                continue;
            }
            break;
        }
    }

    fn snapshot_warmup(&mut self) {
        self.base = Some(self.ctr.clone());
        for m in &mut self.monitors {
            let q = &self.links[m.link as usize].q;
            m.start_window(q.stats, q.len());
        }
    }

    /// One row of every measured link's time series (and its queue snapshot, in the window).
    fn sample(&mut self) {
        let t = self.next_sample;
        for i in 0..self.monitors.len() {
            let l = self.monitors[i].link as usize;
            self.advance_tx(l, t);
            self.monitors[i].series.sample(t, &self.links[l].q, self.links[l].rate);
        }
        if let Some(sn) = &mut self.snaps {
            if t >= self.cfg.warmup {
                for m in &self.monitors {
                    sn.record(t, m.link, &self.links[m.link as usize].q);
                }
                sn.count += 1;
            }
        }
        self.next_sample += self.cfg.sample_interval;
    }

    /// A packet of `len` bytes was read into `slot` from `port` at `t`. Call [`Core::run_due`]
    /// with `t` first.
    pub fn ingress(&mut self, port: u16, slot: u32, len: usize, t: Time) {
        self.counts.read += 1;
        self.pool.set_len(slot, len);
        let Some(h) = packet::parse(self.pool.packet(slot)) else {
            return self.unroutable(slot);
        };
        let Some((dir, key, route, out)) = self.route(port, &h) else {
            return self.unroutable(slot);
        };
        let flow = self.flow_id(key, t);
        let (data, retx, seq_end) = self.count_read(flow as usize, dir, &h);
        let (prio, in_profile) = packet::dscp_priority(h.dscp);
        let p = EPkt {
            slot,
            flow,
            size: h.len,
            route: [route[0] as u32, route[1] as u32, route[2] as u32],
            hop: 0,
            out,
            dir,
            prio,
            in_profile,
            ect: h.ecn != 0,
            ce: false,
            l4s: h.ecn & 1 != 0,
            data,
            retx,
            payload: h.payload,
            seq_end,
        };
        self.arrive(route[0], p, t);
    }

    /// A packet's direction, flow, links and the port it leaves by, from the port it came in by
    /// and its addresses; `None` for a packet outside the addressing plan.
    fn route(&self, port: u16, h: &packet::Header) -> Option<(Dir, FlowKey, [usize; 3], u16)> {
        if port == self.cfg.receiver_port {
            let b = self.pair_of(h.src, self.cfg.receiver_base)?;
            let a = self.pair_of(h.dst, self.cfg.sender_base)?;
            let key = FlowKey { proto: h.proto, s_addr: h.dst, s_port: h.dport, r_addr: h.src, r_port: h.sport };
            let route = [Self::access(b)[3], REVERSE, Self::access(a)[1]];
            Some((Dir::Rev, key, route, self.cfg.pairs[a].port))
        } else {
            let a = self.pair_of(h.src, self.cfg.sender_base)?;
            let b = self.pair_of(h.dst, self.cfg.receiver_base)?;
            if self.cfg.pairs[a].port != port {
                return None;
            }
            let key = FlowKey { proto: h.proto, s_addr: h.src, s_port: h.sport, r_addr: h.dst, r_port: h.dport };
            let route = [Self::access(a)[0], BNECK, Self::access(b)[2]];
            Some((Dir::Fwd, key, route, self.cfg.receiver_port))
        }
    }

    /// The index of flow `key`, a new one (first seen at `t`) if it has none yet.
    fn flow_id(&mut self, key: FlowKey, t: Time) -> u32 {
        if let Some(f) = self.flow_ids.get(&key) {
            return *f;
        }
        let f = self.flows.len() as u32;
        self.flow_ids.insert(key, f);
        self.flows.push((key, t));
        self.ctr.push(FlowCtr::default());
        self.tcp.push(TcpTrack::default());
        for m in &mut self.monitors {
            m.add_flow();
        }
        f
    }

    /// Count a packet read for flow `fi`: whether it carries data, whether it is a TCP
    /// retransmission, and (TCP) one past its last sequence number.
    fn count_read(&mut self, fi: usize, dir: Dir, h: &packet::Header) -> (bool, bool, u32) {
        let data = h.proto != PROTO_TCP || h.payload > 0;
        let (mut retx, mut seq_end) = (false, 0);
        if dir == Dir::Rev {
            self.ctr[fi].rev_pkts += 1;
            return (data, retx, seq_end);
        }
        if h.proto == PROTO_TCP {
            let tr = &mut self.tcp[fi];
            let syn = h.flags & TCP_SYN != 0;
            let start = h.seq.wrapping_add(syn as u32);
            seq_end = start.wrapping_add(h.payload);
            if !tr.sent {
                tr.sent = true;
                tr.snd_max = start;
            }
            retx = h.payload > 0 && seq_lt(start, tr.snd_max);
            if seq_lt(tr.snd_max, seq_end) {
                tr.snd_max = seq_end;
            }
        }
        if data {
            let c = &mut self.ctr[fi];
            c.pkts.packet_sent(retx);
            c.sent_bytes += h.len as u64;
        }
        (data, retx, seq_end)
    }

    fn unroutable(&mut self, slot: u32) {
        self.counts.unroutable += 1;
        self.pool.free(slot);
    }

    /// Link `l`'s queue changed at `t`: its monitor, if it is measured, takes the new length.
    #[inline]
    fn queue_changed(&mut self, l: usize, t: Time) {
        if let Some(m) = self.links[l].monitor {
            let q = &self.links[l].q;
            self.monitors[m as usize].queue.queue_changed(t, q.len(), q.bytes());
        }
    }

    /// A packet reaches link `l` at `t`.
    fn arrive(&mut self, l: usize, p: EPkt, t: Time) {
        if self.links[l].lost() {
            if let Some(m) = self.links[l].monitor {
                self.monitors[m as usize].lost += 1;
            }
            self.record_drop(Dropped { pkt: p, reason: DropReason::LinkLoss });
            return;
        }
        self.advance_tx(l, t);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let link = &mut self.links[l];
        link.enqueue(p, t, &mut scratch);
        let started = link.start_next(t, &mut scratch);
        for d in scratch.drain(..) {
            self.record_drop(d);
        }
        self.scratch = scratch;
        if let Some(s) = started {
            self.on_tx_start(l, s, t);
        }
        if let Some(m) = self.links[l].monitor {
            let q = &self.links[l].q;
            self.monitors[m as usize].arrived_as(Counted::Flow(p.flow), t, q.len(), q.bytes());
        }
        self.reschedule(l);
    }

    /// Let link `l`'s transmitter catch up to `t`: each transmission that ended by `t` frees it at
    /// its end, and the next waiting packet starts then (or the link goes idle). The end of a
    /// transmission is an event only while packets wait; otherwise it is applied here, lazily,
    /// before anything else happens to the link.
    fn advance_tx(&mut self, l: usize, t: Time) {
        while self.links[l].busy && self.links[l].busy_until <= t {
            let end = self.links[l].busy_until;
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            let link = &mut self.links[l];
            link.end_tx();
            let started = link.start_next(end, &mut scratch);
            if !link.busy {
                link.q.on_link_idle(end);
            }
            for d in scratch.drain(..) {
                self.record_drop(d);
            }
            self.scratch = scratch;
            if let Some(s) = started {
                self.on_tx_start(l, s, end);
            }
            // the queue as it is now, whatever the dequeue did (sent a packet, dropped some, or
            // found the queue empty), so the monitor's integral holds for any discipline
            self.queue_changed(l, end);
        }
    }

    /// Link `l`'s earliest event is due at `t`.
    fn process_link(&mut self, l: usize, t: Time, emit: &mut Emit<'_>) {
        self.advance_tx(l, t);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        if self.links[l].timer.is_some_and(|(_, at)| at <= t) {
            self.links[l].fire_timer(&mut scratch);
            for d in scratch.drain(..) {
                self.record_drop(d);
            }
            self.queue_changed(l, t);
        }
        self.scratch = scratch;
        while let Some((at, _)) = self.links[l].pipe.front() {
            if *at > t {
                break;
            }
            let (at, p) = self.links[l].pipe.pop_front().expect("pipe head");
            self.forward(p, at, emit);
        }
        self.reschedule(l);
    }

    /// A transmission started on link `l` at `t`.
    #[inline]
    fn on_tx_start(&mut self, l: usize, s: Started, t: Time) {
        let p = s.pkt;
        if p.ce {
            packet::set_ce(self.pool.packet_mut(p.slot));
        }
        if let Some(m) = self.links[l].monitor {
            let q = &self.links[l].q;
            self.monitors[m as usize].departed_as(Counted::Flow(p.flow), p.size, (t, s.enqueued), q.len(), q.bytes());
        }
    }

    /// A packet leaves the delay line of its current link at `t`: on to the next link of its
    /// path, or out by its port.
    fn forward(&mut self, mut p: EPkt, t: Time, emit: &mut Emit<'_>) {
        p.hop += 1;
        if (p.hop as usize) < p.route.len() {
            return self.arrive(p.route[p.hop as usize] as usize, p, t);
        }
        if p.dir == Dir::Fwd && p.data {
            self.count_delivered(&p);
        }
        self.counts.written += 1;
        emit(p.out, self.pool.packet(p.slot), t);
        self.pool.free(p.slot);
    }

    /// A data packet reaches its receiver: delivered, retransmitted or not, marked or not, and
    /// the new payload it brings.
    fn count_delivered(&mut self, p: &EPkt) {
        let fi = p.flow as usize;
        let ce = self.pool.packet(p.slot)[1] & 3 == 3;
        let c = &mut self.ctr[fi];
        c.pkts.packet_received(ce);
        c.delivered_bytes += p.size as u64;
        if p.retx {
            c.delivered_retx_bytes += p.size as u64;
        }
        let key = self.flows[fi].0;
        if key.proto == PROTO_TCP {
            let tr = &mut self.tcp[fi];
            let start = p.seq_end.wrapping_sub(p.payload);
            if !tr.delivered {
                tr.delivered = true;
                tr.rcv_max = start;
            }
            if seq_lt(tr.rcv_max, p.seq_end) {
                c.progress_bytes += p.seq_end.wrapping_sub(tr.rcv_max) as u64;
                tr.rcv_max = p.seq_end;
            }
        } else if key.proto == PROTO_UDP {
            c.progress_bytes += p.payload as u64;
        }
    }

    fn record_drop(&mut self, d: Dropped<EPkt>) {
        let c = &mut self.ctr[d.pkt.flow as usize];
        match d.pkt.dir {
            Dir::Fwd => c.pkts.packet_dropped(d.reason),
            Dir::Rev => c.pkts.ack_dropped(),
        }
        self.counts.dropped += 1;
        self.pool.free(d.pkt.slot);
    }

    /// Packets held by the links.
    pub fn in_flight(&self) -> u64 {
        self.links.iter().map(|l| l.in_flight() as u64).sum()
    }

    /// Packets read so far.
    pub fn counts(&self) -> Counts {
        Counts { in_flight: self.in_flight(), ..self.counts }
    }

    /// End the run at `duration`: process what is due before it, close the measurements, check
    /// packet conservation and every queue's accounting identities.
    pub fn finish(mut self, emit: &mut Emit<'_>) -> Result<Report, String> {
        let end = self.cfg.duration;
        self.run_due(end, emit);
        for m in &mut self.monitors {
            m.queue.finish(end);
        }
        let counts = self.counts();
        if counts.read != counts.written + counts.dropped + counts.unroutable + counts.in_flight {
            return Err(format!("packet conservation violated: {counts:?}"));
        }
        if self.pool.in_use() as u64 != counts.in_flight {
            return Err(format!(
                "{} packet buffers in use, {} packets in flight",
                self.pool.in_use(),
                counts.in_flight
            ));
        }
        for (i, l) in self.links.iter().enumerate() {
            l.q.stats.check(l.q.len() as u64).map_err(|e| format!("link {i}: {e}"))?;
        }
        let m = &self.monitors[self.links[BNECK].monitor.expect("the bottleneck is measured") as usize];
        if let Some(f) = m.saturated() {
            return Err(format!(
                "flow {f} had 2^32 - 1 packets or more at the bottleneck, as many as the monitor's 32-bit \
                 per-flow counts hold: shorten the run"
            ));
        }
        Ok(Report {
            flows: crate::report::flows(&self.flows, &self.ctr, self.base.as_deref(), m),
            bottleneck: crate::report::bottleneck(&self.links[BNECK], &self.cfg.bottleneck, m, (self.cfg.warmup, end)),
            series: m.series.clone(),
            snapshots: self.snaps,
            counts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::build;
    use aqm::Limit;

    const S: u32 = 0x0a01_0000; // 10.1.0.0
    const R: u32 = 0x0a02_0000; // 10.2.0.0

    fn cfg(aqm: aqm::AqmConfig, pairs: usize) -> Config {
        Config {
            bottleneck: LinkConfig { rate_bps: 8e6, delay: 10_000_000, limit: Limit::packets(20), aqm, loss_rate: 0.0 },
            reverse: LinkConfig {
                rate_bps: 8e6,
                delay: 10_000_000,
                limit: Limit::packets(1000),
                aqm: aqm::AqmConfig::DropTail(Default::default()),
                loss_rate: 0.0,
            },
            access_limit: 1000,
            pairs: (0..pairs)
                .map(|_| PairConfig {
                    port: 0,
                    sender_rate_bps: 80e6,
                    sender_delay: 1_000_000,
                    receiver_rate_bps: 80e6,
                    receiver_delay: 1_000_000,
                })
                .collect(),
            sender_base: S,
            receiver_base: R,
            receiver_port: 1,
            duration: 10_000_000_000,
            warmup: 0,
            sample_interval: 100_000_000,
            queue_snapshots: true,
            seed: 1,
            max_packet: 1500,
        }
    }

    fn feed(core: &mut Core, port: u16, bytes: &[u8], t: Time, out: &mut Vec<(u16, Time, Vec<u8>)>) {
        core.run_due(t, &mut |p, b, at| out.push((p, at, b.to_vec())));
        let (slot, buf) = core.buffer();
        buf[..bytes.len()].copy_from_slice(bytes);
        core.ingress(port, slot, bytes.len(), t);
    }

    /// One packet crosses the three forward links: 1 ms + 10 ms + 1 ms of delay plus three
    /// serialisations (1000 B: 0.1 ms at 80 Mb/s, 1 ms at 8 Mb/s, 0.1 ms).
    #[test]
    fn a_packet_takes_the_delays_and_serialisations_of_its_path() {
        let mut core = Core::new(cfg(aqm::AqmConfig::DropTail(Default::default()), 2));
        let mut out = Vec::new();
        let pkt = build(PROTO_UDP, S + 2, R + 1, 4000, 9, 1000, 0, 0, 0);
        feed(&mut core, 0, &pkt, 5_000_000, &mut out);
        core.run_due(1_000_000_000, &mut |p, b, at| out.push((p, at, b.to_vec())));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, 1);
        assert_eq!(out[0].1, 5_000_000 + 12_000_000 + 100_000 + 1_000_000 + 100_000);
        assert_eq!(out[0].2, pkt);
        // and an ACK back takes the reverse path to the sender's port
        let ack = build(PROTO_UDP, R + 1, S + 2, 9, 4000, 40, 0, 0, 0);
        feed(&mut core, 1, &ack, 100_000_000, &mut out);
        core.run_due(1_000_000_000, &mut |p, b, at| out.push((p, at, b.to_vec())));
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].0, 0);
        let r = core.finish(&mut |_, _, _| {}).unwrap();
        assert_eq!(r.flows.len(), 1);
        assert_eq!(r.flows[0].window.pkts.delivered_pkts, 1);
        assert_eq!(r.flows[0].window.rev_pkts, 1);
        assert_eq!(r.counts.written, 2);
    }

    #[test]
    fn packets_outside_the_plan_are_unroutable() {
        let mut core = Core::new(cfg(aqm::AqmConfig::DropTail(Default::default()), 1));
        let mut out = Vec::new();
        feed(&mut core, 0, &build(PROTO_UDP, S + 5, R + 1, 1, 2, 100, 0, 0, 0), 0, &mut out); // no pair 4
        feed(&mut core, 0, &build(PROTO_UDP, S + 1, 0x0808_0808, 1, 2, 100, 0, 0, 0), 0, &mut out);
        feed(&mut core, 0, &[0x60; 60], 0, &mut out);
        let r = core.finish(&mut |_, _, _| {}).unwrap();
        assert_eq!(r.counts.unroutable, 3);
        assert_eq!(r.counts.read, 3);
        assert!(r.flows.is_empty());
    }

    /// A UDP flood at twice the bottleneck rate keeps the link busy: the bottleneck transmits
    /// at its rate, the excess is dropped, and every count adds up.
    #[test]
    fn overload_fills_the_link_and_conserves_packets() {
        let mut core = Core::new(cfg(aqm::AqmConfig::DropTail(Default::default()), 3));
        let mut out = Vec::new();
        // 1000-byte packets every 0.5 ms from three senders (16 Mb/s) for 2 s
        let mut t = 0;
        let mut k = 0u32;
        while t < 2_000_000_000 {
            let pkt = build(PROTO_UDP, S + 1 + k % 3, R + 1, 4000 + (k % 3) as u16, 9, 1000, 0, 0, 0);
            feed(&mut core, 0, &pkt, t, &mut out);
            t += 500_000;
            k += 1;
        }
        let r = core.finish(&mut |_, _, _| {}).unwrap();
        let b = &r.bottleneck;
        // the link was busy without a gap from the first arrival until the last one plus the
        // 20 packets still queued then: 2 s + 20 ms of transmission
        let busy = b.window.stats.transmitted_bytes as f64 * 8.0 / 8e6;
        assert!((busy - 2.02).abs() < 0.0015, "busy {busy} s");
        assert!(b.window.stats.drops[DropReason::Overflow.index()] > 1900);
        assert_eq!(r.flows.len(), 3);
        let sent: u64 = r.flows.iter().map(|f| f.total.pkts.sent_pkts as u64).sum();
        assert_eq!(sent, k as u64);
        assert!(b.window.queue_max_pkts == 20);
        assert!(r.snapshots.unwrap().count == 100);
    }

    /// Retransmissions are recognised from sequence numbers, and TCP progress counts new bytes.
    #[test]
    fn tcp_retransmissions_and_progress() {
        let mut core = Core::new(cfg(aqm::AqmConfig::DropTail(Default::default()), 1));
        let mut out = Vec::new();
        for (i, seq) in [1000u32, 2000, 3000, 2000, 4000].iter().enumerate() {
            let p = build(PROTO_TCP, S + 1, R + 1, 5000, 9, 1040, 0, 0, *seq);
            feed(&mut core, 0, &p, i as Time * 10_000_000, &mut out);
        }
        let r = core.finish(&mut |_, _, _| {}).unwrap();
        let c = r.flows[0].total;
        assert_eq!((c.pkts.sent_pkts, c.pkts.retx_pkts, c.pkts.delivered_pkts), (5, 1, 5));
        // payload 1000 each: 4 distinct segments, [1000, 5000)
        assert_eq!(c.progress_bytes, 4000);
        assert_eq!(c.delivered_retx_bytes, 1040);
    }
}
