//! What a run will need, estimated from the scenario alone, before any work starts.
//!
//! [`Estimate::of`] adds up the memory a run of a validated [`Scenario`] holds at its peak — the
//! engine's state per flow (sender and receiver, four access links, counters, timers, events),
//! the short and web connections it will open, the packets that can wait in queues and travel on
//! links, and the tables it returns (per-flow results, time series, queue snapshots, per-flow
//! series), counted as they are when a run goes through `aqmlab` (Rust columns, then Python lists,
//! then pandas frames: [`CELL_BYTES`] a value) — and the number of events it will process.
//! [`check`] refuses a scenario whose estimate is above a limit, with the estimate, its largest
//! parts and the limit in the message; [`default_limit`] is half the machine's physical memory
//! (or of a cgroup limit, if lower). docs/scenarios.md ("Resources") says how close the estimate
//! came to the peak memory measured at several sizes.
//!
//! Quantities that depend on the dynamics (how long a short connection lives, how full a queue
//! is) are taken at their bound where there is one (a queue at its limit), and at a documented
//! guess where there is none, so the estimate is an upper bound for the tables and close for the
//! engine state, never exact.

use crate::packet::Packet;
use crate::scenario::{GroupSpec, Scenario, ScenarioError, TcpApp, Transport};
use aqm::{LinkInfo, QueueUnit, NS_PER_SEC};

/// Bytes one table value costs at the peak of a run through `aqmlab`: 8 in the Rust column
/// (with growth slack), 32 as a Python float in a list (object and pointer), 8 in the pandas
/// frame; 58 measured on a million-sample time series.
pub const CELL_BYTES: u64 = 58;
/// Columns of the per-flow results table: real-valued ones, and counters (mostly small
/// integers, which Python shares: about 30 bytes a value).
const FLOW_REAL_COLUMNS: u64 = 28;
const FLOW_COUNT_COLUMNS: u64 = 9;
const COUNT_CELL_BYTES: u64 = 30;
/// A string column value (group, transport, app, variant names) as a Python `str`.
const STR_CELL_BYTES: u64 = 64;
/// Bytes a waiting or travelling packet costs (the 24-byte packet in a queue or a link's pipe,
/// with the ring buffers' growth slack).
const PACKET_BYTES: u64 = 2 * std::mem::size_of::<Packet>() as u64;
/// Heap a TCP sender and receiver allocate beyond their structs (scoreboard and out-of-order
/// bitmap start at one word, grow with the window) and the event-set slots of a flow.
const TCP_HEAP_BYTES: u64 = 256;
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
    /// Events the run will process (order of magnitude; not memory).
    pub events: f64,
    /// Everything, with the process's own [`BASE_BYTES`].
    pub total: u64,
}

/// Bytes of engine state one flow of `g` holds (`warmup`: the run snapshots every flow's
/// counters at the end of its warm-up, so they exist twice).
fn flow_bytes(g: &GroupSpec, warmup: bool) -> u64 {
    let host = 4 * crate::sim::LINK_BYTES + 6 * 4 + 32;
    // (a flow's TCP sender and receiver are inside its `Flow`, whatever its transport)
    let counters = (1 + warmup as u64) * std::mem::size_of::<crate::measure::FlowCounters>() as u64;
    let flow = crate::sim::FLOW_BYTES + counters + 16;
    let app = match g.transport {
        Transport::Tcp { .. } => TCP_HEAP_BYTES,
        Transport::Udp { .. } => 64,
    };
    host + flow + app
}

/// Per-flow results table: numeric values plus four names a row.
fn flow_row_bytes() -> u64 {
    FLOW_REAL_COLUMNS * CELL_BYTES + FLOW_COUNT_COLUMNS * COUNT_CELL_BYTES + 4 * STR_CELL_BYTES
}

/// Connections a short or web group opens during the run, and how many are open at once.
fn connections(g: &GroupSpec, sc: &Scenario) -> (f64, f64) {
    let from = match g.start {
        crate::scenario::StartSpec::At(t) => t,
        crate::scenario::StartSpec::Uniform(lo, _) => lo,
    };
    let until = g.stop.unwrap_or(sc.duration).min(sc.duration);
    let active = until.saturating_sub(from) as f64 / NS_PER_SEC as f64;
    match &g.transport {
        Transport::Tcp { app: TcpApp::Short(s), .. } => {
            // open at once: arrivals over a connection's mean lifetime (its duration, or a guess
            // of one second for size-limited transfers)
            let life = s.duration.map_or(1.0, |d| d.capped_mean());
            (s.arrival_rate * active, s.arrival_rate * life.min(active))
        }
        Transport::Tcp { app: TcpApp::Web(w), .. } => {
            // each session: one response at a time, then a think time; a response takes at
            // least a round trip
            let rtt = rtt_guess(sc);
            let cycle = (w.think.capped_mean() + rtt).max(1e-6);
            (g.count as f64 * (active / cycle).ceil(), g.count as f64)
        }
        _ => (0.0, g.static_flows() as f64),
    }
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
        let dur_s = sc.duration as f64 / NS_PER_SEC as f64;
        let mut concurrent = 0.0f64;
        let mut window_pkts = 0.0f64;
        let mut burst_pkts = 0.0f64;
        let mut udp_pps = 0.0f64;
        for g in &sc.groups {
            let per_flow = flow_bytes(g, sc.warmup > 0);
            e.flows = e.flows.saturating_add(g.count as u64 * per_flow);
            let (n, open) = connections(g, sc);
            let n = n.min(u64::MAX as f64 / 2.0) as u64;
            e.n_connections = e.n_connections.saturating_add(n);
            e.connections = e.connections.saturating_add(n.saturating_mul(per_flow - 4 * crate::sim::LINK_BYTES));
            concurrent += open;
            match &g.transport {
                Transport::Tcp { cfg, .. } => {
                    window_pkts += open * cfg.max_window as f64;
                    burst_pkts += open * cfg.initial_window.min(cfg.max_window as f64);
                }
                Transport::Udp { cbr, .. } => {
                    udp_pps += g.count as f64 * cbr.rate_bps as f64 / (8.0 * cbr.size as f64);
                }
            }
        }
        // packets at once: the bottleneck's buffer, what its link carries in a round trip, and
        // each open connection's initial burst and each UDP source's round trip of packets
        // waiting at the access links, bounded by the windows
        let bneck_pps = measured(sc).map(|l| l.spec.rate_bps).sum::<f64>() / (8.0 * 40.0);
        let rtt_s = rtt_guess(sc) + 0.01;
        let bdp = bneck_pps * rtt_s;
        let udp_access = (udp_pps * rtt_s).min(concurrent * sc.access_limit as f64);
        let pkts = buffer_packets(sc) as f64 + (window_pkts + udp_pps * rtt_s).min(bdp + burst_pkts + udp_access);
        e.n_packets = pkts.min(u64::MAX as f64 / 2.0) as u64;
        e.packets = e.n_packets.saturating_mul(PACKET_BYTES);
        // result tables
        let rows = sc.n_static_flows() as u64 + e.n_connections;
        e.flow_table = rows.saturating_mul(flow_row_bytes());
        let samples = sc.duration / sc.sample_interval + 1;
        // a row per sample per measured link
        let cols: u64 = measured(sc)
            .map(|l| {
                let state = l.spec.aqm.build::<Packet>(LinkInfo { rate_bps: l.spec.rate_bps }, l.spec.limit);
                5 + aqm::Qdisc::<Packet>::state_names(&state).len().min(8) as u64
            })
            .sum();
        e.timeseries = samples.saturating_mul(cols * CELL_BYTES);
        if sc.queue_snapshots {
            let after_warmup = (sc.duration - sc.warmup) / sc.sample_interval + 1;
            e.snapshots = after_warmup.saturating_mul(buffer_packets(sc)).saturating_mul(4 * CELL_BYTES);
        }
        if let Some(iv) = sc.flow_series_interval {
            let n = (sc.duration / iv) as f64 * concurrent;
            e.flow_series = (n.min(u64::MAX as f64 / 8.0) as u64).saturating_mul(5 * CELL_BYTES);
        }
        // events: each packet that crosses the bottleneck is six link events (data and ACK
        // paths), plus UDP sends, timers and samples
        let delivered_pps = bneck_pps.min(window_pkts / rtt_s + udp_pps);
        e.events = dur_s * (6.0 * delivered_pps + udp_pps) + samples as f64;
        e.total = [e.flows, e.connections, e.packets, e.flow_table, e.timeseries, e.snapshots, e.flow_series]
            .iter()
            .fold(BASE_BYTES, |a, &b| a.saturating_add(b));
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
        ];
        parts.sort_by(|a, b| b.0.cmp(&a.0));
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

/// Refuse `sc` if its estimate is above `limit` bytes; otherwise the estimate.
pub fn check(sc: &Scenario, limit: u64) -> Result<Estimate, ScenarioError> {
    let e = Estimate::of(sc);
    if e.total > limit {
        let (path, parts) = e.largest(sc.bottleneck().is_some());
        return Err(ScenarioError::new(
            path,
            format!(
                "the run would need about {} of memory ({parts}), more than the limit of {} (set it with --max-memory or max_memory=)",
                human(e.total),
                human(limit)
            ),
        ));
    }
    Ok(e)
}

/// Physical memory of the machine (or the cgroup's limit, if lower), if known.
pub fn physical_memory() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|s| s.trim().parse::<u64>().ok());
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

/// The default limit: half the physical memory (8 GB where it cannot be read).
pub fn default_limit() -> u64 {
    physical_memory().map_or(8_000_000_000, |m| m / 2)
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
        let e = check(&sc, 8_000_000_000).unwrap_err();
        assert_eq!(e.path, "flows");
        assert!(e.msg.contains("GB") && e.msg.contains("more than the limit of 8.0 GB"), "{e}");
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
        assert_eq!(short.n_connections, 1000);
    }
}
