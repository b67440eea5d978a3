//! RAQM — rate-based AQM (aqm.md §11, ambiguity A28).
//!
//! Reference: [RAQM] C. Wang, B. Li, Y. T. Hou, K. Sohraby, W. Tang, "Design and Analysis of a
//! Rate-based Algorithm for Active Queue Management", §2, Eq. 1–3 and 11–13. The stability analysis
//! behind the adaptive gain is in models.md §4.
//!
//! Every period `T` (a timer independent of arrivals, A28 (g)) the offered input rate is measured
//! and filtered, `r_k = (1 − f') l / T + f' r_{k−1}` (Eq. 2 with the `(1 − f')` correction, A28 (a)),
//! and the drop probability is multiplied by `exp(α (r_k − r0))` (Eq. 3), clamped to
//! `[p_floor, 1]` (A28 (e)). The gain α is static (`m / r0`) or adaptive, `α = ε α̂(r_k)` with the
//! stability bound α̂ of Eq. 11–13. In queue-dependent mode an arrival that sees `Q` waiting
//! packets is dropped with probability `min(1, p_k Q / q0)` (Eq. 12), otherwise with `p_k`.
//!
//! Eq. 3's `p_{k−1}` has two readings in queue-dependent mode (option `p_prev`). As printed, it is
//! the previous period's `p_k` (`"base"`, the default): the queue scales only what arrivals see, so
//! the loop pins the offered rate at `r0` and the queue settles wherever that leaves it. Read as
//! the probability last applied to an arrival, `min(1, p_{k−1} Q / q0)` (`"applied"`), the update
//! becomes `ln p_k = ln p_{k−1} + ln(Q / q0) + α (r_k − r0)`: an integrator of `ln(Q / q0)`, whose
//! steady state has `Q = q0 e^{−α (r − r0)}`, close to `q0` when the offered rate is close to `r0`.
//! In queue-independent mode the two readings coincide.
//!
//! Units: bytes and bytes per second for `l`, `r_k` and `r0`; α in seconds per byte.

use crate::control::{check_period, check_positive, check_range, early_signal, period_ns};
use crate::fifo::Fifo;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// RAQM parameters as written in a scenario (`aqm = { type = "raqm", ... }`). Defaults are the
/// [RAQM] values (aqm.md §11.1, §18), with ε = 0.9 (A28 (d)).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RaqmParams {
    /// Mark ECN-capable packets (Congestion Experienced) instead of dropping them early (RFC 3168).
    #[serde(default)]
    pub ecn: bool,
    /// Measurement period `T`, in seconds.
    #[serde(with = "crate::units::secs", default = "crate::defaults::raqm::t", rename = "T")]
    pub t: f64,
    /// Weight `f'` of the previous rate estimate (`f' = e^{−T/f}`), in [0, 1).
    #[serde(default = "crate::defaults::raqm::f_prime")]
    pub f_prime: f64,
    /// Target input rate in bytes per second; absent = the link capacity `C / 8` (γ = 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r0: Option<f64>,
    /// `queue_dependent` (Eq. 12, default) or `queue_independent`.
    #[serde(default)]
    pub mode: RaqmMode,
    /// Target queue length of queue-dependent mode (packets).
    #[serde(default = "crate::defaults::raqm::q0")]
    pub q0: f64,
    /// `adaptive` (α = ε α̂, Eq. 11–13, default) or `static` (α = m_static / r0).
    #[serde(default)]
    pub alpha_mode: AlphaMode,
    /// Initial and fallback α (s/byte); absent = `2 / r0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha_init: Option<f64>,
    /// Adaptive factor ε, in (0, 1).
    #[serde(default = "crate::defaults::raqm::epsilon")]
    pub epsilon: f64,
    /// Static factor m, in (0, 4).
    #[serde(default = "crate::defaults::raqm::m_static")]
    pub m_static: f64,
    /// Cap on c(x) of Eq. 13 (a safety bound, not in the paper).
    #[serde(default = "crate::defaults::raqm::c_max")]
    pub c_max: f64,
    /// Initial drop probability `p_0`.
    #[serde(default = "crate::defaults::raqm::p_init")]
    pub p_init: f64,
    /// Lower clamp of `p_k` (not in the paper, A28 (e)).
    #[serde(default = "crate::defaults::raqm::p_floor")]
    pub p_floor: f64,
    /// Compute α from the previous period's rate `r_{k−1}` (α_init in the first period) instead of
    /// the current `r_k` (A28 (c)).
    #[serde(default)]
    pub raqm_alpha_lag: bool,
    /// Which probability Eq. 3 multiplies: its `p_{k−1}` read as the previous `p_k` (`base`,
    /// default) or as the queue-scaled probability of Eq. 12 last applied (`applied`).
    #[serde(default)]
    pub p_prev: PPrev,
}

/// The reading of `p_{k−1}` in Eq. 3 (`p_k = e^{α (r_k − r0)} p_{k−1}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PPrev {
    /// The previous period's queue-independent probability `p_{k−1}` (Eq. 3 as printed).
    #[default]
    Base,
    /// The probability Eq. 12 gave the last arrival of the period, `min(1, p_{k−1} Q / q0)`
    /// (Eq. 12 at the queue of the update instant when the period had no arrival). Equal to
    /// `p_{k−1}` in queue-independent mode.
    Applied,
}

/// How the drop probability applied to arrivals depends on the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RaqmMode {
    /// `p = p_k`.
    QueueIndependent,
    /// `p = min(1, p_k Q / q0)` (Eq. 12).
    #[default]
    QueueDependent,
}

/// How α is chosen each period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlphaMode {
    /// α = ε · min(c(x), c_max) / r0 with x = r / r0 (Eq. 11–13).
    #[default]
    Adaptive,
    /// α = m_static / r0.
    Static,
}

impl Default for RaqmParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for RaqmParams {
    fn validate(&self) -> Result<(), ParamError> {
        check_period("T", self.t)?;
        if !(self.f_prime >= 0.0 && self.f_prime < 1.0) {
            return Err(ParamError::new("f_prime", format!("must be in [0, 1), got {}", self.f_prime)));
        }
        if let Some(r0) = self.r0 {
            check_positive("r0", r0)?;
        }
        check_positive("q0", self.q0)?;
        if let Some(a) = self.alpha_init {
            check_positive("alpha_init", a)?;
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return Err(ParamError::new(
                "epsilon",
                format!("must be in (0, 1) (\"smaller than but close to 1\"), got {}", self.epsilon),
            ));
        }
        if !(self.m_static > 0.0 && self.m_static < 4.0) {
            return Err(ParamError::new("m_static", format!("must be in (0, 4), got {}", self.m_static)));
        }
        check_positive("c_max", self.c_max)?;
        check_range("p_init", self.p_init, 0.0, 1.0)?;
        if !(self.p_floor > 0.0 && self.p_floor <= 1.0) {
            return Err(ParamError::new("p_floor", format!("must be in (0, 1], got {}", self.p_floor)));
        }
        Ok(())
    }
}

/// `c(x)` of Eq. 13 for `x = r / r0` in (0, 2): `2 ln((2 − x)/x) / (1 − x)`, with its limit 4 at
/// `x = 1` (`c(x) >= 4`). `None` outside (0, 2), where α̂ of Eq. 11 is undefined.
pub fn c_of_x(x: f64) -> Option<f64> {
    if !(x > 0.0 && x < 2.0) {
        return None;
    }
    if (x - 1.0).abs() < 1e-9 {
        Some(4.0)
    } else {
        Some(2.0 * libm::log((2.0 - x) / x) / (1.0 - x))
    }
}

/// RAQM over a FIFO.
pub struct Raqm<P> {
    ecn: bool,
    fifo: Fifo<P>,
    limit: Limit,
    period: Time,
    t_secs: f64,
    f_prime: f64,
    r0: f64,
    queue_dependent: bool,
    q0: f64,
    adaptive: bool,
    alpha_init: f64,
    epsilon: f64,
    m_static: f64,
    c_max: f64,
    p_floor: f64,
    alpha_lag: bool,
    /// Eq. 3 multiplies the last applied probability (`p_prev = "applied"`).
    prev_applied: bool,
    /// Drop probability `p_k`.
    p_k: f64,
    /// The probability Eq. 12 gave the last arrival.
    p_last: f64,
    /// The last rate estimate `r_{k}` (0 before the first period, A28 (f)).
    r_prev: f64,
    /// The gain used in the last update.
    alpha: f64,
    /// Bytes offered in the current period (dropped arrivals included, A28 (b)).
    l: u64,
    /// Periods processed.
    k: u64,
}

impl<P: Pkt> Raqm<P> {
    pub fn new(params: &RaqmParams, link: LinkInfo, limit: Limit) -> Self {
        let r0 = params.r0.unwrap_or(link.rate_bps / 8.0);
        let alpha_init = params.alpha_init.unwrap_or(2.0 / r0);
        Raqm {
            ecn: params.ecn,
            fifo: Fifo::default(),
            limit,
            period: period_ns(params.t),
            t_secs: params.t,
            f_prime: params.f_prime,
            r0,
            queue_dependent: params.mode == RaqmMode::QueueDependent,
            q0: params.q0,
            adaptive: params.alpha_mode == AlphaMode::Adaptive,
            alpha_init,
            epsilon: params.epsilon,
            m_static: params.m_static,
            c_max: params.c_max,
            p_floor: params.p_floor,
            alpha_lag: params.raqm_alpha_lag,
            prev_applied: params.p_prev == PPrev::Applied,
            p_k: params.p_init,
            p_last: params.p_init,
            r_prev: 0.0,
            alpha: alpha_init,
            l: 0,
            k: 0,
        }
    }

    /// The drop probability `p_k`.
    pub fn p_k(&self) -> f64 {
        self.p_k
    }
    /// The last rate estimate `r_k` (bytes/s).
    pub fn r_k(&self) -> f64 {
        self.r_prev
    }
    /// The gain α used in the last update (s/byte); `alpha_init` before the first.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    /// The target rate `r0` (bytes/s).
    pub fn r0(&self) -> f64 {
        self.r0
    }
    /// The probability Eq. 12 gave the last arrival (`p_init` before the first).
    pub fn p_last(&self) -> f64 {
        self.p_last
    }

    /// The probability applied to an arrival that sees `q` waiting packets (step 2).
    #[inline]
    pub fn p_arrival(&self, q: usize) -> f64 {
        if self.queue_dependent {
            (self.p_k * q as f64 / self.q0).clamp(0.0, 1.0)
        } else {
            self.p_k
        }
    }

    /// α for a period whose rate estimate is `r` (timer step 2).
    fn alpha_for(&self, r: f64) -> f64 {
        if !self.adaptive {
            return self.m_static / self.r0;
        }
        match c_of_x(r / self.r0) {
            Some(c) => self.epsilon * c.min(self.c_max) / self.r0,
            None => self.alpha_init,
        }
    }

    /// One measurement period ending now, with `l` bytes offered during it.
    fn end_period(&mut self) {
        // 1. Eq. 2 (with 1 − f')
        let r_k = (1.0 - self.f_prime) * self.l as f64 / self.t_secs + self.f_prime * self.r_prev;
        // 2. α from r_k, or from r_{k−1} with the lag option (α_init in the first period)
        self.alpha = if self.alpha_lag {
            if self.k == 0 {
                if self.adaptive {
                    self.alpha_init
                } else {
                    self.m_static / self.r0
                }
            } else {
                self.alpha_for(self.r_prev)
            }
        } else {
            self.alpha_for(r_k)
        };
        // 3. Eq. 3 on p_{k−1} = p_k (base) or the last applied probability, clamped to [p_floor, 1]
        let prev = if !self.prev_applied {
            self.p_k
        } else if self.l > 0 {
            self.p_last
        } else {
            self.p_arrival(self.fifo.len()) // no arrival this period: Eq. 12 now
        };
        let p = libm::exp(self.alpha * (r_k - self.r0)) * prev;
        self.p_k = if p.is_nan() { 1.0 } else { p.clamp(self.p_floor, 1.0) };
        // 4.
        self.r_prev = r_k;
        self.l = 0;
        self.k += 1;
    }
}

impl<P: Pkt> Scheme<P> for Raqm<P> {
    type Params = RaqmParams;
    fn new(params: &RaqmParams, link: LinkInfo, limit: Limit) -> Self {
        Raqm::new(params, link, limit)
    }
}

crate::hint::hint_from!(Raqm, fifo.get);

impl<P: Pkt> Qdisc<P> for Raqm<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // 1. every arriving byte counts, even if dropped below (A28 (b))
        self.l += pkt.size() as u64;
        // 2-3. Eq. 12 with Q before enqueue (packets)
        let p = self.p_arrival(self.fifo.len());
        self.p_last = p;
        let Some(pkt) = early_signal(p, pkt, self.ecn, cx) else { return false };
        // 4.
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        // 5.
        self.fifo.push(pkt, cx.now);
        true
    }

    crate::fifo::fifo_views!(fifo, pop);
    fn timer_period(&self) -> Option<Time> {
        Some(self.period)
    }
    /// Every `T`, whether or not packets arrived (empty periods have `l = 0`, A28 (g)).
    fn on_timer(&mut self, _cx: &mut Cx<'_, P>) {
        self.end_period();
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["r_k", "p_k", "alpha"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.r_prev;
        out[1] = self.p_k;
        out[2] = self.alpha;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::{tick, P};

    /// 8 kb/s: r0 = 1000 bytes/s.
    fn link() -> LinkInfo {
        LinkInfo { rate_bps: 8000.0 }
    }

    /// Offer `bytes` in 500-byte packets, each served at once: every arrival sees `Q = 0`, so in
    /// queue-dependent mode none is dropped and no random number is used.
    fn offer_bytes(q: &mut Raqm<P>, bytes: u32, rng: &mut Rng) {
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng, drops: &mut drops };
        for _ in 0..bytes / 500 {
            q.enqueue(P::new(1, 500), &mut cx);
            q.dequeue(&mut cx);
        }
    }

    #[test]
    fn defaults_and_validation() {
        let p = RaqmParams::default();
        assert_eq!(
            (p.t, p.f_prime, p.q0, p.epsilon, p.m_static, p.c_max, p.p_init, p.p_floor),
            (1.0, 0.1, 50.0, 0.9, 2.0, 20.0, 0.0002, 1e-6)
        );
        assert_eq!(
            (p.mode, p.alpha_mode, p.r0, p.alpha_init, p.raqm_alpha_lag, p.p_prev),
            (RaqmMode::QueueDependent, AlphaMode::Adaptive, None, None, false, PPrev::Base)
        );
        assert!(p.validate().is_ok());
        // r0 = C (bytes/s), alpha_init = 2 / r0, first timer at T
        let q: Raqm<P> = Raqm::new(&p, LinkInfo { rate_bps: 10e6 }, Limit::packets(100));
        assert_eq!(q.r0(), 1.25e6);
        assert_eq!(q.alpha(), 2.0 / 1.25e6);
        assert_eq!(q.timer_period(), Some(1_000_000_000));
        assert_eq!(q.p_k(), 0.0002);
        for (bad, field) in [
            (RaqmParams { t: 0.0, ..p.clone() }, "T"),
            (RaqmParams { f_prime: 1.0, ..p.clone() }, "f_prime"),
            (RaqmParams { r0: Some(0.0), ..p.clone() }, "r0"),
            (RaqmParams { q0: 0.0, ..p.clone() }, "q0"),
            (RaqmParams { alpha_init: Some(-1.0), ..p.clone() }, "alpha_init"),
            (RaqmParams { epsilon: 1.0, ..p.clone() }, "epsilon"),
            (RaqmParams { m_static: 4.0, ..p.clone() }, "m_static"),
            (RaqmParams { c_max: 0.0, ..p.clone() }, "c_max"),
            (RaqmParams { p_init: 1.5, ..p.clone() }, "p_init"),
            (RaqmParams { p_floor: 0.0, ..p.clone() }, "p_floor"),
        ] {
            assert_eq!(bad.validate().unwrap_err().field, field);
        }
    }

    #[test]
    fn c_of_x_matches_eq_13() {
        assert_eq!(c_of_x(1.0), Some(4.0));
        assert_eq!(c_of_x(0.0), None);
        assert_eq!(c_of_x(2.0), None);
        assert_eq!(c_of_x(-0.5), None);
        let c = c_of_x(0.5).unwrap();
        assert!((c - 4.0 * 3f64.ln()).abs() < 1e-12); // 2 ln 3 / 0.5
                                                      // continuous at 1 and symmetric about it: c(1 + d) = c(1 - d)
        assert!((c_of_x(1.0 + 1e-6).unwrap() - 4.0).abs() < 1e-6);
        assert!((c_of_x(1.3).unwrap() - c_of_x(0.7).unwrap()).abs() < 1e-12);
        // c(x) >= 4
        for i in 1..200 {
            assert!(c_of_x(i as f64 / 100.0).unwrap() >= 4.0 - 1e-12);
        }
    }

    #[test]
    fn adaptive_update_step_by_step() {
        // r0 = 1000 B/s, T = 1 s, f' = 0.1, ε = 0.9, p_0 = 0.01
        let p = RaqmParams { p_init: 0.01, ..RaqmParams::default() };
        let mut q: Raqm<P> = Raqm::new(&p, link(), Limit::packets(100));
        let mut rng = Rng::stream(1, "raqm", 0);
        // period 1: 1500 bytes offered; r_1 = 0.9 * 1500 + 0.1 * 0 = 1350; x = 1.35
        offer_bytes(&mut q, 1500, &mut rng);
        tick(&mut q, &mut rng);
        let x: f64 = 1.35;
        let c = 2.0 * ((2.0 - x) / x).ln() / (1.0 - x);
        assert!((q.r_k() - 1350.0).abs() < 1e-9);
        assert!((q.alpha() - 0.9 * c / 1000.0).abs() < 1e-15);
        // closed form: p multiplied by (x / (2 − x))^{2ε}
        let want = 0.01 * (x / (2.0 - x)).powf(1.8);
        assert!((q.p_k() - want).abs() < 1e-15, "{} vs {want}", q.p_k());
        // period 2: empty (l = 0): r_2 = 0.1 * 1350 = 135, x = 0.135, p shrinks by (x/(2−x))^1.8
        let p1 = q.p_k();
        tick(&mut q, &mut rng);
        let x: f64 = 0.135;
        assert!((q.r_k() - 135.0).abs() < 1e-9);
        assert!((q.p_k() - p1 * (x / (2.0 - x)).powf(1.8)).abs() < 1e-15);
        // period 3: empty again: r_3 = 13.5; x = 0.0135: c = 2 ln(147.1...)/0.9865 < 20 (no cap)
        tick(&mut q, &mut rng);
        assert!((q.r_k() - 13.5).abs() < 1e-9);
        // many empty periods: r -> 0, the cap c_max and finally the floor take over
        for _ in 0..60 {
            tick(&mut q, &mut rng);
        }
        assert_eq!(q.p_k(), 1e-6, "clamped at p_floor");
        assert!(q.r_k() < 1e-50);
        // x outside (0, 2): at r = 0 exactly, α falls back to α_init
        q.r_prev = 0.0;
        tick(&mut q, &mut rng);
        assert_eq!(q.alpha(), 2.0 / 1000.0);
    }

    #[test]
    fn cap_fallback_and_upper_clamp() {
        let p = RaqmParams { f_prime: 0.0, p_init: 0.5, ..RaqmParams::default() };
        let mut q: Raqm<P> = Raqm::new(&p, link(), Limit::packets(100));
        let mut rng = Rng::stream(2, "raqm", 0);
        // r0 = 1000 B/s. At r = 0.01 (x = 1e-5) c = 2 ln(199999) / (1 − 1e-5) = 24.4 is capped at
        // c_max = 20; at r = 1 (x = 0.001) c = 2 ln(1999) / 0.999 = 15.2 is not
        assert!((q.alpha_for(0.01) - 0.9 * 20.0 / 1000.0).abs() < 1e-15);
        let c = c_of_x(0.001).unwrap();
        assert!(c < 20.0);
        assert!((q.alpha_for(1.0) - 0.9 * c / 1000.0).abs() < 1e-15);
        // x >= 2: fallback to α_init; p = 0.5 · exp(0.002 · (3000 − 1000)) > 1 → clamped at 1
        offer_bytes(&mut q, 3000, &mut rng);
        tick(&mut q, &mut rng);
        assert_eq!(q.r_k(), 3000.0);
        assert_eq!(q.alpha(), 0.002);
        assert_eq!(q.p_k(), 1.0);
    }

    #[test]
    fn static_alpha_and_lag_option() {
        // static: α = m / r0 = 2 / 1000 whatever the rate
        let p = RaqmParams { alpha_mode: AlphaMode::Static, p_init: 0.01, ..RaqmParams::default() };
        let mut q: Raqm<P> = Raqm::new(&p, link(), Limit::packets(100));
        let mut rng = Rng::stream(3, "raqm", 0);
        offer_bytes(&mut q, 1000, &mut rng);
        tick(&mut q, &mut rng);
        assert_eq!(q.alpha(), 0.002);
        // r_1 = 900: p = 0.01 exp(0.002 (900 − 1000))
        assert!((q.p_k() - 0.01 * (-0.2f64).exp()).abs() < 1e-15);

        // lag: period 1 uses α_init, period 2 uses α from r_1
        let p = RaqmParams { raqm_alpha_lag: true, p_init: 0.01, ..RaqmParams::default() };
        let mut q: Raqm<P> = Raqm::new(&p, link(), Limit::packets(100));
        offer_bytes(&mut q, 1500, &mut rng);
        tick(&mut q, &mut rng);
        assert_eq!(q.alpha(), 0.002);
        assert!((q.p_k() - 0.01 * (0.002f64 * 350.0).exp()).abs() < 1e-15);
        let p1 = q.p_k();
        offer_bytes(&mut q, 1000, &mut rng);
        tick(&mut q, &mut rng);
        // r_2 = 0.9 · 1000 + 0.1 · 1350 = 1035; α from r_1 = 1350
        let a = 0.9 * c_of_x(1.35).unwrap() / 1000.0;
        assert!((q.alpha() - a).abs() < 1e-15);
        assert!((q.p_k() - p1 * (a * 35.0).exp()).abs() < 1e-15);
    }

    #[test]
    fn arrivals_use_eq_12_and_every_offered_byte_counts() {
        let p = RaqmParams { q0: 4.0, p_init: 0.5, ..RaqmParams::default() };
        let mut q: Raqm<P> = Raqm::new(&p, link(), Limit::packets(6));
        let mut rng = Rng::stream(4, "raqm", 0);
        let mut shadow = rng.clone();
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // Q = 0: p = 0 (no draw), admitted
        assert!(q.enqueue(P::new(1, 500), &mut cx));
        assert_eq!(q.p_arrival(0), 0.0);
        // Q = 1..: p = 0.5 Q / 4, one draw each, capped at 1 from Q = 8 (never: buffer 6)
        let mut offered = 500;
        for _ in 0..30 {
            let n = q.len();
            let p_want = (0.5 * n as f64 / 4.0).min(1.0);
            assert_eq!(q.p_arrival(n), p_want);
            let u = if p_want > 0.0 && p_want < 1.0 { shadow.uniform() } else { 1.0 };
            let ok = q.enqueue(P::new(1, 500), &mut cx);
            offered += 500;
            if u < p_want {
                assert!(!ok);
                assert_eq!(cx.drops.last().unwrap().reason, DropReason::Early);
            } else if n == 6 {
                assert!(!ok);
                assert_eq!(cx.drops.last().unwrap().reason, DropReason::Overflow);
            } else {
                assert!(ok);
            }
        }
        assert_eq!(q.l, offered, "dropped arrivals are offered load too");
        // queue-independent mode: p = p_k whatever Q
        let p = RaqmParams { mode: RaqmMode::QueueIndependent, p_init: 0.3, ..RaqmParams::default() };
        let q: Raqm<P> = Raqm::new(&p, link(), Limit::packets(6));
        assert_eq!((q.p_arrival(0), q.p_arrival(5)), (0.3, 0.3));
    }

    /// Drive one queue: `n` arrivals of 500 bytes, each followed by `serve` departures (0 or 1).
    fn arrivals(q: &mut Raqm<P>, n: usize, serve: bool, rng: &mut Rng) {
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng, drops: &mut drops };
        for _ in 0..n {
            q.enqueue(P::new(1, 500), &mut cx);
            if serve {
                q.dequeue(&mut cx);
            }
        }
    }

    #[test]
    fn applied_reading_multiplies_the_probability_of_the_last_arrival() {
        // Two queues fed the same arrivals with the same random stream: the readings differ only
        // in the update, by the factor Q / q0 of the last arrival
        let base = RaqmParams { q0: 4.0, p_init: 0.01, ..RaqmParams::default() };
        let applied = RaqmParams { p_prev: PPrev::Applied, ..base.clone() };
        let mut a: Raqm<P> = Raqm::new(&base, link(), Limit::packets(100));
        let mut b: Raqm<P> = Raqm::new(&applied, link(), Limit::packets(100));
        let (mut ra, mut rb) = (Rng::stream(5, "raqm", 0), Rng::stream(5, "raqm", 0));
        arrivals(&mut a, 3, false, &mut ra);
        arrivals(&mut b, 3, false, &mut rb);
        assert_eq!(a.len(), b.len(), "same arrivals, same draws, same decisions");
        let n = b.len();
        // the last arrival saw n − 1 or n waiting packets (n if it was dropped)
        assert!(b.p_last() == b.p_arrival(n - 1) || b.p_last() == b.p_arrival(n));
        let seen = b.p_last() / 0.01 * 4.0;
        tick(&mut a, &mut ra);
        tick(&mut b, &mut rb);
        assert_eq!(a.r_k(), b.r_k());
        assert_eq!(a.alpha(), b.alpha());
        let step = (a.alpha() * (a.r_k() - a.r0())).exp();
        assert!((a.p_k() - 0.01 * step).abs() < 1e-15, "base: p_1 = e^(α (r − r0)) p_0");
        assert!((b.p_k() - a.p_k() * seen / 4.0).abs() < 1e-15, "applied: the base result × Q / q0");
        // a period without arrivals: Eq. 12 at the queue of the update instant
        let (pa, pb) = (a.p_k(), b.p_k());
        let q_now = b.len() as f64;
        tick(&mut a, &mut ra);
        tick(&mut b, &mut rb);
        assert_eq!(a.p_k() / pa, (a.alpha() * (a.r_k() - a.r0())).exp());
        assert!((b.p_k() / pb - a.p_k() / pa * q_now / 4.0).abs() < 1e-12);
        // an empty queue at the last arrival makes the next update fall to p_floor
        let mut c: Raqm<P> = Raqm::new(&applied, link(), Limit::packets(100));
        arrivals(&mut c, 3, true, &mut rb);
        assert_eq!(c.p_last(), 0.0);
        tick(&mut c, &mut rb);
        assert_eq!(c.p_k(), applied.p_floor);
    }

    #[test]
    fn readings_coincide_in_queue_independent_mode() {
        let base = RaqmParams { mode: RaqmMode::QueueIndependent, p_init: 0.05, ..RaqmParams::default() };
        let applied = RaqmParams { p_prev: PPrev::Applied, ..base.clone() };
        let mut a: Raqm<P> = Raqm::new(&base, link(), Limit::packets(10));
        let mut b: Raqm<P> = Raqm::new(&applied, link(), Limit::packets(10));
        let (mut ra, mut rb) = (Rng::stream(6, "raqm", 0), Rng::stream(6, "raqm", 0));
        for k in 0..20 {
            arrivals(&mut a, k % 5, k % 3 == 0, &mut ra);
            arrivals(&mut b, k % 5, k % 3 == 0, &mut rb);
            tick(&mut a, &mut ra);
            tick(&mut b, &mut rb);
            assert_eq!((a.p_k(), a.len()), (b.p_k(), b.len()), "period {k}");
        }
    }

    /// A fluid stand-in for the TCP flows of [RAQM] Eq. 4–5 in front of a RAQM queue: every
    /// `RTT` the sources set their aggregate rate to `K / sqrt(p)`, `p` being the probability an
    /// arrival is tested with at that moment (capped at twice the link rate, the access links'
    /// total); the offered load is cut into 500-byte packets that the discipline admits or drops;
    /// the link serves `C` bytes/s. `K` makes the rate equal `C` at a drop rate of 1 %.
    /// Returns, over the second half of `periods` periods of 1 s, the time-average queue and the
    /// mean of `q0 e^{−α (r_k − r0)}`, the queue at which the applied reading's update is neutral.
    fn fluid(p_prev: PPrev, q0: f64, periods: u64) -> (f64, f64) {
        const C: f64 = 1.25e6; // bytes/s (10 Mb/s)
        const DT: f64 = 1e-3; // s
        const RTT_STEPS: u64 = 20;
        let k_src = C * 0.01f64.sqrt();
        let params = RaqmParams { q0, p_prev, ..RaqmParams::default() };
        let mut q: Raqm<P> = Raqm::new(&params, LinkInfo { rate_bps: 8.0 * C }, Limit::packets(100));
        let mut rng = Rng::stream(7, "raqm-fluid", 0);
        let mut drops = Vec::new();
        let (mut rate, mut offered, mut served) = (2.0 * C, 0.0, 0.0);
        let (mut q_sum, mut n_q, mut neutral_sum, mut n_k) = (0.0, 0u64, 0.0, 0u64);
        let steps_per_period = (1.0 / DT) as u64;
        for step in 0..periods * steps_per_period {
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            if step % RTT_STEPS == 0 {
                let p = q.p_arrival(q.len());
                rate = if p > 0.0 { (k_src / p.sqrt()).min(2.0 * C) } else { 2.0 * C };
            }
            offered += rate * DT / 500.0;
            while offered >= 1.0 {
                offered -= 1.0;
                q.enqueue(P::new(1, 500), &mut cx);
            }
            served += C * DT / 500.0;
            while served >= 1.0 {
                served -= 1.0;
                q.dequeue(&mut cx);
            }
            cx.drops.clear();
            let second_half = step >= periods * steps_per_period / 2;
            if second_half {
                q_sum += q.len() as f64;
                n_q += 1;
            }
            if step % steps_per_period == steps_per_period - 1 {
                q.on_timer(&mut cx);
                if second_half {
                    neutral_sum += q0 * (-q.alpha() * (q.r_k() - q.r0())).exp();
                    n_k += 1;
                }
            }
        }
        (q_sum / n_q as f64, neutral_sum / n_k as f64)
    }

    #[test]
    fn applied_reading_settles_the_queue_near_q0_and_base_does_not() {
        let mut applied = Vec::new();
        for q0 in [20.0, 60.0] {
            let (q_base, _) = fluid(PPrev::Base, q0, 300);
            let (q_app, neutral) = fluid(PPrev::Applied, q0, 300);
            // applied: the queue settles where the update is neutral, Q = q0 e^{−α (r − r0)}:
            // a little below q0, since the offered rate exceeds r0 = C by the drops
            assert!(neutral < q0);
            assert!((q_app - neutral).abs() < 0.15 * neutral, "q0 = {q0}: queue {q_app}, neutral point {neutral}");
            // base: nothing pulls the queue to q0 (p_k runs to its clamp at 1, and the queue
            // sits where q0 × the drop rate the sources need leaves it)
            assert!((q_base - q0).abs() > (q_app - q0).abs(), "q0 = {q0}: base {q_base}, applied {q_app}");
            applied.push(q_app);
        }
        // applied: the queue follows q0 (three times q0, three times the queue)
        let ratio = applied[1] / applied[0];
        assert!((ratio - 3.0).abs() < 0.3, "ratio {ratio}");
    }
}
