//! The simulation: a value that owns all its state (network, flows, event set, counters), so many
//! can run in one process. Build one from a validated [`Scenario`] and a seed, then [`Sim::run`].
//!
//! This file is the event loop and the packet's path, in reading order: a host *injects* a packet
//! into the first link of its path; the packet *arrives* at a link (random loss, then the queue);
//! the link's transmitter is *advanced* lazily, starting every transmission that is due; when the
//! pipe's head reaches the far end (*link event*), the packet is *forwarded* to the next link of
//! its path or *delivered* to its host. Measured links call their monitor on the way. Where
//! nothing could tell the difference, a packet is handed on at once instead of at an event of its
//! own: delivered to its host as it enters its last link, or passed through a shared link into
//! its path's last one; those exact shortcuts, and the state they keep, are in `shortcut`. The
//! hosts' side (applications, TCP timers, traffic) is in `apps`, measurement events in `sample`,
//! `[[pcap]]` traces in `capture`, and the network is built apart (`crate::net::build`).

mod apps;
mod capture;
mod edge;
mod prefetch;
mod sample;
mod shortcut;

use crate::event::{EventQueue, Kind};
use crate::hosts::{App, Flow, TimerKey, NO_TIMER, TIMER_SLOTS};
use crate::measure::{FlowCounters, FlowSeries, HopDrops};
use crate::monitor::LinkMonitor;
use crate::net::{Entry, Network, Route, NEXT_HOST, NEXT_SHARED, NO_MONITOR};
use crate::packet::{Packet, PktKind};
use crate::results::{self, Engine, FlowRecord, Results, Run};
use crate::scenario::Scenario;
use crate::traffic::short::ShortGen;
use crate::traffic::web::Session;
use aqm::{DropReason, Qdisc, Time, NS_PER_SEC};

/// The events a run starts with (its hosts' own are `apps::Traffic`'s): the first per-flow sample,
/// the warm-up's snapshot, every AQM's first timer, the first sample and the first Poisson queue
/// snapshot. Returns the instant of the first per-flow sample (`Time::MAX` if none).
fn first_events(
    sc: &Scenario,
    net: &Network,
    ev: &mut EventQueue,
    snap_rng: &mut aqm::rng::Rng,
) -> Result<Time, SimError> {
    let mut next_flow_sample = Time::MAX;
    if let Some(iv) = sc.flow_series_interval {
        if iv < sc.duration {
            ev.push(iv, Kind::FlowSample, 0);
            next_flow_sample = iv;
        }
    }
    if sc.warmup > 0 {
        ev.push(sc.warmup, Kind::Warmup, 0);
    }
    for l in 0..net.links.len() {
        if let Some(period) = net.aqm(l).and_then(|a| a.queue.disc.timer_period()) {
            if period == 0 {
                let name = &sc.topology.links[l].name;
                return Err(SimError::Build(format!("link {name}: the AQM's timer period is zero")));
            }
            ev.push(period, Kind::AqmTimer, l as u32);
        }
    }
    ev.push(0, Kind::Sample, 0);
    if sc.queue_snapshots && sc.snapshot_poisson {
        let first = sc.warmup.saturating_add(sample::exp_gap(snap_rng, sc.sample_interval));
        if first < sc.duration {
            ev.push(first, Kind::Snapshot, 0);
        }
    }
    Ok(next_flow_sample)
}

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

// sizes for the resource estimate (crate::budget)
pub(crate) const FLOW_BYTES: u64 = std::mem::size_of::<Flow>() as u64;
pub(crate) const LINK_BYTES: u64 = std::mem::size_of::<crate::net::Link>() as u64;

/// A runnable simulation.
pub struct Sim {
    sc: Scenario,
    seed: u64,
    now: Time,
    ev: EventQueue,
    net: Network,
    /// Each flow's paths (its host pair's route, copied so that forwarding touches only this).
    routes: Vec<Route>,
    flows: Vec<Flow>,
    /// Short-connection generators (group index, generator, first host).
    shorts: Vec<(u32, ShortGen, u32)>,
    sessions: Vec<Session>,
    /// Each TCP group's options, shared by its senders.
    tcp_cfgs: Vec<Option<std::sync::Arc<crate::tcp::TcpConfig>>>,
    ctr: Vec<FlowCounters>,
    hop_drops: HopDrops,
    /// Flow counters and hop drops at the start of the measurement window.
    base: Option<(Vec<FlowCounters>, HopDrops)>,
    /// Per flow and timer slot: the earliest scheduled event (`sim::apps`).
    timers: Vec<Time>,
    monitors: Vec<LinkMonitor>,
    snaps: crate::monitor::Snapshots,
    /// Draws the Poisson snapshot instants (its own stream).
    snap_rng: aqm::rng::Rng,
    fseries: FlowSeries,
    scratch: Vec<Packet>,
    created: u64,
    delivered: u64,
    dropped: u64,
    events: u64,
    /// A short/web group opened more connections than the event set can index.
    too_many: bool,
    /// Shortcuts are taken only before this instant: the run's end, the start of the
    /// measurement window and the next per-flow sample (`shortcut`).
    horizon: Time,
    /// The next per-flow sample (`Time::MAX` if none is pending).
    next_flow_sample: Time,
    /// Inside an early delivery (shortcuts never nest).
    early: bool,
    /// The `[[pcap]]` traces, once [`Sim::capture_to`] has opened their files.
    cap: Option<Box<capture::Captures>>,
    /// CSFQ's edge labelling, if a link runs CSFQ on labels (`edge`).
    edges: Option<Box<edge::Edges>>,
    /// Latency histograms (`simulation.latency`, probe groups; `crate::latency`).
    lat: Option<Box<crate::latency::Latency>>,
}

impl Sim {
    /// Build the network and traffic of `sc`. `seed` replaces the scenario's seed when given.
    pub fn new(sc: Scenario, seed: Option<u64>) -> Result<Sim, SimError> {
        crate::mem::fix_mmap_threshold();
        let seed = seed.unwrap_or(sc.seed);
        let net = crate::net::build::build(&sc, seed).map_err(SimError::Build)?;
        let mut ev = EventQueue::with_capacity(4 * sc.n_static_flows() + 16);
        let t = apps::Traffic::new(&sc, seed, &net, &mut ev);
        let n = t.flows.len();
        let max_paths = net.max_paths;
        let mut routes = t.routes;
        shortcut::allow(&sc, &net, &t.flows, &mut routes);
        let mut snap_rng = aqm::rng::Rng::stream(seed, "snapshots", 0);
        let next_flow_sample = first_events(&sc, &net, &mut ev, &mut snap_rng)?;
        let monitors = net
            .monitored
            .iter()
            .map(|&l| {
                let q = &net.aqm(l as usize).expect("a measured link has a queue").queue;
                LinkMonitor::new(l, sc.warmup, n, q.disc.state_names())
            })
            .collect();
        let mut sim = Sim {
            seed,
            now: 0,
            ev,
            net,
            routes,
            flows: t.flows,
            shorts: t.shorts,
            sessions: t.sessions,
            tcp_cfgs: t.tcp_cfgs,
            ctr: crate::mem::huge_filled(n, FlowCounters::default()),
            hop_drops: HopDrops::new(max_paths),
            base: None,
            timers: crate::mem::huge_filled(TIMER_SLOTS * n, NO_TIMER),
            monitors,
            snaps: Default::default(),
            snap_rng,
            fseries: FlowSeries::default(),
            scratch: Vec::with_capacity(64),
            created: 0,
            delivered: 0,
            dropped: 0,
            events: 0,
            too_many: false,
            horizon: 0,
            next_flow_sample,
            early: false,
            cap: None,
            edges: edge::Edges::new(&sc, n),
            lat: crate::latency::Latency::new(&sc).map(Box::new),
            sc,
        };
        sim.set_horizon();
        if sim.shorts.is_empty() && sim.sessions.is_empty() {
            // no connection will be opened: the flows have their routes (32 MiB at a million)
            sim.net.host_routes = Vec::new();
        }
        Ok(sim)
    }

    /// Open the files of the scenario's `[[pcap]]` traces in `dir` (`<link>.<point>.pcap`); the
    /// run writes them and flushes them at its end. Returns their paths (none without traces).
    pub fn capture_to(&mut self, dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>, SimError> {
        if self.sc.captures.is_empty() {
            return Ok(Vec::new());
        }
        let c = capture::Captures::open(&self.sc, dir)
            .map_err(|e| SimError::Build(format!("cannot write the pcap traces in {}: {e}", dir.display())))?;
        let files = c.files().to_vec();
        self.cap = Some(Box::new(c));
        Ok(files)
    }

    /// Run to the end. `progress(sim_seconds)` is called every 65,536 events; returning `false`
    /// stops the run with [`SimError::Interrupted`].
    pub fn run(mut self, progress: &mut dyn FnMut(f64) -> bool) -> Result<Results, SimError> {
        self.run_events(progress)?;
        self.finish()
    }

    /// The event loop alone (what `aqmlab bench` times as the engine's run): process every event
    /// before the run's end. Follow it with [`Sim::finish`].
    pub fn run_events(&mut self, progress: &mut dyn FnMut(f64) -> bool) -> Result<(), SimError> {
        let end = self.sc.duration;
        let mut ahead = None;
        loop {
            // the events a refill brings near are the next ones: start loading their links
            let links = &self.net.links;
            let Some((t, kind, idx)) = self.ev.pop_before(end, |kind, idx| {
                if kind == Kind::Link {
                    crate::mem::prefetch(&links[idx as usize]);
                }
            }) else {
                break;
            };
            self.now = t;
            self.events += 1;
            if let Some(f) = ahead {
                // the flow requested at the last event is likely this one's: its links
                self.prefetch_links(f);
            }
            ahead = self.prefetch_ahead();
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
                    TimerKey::flows_below(crate::event::MAX_INDEX as usize)
                )));
            }
        }
        Ok(())
    }

    /// Close the measurement window at the run's end, check conservation, and compute the results.
    pub fn finish(mut self) -> Result<Results, SimError> {
        let end = self.sc.duration;
        self.now = end;
        self.finish_window(end);
        self.check_conservation()?;
        self.check_counter_range()?;
        if let Some(c) = self.cap.take() {
            c.finish().map_err(|e| SimError::Build(format!("writing the pcap traces: {e}")))?;
        }
        let in_flight = self.net.in_flight();
        self.release_engine_state();
        // the flows' TCP state goes too: the results read a few fields of each flow
        let records: Vec<FlowRecord> = self.flows.iter().map(FlowRecord::of).collect();
        self.flows = Vec::new();
        crate::mem::give_back_freed();
        let results = self.results(in_flight, &records);
        drop(self);
        crate::mem::give_back_freed();
        Ok(results)
    }

    /// The per-flow counts of packets, drops, timeouts, marks and RTT samples are 32-bit
    /// (`measure::FlowCounters`), and so are a flow's packet counts at a measured link
    /// (`monitor::AtLink`), the packet counts saturating: refuse a run in which a flow's packets
    /// reached `u32::MAX`, rather than report a saturated or wrapped count.
    fn check_counter_range(&self) -> Result<(), SimError> {
        let refuse = |f: usize| {
            Err(SimError::Build(format!(
                "flow {f} sent or received 2^32 - 1 packets or more, as many as the engine's 32-bit \
                 per-flow counters (and sequence numbers) hold: shorten the run or lower the rate"
            )))
        };
        if let Some(f) = self.ctr.iter().position(|c| c.most_packets() == u32::MAX) {
            return refuse(f);
        }
        // a flow's packets each reach a link at most once, so this follows from the check above;
        // checked all the same (one pass over the measured links' flows)
        match self.monitors.iter().find_map(|m| m.saturated()) {
            Some(f) => refuse(f),
            None => Ok(()),
        }
    }

    /// Free what only the event loop needs before the results are built, so that the result
    /// tables take the place of the access links and the event set instead of adding to the
    /// run's peak of memory (at a million flows the access links alone are over 600 MiB).
    fn release_engine_state(&mut self) {
        self.net.links.truncate(self.net.core);
        self.net.links.shrink_to_fit();
        // (the topology links' packets were counted; their pipes go with the store)
        for link in &mut self.net.links {
            link.pipe = Default::default();
        }
        self.net.store = Default::default();
        self.ev = EventQueue::with_capacity(0);
        self.timers = Vec::new();
        self.scratch = Vec::new();
        crate::mem::give_back_freed();
    }

    // ------------------------------------------------------------------ the packet's path

    /// A host sends `pkt` into the first link of its path.
    #[inline]
    fn inject(&mut self, mut pkt: Packet) {
        self.created += 1;
        if let Some(e) = self.edges.as_deref_mut() {
            e.label(&mut pkt, self.now);
        }
        let r = &self.routes[pkt.flow as usize];
        let first = if is_reverse(pkt.kind) { r.first_rev } else { r.first_fwd };
        self.link_arrive(first as usize, pkt);
    }

    /// `pkt` arrives at link `l`: random loss, then the queue (or, on a simple link, straight
    /// into the pipe); then the transmitter starts whatever is due.
    fn link_arrive(&mut self, l: usize, pkt: Packet) {
        let now = self.now;
        let (link, class, store) = self.net.link_parts(l);
        let Some(a) = class.aqm.as_deref_mut() else {
            if let Some(entry) = link.simple_arrive(class, pkt, now, store) {
                // handed on at once if it may (`shortcut`), else forwarded at the link's event
                let next = link.next;
                if !self.leave_simple_early(l, next, pkt, entry) {
                    self.schedule_link(l);
                }
            } else {
                self.record_drop(&pkt, DropReason::Overflow);
            }
            return;
        };
        if a.loss_rate > 0.0 {
            let rng = a.loss_rng.as_mut().expect("loss stream");
            if rng.bernoulli(a.loss_rate) {
                if a.monitor != NO_MONITOR {
                    self.monitors[a.monitor as usize].lost += 1;
                }
                if let Some(c) = self.cap.as_deref_mut() {
                    c.write(l, capture::Point::Drop, now, &pkt, &self.flows);
                }
                self.record_drop(&pkt, DropReason::LinkLoss);
                return;
            }
        }
        self.advance(l, now);
        if let Some(c) = self.cap.as_deref_mut() {
            c.write(l, capture::Point::Arrival, now, &pkt, &self.flows);
        }
        let a = self.net.aqm_mut(l).expect("aqm");
        let queued = a.queue.enqueue(pkt, now);
        if !queued && a.queue.is_empty() && self.net.links[l].free_at <= now {
            // The arrival was dropped and the link stays idle: a new idle period starts now, as
            // in ns-2, whose link asks the queue for a packet after every arrival. Without this,
            // an AQM whose average is above its hard threshold would drop every later arrival and
            // never see the idle time that lets the average decay (the spec's §1.4 rule alone
            // deadlocks RED there).
            self.net.aqm_mut(l).expect("aqm").idle_reported = false;
        }
        self.record_queue_drops(l, now);
        let (link, class) = self.net.core_parts(l);
        let a = class.aqm.as_deref().expect("aqm");
        if a.monitor != NO_MONITOR {
            self.monitors[a.monitor as usize].arrived(&pkt, now, a.queue.len(), a.queue.bytes());
        }
        if link.free_at < now {
            link.free_at = now;
        }
        self.advance(l, now);
    }

    /// Start every transmission on link `l` due by `t` (see the module docs of `net::link`).
    fn advance(&mut self, l: usize, t: Time) {
        loop {
            if l >= self.net.core {
                return; // a simple link: nothing waits for its transmitter
            }
            let (link, class) = self.net.core_parts(l);
            if link.free_at > t {
                break;
            }
            let start = link.free_at;
            let Some(a) = class.aqm.as_deref_mut() else { return };
            let Some((pkt, enq)) = a.queue.dequeue(start) else { break };
            self.record_queue_drops(l, start);
            let (link, class) = self.net.core_parts(l);
            let a = class.aqm.as_deref_mut().expect("aqm");
            a.idle_reported = false;
            let (n, b, monitor) = (a.queue.len(), a.queue.bytes(), a.monitor);
            let coming = prefetch::coming(&a.queue.disc, self.flows.len());
            link.free_at = start.saturating_add(class.tx_time(pkt.size));
            let arrive = link.free_at.saturating_add(class.delay);
            let shared = link.next == NEXT_SHARED;
            self.prefetch_coming(coming);
            if monitor != NO_MONITOR {
                self.monitors[monitor as usize].departed(&pkt, start, enq, n, b);
            }
            if let Some(c) = self.cap.as_deref_mut() {
                c.write(l, capture::Point::Departure, start, &pkt, &self.flows);
            }
            // the packet is on its way: into the next link at once if it may pass through
            // (`shortcut`), or into the pipe to wait for its event there
            if !(shared && self.pass_through(pkt, arrive)) {
                let net = &mut self.net;
                net.links[l].pipe.push_back(Entry::InFlight { arrive, pkt }, &mut net.store);
            }
        }
        if l >= self.net.core {
            return self.schedule_link(l);
        }
        let (link, class) = self.net.core_parts(l);
        let at = link.free_at;
        if let Some(a) = class.aqm.as_deref_mut() {
            if !a.idle_reported && at <= t && a.queue.is_empty() {
                a.idle_reported = true;
                a.queue.on_link_idle(at);
            }
        }
        // the packet in service may have passed through: the queue's next one needs the event
        self.schedule_link(l);
    }

    /// Make sure link `l` has its event: at its pipe head's arrival (the first packet not yet
    /// delivered early or passed through), or, on an AQM link whose pipe holds none while its
    /// queue does, just before the next packet in the queue could reach the far end
    /// (`free_at + delay`), so that the transmitter hands it on in time ([`Sim::pass_through`]).
    /// Whichever it is, it is the earliest the link needs: every packet in the pipe reaches the
    /// far end by `free_at + delay`.
    #[inline(always)]
    fn schedule_link(&mut self, l: usize) {
        let net = &mut self.net;
        let link = &mut net.links[l];
        if !link.pending() {
            let at = match link.pipe.first_in_flight(&net.store) {
                Some(a) => a,
                None => {
                    let class = &net.classes[link.class()];
                    match class.aqm.as_deref() {
                        Some(a) if !a.queue.is_empty() => link.free_at.saturating_add(class.delay),
                        _ => return,
                    }
                }
            };
            link.set_pending(true);
            self.ev.push(at, Kind::Link, l as u32);
        }
    }

    /// The head of link `l`'s pipe reached the far end: forward every packet due now.
    fn on_link_event(&mut self, l: usize) {
        let now = self.now;
        self.net.links[l].set_pending(false);
        self.prefetch_behind(l);
        loop {
            let net = &mut self.net;
            let link = &mut net.links[l];
            match link.pipe.front(&net.store) {
                Some(Entry::InFlight { arrive, pkt }) if arrive <= now => {
                    link.pipe.pop_front(&mut net.store);
                    let next = link.next;
                    self.forward(next, pkt);
                }
                // a packet that left early, whose transmission has started: its place goes
                Some(Entry::Left { start }) if start <= now => {
                    link.pipe.pop_front(&mut net.store);
                }
                _ => break,
            }
        }
        if self.net.aqm(l).is_some() {
            self.advance(l, now);
        }
        self.schedule_link(l);
    }

    /// A packet reached the far end of a link whose `Link::next` is `next`: on to the next link of
    /// its path, or to its host. Only a link shared by paths that continue differently needs the
    /// flow's route to know which.
    #[inline]
    fn forward(&mut self, next: u32, mut pkt: Packet) {
        pkt.hop += 1;
        let next = if next == NEXT_SHARED {
            let ack = is_reverse(pkt.kind);
            let r = &mut self.routes[pkt.flow as usize];
            let (start, len, last) = if ack { (r.rev, r.rev_len, r.last_rev) } else { (r.fwd, r.fwd_len, r.last_fwd) };
            if pkt.hop as u32 + 1 == len as u32 {
                shortcut::reached_last_link(r, ack);
                last
            } else if pkt.hop < len {
                self.net.paths[(start + pkt.hop as u32) as usize]
            } else {
                NEXT_HOST
            }
        } else {
            next
        };
        if next != NEXT_HOST {
            self.link_arrive(next as usize, pkt);
        } else {
            self.delivered += 1;
            self.deliver(pkt);
        }
    }

    /// An AQM's periodic timer: bring the link up to date, run the timer, re-arm it.
    fn on_aqm_timer(&mut self, l: usize) {
        let now = self.now;
        self.advance(l, now);
        let a = self.net.aqm_mut(l).expect("timer on an AQM link");
        a.queue.on_timer(now);
        let period = a.queue.disc.timer_period();
        self.record_queue_drops(l, now);
        let a = self.net.aqm(l).expect("aqm");
        if a.monitor != NO_MONITOR {
            let (n, b) = (a.queue.len(), a.queue.bytes());
            self.monitors[a.monitor as usize].queue.queue_changed(now, n, b);
        }
        if let Some(p) = period {
            self.ev.push(now.saturating_add(p), Kind::AqmTimer, l as u32);
        }
    }

    /// Charge the packets link `l`'s queue just dropped (at time `t`) to their flows.
    #[inline(always)]
    fn record_queue_drops(&mut self, l: usize, t: Time) {
        let a = self.net.aqm(l).expect("aqm");
        for i in 0..a.queue.drops().len() {
            let d = self.net.aqm(l).expect("aqm").queue.drops()[i];
            if let Some(c) = self.cap.as_deref_mut() {
                c.write(l, capture::Point::Drop, t, &d.pkt, &self.flows);
            }
            self.record_drop(&d.pkt, d.reason);
        }
    }

    #[inline]
    fn record_drop(&mut self, pkt: &Packet, reason: DropReason) {
        self.dropped += 1;
        let routes = &self.routes;
        self.hop_drops.add(pkt, || routes[pkt.flow as usize].fwd_len);
        let c = &mut self.ctr[pkt.flow as usize];
        match pkt.kind {
            PktKind::Ack | PktKind::Echo => c.ack_drops += 1,
            PktKind::Request => {
                // a lost web request is sent again after the initial RTO, as a lost SYN would be
                c.ack_drops += 1;
                if let App::Tcp { tx, .. } = &self.flows[pkt.flow as usize].app {
                    let retry = self.now.saturating_add(tx.cfg().initial_rto);
                    if retry < self.sc.duration {
                        self.ev.push(retry, Kind::Start, pkt.flow);
                    }
                }
            }
            _ => c.drops[reason.index()] += 1,
        }
    }

    /// Inject the segments flow `fi`'s TCP sender put into `scratch` from index `start` on (what
    /// it found there before belongs to a caller further up), in order, each with the flow's
    /// number, priority and flags (the sender keeps no copies of them), and leave `scratch` as it
    /// was before. The vector works as a stack, so it stays in place (no `take` and give back per
    /// ACK) and is still correct if a packet's injection leads to a host sending again.
    fn inject_sent(&mut self, fi: usize, start: usize) {
        let f = &self.flows[fi];
        for p in &mut self.scratch[start..] {
            p.flow = fi as u32;
            p.prio = f.prio;
            p.flags |= f.flags;
        }
        let mut i = start;
        while let Some(&p) = self.scratch.get(i) {
            self.inject(p);
            i += 1;
        }
        self.scratch.truncate(start);
    }

    // ------------------------------------------------------------------ end of the run

    fn check_conservation(&self) -> Result<(), SimError> {
        let in_flight = self.net.in_flight();
        if self.created != self.delivered + self.dropped + in_flight {
            return Err(SimError::Conservation(format!(
                "created {} != delivered {} + dropped {} + in flight {}",
                self.created, self.delivered, self.dropped, in_flight
            )));
        }
        for i in 0..self.net.links.len() {
            if let Some(a) = self.net.aqm(i) {
                a.queue
                    .stats
                    .check(a.queue.len() as u64)
                    .map_err(|m| SimError::Conservation(format!("link {i}: {m}")))?;
            }
        }
        Ok(())
    }

    fn results(&mut self, in_flight: u64, flows: &[FlowRecord]) -> Results {
        let (base_ctr, base_drops) = match &self.base {
            Some((c, d)) => (Some(c.as_slice()), Some(d)),
            None => (None, None),
        };
        let hop_drops = match base_drops {
            Some(b) => self.hop_drops.since(b),
            None => std::mem::take(&mut self.hop_drops),
        };
        results::collect(&Run {
            sc: &self.sc,
            seed: self.seed,
            net: &self.net,
            routes: &self.routes,
            flows,
            ctr: &self.ctr,
            base_ctr,
            hop_drops,
            monitors: &self.monitors,
            snaps: &self.snaps,
            fseries: &self.fseries,
            lat: self.lat.as_deref(),
            engine: Engine {
                events: self.events,
                created: self.created,
                delivered: self.delivered,
                dropped: self.dropped,
                in_flight,
            },
        })
    }
}

/// ACKs, web requests and probes' echoes travel the reverse path (receiver to sender).
#[inline]
fn is_reverse(k: PktKind) -> bool {
    matches!(k, PktKind::Ack | PktKind::Request | PktKind::Echo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_past_the_32_bit_counts_is_refused_not_wrapped() {
        // no run here sends 2^32 packets; the check reads the counts of packets sent, delivered
        // and acknowledged, which bound every other 32-bit one (each drop, mark, timeout or RTT
        // sample concerns one of those packets) and saturate at u32::MAX
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/dumbbell-red.toml"))
            .expect("example");
        let sc = crate::load(&text, &[], "t").expect("scenario");
        let mut sim = Sim::new(sc, None).expect("build");
        assert!(sim.check_counter_range().is_ok());
        sim.ctr[1].sent_pkts = u32::MAX - 2;
        sim.ctr[1].packet_sent(false);
        assert!(sim.check_counter_range().is_ok());
        for _ in 0..2 {
            sim.ctr[1].packet_sent(false);
        }
        assert_eq!(sim.ctr[1].sent_pkts, u32::MAX, "saturated, not wrapped");
        let e = sim.check_counter_range().expect_err("at 2^32 - 1").to_string();
        assert!(e.starts_with("flow 1 sent or received 2^32 - 1 packets or more"), "{e}");
        sim.ctr[1].sent_pkts = 0;
        sim.ctr[1].acks_sent = u32::MAX;
        assert!(sim.check_counter_range().is_err());
        sim.ctr[1].acks_sent = 0;
        assert!(sim.check_counter_range().is_ok());
        sim.monitors[0].flows[1].arrivals = u32::MAX;
        assert!(sim.check_counter_range().is_err());
    }
}
