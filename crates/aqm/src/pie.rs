//! PIE — Proportional Integral controller Enhanced (aqm.md §17.2). **Modern baseline, not from
//! the papers.**
//!
//! Reference: R. Pan, P. Natarajan, F. Baker, G. White, "Proportional Integral Controller
//! Enhanced (PIE): A Lightweight Control Scheme to Address the Bufferbloat Problem", RFC 8033,
//! February 2017.
//!
//! A timer every `t_update` estimates the queueing delay and moves the drop probability by a PI
//! law whose gains are scaled down while the probability is small (RFC 8033 §4.2 auto-tuning);
//! arrivals are dropped at random with that probability, except during the burst allowance, while
//! the queue is short or the delay low (§4.1 safeguard), and when the buffer is full (`overflow`).

use crate::control::early_drop;
use crate::fifo::Fifo;
use crate::pi_law::{self, pi_law_params, BOOST_ABOVE};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};
use serde::{Deserialize, Serialize};

pi_law_params! {
    defaults = pie;
    /// PIE parameters as written in a scenario (`aqm = { type = "pie", ... }`); RFC 8033's defaults
    /// (`target` 15 ms, `t_update` 15 ms, `alpha` 0.125, `beta` 1.25, §4.2).
    pub struct PieParams {
        /// Mark ECN-capable packets (Congestion Experienced) instead of dropping them early (RFC 3168).
        #[serde(default)]
        pub ecn: bool,
        /// With `ecn`: mark only while the drop probability is at most this (RFC 8033 §5.1: 10%).
        #[serde(default = "crate::defaults::pie::mark_ecn_th")]
        pub mark_ecn_th: f64,
        /// `MAX_BURST`: burst allowance after a quiet period, seconds (150 ms).
        #[serde(with = "crate::units::secs", default = "crate::defaults::pie::max_burst")]
        pub max_burst: f64,
        /// Bytes: no random drop while the backlog is at most `2 · mean_pkt_size` (RFC 8033 §4.1).
        #[serde(default = "crate::defaults::pie::mean_pkt_size")]
        pub mean_pkt_size: u32,
        /// How the queueing delay is measured at each update (below).
        #[serde(default)]
        pub qdelay_estimator: QdelayEstimator,
        /// `DQ_THRESHOLD` of the departure-rate estimator, bytes (2^14).
        #[serde(default = "crate::defaults::pie::dq_threshold")]
        pub dq_threshold: u32,
        /// De-randomisation with the accumulated probability (RFC 8033 §5.1), off by default.
        #[serde(default)]
        pub derandomize: bool,
        /// Linux `sch_pie`'s extra `+0.02` per update while the delay exceeds 250 ms; off by default
        /// (not in the specification's pseudo-code).
        #[serde(default)]
        pub boost_above_250ms: bool,
    }
}

/// Queueing-delay estimate used by the update (aqm.md §17.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QdelayEstimator {
    /// `now − enqueue time` of the head packet at the update, 0 when the queue is empty
    /// (timestamps; recommended by the specification for a simulator).
    #[default]
    Head,
    /// Sojourn time of the last departed packet, 0 if it left the queue empty (Linux and ns-3
    /// with timestamps).
    Departure,
    /// `Q_bytes · avg_dq_time / DQ_THRESHOLD` from the departure-rate estimator (RFC 8033 §4.3).
    Rate,
}

impl Params for PieParams {
    fn validate(&self) -> Result<(), ParamError> {
        if !(0.0..=1.0).contains(&self.mark_ecn_th) {
            return Err(ParamError::new("mark_ecn_th", format!("must be in [0, 1], got {}", self.mark_ecn_th)));
        }
        self.law().check()?;
        if !(self.max_burst.is_finite() && (0.0..=1e6).contains(&self.max_burst)) {
            return Err(ParamError::new(
                "max_burst",
                format!("must be a time in seconds in [0, 1e6], got {}", self.max_burst),
            ));
        }
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        crate::control::check_bytes("dq_threshold", self.dq_threshold)?;
        Ok(())
    }
}

/// PIE's controller state (RFC 8033 §4; Linux `pie_vars`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PieVars {
    /// `drop_prob`, in [0, 1].
    pub drop_prob: f64,
    /// Delay estimate of the last update (s).
    pub qdelay: f64,
    /// `qdelay_old` (s).
    pub qdelay_old: f64,
    /// Remaining burst allowance (s).
    pub burst_allowance: f64,
    /// De-randomisation accumulator.
    pub accu_prob: f64,
    /// Departure estimator: sojourn of the last departure (ns), 0 if it emptied the queue.
    last_sojourn: Time,
    /// Rate estimator: measurement in progress, its start and bytes, and the average time to
    /// drain `dq_threshold` bytes (s; 0 = no estimate yet).
    in_measurement: bool,
    measurement_start: Time,
    dq_count: u64,
    avg_dq_time: f64,
}

/// PIE over one FIFO.
pub struct Pie<P> {
    ecn: bool,
    fifo: Fifo<P>,
    limit: Limit,
    p: PieParams,
    t_update_ns: Time,
    vars: PieVars,
}

impl<P: Pkt> Pie<P> {
    pub fn new(params: &PieParams, limit: Limit) -> Self {
        let vars = PieVars { burst_allowance: params.max_burst, ..Default::default() };
        Pie {
            ecn: params.ecn,
            fifo: Fifo::default(),
            limit,
            p: params.clone(),
            t_update_ns: params.law().period_ns(),
            vars,
        }
    }

    /// The controller state.
    pub fn vars(&self) -> &PieVars {
        &self.vars
    }

    /// The delay estimate at `now` (seconds).
    fn current_qdelay(&self, now: Time) -> f64 {
        let ns = match self.p.qdelay_estimator {
            QdelayEstimator::Head => self.fifo.iter().next().map(|(_, enq)| now.saturating_sub(*enq)).unwrap_or(0),
            QdelayEstimator::Departure => {
                if self.fifo.is_empty() {
                    0
                } else {
                    self.vars.last_sojourn
                }
            }
            QdelayEstimator::Rate => {
                return if self.vars.avg_dq_time > 0.0 {
                    self.fifo.bytes() as f64 * self.vars.avg_dq_time / self.p.dq_threshold as f64
                } else {
                    0.0
                };
            }
        };
        ns as f64 / NS_PER_SEC as f64
    }

    /// `calculate_drop_prob` (aqm.md §17.2 `on_timer`; RFC 8033 §4.2 and §4.4), with the delay
    /// estimate `qdelay` in seconds.
    pub fn update(&mut self, qdelay: f64) {
        let v = &mut self.vars;
        let p = &self.p;
        let boost = p.boost_above_250ms && qdelay > BOOST_ABOVE;
        let delta = p.law().autotuned_step(qdelay, p.target, v.qdelay_old, v.drop_prob, boost);
        v.drop_prob = pi_law::apply(v.drop_prob, delta).0;
        // decay when the queue has been empty for two updates
        if qdelay == 0.0 && v.qdelay_old == 0.0 {
            v.drop_prob *= 0.98;
        }
        v.burst_allowance = (v.burst_allowance - p.t_update).max(0.0);
        if pi_law::calm(v.drop_prob, qdelay, v.qdelay_old, p.target / 2.0) {
            v.burst_allowance = p.max_burst;
        }
        v.qdelay_old = qdelay;
        v.qdelay = qdelay;
    }

    /// Departure bookkeeping of the delay estimators (`deque` of RFC 8033 §4.3 for `rate`).
    fn on_departure(&mut self, now: Time, size: u32, enq: Time) {
        match self.p.qdelay_estimator {
            QdelayEstimator::Head => {}
            QdelayEstimator::Departure => {
                self.vars.last_sojourn = if self.fifo.is_empty() { 0 } else { now.saturating_sub(enq) };
            }
            QdelayEstimator::Rate => {
                let th = self.p.dq_threshold as u64;
                let v = &mut self.vars;
                if v.in_measurement {
                    v.dq_count += size as u64;
                    if v.dq_count >= th {
                        let dq_time = now.saturating_sub(v.measurement_start) as f64 / NS_PER_SEC as f64;
                        if v.avg_dq_time == 0.0 {
                            v.avg_dq_time = dq_time;
                        } else {
                            let w = (th as f64 / 65536.0).min(1.0);
                            v.avg_dq_time = dq_time * w + v.avg_dq_time * (1.0 - w);
                        }
                        v.in_measurement = false;
                    }
                }
                if !v.in_measurement && self.fifo.bytes() >= th {
                    v.in_measurement = true;
                    v.measurement_start = now;
                    v.dq_count = 0;
                }
            }
        }
    }
}

impl<P: Pkt> Scheme<P> for Pie<P> {
    type Params = PieParams;
    fn new(params: &PieParams, _link: LinkInfo, limit: Limit) -> Self {
        Pie::new(params, limit)
    }
}

crate::hint::hint_from!(Pie, fifo.get);

impl<P: Pkt> Qdisc<P> for Pie<P> {
    #[inline]
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let v = &mut self.vars;
        let p = &self.p;
        // buffer full
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            v.accu_prob = 0.0;
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        let admit = if v.burst_allowance > 0.0 {
            true
        } else if pi_law::uncongested(v.qdelay_old, p.target / 2.0, v.drop_prob)
            || self.fifo.bytes() <= 2 * p.mean_pkt_size as u64
        {
            // §4.1 safeguard: not congested, or too little queued to drop from
            true
        } else if p.derandomize {
            // §5.1: accumulate the probability; never drop below 0.85, always at 8.5
            match pi_law::derandomised(&mut v.accu_prob, v.drop_prob) {
                Some(drop) => !drop,
                None => !early_drop(cx.rng, v.drop_prob),
            }
        } else {
            !early_drop(cx.rng, v.drop_prob)
        };
        let mut pkt = pkt;
        if !admit {
            v.accu_prob = 0.0;
            // RFC 8033 §5.1: with ECN, mark instead of dropping while drop_prob <= mark_ecn_th
            let ecn = self.ecn && v.drop_prob <= p.mark_ecn_th;
            let Some(marked) = cx.signal(pkt, ecn) else { return false };
            pkt = marked;
        }
        self.fifo.push(pkt, cx.now);
        true
    }

    #[inline]
    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let (pkt, enq) = self.fifo.pop()?;
        self.on_departure(cx.now, pkt.size(), enq);
        Some((pkt, enq))
    }

    crate::fifo::fifo_views!(fifo);
    fn timer_period(&self) -> Option<Time> {
        Some(self.t_update_ns)
    }
    fn on_timer(&mut self, cx: &mut Cx<'_, P>) {
        let qdelay = self.current_qdelay(cx.now);
        self.update(qdelay);
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["p", "qdelay_s", "burst_allowance_s"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.vars.drop_prob;
        out[1] = self.vars.qdelay;
        out[2] = self.vars.burst_allowance;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pi_law::autotune_scale;
    use crate::rng::Rng;
    use crate::test_util::P;

    const MS: Time = 1_000_000;

    fn pie(p: &PieParams) -> Pie<P> {
        Pie::new(p, Limit::packets(1000))
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(PieParams::default().validate().is_ok());
        let bad = |f: fn(&mut PieParams)| {
            let mut p = PieParams::default();
            f(&mut p);
            p.validate().unwrap_err().field
        };
        assert_eq!(bad(|p| p.target = 0.0), "target");
        assert_eq!(bad(|p| p.t_update = -0.015), "t_update");
        assert_eq!(bad(|p| p.alpha = 0.0), "alpha");
        assert_eq!(bad(|p| p.beta = f64::INFINITY), "beta");
        assert_eq!(bad(|p| p.max_burst = -1.0), "max_burst");
        assert_eq!(bad(|p| p.mean_pkt_size = 0), "mean_pkt_size");
        assert_eq!(bad(|p| p.dq_threshold = 0), "dq_threshold");
    }

    #[test]
    fn probability_update_formula_step_by_step() {
        let params = PieParams::default();
        let mut q = pie(&params);
        let (a, b, r) = (0.125, 1.25, 0.015);
        // 1. from 0 with qdelay 30 ms: p = (a (0.030 - r) + b (0.030 - 0)) / 2048
        q.update(0.030);
        let want = (a * (0.030 - r) + b * 0.030) / 2048.0;
        assert!((q.vars.drop_prob - want).abs() < 1e-15);
        assert_eq!(q.vars.qdelay_old, 0.030);
        // burst allowance decreases by t_update
        assert!((q.vars.burst_allowance - (0.150 - 0.015)).abs() < 1e-12);
        // 2. the next step is scaled by the table entry of the current probability
        let p0 = q.vars.drop_prob;
        q.update(0.040);
        let want = p0 + (a * (0.040 - r) + b * (0.040 - 0.030)) * autotune_scale(p0);
        assert!((q.vars.drop_prob - want).abs() < 1e-15);
        // 3. at drop_prob >= 0.1 a large increase is capped at 0.02
        q.vars.drop_prob = 0.3;
        q.update(0.5);
        assert!((q.vars.drop_prob - 0.32).abs() < 1e-12);
        // ... and decreases are not capped
        q.update(0.0);
        let want = 0.32 + a * (0.0 - r) + b * (0.0 - 0.5);
        assert!((q.vars.drop_prob - want.max(0.0)).abs() < 1e-12);
        // 4. two updates with zero delay: decay by 0.98 (after the PI step)
        q.vars.drop_prob = 0.5;
        q.vars.qdelay_old = 0.0;
        q.update(0.0);
        let want = (0.5 + a * (0.0 - r)) * 0.98;
        assert!((q.vars.drop_prob - want).abs() < 1e-12);
        // 5. clamped to [0, 1]
        q.vars.drop_prob = 0.0;
        q.update(0.0);
        assert_eq!(q.vars.drop_prob, 0.0);
        // 6. burst allowance: exhausted, then restored once p = 0 and both delays < target/2
        assert_eq!(q.vars.burst_allowance, 0.150, "restored: p = 0 and delays 0");
        q.vars.qdelay_old = 0.010;
        q.update(0.010);
        assert_eq!(q.vars.drop_prob, 0.0);
        assert!((q.vars.burst_allowance - 0.135).abs() < 1e-12, "not restored: delay 10 ms >= target/2");
    }

    #[test]
    fn boost_above_250ms_is_an_option() {
        let mut p = PieParams::default();
        let mut q = pie(&p);
        q.vars.drop_prob = 0.5;
        q.vars.qdelay_old = 0.3;
        q.update(0.3);
        let plain = q.vars.drop_prob;
        p.boost_above_250ms = true;
        let mut q = pie(&p);
        q.vars.drop_prob = 0.5;
        q.vars.qdelay_old = 0.3;
        q.update(0.3);
        assert!((q.vars.drop_prob - plain - 0.02).abs() < 1e-12);
    }

    #[test]
    fn arrival_rules_burst_safeguard_and_random_drop() {
        let params = PieParams::default();
        let mut q = pie(&params);
        let mut rng = Rng::stream(5, "pie", 0);
        let mut drops = Vec::new();
        // burst allowance: no random drop even at p = 1
        q.vars.drop_prob = 1.0;
        q.vars.qdelay_old = 1.0;
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..10 {
            assert!(q.enqueue(P::new(i, 1000), &mut cx));
        }
        // no allowance: p = 1 drops every arrival once more than 2 packets are queued
        q.vars.burst_allowance = 0.0;
        assert!(!q.enqueue(P::new(99, 1000), &mut cx));
        assert_eq!(cx.drops.last().unwrap().reason, DropReason::Early);
        // safeguard: low old delay and p < 0.2 admits
        q.vars.drop_prob = 0.19;
        q.vars.qdelay_old = 0.007;
        assert!(q.enqueue(P::new(100, 1000), &mut cx));
        // safeguard: at most 2 mean packets queued admits
        let mut q2 = pie(&params);
        q2.vars.burst_allowance = 0.0;
        q2.vars.drop_prob = 1.0;
        q2.vars.qdelay_old = 1.0;
        assert!(q2.enqueue(P::new(1, 1000), &mut cx));
        assert!(q2.enqueue(P::new(1, 1000), &mut cx));
        assert!(q2.enqueue(P::new(1, 1000), &mut cx)); // 2000 bytes queued before it
        assert!(!q2.enqueue(P::new(1, 1000), &mut cx));
        // random drop with a fixed stream: the drop decision is u < p
        let mut shadow = cx.rng.clone();
        q2.vars.drop_prob = 0.5;
        for i in 0..200 {
            let u = shadow.uniform();
            let before = q2.len();
            let ok = q2.enqueue(P::new(i, 1000), &mut cx);
            assert_eq!(ok, u >= 0.5, "arrival {i}");
            if ok {
                assert_eq!(q2.len(), before + 1);
                q2.fifo.pop();
            }
        }
    }

    #[test]
    fn derandomisation_never_drops_below_085_accumulated() {
        let params = PieParams { derandomize: true, ..Default::default() };
        let mut q = pie(&params);
        let mut rng = Rng::stream(5, "pie", 1);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..3 {
            q.enqueue(P::new(i, 1000), &mut cx);
        }
        q.vars.burst_allowance = 0.0;
        q.vars.drop_prob = 0.1;
        q.vars.qdelay_old = 1.0;
        // accumulated 0.1, 0.2, ... 0.8: admitted without a draw
        let mut shadow = cx.rng.clone();
        for i in 0..8 {
            assert!(q.enqueue(P::new(10 + i, 1000), &mut cx));
            q.fifo.pop();
        }
        assert_eq!(shadow.next_u64(), cx.rng.clone().next_u64(), "no random number drawn");
        // from 0.9 on, random with p = 0.1; the accumulator is reset by a drop
        let mut n = 0;
        while q.enqueue(P::new(50, 1000), &mut cx) {
            q.fifo.pop();
            n += 1;
            assert!(n < 100);
        }
        assert_eq!(q.vars.accu_prob, 0.0);
        // accumulated 8.5 forces a drop
        q.vars.accu_prob = 8.47;
        q.vars.drop_prob = 0.05;
        assert!(!q.enqueue(P::new(51, 1000), &mut cx));
    }

    #[test]
    fn delay_estimators() {
        let mut rng = Rng::stream(5, "pie", 2);
        let mut drops = Vec::new();
        for est in [QdelayEstimator::Head, QdelayEstimator::Departure] {
            let params = PieParams { qdelay_estimator: est, ..Default::default() };
            let mut q = pie(&params);
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            q.enqueue(P::new(1, 1000), &mut cx);
            cx.now = 10 * MS;
            q.enqueue(P::new(2, 1000), &mut cx);
            q.enqueue(P::new(3, 1000), &mut cx);
            cx.now = 20 * MS;
            q.dequeue(&mut cx); // leaves packets enqueued at 10 ms; departed one waited 20 ms
            cx.now = 30 * MS;
            let d = q.current_qdelay(cx.now);
            match est {
                QdelayEstimator::Head => assert!((d - 0.020).abs() < 1e-12),
                _ => assert!((d - 0.020).abs() < 1e-12),
            }
            cx.now = 35 * MS;
            let d2 = q.current_qdelay(cx.now);
            match est {
                QdelayEstimator::Head => assert!((d2 - 0.025).abs() < 1e-12, "head age grows"),
                _ => assert!((d2 - 0.020).abs() < 1e-12, "last departure's sojourn"),
            }
            while q.dequeue(&mut cx).is_some() {}
            assert_eq!(q.current_qdelay(cx.now), 0.0);
        }
        // rate: drain 16384 bytes in 16.384 ms (1 byte/us) -> delay = backlog / rate
        let params = PieParams { qdelay_estimator: QdelayEstimator::Rate, ..Default::default() };
        let mut q = pie(&params);
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..40 {
            q.enqueue(P::new(i, 1024), &mut cx);
        }
        let mut t = 0;
        for _ in 0..17 {
            t += 1_024_000; // 1024 bytes per 1.024 ms
            cx.now = t;
            q.dequeue(&mut cx);
        }
        // the measurement started at the first departure (backlog >= 16384 after it) and ended
        // after 16 more packets: 16 * 1.024 ms
        assert!((q.vars.avg_dq_time - 0.016384).abs() < 1e-9, "{}", q.vars.avg_dq_time);
        let d = q.current_qdelay(t);
        assert!((d - q.bytes() as f64 * 1e-6).abs() < 1e-9);
    }
}
