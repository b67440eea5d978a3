//! RED's shared maths, written once (aqm.md §1.4 and §3): the EWMA average with idle-time
//! correction, the base drop probability, and the uniformised random test. RED uses it directly;
//! the CHOKe family embeds it as its "RED stage".
//!
//! Reference: S. Floyd, V. Jacobson, "Random Early Detection Gateways for Congestion Avoidance",
//! IEEE/ACM ToN 1(4), 1993 (FJ93), with the "gentle" extension (Floyd 2000) and the ns-2.35
//! `Queue/RED` behaviour as the `ns2` variant (aqm.md §3, A5).

use crate::rng::Rng;
use crate::{DropReason, Time};

/// RED's EWMA of the queue length with idle-time correction (aqm.md §1.4).
#[derive(Debug, Clone)]
pub struct Estimator {
    w_q: f64,
    /// Transmission time of a typical packet, `s = 8 * mean_pkt_size / C`, in ns.
    s_ns: f64,
    /// Truncate the idle count `m` to an integer (ns-2, A5).
    integer_m: bool,
    avg: f64,
    idle: bool,
    idle_since: Time,
}

impl Estimator {
    pub fn new(w_q: f64, s_ns: f64, integer_m: bool) -> Self {
        Estimator { w_q, s_ns, integer_m, avg: 0.0, idle: true, idle_since: 0 }
    }

    /// `ESTIMATE(now, q)`: `q` is the queue length seen by the arrival, before it is enqueued.
    #[inline]
    pub fn update(&mut self, now: Time, q: f64) -> f64 {
        self.age(now);
        self.avg = (1.0 - self.w_q) * self.avg + self.w_q * q;
        self.avg
    }

    /// The idle-time half of `ESTIMATE` alone: if an idle period is open, close it and age the
    /// average, `avg = (1 - w_q)^m * avg` with `m = (now - idle_since) / s`; otherwise leave it
    /// unchanged. FRED's refresh at an arrival to an empty queue is exactly this (aqm.md §14,
    /// `AVG_UPDATE` with `Q = 0`, not departing).
    #[inline]
    pub fn age(&mut self, now: Time) -> f64 {
        if self.idle {
            let mut m = now.saturating_sub(self.idle_since) as f64 / self.s_ns;
            if self.integer_m {
                m = m.floor();
            }
            self.avg *= libm::pow(1.0 - self.w_q, m);
            self.idle = false;
        }
        self.avg
    }

    /// Start an idle period at `now` (the transmitter finished and the queue is empty).
    #[inline]
    pub fn set_idle(&mut self, now: Time) {
        if !self.idle {
            self.idle = true;
            self.idle_since = now;
        }
    }

    /// Start an idle period at `now` even if one is already open: `idle_since` becomes `now`.
    /// For an average that is not refreshed at every arrival (RIO's `avg_in`, aqm.md §4, A7) an
    /// idle period can still be open when the link goes idle again; the idle clock is common to
    /// both RIO averages and restarts at every link-idle event (§1.4: `idle_since = now`).
    #[inline]
    pub fn restart_idle(&mut self, now: Time) {
        self.idle = true;
        self.idle_since = now;
    }

    pub fn avg(&self) -> f64 {
        self.avg
    }
}

/// Where the average lies relative to the thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Region {
    /// `avg < min_th`: no drop.
    None,
    /// Probabilistic region with base probability `p_b`.
    Prob(f64),
    /// Above the hard threshold: drop every arrival.
    Hard,
}

/// RED thresholds and slope.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub min_th: f64,
    pub max_th: f64,
    pub max_p: f64,
    pub gentle: bool,
}

/// `P_BASE(avg)` of aqm.md §3.
#[inline]
pub fn p_base(avg: f64, t: &Thresholds) -> Region {
    if avg < t.min_th {
        Region::None
    } else if avg < t.max_th {
        Region::Prob(t.max_p * (avg - t.min_th) / (t.max_th - t.min_th))
    } else if t.gentle && avg < 2.0 * t.max_th {
        Region::Prob(t.max_p + (1.0 - t.max_p) * (avg - t.max_th) / t.max_th)
    } else {
        Region::Hard
    }
}

/// The checks every RED parameter set shares: `0 <= min_th < max_th`, `max_p` and `w_q` in (0, 1].
pub fn check_red(min_th: f64, max_th: f64, max_p: f64, w_q: f64) -> Result<(), crate::ParamError> {
    use crate::ParamError;
    if !(min_th.is_finite() && min_th >= 0.0) {
        return Err(ParamError::new("min_th", format!("must be a number >= 0, got {min_th}")));
    }
    if !(max_th.is_finite() && max_th > min_th) {
        return Err(ParamError::new("max_th", format!("must be greater than min_th ({min_th}), got {max_th}")));
    }
    if !(max_p > 0.0 && max_p <= 1.0) {
        return Err(ParamError::new("max_p", format!("must be in (0, 1], got {max_p}")));
    }
    if !(w_q > 0.0 && w_q <= 1.0) {
        return Err(ParamError::new("w_q", format!("must be in (0, 1], got {w_q}")));
    }
    Ok(())
}

/// RED variant (A5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Floyd & Jacobson 1993 as written in aqm.md §3 (default).
    Fj93,
    /// ns-2.35 `Queue/RED`: "wait" rule, first packet in the region untested, drops only when
    /// the queue holds more than one packet, integer idle count, HARD drops recorded as early.
    Ns2,
}

/// The random-test half of RED (steps 3-6 of aqm.md §3): the uniformisation counter and the
/// decision. Kept apart from the estimator because RIO runs two of them over different averages.
#[derive(Debug, Clone)]
pub struct DropTest {
    pub variant: Variant,
    pub uniformise: bool,
    /// Byte mode: scale `p_b` by `size / max_pkt_size`.
    pub byte_mode: bool,
    pub max_pkt_size: f64,
    count: i64,
    /// ns-2's `count_bytes`: bytes arrived since the last drop (ns2 variant in byte mode).
    count_bytes: u64,
    /// ns-2's `old_`: the previous arrival was already in the drop region.
    ns2_in_region: bool,
    /// Last probability applied (`p_a`), exposed as controller state.
    last_p: f64,
}

impl DropTest {
    pub fn new(variant: Variant, uniformise: bool, byte_mode: bool, max_pkt_size: f64) -> Self {
        DropTest {
            variant,
            uniformise,
            byte_mode,
            max_pkt_size,
            count: -1,
            count_bytes: 0,
            ns2_in_region: false,
            last_p: 0.0,
        }
    }

    /// The uniformisation counter (`count`, init -1).
    pub fn count(&self) -> i64 {
        self.count
    }

    /// Reset the uniformisation counter to 0 (as after a drop).
    pub fn reset_count(&mut self) {
        self.count = 0;
    }

    /// An arrival in the probabilistic region that is *not* tested: `count` advances as if it
    /// had been tested and survived (`fj93` semantics), and no random number is drawn. FRED
    /// advances `count` for every arrival in the region but tests only robust flows (aqm.md §14
    /// step 5).
    pub fn count_untested(&mut self) {
        self.count += 1;
        self.last_p = 0.0;
    }

    /// The probability applied to the last tested arrival.
    pub fn last_p(&self) -> f64 {
        self.last_p
    }

    /// Steps 3-6: decide whether an arrival of `size` bytes is dropped, given the region of the
    /// average. `qlen_pkts` is the instantaneous number of waiting packets (used by the ns-2 variant).
    #[inline]
    pub fn decide(&mut self, region: Region, size: u32, qlen_pkts: usize, rng: &mut Rng) -> Option<DropReason> {
        match self.variant {
            Variant::Fj93 => self.decide_fj93(region, size, rng),
            Variant::Ns2 => self.decide_ns2(region, size, qlen_pkts, rng),
        }
    }

    #[inline]
    fn scaled(&self, p_b: f64, size: u32) -> f64 {
        if self.byte_mode {
            p_b * size as f64 / self.max_pkt_size
        } else {
            p_b
        }
    }

    fn decide_fj93(&mut self, region: Region, size: u32, rng: &mut Rng) -> Option<DropReason> {
        match region {
            Region::None => {
                self.count = -1;
                self.last_p = 0.0;
                None
            }
            Region::Hard => {
                self.count = 0;
                self.last_p = 1.0;
                Some(DropReason::Forced)
            }
            Region::Prob(p_b) => {
                self.count += 1;
                let p_b = self.scaled(p_b, size);
                let p_a = if !self.uniformise {
                    p_b
                } else if (self.count as f64) * p_b < 1.0 {
                    p_b / (1.0 - self.count as f64 * p_b)
                } else {
                    1.0
                };
                self.last_p = p_a.min(1.0);
                if rng.uniform() < p_a {
                    self.count = 0;
                    Some(DropReason::Early)
                } else {
                    None
                }
            }
        }
    }

    /// ns-2's `Queue/RED` (`enque`, `drop_early`, `modify_p` with `wait_ = true`). In byte mode
    /// (ns-2's `bytes_`) the count is `count_bytes / mean_pktsize` in whole packets of
    /// `max_pkt_size` bytes and the probability is scaled by `size / max_pkt_size` *after* the
    /// wait rule, as `modify_p` does.
    fn decide_ns2(&mut self, region: Region, size: u32, qlen_pkts: usize, rng: &mut Rng) -> Option<DropReason> {
        if region == Region::None || qlen_pkts <= 1 {
            self.ns2_in_region = false;
            self.count = 0;
            self.count_bytes = 0;
            self.last_p = 0.0;
            return None;
        }
        match region {
            Region::Hard => {
                // use_mark_p = true: recorded as an early (unforced) drop (aqm.md §3 (v)).
                self.count = 0;
                self.count_bytes = 0;
                self.last_p = 1.0;
                Some(DropReason::Early)
            }
            Region::Prob(p_b) => {
                if !self.ns2_in_region {
                    // first packet into the region: count = 1, not tested (ii)
                    self.ns2_in_region = true;
                    self.count = 1;
                    self.count_bytes = size as u64;
                    self.last_p = 0.0;
                    return None;
                }
                self.count += 1;
                self.count_bytes += size as u64;
                let count = if self.byte_mode {
                    (self.count_bytes / (self.max_pkt_size as u64).max(1)) as f64
                } else {
                    self.count as f64
                };
                let cp = count * p_b;
                let mut p_a = if !self.uniformise {
                    p_b
                } else if cp < 1.0 {
                    0.0
                } else if cp < 2.0 {
                    p_b / (2.0 - cp)
                } else {
                    1.0
                };
                if self.byte_mode && p_a < 1.0 {
                    p_a *= size as f64 / self.max_pkt_size;
                }
                self.last_p = p_a.min(1.0);
                if rng.uniform() < p_a {
                    self.count = 0;
                    self.count_bytes = 0;
                    Some(DropReason::Early)
                } else {
                    None
                }
            }
            Region::None => unreachable!(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn th(gentle: bool) -> Thresholds {
        Thresholds { min_th: 40.0, max_th: 80.0, max_p: 0.1, gentle }
    }

    #[test]
    fn base_probability_follows_the_spec_formula() {
        let t = th(false);
        assert_eq!(p_base(0.0, &t), Region::None);
        assert_eq!(p_base(39.999, &t), Region::None);
        assert_eq!(p_base(40.0, &t), Region::Prob(0.0));
        assert_eq!(p_base(60.0, &t), Region::Prob(0.05));
        assert_eq!(p_base(79.0, &t), Region::Prob(0.1 * 39.0 / 40.0));
        assert_eq!(p_base(80.0, &t), Region::Hard);
        let g = th(true);
        assert_eq!(p_base(80.0, &g), Region::Prob(0.1));
        assert_eq!(p_base(120.0, &g), Region::Prob(0.1 + 0.9 * 0.5));
        assert_eq!(p_base(159.9, &g), Region::Prob(0.1 + 0.9 * 79.9 / 80.0));
        assert_eq!(p_base(160.0, &g), Region::Hard);
    }

    #[test]
    fn estimator_ewma_and_idle_decay() {
        // s = 1 ms per packet
        let mut e = Estimator::new(0.5, 1e6, false);
        // first arrival at t=0 after an idle period of 0: one plain update
        assert_eq!(e.update(0, 4.0), 2.0);
        assert_eq!(e.update(1, 4.0), 3.0);
        // idle for 2.5 packet times: decay (1-w)^2.5 then one update with q = 0
        e.set_idle(1_000_000);
        let avg = e.update(3_500_000, 0.0);
        assert!((avg - 3.0 * 0.5f64.powf(2.5) * 0.5).abs() < 1e-12);
        // ns-2 integer m
        let mut e = Estimator::new(0.5, 1e6, true);
        e.update(0, 4.0);
        e.set_idle(0);
        let avg = e.update(2_500_000, 0.0);
        assert!((avg - 2.0 * 0.25 * 0.5).abs() < 1e-12);
    }

    #[test]
    fn fj93_gap_between_early_drops_is_uniform() {
        // With constant p_b and uniformisation, the gap between drops is uniform on 1..1/p_b - 1
        // (aqm.md §3, "Effective early-drop rate"), so the drop fraction is 2 p_b.
        let mut rng = Rng::stream(3, "red", 0);
        let mut t = DropTest::new(Variant::Fj93, true, false, 1000.0);
        let p_b = 0.02;
        let n = 400_000;
        let mut drops = 0;
        for _ in 0..n {
            if t.decide(Region::Prob(p_b), 1000, 10, &mut rng).is_some() {
                drops += 1;
            }
        }
        let frac = drops as f64 / n as f64;
        assert!((frac - 2.0 * p_b).abs() < 0.002, "fraction {frac}");
        // ns-2 "wait" rule: fraction 2 p_b / (3 - p_b)
        let mut t = DropTest::new(Variant::Ns2, true, false, 1000.0);
        let mut drops = 0;
        for _ in 0..n {
            if t.decide(Region::Prob(p_b), 1000, 10, &mut rng).is_some() {
                drops += 1;
            }
        }
        let frac = drops as f64 / n as f64;
        let want = 2.0 * p_b / (3.0 - p_b);
        assert!((frac - want).abs() < 0.001, "fraction {frac} want {want}");
    }

    #[test]
    fn without_uniformisation_drops_are_independent_with_p_b() {
        let mut rng = Rng::stream(4, "red", 0);
        let mut t = DropTest::new(Variant::Fj93, false, false, 1000.0);
        let n = 400_000;
        let drops = (0..n).filter(|_| t.decide(Region::Prob(0.05), 1000, 10, &mut rng).is_some()).count();
        assert!((drops as f64 / n as f64 - 0.05).abs() < 0.002);
    }

    #[test]
    fn byte_mode_scales_probability_by_size() {
        let mut rng = Rng::stream(5, "red", 0);
        let mut t = DropTest::new(Variant::Fj93, false, true, 1000.0);
        let n = 400_000;
        let drops = (0..n).filter(|_| t.decide(Region::Prob(0.1), 500, 10, &mut rng).is_some()).count();
        assert!((drops as f64 / n as f64 - 0.05).abs() < 0.002);
    }

    #[test]
    fn hard_region_reasons() {
        let mut rng = Rng::stream(5, "red", 0);
        let mut t = DropTest::new(Variant::Fj93, true, false, 1000.0);
        assert_eq!(t.decide(Region::Hard, 1000, 10, &mut rng), Some(DropReason::Forced));
        let mut t = DropTest::new(Variant::Ns2, true, false, 1000.0);
        assert_eq!(t.decide(Region::Hard, 1000, 10, &mut rng), Some(DropReason::Early));
        // ns-2: no drop when the queue holds at most one packet
        assert_eq!(t.decide(Region::Hard, 1000, 1, &mut rng), None);
    }

    #[test]
    fn ns2_byte_mode_counts_bytes_and_scales_after_the_wait_rule() {
        // ns-2 with bytes_ = true and mean_pktsize_ = 500: 1000-byte packets count two each, so
        // with p_b = 0.1 the gap between drops is 5..=10 packets (packet mode: 10..=20), and the
        // probability is doubled after the wait rule (size / mean_pktsize)
        let mut rng = Rng::stream(7, "t", 0);
        let mut t = DropTest::new(Variant::Ns2, true, true, 500.0);
        assert!(t.decide(Region::Prob(0.1), 1000, 10, &mut rng).is_none()); // first: untested
        let (mut gap, mut gaps) = (0, Vec::new());
        for _ in 0..20_000 {
            gap += 1;
            if t.decide(Region::Prob(0.1), 1000, 10, &mut rng).is_some() {
                gaps.push(gap);
                gap = 0;
            }
        }
        assert!(gaps.len() > 1000);
        // after the first drop, count restarts at 0: 5 arrivals (10 packets' worth of bytes) reach cp = 1
        assert!(gaps[1..].iter().all(|&g| (5..=10).contains(&g)), "{:?}", &gaps[..20]);
        let mean = gaps[1..].iter().sum::<usize>() as f64 / (gaps.len() - 1) as f64;
        assert!(mean < 8.0, "mean gap {mean}");
    }
}
