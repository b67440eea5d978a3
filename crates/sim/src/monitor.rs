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
use aqm::{Pkt, Qdisc, Queue, QueueStats, Time, NS_PER_SEC};
use hdrhistogram::Histogram;

/// Data packets of one flow at one link. The packet counts are 32-bit and stop at `u32::MAX`:
/// each of a flow's packets arrives at a link at most once, so they are at most its packets sent,
/// and a run in which a flow's count reached `u32::MAX` is refused ([`LinkMonitor::saturated`]).
/// 16 bytes a flow (24 with 64-bit packet counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtLink {
    /// Offered to the queue (after the link's random loss).
    pub arrivals: u32,
    /// Started transmission.
    pub tx_pkts: u32,
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

/// Packets of many flows at one link (all ACKs and web requests, or the data of a group of
/// flows), in 64-bit counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtLinkSum {
    pub arrivals: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
}

impl AtLinkSum {
    pub fn since(&self, base: &AtLinkSum) -> AtLinkSum {
        AtLinkSum {
            arrivals: self.arrivals - base.arrivals,
            tx_pkts: self.tx_pkts - base.tx_pkts,
            tx_bytes: self.tx_bytes - base.tx_bytes,
        }
    }

    /// Add one flow's packets.
    pub fn add(&mut self, a: &AtLink) {
        self.arrivals += a.arrivals as u64;
        self.tx_pkts += a.tx_pkts as u64;
        self.tx_bytes += a.tx_bytes;
    }
}

/// The counters at the start of the measurement window.
#[derive(Debug, Clone)]
pub struct WindowStart {
    pub stats: QueueStats,
    pub flows: Vec<AtLink>,
    pub acks: AtLinkSum,
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

impl Series {
    /// One row at `now` for a link of `rate_bps` whose queue is `q`: its length in packets and
    /// bytes, the utilisation since the last row (transmissions started, as a fraction of the
    /// capacity; NaN for the first row, at time 0), the drops since the last row and the
    /// discipline's state variables (at most 8).
    pub fn sample<P: Pkt>(&mut self, now: Time, q: &Queue<P>, rate_bps: u64) {
        let st = &q.stats;
        let drops: u64 = st.drops.iter().sum();
        let dt = now.saturating_sub(self.last_t);
        self.time.push(now as f64 / NS_PER_SEC as f64);
        self.qlen.push(q.len() as f64);
        self.qbytes.push(q.bytes() as f64);
        self.util.push(if dt > 0 {
            (st.transmitted_bytes - self.last_tx_bytes) as f64 * 8.0 / (rate_bps as f64 * dt as f64 / NS_PER_SEC as f64)
        } else {
            f64::NAN
        });
        self.drops.push((drops - self.last_drops) as f64);
        let mut vals = [0.0f64; 8];
        let k = self.state_names.len().min(8);
        q.disc.state(&mut vals[..k]);
        for (i, v) in vals[..k].iter().enumerate() {
            self.state[i].push(*v);
        }
        self.last_tx_bytes = st.transmitted_bytes;
        self.last_drops = drops;
        self.last_t = now;
    }
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

impl Snapshots {
    /// The composition of link `link`'s queue `q` at `now`, by position counted from the tail.
    /// (`count`, the number of snapshots, is the caller's: one snapshot covers every measured
    /// link.)
    pub fn record<P: Pkt>(&mut self, now: Time, link: u32, q: &Queue<P>) {
        let t = now as f64 / NS_PER_SEC as f64;
        let n = q.len() as i64;
        let mut from_head = 0i64;
        q.disc.for_each_waiting(&mut |p, _| {
            self.t.push(t);
            self.link.push(link);
            self.pos.push(n - 1 - from_head);
            self.len.push(n);
            self.flow.push(p.flow() as i64);
            from_head += 1;
        });
    }
}

/// Whose packets a monitor counts one under: a flow's data packets, or the ACKs (and web
/// requests) of all flows together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    Flow(u32),
    Acks,
}

impl Counted {
    /// The simulator's packets: data and UDP by flow, ACKs and requests together.
    #[inline(always)]
    pub fn of(pkt: &Packet) -> Counted {
        match pkt.kind {
            PktKind::Data | PktKind::Udp => Counted::Flow(pkt.flow),
            PktKind::Ack | PktKind::Request | PktKind::Echo => Counted::Acks,
        }
    }
}

/// Everything measured at one link.
pub struct LinkMonitor {
    /// The measured link's index.
    pub link: u32,
    pub queue: QueueMeasure,
    /// Data packets per flow (indexed by flow id).
    pub flows: Vec<AtLink>,
    /// ACKs and web requests of all flows.
    pub acks: AtLinkSum,
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
            // (on huge pages at scale: a flow's entry is touched as its packet arrives and leaves)
            flows: crate::mem::huge_filled(flows, AtLink::default()),
            acks: AtLinkSum::default(),
            lost: 0,
            window_start: None,
            series: Series { state_names, state: vec![Vec::new(); state_names.len()], ..Series::default() },
        }
    }

    /// A flow was added (a new connection, or a flow an emulation has just seen): its counters.
    pub fn add_flow(&mut self) {
        self.flows.push(AtLink::default());
    }

    /// Start loading flow `f`'s counters here (a hint).
    #[inline(always)]
    pub fn prefetch_flow(&self, f: usize) {
        if let Some(c) = self.flows.get(f) {
            crate::mem::prefetch(c);
        }
    }

    /// `pkt` was offered to the queue at `now`, which now holds `pkts`/`bytes`.
    #[inline(always)]
    pub fn arrived(&mut self, pkt: &Packet, now: Time, pkts: usize, bytes: u64) {
        self.arrived_as(Counted::of(pkt), now, pkts, bytes);
    }

    /// A packet counted under `who` was offered to the queue at `now`, which now holds
    /// `pkts`/`bytes`.
    #[inline(always)]
    pub fn arrived_as(&mut self, who: Counted, now: Time, pkts: usize, bytes: u64) {
        self.queue.queue_changed(now, pkts, bytes);
        match who {
            Counted::Flow(f) => {
                let c = &mut self.flows[f as usize];
                c.arrivals = c.arrivals.saturating_add(1);
            }
            Counted::Acks => self.acks.arrivals += 1,
        }
    }

    /// `pkt`, queued at `enq`, starts transmission at `start`, leaving `pkts`/`bytes` queued.
    #[inline(always)]
    pub fn departed(&mut self, pkt: &Packet, start: Time, enq: Time, pkts: usize, bytes: u64) {
        self.departed_as(Counted::of(pkt), pkt.size as u32, (start, enq), pkts, bytes);
    }

    /// A packet counted under `who`, of `size` bytes, queued at `enq`, starts transmission at
    /// `start`, leaving `pkts`/`bytes` queued.
    #[inline(always)]
    pub fn departed_as(&mut self, who: Counted, size: u32, (start, enq): (Time, Time), pkts: usize, bytes: u64) {
        self.queue.departed(start, start - enq);
        self.queue.queue_changed(start, pkts, bytes);
        match who {
            Counted::Flow(f) => {
                let c = &mut self.flows[f as usize];
                c.tx_pkts = c.tx_pkts.saturating_add(1);
                c.tx_bytes += size as u64;
            }
            Counted::Acks => {
                self.acks.tx_pkts += 1;
                self.acks.tx_bytes += size as u64;
            }
        }
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

    /// The link over the measurement window, from the queue's statistics now (`stats`) and the
    /// window's length in ns (its queue integrals and delay histogram closed,
    /// [`QueueMeasure::finish`]): what the simulator's summary and the emulator's report say of a
    /// measured link (docs/metrics.md).
    pub fn window_summary(&self, stats: &QueueStats, window_ns: f64) -> WindowSummary {
        let ws = self.window_start.as_ref();
        let q = &self.queue;
        let pct = |p: f64| if q.delay_n > 0 { q.delay().value_at_quantile(p) as f64 / 1e9 } else { f64::NAN };
        WindowSummary {
            stats: ws.map_or(*stats, |w| stats.since(&w.stats)),
            link_loss: self.lost - ws.map_or(0, |w| w.lost),
            queue_mean_pkts: q.area_pkts / window_ns,
            queue_mean_bytes: q.area_bytes / window_ns,
            queue_max_pkts: q.max_qlen as u64,
            delay_mean_s: if q.delay_n > 0 { q.delay_sum_ns / q.delay_n as f64 / 1e9 } else { f64::NAN },
            delay_p50_s: pct(0.5),
            delay_p95_s: pct(0.95),
            delay_p99_s: pct(0.99),
            delay_samples: q.delay_n,
        }
    }

    /// The first flow whose packet counts at this link reached `u32::MAX` (where they stop), if
    /// any: a run with one reports no figure from them.
    pub fn saturated(&self) -> Option<usize> {
        self.flows.iter().position(|a| a.arrivals == u32::MAX || a.tx_pkts == u32::MAX)
    }
}

/// A measured link over the measurement window ([`LinkMonitor::window_summary`]).
#[derive(Debug, Clone)]
pub struct WindowSummary {
    /// The queue's statistics since the window started (arrivals, drops by reason, ...).
    pub stats: QueueStats,
    /// Packets lost to `loss_rate` before the queue.
    pub link_loss: u64,
    /// The queue length's time average (packets, bytes) and maximum.
    pub queue_mean_pkts: f64,
    pub queue_mean_bytes: f64,
    pub queue_max_pkts: u64,
    /// Queueing delay (enqueue to start of transmission), seconds: mean and percentiles (NaN with
    /// no sample), and the number of samples.
    pub delay_mean_s: f64,
    pub delay_p50_s: f64,
    pub delay_p95_s: f64,
    pub delay_p99_s: f64,
    pub delay_samples: u64,
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
    /// window, in ns: complete after [`QueueMeasure::finish`] (read it with
    /// [`QueueMeasure::delay`]); until then the delays are counted in `delay_buckets`.
    delay: Histogram<u64>,
    delay_buckets: DelayBuckets,
    pub delay_sum_ns: f64,
    pub delay_n: u64,
    pub max_qlen: usize,
}

impl QueueMeasure {
    pub fn new(warmup: Time) -> Self {
        let delay = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds");
        QueueMeasure {
            delay_buckets: DelayBuckets::new(&delay),
            delay,
            warmup,
            area_pkts: 0.0,
            area_bytes: 0.0,
            last_t: warmup,
            last_pkts: 0,
            last_bytes: 0,
            delay_sum_ns: 0.0,
            delay_n: 0,
            max_qlen: 0,
        }
    }

    /// The queue holds `pkts`/`bytes` from time `t` on (called after every change, in time order).
    #[inline]
    pub fn queue_changed(&mut self, t: Time, pkts: usize, bytes: u64) {
        if t > self.last_t {
            let dt = exact_f64(t - self.last_t);
            self.area_pkts += exact_f64(self.last_pkts as u64) * dt;
            self.area_bytes += exact_f64(self.last_bytes) * dt;
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
            self.delay_sum_ns += exact_f64(wait);
            self.delay_n += 1;
            self.delay_buckets.record(wait.max(1));
        }
    }

    /// Close the integrals and the delay histogram at the end of the run.
    pub fn finish(&mut self, end: Time) {
        let (p, b) = (self.last_pkts, self.last_bytes);
        self.queue_changed(end, p, b);
        self.delay_buckets.add_to(&mut self.delay);
    }

    /// The queueing-delay histogram (complete once [`QueueMeasure::finish`] has run).
    pub fn delay(&self) -> &Histogram<u64> {
        debug_assert!(self.delay_buckets.is_empty(), "delay histogram read before finish");
        &self.delay
    }
}

/// Delays counted in the buckets of the delay histogram, as `Histogram::saturating_record` would
/// count them, and added to it at the end of the run ([`DelayBuckets::add_to`]): the same
/// histogram, at a quarter of the cost per packet (about 15 instructions instead of 60: one index
/// computation and an increment, where the crate's record also handles resizing, unit
/// magnitudes, a fallible index and the running total).
///
/// The layout is HdrHistogram's for a lowest discernible value of 1 and 3 significant digits:
/// 2048 sub-buckets, so value `v` falls in bucket `k = max(0, bits(v) - 11)` at sub-bucket
/// `v >> k`, index `(k << 10) + (v >> k)`, and every value of an index has the same lowest value
/// `(v >> k) << k` (the test `buckets_are_the_histograms` checks this against the crate).
struct DelayBuckets {
    counts: Vec<u64>,
    /// The smallest and largest value counted (after clamping), which the histogram's minimum and
    /// maximum must see.
    min: u64,
    max: u64,
    /// The histogram's highest trackable value: values past its last bucket are counted there,
    /// as this value.
    high: u64,
}

impl DelayBuckets {
    const SUB_BITS: u32 = 11;

    fn new(h: &Histogram<u64>) -> Self {
        assert!(h.low() == 1 && h.sigfig() == 3, "DelayBuckets follows a (1, _, 3) histogram");
        DelayBuckets { counts: vec![0; h.distinct_values()], min: u64::MAX, max: 0, high: h.high() }
    }

    #[inline(always)]
    fn index(v: u64) -> usize {
        let k = 64 - Self::SUB_BITS - (v | ((1 << Self::SUB_BITS) - 1)).leading_zeros();
        (((k as u64) << (Self::SUB_BITS - 1)) + (v >> k)) as usize
    }

    /// The lowest value of index `i`.
    fn lowest(i: usize) -> u64 {
        let half = 1usize << (Self::SUB_BITS - 1);
        if i < 2 * half {
            i as u64
        } else {
            let k = i / half - 1;
            ((i - k * half) as u64) << k
        }
    }

    #[inline(always)]
    fn record(&mut self, v: u64) {
        let i = Self::index(v);
        let (i, v) = if i < self.counts.len() { (i, v) } else { (Self::index(self.high), self.high) };
        self.counts[i] += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    fn is_empty(&self) -> bool {
        self.max == 0
    }

    /// Add the counted delays to `h` and start over. Each index's count is recorded at one value
    /// of the index: the minimum or the maximum where they fall, so that `h` sees both, else the
    /// index's lowest value (which lies between them).
    fn add_to(&mut self, h: &mut Histogram<u64>) {
        if self.is_empty() {
            return;
        }
        let (lo, hi) = (Self::index(self.min), Self::index(self.max));
        for i in lo..=hi {
            let c = std::mem::take(&mut self.counts[i]);
            if c == 0 {
                continue;
            }
            if i == lo && i == hi && self.min != self.max {
                h.saturating_record_n(self.min, c - 1);
                h.saturating_record_n(self.max, 1);
            } else if i == lo {
                h.saturating_record_n(self.min, c);
            } else if i == hi {
                h.saturating_record_n(self.max, c);
            } else {
                h.saturating_record_n(Self::lowest(i), c);
            }
        }
        (self.min, self.max) = (u64::MAX, 0);
    }
}

/// `x as f64`, the same value, in one instruction for the values that occur: x86-64 converts
/// signed integers directly but needs a sequence of several instructions for an unsigned one,
/// and queue lengths, queued bytes and time spans below 292 years all fit in an `i64`.
#[inline(always)]
fn exact_f64(x: u64) -> f64 {
    match i64::try_from(x) {
        Ok(i) => i as f64,
        Err(_) => x as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flows_counts_are_16_bytes_and_saturate_while_the_acks_do_not() {
        assert_eq!(std::mem::size_of::<AtLink>(), 16);
        let mut m = LinkMonitor::new(0, 0, 2, &[]);
        m.flows[1] = AtLink { arrivals: u32::MAX - 1, tx_pkts: u32::MAX - 1, tx_bytes: 0 };
        m.acks = AtLinkSum { arrivals: u32::MAX as u64, tx_pkts: u32::MAX as u64, tx_bytes: 0 };
        assert_eq!(m.saturated(), None);
        for _ in 0..2 {
            for who in [Counted::Flow(1), Counted::Acks] {
                m.arrived_as(who, 1, 1, 100);
                m.departed_as(who, 100, (1, 1), 0, 0);
            }
        }
        assert_eq!(m.flows[1], AtLink { arrivals: u32::MAX, tx_pkts: u32::MAX, tx_bytes: 200 });
        assert_eq!(m.acks, AtLinkSum { arrivals: u32::MAX as u64 + 2, tx_pkts: u32::MAX as u64 + 2, tx_bytes: 200 });
        assert_eq!(m.saturated(), Some(1));
    }

    #[test]
    fn queue_integral_respects_warmup() {
        let mut m = QueueMeasure::new(10);
        m.queue_changed(0, 4, 4000); // before the window
        m.queue_changed(12, 2, 2000); // 4 packets over [10, 12)
        m.finish(20); // 2 packets over [12, 20)
        assert_eq!(m.area_pkts, 4.0 * 2.0 + 2.0 * 8.0);
    }

    #[test]
    fn buckets_are_the_histograms() {
        let mut direct = QueueMeasure::new(0).delay;
        let mut m = QueueMeasure::new(0);
        assert_eq!(direct, m.delay);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut values = vec![1, 2, 2047, 2048, 2049, 4095, 4096, 3_600_000_000_000, u64::MAX];
        for shift in 0..64 {
            for _ in 0..200 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                values.push((x >> shift).max(1));
            }
        }
        for (n, &v) in values.iter().enumerate() {
            let i = DelayBuckets::index(v);
            if i < m.delay_buckets.counts.len() {
                assert_eq!(DelayBuckets::lowest(i), direct.lowest_equivalent(v), "{v}");
            }
            direct.saturating_record(v);
            m.departed(1, v);
            if n % 1000 == 999 {
                m.finish(1); // adding part way changes nothing
            }
        }
        m.finish(1);
        assert_eq!(direct, *m.delay());
        assert_eq!((direct.min(), direct.max(), direct.len()), (m.delay().min(), m.delay().max(), m.delay().len()));
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(direct.value_at_quantile(q), m.delay().value_at_quantile(q));
        }
        // one value, and two of one index
        for vs in [&[7_000_001][..], &[5_000_000, 5_000_001], &[5_000_001, 5_000_000, 5_000_001]] {
            let mut direct = QueueMeasure::new(0).delay;
            let mut m = QueueMeasure::new(0);
            for &v in vs {
                direct.saturating_record(v);
                m.departed(1, v);
            }
            m.finish(1);
            assert_eq!(direct, *m.delay());
            assert_eq!((direct.min(), direct.max()), (m.delay().min(), m.delay().max()));
        }
    }

    #[test]
    fn exact_f64_is_the_unsigned_conversion() {
        for x in [0, 1, 1 << 53, (1 << 53) + 1, i64::MAX as u64, (i64::MAX as u64) + 1, u64::MAX - 1, u64::MAX] {
            assert_eq!(exact_f64(x).to_bits(), (x as f64).to_bits(), "{x}");
        }
    }
}
