//! BLUE (aqm.md §5, ambiguity A31).
//!
//! Reference: W. Feng, K. G. Shin, D. D. Kandlur, D. Saha, "The BLUE Active Queue Management
//! Algorithms", IEEE/ACM Transactions on Networking 10(4):513–528, 2002. Used as a baseline by
//! [CHOKeW].
//!
//! BLUE keeps one drop probability `p_m`, raised by `d1` on packet loss (buffer overflow, or
//! optionally the queue exceeding `L_blue`) and lowered by `d2` when the link goes idle, with at
//! most one change per `freeze_time`. Every arrival is dropped with probability `p_m`.

use crate::control::{check_period, check_range, early_signal, period_ns};
use crate::fifo::Fifo;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// BLUE parameters as written in a scenario (`aqm = { type = "blue", ... }`). Defaults are the
/// [CHOKeW] values (aqm.md §5, §18).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BlueParams {
    /// Mark ECN-capable packets (Congestion Experienced) instead of dropping them early (RFC 3168).
    #[serde(default)]
    pub ecn: bool,
    /// Increment of `p_m` on a loss event.
    #[serde(default = "crate::defaults::blue::d1")]
    pub d1: f64,
    /// Decrement of `p_m` on a link-idle event.
    #[serde(default = "crate::defaults::blue::d2")]
    pub d2: f64,
    /// Minimum time between two changes of `p_m`, in seconds (one clock for both, A31).
    #[serde(with = "crate::units::secs", default = "crate::defaults::blue::freeze_time")]
    pub freeze_time: f64,
    /// Optional queue threshold (queue unit): an admitted arrival that brings the queue above it
    /// is also a loss event. Absent = disabled.
    #[serde(default, rename = "L_blue", alias = "l_blue", skip_serializing_if = "Option::is_none")]
    pub l_blue: Option<f64>,
}

impl Default for BlueParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for BlueParams {
    fn validate(&self) -> Result<(), ParamError> {
        check_range("d1", self.d1, 0.0, 1.0)?;
        check_range("d2", self.d2, 0.0, 1.0)?;
        // freeze_time = 0 is allowed: every event changes p_m
        if self.freeze_time != 0.0 {
            check_period("freeze_time", self.freeze_time)?;
        }
        if let Some(l) = self.l_blue {
            if !(l.is_finite() && l >= 0.0) {
                return Err(ParamError::new("L_blue", format!("must be a number >= 0 in the queue unit, got {l}")));
            }
        }
        Ok(())
    }
}

/// BLUE over a FIFO.
pub struct Blue<P> {
    ecn: bool,
    fifo: Fifo<P>,
    limit: Limit,
    d1: f64,
    d2: f64,
    freeze_ns: Time,
    l_blue: Option<f64>,
    /// The drop probability.
    p_m: f64,
    /// Time of the last change of `p_m` (`None` = −∞).
    last_update: Option<Time>,
}

impl<P: Pkt> Blue<P> {
    pub fn new(params: &BlueParams, limit: Limit) -> Self {
        Blue {
            ecn: params.ecn,
            fifo: Fifo::default(),
            limit,
            d1: params.d1,
            d2: params.d2,
            freeze_ns: period_ns(params.freeze_time),
            l_blue: params.l_blue,
            p_m: 0.0,
            last_update: None,
        }
    }

    /// The current drop probability `p_m`.
    pub fn p_m(&self) -> f64 {
        self.p_m
    }

    /// More than `freeze_time` since the last change (strictly), or no change yet.
    #[inline]
    fn thawed(&self, now: Time) -> bool {
        match self.last_update {
            None => true,
            Some(t) => now.saturating_sub(t) > self.freeze_ns,
        }
    }

    /// `LOSS_EVENT(now)`.
    fn loss_event(&mut self, now: Time) {
        if self.thawed(now) {
            self.p_m = (self.p_m + self.d1).min(1.0);
            self.last_update = Some(now);
        }
    }
}

impl<P: Pkt> Scheme<P> for Blue<P> {
    type Params = BlueParams;
    fn new(params: &BlueParams, _link: LinkInfo, limit: Limit) -> Self {
        Blue::new(params, limit)
    }
}

crate::hint::hint_from!(Blue, fifo.get);

impl<P: Pkt> Qdisc<P> for Blue<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // 1. with probability p_m: early drop, or a CE mark with ECN (not a loss event, A31)
        let Some(pkt) = early_signal(self.p_m, pkt, self.ecn, cx) else { return false };
        // 2. buffer overflow: a loss event
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            self.loss_event(cx.now);
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        // 3. optional queue threshold
        if let Some(l) = self.l_blue {
            let after = self.limit.qlen(self.fifo.len(), self.fifo.bytes()) + self.limit.size_unit(pkt.size());
            if after as f64 > l {
                self.loss_event(cx.now);
            }
        }
        // 4.
        self.fifo.push(pkt, cx.now);
        true
    }

    crate::fifo::fifo_views!(fifo, pop);
    /// The transmitter finished a packet and the queue is empty: lower `p_m`.
    fn on_link_idle(&mut self, now: Time) {
        if self.thawed(now) {
            self.p_m = (self.p_m - self.d2).max(0.0);
            self.last_update = Some(now);
        }
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["p_m"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.p_m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;
    use crate::NS_PER_SEC;

    const MS: Time = NS_PER_SEC / 1000;

    fn offer(q: &mut Blue<P>, now: Time, rng: &mut Rng, drops: &mut Vec<crate::Dropped<P>>) -> bool {
        let mut cx = Cx { now, rng, drops };
        q.enqueue(P::new(1, 1000), &mut cx)
    }

    #[test]
    fn defaults_and_validation() {
        let p = BlueParams::default();
        assert_eq!((p.d1, p.d2, p.freeze_time, p.l_blue), (0.0025, 0.00025, 0.1, None));
        assert!(p.validate().is_ok());
        assert_eq!(BlueParams { d1: 1.5, ..p.clone() }.validate().unwrap_err().field, "d1");
        assert_eq!(BlueParams { d2: -0.1, ..p.clone() }.validate().unwrap_err().field, "d2");
        assert_eq!(BlueParams { freeze_time: -1.0, ..p.clone() }.validate().unwrap_err().field, "freeze_time");
        assert_eq!(BlueParams { l_blue: Some(f64::NAN), ..p.clone() }.validate().unwrap_err().field, "L_blue");
    }

    #[test]
    fn overflow_raises_p_m_once_per_freeze_time_and_early_drops_are_not_losses() {
        // d1 = 0.25, d2 = 0.125, freeze 100 ms, buffer 2
        let p = BlueParams { d1: 0.25, d2: 0.125, freeze_time: 0.1, l_blue: None, ecn: false };
        let mut q: Blue<P> = Blue::new(&p, Limit::packets(2));
        let mut rng = Rng::stream(1, "blue", 0);
        let mut shadow = rng.clone();
        let mut drops = Vec::new();
        // p_m = 0: no draw; two admitted, the third overflows -> loss event at t = 0 (first ever)
        assert!(offer(&mut q, 0, &mut rng, &mut drops));
        assert!(offer(&mut q, 0, &mut rng, &mut drops));
        assert!(!offer(&mut q, 0, &mut rng, &mut drops));
        assert_eq!(drops.last().unwrap().reason, DropReason::Overflow);
        assert_eq!(q.p_m(), 0.25);
        // further overflows within the freeze time do not change p_m (they now draw first)
        for now in [50 * MS, 100 * MS] {
            let u = shadow.uniform();
            let admitted = offer(&mut q, now, &mut rng, &mut drops);
            assert!(!admitted);
            let want = if u < 0.25 { DropReason::Early } else { DropReason::Overflow };
            assert_eq!(drops.last().unwrap().reason, want);
            assert_eq!(q.p_m(), 0.25, "t = {now}: exactly freeze_time is still frozen");
        }
        // an early drop is not a loss event: find the next arrival that is dropped early after
        // the freeze time and check p_m is unchanged
        let mut now = 101 * MS;
        loop {
            let u = shadow.uniform();
            offer(&mut q, now, &mut rng, &mut drops);
            if u < 0.25 {
                assert_eq!(drops.last().unwrap().reason, DropReason::Early);
                assert_eq!(q.p_m(), 0.25);
                now += 1;
            } else {
                // overflow after the freeze time: p_m rises to 0.5
                assert_eq!(drops.last().unwrap().reason, DropReason::Overflow);
                assert_eq!(q.p_m(), 0.5);
                break;
            }
        }
        // link idle 50 ms after the increase: frozen; 150 ms after: p_m - d2
        let mut cx = Cx { now, rng: &mut rng, drops: &mut drops };
        while q.dequeue(&mut cx).is_some() {}
        q.on_link_idle(now + 50 * MS);
        assert_eq!(q.p_m(), 0.5);
        q.on_link_idle(now + 150 * MS);
        assert_eq!(q.p_m(), 0.375);
        // the shared clock: an overflow 50 ms after the decrease does not raise p_m
        // (fill the buffer with p_m forced to 0 for a moment, then restore)
        q.p_m = 0.0;
        let t = now + 200 * MS;
        offer(&mut q, t, &mut rng, &mut drops);
        offer(&mut q, t, &mut rng, &mut drops);
        assert!(!offer(&mut q, t, &mut rng, &mut drops));
        assert_eq!(q.p_m(), 0.0);
    }

    #[test]
    fn p_m_is_clamped_to_0_and_1() {
        let p = BlueParams { d1: 0.7, d2: 0.7, freeze_time: 0.0, l_blue: None, ecn: false };
        let mut q: Blue<P> = Blue::new(&p, Limit::packets(1));
        let mut rng = Rng::stream(2, "blue", 0);
        let mut drops = Vec::new();
        q.on_link_idle(1);
        assert_eq!(q.p_m(), 0.0);
        offer(&mut q, 2, &mut rng, &mut drops);
        assert!(!offer(&mut q, 3, &mut rng, &mut drops)); // overflow: 0.7
        assert_eq!(q.p_m(), 0.7);
        q.p_m = 0.7;
        q.loss_event(4);
        assert_eq!(q.p_m(), 1.0);
        // p_m = 1 drops every arrival early without a draw
        let mut shadow = rng.clone();
        assert!(!offer(&mut q, 5, &mut rng, &mut drops));
        assert_eq!(drops.last().unwrap().reason, DropReason::Early);
        assert_eq!(rng.next_u64(), shadow.next_u64());
    }

    #[test]
    fn l_blue_threshold_is_a_loss_event_without_a_drop() {
        let p = BlueParams { d1: 0.1, d2: 0.01, freeze_time: 0.0, l_blue: Some(2.0), ecn: false };
        let mut q: Blue<P> = Blue::new(&p, Limit::packets(10));
        let mut rng = Rng::stream(3, "blue", 0);
        let mut drops = Vec::new();
        // queue after admission 1, 2: not above L_blue
        assert!(offer(&mut q, 0, &mut rng, &mut drops));
        assert!(offer(&mut q, 1, &mut rng, &mut drops));
        assert_eq!(q.p_m(), 0.0);
        // the third brings it to 3 > 2: loss event, packet admitted (if it passes the early test)
        assert!(offer(&mut q, 2, &mut rng, &mut drops));
        assert_eq!(q.p_m(), 0.1);
        assert_eq!(q.len(), 3);
        assert!(drops.is_empty());
    }
}
