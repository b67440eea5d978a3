//! RED — Random Early Detection (aqm.md §3).
//!
//! Reference: S. Floyd, V. Jacobson, "Random Early Detection Gateways for Congestion Avoidance",
//! IEEE/ACM Transactions on Networking 1(4):397–413, 1993; "gentle" RED (Floyd, 2000).
//! The maths (average, base probability, uniformised test) is in [`crate::red_math`].

use crate::fifo::Fifo;
use crate::red_math::{p_base, DropTest, Estimator, Thresholds, Variant};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};
use serde::{Deserialize, Serialize};

/// RED parameters as written in a scenario (`aqm = { type = "red", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedParams {
    /// Lower threshold on the average, in the queue unit (packets by default).
    pub min_th: f64,
    /// Upper threshold on the average.
    pub max_th: f64,
    /// Drop probability at `avg = max_th`.
    #[serde(default = "crate::defaults::red::max_p")]
    pub max_p: f64,
    /// EWMA weight.
    #[serde(default = "crate::defaults::red::w_q")]
    pub w_q: f64,
    /// Linear ramp from `max_p` to 1 on `[max_th, 2 max_th)`.
    #[serde(default)]
    pub gentle: bool,
    /// `packet` or `byte`: in byte mode `p_b` is scaled by `size / max_pkt_size`.
    #[serde(default)]
    pub mode: RedMode,
    /// Normaliser for byte mode (bytes).
    #[serde(default = "crate::defaults::red::max_pkt_size")]
    pub max_pkt_size: u32,
    /// Typical packet size used for the idle-time correction `s = 8 mean_pkt_size / C` (bytes).
    #[serde(default = "crate::defaults::red::mean_pkt_size")]
    pub mean_pkt_size: u32,
    /// `fj93` (default) or `ns2` (A5).
    #[serde(default)]
    pub variant: RedVariant,
    /// Apply the count-based spreading of early drops.
    #[serde(default = "crate::defaults::red::uniformise")]
    pub uniformise: bool,
    /// When an idle period starts: `link_idle` (ns-2, default) or `queue_empty` (FJ93 text) (A6).
    #[serde(default)]
    pub idle_rule: IdleRule,
    /// Mark ECN-capable packets (CE) instead of early drops; forced and overflow drops stay drops
    /// (RFC 3168 §5, §7).
    #[serde(default)]
    pub ecn: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedMode {
    #[default]
    Packet,
    Byte,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedVariant {
    #[default]
    Fj93,
    Ns2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleRule {
    #[default]
    LinkIdle,
    QueueEmpty,
}

impl RedParams {
    /// Parameters with the given thresholds and the defaults for everything else.
    pub fn with_thresholds(min_th: f64, max_th: f64, max_p: f64) -> Self {
        crate::defaults::with(&[("min_th", min_th), ("max_th", max_th), ("max_p", max_p)])
    }

    /// Check every parameter; the error names the parameter and what is allowed.
    pub fn check(&self) -> Result<(), ParamError> {
        crate::red_math::check_red(self.min_th, self.max_th, self.max_p, self.w_q)?;
        crate::control::check_bytes("max_pkt_size", self.max_pkt_size)?;
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        Ok(())
    }

    pub fn thresholds(&self) -> Thresholds {
        Thresholds { min_th: self.min_th, max_th: self.max_th, max_p: self.max_p, gentle: self.gentle }
    }

    /// The RED stage (estimator + test) these parameters describe, for a link of rate `link`.
    pub fn stage(&self, link: LinkInfo) -> RedStage {
        let variant = match self.variant {
            RedVariant::Fj93 => Variant::Fj93,
            RedVariant::Ns2 => Variant::Ns2,
        };
        let s_ns = 8.0 * self.mean_pkt_size as f64 / link.rate_bps * NS_PER_SEC as f64;
        RedStage {
            th: self.thresholds(),
            est: Estimator::new(self.w_q, s_ns, variant == Variant::Ns2),
            test: DropTest::new(variant, self.uniformise, self.mode == RedMode::Byte, self.max_pkt_size as f64),
            idle_rule: self.idle_rule,
            ecn: self.ecn,
        }
    }
}

impl Params for RedParams {
    fn validate(&self) -> Result<(), ParamError> {
        self.check()
    }
}

/// The complete RED decision as used by RED itself and embedded in other schemes:
/// steps 1-6 of aqm.md §3.
#[derive(Debug, Clone)]
pub struct RedStage {
    pub th: Thresholds,
    pub est: Estimator,
    pub test: DropTest,
    pub idle_rule: IdleRule,
    /// Early drops become CE marks for ECN-capable packets.
    pub ecn: bool,
}

impl RedStage {
    /// Steps 1-6 for an arrival of `size` bytes that sees `qlen` (queue unit) and `qlen_pkts`
    /// waiting packets. Returns the drop reason if RED drops it.
    #[inline]
    pub fn on_arrival(
        &mut self,
        now: Time,
        qlen: f64,
        qlen_pkts: usize,
        size: u32,
        rng: &mut crate::rng::Rng,
    ) -> Option<DropReason> {
        let avg = self.est.update(now, qlen);
        let region = p_base(avg, &self.th);
        self.test.decide(region, size, qlen_pkts, rng)
    }

    /// Departure bookkeeping: the queue became empty at `now` (transmission start of its last packet).
    #[inline]
    pub fn on_queue_empty(&mut self, now: Time) {
        if self.idle_rule == IdleRule::QueueEmpty {
            self.est.set_idle(now);
        }
    }

    /// The link went idle at `now`.
    #[inline]
    pub fn on_link_idle(&mut self, now: Time) {
        if self.idle_rule == IdleRule::LinkIdle {
            self.est.set_idle(now);
        }
    }
}

/// RED over a FIFO.
pub struct Red<P> {
    fifo: Fifo<P>,
    stage: RedStage,
    limit: Limit,
}

impl<P: Pkt> Red<P> {
    pub fn new(params: RedParams, link: LinkInfo, limit: Limit) -> Self {
        Red { fifo: Fifo::default(), stage: params.stage(link), limit }
    }

    /// The current average queue length.
    pub fn avg(&self) -> f64 {
        self.stage.est.avg()
    }
}

impl<P: Pkt> Scheme<P> for Red<P> {
    type Params = RedParams;
    fn new(params: &RedParams, link: LinkInfo, limit: Limit) -> Self {
        Red::new(params.clone(), link, limit)
    }
}

crate::hint::hint_from!(Red, fifo.get);

impl<P: Pkt> Qdisc<P> for Red<P> {
    #[inline]
    fn enqueue(&mut self, mut pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let q = self.limit.qlen(self.fifo.len(), self.fifo.bytes());
        // steps 1-6 (an early drop is a CE mark instead with ECN)
        if let Some(reason) = self.stage.on_arrival(cx.now, q as f64, self.fifo.len(), pkt.size(), cx.rng) {
            let Some(marked) = cx.verdict(pkt, reason, self.stage.ecn) else {
                if self.fifo.is_empty() {
                    // the queue stays empty: its empty period restarts now (idle_rule = queue_empty)
                    self.stage.on_queue_empty(cx.now);
                }
                return false;
            };
            pkt = marked;
        }
        // step 7
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        // step 8
        self.fifo.push(pkt, cx.now);
        true
    }

    #[inline]
    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let e = self.fifo.pop();
        if e.is_some() && self.fifo.is_empty() {
            self.stage.on_queue_empty(cx.now);
        }
        e
    }

    crate::fifo::fifo_views!(fifo);
    fn on_link_idle(&mut self, now: Time) {
        self.stage.on_link_idle(now);
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["avg", "p"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.stage.est.avg();
        out[1] = self.stage.test.last_p();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    fn link() -> LinkInfo {
        LinkInfo { rate_bps: 8e6 } // 1 ms per 1000-byte packet
    }

    #[test]
    fn validation_names_the_parameter() {
        let mut p = RedParams::with_thresholds(80.0, 40.0, 0.1);
        assert_eq!(p.check().unwrap_err().field, "max_th");
        p = RedParams::with_thresholds(40.0, 80.0, 0.0);
        assert_eq!(p.check().unwrap_err().field, "max_p");
        p = RedParams::with_thresholds(40.0, 80.0, 0.1);
        p.w_q = 1.5;
        assert_eq!(p.check().unwrap_err().field, "w_q");
        assert!(RedParams::with_thresholds(40.0, 80.0, 0.1).check().is_ok());
    }

    #[test]
    fn step_by_step_with_a_fixed_stream() {
        // w_q = 1 makes avg equal to the instantaneous queue, so regions are easy to place.
        let mut p = RedParams::with_thresholds(2.0, 4.0, 0.5);
        p.w_q = 1.0;
        let mut q: Red<P> = Red::new(p, link(), Limit::packets(10));
        let mut rng = Rng::stream(1, "t", 0);
        let mut shadow = rng.clone();
        let mut drops = Vec::new();
        // two arrivals at q=0,1 -> NONE region, enqueued, no random draw used
        for i in 0..2 {
            let mut cx = Cx { now: i, rng: &mut rng, drops: &mut drops };
            assert!(q.enqueue(P::new(1, 1000), &mut cx));
        }
        assert_eq!(q.stage.test.count(), -1);
        // third arrival sees q=2 = min_th -> PROB with p_b = 0; count 0; one draw; no drop
        let mut cx = Cx { now: 2, rng: &mut rng, drops: &mut drops };
        assert!(q.enqueue(P::new(1, 1000), &mut cx));
        shadow.uniform();
        assert_eq!(q.stage.test.count(), 0);
        // fourth sees q=3: p_b = 0.25, count=1 -> p_a = 0.25/(1-0.25) = 1/3
        let u = shadow.uniform();
        let mut cx = Cx { now: 3, rng: &mut rng, drops: &mut drops };
        let admitted = q.enqueue(P::new(1, 1000), &mut cx);
        assert_eq!(admitted, u >= 1.0 / 3.0);
        assert!((q.stage.test.last_p() - 1.0 / 3.0).abs() < 1e-12);
        // fill to 4 and beyond: HARD region -> FORCED
        while q.len() < 4 {
            q.fifo.push(P::new(1, 1000), 0);
        }
        let mut cx = Cx { now: 4, rng: &mut rng, drops: &mut drops };
        assert!(!q.enqueue(P::new(2, 1000), &mut cx));
        assert_eq!(drops.last().unwrap().reason, DropReason::Forced);
        assert_eq!(q.stage.test.count(), 0);
    }

    #[test]
    fn overflow_when_buffer_full_below_thresholds() {
        let p = RedParams::with_thresholds(100.0, 200.0, 0.1);
        let mut q: Red<P> = Red::new(p, link(), Limit::packets(5));
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..7 {
            q.enqueue(P::new(1, 1000), &mut cx);
        }
        assert_eq!(q.len(), 5);
        assert_eq!(drops.len(), 2);
        assert!(drops.iter().all(|d| d.reason == DropReason::Overflow));
    }

    #[test]
    fn idle_decay_after_link_idle() {
        let mut p = RedParams::with_thresholds(100.0, 200.0, 0.1);
        p.w_q = 0.5;
        let mut q: Red<P> = Red::new(p, link(), Limit::packets(50));
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..4 {
            q.enqueue(P::new(1, 1000), &mut cx);
        }
        let before = q.avg();
        while q.dequeue(&mut cx).is_some() {}
        q.on_link_idle(1_000_000);
        // 3 packet times idle (3 ms at 1 ms per packet)
        let mut cx = Cx { now: 4_000_000, rng: &mut rng, drops: &mut drops };
        q.enqueue(P::new(1, 1000), &mut cx);
        let want = before * 0.5f64.powi(3) * 0.5;
        assert!((q.avg() - want).abs() < 1e-12, "{} vs {}", q.avg(), want);
    }
}
