//! Per-flow measurement: the counters of each flow (what its source sent, what its receiver got,
//! its drops by reason and by hop), and Jain's fairness index. Link measurement is in
//! [`crate::monitor`].
//!
//! Counters are cumulative from t = 0; the measurement window `[warmup, duration)` is obtained by
//! subtracting a snapshot taken at `warmup` (docs/metrics.md gives every metric's exact definition).

use crate::packet::{Packet, PktKind};
use aqm::{DropReason, Time};

/// Cumulative per-flow counters.
///
/// Counts of packets and of events that each concern one packet are 32-bit, and there are no byte
/// counts: every data packet of a flow has the same size (a TCP flow's MSS, a UDP source's packet
/// size), so a flow's bytes are its packets times that size ([`FlowCounters::bytes`]), exactly.
/// Every packet count is at most the number of packets the flow sent one way: each data
/// packet is delivered (for the first time, or again) at most once, a retransmission is a sent
/// packet, an ACK or a probe's echo answers a delivered one, and each drop, mark, timeout or RTT
/// sample concerns one of them. The packet counts add with saturation, and `Sim::finish` refuses
/// a run in which a flow's packets sent, delivered or ACKs sent reached `u32::MAX`
/// ([`FlowCounters::most_packets`]), so no 32-bit count of a reported run can have wrapped.
/// (112 bytes; 136 with the five byte counts it had, 160 with 64-bit packet counts too.)
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowCounters {
    pub rtt_sum_ns: f64,
    pub rtt_min_ns: f64,
    /// The last RTT sample (for the latency histograms, `crate::latency`).
    pub rtt_last_ns: f64,
    /// Data/UDP packets the source sent (including retransmissions), and retransmissions.
    pub sent_pkts: u32,
    pub retx_pkts: u32,
    /// Data/UDP packets that reached the receiver (including duplicates), and of those the ones
    /// sent as retransmissions (M2b).
    pub delivered_pkts: u32,
    pub delivered_retx_pkts: u32,
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
    /// Time spent recovering from retransmission timeouts, in ms: from a timeout that starts a
    /// recovery until the data outstanding at the last timeout is acknowledged (as Linux's
    /// `tcpi_total_rto_time`); and when the recovery under way began, in ms + 1 (0: none).
    pub rto_ms: u32,
    pub rto_since_ms: u32,
}

impl Default for FlowCounters {
    fn default() -> Self {
        FlowCounters::ZERO
    }
}

impl FlowCounters {
    /// Nothing counted yet.
    pub const ZERO: FlowCounters = FlowCounters {
        rtt_sum_ns: 0.0,
        rtt_min_ns: f64::INFINITY,
        rtt_last_ns: 0.0,
        sent_pkts: 0,
        retx_pkts: 0,
        delivered_pkts: 0,
        delivered_retx_pkts: 0,
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
        rto_ms: 0,
        rto_since_ms: 0,
    };

    /// Counters accumulated since `base` (a snapshot taken at the start of the window).
    /// RTT statistics and `max_seq_rcvd` are kept whole-run (they are not rates).
    pub fn since(&self, base: &FlowCounters) -> FlowCounters {
        let mut d = *self;
        d.sent_pkts -= base.sent_pkts;
        d.retx_pkts -= base.retx_pkts;
        d.delivered_pkts -= base.delivered_pkts;
        d.delivered_retx_pkts -= base.delivered_retx_pkts;
        d.unique_pkts -= base.unique_pkts;
        for i in 0..DropReason::COUNT {
            d.drops[i] -= base.drops[i];
        }
        d.acks_sent -= base.acks_sent;
        d.ack_drops -= base.ack_drops;
        d.timeouts -= base.timeouts;
        d.fast_retx -= base.fast_retx;
        d.ce_marks -= base.ce_marks;
        d.ecn_reductions -= base.ecn_reductions;
        d.rto_ms -= base.rto_ms;
        d
    }

    /// Count the recovery from timeouts under way up to `now` and go on from there (at the start
    /// and at the end of the measurement window, so that each holds its own part of a recovery
    /// that spans the boundary).
    pub fn close_rto(&mut self, now: Time) {
        if self.rto_since_ms != 0 {
            let at = ms(now);
            self.rto_ms = self.rto_ms.saturating_add(at.saturating_sub(self.rto_since_ms - 1));
            self.rto_since_ms = at.saturating_add(1);
        }
    }

    /// Bytes of `pkts` packets of a flow whose data packets are `size` bytes (exact: a count is
    /// below 2^32 and a size below 2^16).
    #[inline]
    pub fn bytes(pkts: u32, size: u32) -> u64 {
        pkts as u64 * size as u64
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

    /// A data/UDP packet left the source, for the first time or again.
    #[inline]
    pub fn packet_sent(&mut self, retransmission: bool) {
        self.sent_pkts = self.sent_pkts.saturating_add(1);
        if retransmission {
            self.retx_pkts = self.retx_pkts.saturating_add(1);
        }
    }

    /// A data/UDP packet reached the receiver (duplicates included), with the CE mark
    /// or not.
    #[inline]
    pub fn packet_received(&mut self, ce: bool) {
        self.delivered_pkts = self.delivered_pkts.saturating_add(1);
        if ce {
            self.ce_marks += 1;
        }
    }

    /// A data/UDP packet reached the receiver for the first time (`seq`: its sequence number).
    #[inline]
    pub fn new_packet_received(&mut self, seq: u32) {
        self.unique_pkts = self.unique_pkts.saturating_add(1);
        self.max_seq_rcvd = self.max_seq_rcvd.max(seq.saturating_add(1));
    }

    /// A data packet sent as a retransmission reached the receiver (M2b).
    #[inline]
    pub fn retransmission_received(&mut self) {
        self.delivered_retx_pkts = self.delivered_retx_pkts.saturating_add(1);
    }

    /// A data/UDP packet was dropped on its way (for `reason`).
    #[inline]
    pub fn packet_dropped(&mut self, reason: DropReason) {
        let d = &mut self.drops[reason.index()];
        *d = d.saturating_add(1);
    }

    /// An ACK (or a probe's echo) was dropped on its way back.
    #[inline]
    pub fn ack_dropped(&mut self) {
        self.ack_drops = self.ack_drops.saturating_add(1);
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
    fn segment_sent(&mut self, retransmission: bool) {
        self.packet_sent(retransmission);
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
    fn timeout(&mut self, now: Time) {
        self.timeouts += 1;
        if self.rto_since_ms == 0 {
            self.rto_since_ms = ms(now).saturating_add(1);
        }
    }
    fn rto_recovered(&mut self, now: Time) {
        if self.rto_since_ms != 0 {
            self.rto_ms = self.rto_ms.saturating_add(ms(now).saturating_sub(self.rto_since_ms - 1));
            self.rto_since_ms = 0;
        }
    }
    fn ecn_reduction(&mut self) {
        self.ecn_reductions += 1;
    }
    #[inline]
    fn segment_received(&mut self, ce: bool) {
        self.packet_received(ce);
    }
    #[inline]
    fn new_segment_received(&mut self, seq: u32) {
        self.new_packet_received(seq);
    }
}

/// Whole milliseconds of a time (saturating at `u32::MAX`, 49 days).
#[inline]
fn ms(t: Time) -> u32 {
    (t / 1_000_000).min(u32::MAX as u64) as u32
}

/// Drops of each flow at each hop of its two paths, data path first, kept where they are rare.
///
/// A flow's drops on a path at every hop but the *main hop* ([`HopDrops::MAIN_HOP`], a path's
/// second link: the bottleneck of a dumbbell's data path and the reverse link of its ACK path, the
/// first shared link of any path that starts with an access link) are counted here, keyed by
/// flow and hop (a sorted map, empty for a flow that dropped nothing elsewhere); those at the main
/// hop are the flow's drops on that path (its counters' data drops, or its ACK drops) less the
/// others. That is exact, costs no memory per flow where drops happen at the main hop (a dense
/// array took 24 bytes a flow of a dumbbell, issue 28) and no memory access at all for a drop
/// there; a drop at any other hop costs a look-up in the map. (A path of one link has no main
/// hop: its drops are all in the map.)
#[derive(Debug, Clone, Default)]
pub struct HopDrops {
    /// Room per flow in the keys: the longest data path plus ACK path of the scenario.
    stride: u64,
    counts: std::collections::BTreeMap<u64, u32>,
}

impl HopDrops {
    /// Counters for flows whose two paths together have at most `stride` links.
    pub fn new(stride: usize) -> Self {
        HopDrops { stride: stride as u64, counts: Default::default() }
    }

    /// The hop whose drops are not kept but derived: a path's second link.
    pub const MAIN_HOP: u8 = 1;

    #[inline]
    fn key(&self, flow: u32, ack_path: bool, fwd_len: u8) -> u64 {
        flow as u64 * self.stride + if ack_path { fwd_len as u64 } else { 0 }
    }

    /// Count `pkt`, dropped at the link at its current hop; `fwd_len` (the length of its flow's
    /// data path, which places the ACK path's counts) is read only for a drop off the main hop.
    #[inline]
    pub fn add(&mut self, pkt: &Packet, fwd_len: impl FnOnce() -> u8) {
        if pkt.hop != Self::MAIN_HOP {
            let ack_path = matches!(pkt.kind, PktKind::Ack | PktKind::Request | PktKind::Echo);
            *self.counts.entry(self.key(pkt.flow, ack_path, fwd_len()) + pkt.hop as u64).or_insert(0) += 1;
        }
    }

    /// Drops of `flow` at `hop` of its data path (or of its ACK path), a path of `len` links on
    /// which the flow lost `total` packets (its data drops, or its ACK drops, over the same span
    /// as these counts).
    pub fn get(&self, flow: u32, ack_path: bool, hop: u8, fwd_len: u8, len: u8, total: u64) -> u64 {
        let first = self.key(flow, ack_path, fwd_len);
        if hop == Self::MAIN_HOP {
            let others: u64 = self.counts.range(first..first + len as u64).map(|(_, &c)| c as u64).sum();
            total - others
        } else {
            self.counts.get(&(first + hop as u64)).map_or(0, |&c| c as u64)
        }
    }

    /// Drops since `base` (a snapshot taken at the start of the window; later flows count from
    /// zero).
    pub fn since(&self, base: &HopDrops) -> HopDrops {
        let mut d = self.clone();
        for (k, c) in d.counts.iter_mut() {
            *c -= base.counts.get(k).copied().unwrap_or(0);
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

/// Jain's fairness index `(Σx)² / (n Σx²)`; `None` for an empty set and for an allocation of
/// nothing (every value 0: 0/0, no fairness to speak of; docs/metrics.md, "fairness").
pub fn jain(xs: &[f64]) -> Option<f64> {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        return None;
    }
    Some(s * s / (xs.len() as f64 * s2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_counters_are_packed() {
        // 3 RTT figures of 8 bytes and 13 + DropReason::COUNT counts of 4, rounded up to 8
        assert_eq!(std::mem::size_of::<FlowCounters>(), (3 * 8 + 4 * (15 + DropReason::COUNT)).next_multiple_of(8));
        assert_eq!(std::mem::size_of::<FlowCounters>(), 112);
    }

    #[test]
    fn drops_per_hop_read_back_exactly_with_the_main_hop_derived() {
        // a data path of 3 links and an ACK path of 2 (main hop 1 on both), for flows 0 and 7
        let (fwd, rev) = (3u8, 2u8);
        let mut h = HopDrops::new(5);
        let mut want = std::collections::HashMap::new();
        let drop = |h: &mut HopDrops, want: &mut std::collections::HashMap<_, u64>, flow, kind, hop| {
            h.add(&Packet { flow, kind, hop, ..Packet::EMPTY }, || fwd);
            *want.entry((flow, kind == PktKind::Ack, hop)).or_insert(0) += 1;
        };
        for (flow, kind, hop, times) in [
            (0, PktKind::Data, 1, 5),
            (0, PktKind::Data, 0, 2),
            (0, PktKind::Ack, 1, 3),
            (0, PktKind::Ack, 0, 1),
            (7, PktKind::Udp, 2, 4),
            (7, PktKind::Data, 1, 6),
        ] {
            for _ in 0..times {
                drop(&mut h, &mut want, flow, kind, hop);
            }
        }
        assert_eq!(h.counts.len(), 3, "nothing kept for the main hops");
        let base = h.clone();
        drop(&mut h, &mut want, 7, PktKind::Udp, 2);
        drop(&mut h, &mut want, 7, PktKind::Data, 1);
        let total = |want: &std::collections::HashMap<(u32, bool, u8), u64>, flow, ack| {
            want.iter().filter(|((f, a, _), _)| *f == flow && *a == ack).map(|(_, c)| c).sum::<u64>()
        };
        for flow in [0, 7] {
            for (ack, len) in [(false, fwd), (true, rev)] {
                let t = total(&want, flow, ack);
                for hop in 0..len {
                    let w = want.get(&(flow, ack, hop)).copied().unwrap_or(0);
                    assert_eq!(h.get(flow, ack, hop, fwd, len, t), w, "flow {flow} ack {ack} hop {hop}");
                }
            }
        }
        // within a window: flow 7 dropped one packet at hop 2 and one at the main hop since `base`
        let d = h.since(&base);
        assert_eq!((d.get(7, false, 2, fwd, fwd, 2), d.get(7, false, 1, fwd, fwd, 2)), (1, 1));
        assert_eq!(d.get(0, false, 0, fwd, fwd, 0), 0);
        // a path of one link has no main hop: its drops are kept
        let mut one = HopDrops::new(2);
        one.add(&Packet { flow: 3, kind: PktKind::Data, hop: 0, ..Packet::EMPTY }, || 1);
        assert_eq!(one.get(3, false, 0, 1, 1, 1), 1);
    }

    #[test]
    fn packet_counts_saturate() {
        use crate::tcp::TcpMeter;
        let mut c = FlowCounters { sent_pkts: u32::MAX - 1, delivered_pkts: u32::MAX, ..FlowCounters::ZERO };
        c.segment_sent(true);
        c.segment_sent(false);
        c.segment_received(false);
        c.new_segment_received(u32::MAX);
        assert_eq!((c.sent_pkts, c.retx_pkts, c.delivered_pkts, c.max_seq_rcvd), (u32::MAX, 1, u32::MAX, u32::MAX));
        assert_eq!(c.most_packets(), u32::MAX);
    }

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0.0, 0.0]), None, "nothing allocated: undefined, not perfectly fair");
    }
}
