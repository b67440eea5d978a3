//! REM — Random Exponential Marking (aqm.md §13, ambiguity A30).
//!
//! Reference: S. Athuraliya, V. H. Li, S. H. Low, Q. Yin, "REM: Active Queue Management",
//! IEEE Network 15(3):48–53, 2001. Used as a baseline by [RAQM] with the ns-2 defaults.
//!
//! A link price integrates the rate mismatch plus the weighted backlog mismatch, updated every
//! `t_upd` by a timer: `price ← max(0, price + γ (in_avg + α (b − b0) − c))`, with rates in packets
//! per update interval; every arrival that fits in the buffer is dropped with probability
//! `1 − φ^(−price)`. REM only drops here (no ECN in the simulator).

use crate::control::{check_nonneg, check_period, check_positive, enqueue_tested, period_ns};
use crate::fifo::Fifo;
use crate::{Cx, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// REM parameters as written in a scenario (`aqm = { type = "rem", ... }`). Defaults are ns-2's as
/// quoted in [RAQM], with the packet-size calibration of A30.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RemParams {
    /// Mark ECN-capable packets (Congestion Experienced) instead of dropping them early (RFC 3168).
    #[serde(default)]
    pub ecn: bool,
    /// Price step size γ.
    #[serde(default = "crate::defaults::rem::gamma")]
    pub gamma: f64,
    /// Weight α of the backlog mismatch.
    #[serde(default = "crate::defaults::rem::alpha")]
    pub alpha: f64,
    /// Base φ (> 1) of the marking probability `1 − φ^(−price)`.
    #[serde(default = "crate::defaults::rem::phi")]
    pub phi: f64,
    /// Price update interval, in seconds.
    #[serde(with = "crate::units::secs", default = "crate::defaults::rem::t_upd")]
    pub t_upd: f64,
    /// Target backlog (packets), ns-2 `pbo_`.
    #[serde(default = "crate::defaults::rem::b0")]
    pub b0: f64,
    /// Input-rate filter weight, ns-2 `inw_` (1 = no filtering).
    #[serde(default = "crate::defaults::rem::inw")]
    pub inw: f64,
    /// Packet size (bytes) converting the link capacity to packets per interval (A30: the true
    /// data packet size; 1000 reproduces a literal ns-2-default run with 500-byte packets).
    #[serde(default = "crate::defaults::rem::mean_pkt_size", alias = "rem_mean_pkt_size")]
    pub mean_pkt_size: u32,
}

impl Default for RemParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for RemParams {
    fn validate(&self) -> Result<(), ParamError> {
        check_positive("gamma", self.gamma)?;
        check_nonneg("alpha", self.alpha)?;
        if !(self.phi.is_finite() && self.phi > 1.0) {
            return Err(ParamError::new("phi", format!("must be a finite number > 1, got {}", self.phi)));
        }
        check_period("t_upd", self.t_upd)?;
        check_nonneg("b0", self.b0)?;
        if !(self.inw > 0.0 && self.inw <= 1.0) {
            return Err(ParamError::new("inw", format!("must be in (0, 1], got {}", self.inw)));
        }
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        Ok(())
    }
}

/// REM over a FIFO.
pub struct Rem<P> {
    ecn: bool,
    fifo: Fifo<P>,
    limit: Limit,
    gamma: f64,
    alpha: f64,
    ln_phi: f64,
    b0: f64,
    inw: f64,
    period: Time,
    /// Link capacity in packets per update interval, `t_upd · C / (8 · mean_pkt_size)`.
    c_int: f64,
    price: f64,
    prob: f64,
    /// Packets arrived in the current interval (including the ones dropped).
    in_count: u64,
    in_avg: f64,
}

impl<P: Pkt> Rem<P> {
    pub fn new(params: &RemParams, link: LinkInfo, limit: Limit) -> Self {
        Rem {
            ecn: params.ecn,
            fifo: Fifo::default(),
            limit,
            gamma: params.gamma,
            alpha: params.alpha,
            ln_phi: libm::log(params.phi),
            b0: params.b0,
            inw: params.inw,
            period: period_ns(params.t_upd),
            c_int: params.t_upd * link.rate_bps / (8.0 * params.mean_pkt_size as f64),
            price: 0.0,
            prob: 0.0,
            in_count: 0,
            in_avg: 0.0,
        }
    }

    /// The link price.
    pub fn price(&self) -> f64 {
        self.price
    }

    /// The drop probability `1 − φ^(−price)`.
    pub fn prob(&self) -> f64 {
        self.prob
    }

    /// The link capacity in packets per update interval.
    pub fn c_int(&self) -> f64 {
        self.c_int
    }
}

impl<P: Pkt> Scheme<P> for Rem<P> {
    type Params = RemParams;
    fn new(params: &RemParams, link: LinkInfo, limit: Limit) -> Self {
        Rem::new(params, link, limit)
    }
}

crate::hint::hint_from!(Rem, fifo.get);

impl<P: Pkt> Qdisc<P> for Rem<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // 1. every arrival counts, including the ones dropped below
        self.in_count += 1;
        // 2. buffer first; 3. with probability prob; 4. queued
        enqueue_tested(&mut self.fifo, &self.limit, pkt, self.prob, self.ecn, cx)
    }

    crate::fifo::fifo_views!(fifo, pop);
    fn timer_period(&self) -> Option<Time> {
        Some(self.period)
    }
    /// Every `t_upd`: filter the input count, update the price and the probability.
    fn on_timer(&mut self, _cx: &mut Cx<'_, P>) {
        self.in_avg = (1.0 - self.inw) * self.in_avg + self.inw * self.in_count as f64;
        let backlog = self.fifo.len() as f64;
        self.price = (self.price + self.gamma * (self.in_avg + self.alpha * (backlog - self.b0) - self.c_int)).max(0.0);
        // 1 − φ^(−price), computed as −expm1(−price · ln φ) for accuracy near 0
        self.prob = (-libm::expm1(-self.price * self.ln_phi)).clamp(0.0, 1.0);
        self.in_count = 0;
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["price", "p", "in_avg"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.price;
        out[1] = self.prob;
        out[2] = self.in_avg;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::{tick, P};
    use crate::DropReason;

    fn link() -> LinkInfo {
        LinkInfo { rate_bps: 10e6 }
    }

    #[test]
    fn defaults_calibration_and_validation() {
        let p = RemParams::default();
        assert_eq!(
            (p.gamma, p.alpha, p.phi, p.t_upd, p.b0, p.inw, p.mean_pkt_size),
            (0.001, 0.1, 1.001, 0.002, 20.0, 1.0, 500)
        );
        assert!(p.validate().is_ok());
        // A30: 10 Mb/s, 2 ms, 500-byte packets -> 5 packets per interval (2.5 with 1000 B)
        let q: Rem<P> = Rem::new(&p, link(), Limit::packets(100));
        assert!((q.c_int() - 5.0).abs() < 1e-12);
        assert_eq!(q.timer_period(), Some(2_000_000));
        let q: Rem<P> = Rem::new(&RemParams { mean_pkt_size: 1000, ..p.clone() }, link(), Limit::packets(100));
        assert!((q.c_int() - 2.5).abs() < 1e-12);
        assert_eq!(RemParams { phi: 1.0, ..p.clone() }.validate().unwrap_err().field, "phi");
        assert_eq!(RemParams { gamma: 0.0, ..p.clone() }.validate().unwrap_err().field, "gamma");
        assert_eq!(RemParams { inw: 0.0, ..p.clone() }.validate().unwrap_err().field, "inw");
        assert_eq!(RemParams { t_upd: 0.0, ..p.clone() }.validate().unwrap_err().field, "t_upd");
        assert_eq!(RemParams { b0: -1.0, ..p.clone() }.validate().unwrap_err().field, "b0");
        assert_eq!(RemParams { mean_pkt_size: 0, ..p.clone() }.validate().unwrap_err().field, "mean_pkt_size");
    }

    #[test]
    fn price_and_probability_step_by_step() {
        // c_int = 5 packets per interval; gamma = 0.1, alpha = 0.5, b0 = 2, phi = 2, inw = 0.5
        let p = RemParams { gamma: 0.1, alpha: 0.5, b0: 2.0, phi: 2.0, inw: 0.5, ..RemParams::default() };
        let mut q: Rem<P> = Rem::new(&p, link(), Limit::packets(4));
        let mut rng = Rng::stream(1, "rem", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // 6 arrivals into a 4-packet buffer: 4 queued, 2 overflow, all 6 counted
        for _ in 0..6 {
            q.enqueue(P::new(1, 500), &mut cx);
        }
        assert_eq!((q.len(), q.in_count), (4, 6));
        // interval 1: in_avg = 0.5 * 0 + 0.5 * 6 = 3; price = 0.1 (3 + 0.5 (4 - 2) - 5) < 0 -> 0
        tick(&mut q, &mut rng);
        assert_eq!((q.in_avg, q.price(), q.prob(), q.in_count), (3.0, 0.0, 0.0, 0));
        // interval 2: 20 arrivals (4 queued... buffer full: all overflow); in_avg = 1.5 + 10 = 11.5
        let mut cx = Cx { now: 1, rng: &mut rng, drops: &mut drops };
        for _ in 0..20 {
            q.enqueue(P::new(1, 500), &mut cx);
        }
        tick(&mut q, &mut rng);
        // price = 0.1 (11.5 + 1 - 5) = 0.75; prob = 1 - 2^-0.75
        assert!((q.in_avg - 11.5).abs() < 1e-12);
        assert!((q.price() - 0.75).abs() < 1e-12);
        assert!((q.prob() - (1.0 - 2f64.powf(-0.75))).abs() < 1e-12);
        // interval 3: no arrivals, queue drained to 0: in_avg = 5.75;
        // price = 0.75 + 0.1 (5.75 + 0.5 (0 - 2) - 5) = 0.725
        let mut cx = Cx { now: 2, rng: &mut rng, drops: &mut drops };
        while q.dequeue(&mut cx).is_some() {}
        tick(&mut q, &mut rng);
        assert!((q.price() - 0.725).abs() < 1e-12);
        assert!((q.prob() - (1.0 - 2f64.powf(-0.725))).abs() < 1e-12);
        let mut st = [0.0; 3];
        q.state(&mut st);
        assert_eq!(st, [q.price(), q.prob(), q.in_avg]);
    }

    #[test]
    fn buffer_checked_first_then_independent_trials_with_prob() {
        let mut q: Rem<P> = Rem::new(&RemParams::default(), link(), Limit::packets(2));
        q.prob = 0.3;
        let mut rng = Rng::stream(2, "rem", 0);
        let mut shadow = rng.clone();
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..40 {
            if q.len() == 2 {
                // full: overflow without a draw
                assert!(!q.enqueue(P::new(1, 500), &mut cx));
                assert_eq!(cx.drops.last().unwrap().reason, DropReason::Overflow);
                q.fifo.pop();
                continue;
            }
            let u = shadow.uniform();
            let ok = q.enqueue(P::new(1, 500), &mut cx);
            assert_eq!(ok, u >= 0.3);
        }
        assert_eq!(q.in_count, 40);
    }
}
