//! CoDel — Controlled Delay (aqm.md §17.1). **Modern baseline, not from the papers.**
//!
//! Reference: K. Nichols, V. Jacobson, A. McGregor, J. Iyengar, "Controlled Delay Active Queue
//! Management", RFC 8289, January 2018.
//!
//! One FIFO; arrivals are refused only when the buffer is full (`overflow`); at dequeue the
//! control law of [`crate::codel_law`] drops head packets (`early`, aqm.md §1.3) once the sojourn
//! time has stayed above `target` for `interval`, at a rate that grows as the square root of the
//! number of drops.

use crate::codel_law::{codel_law_params, CodelVars, LawParams};
use crate::fifo::Fifo;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};

codel_law_params! {
    defaults = codel;
    /// CoDel parameters as written in a scenario (`aqm = { type = "codel", ... }`); RFC 8289's
    /// defaults (`target` 5 ms, §4.4; `interval` 100 ms, §4.5).
    pub struct CodelParams {
        /// Mark ECN-capable packets (Congestion Experienced) instead of dropping them early (RFC 3168).
        #[serde(default)]
        pub ecn: bool,
        /// `maxpacket`: a backlog of at most this many bytes (after the head is removed) is never
        /// "above target" (RFC 8289 §5.2: the MTU; aqm.md §17.1: 1000 B in these scenarios).
        #[serde(default = "crate::defaults::codel::maxpacket")]
        pub maxpacket: u32,
    }
}

impl CodelParams {
    /// The law's parameters in engine units.
    pub fn law(&self) -> LawParams {
        LawParams::from_secs(self.target, self.interval, self.maxpacket)
    }
}

impl Params for CodelParams {
    fn validate(&self) -> Result<(), ParamError> {
        LawParams::check(self.target, self.interval)
    }
}

/// CoDel over one FIFO.
pub struct Codel<P> {
    ecn: bool,
    fifo: Fifo<P>,
    limit: Limit,
    law: LawParams,
    vars: CodelVars,
}

impl<P: Pkt> Codel<P> {
    pub fn new(params: &CodelParams, limit: Limit) -> Self {
        Codel { ecn: params.ecn, fifo: Fifo::default(), limit, law: params.law(), vars: CodelVars::default() }
    }

    /// The control-law state (for tests and inspection).
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl<P: Pkt> Scheme<P> for Codel<P> {
    type Params = CodelParams;
    fn new(params: &CodelParams, _link: LinkInfo, limit: Limit) -> Self {
        Codel::new(params, limit)
    }
}

crate::hint::hint_from!(Codel, fifo.get);

impl<P: Pkt> Qdisc<P> for Codel<P> {
    #[inline]
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // §17.1 on_arrival: tail drop only
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        self.fifo.push(pkt, cx.now);
        true
    }

    #[inline]
    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let ecn = self.ecn;
        self.vars.dequeue(&self.law, cx.now, &mut self.fifo, &mut |p| cx.signal(p, ecn))
    }

    crate::fifo::fifo_views!(fifo);
    fn state_names(&self) -> &'static [&'static str] {
        &["dropping", "count", "sojourn_s", "first_above_s", "drop_next_s"]
    }
    fn state(&self, out: &mut [f64]) {
        let s = |t: Time| t as f64 / NS_PER_SEC as f64;
        out[0] = if self.vars.dropping { 1.0 } else { 0.0 };
        out[1] = self.vars.count as f64;
        out[2] = s(self.vars.last_sojourn);
        out[3] = s(self.vars.first_above_time);
        out[4] = s(self.vars.drop_next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codel_law::control_law;
    use crate::rng::Rng;
    use crate::test_util::P;

    const MS: Time = 1_000_000;

    #[test]
    fn validation_names_the_parameter() {
        let mut p = CodelParams::default();
        assert!(p.validate().is_ok());
        p.target = 0.0;
        assert_eq!(p.validate().unwrap_err().field, "target");
        p = CodelParams { interval: -1.0, ..Default::default() };
        assert_eq!(p.validate().unwrap_err().field, "interval");
        p = CodelParams { interval: f64::NAN, ..Default::default() };
        assert_eq!(p.validate().unwrap_err().field, "interval");
        let law = CodelParams::default().law();
        assert_eq!((law.target, law.interval, law.maxpacket), (5 * MS, 100 * MS, 1000));
    }

    #[test]
    fn tail_drop_only_at_arrival() {
        let mut q: Codel<P> = Codel::new(&CodelParams::default(), Limit::packets(3));
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..5 {
            assert_eq!(q.enqueue(P::new(i, 1000), &mut cx), i < 3);
        }
        assert_eq!(drops.len(), 2);
        assert!(drops.iter().all(|d| d.reason == DropReason::Overflow));
    }

    /// A link of 1 ms per packet fed two packets per millisecond (a standing queue that grows):
    /// step by step through RFC 8289's dequeue. Checks when first_above_time is armed, the first
    /// drop one interval later, entry into the dropping state with count 1, and the spacing of the
    /// following drops, interval / sqrt(count), on the 1 ms dequeue grid; dropped packets are
    /// reported as `early` and leave from the head.
    #[test]
    fn step_by_step_drops_follow_the_control_law() {
        let mut q: Codel<P> = Codel::new(&CodelParams::default(), Limit::packets(100_000));
        let mut rng = Rng::stream(1, "t", 0);
        let mut seq = 0u32;
        let mut drop_times: Vec<Time> = Vec::new();
        let mut armed_at = None;
        for ms in 0..1500u64 {
            let now = ms * MS;
            let mut drops = Vec::new();
            let mut cx = Cx { now, rng: &mut rng, drops: &mut drops };
            for _ in 0..2 {
                q.enqueue(P::new(seq, 1000), &mut cx);
                seq += 1;
            }
            let before = q.len();
            let out = q.dequeue(&mut cx);
            let (p, enq) = out.expect("backlogged");
            // dropped packets precede the transmitted one in FIFO order
            for d in drops.iter() {
                assert_eq!(d.reason, DropReason::Early);
                assert!(d.pkt.flow < p.flow);
                drop_times.push(now);
            }
            assert_eq!(q.len(), before - 1 - drops.len());
            // the sojourn of the first packet reaching 5 ms arms first_above_time
            if armed_at.is_none() && q.vars.first_above_time != 0 {
                armed_at = Some(now);
                assert!(now - enq >= 5 * MS);
                assert_eq!(q.vars.first_above_time, now + 100 * MS);
            }
        }
        let armed = armed_at.expect("sojourn went above target");
        assert_eq!(drop_times[0], armed + 100 * MS, "first drop one interval after going above");
        for k in 1..drop_times.len() {
            let gap = drop_times[k] - drop_times[k - 1];
            let law = control_law(0, 100 * MS, k as u32);
            assert!(gap + MS > law && gap <= law + MS, "gap {k} = {gap} ns, law {law} ns");
        }
        assert!(q.vars.dropping);
        assert_eq!(q.vars.count as usize, drop_times.len());
    }

    #[test]
    fn leaves_dropping_state_when_sojourn_falls_below_target() {
        let mut q: Codel<P> = Codel::new(&CodelParams::default(), Limit::packets(1000));
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        // 50 packets enqueued at t = 0, dequeued from t = 200 ms: above target from the start
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..50 {
            q.enqueue(P::new(i, 1000), &mut cx);
        }
        let mut cx = Cx { now: 200 * MS, rng: &mut rng, drops: &mut drops };
        q.dequeue(&mut cx);
        assert_eq!(q.vars.first_above_time, 300 * MS);
        let mut cx = Cx { now: 300 * MS, rng: &mut rng, drops: &mut drops };
        q.dequeue(&mut cx);
        assert!(q.vars.dropping);
        assert_eq!(drops.len(), 1);
        // fresh packets only: the next head has sojourn 0 < target -> leave the dropping state
        while q.len() > 0 {
            q.fifo.pop();
        }
        let mut cx = Cx { now: 301 * MS, rng: &mut rng, drops: &mut drops };
        for i in 0..5 {
            q.enqueue(P::new(100 + i, 1000), &mut cx);
        }
        q.dequeue(&mut cx);
        assert!(!q.vars.dropping);
        assert_eq!(q.vars.first_above_time, 0);
        assert_eq!(cx.drops.len(), 1);
        // the queue empties: dequeue returns None and the state stays reset
        while q.dequeue(&mut cx).is_some() {}
        assert_eq!(q.vars.first_above_time, 0);
    }
}
