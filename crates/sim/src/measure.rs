//! Per-flow measurement: the counters of each flow (what its source sent, what its receiver got,
//! its drops by reason and by hop), and Jain's fairness index. Link measurement is in
//! [`crate::monitor`].
//!
//! Counters are cumulative from t = 0; the measurement window `[warmup, duration)` is obtained by
//! subtracting a snapshot taken at `warmup` (docs/metrics.md gives every metric's exact definition).

use crate::packet::{Packet, PktKind};
use aqm::DropReason;

/// Cumulative per-flow counters.
///
/// Byte counts are 64-bit; counts of packets and of events that each concern one packet are
/// 32-bit. Every packet count is at most the number of packets the flow sent one way: each data
/// packet is delivered (for the first time, or again) at most once, a retransmission is a sent
/// packet, an ACK or a probe's echo answers a delivered one, and each drop, mark, timeout or RTT
/// sample concerns one of them. The packet counts add with saturation, and `Sim::finish` refuses
/// a run in which a flow's packets sent, delivered or ACKs sent reached `u32::MAX`
/// ([`FlowCounters::most_packets`]), so no 32-bit count of a reported run can have wrapped.
/// (Fields in order of size, without padding: 136 bytes, 160 with 64-bit packet counts.)
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowCounters {
    /// Data/UDP bytes the source sent (including retransmissions), and of retransmissions.
    pub sent_bytes: u64,
    pub retx_bytes: u64,
    /// Data/UDP bytes that reached the receiver (including duplicates).
    pub delivered_bytes: u64,
    /// Delivered for the first time (goodput, M2).
    pub unique_bytes: u64,
    /// Received bytes that were retransmissions (M2b).
    pub delivered_retx_bytes: u64,
    pub rtt_sum_ns: f64,
    pub rtt_min_ns: f64,
    /// The last RTT sample (for the latency histograms, `crate::latency`).
    pub rtt_last_ns: f64,
    /// Data/UDP packets the source sent (including retransmissions), and retransmissions.
    pub sent_pkts: u32,
    pub retx_pkts: u32,
    /// Data/UDP packets that reached the receiver (including duplicates).
    pub delivered_pkts: u32,
    /// Delivered for the first time (goodput, M2).
    pub unique_pkts: u32,
    /// Largest sequence number received + 1 (M2c). A flow numbers its packets from 0, one number
    /// per new packet, so this is at most `sent_pkts`; it saturates like the counts (a sequence
    /// number of `u32::MAX` means 2^32 packets sent, a refused run).
    pub max_seq_rcvd: u32,
    /// Data/UDP packet drops by reason, anywhere on the path.
    pub drops: [u32; DropReason::COUNT],
    /// ACKs (and probes' echoes) sent by the receiver, and ACKs dropped on the way back.
    pub acks_sent: u32,
    pub ack_drops: u32,
    pub timeouts: u32,
    pub fast_retx: u32,
    /// Data packets delivered with a CE mark, and the sender's ECN window reductions.
    pub ce_marks: u32,
    pub ecn_reductions: u32,
    pub rtt_samples: u32,
}

impl Default for FlowCounters {
    fn default() -> Self {
        FlowCounters::ZERO
    }
}

impl FlowCounters {
    /// Nothing counted yet.
    pub const ZERO: FlowCounters = FlowCounters {
        sent_bytes: 0,
        retx_bytes: 0,
        delivered_bytes: 0,
        unique_bytes: 0,
        delivered_retx_bytes: 0,
        rtt_sum_ns: 0.0,
        rtt_min_ns: f64::INFINITY,
        rtt_last_ns: 0.0,
        sent_pkts: 0,
        retx_pkts: 0,
        delivered_pkts: 0,
        unique_pkts: 0,
        max_seq_rcvd: 0,
        drops: [0; DropReason::COUNT],
        acks_sent: 0,
        ack_drops: 0,
        timeouts: 0,
        fast_retx: 0,
        ce_marks: 0,
        ecn_reductions: 0,
        rtt_samples: 0,
    };

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
        self.drops.iter().map(|&d| d as u64).sum()
    }

    /// The most packets the flow's counters saw one way (sent, delivered or acknowledged): every
    /// 32-bit count is at most this, so none can have wrapped while it is under `u32::MAX` (these
    /// three saturate there).
    pub fn most_packets(&self) -> u32 {
        self.sent_pkts.max(self.delivered_pkts).max(self.acks_sent)
    }

    /// A data/UDP packet of `bytes` left the source, for the first time or again.
    #[inline]
    pub fn packet_sent(&mut self, bytes: u16, retransmission: bool) {
        self.sent_pkts = self.sent_pkts.saturating_add(1);
        self.sent_bytes += bytes as u64;
        if retransmission {
            self.retx_pkts = self.retx_pkts.saturating_add(1);
            self.retx_bytes += bytes as u64;
        }
    }

    /// A data/UDP packet of `bytes` reached the receiver (duplicates included), with the CE mark
    /// or not.
    #[inline]
    pub fn packet_received(&mut self, bytes: u16, ce: bool) {
        self.delivered_pkts = self.delivered_pkts.saturating_add(1);
        self.delivered_bytes += bytes as u64;
        if ce {
            self.ce_marks += 1;
        }
    }

    /// A data/UDP packet reached the receiver for the first time (`seq`: its sequence number).
    #[inline]
    pub fn new_packet_received(&mut self, bytes: u16, seq: u32) {
        self.unique_pkts = self.unique_pkts.saturating_add(1);
        self.unique_bytes += bytes as u64;
        self.max_seq_rcvd = self.max_seq_rcvd.max(seq.saturating_add(1));
    }

    /// The receiver sent an ACK (or a probe's echo).
    #[inline]
    pub fn ack_sent(&mut self) {
        self.acks_sent = self.acks_sent.saturating_add(1);
    }
}

/// What a flow's TCP ends report (`crate::tcp::TcpMeter`): the host owns the counters, the
/// transport only says what happened.
impl crate::tcp::TcpMeter for FlowCounters {
    #[inline]
    fn segment_sent(&mut self, bytes: u16, retransmission: bool) {
        self.packet_sent(bytes, retransmission);
    }
    #[inline]
    fn rtt_sample(&mut self, ns: f64) {
        self.rtt_samples += 1;
        self.rtt_sum_ns += ns;
        self.rtt_min_ns = self.rtt_min_ns.min(ns);
        self.rtt_last_ns = ns;
    }
    fn fast_retransmit(&mut self) {
        self.fast_retx += 1;
    }
    fn timeout(&mut self) {
        self.timeouts += 1;
    }
    fn ecn_reduction(&mut self) {
        self.ecn_reductions += 1;
    }
    #[inline]
    fn segment_received(&mut self, bytes: u16, ce: bool) {
        self.packet_received(bytes, ce);
    }
    #[inline]
    fn new_segment_received(&mut self, bytes: u16, seq: u32) {
        self.new_packet_received(bytes, seq);
    }
}

/// Drops of each flow at each hop of its two paths: `stride` counters per flow (the longest data
/// path plus ACK path of the scenario), data path first. A drop costs two memory accesses.
#[derive(Debug, Clone, Default)]
pub struct HopDrops {
    stride: usize,
    counts: Vec<u32>,
}

impl HopDrops {
    /// Counters for `flows` flows whose two paths together have at most `stride` links.
    pub fn new(stride: usize, flows: usize) -> Self {
        HopDrops { stride, counts: crate::mem::huge_filled(stride * flows, 0) }
    }

    /// Room for one more flow.
    pub fn add_flow(&mut self) {
        self.counts.resize(self.counts.len() + self.stride, 0);
    }

    #[inline]
    fn index(&self, flow: u32, ack_path: bool, hop: u8, fwd_len: u8) -> usize {
        flow as usize * self.stride + if ack_path { fwd_len as usize } else { 0 } + hop as usize
    }

    /// Count `pkt`, dropped at the link at its current hop (`fwd_len`: its flow's data path
    /// length).
    #[inline]
    pub fn add(&mut self, pkt: &Packet, fwd_len: u8) {
        let ack_path = matches!(pkt.kind, PktKind::Ack | PktKind::Request | PktKind::Echo);
        let i = self.index(pkt.flow, ack_path, pkt.hop, fwd_len);
        self.counts[i] += 1;
    }

    /// Drops of `flow` at `hop` of its data path (or of its ACK path).
    pub fn get(&self, flow: u32, ack_path: bool, hop: u8, fwd_len: u8) -> u64 {
        self.counts.get(self.index(flow, ack_path, hop, fwd_len)).map_or(0, |&c| c as u64)
    }

    /// Drops since `base` (a snapshot taken at the start of the window; later flows count from
    /// zero).
    pub fn since(&self, base: &HopDrops) -> HopDrops {
        let mut d = self.clone();
        for (c, b) in d.counts.iter_mut().zip(&base.counts) {
            *c -= b;
        }
        d
    }
}

/// Per-flow time series (`simulation.flow_series_interval`): one row per active flow per sample.
#[derive(Debug, Default)]
pub struct FlowSeries {
    pub time: Vec<f64>,
    pub flow: Vec<i64>,
    pub thr: Vec<f64>,
    pub good: Vec<f64>,
    pub cwnd: Vec<f64>,
    /// The TCP sender's pacing rate (bit/s; NaN unpaced or UDP), smoothed RTT (s; NaN before the
    /// first sample) and retransmitted segments since its start (NaN for UDP).
    pub pacing: Vec<f64>,
    pub srtt: Vec<f64>,
    pub retx: Vec<f64>,
    /// Per flow: bytes transmitted at its measured link and goodput bytes at the last sample.
    pub last: Vec<(u64, u64)>,
    pub last_t: aqm::Time,
    /// The flows a sample visits, in flow_id order: every flow opened so far (`enrolled`), less
    /// those retired: finished, idle since their last row and without a data packet left in the
    /// network, which can never have another row. Without this a sample visited every
    /// connection ever opened, and a run with short connections took time quadratic in its length.
    pub visit: Vec<u32>,
    pub enrolled: usize,
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
    fn flow_counters_have_no_padding() {
        // 5 byte counts and 3 RTT figures of 8 bytes, 12 + DropReason::COUNT counts of 4
        assert_eq!(std::mem::size_of::<FlowCounters>(), 8 * 8 + 4 * (12 + DropReason::COUNT));
        assert_eq!(std::mem::size_of::<FlowCounters>(), 136);
    }

    #[test]
    fn packet_counts_saturate() {
        use crate::tcp::TcpMeter;
        let mut c = FlowCounters { sent_pkts: u32::MAX - 1, delivered_pkts: u32::MAX, ..FlowCounters::ZERO };
        c.segment_sent(1000, true);
        c.segment_sent(1000, false);
        c.segment_received(1000, false);
        c.new_segment_received(1000, u32::MAX);
        assert_eq!((c.sent_pkts, c.retx_pkts, c.delivered_pkts, c.max_seq_rcvd), (u32::MAX, 1, u32::MAX, u32::MAX));
        assert_eq!(c.sent_bytes, 2000);
        assert_eq!(c.most_packets(), u32::MAX);
    }

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
    }
}
