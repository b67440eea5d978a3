//! Latency distributions: per flow, the one-way delay of its data packets (sender to receiver)
//! and its round-trip times (the TCP sender's RTT samples, a probe's echoes), each in a
//! fixed-size log-bucketed histogram ([`LogHist`]) of integer nanoseconds. Recording is an index
//! computation and an increment: nothing is allocated per packet (a flow's buckets are allocated
//! once, at its first sample). docs/metrics.md ("Latency distributions") defines what is counted.
//!
//! Which flows are recorded ([`Latency`]): every flow with `simulation.latency = true`, and the
//! flows of probe groups (`app = "probe"`) always. The connections of a short or web group are
//! many and short: they share one histogram per group (their rows of the flows table carry no
//! percentiles; the group's entry in the summary does).

use crate::scenario::{Scenario, TcpApp, Transport};
use aqm::Time;

/// Sub-buckets per power of two, as a power of two: values below `2^SUB_BITS` are counted
/// exactly; above, a bucket `[lo, lo + 2^k)` has `lo >= 2^(SUB_BITS - 1 + k)`, so its width is at
/// most `1 / 2^(SUB_BITS - 1)` of any value in it.
const SUB_BITS: u32 = 7;
const HALF: u64 = 1 << (SUB_BITS - 1);
/// Values up to `2^MAX_BITS - 1` ns (about 73 minutes) have their own bucket; larger ones are
/// counted in the last (their maximum is still exact).
const MAX_BITS: u32 = 42;
/// Number of buckets.
pub const BUCKETS: usize = ((MAX_BITS - SUB_BITS) as usize) * HALF as usize + 2 * HALF as usize;

/// The largest relative error of a percentile read from a [`LogHist`]: half a bucket's width over
/// its lowest value, `1 / 2^SUB_BITS` (0.78 %); values below 128 ns are exact.
pub const REL_ERROR: f64 = 1.0 / (1u64 << SUB_BITS) as f64;

/// A histogram of nanosecond values in log-linear buckets (HdrHistogram's layout with 128
/// sub-buckets per power of two: about two significant digits), with the exact count, sum,
/// minimum and maximum. 9.5 KB once it has a value, nothing before.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogHist {
    counts: Vec<u32>,
    /// Values counted (a bucket's count saturates at `u32::MAX`; this does not).
    pub n: u64,
    pub sum_ns: u128,
    pub min: u64,
    pub max: u64,
}

impl LogHist {
    /// The bucket of `v`.
    #[inline(always)]
    pub fn index(v: u64) -> usize {
        let v = v.min((1u64 << MAX_BITS) - 1);
        let bits = 64 - v.leading_zeros();
        if bits <= SUB_BITS {
            return v as usize;
        }
        let k = bits - SUB_BITS;
        ((k as u64) * HALF + (v >> k)) as usize
    }

    /// The lowest value of bucket `i` and its width.
    pub fn bucket(i: usize) -> (u64, u64) {
        let i = i as u64;
        if i < 2 * HALF {
            return (i, 1);
        }
        let k = i / HALF - 1;
        ((i - k * HALF) << k, 1 << k)
    }

    /// Count `v` (ns).
    #[inline]
    pub fn record(&mut self, v: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
            self.min = u64::MAX;
        }
        let c = &mut self.counts[Self::index(v)];
        *c = c.saturating_add(1);
        self.n += 1;
        self.sum_ns += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Add the values of `other` (exact: bucket by bucket).
    pub fn merge(&mut self, other: &LogHist) {
        if other.n == 0 {
            return;
        }
        if self.counts.is_empty() {
            *self = other.clone();
            return;
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a = a.saturating_add(*b);
        }
        self.n += other.n;
        self.sum_ns += other.sum_ns;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The value a bucket stands for: its middle, within the values seen.
    fn value_of(&self, i: usize) -> f64 {
        let (lo, w) = Self::bucket(i);
        let mid = lo as f64 + (w - 1) as f64 / 2.0;
        mid.clamp(self.min as f64, self.max as f64)
    }

    /// The `q`-quantile (0 < q <= 1) in ns: the value of the sample of rank `ceil(q n)` in
    /// ascending order (nearest rank), within [`REL_ERROR`] of it; NaN when empty. `q = 1` is the
    /// exact maximum.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        if q >= 1.0 {
            return self.max as f64;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                return self.value_of(i);
            }
        }
        self.max as f64
    }

    /// The mean in ns (exact; NaN when empty).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sum_ns as f64 / self.n as f64
        }
    }

    /// The distribution: `(value in ns, count, fraction of the values at or below it)` for every
    /// non-empty bucket, in ascending order (the last at 1).
    pub fn cdf(&self) -> Vec<(f64, u64, f64)> {
        let mut out = Vec::new();
        let mut seen = 0u64;
        let total: u64 = self.counts.iter().map(|&c| c as u64).sum();
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                seen += c as u64;
                out.push((self.value_of(i), c as u64, seen as f64 / total as f64));
            }
        }
        out
    }
}

/// The two distributions of a flow (or of a group's connections).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowLatency {
    /// One-way delay of data packets (TCP data, UDP datagrams, probes) reaching the receiver.
    pub owd: LogHist,
    /// Round-trip times: a TCP sender's RTT samples, a probe's echoes.
    pub rtt: LogHist,
}

/// `Latency::slot` of a flow that is not recorded.
pub const NOT_RECORDED: u32 = u32::MAX;

/// The latency histograms of a run: one slot per recorded flow (static flows), one per short or
/// web group (its connections together); samples count from the warm-up on.
#[derive(Debug, Clone, Default)]
pub struct Latency {
    pub warmup: Time,
    /// Per static flow (ids `0..flow_slot.len()`): its slot, or [`NOT_RECORDED`].
    pub flow_slot: Vec<u32>,
    /// Per group: the slot of its connections (short and web groups), or [`NOT_RECORDED`].
    pub group_slot: Vec<u32>,
    pub slots: Vec<FlowLatency>,
}

impl Latency {
    /// The slots a scenario records (`None` when it records none: no `simulation.latency` and no
    /// probe group).
    pub fn new(sc: &Scenario) -> Option<Latency> {
        let on = |g: &crate::scenario::GroupSpec| sc.latency || g.is_probe();
        if !sc.groups.iter().any(on) {
            return None;
        }
        let mut l = Latency { warmup: sc.warmup, ..Latency::default() };
        for g in &sc.groups {
            let dynamic = matches!(g.transport, Transport::Tcp { app: TcpApp::Short(_) | TcpApp::Web(_), .. });
            if dynamic {
                let s = if on(g) { l.add() } else { NOT_RECORDED };
                l.group_slot.push(s);
            } else {
                l.group_slot.push(NOT_RECORDED);
                for _ in 0..g.count {
                    let s = if on(g) { l.add() } else { NOT_RECORDED };
                    l.flow_slot.push(s);
                }
            }
        }
        Some(l)
    }

    fn add(&mut self) -> u32 {
        self.slots.push(FlowLatency::default());
        (self.slots.len() - 1) as u32
    }

    /// The slot of flow `fi` of group `group` ([`NOT_RECORDED`] if none).
    #[inline(always)]
    pub fn slot(&self, fi: usize, group: u32) -> u32 {
        match self.flow_slot.get(fi) {
            Some(&s) => s,
            None => self.group_slot[group as usize],
        }
    }

    /// A data packet of flow `fi` sent at `sent` reached its receiver at `now`.
    #[inline]
    pub fn one_way(&mut self, fi: usize, group: u32, sent: Time, now: Time) {
        let s = self.slot(fi, group);
        if s != NOT_RECORDED && now >= self.warmup {
            self.slots[s as usize].owd.record(now.saturating_sub(sent));
        }
    }

    /// Flow `fi`'s sender took a round-trip sample of `ns` at `now`.
    #[inline]
    pub fn round_trip(&mut self, fi: usize, group: u32, ns: u64, now: Time) {
        let s = self.slot(fi, group);
        if s != NOT_RECORDED && now >= self.warmup {
            self.slots[s as usize].rtt.record(ns);
        }
    }

    /// A static flow's histograms (`None` for a connection of a short or web group, or a flow not
    /// recorded).
    pub fn of_flow(&self, fi: usize) -> Option<&FlowLatency> {
        match self.flow_slot.get(fi) {
            Some(&s) if s != NOT_RECORDED => Some(&self.slots[s as usize]),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn buckets_tile_the_values() {
        // every value falls in the bucket whose range holds it, and the buckets are contiguous
        let mut next = 0u64;
        for i in 0..BUCKETS {
            let (lo, w) = LogHist::bucket(i);
            assert_eq!(lo, next, "bucket {i}");
            assert_eq!(LogHist::index(lo), i);
            assert_eq!(LogHist::index(lo + w - 1), i);
            assert!(w == 1 || (w as f64) / (lo as f64) <= 2.0 * REL_ERROR, "bucket {i}: {lo} + {w}");
            next = lo + w;
        }
        assert_eq!(next, 1u64 << MAX_BITS);
        assert_eq!(LogHist::index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn small_values_are_exact_and_empty_is_nan() {
        let mut h = LogHist::default();
        assert!(h.quantile(0.5).is_nan());
        for v in [3, 1, 2, 100, 127] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 3.0);
        assert_eq!(h.quantile(0.2), 1.0);
        assert_eq!(h.quantile(1.0), 127.0);
        assert_eq!(h.mean(), 233.0 / 5.0);
        let cdf = h.cdf();
        assert_eq!(cdf.first(), Some(&(1.0, 1, 0.2)));
        assert_eq!(cdf.last(), Some(&(127.0, 1, 1.0)));
    }

    #[test]
    fn merge_is_recording_both() {
        let (mut a, mut b, mut both) = (LogHist::default(), LogHist::default(), LogHist::default());
        for v in [5u64, 50_000, 7_000_000] {
            a.record(v);
            both.record(v);
        }
        for v in [1u64, 123_456_789] {
            b.record(v);
            both.record(v);
        }
        a.merge(&b);
        assert_eq!(a, both);
        let mut empty = LogHist::default();
        empty.merge(&both);
        assert_eq!(empty, both);
    }

    proptest! {
        /// Every percentile is within the stated relative error of the exact nearest-rank value of
        /// the sorted list (values spread over nine decades).
        #[test]
        fn percentiles_within_the_stated_error(
            vals in prop::collection::vec((0u32..40, 0u64..u64::MAX).prop_map(|(s, x)| x >> (24 + s)), 1..600),
            qs in prop::collection::vec(0.0f64..=1.0, 1..8),
        ) {
            let mut h = LogHist::default();
            for &v in &vals {
                h.record(v);
            }
            let mut sorted = vals.clone();
            sorted.sort_unstable();
            for q in qs.into_iter().chain([0.5, 0.9, 0.99, 0.999, 1.0]) {
                let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
                let exact = sorted[rank - 1] as f64;
                let got = h.quantile(q);
                prop_assert!((got - exact).abs() <= exact * REL_ERROR, "q {}: {} vs exact {}", q, got, exact);
                if exact < 128.0 {
                    prop_assert_eq!(got, exact);
                }
            }
            prop_assert_eq!(h.quantile(1.0), *sorted.last().unwrap() as f64);
            prop_assert_eq!(h.n, vals.len() as u64);
        }
    }
}
