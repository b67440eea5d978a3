//! SFB — Stochastic Fair Blue.
//!
//! Reference: W. Feng, D. D. Kandlur, D. Saha, K. G. Shin, "Stochastic Fair Blue: A Queue
//! Management Algorithm for Enforcing Fairness", Proc. IEEE INFOCOM 2001 ([SFB]); the same
//! algorithm in W. Feng et al., "The BLUE Active Queue Management Algorithms", IEEE/ACM ToN
//! 10(4), 2002, §V. Engineering choices compared with Linux's `net/sched/sch_sfb.c` (learned
//! from, not copied).
//!
//! SFB keeps `L` levels of `N` bins. Each level hashes a flow to one of its bins with its own hash
//! function (a Bloom filter over flows). A bin counts the packets queued from the flows that hash
//! to it and keeps a BLUE marking probability `p_m`: raised by `increment` when the bin is above
//! `bin_size` at an arrival, lowered by `decrement` when it is empty, at most once per
//! `freeze_time` (BLUE's rule, per bin). An arrival is dropped with `p_min`, the smallest `p_m`
//! of its `L` bins, and dropped at once while one of its bins is above `bin_size` ([SFB]'s
//! pseudo-code, "SFB algorithm"). A flow whose every bin reached `p_m = 1` does not respond to
//! drops: it goes to the *penalty box*, a token bucket of `penalty_rate` packets per second
//! (the paper's `ratelimit()`). A TCP flow shares all its bins with a non-responsive flow only
//! with probability about `(1/N)^L`, so it keeps a `p_min` of its own.
//!
//! With `rehash > 0`, the hash functions move ("moving hash functions"): every `rehash` seconds
//! the bins in use are replaced by a second set that has been warmed up with new hash functions
//! for the last `warmup` seconds (Linux's double buffering), so that a flow misclassified by a
//! collision is freed at the next change.

use crate::control::{check_period, check_range, early_drop, period_ns};
use crate::rng::mix64;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, QueueUnit, Scheme, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// SFB parameters as written in a scenario (`aqm = { type = "sfb", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SfbParams {
    /// Levels `L` (independent hash functions).
    #[serde(default = "crate::defaults::sfb::levels")]
    pub levels: u32,
    /// Bins per level `N`.
    #[serde(default = "crate::defaults::sfb::bins")]
    pub bins: u32,
    /// A bin's share of the buffer, in the queue unit: above it the bin's `p_m` rises and the
    /// arrival is dropped. Absent = the buffer divided among a level's bins, `limit / N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin_size: Option<f64>,
    /// Raise of `p_m` when the bin is above `bin_size` (BLUE's `d1`).
    #[serde(default = "crate::defaults::sfb::increment")]
    pub increment: f64,
    /// Decrease of `p_m` when the bin is empty (BLUE's `d2`).
    #[serde(default = "crate::defaults::sfb::decrement")]
    pub decrement: f64,
    /// Minimum time between two changes of one bin's `p_m`, seconds (BLUE's `freeze_time`).
    #[serde(with = "crate::units::secs", default = "crate::defaults::sfb::freeze_time")]
    pub freeze_time: f64,
    /// Penalty box: packets per second let through for a flow whose `p_min` is 1 (0 = none).
    #[serde(default = "crate::defaults::sfb::penalty_rate")]
    pub penalty_rate: f64,
    /// Penalty box: token-bucket depth in packets.
    #[serde(default = "crate::defaults::sfb::penalty_burst")]
    pub penalty_burst: f64,
    /// When a full bin drops the arrival: `any` (one of its bins is above `bin_size`: [SFB]'s
    /// pseudo-code) or `all` (every one is: Linux's `max` rule, which spares a flow that shares
    /// one bin with a heavy flow).
    #[serde(default)]
    pub bin_drop: BinDrop,
    /// Period of the moving hash functions, seconds (0 = fixed hash functions, the base algorithm).
    #[serde(with = "crate::units::secs", default)]
    pub rehash: f64,
    /// Warm-up of the next bins before a rehash, seconds (double buffering; < `rehash`).
    #[serde(with = "crate::units::secs", default)]
    pub warmup: f64,
    /// Mark ECN-capable packets instead of the probabilistic drops (not the bin and penalty-box
    /// drops, which police a flow).
    #[serde(default)]
    pub ecn: bool,
}

/// Which full bins drop an arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BinDrop {
    #[default]
    Any,
    All,
}

impl Default for SfbParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for SfbParams {
    fn validate(&self) -> Result<(), ParamError> {
        if !(1..=16).contains(&self.levels) {
            return Err(ParamError::new("levels", format!("must be 1..16, got {}", self.levels)));
        }
        if !(1..=1 << 16).contains(&self.bins) {
            return Err(ParamError::new("bins", format!("must be 1..65536, got {}", self.bins)));
        }
        if let Some(b) = self.bin_size {
            if !(b.is_finite() && b > 0.0) {
                return Err(ParamError::new("bin_size", format!("must be a number > 0 in the queue unit, got {b}")));
            }
        }
        check_range("increment", self.increment, 0.0, 1.0)?;
        check_range("decrement", self.decrement, 0.0, 1.0)?;
        if self.freeze_time != 0.0 {
            check_period("freeze_time", self.freeze_time)?;
        }
        check_range("penalty_rate", self.penalty_rate, 0.0, 1e12)?;
        check_range("penalty_burst", self.penalty_burst, 0.0, 1e12)?;
        if self.rehash != 0.0 {
            check_period("rehash", self.rehash)?;
        }
        if self.warmup != 0.0 {
            check_period("warmup", self.warmup)?;
            if self.warmup >= self.rehash {
                return Err(ParamError::new("warmup", "must be shorter than rehash (and needs rehash > 0)"));
            }
        }
        Ok(())
    }
}

/// One bin: the queued amount of the flows that hash to it and its BLUE probability.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bin {
    /// Queued packets (or bytes) of the flows hashed here.
    qlen: u64,
    p_m: f64,
    /// Last change of `p_m` (`NEVER` = none yet).
    last: Time,
}

const NEVER: Time = Time::MAX;

impl Bin {
    const EMPTY: Bin = Bin { qlen: 0, p_m: 0.0, last: NEVER };
}

/// SFB over one FIFO.
pub struct Sfb<P> {
    /// Waiting packets with the hash under which each was counted in the two sets of bins (0 =
    /// not counted there), so that a departure decrements the right bins after a rehash.
    q: VecDeque<(P, Time, [u32; 2])>,
    bytes: u64,
    limit: Limit,
    levels: usize,
    n: u64,
    bin_size: f64,
    increment: f64,
    decrement: f64,
    freeze_ns: Time,
    penalty_rate: f64,
    penalty_burst: f64,
    bin_drop: BinDrop,
    ecn: bool,
    /// Two sets of `levels × n` bins (the second is used only with moving hash functions).
    bins: Vec<Bin>,
    /// Salt of each set's hash functions (drawn at the first arrival).
    salt: Option<[u64; 2]>,
    /// The set in use.
    active: usize,
    rehash_ns: Time,
    warmup_ns: Time,
    next_rehash: Time,
    /// Penalty box token bucket.
    tokens: f64,
    token_time: Time,
    /// `p_min` of the last arrival (controller state).
    last_p: f64,
    /// Arrivals that met the penalty box (controller state: counted since the start).
    penalized: u64,
}

impl<P: Pkt> Sfb<P> {
    pub fn new(p: &SfbParams, limit: Limit) -> Self {
        let levels = p.levels as usize;
        let n = p.bins as u64;
        let sets = if p.rehash > 0.0 { 2 } else { 1 };
        let bin_size = p.bin_size.unwrap_or_else(|| {
            let unit = match limit.unit {
                QueueUnit::Packets => 1.0,
                QueueUnit::Bytes => 1500.0,
            };
            (limit.value as f64 / n as f64).max(unit)
        });
        Sfb {
            q: VecDeque::new(),
            bytes: 0,
            limit,
            levels,
            n,
            bin_size,
            increment: p.increment,
            decrement: p.decrement,
            freeze_ns: period_ns(p.freeze_time),
            penalty_rate: p.penalty_rate,
            penalty_burst: p.penalty_burst,
            bin_drop: p.bin_drop,
            ecn: p.ecn,
            bins: vec![Bin::EMPTY; sets * levels * n as usize],
            salt: None,
            active: 0,
            rehash_ns: period_ns(p.rehash),
            warmup_ns: period_ns(p.warmup),
            next_rehash: period_ns(p.rehash),
            tokens: p.penalty_burst,
            token_time: 0,
            last_p: 0.0,
            penalized: 0,
        }
    }

    /// The hash of `flow` in set `set` (never 0, which marks "not counted").
    #[inline]
    fn hash(&self, flow: u32, set: usize) -> u32 {
        let salt = self.salt.expect("salted at the first arrival")[set];
        (mix64(flow as u64 ^ salt) as u32).max(1)
    }

    /// The index in `bins` of level `l`'s bin for hash `h` in set `set`.
    #[inline]
    fn bin(&self, h: u32, set: usize, l: usize) -> usize {
        let i = mix64(((h as u64) << 8) | l as u64) % self.n;
        (set * self.levels + l) * self.n as usize + i as usize
    }

    /// Whether the second set is being warmed up for the next rehash.
    #[inline]
    fn warming(&self, now: Time) -> bool {
        self.warmup_ns > 0 && now.saturating_add(self.warmup_ns) >= self.next_rehash
    }

    /// Moving hash functions: at each period the warmed-up set takes over, and the set it
    /// replaces gets new hash functions and fresh probabilities (its counts stay until the
    /// packets counted there leave).
    fn maybe_rehash(&mut self, now: Time, cx: &mut Cx<'_, P>) {
        while self.rehash_ns > 0 && now >= self.next_rehash {
            let old = self.active;
            self.active ^= 1;
            if let Some(s) = self.salt.as_mut() {
                s[old] = cx.rng.next_u64();
            }
            let per = self.levels * self.n as usize;
            for b in &mut self.bins[old * per..(old + 1) * per] {
                b.p_m = 0.0;
                b.last = NEVER;
            }
            self.next_rehash += self.rehash_ns;
        }
    }

    /// BLUE's update of one bin at an arrival: lowered when empty, raised when above `bin_size`
    /// (each at most once per `freeze_time`). Returns whether the bin is above `bin_size`.
    #[inline]
    fn touch(&mut self, i: usize, now: Time) -> bool {
        let (bin_size, inc, dec, freeze) = (self.bin_size, self.increment, self.decrement, self.freeze_ns);
        let b = &mut self.bins[i];
        let thawed = b.last == NEVER || now.saturating_sub(b.last) > freeze;
        let full = b.qlen as f64 > bin_size;
        if b.qlen == 0 {
            if thawed && b.p_m > 0.0 {
                b.p_m = (b.p_m - dec).max(0.0);
                b.last = now;
            }
        } else if full && thawed && b.p_m < 1.0 {
            b.p_m = (b.p_m + inc).min(1.0);
            b.last = now;
        }
        full
    }

    /// The penalty box's token bucket: true if the packet may pass.
    fn penalty_pass(&mut self, now: Time) -> bool {
        if self.penalty_rate <= 0.0 || self.penalty_burst <= 0.0 {
            return false;
        }
        let dt = now.saturating_sub(self.token_time) as f64 * 1e-9;
        self.tokens = (self.tokens + dt * self.penalty_rate).min(self.penalty_burst);
        self.token_time = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Add `d` (±) to the bins of hash `h` in set `set`.
    #[inline]
    fn count(&mut self, h: u32, set: usize, d: i64) {
        if h == 0 {
            return;
        }
        for l in 0..self.levels {
            let i = self.bin(h, set, l);
            let b = &mut self.bins[i];
            b.qlen = (b.qlen as i64 + d).max(0) as u64;
        }
    }

    /// The largest `p_m` of the bins in use.
    pub fn pm_max(&self) -> f64 {
        let per = self.levels * self.n as usize;
        self.bins[self.active * per..(self.active + 1) * per].iter().map(|b| b.p_m).fold(0.0, f64::max)
    }

    /// `p_min` of `flow` in the bins in use (1 for a flow in the penalty box).
    pub fn p_min(&self, flow: u32) -> f64 {
        if self.salt.is_none() {
            return 0.0;
        }
        let h = self.hash(flow, self.active);
        (0..self.levels).map(|l| self.bins[self.bin(h, self.active, l)].p_m).fold(1.0, f64::min)
    }
}

impl<P: Pkt> Scheme<P> for Sfb<P> {
    type Params = SfbParams;
    fn new(params: &SfbParams, _link: LinkInfo, limit: Limit) -> Self {
        Sfb::new(params, limit)
    }
}

impl<P: Pkt> Qdisc<P> for Sfb<P> {
    fn enqueue(&mut self, mut pkt: P, cx: &mut Cx<'_, P>) -> bool {
        if self.salt.is_none() {
            self.salt = Some([cx.rng.next_u64(), cx.rng.next_u64()]);
        }
        let now = cx.now;
        self.maybe_rehash(now, cx);
        // the buffer itself (Linux's order: a full buffer drops before the bins are consulted)
        if !self.limit.admits(self.q.len(), self.bytes, pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        // update the flow's bins at every level; p_min over them
        let set = self.active;
        let h = self.hash(pkt.flow(), set);
        let (mut any_full, mut all_full, mut p_min) = (false, true, 1.0f64);
        for l in 0..self.levels {
            let i = self.bin(h, set, l);
            let full = self.touch(i, now);
            any_full |= full;
            all_full &= full;
            p_min = p_min.min(self.bins[i].p_m);
        }
        // the next set learns the same way while it warms up
        let warming = self.warming(now);
        let h2 = if warming {
            let other = set ^ 1;
            let h2 = self.hash(pkt.flow(), other);
            for l in 0..self.levels {
                let i = self.bin(h2, other, l);
                self.touch(i, now);
            }
            h2
        } else {
            0
        };
        self.last_p = p_min;
        let full = match self.bin_drop {
            BinDrop::Any => any_full,
            BinDrop::All => all_full,
        };
        if full {
            cx.drop(pkt, DropReason::Forced);
            return false;
        }
        if p_min >= 1.0 {
            // the penalty box: a non-responsive flow is rate-limited
            self.penalized += 1;
            if !self.penalty_pass(now) {
                cx.drop(pkt, DropReason::Forced);
                return false;
            }
        } else if early_drop(cx.rng, p_min) {
            let Some(marked) = cx.signal(pkt, self.ecn) else { return false };
            pkt = marked;
        }
        let mut hashes = [0u32; 2];
        hashes[set] = h;
        hashes[set ^ 1] = h2;
        self.count(h, set, self.limit.size_unit(pkt.size()) as i64);
        self.count(h2, set ^ 1, self.limit.size_unit(pkt.size()) as i64);
        self.bytes += pkt.size() as u64;
        self.q.push_back((pkt, now, hashes));
        true
    }

    fn dequeue(&mut self, _cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let (pkt, enq, hashes) = self.q.pop_front()?;
        self.bytes -= pkt.size() as u64;
        let u = self.limit.size_unit(pkt.size()) as i64;
        self.count(hashes[0], 0, -u);
        if self.bins.len() > self.levels * self.n as usize {
            self.count(hashes[1], 1, -u);
        }
        Some((pkt, enq))
    }

    fn len(&self) -> usize {
        self.q.len()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        for (p, t, _) in &self.q {
            f(p, *t);
        }
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["p", "pm_max", "penalized"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.last_p;
        out[1] = self.pm_max();
        out[2] = self.penalized as f64;
    }
    /// The bins (both sets with moving hash functions) and the scalars; the per-packet hashes
    /// travel with the waiting packets (Linux keeps them in the packet's control block).
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + self.bins.len() * std::mem::size_of::<Bin>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;
    use crate::NS_PER_SEC;

    const MS: Time = NS_PER_SEC / 1000;

    fn sfb(p: &SfbParams, limit: u64) -> Sfb<P> {
        Sfb::new(p, Limit::packets(limit))
    }

    #[test]
    fn defaults_and_validation() {
        let p = SfbParams::default();
        assert!(p.validate().is_ok());
        assert_eq!((p.levels, p.bins), (2, 23));
        assert_eq!(SfbParams { levels: 0, ..p.clone() }.validate().unwrap_err().field, "levels");
        assert_eq!(SfbParams { bins: 0, ..p.clone() }.validate().unwrap_err().field, "bins");
        assert_eq!(SfbParams { bin_size: Some(0.0), ..p.clone() }.validate().unwrap_err().field, "bin_size");
        assert_eq!(SfbParams { increment: 2.0, ..p.clone() }.validate().unwrap_err().field, "increment");
        assert_eq!(SfbParams { warmup: 1.0, ..p.clone() }.validate().unwrap_err().field, "warmup");
        assert!(SfbParams { rehash: 10.0, warmup: 1.0, ..p.clone() }.validate().is_ok());
        // bin_size defaults to the buffer's share of a level's bin
        let q = sfb(&p, 230);
        assert_eq!(q.bin_size, 10.0);
    }

    /// BLUE per bin: an arrival to a bin above `bin_size` raises its `p_m` (once per freeze
    /// time) and is dropped (`any`); an arrival to an empty bin lowers it.
    #[test]
    fn bin_above_size_raises_p_m_and_drops() {
        let p = SfbParams {
            levels: 1,
            bins: 1,
            bin_size: Some(3.0),
            increment: 0.25,
            decrement: 0.125,
            ..Default::default()
        };
        let mut q = sfb(&p, 100);
        let mut rng = Rng::stream(1, "sfb", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // 4 packets fill the single bin to 4 > 3 without a change (qlen <= 3 at each arrival)
        for _ in 0..4 {
            assert!(q.enqueue(P::new(1, 1000), &mut cx));
        }
        assert_eq!(q.bins[0].p_m, 0.0);
        // the fifth sees qlen 4 > 3: p_m += 0.25, dropped (forced)
        assert!(!q.enqueue(P::new(2, 1000), &mut cx));
        assert_eq!(cx.drops.last().unwrap().reason, DropReason::Forced);
        assert_eq!(q.bins[0].p_m, 0.25);
        // within the freeze time no further change
        cx.now = 5 * MS;
        assert!(!q.enqueue(P::new(2, 1000), &mut cx));
        assert_eq!(q.bins[0].p_m, 0.25);
        // drain; an arrival to the empty bin after the freeze time lowers p_m
        while q.dequeue(&mut cx).is_some() {}
        assert_eq!(q.bins[0].qlen, 0);
        cx.now = 20 * MS;
        q.enqueue(P::new(3, 1000), &mut cx);
        assert_eq!(q.bins[0].p_m, 0.125);
    }

    /// [SFB]'s central claim: a non-responsive flow drives all its bins to `p_m = 1` and is
    /// policed (penalty box or `p_min` near 1), while flows that hash elsewhere keep `p_min` near
    /// 0 and are hardly dropped. Here the responsive flows' demand (300 packets/s) just fits the
    /// link (320 packets/s); the non-responsive flow offers 2000 packets/s.
    #[test]
    fn penalty_box_catches_a_non_responsive_flow_and_leaves_others_alone() {
        let p = SfbParams { bin_size: Some(5.0), penalty_rate: 10.0, penalty_burst: 2.0, ..Default::default() };
        let mut q = sfb(&p, 100);
        let mut rng = Rng::stream(3, "sfb", 0);
        let mut drops = Vec::new();
        let (mut t, mut served) = (0u64, 0u64);
        let (mut udp_in, mut tcp_arrivals, mut tcp_drops, mut pm_one) = (0u64, 0u64, 0usize, 0u64);
        let from = 10 * NS_PER_SEC;
        for step in 0..100_000u64 {
            t += NS_PER_SEC / 2300;
            let mut cx = Cx { now: t, rng: &mut rng, drops: &mut drops };
            while served < t * 320 / NS_PER_SEC {
                q.dequeue(&mut cx);
                served += 1;
            }
            let flow = if step % 23 < 20 { 0 } else { 1 + (step % 20) as u32 };
            let before = cx.drops.len();
            let ok = q.enqueue(P::new(flow, 1000), &mut cx);
            if t > from {
                if flow == 0 {
                    udp_in += ok as u64;
                    pm_one += (q.last_p >= 1.0) as u64;
                } else {
                    tcp_arrivals += 1;
                    tcp_drops += cx.drops.len() - before;
                }
            }
        }
        let secs = (t - from) as f64 / 1e9;
        let udp_rate = udp_in as f64 / secs;
        // without SFB the UDP flow would take 2000/2300 of the link (278 packets/s)
        assert!(udp_rate < 40.0, "UDP admitted at {udp_rate} packets/s");
        assert!(pm_one > 0, "the UDP flow never reached the penalty box");
        assert!(q.p_min(0) > 0.9, "UDP p_min {}", q.p_min(0));
        assert!((tcp_drops as f64) < 0.02 * tcp_arrivals as f64, "{tcp_drops} of {tcp_arrivals} TCP arrivals dropped");
        // the other flows keep a low p_min (unless all their bins collide with flow 0's)
        let h0 = q.hash(0, 0);
        let mut free = 0;
        for f in 1..=20u32 {
            let h = q.hash(f, 0);
            if !(0..2).all(|l| q.bin(h, 0, l) == q.bin(h0, 0, l)) {
                free += 1;
                assert!(q.p_min(f) < 0.1, "flow {f}: p_min {}", q.p_min(f));
            }
        }
        assert!(free >= 18);
    }

    /// The penalty box is a token bucket of `penalty_rate` packets per second and `penalty_burst`
    /// depth; `penalty_rate = 0` drops every packet of a penalised flow.
    #[test]
    fn penalty_box_token_bucket() {
        let p = SfbParams { levels: 1, bins: 1, penalty_rate: 10.0, penalty_burst: 2.0, ..Default::default() };
        let mut q = sfb(&p, 1000);
        q.bins[0].p_m = 1.0;
        q.bins[0].last = 0;
        let mut rng = Rng::stream(1, "sfb", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        q.salt = Some([1, 2]);
        let admitted: Vec<bool> = (0..4).map(|_| q.enqueue(P::new(1, 1000), &mut cx)).collect();
        assert_eq!(admitted, [true, true, false, false]);
        // 0.25 s later: 2.5 tokens, capped at the burst of 2
        cx.now = 250 * MS;
        let admitted: Vec<bool> = (0..3).map(|_| q.enqueue(P::new(1, 1000), &mut cx)).collect();
        assert_eq!(admitted, [true, true, false]);
        let p0 = SfbParams { penalty_rate: 0.0, ..p };
        let mut q = sfb(&p0, 1000);
        q.salt = Some([1, 2]);
        q.bins[0].p_m = 1.0;
        q.bins[0].last = 0;
        assert!(!q.enqueue(P::new(1, 1000), &mut cx));
    }

    /// `bin_drop = all` spares a flow one of whose bins is full; `any` does not.
    #[test]
    fn bin_drop_any_versus_all() {
        for (rule, want) in [(BinDrop::Any, false), (BinDrop::All, true)] {
            let p = SfbParams { levels: 2, bins: 4, bin_size: Some(2.0), bin_drop: rule, ..Default::default() };
            let mut q = sfb(&p, 100);
            q.salt = Some([7, 8]);
            // find two flows that share level 0's bin but not level 1's
            let (a, b) = (0..1000u32)
                .flat_map(|a| (a + 1..1000).map(move |b| (a, b)))
                .find(|&(a, b)| {
                    let (ha, hb) = (q.hash(a, 0), q.hash(b, 0));
                    q.bin(ha, 0, 0) == q.bin(hb, 0, 0) && q.bin(ha, 0, 1) != q.bin(hb, 0, 1)
                })
                .unwrap();
            let mut rng = Rng::stream(1, "sfb", 0);
            let mut drops = Vec::new();
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            for _ in 0..3 {
                q.enqueue(P::new(a, 1000), &mut cx);
            }
            assert_eq!(q.enqueue(P::new(b, 1000), &mut cx), want, "{rule:?}");
        }
    }

    /// Moving hash functions: after `rehash` the bins in use change (new salt for the set left
    /// behind), queued packets still decrement the bins they were counted in, and the counts of
    /// both sets return to zero when the queue drains.
    #[test]
    fn rehash_swaps_sets_and_keeps_counts_consistent() {
        let p = SfbParams { rehash: 1.0, warmup: 0.5, ..Default::default() };
        let mut q = sfb(&p, 100);
        let mut rng = Rng::stream(2, "sfb", 0);
        let mut drops = Vec::new();
        let mut t = 0;
        for step in 0..5000u64 {
            t += MS;
            let mut cx = Cx { now: t, rng: &mut rng, drops: &mut drops };
            q.enqueue(P::new((step % 7) as u32, 1000), &mut cx);
            if step % 3 != 0 {
                q.dequeue(&mut cx);
            }
            let per = q.levels * q.n as usize;
            for set in 0..2 {
                let sum: u64 = q.bins[set * per..(set + 1) * per].iter().map(|b| b.qlen).sum();
                let counted = q.q.iter().filter(|e| e.2[set] != 0).count() as u64;
                assert_eq!(sum, counted * q.levels as u64, "set {set} at step {step}");
            }
        }
        assert_eq!(q.active, 1, "five swaps in 5 s");
        let mut cx = Cx { now: t, rng: &mut rng, drops: &mut drops };
        while q.dequeue(&mut cx).is_some() {}
        assert!(q.bins.iter().all(|b| b.qlen == 0));
    }

    #[test]
    fn state_bytes_counts_the_bins() {
        let q = sfb(&SfbParams::default(), 100);
        assert_eq!(q.state_bytes(), (std::mem::size_of::<Sfb<P>>() + 46 * 24) as u64);
        let q2 = sfb(&SfbParams { rehash: 1.0, ..Default::default() }, 100);
        assert_eq!(q2.state_bytes(), (std::mem::size_of::<Sfb<P>>() + 92 * 24) as u64);
    }
}
