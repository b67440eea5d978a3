//! What a run will need, estimated from the scenario alone, before any work starts.
//!
//! [`Estimate::of`] adds up the memory a run of a validated [`Scenario`] holds at its peak — the
//! engine's state per flow (sender and receiver, four access links, counters, timers, events),
//! the short and web connections it will open, the packets that can wait in queues and travel on
//! links, and the tables it returns (per-flow results, time series, queue snapshots, per-flow
//! series), counted as they are when a run goes through `aqmlab` (Rust columns, then Python
//! arrays, then pandas frames if a table is read: [`CELL_BYTES`] a numeric value, [`cat_bytes`] a
//! categorical one) — and the number of events it will process. The total is the largest of the
//! run's three peaks (the event loop's end, the results being built, the tables converted), not
//! their sum.
//! [`check`] refuses a scenario whose estimate is above a limit, with the estimate, its largest
//! parts and the limit in the message; [`process_limit`] is the limit of a run in this process:
//! the one given, or half the machine's physical memory (or of a cgroup limit, if lower), lowered
//! to the cgroup's limit and to the address space `RLIMIT_AS` leaves ([`ProcessMemory`]). docs/scenarios.md ("Resources") says how close the estimate
//! came to the peak memory measured at several sizes.
//!
//! Quantities that depend on the dynamics (how long a short connection lives, how full a queue
//! is) are taken at their bound where there is one (a queue at its limit), and at a documented
//! guess where there is none, so the estimate is an upper bound for the tables and close for the
//! engine state, never exact.

use crate::packet::Packet;
use crate::results::flows::{CATEGORICAL as FLOW_CATEGORICAL, COLUMNS as FLOW_COLUMNS};
use crate::scenario::{GroupSpec, Scenario, ScenarioError, TcpApp, Transport};
use aqm::{LinkInfo, QueueUnit, NS_PER_SEC};

/// Bytes one numeric table value costs in a run through `aqmlab`: 8 in its Rust column while the
/// results are built, then 8 in the Python `array.array` it becomes (each Rust column is freed as
/// soon as it is converted), which a DataFrame read from the table views without a copy.
pub const CELL_BYTES: u64 = 8;
/// Numeric columns of the per-flow results table (its categorical ones: [`flow_row`]).
const FLOW_NUM_COLUMNS: u64 = (FLOW_COLUMNS.len() - FLOW_CATEGORICAL.len()) as u64;
/// A categorical column's value (group, link, path) in Rust: a 4-byte code.
const CAT_RUST_BYTES: u64 = 4;

/// Bytes a categorical value of `len` bytes of text costs in Python at its peak: a pointer in a
/// list to one shared `str` per level (8), and, while the table is read as a DataFrame, pandas'
/// string column built beside the list: an 8-byte offset and the text, in buffers that grow by
/// doubling (measured with pandas 3 for 2 000 000 values: 21, 32 and 52 bytes a value for 3, 9
/// and 21 characters).
fn cat_bytes(len: u64) -> u64 {
    8 + 2 * (8 + len)
}

/// The values of a result table: numeric and categorical (their count, and their bytes in Python).
#[derive(Debug, Clone, Copy, Default)]
struct Cells {
    num: u64,
    cat: u64,
    cat_py: u64,
}

impl Cells {
    /// A row: `num` numeric values and categorical values of the text lengths `cat`.
    fn row(num: u64, cat: &[u64]) -> Cells {
        Cells { num, cat: cat.len() as u64, cat_py: cat.iter().map(|&l| cat_bytes(l)).sum() }
    }
    fn rows(self, n: u64) -> Cells {
        Cells {
            num: self.num.saturating_mul(n),
            cat: self.cat.saturating_mul(n),
            cat_py: self.cat_py.saturating_mul(n),
        }
    }
    fn add(self, o: Cells) -> Cells {
        Cells {
            num: self.num.saturating_add(o.num),
            cat: self.cat.saturating_add(o.cat),
            cat_py: self.cat_py.saturating_add(o.cat_py),
        }
    }
    /// Bytes in the engine's columns.
    fn rust(self) -> u64 {
        self.num.saturating_mul(CELL_BYTES).saturating_add(self.cat.saturating_mul(CAT_RUST_BYTES))
    }
    /// Bytes in Python at their peak (the table read as a DataFrame).
    fn python(self) -> u64 {
        self.num.saturating_mul(CELL_BYTES).saturating_add(self.cat_py)
    }
}

/// Text lengths of the names in the result tables: the longest group name, the longest link name
/// ("access" at least), and the longest path as the results write it ("access", its links,
/// "access", separated by spaces) with its number of links.
struct Names {
    group: u64,
    link: u64,
    path: u64,
    hops: u64,
}

/// The names' lengths of a transport ("tcp", "udp"), an app ("onoff") and a TCP variant or
/// recovery ("newreno").
const TRANSPORT_LEN: u64 = 3;
const APP_LEN: u64 = 5;
const VARIANT_LEN: u64 = 7;

fn name_lengths(sc: &Scenario) -> Names {
    let t = &sc.topology;
    let group = sc.groups.iter().map(|g| g.name.len() as u64).max().unwrap_or(0);
    let link = t.links.iter().map(|l| l.name.len() as u64).max().unwrap_or(0).max(6);
    let route = |r: u32| {
        let links = &t.routes[r as usize];
        (links.iter().map(|&l| t.links[l as usize].name.len() as u64 + 1).sum::<u64>() + 13, links.len() as u64 + 2)
    };
    let (mut path, mut hops) = (0, 0);
    for g in &sc.groups {
        for r in [g.endpoints[0].fwd, g.endpoints[0].rev] {
            let (p, h) = route(r);
            path = path.max(p);
            hops = hops.max(h);
        }
    }
    Names { group, link, path, hops }
}
/// Bytes a waiting or travelling packet costs (the 24-byte packet in a queue or a link's pipe,
/// with the ring buffers' growth slack).
const PACKET_BYTES: u64 = 2 * std::mem::size_of::<Packet>() as u64;
/// Heap a TCP connection holds beyond its structs — its congestion control's state (CUBIC's,
/// DCTCP's, Vegas's), its pacing state, the SACK blocks and scoreboard, the out-of-order bitmap
/// once it outgrows its first word — and a flow's keys in the event set; for a connection whose
/// options give it any heap state (see [`tcp_heap_bytes`]).
const TCP_HEAP_BYTES: u64 = 256;
/// A flow's keys in the event set, 16 bytes each: at most one for its start, one for each of its
/// two timers and one for each of its host pair's four access links.
const EVENT_KEY_BYTES: u64 = 7 * 16;

/// Heap bytes of a TCP connection with options `cfg`, its event keys included. Reno and NewReno
/// without pacing or SACK keep no state on the heap (their congestion control's is inline, the
/// out-of-order bitmap's first word too), so only their event keys count; the others keep
/// [`TCP_HEAP_BYTES`].
fn tcp_heap_bytes(cfg: &crate::tcp::TcpConfig) -> u64 {
    use crate::tcp::{CcConfig, Recovery};
    if matches!(cfg.cc, CcConfig::Reno) && !cfg.pacing && cfg.recovery != Recovery::Sack {
        EVENT_KEY_BYTES
    } else {
        TCP_HEAP_BYTES
    }
}
/// Memory of the process before the run (the Python interpreter, numpy, pandas, the engine).
pub const BASE_BYTES: u64 = 120 << 20;

/// Memory (bytes) and work a run will need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    /// Engine state of the flows that exist from the start (hosts, links, senders, receivers).
    pub flows: u64,
    /// Short and web connections the run will open, and their memory.
    pub n_connections: u64,
    pub connections: u64,
    /// Packets that can be waiting or travelling at once, and their memory.
    pub n_packets: u64,
    pub packets: u64,
    /// Result tables: per flow, time series, queue snapshots, per-flow series.
    pub flow_table: u64,
    pub timeseries: u64,
    pub snapshots: u64,
    pub flow_series: u64,
    /// Rows of the per-flow series (with `simulation.flow_series_interval`).
    pub flow_series_rows: u64,
    /// Latency histograms (`simulation.latency`, probe groups): two per recorded flow, at most,
    /// and the latency table.
    pub latency: u64,
    /// Events the run will process (order of magnitude; not memory).
    pub events: f64,
    /// Everything, with the process's own [`BASE_BYTES`].
    pub total: u64,
}

/// Bytes of a static flow's engine state that the run frees before it builds its results: its
/// host pair's four access links (`Sim::finish`).
const RELEASED_BYTES: u64 = 4 * crate::sim::LINK_BYTES;

/// Bytes of what the results keep of each flow in its place (`results::FlowRecord`).
const RECORD_BYTES: u64 = std::mem::size_of::<crate::results::FlowRecord>() as u64;

/// Bytes of engine state one flow of `g` holds (`warmup`: the run snapshots every flow's
/// counters at the end of its warm-up, so they exist twice).
fn flow_bytes(g: &GroupSpec, warmup: bool) -> u64 {
    // its host pair: four access links, a path of three links each way, its route and host, and
    // its counters at the bottleneck's monitor (its drops per hop are kept only off each path's
    // main hop, `measure::HopDrops`: nothing per flow of a dumbbell)
    let route = std::mem::size_of::<crate::net::Route>() as u64 + std::mem::size_of::<crate::net::Host>() as u64;
    let host = RELEASED_BYTES + 6 * 4 + route + std::mem::size_of::<crate::monitor::AtLink>() as u64;
    // (a flow's TCP sender and receiver are inside its `Flow`, whatever its transport)
    let counters = (1 + warmup as u64) * std::mem::size_of::<crate::measure::FlowCounters>() as u64;
    let flow = crate::sim::FLOW_BYTES + counters + 16;
    let app = match g.transport {
        // BBR: its state and the delivery-rate ring (64 records to begin with) on the heap
        Transport::Tcp { cfg, .. } if cfg.cc.wants_rate_samples() => TCP_HEAP_BYTES + 256 + 64 * 40,
        Transport::Tcp { cfg, .. } => tcp_heap_bytes(&cfg),
        Transport::Udp { .. } => 64,
    };
    host + flow + app
}

/// A row of the per-flow results table: numeric values, and categorical ones — group, transport,
/// app, variant, recovery and measured link (names), the data and ACK paths, and their drops per
/// hop (a number and a space a hop).
fn flow_row(n: &Names) -> Cells {
    // in the order of `results::flows::CATEGORICAL`
    let cat =
        [n.group, TRANSPORT_LEN, APP_LEN, VARIANT_LEN, VARIANT_LEN, n.link, n.path, n.path, 2 * n.hops, 2 * n.hops];
    const _: () = assert!(FLOW_CATEGORICAL.len() == 10, "a width for each categorical column");
    Cells::row(FLOW_NUM_COLUMNS, &cat)
}

/// A Poisson count of mean `m` is below this with probability above 1 − 10⁻⁴ (the mean, four
/// standard deviations and one), so a count bounded by it is an upper bound in practice.
fn poisson_bound(m: f64) -> f64 {
    if m > 0.0 {
        m + 4.0 * m.sqrt() + 1.0
    } else {
        0.0
    }
}

/// When a group is active: from its start (the earliest, for a uniform start) to its stop or the
/// run's end, in seconds.
fn active_span(g: &GroupSpec, sc: &Scenario) -> (f64, f64) {
    let from = match g.start {
        crate::scenario::StartSpec::At(t) => t,
        crate::scenario::StartSpec::Uniform(lo, _) => lo,
    };
    let until = g.stop.unwrap_or(sc.duration).min(sc.duration).max(from.min(sc.duration));
    (from.min(sc.duration) as f64 / NS_PER_SEC as f64, until as f64 / NS_PER_SEC as f64)
}

/// The connections of a short or web group.
#[derive(Debug, Clone, Copy, Default)]
struct Conns {
    /// Connections opened in the run (an upper bound: a Poisson count at its [`poisson_bound`]).
    opened: f64,
    /// Open at once in a steady state (a guess: arrivals over a connection's life).
    open: f64,
    /// Connections opened per second while the group is active.
    rate: f64,
}

/// Connections a short or web group opens during the run, and how many are open at once.
fn connections(g: &GroupSpec, sc: &Scenario) -> Conns {
    let (from, until) = active_span(g, sc);
    let active = until - from;
    match &g.transport {
        Transport::Tcp { app: TcpApp::Short(s), .. } => {
            // open at once: arrivals over a connection's mean lifetime (its duration, or a guess
            // of one second for size-limited transfers)
            let life = s.duration.map_or(1.0, |d| d.capped_mean());
            let opened = poisson_bound(s.arrival_rate * active);
            Conns { opened, open: s.arrival_rate * life.min(active), rate: opened / active.max(1e-9) }
        }
        Transport::Tcp { app: TcpApp::Web(w), .. } => {
            // each session: one response at a time, then a think time; a response takes at
            // least a round trip
            let rtt = rtt_guess(sc);
            let cycle = (w.think.capped_mean() + rtt).max(1e-6);
            let opened = g.count as f64 * (active / cycle).ceil();
            Conns { opened, open: g.count as f64, rate: opened / active.max(1e-9) }
        }
        _ => Conns { opened: 0.0, open: g.static_flows() as f64, rate: 0.0 },
    }
}

/// What a group offers and what its path carries.
#[derive(Debug, Clone, Copy)]
struct Carried {
    /// Packets per second offered (windows over a round trip for TCP without a size, its bytes
    /// for sized transfers and short connections, its rate for UDP) and carried: scaled down where
    /// the groups crossing a link offer more than the link's rate, and to what the group's access
    /// links carry.
    offered: f64,
    carried: f64,
    /// Packet size (bytes), active seconds, data and ACK routes.
    size: f64,
    active: f64,
    fwd: usize,
    rev: usize,
}

fn carried(sc: &Scenario, conns: &[Conns]) -> Vec<Carried> {
    let t = &sc.topology;
    let rtt_s = rtt_guess(sc) + 0.01;
    let mut out = Vec::with_capacity(sc.groups.len());
    for (g, c) in sc.groups.iter().zip(conns) {
        let (from, until) = active_span(g, sc);
        let active = until - from;
        let n = g.count as f64;
        let (pps, size) = match &g.transport {
            Transport::Tcp { cfg, app } => {
                let mss = cfg.mss.max(1) as f64;
                let segs = |bytes: f64| (bytes / mss).ceil().max(1.0);
                // a window a round trip, and with random loss on the path no more than TCP's
                // loss-limited rate (Mathis et al.: 1.22 / sqrt(p) segments a round trip)
                let loss = t.routes[g.endpoints[0].fwd as usize]
                    .iter()
                    .chain(&t.routes[g.endpoints[0].rev as usize])
                    .fold(0.0f64, |a, &l| a.max(t.links[l as usize].spec.loss_rate));
                let limit = if loss > 0.0 { 1.22 / loss.sqrt() } else { f64::INFINITY };
                let window = (cfg.max_window as f64).min(limit) / rtt_s;
                let pps = match app {
                    TcpApp::Bulk { size: None } => n * window,
                    TcpApp::Bulk { size: Some(b) } => (n * segs(*b as f64) / active.max(1e-9)).min(n * window),
                    TcpApp::Short(s) => match &s.size {
                        Some(d) => c.rate * segs(d.capped_mean()),
                        None => c.open * window,
                    },
                    TcpApp::Web(w) => c.rate * segs(w.response.capped_mean()),
                };
                (pps, mss)
            }
            Transport::Udp { cbr, onoff, .. } => {
                let duty = onoff.as_ref().map_or(1.0, |o| {
                    let (on, off) = (o.on.capped_mean(), o.off.capped_mean());
                    if on + off > 0.0 {
                        on / (on + off)
                    } else {
                        1.0
                    }
                });
                (n * duty * cbr.rate_bps as f64 / (8.0 * cbr.size.max(1) as f64), cbr.size.max(1) as f64)
            }
        };
        let e = g.endpoints[0];
        out.push(Carried { offered: pps, carried: pps, size, active, fwd: e.fwd as usize, rev: e.rev as usize });
    }
    // bits per second offered to each link
    let mut load = vec![0.0f64; t.links.len()];
    for o in &out {
        for &l in &t.routes[o.fwd] {
            load[l as usize] += o.offered * o.size * 8.0;
        }
    }
    for (g, o) in sc.groups.iter().zip(out.iter_mut()) {
        let share = t.routes[o.fwd]
            .iter()
            .map(|&l| {
                let l = l as usize;
                if load[l] > 0.0 {
                    (t.links[l].spec.rate_bps / load[l]).min(1.0)
                } else {
                    1.0
                }
            })
            .fold(1.0, f64::min);
        // the group's access links carry at most their rate (each flow, or each host pair)
        let access = (0..g.count.min(64) as usize)
            .map(|i| g.sender_rate.get(i).0.min(g.receiver_rate.get(i).0))
            .fold(f64::INFINITY, f64::min);
        o.carried = (o.offered * share).min(g.count as f64 * access / (8.0 * o.size));
    }
    out
}

/// Whether a short group's connections open faster than they can finish, so that ever more of
/// them stay open: its transfers offer more than its path carries, or (connections of a given
/// duration) more are open at once than the path holds packets (a round trip of its slowest
/// link and that link's buffer), so each gets less than a packet per round trip and lives on in
/// timeouts long after its duration.
fn overloaded(sc: &Scenario, g: &GroupSpec, c: &Conns, k: &Carried) -> bool {
    let Transport::Tcp { app: TcpApp::Short(s), .. } = &g.transport else { return false };
    if s.size.is_some() {
        return k.offered > k.carried * 1.0001;
    }
    let t = &sc.topology;
    let holds = t.routes[k.fwd]
        .iter()
        .map(|&l| {
            let spec = &t.links[l as usize].spec;
            let buffer = match spec.limit.unit {
                QueueUnit::Packets => spec.limit.value as f64,
                QueueUnit::Bytes => spec.limit.value as f64 / k.size,
            };
            spec.rate_bps / (8.0 * k.size) * (rtt_guess(sc) + 0.01) + buffer
        })
        .fold(f64::INFINITY, f64::min);
    c.open > holds
}

/// Rows of the per-flow series (`simulation.flow_series_interval` = `iv`): a sample has a row for
/// each flow that has started and not finished, and the last row of each flow that finished in
/// the interval before. A static flow has at most a row a sample; a web session one response
/// open at a time, and each response one last row; a short group its connections open at once
/// (arrivals over a connection's life) and one last row each, and, when its connections open
/// faster than they finish ([`overloaded`]), also those left open so far, which grow with the
/// time (the rows then grow with the square of the run's length) — never more than one per
/// connection opened so far.
fn flow_series_rows(sc: &Scenario, iv: aqm::Time, conns: &[Conns], carried: &[Carried]) -> f64 {
    let k_max = sc.duration.saturating_sub(1) / iv; // samples at iv, 2 iv, ... before the end
    let step = iv as f64 / NS_PER_SEC as f64;
    let mut rows = 0.0;
    for ((g, c), k) in sc.groups.iter().zip(conns).zip(carried) {
        rows += match &g.transport {
            Transport::Tcp { app: TcpApp::Short(s), .. } => {
                let (from, until) = active_span(g, sc);
                let opened_by = |t: f64| c.rate * (t.clamp(from, until) - from);
                // connections left open per second: arrivals less what the path completes
                let left = if !overloaded(sc, g, c, k) {
                    0.0
                } else if let Some(d) = &s.size {
                    let segs = (d.capped_mean() / k.size).ceil().max(1.0);
                    (c.rate - k.carried / segs).max(0.0)
                } else {
                    c.rate
                };
                let leftover = |t: f64| left * (t.clamp(from, until) - from);
                (1..=k_max)
                    .map(|i| {
                        let t = i as f64 * step;
                        opened_by(t).min(c.open.min(opened_by(t)) + leftover(t))
                    })
                    .sum::<f64>()
                    + c.opened
            }
            Transport::Tcp { app: TcpApp::Web(_), .. } => g.count as f64 * k_max as f64 + c.opened,
            _ => g.count as f64 * k_max as f64,
        };
    }
    rows
}

/// Events the run will process, estimated from what each group sends and what its path carries
/// ([`carried`]; docs/scenarios.md, "Resources"): a carried packet is an event per link of its
/// path (access links included), and a TCP packet one more per link of its ACK's way back; a UDP
/// packet a link drops is its send and its first link; each connection its arrival, its stop and
/// its initial window there and back; plus every sample, snapshot, per-flow sample and AQM timer.
/// Not counted: TCP's timers (retransmission timeouts, delayed ACKs) and packets TCP sends beyond
/// what the path carries (its losses).
fn events(sc: &Scenario, conns: &[Conns], carried: &[Carried], samples: u64) -> f64 {
    let t = &sc.topology;
    let mut ev = 0.0;
    for ((g, c), k) in sc.groups.iter().zip(conns).zip(carried) {
        let hops_f = t.routes[k.fwd].len() as f64 + 2.0;
        let hops_r = t.routes[k.rev].len() as f64 + 2.0;
        ev += match &g.transport {
            Transport::Tcp { cfg, .. } => {
                let iw = cfg.initial_window.min(cfg.max_window as f64).max(1.0);
                k.active * k.carried * (hops_f + hops_r) + c.opened * (3.0 + iw * (hops_f + hops_r))
            }
            Transport::Udp { .. } => k.active * (k.carried * (hops_f + 1.0) + (k.offered - k.carried).max(0.0) * 2.0),
        };
    }
    let dur_s = sc.duration as f64 / NS_PER_SEC as f64;
    let mut other = samples as f64;
    if sc.queue_snapshots {
        other += ((sc.duration - sc.warmup) / sc.sample_interval + 1) as f64;
    }
    if let Some(iv) = sc.flow_series_interval {
        other += (sc.duration / iv) as f64;
    }
    for l in t.links.iter().filter(|l| l.spec.aqm.name() != "droptail") {
        let q = l.spec.aqm.build::<Packet>(LinkInfo { rate_bps: l.spec.rate_bps }, l.spec.limit);
        if let Some(p) = aqm::Qdisc::<Packet>::timer_period(&q).filter(|&p| p > 0) {
            other += dur_s * NS_PER_SEC as f64 / p as f64;
        }
    }
    ev + other
}

/// Packets the measured links' buffers hold when full (a dumbbell: its bottleneck's).
fn buffer_packets(sc: &Scenario) -> u64 {
    measured(sc)
        .map(|l| match l.spec.limit.unit {
            QueueUnit::Packets => l.spec.limit.value,
            // the smallest packet any group sends
            QueueUnit::Bytes => l.spec.limit.value / 40,
        })
        .fold(0, u64::saturating_add)
}

/// The measured links (the places a queue is expected to build).
fn measured(sc: &Scenario) -> impl Iterator<Item = &crate::scenario::TopoLink> {
    sc.topology.links.iter().filter(|l| l.monitor)
}

/// Twice the longest round trip of the groups' routes through the network, in seconds (a
/// dumbbell: twice bottleneck plus reverse delay).
fn rtt_guess(sc: &Scenario) -> f64 {
    let t = &sc.topology;
    let route = |r: u32| t.routes[r as usize].iter().map(|&l| t.links[l as usize].spec.delay as f64).sum::<f64>();
    let rtt = sc.groups.iter().map(|g| route(g.endpoints[0].fwd) + route(g.endpoints[0].rev)).fold(0.0, f64::max);
    2.0 * rtt / NS_PER_SEC as f64
}

impl Estimate {
    /// The estimate for `sc`.
    pub fn of(sc: &Scenario) -> Estimate {
        let mut e = Estimate::default();
        let mut concurrent = 0.0f64;
        let mut window_pkts = 0.0f64;
        let mut burst_pkts = 0.0f64;
        let mut udp_pps = 0.0f64;
        let conns: Vec<Conns> = sc.groups.iter().map(|g| connections(g, sc)).collect();
        let rtt_s = rtt_guess(sc) + 0.01;
        for (g, c) in sc.groups.iter().zip(&conns) {
            let per_flow = flow_bytes(g, sc.warmup > 0);
            e.flows = e.flows.saturating_add(g.count as u64 * per_flow);
            let n = c.opened.min(u64::MAX as f64 / 2.0) as u64;
            e.n_connections = e.n_connections.saturating_add(n);
            e.connections = e.connections.saturating_add(n.saturating_mul(per_flow - 4 * crate::sim::LINK_BYTES));
            let open = c.open;
            concurrent += open;
            match &g.transport {
                Transport::Tcp { cfg, app } => {
                    window_pkts += open * cfg.max_window as f64;
                    // the initial windows out at once: of flows that exist from the start, those
                    // that start within a round trip of each other (all of them for one start
                    // time; a round trip's share of a uniform start's span); later, a flow's
                    // window is clocked by its ACKs, and its packets are in the round trip and
                    // the buffers counted below
                    let starting = match (app, g.start) {
                        (TcpApp::Bulk { .. }, crate::scenario::StartSpec::Uniform(lo, hi)) if hi > lo => {
                            open * (rtt_s * NS_PER_SEC as f64 / (hi - lo) as f64).min(1.0)
                        }
                        _ => open,
                    };
                    burst_pkts += starting * cfg.initial_window.min(cfg.max_window as f64);
                }
                Transport::Udp { cbr, .. } => {
                    udp_pps += g.count as f64 * cbr.rate_bps as f64 / (8.0 * cbr.size as f64);
                }
            }
        }
        // packets at once: the bottleneck's buffer, what its link carries in a round trip, and
        // each open connection's initial burst and each UDP source's round trip of packets
        // waiting at the access links, bounded by the windows
        // (the measured links' packets per second at the groups' smallest data packet, and as many
        // ACKs coming back: one per data packet at most)
        let smallest = sc
            .groups
            .iter()
            .map(|g| match &g.transport {
                Transport::Tcp { cfg, .. } => cfg.mss as f64,
                Transport::Udp { cbr, .. } => cbr.size as f64,
            })
            .fold(f64::MAX, f64::min)
            .max(40.0);
        let bneck_pps = 2.0 * measured(sc).map(|l| l.spec.rate_bps).sum::<f64>() / (8.0 * smallest);
        let bdp = bneck_pps * rtt_s;
        let udp_access = (udp_pps * rtt_s).min(concurrent * sc.access_limit as f64);
        let pkts = buffer_packets(sc) as f64 + (window_pkts + udp_pps * rtt_s).min(bdp + burst_pkts + udp_access);
        e.n_packets = pkts.min(u64::MAX as f64 / 2.0) as u64;
        e.packets = e.n_packets.saturating_mul(PACKET_BYTES);
        // result tables
        let rows = sc.n_static_flows() as u64 + e.n_connections;
        let names = name_lengths(sc);
        let flow_table = flow_row(&names).rows(rows);
        e.flow_table = flow_table.python();
        let samples = sc.duration / sc.sample_interval + 1;
        // a row per sample per measured link; the columns: time, link, queue (packets, bytes),
        // utilisation, drops, and every state variable any measured link's AQM has (NaN where
        // another link's AQM has it)
        let mut state: Vec<&str> = Vec::new();
        let mut links = 0u64;
        for l in measured(sc) {
            let q = l.spec.aqm.build::<Packet>(LinkInfo { rate_bps: l.spec.rate_bps }, l.spec.limit);
            for n in aqm::Qdisc::<Packet>::state_names(&q).iter().take(8) {
                if !state.contains(n) {
                    state.push(n);
                }
            }
            links += 1;
        }
        let row = if links > 0 { Cells::row(5 + state.len() as u64, &[names.link]) } else { Cells::default() };
        let mut series = row.rows(samples.saturating_mul(links));
        e.timeseries = series.python();
        if sc.queue_snapshots {
            let after_warmup = (sc.duration - sc.warmup) / sc.sample_interval + 1;
            // a row per waiting packet: time, position, queue length, flow; link, group, transport
            let snapshots = Cells::row(4, &[names.link, names.group, TRANSPORT_LEN])
                .rows(after_warmup.saturating_mul(buffer_packets(sc)));
            e.snapshots = snapshots.python();
            series = series.add(snapshots);
        }
        let carried = carried(sc, &conns);
        if let Some(iv) = sc.flow_series_interval {
            let n = flow_series_rows(sc, iv, &conns, &carried);
            e.flow_series_rows = n.min(u64::MAX as f64 / 8.0) as u64;
            // time, flow, throughput, goodput, cwnd, pacing rate, srtt, retransmissions; group, transport
            let flow_series = Cells::row(8, &[names.group, TRANSPORT_LEN]).rows(e.flow_series_rows);
            e.flow_series = flow_series.python();
            series = series.add(flow_series);
        }
        if let Some(l) = crate::latency::Latency::new(sc) {
            // two histograms per slot, and the latency table's rows: one per non-empty bucket, a
            // few hundred in practice (256 assumed): flow, delay, count, cdf; group, metric
            let per = 2
                * (crate::latency::BUCKETS as u64 * 4 + Cells::row(4, &[names.group, VARIANT_LEN]).rows(256).python());
            e.latency = (l.slots.len() as u64).saturating_mul(per);
        }
        e.events = events(sc, &conns, &carried, samples);
        // The peak is the largest of three moments: the event loop's end (the engine's state, and
        // the Rust columns of the tables that grow during the run), the results being built (the
        // access links freed, every table's Rust columns), and the tables in Python (each Rust
        // column freed as it is converted; read as DataFrames: the numeric columns viewed, the
        // categorical ones as pandas strings beside their lists).
        let tables = series.add(flow_table);
        let engine = e.flows.saturating_add(e.connections).saturating_add(e.packets).saturating_add(e.latency);
        // (and every flow's TCP state, the results keeping a small record of each flow)
        let flows_freed = crate::sim::FLOW_BYTES
            .saturating_sub(RECORD_BYTES)
            .saturating_mul((sc.n_static_flows() as u64).saturating_add(e.n_connections));
        let released = (sc.n_static_flows() as u64).saturating_mul(RELEASED_BYTES).saturating_add(flows_freed);
        let run = engine.saturating_add(series.rust());
        // (the engine's own series are copied into the tables: they are there twice)
        let results = engine
            .saturating_sub(released)
            .saturating_sub(e.packets)
            .saturating_add(series.rust())
            .saturating_add(tables.rust());
        e.total = BASE_BYTES.saturating_add(run.max(results).max(tables.python()));
        e
    }

    /// The key path and the largest parts, for a message.
    fn largest(&self, dumbbell: bool) -> (&'static str, String) {
        let mut parts = [
            (self.flows, "flows", format!("{} for the flows", human(self.flows))),
            (
                self.connections,
                "flows",
                format!("{} for {} short/web connections", human(self.connections), self.n_connections),
            ),
            (
                self.packets,
                if dumbbell { "bottleneck.limit" } else { "topology" },
                format!("{} for {} packets in queues and links", human(self.packets), self.n_packets),
            ),
            (self.flow_table, "flows", format!("{} for the per-flow results", human(self.flow_table))),
            (self.timeseries, "simulation.sample_interval", format!("{} for the time series", human(self.timeseries))),
            (
                self.snapshots,
                "simulation.queue_snapshots",
                format!("{} for the queue snapshots", human(self.snapshots)),
            ),
            (
                self.flow_series,
                "simulation.flow_series_interval",
                format!("{} for the per-flow series", human(self.flow_series)),
            ),
            (self.latency, "simulation.latency", format!("{} for the latency histograms", human(self.latency))),
        ];
        parts.sort_by_key(|p| std::cmp::Reverse(p.0));
        let mut text: Vec<String> = parts.iter().take(2).filter(|p| p.0 > 0).map(|p| p.2.clone()).collect();
        if parts[0].0 < BASE_BYTES {
            text.insert(0, format!("{} for the process itself", human(BASE_BYTES)));
        }
        (parts[0].1, text.join(", "))
    }
}

/// `b` bytes as "1.2 GB".
pub fn human(b: u64) -> String {
    let b = b as f64;
    let (v, u) = match b {
        x if x >= 1e12 => (x / 1e12, "TB"),
        x if x >= 1e9 => (x / 1e9, "GB"),
        x if x >= 1e6 => (x / 1e6, "MB"),
        x if x >= 1e3 => (x / 1e3, "kB"),
        x => (x, "B"),
    };
    format!("{v:.1} {u}")
}

/// Where a memory limit comes from; it says so in the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitSource {
    /// `--max-memory`, `max_memory=` or `$AQMLAB_MAX_MEMORY`.
    Given,
    /// The default: half the machine's memory (or of its cgroup's limit, if lower).
    Default,
    /// The memory limit of the process's cgroup (v1 `memory.limit_in_bytes`, v2 `memory.max`).
    Cgroup,
    /// What the process's address-space limit (`RLIMIT_AS`, `ulimit -v`) leaves free.
    AddressSpace,
}

impl LimitSource {
    /// The end of the refusal's message: where the limit comes from and how to change it.
    fn how(self) -> &'static str {
        match self {
            LimitSource::Given | LimitSource::Default => "set it with --max-memory or max_memory=",
            LimitSource::Cgroup => "this process's cgroup memory limit; --max-memory cannot raise it",
            LimitSource::AddressSpace => {
                "what this process's address-space limit (ulimit -v) leaves free; --max-memory cannot raise it"
            }
        }
    }
}

/// A memory limit for one run: bytes, and where they come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    pub source: LimitSource,
}

impl Limit {
    /// A limit given by the caller (no cap by the process's own limits).
    pub fn given(bytes: u64) -> Limit {
        Limit { bytes, source: LimitSource::Given }
    }
}

impl From<u64> for Limit {
    fn from(bytes: u64) -> Limit {
        Limit::given(bytes)
    }
}

/// Refuse `sc` if its estimate is above `limit` (bytes, or a [`Limit`]); otherwise the estimate.
pub fn check(sc: &Scenario, limit: impl Into<Limit>) -> Result<Estimate, ScenarioError> {
    let limit = limit.into();
    let e = Estimate::of(sc);
    if e.total > limit.bytes {
        let (path, parts) = e.largest(sc.bottleneck().is_some());
        return Err(ScenarioError::new(
            path,
            format!(
                "the run would need about {} of memory ({parts}), more than the limit of {} ({})",
                human(e.total),
                human(limit.bytes),
                limit.source.how()
            ),
        ));
    }
    Ok(e)
}

/// What bounds the memory of this process, as read from `/proc` and the cgroup file system
/// (Linux; elsewhere every field is `None`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    /// The machine's memory (`MemTotal`).
    pub ram: Option<u64>,
    /// The smallest memory limit of the process's cgroup and its ancestors (v2 `memory.max`,
    /// v1 `hierarchical_memory_limit` or `memory.limit_in_bytes`), if any is set.
    pub cgroup: Option<u64>,
    /// The soft address-space limit (`RLIMIT_AS`), if any, and the address space in use now
    /// (`VmSize`).
    pub address_space: Option<u64>,
    pub address_space_used: u64,
}

/// Cgroup limits at or above this are "no limit" (v1 writes 2^63 rounded down to a page).
const NO_CGROUP_LIMIT: u64 = 1 << 60;

impl ProcessMemory {
    /// The limits of this process.
    pub fn read() -> ProcessMemory {
        Self::read_from(std::path::Path::new("/proc"), std::path::Path::new("/sys/fs/cgroup"))
    }

    /// The limits as found under `proc` (`meminfo`, `self/limits`, `self/status`, `self/cgroup`)
    /// and `cgroup` (the cgroup file system's mount point).
    pub fn read_from(proc: &std::path::Path, cgroup: &std::path::Path) -> ProcessMemory {
        let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
        let ram = read(proc.join("meminfo")).and_then(|s| kib_field(&s, "MemTotal:"));
        // "Max address space   <soft>   <hard>   bytes"
        let address_space = read(proc.join("self/limits")).and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Max address space"))?;
            line["Max address space".len()..].split_whitespace().next()?.parse::<u64>().ok()
        });
        let used = read(proc.join("self/status")).and_then(|s| kib_field(&s, "VmSize:")).unwrap_or(0);
        let cg = read(proc.join("self/cgroup")).and_then(|s| cgroup_limit(&s, cgroup));
        ProcessMemory { ram, cgroup: cg, address_space, address_space_used: used }
    }

    /// The limit a run gets: `given` (else half of the machine's memory or of the cgroup limit,
    /// whichever is lower; 8 GB when neither can be read), lowered to the cgroup limit and to the
    /// address space left under `RLIMIT_AS`, whichever binds. The estimate includes the process's
    /// own [`BASE_BYTES`]; what of it is already in use (`VmSize`) is added back to the space left,
    /// so this limit is never above `RLIMIT_AS` itself.
    pub fn limit(&self, given: Option<u64>) -> Limit {
        let mut l = match given {
            Some(b) => Limit::given(b),
            None => {
                let m = match (self.ram, self.cgroup) {
                    (Some(r), Some(c)) => Some(r.min(c)),
                    (r, c) => r.or(c),
                };
                Limit { bytes: m.map_or(8_000_000_000, |m| m / 2), source: LimitSource::Default }
            }
        };
        if let Some(c) = self.cgroup {
            if c < l.bytes {
                l = Limit { bytes: c, source: LimitSource::Cgroup };
            }
        }
        if let Some(a) = self.address_space {
            // the part of BASE_BYTES already in use is not needed again
            let used = self.address_space_used;
            let left = a.saturating_sub(used).saturating_add(used.min(BASE_BYTES));
            if left < l.bytes {
                l = Limit { bytes: left, source: LimitSource::AddressSpace };
            }
        }
        l
    }
}

/// A "Name:   123 kB" field of a /proc file, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kb: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// The smallest memory limit on the way from the process's cgroup (as `/proc/self/cgroup` names
/// it) up to the root of `root` (the cgroup mount): v2 (`0::/path`, `memory.max`) and v1 (a
/// `memory` controller line, `memory.limit_in_bytes`, or the whole hierarchy's
/// `hierarchical_memory_limit` from `memory.stat`). In a container the path may name a cgroup
/// that is not visible (its own namespace is the mount's root): the root's files are read then.
fn cgroup_limit(self_cgroup: &str, root: &std::path::Path) -> Option<u64> {
    let mut best: Option<u64> = None;
    let mut take = |v: Option<u64>| {
        if let Some(v) = v.filter(|&v| v > 0 && v < NO_CGROUP_LIMIT) {
            best = Some(best.map_or(v, |b| b.min(v)));
        }
    };
    let number = |p: std::path::PathBuf| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok());
    for line in self_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else { continue };
        let rel = path.trim_start_matches('/');
        if controllers.is_empty() {
            // v2: the unified hierarchy at the mount point itself, or at `unified/` in hybrid mode
            for base in [root.to_path_buf(), root.join("unified")] {
                if !base.join("cgroup.controllers").exists() {
                    continue;
                }
                let mut dir = base.join(rel);
                if !dir.is_dir() {
                    dir = base.clone();
                }
                loop {
                    take(number(dir.join("memory.max")));
                    if dir == base || !dir.pop() {
                        break;
                    }
                }
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            let base = [root.join("memory"), root.join(controllers)].into_iter().find(|b| b.is_dir());
            let Some(base) = base else { continue };
            let mut dir = base.join(rel);
            if !dir.is_dir() {
                dir = base.clone();
            }
            take(number(dir.join("memory.limit_in_bytes")));
            let stat = std::fs::read_to_string(dir.join("memory.stat")).ok();
            take(stat.as_deref().and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("hierarchical_memory_limit "))?;
                line.split_whitespace().nth(1)?.parse().ok()
            }));
        }
    }
    best
}

/// Physical memory of the machine (or the cgroup's limit, if lower), if known.
pub fn physical_memory() -> Option<u64> {
    let m = ProcessMemory::read();
    match (m.ram, m.cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

/// The limit of a run in this process: `given` bytes, or by default half the machine's memory
/// (or of its cgroup's limit), lowered to what the cgroup and the address-space limit allow
/// ([`ProcessMemory::limit`]).
pub fn process_limit(given: Option<u64>) -> Limit {
    ProcessMemory::read().limit(given)
}

/// The default limit in this process (see [`process_limit`]), in bytes.
pub fn default_limit() -> u64 {
    process_limit(None).bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str, flows: &str) -> Scenario {
        let text = format!(
            "[simulation]\nduration = \"10s\"\n{extra}\n[bottleneck]\nrate = \"10Mb/s\"\ndelay = \"10ms\"\nlimit = 100\n{flows}"
        );
        crate::load(&text, &[], "t").unwrap()
    }

    #[test]
    fn ten_million_flows_are_refused_with_the_estimate_and_the_limit() {
        let sc = scenario("", "[[flows]]\ntransport = \"tcp\"\ncount = 10000000\n");
        // (about 0.7 kB of engine state a flow: they fit in 8 GB, not in 4)
        assert!(check(&sc, 8_000_000_000).is_ok());
        let e = check(&sc, 4_000_000_000).unwrap_err();
        assert_eq!(e.path, "flows");
        assert!(e.msg.contains("GB") && e.msg.contains("more than the limit of 4.0 GB"), "{e}");
    }

    #[test]
    fn snapshots_every_microsecond_are_refused() {
        let sc = scenario("sample_interval = \"1us\"\nqueue_snapshots = true", "[[flows]]\ntransport = \"tcp\"\n");
        let e = check(&sc, 8_000_000_000).unwrap_err();
        assert_eq!(e.path, "simulation.queue_snapshots", "{e}");
    }

    #[test]
    fn small_runs_fit_and_estimates_grow_with_the_load() {
        let small = check(&scenario("", "[[flows]]\ntransport = \"tcp\"\ncount = 10\n"), 1 << 30).unwrap();
        let big = Estimate::of(&scenario("", "[[flows]]\ntransport = \"tcp\"\ncount = 10000\n"));
        assert!(big.flows > 900 * small.flows, "{small:?} {big:?}");
        let short = Estimate::of(&scenario(
            "",
            "[[flows]]\ntransport = \"tcp\"\napp = \"short\"\narrival_rate = 100\nsize = \"10KB\"\n",
        ));
        // a Poisson count of mean 1000 at its bound: the mean, four standard deviations and one
        assert_eq!(short.n_connections, 1127);
    }

    /// A fake /proc and cgroup mount under a fresh temporary folder.
    fn fake(files: &[(&str, &str)]) -> std::path::PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "aqmlab-budget-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        root
    }

    const MEMINFO: &str = "MemTotal:       16000000 kB\nMemFree:         1000 kB\n";
    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units\n\
        Max address space         8589934592           unlimited            bytes\n";
    const UNLIMITED: &str = "Max address space         unlimited            unlimited            bytes\n";

    fn read(root: &std::path::Path) -> ProcessMemory {
        ProcessMemory::read_from(&root.join("proc"), &root.join("cg"))
    }

    #[test]
    fn the_address_space_limit_binds_with_what_is_in_use_counted() {
        let root = fake(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/limits", LIMITS),
            ("proc/self/status", "VmPeak:  2000000 kB\nVmSize:  1000000 kB\n"),
            ("proc/self/cgroup", "0::/\n"),
        ]);
        let m = read(&root);
        assert_eq!((m.ram, m.cgroup, m.address_space), (Some(16_384_000_000), None, Some(8 << 30)));
        let l = m.limit(None);
        assert_eq!(l.source, LimitSource::AddressSpace);
        assert_eq!(l.bytes, (8 << 30) - 1_024_000_000 + BASE_BYTES);
        // a process smaller than BASE_BYTES: never more than RLIMIT_AS
        std::fs::write(root.join("proc/self/status"), "VmSize:  30000 kB\n").unwrap();
        assert_eq!(read(&root).limit(Some(100 << 30)).bytes, 8 << 30);
        // a larger limit given cannot raise it; a smaller one is kept
        assert_eq!(m.limit(Some(100 << 30)).source, LimitSource::AddressSpace);
        assert_eq!(m.limit(Some(1 << 30)), Limit::given(1 << 30));
        // without RLIMIT_AS: half the machine
        std::fs::write(root.join("proc/self/limits"), UNLIMITED).unwrap();
        assert_eq!(read(&root).limit(None), Limit { bytes: 8_192_000_000, source: LimitSource::Default });
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn cgroup_v2_limits_are_read_up_the_tree() {
        let root = fake(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/limits", UNLIMITED),
            ("proc/self/cgroup", "0::/slurm/job1/step0\n"),
            ("cg/cgroup.controllers", "memory pids\n"),
            ("cg/slurm/memory.max", "max\n"),
            ("cg/slurm/job1/memory.max", "4000000000\n"),
            ("cg/slurm/job1/step0/memory.max", "max\n"),
        ]);
        let m = read(&root);
        assert_eq!(m.cgroup, Some(4_000_000_000));
        // the default is half the smaller of machine and cgroup; a given limit is capped at the cgroup's
        assert_eq!(m.limit(None), Limit { bytes: 2_000_000_000, source: LimitSource::Default });
        assert_eq!(m.limit(Some(10_000_000_000)), Limit { bytes: 4_000_000_000, source: LimitSource::Cgroup });
        // a container sees its own cgroup as the root of the mount
        std::fs::write(root.join("proc/self/cgroup"), "0::/not/visible/here\n").unwrap();
        std::fs::write(root.join("cg/memory.max"), "3000000000\n").unwrap();
        assert_eq!(read(&root).cgroup, Some(3_000_000_000));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn cgroup_v1_limits_and_the_unlimited_value() {
        let root = fake(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/limits", UNLIMITED),
            ("proc/self/cgroup", "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n"),
            ("cg/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n"),
            ("cg/memory/docker/abc/memory.stat", "cache 0\nhierarchical_memory_limit 2147483648\n"),
        ]);
        assert_eq!(read(&root).cgroup, Some(2 << 30));
        std::fs::write(
            root.join("cg/memory/docker/abc/memory.stat"),
            "hierarchical_memory_limit 9223372036854771712\n",
        )
        .unwrap();
        assert_eq!(read(&root).cgroup, None);
        std::fs::write(root.join("cg/memory/docker/abc/memory.limit_in_bytes"), "1073741824\n").unwrap();
        let m = read(&root);
        assert_eq!(m.limit(None), Limit { bytes: 1 << 29, source: LimitSource::Default });
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn the_refusal_says_where_the_limit_comes_from() {
        let sc = scenario("", "[[flows]]\ntransport = \"tcp\"\ncount = 10000000\n");
        let e = check(&sc, Limit { bytes: 4 << 30, source: LimitSource::AddressSpace }).unwrap_err();
        assert!(e.msg.contains("ulimit -v") && e.msg.contains("4.3 GB"), "{e}");
        let e = check(&sc, Limit { bytes: 4 << 30, source: LimitSource::Cgroup }).unwrap_err();
        assert!(e.msg.contains("cgroup"), "{e}");
        // unreadable files: the 8 GB fallback
        let none = ProcessMemory::read_from(std::path::Path::new("/nonexistent"), std::path::Path::new("/nonexistent"));
        assert_eq!(none.limit(None).bytes, 8_000_000_000);
    }
}
