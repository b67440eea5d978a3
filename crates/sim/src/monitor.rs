//! Link measurement: a [`LinkMonitor`] for every link the scenario measures (`monitor = true`; the
//! dumbbell's bottleneck by default). The engine calls it when a packet arrives at the link's queue,
//! when one starts transmission, and when a packet is lost to the link's random loss; it keeps
//!
//! * the queue-length integral and the queueing-delay histogram ([`QueueMeasure`]);
//! * per flow, the data packets (TCP data, UDP) that arrived at the queue and that were
//!   transmitted, and the same for ACKs and web requests of all flows together;
//! * the snapshot of all of these (and of the queue's statistics) at the start of the window;
//! * the link's time series (filled by the sampling events; queue snapshots of all measured links
//!   are kept together, in [`Snapshots`]).
//!
//! Queueing delays go into a log-bucketed histogram (HdrHistogram, 3 significant digits) rather
//! than being stored, and the queue-length time average is an exact integral over the window.
//! docs/metrics.md defines every figure derived from these.

use crate::packet::{Packet, PktKind};
use aqm::{QueueStats, Time};
use hdrhistogram::Histogram;

/// Packets of one flow (or of all ACKs) at one link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtLink {
    /// Offered to the queue (after the link's random loss).
    pub arrivals: u64,
    /// Started transmission.
    pub tx_pkts: u64,
    pub tx_bytes: u64,
}

impl AtLink {
    pub fn since(&self, base: &AtLink) -> AtLink {
        AtLink {
            arrivals: self.arrivals - base.arrivals,
            tx_pkts: self.tx_pkts - base.tx_pkts,
            tx_bytes: self.tx_bytes - base.tx_bytes,
        }
    }
}

/// The counters at the start of the measurement window.
#[derive(Debug, Clone)]
pub struct WindowStart {
    pub stats: QueueStats,
    pub flows: Vec<AtLink>,
    pub acks: AtLink,
    pub lost: u64,
    pub queue_pkts: usize,
}

/// Per-sample rows of one link's time series.
#[derive(Debug, Clone, Default)]
pub struct Series {
    pub time: Vec<f64>,
    pub qlen: Vec<f64>,
    pub qbytes: Vec<f64>,
    pub util: Vec<f64>,
    pub drops: Vec<f64>,
    pub state_names: &'static [&'static str],
    pub state: Vec<Vec<f64>>,
    pub last_tx_bytes: u64,
    pub last_drops: u64,
    pub last_t: Time,
}

/// Queue snapshots of the measured links (M10): one row per waiting packet per snapshot.
#[derive(Debug, Clone, Default)]
pub struct Snapshots {
    pub t: Vec<f64>,
    /// The link's index.
    pub link: Vec<u32>,
    /// Position from the tail (0 = tail).
    pub pos: Vec<i64>,
    pub len: Vec<i64>,
    pub flow: Vec<i64>,
    pub count: u64,
}

/// Everything measured at one link.
pub struct LinkMonitor {
    /// The measured link's index.
    pub link: u32,
    pub queue: QueueMeasure,
    /// Data packets per flow (indexed by flow id).
    pub flows: Vec<AtLink>,
    /// ACKs and web requests of all flows.
    pub acks: AtLink,
    /// Packets lost to the link's `loss_rate` (before the queue).
    pub lost: u64,
    pub window_start: Option<WindowStart>,
    pub series: Series,
}

impl LinkMonitor {
    pub fn new(link: u32, warmup: Time, flows: usize, state_names: &'static [&'static str]) -> Self {
        LinkMonitor {
            link,
            queue: QueueMeasure::new(warmup),
            flows: vec![AtLink::default(); flows],
            acks: AtLink::default(),
            lost: 0,
            window_start: None,
            series: Series { state_names, state: vec![Vec::new(); state_names.len()], ..Series::default() },
        }
    }

    #[inline(always)]
    fn of(&mut self, pkt: &Packet) -> &mut AtLink {
        match pkt.kind {
            PktKind::Data | PktKind::Udp => &mut self.flows[pkt.flow as usize],
            PktKind::Ack | PktKind::Request => &mut self.acks,
        }
    }

    /// `pkt` was offered to the queue at `now`, which now holds `pkts`/`bytes`.
    #[inline(always)]
    pub fn arrived(&mut self, pkt: &Packet, now: Time, pkts: usize, bytes: u64) {
        self.queue.queue_changed(now, pkts, bytes);
        self.of(pkt).arrivals += 1;
    }

    /// `pkt`, queued at `enq`, starts transmission at `start`, leaving `pkts`/`bytes` queued.
    #[inline(always)]
    pub fn departed(&mut self, pkt: &Packet, start: Time, enq: Time, pkts: usize, bytes: u64) {
        self.queue.departed(start, start - enq);
        self.queue.queue_changed(start, pkts, bytes);
        let c = self.of(pkt);
        c.tx_pkts += 1;
        c.tx_bytes += pkt.size as u64;
    }

    /// The window starts: keep the counters as they are now.
    pub fn start_window(&mut self, stats: QueueStats, queue_pkts: usize) {
        self.window_start =
            Some(WindowStart { stats, flows: self.flows.clone(), acks: self.acks, lost: self.lost, queue_pkts });
        self.queue.window_started(queue_pkts);
    }

    /// Flow `i`'s data packets at this link within the window.
    pub fn flow_in_window(&self, i: usize) -> AtLink {
        let zero = AtLink::default();
        let base = self.window_start.as_ref().and_then(|w| w.flows.get(i)).unwrap_or(&zero);
        self.flows[i].since(base)
    }
}

/// Queue-length integral and queueing-delay statistics of a measured link.
pub struct QueueMeasure {
    pub warmup: Time,
    /// Queue-length integrals over the window (packet·ns and byte·ns).
    pub area_pkts: f64,
    pub area_bytes: f64,
    last_t: Time,
    last_pkts: usize,
    last_bytes: u64,
    /// Queueing delay (enqueue to start of transmission) of packets starting transmission in the
    /// window, in ns.
    pub delay: Histogram<u64>,
    pub delay_sum_ns: f64,
    pub delay_n: u64,
    pub max_qlen: usize,
}

impl QueueMeasure {
    pub fn new(warmup: Time) -> Self {
        QueueMeasure {
            warmup,
            area_pkts: 0.0,
            area_bytes: 0.0,
            last_t: warmup,
            last_pkts: 0,
            last_bytes: 0,
            delay: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds"),
            delay_sum_ns: 0.0,
            delay_n: 0,
            max_qlen: 0,
        }
    }

    /// The queue holds `pkts`/`bytes` from time `t` on (called after every change, in time order).
    #[inline]
    pub fn queue_changed(&mut self, t: Time, pkts: usize, bytes: u64) {
        if t > self.last_t {
            let dt = (t - self.last_t) as f64;
            self.area_pkts += self.last_pkts as f64 * dt;
            self.area_bytes += self.last_bytes as f64 * dt;
            self.last_t = t;
        }
        self.last_pkts = pkts;
        self.last_bytes = bytes;
        if t >= self.warmup && pkts > self.max_qlen {
            self.max_qlen = pkts;
        }
    }

    /// The window starts with `pkts` waiting packets.
    pub fn window_started(&mut self, pkts: usize) {
        self.max_qlen = self.max_qlen.max(pkts);
    }

    /// A packet that waited `wait` ns starts transmission at `t`.
    #[inline]
    pub fn departed(&mut self, t: Time, wait: Time) {
        if t >= self.warmup {
            self.delay_sum_ns += wait as f64;
            self.delay_n += 1;
            // values above the histogram's range are clamped rather than lost
            self.delay.saturating_record(wait.max(1));
        }
    }

    /// Close the integrals at the end of the run.
    pub fn finish(&mut self, end: Time) {
        let (p, b) = (self.last_pkts, self.last_bytes);
        self.queue_changed(end, p, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_integral_respects_warmup() {
        let mut m = QueueMeasure::new(10);
        m.queue_changed(0, 4, 4000); // before the window
        m.queue_changed(12, 2, 2000); // 4 packets over [10, 12)
        m.finish(20); // 2 packets over [12, 20)
        assert_eq!(m.area_pkts, 4.0 * 2.0 + 2.0 * 8.0);
    }
}
