//! PI controller (aqm.md §12, ambiguity A29).
//!
//! Reference: C. V. Hollot, V. Misra, D. Towsley, W.-B. Gong, "Analysis and Design of Controllers
//! for AQM Routers Supporting TCP Flows", IEEE Transactions on Automatic Control 47(6):945–959,
//! 2002. Used as a baseline by [RAQM] with the ns-2 defaults.
//!
//! A proportional-integral controller of the instantaneous queue, sampled by a periodic timer at
//! `w` Hz: `p ← p + a (q − q_ref) − b (q_old − q_ref)`, clamped to [0, 1]. Every arrival that fits in
//! the buffer is then dropped with probability `p` (no count-based uniformisation).

use crate::control::{check_nonneg, check_positive, check_range, enqueue_tested, period_ns};
use crate::fifo::Fifo;
use crate::{Cx, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// PI parameters as written in a scenario (`aqm = { type = "pi", ... }`). Defaults are ns-2's as
/// quoted in [RAQM] (aqm.md §12).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PiParams {
    /// Mark ECN-capable packets (Congestion Experienced) instead of dropping them early (RFC 3168).
    #[serde(default)]
    pub ecn: bool,
    /// Coefficient of the current error `q − q_ref`.
    #[serde(default = "crate::defaults::pi::a")]
    pub a: f64,
    /// Coefficient of the previous error `q_old − q_ref`.
    #[serde(default = "crate::defaults::pi::b")]
    pub b: f64,
    /// Sampling frequency in Hz; the timer period is `1/w` (rounded to the nanosecond).
    #[serde(default = "crate::defaults::pi::w")]
    pub w: f64,
    /// Reference queue length (packets; mean-size packets in byte mode).
    #[serde(default = "crate::defaults::pi::q_ref")]
    pub q_ref: f64,
    /// `packet` (default): `q` is the number of waiting packets and `p` applies as is. `byte`
    /// (ns-2's byte mode): `q` is the waiting bytes over `mean_pkt_size` and an arrival of `size`
    /// bytes is dropped with probability `min(1, p · size / mean_pkt_size)`.
    #[serde(default)]
    pub mode: PiMode,
    /// Mean packet size of byte mode (bytes).
    #[serde(default = "crate::defaults::pi::mean_pkt_size")]
    pub mean_pkt_size: u32,
}

/// PI measurement mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PiMode {
    #[default]
    Packet,
    Byte,
}

impl Default for PiParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for PiParams {
    fn validate(&self) -> Result<(), ParamError> {
        check_range("a", self.a, 0.0, 1.0)?;
        check_range("b", self.b, 0.0, 1.0)?;
        check_positive("w", self.w)?;
        if period_ns(1.0 / self.w) == 0 {
            return Err(ParamError::new(
                "w",
                format!("must be at most 1e9 Hz (a period of at least 1 ns), got {}", self.w),
            ));
        }
        check_nonneg("q_ref", self.q_ref)?;
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        Ok(())
    }
}

/// PI over a FIFO.
pub struct Pi<P> {
    ecn: bool,
    fifo: Fifo<P>,
    limit: Limit,
    a: f64,
    b: f64,
    q_ref: f64,
    period: Time,
    byte_mode: bool,
    mean_pkt_size: f64,
    /// Drop probability.
    p: f64,
    /// Queue length at the previous sample.
    q_old: f64,
}

impl<P: Pkt> Pi<P> {
    pub fn new(params: &PiParams, limit: Limit) -> Self {
        Pi {
            ecn: params.ecn,
            fifo: Fifo::default(),
            limit,
            a: params.a,
            b: params.b,
            q_ref: params.q_ref,
            period: period_ns(1.0 / params.w),
            byte_mode: params.mode == PiMode::Byte,
            mean_pkt_size: params.mean_pkt_size as f64,
            p: 0.0,
            q_old: 0.0,
        }
    }

    /// The current drop probability.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// The queue length the controller measures.
    fn q(&self) -> f64 {
        if self.byte_mode {
            self.fifo.bytes() as f64 / self.mean_pkt_size
        } else {
            self.fifo.len() as f64
        }
    }
}

impl<P: Pkt> Scheme<P> for Pi<P> {
    type Params = PiParams;
    fn new(params: &PiParams, _link: LinkInfo, limit: Limit) -> Self {
        Pi::new(params, limit)
    }
}

crate::hint::hint_from!(Pi, fifo.get);

impl<P: Pkt> Qdisc<P> for Pi<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // 1. buffer first (ns-2 order, A29); 2. with probability p (no uniformisation); 3. queued
        let p = if self.byte_mode { (self.p * pkt.size() as f64 / self.mean_pkt_size).min(1.0) } else { self.p };
        enqueue_tested(&mut self.fifo, &self.limit, pkt, p, self.ecn, cx)
    }

    crate::fifo::fifo_views!(fifo, pop);
    fn timer_period(&self) -> Option<Time> {
        Some(self.period)
    }
    /// The sampling instant: one step of the PI law on the instantaneous queue.
    fn on_timer(&mut self, _cx: &mut Cx<'_, P>) {
        let q = self.q();
        let p = self.p + self.a * (q - self.q_ref) - self.b * (self.q_old - self.q_ref);
        self.p = p.clamp(0.0, 1.0);
        self.q_old = q;
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["q_old", "p"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.q_old;
        out[1] = self.p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::{tick, P};
    use crate::DropReason;

    #[test]
    fn defaults_period_and_validation() {
        let p = PiParams::default();
        assert_eq!((p.a, p.b, p.w, p.q_ref), (1.822e-5, 1.816e-5, 170.0, 50.0));
        assert!(p.validate().is_ok());
        let q: Pi<P> = Pi::new(&p, Limit::packets(100));
        assert_eq!(q.timer_period(), Some(5_882_353)); // 1/170 s rounded to the ns
        assert_eq!(PiParams { a: -1.0, ..p.clone() }.validate().unwrap_err().field, "a");
        assert_eq!(PiParams { b: f64::INFINITY, ..p.clone() }.validate().unwrap_err().field, "b");
        assert_eq!(PiParams { w: 0.0, ..p.clone() }.validate().unwrap_err().field, "w");
        assert_eq!(PiParams { w: 1e10, ..p.clone() }.validate().unwrap_err().field, "w");
        assert_eq!(PiParams { q_ref: -1.0, ..p.clone() }.validate().unwrap_err().field, "q_ref");
    }

    #[test]
    fn controller_follows_the_pi_law_step_by_step() {
        // a = 0.01, b = 0.008, q_ref = 2
        let p = PiParams { a: 0.01, b: 0.008, q_ref: 2.0, ..PiParams::default() };
        let mut q: Pi<P> = Pi::new(&p, Limit::packets(100));
        let mut rng = Rng::stream(1, "pi", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..5 {
            assert!(q.enqueue(P::new(1, 1000), &mut cx)); // p = 0: never dropped
        }
        // sample 1: q = 5, q_old = 0 -> p = 0 + 0.01*3 - 0.008*(-2) = 0.046
        tick(&mut q, &mut rng);
        assert!((q.p() - 0.046).abs() < 1e-15);
        assert_eq!(q.q_old, 5.0);
        // sample 2: q = 5, q_old = 5 -> p = 0.046 + 0.03 - 0.024 = 0.052
        tick(&mut q, &mut rng);
        assert!((q.p() - 0.052).abs() < 1e-15);
        // drain to 0: sample 3 -> 0.052 + 0.01*(-2) - 0.008*3 = 0.008
        let mut cx = Cx { now: 1, rng: &mut rng, drops: &mut drops };
        while q.dequeue(&mut cx).is_some() {}
        tick(&mut q, &mut rng);
        assert!((q.p() - 0.008).abs() < 1e-15);
        // sample 4: 0.008 - 0.02 + 0.016 = 0.004; sample 5: 0.004 - 0.02 + 0.016 = 0
        tick(&mut q, &mut rng);
        assert!((q.p() - 0.004).abs() < 1e-15);
        tick(&mut q, &mut rng);
        assert!(q.p().abs() < 1e-15);
        // sample 6 would give -0.004: clamped at 0
        tick(&mut q, &mut rng);
        assert_eq!(q.p(), 0.0);
        // saturation at 1
        q.p = 0.999;
        for _ in 0..50 {
            q.fifo.push(P::new(1, 1000), 2);
        }
        tick(&mut q, &mut rng);
        assert_eq!(q.p(), 1.0);
    }

    #[test]
    fn buffer_is_checked_before_the_random_test_without_uniformisation() {
        let p = PiParams { q_ref: 0.0, ..PiParams::default() };
        let mut q: Pi<P> = Pi::new(&p, Limit::packets(3));
        let mut rng = Rng::stream(2, "pi", 0);
        let mut shadow = rng.clone();
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..3 {
            q.enqueue(P::new(1, 1000), &mut cx);
        }
        q.p = 0.5;
        // full buffer: overflow, and no random number is used
        assert!(!q.enqueue(P::new(1, 1000), &mut cx));
        assert_eq!(cx.drops.last().unwrap().reason, DropReason::Overflow);
        q.fifo.pop();
        // with room: each arrival is an independent trial with p = 0.5
        for _ in 0..20 {
            let u = shadow.uniform();
            let ok = q.enqueue(P::new(1, 1000), &mut cx);
            assert_eq!(ok, u >= 0.5);
            if ok {
                q.fifo.pop();
            } else {
                assert_eq!(cx.drops.last().unwrap().reason, DropReason::Early);
            }
        }
    }

    #[test]
    fn byte_mode_measures_mean_size_packets_and_scales_p() {
        let p = PiParams { a: 0.01, b: 0.0, q_ref: 0.0, mode: PiMode::Byte, mean_pkt_size: 500, ..PiParams::default() };
        let mut q: Pi<P> = Pi::new(&p, Limit::packets(100));
        let mut rng = Rng::stream(3, "pi", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        q.enqueue(P::new(1, 1000), &mut cx);
        q.enqueue(P::new(1, 250), &mut cx);
        // q = 1250 / 500 = 2.5 mean-size packets
        tick(&mut q, &mut rng);
        assert!((q.p() - 0.025).abs() < 1e-15);
        // p = 0.4: a 1500-byte arrival gets min(1, 0.4 * 3) = 1 -> dropped, no number drawn
        q.p = 0.4;
        let mut shadow = rng.clone();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(!q.enqueue(P::new(1, 1500), &mut cx));
        assert_eq!(cx.drops.last().unwrap().reason, DropReason::Early);
        // a 250-byte arrival gets 0.4 * 0.5 = 0.2 (one draw)
        let u = shadow.uniform();
        assert_eq!(q.enqueue(P::new(1, 250), &mut cx), u >= 0.2);
    }
}
