//! Measurement: per-flow counters, the bottleneck's queue and delay statistics, time series.
//!
//! Counters are cumulative from t = 0; the measurement window `[warmup, duration)` is obtained by
//! subtracting a snapshot taken at `warmup` (docs/metrics.md gives every metric's exact definition).
//! Queueing delays go into a log-bucketed histogram (HdrHistogram, 3 significant digits) rather
//! than being stored, and the queue-length time average is an exact integral over the window.

use aqm::{DropReason, Time};
use hdrhistogram::Histogram;

/// Cumulative per-flow counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowCounters {
    /// Data/UDP packets and bytes the source sent (including retransmissions).
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub retx_pkts: u64,
    pub retx_bytes: u64,
    /// Data/UDP packets and bytes that reached the receiver (including duplicates).
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    /// Delivered for the first time (goodput, M2).
    pub unique_pkts: u64,
    pub unique_bytes: u64,
    /// Largest sequence number received + 1 (M2c).
    pub max_seq_rcvd: u64,
    /// Received bytes that were retransmissions (M2b).
    pub delivered_retx_bytes: u64,
    /// Packets of this flow that arrived at / were transmitted on the bottleneck (M1).
    pub bneck_arrivals: u64,
    pub bneck_tx_pkts: u64,
    pub bneck_tx_bytes: u64,
    /// Data/UDP packet drops by reason, anywhere on the path.
    pub drops: [u64; DropReason::COUNT],
    /// ACKs sent by the receiver, and ACKs dropped on the way back.
    pub acks_sent: u64,
    pub ack_drops: u64,
    pub timeouts: u64,
    pub fast_retx: u64,
    /// Data packets delivered with a CE mark, and the sender's ECN window reductions.
    pub ce_marks: u64,
    pub ecn_reductions: u64,
    pub rtt_samples: u64,
    pub rtt_sum_ns: f64,
    pub rtt_min_ns: f64,
}

impl Default for FlowCounters {
    fn default() -> Self {
        FlowCounters {
            sent_pkts: 0,
            sent_bytes: 0,
            retx_pkts: 0,
            retx_bytes: 0,
            delivered_pkts: 0,
            delivered_bytes: 0,
            unique_pkts: 0,
            unique_bytes: 0,
            max_seq_rcvd: 0,
            delivered_retx_bytes: 0,
            bneck_arrivals: 0,
            bneck_tx_pkts: 0,
            bneck_tx_bytes: 0,
            drops: [0; DropReason::COUNT],
            acks_sent: 0,
            ack_drops: 0,
            timeouts: 0,
            fast_retx: 0,
            ce_marks: 0,
            ecn_reductions: 0,
            rtt_samples: 0,
            rtt_sum_ns: 0.0,
            rtt_min_ns: f64::INFINITY,
        }
    }
}

impl FlowCounters {
    /// Counters accumulated since `base` (a snapshot taken at the start of the window).
    /// RTT statistics and `max_seq_rcvd` are kept whole-run (they are not rates).
    pub fn since(&self, base: &FlowCounters) -> FlowCounters {
        let mut d = *self;
        d.sent_pkts -= base.sent_pkts;
        d.sent_bytes -= base.sent_bytes;
        d.retx_pkts -= base.retx_pkts;
        d.retx_bytes -= base.retx_bytes;
        d.delivered_pkts -= base.delivered_pkts;
        d.delivered_bytes -= base.delivered_bytes;
        d.unique_pkts -= base.unique_pkts;
        d.unique_bytes -= base.unique_bytes;
        d.delivered_retx_bytes -= base.delivered_retx_bytes;
        d.bneck_arrivals -= base.bneck_arrivals;
        d.bneck_tx_pkts -= base.bneck_tx_pkts;
        d.bneck_tx_bytes -= base.bneck_tx_bytes;
        for i in 0..DropReason::COUNT {
            d.drops[i] -= base.drops[i];
        }
        d.acks_sent -= base.acks_sent;
        d.ack_drops -= base.ack_drops;
        d.timeouts -= base.timeouts;
        d.fast_retx -= base.fast_retx;
        d.ce_marks -= base.ce_marks;
        d.ecn_reductions -= base.ecn_reductions;
        d
    }

    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// Statistics of the measured (bottleneck) link.
pub struct LinkMeasure {
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

impl LinkMeasure {
    pub fn new(warmup: Time) -> Self {
        LinkMeasure {
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

/// Jain's fairness index `(Σx)² / (n Σx²)`; `None` for an empty set, 1 when all are zero.
pub fn jain(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        return Some(1.0);
    }
    Some(s * s / (xs.len() as f64 * s2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
    }

    #[test]
    fn queue_integral_respects_warmup() {
        let mut m = LinkMeasure::new(10);
        m.queue_changed(0, 4, 4000); // before the window
        m.queue_changed(12, 2, 2000); // 4 packets over [10, 12)
        m.finish(20); // 2 packets over [12, 20)
        assert_eq!(m.area_pkts, 4.0 * 2.0 + 2.0 * 8.0);
    }
}
