//! HHF — the Heavy-Hitter Filter.
//!
//! Reference: Linux's `net/sched/sch_hhf.c` (T. Lam, N. Dukkipati, 2013; learned from, not
//! copied), built on the multistage filters of C. Estan, G. Varghese, "New Directions in Traffic
//! Measurement and Accounting", Proc. ACM SIGCOMM 2002 ([EV02]).
//!
//! HHF is a scheduler, not a dropper: it sorts flows into two buckets, *heavy hitters* and the
//! rest, served by a weighted deficit round robin in which the rest weigh `non_hh_weight` (2)
//! against the heavy hitters' 1, so that short and slow flows keep at least two thirds of the
//! link however much the heavy hitters send. When the buffer overflows, the head of the heavy
//! hitters' bucket is dropped first.
//!
//! A heavy hitter is found with a multistage filter ([EV02] §3.3): `filter_arrays` arrays of
//! `filter_len` byte counters, one hash function each; a packet adds its size to its flow's counter
//! in every array, and a flow whose every counter exceeds `admit_bytes` within one `reset_timeout`
//! (the counters are zeroed every period) is a heavy hitter (a small flow is caught only if it
//! collides with large ones in every array). Two refinements of [EV02] as in Linux: *shielding*
//! (§3.3.1: once caught, a flow's bytes no longer count) and *conservative update* (§3.3.2: a
//! counter is raised only to the smallest counter plus the packet). Caught flows go to an exact
//! table (at most `hh_flows_limit` entries) and leave it after `evict_timeout` without a packet.
//!
//! Linux's defaults (128 KB per 40 ms, i.e. flows above 25 Mb/s) are sized for 10 Gb/s hosts. On
//! a link of any rate aqmlab's defaults make a heavy hitter a flow above `admit_share` (10 %) of
//! the link: `reset_timeout` is 40 ms, or longer on slow links so that the threshold is at least 16
//! packets of `quantum` bytes (a TCP window's burst is not mistaken for a heavy hitter), and
//! `admit_bytes = admit_share × rate × reset_timeout`.

use crate::control::{check_period, check_range, period_ns};
use crate::fifo::Fifo;
use crate::rng::mix64;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// HHF parameters as written in a scenario (`aqm = { type = "hhf", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HhfParams {
    /// WDRR quantum in bytes (Linux: the MTU).
    #[serde(default = "crate::defaults::hhf::quantum")]
    pub quantum: u32,
    /// WDRR weight of the non-heavy-hitter bucket (the heavy hitters weigh 1).
    #[serde(default = "crate::defaults::hhf::non_hh_weight")]
    pub non_hh_weight: u32,
    /// A flow above this share of the link rate is a heavy hitter (used when `admit_bytes` is
    /// absent).
    #[serde(default = "crate::defaults::hhf::admit_share")]
    pub admit_share: f64,
    /// Bytes within one `reset_timeout` that make a heavy hitter. Absent = from `admit_share`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admit_bytes: Option<u64>,
    /// Period of the filter's reset. Absent = 40 ms, or longer on slow links: long enough for the
    /// threshold to be at least 16 quanta (`16 quantum / (admit_share C)`).
    #[serde(default, with = "crate::units::opt_secs", skip_serializing_if = "Option::is_none")]
    pub reset_timeout: Option<f64>,
    /// A heavy hitter without a packet for this long leaves the table, seconds.
    #[serde(with = "crate::units::secs", default = "crate::defaults::hhf::evict_timeout")]
    pub evict_timeout: f64,
    /// Entries of the heavy-hitter table.
    #[serde(default = "crate::defaults::hhf::hh_flows_limit")]
    pub hh_flows_limit: u32,
    /// Arrays of the multistage filter.
    #[serde(default = "crate::defaults::hhf::filter_arrays")]
    pub filter_arrays: u32,
    /// Counters per array (a power of two).
    #[serde(default = "crate::defaults::hhf::filter_len")]
    pub filter_len: u32,
}

impl Default for HhfParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl HhfParams {
    /// `(reset_timeout in seconds, admit_bytes)` for a link of `rate_bps`.
    pub fn resolve(&self, rate_bps: f64) -> (f64, u64) {
        let share_bps = self.admit_share * rate_bps;
        let reset = self.reset_timeout.unwrap_or_else(|| (16.0 * self.quantum as f64 * 8.0 / share_bps).max(0.04));
        let admit = self.admit_bytes.unwrap_or_else(|| (share_bps * reset / 8.0).round() as u64);
        (reset, admit)
    }
}

impl Params for HhfParams {
    fn validate(&self) -> Result<(), ParamError> {
        crate::control::check_bytes("quantum", self.quantum)?;
        if !(1..=1000).contains(&self.non_hh_weight) {
            return Err(ParamError::new("non_hh_weight", format!("must be 1..1000, got {}", self.non_hh_weight)));
        }
        check_range("admit_share", self.admit_share, 1e-9, 1.0)?;
        if let Some(r) = self.reset_timeout {
            check_period("reset_timeout", r)?;
        }
        check_period("evict_timeout", self.evict_timeout)?;
        if !(1..=1 << 24).contains(&self.hh_flows_limit) {
            return Err(ParamError::new("hh_flows_limit", format!("must be 1..16777216, got {}", self.hh_flows_limit)));
        }
        if !(1..=8).contains(&self.filter_arrays) {
            return Err(ParamError::new("filter_arrays", format!("must be 1..8, got {}", self.filter_arrays)));
        }
        if !(self.filter_len.is_power_of_two() && (2..=1 << 16).contains(&self.filter_len)) {
            return Err(ParamError::new(
                "filter_len",
                format!("must be a power of two in 2..65536, got {}", self.filter_len),
            ));
        }
        Ok(())
    }
}

const HH: usize = 0;
const NON_HH: usize = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

struct Bucket<P> {
    fifo: Fifo<P>,
    deficit: i64,
    list: List,
}

/// HHF.
pub struct Hhf<P> {
    buckets: [Bucket<P>; 2],
    /// Bucket ids on the new and old lists, in order.
    new_list: Vec<usize>,
    old_list: Vec<usize>,
    pkts: usize,
    bytes: u64,
    limit: Limit,
    quantum: i64,
    weights: [i64; 2],
    admit: u64,
    reset: Time,
    evict: Time,
    hh_limit: usize,
    arrays: usize,
    mask: u64,
    /// `arrays × len` byte counters.
    filter: Vec<u32>,
    reset_at: Time,
    /// Heavy hitters and the time each was last seen.
    hh: FxHashMap<u32, Time>,
    peak_hh: usize,
    salt: Option<u64>,
    caught: u64,
}

impl<P: Pkt> Hhf<P> {
    pub fn new(p: &HhfParams, link: LinkInfo, limit: Limit) -> Self {
        let (reset, admit) = p.resolve(link.rate_bps);
        let len = p.filter_len as usize;
        let bucket = || Bucket { fifo: Fifo::default(), deficit: 0, list: List::None };
        Hhf {
            buckets: [bucket(), bucket()],
            new_list: Vec::with_capacity(2),
            old_list: Vec::with_capacity(2),
            pkts: 0,
            bytes: 0,
            limit,
            quantum: p.quantum as i64,
            weights: [1, p.non_hh_weight as i64],
            admit,
            reset: period_ns(reset),
            evict: period_ns(p.evict_timeout),
            hh_limit: p.hh_flows_limit as usize,
            arrays: p.filter_arrays as usize,
            mask: len as u64 - 1,
            filter: vec![0; p.filter_arrays as usize * len],
            reset_at: 0,
            hh: FxHashMap::default(),
            peak_hh: 0,
            salt: None,
            caught: 0,
        }
    }

    /// Whether `flow` is in the heavy-hitter table.
    pub fn is_heavy(&self, flow: u32) -> bool {
        self.hh.contains_key(&flow)
    }

    /// The admission threshold in bytes per reset period.
    pub fn admit_bytes(&self) -> u64 {
        self.admit
    }

    /// Which bucket a packet of `flow` and `size` bytes goes to, at `now`.
    fn classify(&mut self, flow: u32, size: u32, now: Time) -> usize {
        if now >= self.reset_at + self.reset {
            self.filter.iter_mut().for_each(|c| *c = 0);
            self.reset_at = now;
        }
        // a known heavy hitter (unless it has been idle for evict_timeout)
        if let Some(last) = self.hh.get_mut(&flow) {
            if now.saturating_sub(*last) <= self.evict {
                *last = now;
                return HH;
            }
            self.hh.remove(&flow);
        }
        // the multistage filter
        let h = mix64(flow as u64 ^ self.salt.expect("salted"));
        let len = (self.mask + 1) as usize;
        let slot = |i: usize| i * len + (mix64(h.wrapping_add(i as u64)) & self.mask) as usize;
        let mut min = u64::MAX;
        for i in 0..self.arrays {
            min = min.min(self.filter[slot(i)] as u64 + size as u64);
        }
        if min > self.admit {
            if self.hh.len() >= self.hh_limit {
                let (evict, now_) = (self.evict, now);
                self.hh.retain(|_, last| now_.saturating_sub(*last) <= evict);
            }
            if self.hh.len() < self.hh_limit {
                // shielding: a caught flow's bytes are not counted
                self.hh.insert(flow, now);
                self.peak_hh = self.peak_hh.max(self.hh.len());
                self.caught += 1;
                return HH;
            }
            return NON_HH;
        }
        // conservative update
        let v = min.min(u32::MAX as u64) as u32;
        for i in 0..self.arrays {
            let c = &mut self.filter[slot(i)];
            *c = (*c).max(v);
        }
        NON_HH
    }

    /// Drop the head of the heavy hitters' bucket, or of the other if it is empty; returns the
    /// bucket.
    fn drop_one(&mut self, cx: &mut Cx<'_, P>) -> usize {
        let b = if self.buckets[HH].fifo.is_empty() { NON_HH } else { HH };
        let (p, _) = self.buckets[b].fifo.pop().expect("a full buffer holds packets");
        self.pkts -= 1;
        self.bytes -= p.size() as u64;
        cx.drop(p, DropReason::Overflow);
        b
    }
}

impl<P: Pkt> Scheme<P> for Hhf<P> {
    type Params = HhfParams;
    fn new(params: &HhfParams, link: LinkInfo, limit: Limit) -> Self {
        Hhf::new(params, link, limit)
    }
}

impl<P: Pkt> Qdisc<P> for Hhf<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        if self.salt.is_none() {
            self.salt = Some(cx.rng.next_u64());
        }
        let idx = self.classify(pkt.flow(), pkt.size(), cx.now);
        let b = &mut self.buckets[idx];
        b.fifo.push(pkt, cx.now);
        self.pkts += 1;
        self.bytes += pkt.size() as u64;
        if b.list == List::None {
            // heavy hitters always join the old list; the others the new one (fq_codel's rule)
            b.deficit = self.weights[idx] * self.quantum;
            if idx == HH {
                b.list = List::Old;
                self.old_list.push(idx);
            } else {
                b.list = List::New;
                self.new_list.push(idx);
            }
        }
        let mut admitted = true;
        while self.limit.qlen(self.pkts, self.bytes) > self.limit.value {
            let from = self.drop_one(cx);
            if from == idx && self.buckets[idx].fifo.is_empty() {
                admitted = false; // the arrival, alone in its bucket, was its head
            }
        }
        admitted
    }

    fn dequeue(&mut self, _cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        loop {
            let (from_new, i) = match (self.new_list.first(), self.old_list.first()) {
                (Some(&i), _) => (true, i),
                (None, Some(&i)) => (false, i),
                (None, None) => return None,
            };
            if self.buckets[i].deficit <= 0 {
                self.buckets[i].deficit += self.weights[i] * self.quantum;
                if from_new {
                    self.new_list.remove(0);
                } else {
                    self.old_list.remove(0);
                }
                self.buckets[i].list = List::Old;
                self.old_list.push(i);
                continue;
            }
            if let Some((p, enq)) = self.buckets[i].fifo.pop() {
                self.pkts -= 1;
                self.bytes -= p.size() as u64;
                self.buckets[i].deficit -= p.size() as i64;
                return Some((p, enq));
            }
            // empty: a new bucket passes through the old list once (no starvation), else leaves
            if from_new {
                self.new_list.remove(0);
                if !self.old_list.is_empty() {
                    self.buckets[i].list = List::Old;
                    self.old_list.push(i);
                } else {
                    self.buckets[i].list = List::None;
                }
            } else {
                self.old_list.remove(0);
                self.buckets[i].list = List::None;
            }
        }
    }

    fn len(&self) -> usize {
        self.pkts
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Order: the heavy hitters' bucket, then the other, each from head to tail.
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        for b in &self.buckets {
            b.fifo.for_each(f);
        }
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["hh_flows", "hh_backlog", "caught"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.hh.len() as f64;
        out[1] = self.buckets[HH].fifo.len() as f64;
        out[2] = self.caught as f64;
    }
    /// The filter's counters and the heavy-hitter table at its largest (flow id and time).
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + 4 * self.filter.len() + 12 * self.peak_hh) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;
    use crate::NS_PER_SEC;

    #[test]
    fn defaults_and_validation() {
        let p = HhfParams::default();
        assert!(p.validate().is_ok());
        // 10 Gb/s: 40 ms, 10 % of the link = 5 MB per period
        assert_eq!(p.resolve(1e10), (0.04, 5_000_000));
        // 1 Mb/s: 16 packets of 1514 bytes at 100 kb/s take 1.93792 s
        let (r, a) = p.resolve(1e6);
        assert!((r - 16.0 * 1514.0 * 8.0 / 1e5).abs() < 1e-12);
        assert_eq!(a, 16 * 1514);
        // Linux's defaults, written out
        let linux = HhfParams { admit_bytes: Some(131072), reset_timeout: Some(0.04), ..p.clone() };
        assert_eq!(linux.resolve(1e10), (0.04, 131072));
        assert_eq!(HhfParams { filter_len: 1000, ..p.clone() }.validate().unwrap_err().field, "filter_len");
        assert_eq!(HhfParams { non_hh_weight: 0, ..p.clone() }.validate().unwrap_err().field, "non_hh_weight");
    }

    /// The multistage filter catches a flow once its bytes in one period exceed the threshold
    /// (and not before), the table keeps it while it sends, and it leaves after `evict_timeout`
    /// of silence; the counters restart every `reset_timeout`.
    #[test]
    fn filter_catches_heavy_hitters_and_evicts_them() {
        let p = HhfParams { admit_bytes: Some(10_000), reset_timeout: Some(1.0), ..Default::default() };
        let mut q: Hhf<P> = Hhf::new(&p, LinkInfo { rate_bps: 1e9 }, Limit::packets(10_000));
        q.salt = Some(42);
        let ms = NS_PER_SEC / 1000;
        // 10 packets of 1000 bytes: exactly 10 000, not above
        for i in 0..10 {
            assert_eq!(q.classify(7, 1000, i * ms), NON_HH);
        }
        assert_eq!(q.classify(7, 1000, 10 * ms), HH, "10 001+ bytes");
        assert!(q.is_heavy(7));
        // shielded and remembered
        assert_eq!(q.classify(7, 1000, 500 * ms), HH);
        // a slow flow in another period is not caught
        for i in 0..9 {
            assert_eq!(q.classify(8, 1000, 1100 * ms + i * ms), NON_HH);
        }
        assert_eq!(q.classify(8, 1000, 2200 * ms), NON_HH, "the counters were reset");
        // silent for more than 1 s: evicted
        assert_eq!(q.classify(7, 100, 1600 * ms), NON_HH);
        assert!(!q.is_heavy(7));
    }

    /// HHF's scheduling: with both buckets backlogged the heavy hitters get 1/(1 + w) of the
    /// departures (w = 2); on overflow the heavy hitters' head is dropped first.
    #[test]
    fn weighted_service_and_overflow_from_the_heavy_bucket() {
        let p = HhfParams { admit_bytes: Some(3000), reset_timeout: Some(10.0), ..Default::default() };
        let mut q: Hhf<P> = Hhf::new(&p, LinkInfo { rate_bps: 1e9 }, Limit::packets(120));
        let mut rng = Rng::stream(1, "hhf", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // flow 1 becomes a heavy hitter at its third packet; drain
        for _ in 0..3 {
            q.enqueue(P::new(1, 1500), &mut cx);
        }
        assert!(q.is_heavy(1));
        while q.dequeue(&mut cx).is_some() {}
        // 60 packets of flow 1 and 60 of light flows fill the buffer to 120
        for i in 0..60u32 {
            q.enqueue(P::new(1, 1500), &mut cx);
            q.enqueue(P::new(10 + i, 1500), &mut cx);
        }
        assert_eq!((q.buckets[HH].fifo.len(), q.buckets[NON_HH].fifo.len()), (60, 60));
        // an overflow drops the heavy hitters' head
        assert!(q.enqueue(P::new(99, 1500), &mut cx));
        assert_eq!(cx.drops.last().unwrap().pkt.flow, 1);
        assert_eq!(q.buckets[HH].fifo.len(), 59);
        // service: twice as many light packets as heavy ones
        let mut served = [0i64; 2];
        for _ in 0..60 {
            let (pk, _) = q.dequeue(&mut cx).unwrap();
            served[(pk.flow != 1) as usize] += 1;
        }
        assert!((served[1] - 2 * served[0]).abs() <= 3, "{served:?}");
    }
}
