//! The simulation: a value that owns all its state (links, flows, event set, counters), so many
//! can run in one process. Build one from a validated [`Scenario`] and a seed, then [`Sim::run`].
//!
//! Topology (dumbbell, experiments.md §2): flow *i* has its own sender host S_i and receiver host
//! D_i. Data goes S_i→R1 (sender access), R1→R2 (bottleneck, with the scenario's AQM), R2→D_i
//! (receiver access); ACKs go back D_i→R2, R2→R1 (the reverse link), R1→S_i. Forwarding is by
//! per-flow paths (lists of link indices), so routers hold no tables and a packet carries only its
//! hop index.

use crate::event::{EventQueue, Kind};
use crate::link::Link;
use crate::measure::{jain, FlowCounters, LinkMeasure};
use crate::packet::{Packet, PktKind, F_IN_PROFILE, F_RETX};
use crate::results::{Column, Results, Table};
use crate::scenario::{GroupSpec, Scenario, StartSpec, TcpApp, Transport};
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::traffic::onoff::UdpSource;
use crate::traffic::short::ShortGen;
use crate::traffic::web::Session;
use crate::traffic::{bulk, web::WebSpec};
use aqm::rng::{name_hash, Rng};
use aqm::{DropReason, LinkInfo, Qdisc, Queue, QueueStats, Time, NS_PER_SEC};
use serde_json::{json, Map, Value};

/// Why a run did not produce results.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The progress callback asked to stop.
    Interrupted,
    /// An accounting identity failed: a bug, reported rather than hidden.
    Conservation(String),
    /// The scenario cannot be built (e.g. more entities than the engine can index).
    Build(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Interrupted => write!(f, "interrupted"),
            SimError::Conservation(m) => write!(f, "packet conservation violated: {m}"),
            SimError::Build(m) => write!(f, "{m}"),
        }
    }
}

enum App {
    Tcp { tx: Box<TcpSender>, rx: Box<TcpReceiver> },
    Udp(UdpSource),
}

/// Where a flow's paths start in `Sim::paths`: kept apart from `Flow` so that forwarding a packet
/// touches 12 bytes, not the flow's transport state.
#[derive(Clone, Copy)]
struct Route {
    fwd: u32,
    rev: u32,
    fwd_len: u8,
    rev_len: u8,
}

struct Flow {
    group: u32,
    /// Host pair the flow runs between.
    host: u32,
    start: Time,
    stop: Time,
    prio: u8,
    flags: u8,
    /// Web response connection: its session (u32::MAX otherwise).
    session: u32,
    /// Web response connection whose request has not reached the server yet.
    awaiting_request: bool,
    app: App,
}

/// A sender host S_i and a receiver host D_i with their four access links.
#[derive(Clone, Copy)]
struct Host {
    route: Route,
    rtt_prop: Time,
}

const NO_SESSION: u32 = u32::MAX;

// sizes for the resource estimate (crate::budget)
pub(crate) const FLOW_BYTES: u64 = std::mem::size_of::<Flow>() as u64;
pub(crate) const LINK_BYTES: u64 = std::mem::size_of::<Link>() as u64;
pub(crate) const TCP_BYTES: u64 = (std::mem::size_of::<TcpSender>() + std::mem::size_of::<TcpReceiver>()) as u64;

const NO_TIMER: Time = Time::MAX;
const BNECK: usize = 0;
const REVERSE: usize = 1;

/// A runnable simulation.
pub struct Sim {
    sc: Scenario,
    seed: u64,
    now: Time,
    ev: EventQueue,
    links: Vec<Link>,
    paths: Vec<u32>,
    routes: Vec<Route>,
    hosts: Vec<Host>,
    flows: Vec<Flow>,
    /// Short-connection generators (group index, generator, first host).
    shorts: Vec<(u32, ShortGen, u32)>,
    sessions: Vec<Session>,
    fseries: FlowSeries,
    ctr: Vec<FlowCounters>,
    base: Option<(Vec<FlowCounters>, QueueStats)>,
    timers: Vec<Time>,
    meas: LinkMeasure,
    scratch: Vec<Packet>,
    created: u64,
    delivered: u64,
    dropped: u64,
    events: u64,
    /// A short/web group opened more connections than the event set can index.
    too_many: bool,
    // time series
    ts: Series,
}

struct Series {
    time: Vec<f64>,
    qlen: Vec<f64>,
    qbytes: Vec<f64>,
    util: Vec<f64>,
    drops: Vec<f64>,
    state_names: &'static [&'static str],
    state: Vec<Vec<f64>>,
    last_tx_bytes: u64,
    last_drops: u64,
    last_t: Time,
    // queue snapshots (M10): time, position from the tail (0 = tail), queue length, flow
    snap_t: Vec<f64>,
    snap_pos: Vec<i64>,
    snap_len: Vec<i64>,
    snap_flow: Vec<i64>,
    snap_count: u64,
    /// Draws the Poisson snapshot instants (its own stream).
    snap_rng: Rng,
}

/// Per-flow time series (`simulation.flow_series_interval`): one row per active flow per sample.
#[derive(Default)]
struct FlowSeries {
    time: Vec<f64>,
    flow: Vec<i64>,
    thr: Vec<f64>,
    good: Vec<f64>,
    cwnd: Vec<f64>,
    last: Vec<(u64, u64)>,
    last_t: Time,
}

impl Sim {
    /// Build the dumbbell of `sc`. `seed` replaces the scenario's seed when given.
    pub fn new(sc: Scenario, seed: Option<u64>) -> Result<Sim, SimError> {
        let seed = seed.unwrap_or(sc.seed);
        let n_hosts = sc.n_hosts();
        let n = sc.n_static_flows();
        let n_links = 2 + 4 * n_hosts;
        if n_links as u64 > crate::event::MAX_INDEX as u64 || (2 * n_hosts) as u64 > crate::event::MAX_INDEX as u64 {
            return Err(SimError::Build(format!("{n_hosts} flows exceed what the event set can index")));
        }
        let mut links = Vec::with_capacity(n_links);
        let mk = |spec: &crate::scenario::LinkSpec, name: &str| {
            let disc = spec.aqm.build(LinkInfo { rate_bps: spec.rate_bps }, spec.limit);
            let q = Queue::new(disc, Rng::stream(seed, "aqm", name_hash(name)));
            let loss_rng = (spec.loss_rate > 0.0).then(|| Rng::stream(seed, "loss", name_hash(name)));
            Link::with_aqm(spec.rate_bps, spec.delay, q, spec.loss_rate, loss_rng)
        };
        links.push(mk(&sc.bottleneck, "bottleneck"));
        let rev = &sc.reverse;
        let rev_simple = matches!(rev.aqm, aqm::AqmConfig::DropTail(_))
            && rev.loss_rate == 0.0
            && rev.limit.unit == aqm::QueueUnit::Packets;
        links.push(if rev_simple {
            Link::simple(rev.rate_bps, rev.delay, rev.limit.value.min(u32::MAX as u64) as u32)
        } else {
            mk(rev, "reverse")
        });
        let access_limit = sc.access_limit.min(u32::MAX as u64) as u32;
        let access = |rate: f64, delay: Time| Link::simple(rate, delay, access_limit);
        let mut hosts = Vec::with_capacity(n_hosts);
        let mut flows = Vec::with_capacity(n);
        let mut routes = Vec::with_capacity(n);
        let mut paths = Vec::with_capacity(6 * n_hosts);
        let mut shorts = Vec::new();
        let mut sessions = Vec::new();
        let mut ev = EventQueue::with_capacity(4 * n + 16);
        for (gi, g) in sc.groups.iter().enumerate() {
            let first_host = hosts.len() as u32;
            for i in 0..g.count as usize {
                let s_rate = g.sender_rate.get(i).0;
                let s_delay = g.sender_delay.get(i).0;
                let r_rate = g.receiver_rate.get(i).0;
                let r_delay = g.receiver_delay.get(i).0;
                let base = links.len() as u32;
                links.push(access(s_rate, s_delay)); // S->R1
                links.push(access(s_rate, s_delay)); // R1->S
                links.push(access(r_rate, r_delay)); // R2->D
                links.push(access(r_rate, r_delay)); // D->R2
                let fwd = paths.len() as u32;
                paths.extend_from_slice(&[base, BNECK as u32, base + 2]);
                let rev = paths.len() as u32;
                paths.extend_from_slice(&[base + 3, REVERSE as u32, base + 1]);
                let rtt_prop =
                    crate::time::sum(&[s_delay, s_delay, r_delay, r_delay, sc.bottleneck.delay, sc.reverse.delay]);
                hosts.push(Host { route: Route { fwd, rev, fwd_len: 3, rev_len: 3 }, rtt_prop });
            }
            let stop = g.stop.unwrap_or(Time::MAX);
            let flags = if g.in_profile { F_IN_PROFILE } else { 0 };
            match &g.transport {
                Transport::Tcp { app: TcpApp::Short(spec), .. } => {
                    // arrivals from the group's start (the first after one inter-arrival time)
                    let rng = Rng::stream(seed, &format!("arrivals:{}", g.name), 0);
                    let mut gen = ShortGen::new(*spec, g.count, rng);
                    let from = match g.start {
                        StartSpec::At(t) => t,
                        StartSpec::Uniform(lo, _) => lo,
                    };
                    let t = from.saturating_add(gen.gap());
                    if t < sc.duration && t < stop {
                        ev.push(t, Kind::Arrive, shorts.len() as u32);
                    }
                    shorts.push((gi as u32, gen, first_host));
                }
                Transport::Tcp { app: TcpApp::Web(_), .. } => {
                    for i in 0..g.count {
                        let mut rng = Rng::stream(seed, &format!("flow:{}", g.name), i as u64);
                        let start = start_time(g.start, &mut rng);
                        if start < sc.duration && start < stop {
                            ev.push(start, Kind::Session, sessions.len() as u32);
                        }
                        sessions.push(Session::new(first_host + i, gi as u32, rng));
                    }
                }
                _ => {
                    for i in 0..g.count {
                        let fid = flows.len() as u32;
                        let mut rng = Rng::stream(seed, &format!("flow:{}", g.name), i as u64);
                        let start = start_time(g.start, &mut rng);
                        let app = match &g.transport {
                            Transport::Tcp { cfg, app: TcpApp::Bulk { size } } => {
                                let limit = bulk::segments(*size, cfg.mss);
                                tcp_app(cfg, fid, g.priority, flags, limit)
                            }
                            Transport::Udp { cbr, onoff } => {
                                let onoff =
                                    onoff.map(|o| (o, Rng::stream(seed, &format!("onoff:{}", g.name), i as u64)));
                                let mut src = UdpSource::new(*cbr, onoff);
                                src.set_horizon(stop.min(sc.duration));
                                App::Udp(src)
                            }
                            Transport::Tcp { .. } => unreachable!("dynamic TCP apps handled above"),
                        };
                        if start < sc.duration {
                            ev.push(start, Kind::Start, fid);
                            if stop < sc.duration {
                                ev.push(stop, Kind::Stop, fid);
                            }
                        }
                        let host = first_host + i;
                        routes.push(hosts[host as usize].route);
                        flows.push(Flow {
                            group: gi as u32,
                            host,
                            start,
                            stop,
                            prio: g.priority,
                            flags,
                            session: NO_SESSION,
                            awaiting_request: false,
                            app,
                        });
                    }
                }
            }
        }
        if let Some(iv) = sc.flow_series_interval {
            if iv < sc.duration {
                ev.push(iv, Kind::FlowSample, 0);
            }
        }
        if sc.warmup > 0 {
            ev.push(sc.warmup, Kind::Warmup, 0);
        }
        for (l, link) in links.iter().enumerate() {
            if let Some(period) = link.aqm.as_ref().and_then(|a| a.queue.disc.timer_period()) {
                if period == 0 {
                    return Err(SimError::Build(format!("link {l}: the AQM's timer period is zero")));
                }
                ev.push(period, Kind::AqmTimer, l as u32);
            }
        }
        ev.push(0, Kind::Sample, 0);
        let state_names = links[BNECK].aqm.as_ref().expect("bottleneck has a queue").queue.disc.state_names();
        let mut ts = Series {
            time: Vec::new(),
            qlen: Vec::new(),
            qbytes: Vec::new(),
            util: Vec::new(),
            drops: Vec::new(),
            state_names,
            state: vec![Vec::new(); state_names.len()],
            last_tx_bytes: 0,
            last_drops: 0,
            last_t: 0,
            snap_t: Vec::new(),
            snap_pos: Vec::new(),
            snap_len: Vec::new(),
            snap_flow: Vec::new(),
            snap_count: 0,
            snap_rng: Rng::stream(seed, "snapshots", 0),
        };
        if sc.queue_snapshots && sc.snapshot_poisson {
            let first = sc.warmup + exp_gap(&mut ts.snap_rng, sc.sample_interval);
            if first < sc.duration {
                ev.push(first, Kind::Snapshot, 0);
            }
        }
        Ok(Sim {
            meas: LinkMeasure::new(sc.warmup),
            seed,
            now: 0,
            ev,
            links,
            paths,
            routes,
            hosts,
            shorts,
            sessions,
            fseries: FlowSeries::default(),
            ctr: vec![FlowCounters::default(); n],
            base: None,
            timers: vec![NO_TIMER; 2 * n],
            scratch: Vec::with_capacity(64),
            created: 0,
            delivered: 0,
            dropped: 0,
            events: 0,
            too_many: false,
            flows,
            ts,
            sc,
        })
    }

    /// Run to the end. `progress(sim_seconds)` is called every 65,536 events; returning `false`
    /// stops the run with [`SimError::Interrupted`].
    pub fn run(mut self, progress: &mut dyn FnMut(f64) -> bool) -> Result<Results, SimError> {
        let end = self.sc.duration;
        while let Some(t) = self.ev.peek_time() {
            if t >= end {
                break;
            }
            let (t, kind, idx) = self.ev.pop().expect("peeked");
            self.now = t;
            self.events += 1;
            match kind {
                Kind::Link => self.on_link_event(idx as usize),
                Kind::AqmTimer => self.on_aqm_timer(idx as usize),
                Kind::Timer => self.on_timer(idx as usize),
                Kind::Send => self.on_udp_send(idx as usize),
                Kind::Arrive => self.on_arrive(idx as usize),
                Kind::Session => self.on_session(idx as usize),
                Kind::FlowSample => self.on_flow_sample(),
                Kind::Start => self.on_start(idx as usize),
                Kind::Stop => self.on_stop(idx as usize),
                Kind::Sample => self.on_sample(),
                Kind::Snapshot => self.on_snapshot(),
                Kind::Warmup => self.on_warmup(),
            }
            if self.events & 0xFFFF == 0 && !progress(t as f64 / NS_PER_SEC as f64) {
                return Err(SimError::Interrupted);
            }
            if self.too_many {
                return Err(SimError::Build(format!(
                    "more than {} connections: too many for one run (lower arrival_rate, count or duration)",
                    crate::event::MAX_INDEX / 2
                )));
            }
        }
        self.now = end;
        // transmissions starting before `end` belong to the window [warmup, end)
        self.advance(BNECK, end - 1);
        self.meas.finish(end);
        self.check_conservation()?;
        Ok(self.results())
    }

    // ------------------------------------------------------------------ links

    fn on_link_event(&mut self, l: usize) {
        let now = self.now;
        self.links[l].pending = false;
        loop {
            let link = &mut self.links[l];
            match link.pipe.front() {
                Some(&(a, _)) if a <= now => {
                    let (_, pkt) = link.pipe.pop_front().expect("front");
                    self.forward(pkt);
                }
                _ => break,
            }
        }
        self.advance(l, now);
        self.schedule_link(l);
    }

    /// An AQM's periodic timer: bring the link up to date, run the timer, re-arm it.
    fn on_aqm_timer(&mut self, l: usize) {
        let now = self.now;
        self.advance(l, now);
        let a = self.links[l].aqm.as_mut().expect("timer on an AQM link");
        a.queue.on_timer(now);
        let period = a.queue.disc.timer_period();
        for i in 0..a.queue.drops().len() {
            let d = self.links[l].aqm.as_ref().expect("aqm").queue.drops()[i];
            self.record_drop(&d.pkt, d.reason);
        }
        if l == BNECK {
            let q = self.bq();
            let (n, b) = (q.len(), q.bytes());
            self.meas.queue_changed(now, n, b);
        }
        if let Some(p) = period {
            self.ev.push(now.saturating_add(p), Kind::AqmTimer, l as u32);
        }
    }

    #[inline]
    fn schedule_link(&mut self, l: usize) {
        let link = &mut self.links[l];
        if !link.pending {
            if let Some(&(a, _)) = link.pipe.front() {
                link.pending = true;
                self.ev.push(a, Kind::Link, l as u32);
            }
        }
    }

    /// Start every transmission due by `t` (see the module docs of `link`).
    fn advance(&mut self, l: usize, t: Time) {
        loop {
            let link = &mut self.links[l];
            if link.free_at > t {
                break;
            }
            let start = link.free_at;
            let Some(a) = link.aqm.as_mut() else { return };
            let Some((pkt, enq)) = a.queue.dequeue(start) else { break };
            for i in 0..a.queue.drops().len() {
                let d = self.links[l].aqm.as_ref().expect("aqm").queue.drops()[i];
                self.record_drop(&d.pkt, d.reason);
            }
            let link = &mut self.links[l];
            let a = link.aqm.as_mut().expect("aqm");
            a.idle_reported = false;
            let (n, b) = (a.queue.len(), a.queue.bytes());
            link.free_at = start.saturating_add(link.tx_time(pkt.size));
            let arrive = link.free_at.saturating_add(link.delay);
            link.pipe.push_back((arrive, pkt));
            if l == BNECK {
                self.meas.departed(start, start - enq);
                self.meas.queue_changed(start, n, b);
                let c = &mut self.ctr[pkt.flow as usize];
                c.bneck_tx_pkts += 1;
                c.bneck_tx_bytes += pkt.size as u64;
            }
            self.schedule_link(l);
        }
        let link = &mut self.links[l];
        let at = link.free_at;
        if let Some(a) = link.aqm.as_mut() {
            if !a.idle_reported && at <= t && a.queue.is_empty() {
                a.idle_reported = true;
                a.queue.on_link_idle(at);
            }
        }
    }

    fn link_arrive(&mut self, l: usize, pkt: Packet) {
        let now = self.now;
        let link = &mut self.links[l];
        let Some(a) = link.aqm.as_mut() else {
            if link.simple_arrive(pkt, now) {
                self.schedule_link(l);
            } else {
                self.record_drop(&pkt, DropReason::Overflow);
            }
            return;
        };
        if a.loss_rate > 0.0 {
            let rng = a.loss_rng.as_mut().expect("loss stream");
            if rng.bernoulli(a.loss_rate) {
                self.record_drop(&pkt, DropReason::LinkLoss);
                return;
            }
        }
        self.advance(l, now);
        let a = self.links[l].aqm.as_mut().expect("aqm");
        let queued = a.queue.enqueue(pkt, now);
        if !queued && a.queue.is_empty() && self.links[l].free_at <= now {
            // The arrival was dropped and the link stays idle: a new idle period starts now, as
            // in ns-2, whose link asks the queue for a packet after every arrival. Without this,
            // an AQM whose average is above its hard threshold would drop every later arrival and
            // never see the idle time that lets the average decay (the spec's §1.4 rule alone
            // deadlocks RED there).
            self.links[l].aqm.as_mut().expect("aqm").idle_reported = false;
        }
        let a = self.links[l].aqm.as_mut().expect("aqm");
        for i in 0..a.queue.drops().len() {
            let d = self.links[l].aqm.as_ref().expect("aqm").queue.drops()[i];
            self.record_drop(&d.pkt, d.reason);
        }
        let link = &mut self.links[l];
        if l == BNECK {
            let q = &link.aqm.as_ref().expect("aqm").queue;
            self.meas.queue_changed(now, q.len(), q.bytes());
            self.ctr[pkt.flow as usize].bneck_arrivals += 1;
        }
        if link.free_at < now {
            link.free_at = now;
        }
        self.advance(l, now);
    }

    #[inline]
    fn record_drop(&mut self, pkt: &Packet, reason: DropReason) {
        self.dropped += 1;
        let c = &mut self.ctr[pkt.flow as usize];
        match pkt.kind {
            PktKind::Ack => c.ack_drops += 1,
            PktKind::Request => {
                // a lost web request is sent again after the initial RTO, as a lost SYN would be
                c.ack_drops += 1;
                if let App::Tcp { tx, .. } = &self.flows[pkt.flow as usize].app {
                    let retry = self.now.saturating_add(tx.cfg.initial_rto);
                    if retry < self.sc.duration {
                        self.ev.push(retry, Kind::Start, pkt.flow);
                    }
                }
            }
            _ => c.drops[reason.index()] += 1,
        }
    }

    /// A packet reached the far end of a link: on to the next link of its path, or to its host.
    #[inline]
    fn forward(&mut self, mut pkt: Packet) {
        pkt.hop += 1;
        let f = &self.routes[pkt.flow as usize];
        let (start, len) = if is_reverse(pkt.kind) { (f.rev, f.rev_len) } else { (f.fwd, f.fwd_len) };
        if pkt.hop < len {
            let next = self.paths[(start + pkt.hop as u32) as usize] as usize;
            self.link_arrive(next, pkt);
        } else {
            self.delivered += 1;
            self.endpoint(pkt);
        }
    }

    /// A host sends `pkt` (first hop of its path).
    #[inline]
    fn inject(&mut self, pkt: Packet) {
        self.created += 1;
        let f = &self.routes[pkt.flow as usize];
        let first = if is_reverse(pkt.kind) { self.paths[f.rev as usize] } else { self.paths[f.fwd as usize] };
        self.link_arrive(first as usize, pkt);
    }

    fn inject_scratch(&mut self, mut out: Vec<Packet>) {
        for p in out.drain(..) {
            self.inject(p);
        }
        self.scratch = out;
    }

    // ------------------------------------------------------------------ hosts

    fn endpoint(&mut self, pkt: Packet) {
        let fi = pkt.flow as usize;
        let now = self.now;
        match pkt.kind {
            PktKind::Data => {
                let c = &mut self.ctr[fi];
                if pkt.flags & F_RETX != 0 {
                    c.delivered_retx_bytes += pkt.size as u64;
                }
                let App::Tcp { rx, .. } = &mut self.flows[fi].app else { return };
                if rx.on_data(&pkt, now, c) {
                    let mut ack = rx.ack();
                    ack.flow = pkt.flow;
                    c.acks_sent += 1;
                    self.inject(ack);
                }
                self.sync_timer(fi, 1);
            }
            PktKind::Ack => {
                let mut out = std::mem::take(&mut self.scratch);
                let mut completed = false;
                if let App::Tcp { tx, rx } = &mut self.flows[fi].app {
                    let blocks = rx.sack_blocks(pkt.aux).unwrap_or_default();
                    let was = tx.completed_at.is_some();
                    tx.on_ack(pkt.seq, pkt.flags, pkt.sent, blocks.as_slice(), now, &mut out, &mut self.ctr[fi]);
                    completed = !was && tx.completed_at.is_some();
                }
                self.inject_scratch(out);
                self.sync_timer(fi, 0);
                if completed {
                    self.on_completed(fi);
                }
            }
            PktKind::Request => {
                // the web request reached the server: the response connection opens
                let f = &mut self.flows[fi];
                if f.awaiting_request {
                    f.awaiting_request = false;
                    self.open_tcp(fi);
                }
            }
            PktKind::Udp => {
                let c = &mut self.ctr[fi];
                c.delivered_pkts += 1;
                c.delivered_bytes += pkt.size as u64;
                c.unique_pkts += 1;
                c.unique_bytes += pkt.size as u64;
                c.max_seq_rcvd = c.max_seq_rcvd.max(pkt.seq as u64 + 1);
            }
        }
    }

    /// Make sure timer `slot` (0 = RTO, 1 = delayed ACK) of flow `fi` has an event no later than
    /// its deadline. Re-arming to a later deadline touches nothing: the earlier event, when it
    /// fires, finds the deadline moved and re-schedules itself.
    #[inline]
    fn sync_timer(&mut self, fi: usize, slot: usize) {
        let App::Tcp { tx, rx } = &self.flows[fi].app else { return };
        let deadline = if slot == 0 { tx.rto_deadline } else { rx.delack_deadline };
        let k = 2 * fi + slot;
        if deadline != 0 && deadline < self.timers[k] {
            self.timers[k] = deadline;
            self.ev.push(deadline, Kind::Timer, k as u32);
        }
    }

    fn on_timer(&mut self, k: usize) {
        let now = self.now;
        if self.timers[k] != now {
            return; // superseded by an earlier event for the same timer
        }
        self.timers[k] = NO_TIMER;
        let (fi, slot) = (k / 2, k % 2);
        let App::Tcp { tx, rx } = &mut self.flows[fi].app else { return };
        let deadline = if slot == 0 { tx.rto_deadline } else { rx.delack_deadline };
        if deadline == 0 {
            return;
        }
        if deadline > now {
            self.sync_timer(fi, slot);
            return;
        }
        if slot == 0 {
            let mut out = std::mem::take(&mut self.scratch);
            tx.on_timeout(now, &mut out, &mut self.ctr[fi]);
            self.inject_scratch(out);
        } else {
            let mut ack = rx.ack();
            ack.flow = fi as u32;
            self.ctr[fi].acks_sent += 1;
            self.inject(ack);
        }
        self.sync_timer(fi, slot);
    }

    /// A TCP connection's sender starts sending.
    fn open_tcp(&mut self, fi: usize) {
        let now = self.now;
        let App::Tcp { tx, .. } = &mut self.flows[fi].app else { return };
        let mut out = std::mem::take(&mut self.scratch);
        tx.start(now, &mut out, &mut self.ctr[fi]);
        self.inject_scratch(out);
        self.sync_timer(fi, 0);
    }

    fn on_start(&mut self, fi: usize) {
        let now = self.now;
        let (prio, group) = (self.flows[fi].prio, self.flows[fi].group);
        let f = &mut self.flows[fi];
        match &mut f.app {
            App::Tcp { .. } if f.session != NO_SESSION => {
                // a web response connection: the client sends its request first (again, if it
                // was lost)
                if !f.awaiting_request {
                    return;
                }
                let spec = self.web_spec(group);
                let req = Packet {
                    sent: now,
                    flow: fi as u32,
                    seq: 0,
                    size: spec.request_size,
                    kind: PktKind::Request,
                    hop: 0,
                    prio,
                    flags: 0,
                    aux: 0,
                };
                self.inject(req);
            }
            App::Tcp { .. } => self.open_tcp(fi),
            App::Udp(src) => {
                let t = src.start(now);
                if t == now {
                    self.on_udp_send(fi);
                } else if t < f.stop && t < self.sc.duration {
                    self.ev.push(t, Kind::Send, fi as u32);
                }
            }
        }
    }

    fn on_stop(&mut self, fi: usize) {
        if let App::Tcp { tx, .. } = &mut self.flows[fi].app {
            tx.stop_app();
            if tx.rto_deadline == 0 && tx.completed_at.is_none() && tx.snd_una() > 0 {
                // everything sent is acknowledged: the connection is done
                tx.completed_at = Some(self.now);
                self.on_completed(fi);
            }
        }
    }

    /// Emit the next UDP packet and schedule the one after (CBR, or ON/OFF).
    fn on_udp_send(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let (stop, prio, flags) = (f.stop, f.prio, f.flags);
        let App::Udp(src) = &mut f.app else { return };
        if src.searching() {
            // an ON/OFF source still looking for an ON period long enough for a packet
            let next = src.resume(now);
            if next < stop && next < self.sc.duration {
                self.ev.push(next, Kind::Send, fi as u32);
            }
            return;
        }
        let size = src.cbr.size;
        let pkt =
            Packet { sent: now, flow: fi as u32, seq: src.seq, size, kind: PktKind::Udp, hop: 0, prio, flags, aux: 0 };
        let next = src.advance();
        let c = &mut self.ctr[fi];
        c.sent_pkts += 1;
        c.sent_bytes += size as u64;
        self.inject(pkt);
        if next < stop && next < self.sc.duration {
            self.ev.push(next, Kind::Send, fi as u32);
        }
    }

    /// Add a TCP connection on `host` (a short connection or a web response): a new flow id.
    fn new_connection(&mut self, group: u32, host: u32, limit: u32, stop: Time, session: u32) -> Option<usize> {
        if 2 * self.flows.len() + 1 > crate::event::MAX_INDEX as usize {
            // more connections than the event set can index: the run stops with an error
            self.too_many = true;
            return None;
        }
        let g = &self.sc.groups[group as usize];
        let Transport::Tcp { cfg, .. } = &g.transport else { unreachable!("connections are TCP") };
        let fid = self.flows.len();
        let flags = if g.in_profile { F_IN_PROFILE } else { 0 };
        let app = tcp_app(cfg, fid as u32, g.priority, flags, limit);
        self.flows.push(Flow {
            group,
            host,
            start: self.now,
            stop,
            prio: g.priority,
            flags,
            session,
            awaiting_request: session != NO_SESSION,
            app,
        });
        self.routes.push(self.hosts[host as usize].route);
        self.ctr.push(FlowCounters::default());
        self.timers.extend_from_slice(&[NO_TIMER, NO_TIMER]);
        Some(fid)
    }

    /// A short-connection group's next arrival.
    fn on_arrive(&mut self, k: usize) {
        let now = self.now;
        let (group, gen, first_host) = &mut self.shorts[k];
        let group = *group;
        let conn = gen.conn();
        let host = *first_host + conn.host;
        let gap = gen.gap();
        let gstop = self.sc.groups[group as usize].stop.unwrap_or(Time::MAX);
        let Transport::Tcp { cfg, .. } = &self.sc.groups[group as usize].transport else { return };
        let limit = bulk::segments(conn.bytes, cfg.mss);
        // a connection drawn with a zero duration stops 1 ns after it opens (its Stop event cannot
        // come before this Arrive event at the same instant)
        let stop = conn.duration.map_or(Time::MAX, |d| now.saturating_add(d.max(1)));
        let Some(fid) = self.new_connection(group, host, limit, stop, NO_SESSION) else { return };
        self.open_tcp(fid);
        if stop < self.sc.duration {
            self.ev.push(stop, Kind::Stop, fid as u32);
        }
        let next = now.saturating_add(gap);
        if next < self.sc.duration && next < gstop {
            self.ev.push(next, Kind::Arrive, k as u32);
        }
    }

    fn web_spec(&self, group: u32) -> WebSpec {
        match &self.sc.groups[group as usize].transport {
            Transport::Tcp { app: TcpApp::Web(w), .. } => *w,
            _ => unreachable!("a session belongs to a web group"),
        }
    }

    /// A web session sends its next request: a new response connection.
    fn on_session(&mut self, k: usize) {
        let group = self.sessions[k].group;
        let spec = self.web_spec(group);
        let g = &self.sc.groups[group as usize];
        if self.now >= g.stop.unwrap_or(Time::MAX) {
            return;
        }
        let Transport::Tcp { cfg, .. } = &g.transport else { return };
        let mss = cfg.mss;
        let s = &mut self.sessions[k];
        let bytes = s.response(&spec);
        let host = s.host;
        let Some(fid) = self.new_connection(group, host, bulk::segments(Some(bytes), mss), Time::MAX, k as u32) else {
            return;
        };
        self.on_start(fid);
    }

    /// A finite connection's data are all acknowledged: its buffers are released, and a web
    /// session thinks, then asks again.
    fn on_completed(&mut self, fi: usize) {
        if let App::Tcp { tx, rx } = &mut self.flows[fi].app {
            tx.release_buffers();
            rx.release_buffers();
        }
        let k = self.flows[fi].session;
        if k == NO_SESSION {
            return;
        }
        let spec = self.web_spec(self.flows[fi].group);
        let think = self.sessions[k as usize].think(&spec);
        let t = self.now.saturating_add(think);
        if t < self.sc.duration {
            self.ev.push(t, Kind::Session, k);
        }
    }

    // ------------------------------------------------------------------ measurement

    fn on_warmup(&mut self) {
        // transmissions starting at `warmup` or later belong to the window
        self.advance(BNECK, self.now - 1);
        self.base = Some((self.ctr.clone(), self.bq().stats));
        let n = self.bq().len();
        self.meas.window_started(n);
    }

    fn on_sample(&mut self) {
        let now = self.now;
        self.advance(BNECK, now);
        let link = &self.links[BNECK];
        let q = &link.aqm.as_ref().expect("bottleneck queue").queue;
        let st = &q.stats;
        let ts = &mut self.ts;
        let drops: u64 = st.drops.iter().sum();
        let dt = now.saturating_sub(ts.last_t);
        ts.time.push(now as f64 / NS_PER_SEC as f64);
        ts.qlen.push(q.len() as f64);
        ts.qbytes.push(q.bytes() as f64);
        ts.util.push(if dt > 0 {
            (st.transmitted_bytes - ts.last_tx_bytes) as f64 * 8.0
                / (link.rate_bps as f64 * dt as f64 / NS_PER_SEC as f64)
        } else {
            f64::NAN
        });
        ts.drops.push((drops - ts.last_drops) as f64);
        let mut vals = [0.0f64; 8];
        let k = ts.state_names.len().min(8);
        q.disc.state(&mut vals[..k]);
        for (i, v) in vals[..k].iter().enumerate() {
            ts.state[i].push(*v);
        }
        ts.last_tx_bytes = st.transmitted_bytes;
        ts.last_drops = drops;
        ts.last_t = now;
        if self.sc.queue_snapshots && !self.sc.snapshot_poisson && now >= self.sc.warmup {
            self.snapshot();
        }
        let next = now.saturating_add(self.sc.sample_interval);
        if next < self.sc.duration {
            self.ev.push(next, Kind::Sample, 0);
        }
    }

    /// The queue's composition by position, counted from the tail (M10).
    fn snapshot(&mut self) {
        let q = &self.links[BNECK].aqm.as_ref().expect("bottleneck queue").queue;
        let ts = &mut self.ts;
        let n = q.len() as i64;
        let t = self.now as f64 / NS_PER_SEC as f64;
        let mut from_head = 0i64;
        q.disc.for_each_waiting(&mut |p, _| {
            ts.snap_t.push(t);
            ts.snap_pos.push(n - 1 - from_head);
            ts.snap_len.push(n);
            ts.snap_flow.push(p.flow as i64);
            from_head += 1;
        });
        ts.snap_count += 1;
    }

    /// A snapshot at a Poisson instant (PASTA: the snapshots see time averages, and cannot lock
    /// in phase with a periodic source as fixed steps can); then the next instant.
    fn on_snapshot(&mut self) {
        let now = self.now;
        self.advance(BNECK, now);
        self.snapshot();
        let next = now + exp_gap(&mut self.ts.snap_rng, self.sc.sample_interval);
        if next < self.sc.duration {
            self.ev.push(next, Kind::Snapshot, 0);
        }
    }

    /// Per-flow sample: throughput at the bottleneck and goodput over the last interval, and the
    /// congestion window now, for every flow that has started and is not finished (or moved data
    /// in the interval).
    fn on_flow_sample(&mut self) {
        let now = self.now;
        self.advance(BNECK, now);
        let fs = &mut self.fseries;
        let dt = (now - fs.last_t) as f64 / NS_PER_SEC as f64;
        fs.last.resize(self.flows.len(), (0, 0));
        let t = now as f64 / NS_PER_SEC as f64;
        for (i, f) in self.flows.iter().enumerate() {
            if f.start > now {
                continue;
            }
            let c = &self.ctr[i];
            let (tx, good) = (c.bneck_tx_bytes, c.unique_bytes);
            let (ltx, lgood) = fs.last[i];
            let (cwnd, finished) = match &f.app {
                App::Tcp { tx, .. } => (tx.cwnd(), tx.completed_at.is_some_and(|c| c < fs.last_t)),
                App::Udp(_) => (f64::NAN, f.stop < fs.last_t),
            };
            if finished && tx == ltx && good == lgood {
                continue;
            }
            fs.time.push(t);
            fs.flow.push(i as i64);
            fs.thr.push((tx - ltx) as f64 * 8.0 / dt);
            fs.good.push((good - lgood) as f64 * 8.0 / dt);
            fs.cwnd.push(cwnd);
            fs.last[i] = (tx, good);
        }
        fs.last_t = now;
        if let Some(iv) = self.sc.flow_series_interval {
            if now.saturating_add(iv) < self.sc.duration {
                self.ev.push(now + iv, Kind::FlowSample, 0);
            }
        }
    }

    /// The bottleneck's queue.
    fn bq(&self) -> &Queue<Packet> {
        &self.links[BNECK].aqm.as_ref().expect("bottleneck queue").queue
    }

    fn check_conservation(&self) -> Result<(), SimError> {
        let in_flight: u64 = self.links.iter().map(|l| l.in_flight() as u64).sum();
        if self.created != self.delivered + self.dropped + in_flight {
            return Err(SimError::Conservation(format!(
                "created {} != delivered {} + dropped {} + in flight {}",
                self.created, self.delivered, self.dropped, in_flight
            )));
        }
        for (i, l) in self.links.iter().enumerate() {
            if let Some(a) = &l.aqm {
                a.queue
                    .stats
                    .check(a.queue.len() as u64)
                    .map_err(|m| SimError::Conservation(format!("link {i}: {m}")))?;
            }
        }
        Ok(())
    }

    fn results(&self) -> Results {
        let sc = &self.sc;
        let end = sc.duration;
        let w = (end - sc.warmup) as f64 / NS_PER_SEC as f64;
        let zero = FlowCounters::default();
        // flows created after the warm-up have no snapshot: they count from zero
        let window: Vec<FlowCounters> = match &self.base {
            Some((b, _)) => self.ctr.iter().enumerate().map(|(i, c)| c.since(b.get(i).unwrap_or(&zero))).collect(),
            None => self.ctr.iter().map(|c| c.since(&zero)).collect(),
        };
        let cap = self.links[BNECK].rate_bps as f64;
        let mut qs = self.bq().stats;
        if let Some((_, b)) = &self.base {
            qs.arrivals -= b.arrivals;
            qs.arrival_bytes -= b.arrival_bytes;
            qs.enqueued -= b.enqueued;
            qs.transmitted -= b.transmitted;
            qs.transmitted_bytes -= b.transmitted_bytes;
            for i in 0..DropReason::COUNT {
                qs.drops[i] -= b.drops[i];
                qs.drop_bytes[i] -= b.drop_bytes[i];
            }
        }

        // ---- flows table
        let n = self.flows.len();
        let mut t = Table::default();
        let f = |x: u64| x as f64;
        let rate = |bytes: u64| bytes as f64 * 8.0 / w;
        t.push("flow_id", Column::I64((0..n as i64).collect()));
        t.push("group", Column::Str(self.flows.iter().map(|fl| sc.groups[fl.group as usize].name.clone()).collect()));
        t.push(
            "transport",
            Column::Str(self.flows.iter().map(|fl| sc.groups[fl.group as usize].transport_name().into()).collect()),
        );
        t.push(
            "app",
            Column::Str(self.flows.iter().map(|fl| sc.groups[fl.group as usize].app_name().into()).collect()),
        );
        t.push(
            "variant",
            Column::Str(self.flows.iter().map(|fl| sc.groups[fl.group as usize].variant_name().into()).collect()),
        );
        t.push(
            "recovery",
            Column::Str(
                self.flows
                    .iter()
                    .map(|fl| match &fl.app {
                        App::Tcp { tx, .. } => tx.cfg.recovery.name().into(),
                        App::Udp(_) => "none".into(),
                    })
                    .collect(),
            ),
        );
        t.push("host", Column::I64(self.flows.iter().map(|fl| fl.host as i64).collect()));
        // web response connections: index of their session within the run (-1 for other flows)
        t.push(
            "session",
            Column::I64(
                self.flows.iter().map(|fl| if fl.session == NO_SESSION { -1 } else { fl.session as i64 }).collect(),
            ),
        );
        t.push("priority", Column::I64(self.flows.iter().map(|fl| fl.prio as i64).collect()));
        t.push("start_s", Column::F64(self.flows.iter().map(|fl| fl.start as f64 / 1e9).collect()));
        t.push(
            "rtt_prop_s",
            Column::F64(self.flows.iter().map(|fl| self.hosts[fl.host as usize].rtt_prop as f64 / 1e9).collect()),
        );
        t.push("throughput_bps", Column::F64(window.iter().map(|c| rate(c.bneck_tx_bytes)).collect()));
        t.push("goodput_bps", Column::F64(window.iter().map(|c| rate(c.unique_bytes)).collect()));
        t.push("delivered_bps", Column::F64(window.iter().map(|c| rate(c.delivered_bytes)).collect()));
        // M2b ([CHOKeD] Eq. 4.1): (received - received retransmissions) / the flow's own active
        // time within the window; M2c ([TWL]): largest sequence received x packet size / run length
        t.push(
            "goodput_m2b_bps",
            Column::F64(
                self.flows
                    .iter()
                    .zip(&window)
                    .map(|(fl, c)| {
                        let active = fl.stop.min(end).saturating_sub(fl.start.max(sc.warmup)) as f64 / 1e9;
                        let bits = (c.delivered_bytes - c.delivered_retx_bytes.min(c.delivered_bytes)) as f64 * 8.0;
                        if active > 0.0 {
                            bits / active
                        } else {
                            f64::NAN
                        }
                    })
                    .collect(),
            ),
        );
        t.push(
            "goodput_m2c_bps",
            Column::F64(
                self.flows
                    .iter()
                    .zip(&self.ctr)
                    .map(|(fl, c)| {
                        let size = match &fl.app {
                            App::Tcp { tx, .. } => tx.cfg.mss as f64,
                            App::Udp(src) => src.cbr.size as f64,
                        };
                        c.max_seq_rcvd as f64 * size * 8.0 / (end as f64 / 1e9)
                    })
                    .collect(),
            ),
        );
        t.push("share", Column::F64(window.iter().map(|c| rate(c.bneck_tx_bytes) / cap).collect()));
        t.push("sent_pkts", Column::F64(window.iter().map(|c| f(c.sent_pkts)).collect()));
        t.push("sent_bytes", Column::F64(window.iter().map(|c| f(c.sent_bytes)).collect()));
        t.push("retx_pkts", Column::F64(window.iter().map(|c| f(c.retx_pkts)).collect()));
        t.push("delivered_pkts", Column::F64(window.iter().map(|c| f(c.delivered_pkts)).collect()));
        t.push("delivered_bytes", Column::F64(window.iter().map(|c| f(c.delivered_bytes)).collect()));
        t.push("goodput_bytes", Column::F64(window.iter().map(|c| f(c.unique_bytes)).collect()));
        t.push("bneck_arrivals", Column::F64(window.iter().map(|c| f(c.bneck_arrivals)).collect()));
        t.push("bneck_tx_pkts", Column::F64(window.iter().map(|c| f(c.bneck_tx_pkts)).collect()));
        for r in DropReason::ALL {
            t.push(&format!("drops_{}", r.name()), Column::F64(window.iter().map(|c| f(c.drops[r.index()])).collect()));
        }
        t.push("drops_total", Column::F64(window.iter().map(|c| f(c.total_drops())).collect()));
        t.push("ack_drops", Column::F64(window.iter().map(|c| f(c.ack_drops)).collect()));
        t.push("timeouts", Column::F64(window.iter().map(|c| f(c.timeouts)).collect()));
        t.push("fast_retransmits", Column::F64(window.iter().map(|c| f(c.fast_retx)).collect()));
        t.push("ce_marks", Column::F64(window.iter().map(|c| f(c.ce_marks)).collect()));
        t.push("ecn_reductions", Column::F64(window.iter().map(|c| f(c.ecn_reductions)).collect()));
        t.push(
            "rtt_mean_s",
            Column::F64(
                window
                    .iter()
                    .map(|c| if c.rtt_samples > 0 { c.rtt_sum_ns / c.rtt_samples as f64 / 1e9 } else { f64::NAN })
                    .collect(),
            ),
        );
        t.push(
            "rtt_min_s",
            Column::F64(window.iter().map(|c| if c.rtt_samples > 0 { c.rtt_min_ns / 1e9 } else { f64::NAN }).collect()),
        );
        // completion time of finite TCP flows (NaN otherwise), also summarised per group below
        let fct: Vec<f64> = self
            .flows
            .iter()
            .map(|fl| match &fl.app {
                App::Tcp { tx, .. } => tx.completed_at.map(|c| (c - fl.start) as f64 / 1e9).unwrap_or(f64::NAN),
                _ => f64::NAN,
            })
            .collect();
        t.push("completion_time_s", Column::F64(fct.clone()));
        t.push(
            "stop_s",
            Column::F64(
                self.flows
                    .iter()
                    .map(|fl| if fl.stop == Time::MAX { f64::NAN } else { fl.stop as f64 / 1e9 })
                    .collect(),
            ),
        );

        // ---- groups
        let mut groups = Vec::new();
        for (gi, g) in sc.groups.iter().enumerate() {
            let idx: Vec<usize> = (0..self.flows.len()).filter(|&i| self.flows[i].group as usize == gi).collect();
            let members: Vec<&FlowCounters> = idx.iter().map(|&i| &window[i]).collect();
            let fcts: Vec<f64> = idx.iter().map(|&i| fct[i]).filter(|x| x.is_finite()).collect();
            groups.push(group_summary(g, &members, &fcts, w, cap));
        }
        let thr: Vec<f64> = window.iter().map(|c| rate(c.bneck_tx_bytes)).collect();
        let is_tcp: Vec<bool> = self.flows.iter().map(|fl| matches!(fl.app, App::Tcp { .. })).collect();
        let tcp_thr: Vec<f64> = thr.iter().zip(&is_tcp).filter(|(_, t)| **t).map(|(x, _)| *x).collect();
        let tcp_good: Vec<f64> =
            window.iter().zip(&is_tcp).filter(|(_, t)| **t).map(|(c, _)| rate(c.unique_bytes)).collect();

        // ---- bottleneck
        let mut drops = Map::new();
        // drops at the bottleneck queue; random link loss happens before the queue and is
        // reported apart (`link_loss_drops`)
        for r in DropReason::ALL {
            if r != DropReason::LinkLoss {
                drops.insert(r.name().into(), json!(qs.drops[r.index()]));
            }
        }
        let link_loss: u64 = window.iter().map(|c| c.drops[DropReason::LinkLoss.index()]).sum();
        let wn = (end - sc.warmup) as f64;
        let m = &self.meas;
        let pct = |q: f64| if m.delay_n > 0 { m.delay.value_at_quantile(q) as f64 / 1e9 } else { f64::NAN };
        let total_drops: u64 = qs.drops.iter().sum();
        let bottleneck = json!({
            "aqm": sc.bottleneck.aqm.name(),
            "capacity_bps": cap,
            "delay_s": sc.bottleneck.delay as f64 / 1e9,
            "limit": sc.bottleneck.limit.value,
            "queue_unit": if sc.bottleneck.limit.unit == aqm::QueueUnit::Packets { "packets" } else { "bytes" },
            "utilisation": qs.transmitted_bytes as f64 * 8.0 / (cap * w),
            "throughput_bps": qs.transmitted_bytes as f64 * 8.0 / w,
            "arrivals": qs.arrivals,
            "transmitted": qs.transmitted,
            "drops": drops,
            "drops_total": total_drops,
            "link_loss_drops": link_loss,
            "drop_ratio": if qs.arrivals > 0 { total_drops as f64 / qs.arrivals as f64 } else { 0.0 },
            "ce_marks": window.iter().map(|c| c.ce_marks).sum::<u64>(),
            "queue_mean_pkts": m.area_pkts / wn,
            "queue_mean_bytes": m.area_bytes / wn,
            "queue_max_pkts": m.max_qlen,
            "delay_mean_s": if m.delay_n > 0 { m.delay_sum_ns / m.delay_n as f64 / 1e9 } else { f64::NAN },
            "delay_p50_s": pct(0.5),
            "delay_p95_s": pct(0.95),
            "delay_p99_s": pct(0.99),
            "delay_samples": m.delay_n,
        });
        let summary = json!({
            "scenario": {
                "name": sc.name,
                "description": sc.description,
                "seed": self.seed,
                "duration_s": end as f64 / 1e9,
                "warmup_s": sc.warmup as f64 / 1e9,
                "window_s": w,
                "flows": n,
                "aqmlab_version": env!("CARGO_PKG_VERSION"),
            },
            "bottleneck": bottleneck,
            "groups": groups,
            "fairness": {
                "jain_throughput_all": jain(&thr),
                "jain_throughput_tcp": jain(&tcp_thr),
                "jain_goodput_tcp": jain(&tcp_good),
            },
            "engine": {
                "events": self.events,
                "packets_created": self.created,
                "packets_delivered": self.delivered,
                "packets_dropped": self.dropped,
                "packets_in_flight": self.links.iter().map(|l| l.in_flight() as u64).sum::<u64>(),
                "data_packets_delivered": self.ctr.iter().map(|c| c.delivered_pkts).sum::<u64>(),
                "conservation": "ok",
            },
        });

        // ---- time series
        let mut ts = Table::default();
        ts.push("time_s", Column::F64(self.ts.time.clone()));
        ts.push("queue_pkts", Column::F64(self.ts.qlen.clone()));
        ts.push("queue_bytes", Column::F64(self.ts.qbytes.clone()));
        ts.push("utilisation", Column::F64(self.ts.util.clone()));
        ts.push("drops", Column::F64(self.ts.drops.clone()));
        for (i, name) in self.ts.state_names.iter().enumerate() {
            ts.push(&format!("aqm_{name}"), Column::F64(self.ts.state[i].clone()));
        }
        // a flow's group name and transport, for the per-packet and per-sample tables
        let group_of = |f: &i64| &sc.groups[self.flows[*f as usize].group as usize];
        let group = |f: &i64| group_of(f).name.clone();
        let transport = |f: &i64| group_of(f).transport_name().to_string();
        let snapshots = self.sc.queue_snapshots.then(|| {
            let mut st = Table::default();
            st.push("time_s", Column::F64(self.ts.snap_t.clone()));
            st.push("position_from_tail", Column::I64(self.ts.snap_pos.clone()));
            st.push("queue_len", Column::I64(self.ts.snap_len.clone()));
            st.push("flow_id", Column::I64(self.ts.snap_flow.clone()));
            st.push("group", Column::Str(self.ts.snap_flow.iter().map(group).collect()));
            st.push("transport", Column::Str(self.ts.snap_flow.iter().map(transport).collect()));
            st
        });
        let mut summary = clean_nan(summary);
        if self.sc.queue_snapshots {
            summary["queue_snapshots"] = json!({ "count": self.ts.snap_count, "interval_s": sc.sample_interval as f64 / 1e9,
                        "times": if sc.snapshot_poisson { "poisson" } else { "periodic" } });
        }
        let flow_series = self.sc.flow_series_interval.map(|_| {
            let fs = &self.fseries;
            let mut st = Table::default();
            st.push("time_s", Column::F64(fs.time.clone()));
            st.push("flow_id", Column::I64(fs.flow.clone()));
            st.push("group", Column::Str(fs.flow.iter().map(group).collect()));
            st.push("transport", Column::Str(fs.flow.iter().map(transport).collect()));
            st.push("throughput_bps", Column::F64(fs.thr.clone()));
            st.push("goodput_bps", Column::F64(fs.good.clone()));
            st.push("cwnd", Column::F64(fs.cwnd.clone()));
            st
        });
        Results { summary, flows: t, timeseries: ts, snapshots, flow_series }
    }
}

/// An exponential gap with mean `mean` (at least 1 ns): the next instant of a Poisson process.
fn exp_gap(rng: &mut Rng, mean: Time) -> Time {
    ((-(1.0 - rng.uniform()).ln() * mean as f64).round() as Time).max(1)
}

/// When a flow (or session) starts: fixed, or drawn from its own stream.
fn start_time(spec: StartSpec, rng: &mut Rng) -> Time {
    match spec {
        StartSpec::At(t) => t,
        StartSpec::Uniform(lo, hi) => lo + ((hi - lo) as f64 * rng.uniform()).round() as Time,
    }
}

fn tcp_app(cfg: &TcpConfig, fid: u32, prio: u8, flags: u8, limit: u32) -> App {
    App::Tcp { tx: Box::new(TcpSender::new(*cfg, fid, prio, flags, limit)), rx: Box::new(TcpReceiver::new(cfg, prio)) }
}

/// ACKs and web requests travel the reverse path (receiver to sender).
#[inline]
fn is_reverse(k: PktKind) -> bool {
    matches!(k, PktKind::Ack | PktKind::Request)
}

fn group_summary(g: &GroupSpec, members: &[&FlowCounters], fcts: &[f64], w: f64, cap: f64) -> Value {
    let rate = |b: u64| b as f64 * 8.0 / w;
    let thr: Vec<f64> = members.iter().map(|c| rate(c.bneck_tx_bytes)).collect();
    let good: Vec<f64> = members.iter().map(|c| rate(c.unique_bytes)).collect();
    let sum_thr: f64 = thr.iter().sum();
    let sum_good: f64 = good.iter().sum();
    let mut drops = Map::new();
    for r in DropReason::ALL {
        drops.insert(r.name().into(), json!(members.iter().map(|c| c.drops[r.index()]).sum::<u64>()));
    }
    let mut sorted = fcts.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let fct_mean = if sorted.is_empty() { f64::NAN } else { sorted.iter().sum::<f64>() / sorted.len() as f64 };
    let fct_median = if sorted.is_empty() { f64::NAN } else { sorted[sorted.len() / 2] };
    json!({
        "name": g.name,
        "transport": g.transport_name(),
        "app": g.app_name(),
        "variant": g.variant_name(),
        "completed": sorted.len(),
        "completion_time_mean_s": fct_mean,
        "completion_time_median_s": fct_median,
        "flows": members.len(),
        "throughput_bps": sum_thr,
        "goodput_bps": sum_good,
        "share": sum_thr / cap,
        "throughput_per_flow_bps": sum_thr / members.len() as f64,
        "goodput_per_flow_bps": sum_good / members.len() as f64,
        "jain_throughput": jain(&thr),
        "jain_goodput": jain(&good),
        "drops": drops,
        "timeouts": members.iter().map(|c| c.timeouts).sum::<u64>(),
        "ce_marks": members.iter().map(|c| c.ce_marks).sum::<u64>(),
        "ecn_reductions": members.iter().map(|c| c.ecn_reductions).sum::<u64>(),
        "fast_retransmits": members.iter().map(|c| c.fast_retx).sum::<u64>(),
    })
}

/// JSON has no NaN: undefined statistics become null.
fn clean_nan(v: Value) -> Value {
    match v {
        Value::Number(n) if n.as_f64().is_some_and(|x| !x.is_finite()) => Value::Null,
        Value::Array(a) => Value::Array(a.into_iter().map(clean_nan).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, clean_nan(v))).collect()),
        other => other,
    }
}
