//! What an emulation run reports: per-flow counters, the bottleneck over the measurement window,
//! its time series and queue snapshots, and packet conservation.
//!
//! The bottleneck is measured by the simulator's own monitor (`sim::monitor::LinkMonitor`: the
//! queue-length integral, the queueing-delay histogram, each flow's packets at the link, the link
//! loss, the snapshot at the start of the window, the time series); this module turns it into the
//! report, with the definitions of docs/metrics.md.

use aqm::{Limit, Time};
use sim::measure::FlowCounters;
use sim::monitor::{AtLink, LinkMonitor, WindowSummary};

use crate::link::Link;
use crate::packet::FlowKey;

/// Per-flow counters: the packet counts the simulator keeps for a flow
/// (`sim::measure::FlowCounters`: sent, retransmitted, delivered, drops by reason, ACK drops, CE
/// marks), counted the same way, and what only the wire gives (a real flow's packets differ in
/// size, so its bytes are counted, not derived).
#[derive(Debug, Clone, Copy, Default)]
pub struct FlowCtr {
    /// Data packets read from the flow's sender (retransmissions included: TCP data segments
    /// whose sequence number is below the highest already sent), written to its receiver, marked
    /// CE there, dropped by reason on the forward path, and its ACKs dropped (any reason).
    pub pkts: FlowCounters,
    /// Bytes of the data packets sent, delivered, and delivered as retransmissions.
    pub sent_bytes: u64,
    pub delivered_bytes: u64,
    pub delivered_retx_bytes: u64,
    /// New payload bytes delivered: for TCP the advance of the highest sequence number delivered,
    /// for UDP every payload byte.
    pub progress_bytes: u64,
    /// Packets of the flow offered to the bottleneck queue (after link loss), and transmitted
    /// (the bottleneck's monitor counts them; filled in when the report is made).
    pub bneck_arrivals: u64,
    pub bneck_tx_pkts: u64,
    pub bneck_tx_bytes: u64,
    /// Packets of the flow read in the reverse direction.
    pub rev_pkts: u64,
}

impl FlowCtr {
    fn since(&self, b: &FlowCtr) -> FlowCtr {
        FlowCtr {
            pkts: self.pkts.since(&b.pkts),
            sent_bytes: self.sent_bytes - b.sent_bytes,
            delivered_bytes: self.delivered_bytes - b.delivered_bytes,
            delivered_retx_bytes: self.delivered_retx_bytes - b.delivered_retx_bytes,
            progress_bytes: self.progress_bytes - b.progress_bytes,
            bneck_arrivals: self.bneck_arrivals - b.bneck_arrivals,
            bneck_tx_pkts: self.bneck_tx_pkts - b.bneck_tx_pkts,
            bneck_tx_bytes: self.bneck_tx_bytes - b.bneck_tx_bytes,
            rev_pkts: self.rev_pkts - b.rev_pkts,
        }
    }

    /// These counters with the flow's packets at the bottleneck.
    fn with_bottleneck(mut self, a: AtLink) -> FlowCtr {
        self.bneck_arrivals = a.arrivals as u64;
        self.bneck_tx_pkts = a.tx_pkts as u64;
        self.bneck_tx_bytes = a.tx_bytes;
        self
    }
}

/// A flow's report.
#[derive(Debug, Clone)]
pub struct FlowReport {
    pub key: FlowKey,
    /// When its first packet was read (ns of the run).
    pub first_seen: Time,
    /// Counters over the window, and over the whole run.
    pub window: FlowCtr,
    pub total: FlowCtr,
}

/// The bottleneck over the window: the link, and what its monitor measured
/// ([`sim::monitor::WindowSummary`], as the simulator's summary says it).
#[derive(Debug, Clone)]
pub struct BottleneckReport {
    pub capacity_bps: f64,
    pub delay_s: f64,
    pub limit: Limit,
    pub aqm: &'static str,
    pub window: WindowSummary,
}

/// Packet conservation over the whole run: `read = written + dropped + unroutable + in_flight`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    /// Packets read from the ports.
    pub read: u64,
    /// Packets handed to the ports.
    pub written: u64,
    /// Packets dropped by a queue or lost to `loss_rate`.
    pub dropped: u64,
    /// Packets that were not IPv4 between a sender and a receiver address of this run (dropped
    /// on arrival, never queued).
    pub unroutable: u64,
    /// Packets held by a link when the run ended.
    pub in_flight: u64,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Report {
    pub flows: Vec<FlowReport>,
    pub bottleneck: BottleneckReport,
    /// The bottleneck's time series, as its monitor sampled it.
    pub series: sim::monitor::Series,
    /// The queue snapshots of the measured link (the bottleneck; Python is not given its `link`
    /// column).
    pub snapshots: Option<sim::monitor::Snapshots>,
    pub counts: Counts,
}

/// Every flow's counters over the window (since `base`, taken at its start) and over the run,
/// with its packets at the bottleneck from the bottleneck's monitor `m`.
pub(crate) fn flows(
    flows: &[(FlowKey, Time)],
    ctr: &[FlowCtr],
    base: Option<&[FlowCtr]>,
    m: &LinkMonitor,
) -> Vec<FlowReport> {
    let zero = FlowCtr::default();
    let base = base.unwrap_or(&[]);
    flows
        .iter()
        .zip(ctr)
        .enumerate()
        .map(|(i, ((key, first), c))| FlowReport {
            key: *key,
            first_seen: *first,
            window: c.since(base.get(i).unwrap_or(&zero)).with_bottleneck(m.flow_in_window(i)),
            total: c.with_bottleneck(m.flows[i]),
        })
        .collect()
}

/// The bottleneck `b`, described by `spec`, over the window `[warmup, end)` as its monitor `m`
/// measured it (its integrals closed at `end`).
pub(crate) fn bottleneck(
    b: &Link,
    spec: &crate::LinkConfig,
    m: &LinkMonitor,
    (warmup, end): (Time, Time),
) -> BottleneckReport {
    BottleneckReport {
        capacity_bps: b.rate as f64,
        delay_s: spec.delay as f64 / 1e9,
        limit: spec.limit,
        aqm: spec.aqm.name(),
        window: m.window_summary(&b.q.stats, (end - warmup) as f64),
    }
}
