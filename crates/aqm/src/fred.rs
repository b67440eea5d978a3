//! FRED — Flow Random Early Drop (aqm.md §14, ambiguities A32, A37, A38).
//!
//! Reference: D. Lin, R. Morris, "Dynamics of Random Early Detection", ACM SIGCOMM 1997. Used by
//! [WARD] §3.4 as a baseline.
//!
//! RED with per-active-flow state: each flow with packets in the buffer has a backlog `qlen_i`
//! and a strike count. A flow whose backlog exceeds its share (`maxq`, or twice the average per
//! flow `avgcq` above `max_th`, or `avgcq` after repeated offences) is dropped deterministically
//! (`forced`) and struck; random early drops (`early`) hit only "robust" flows, those with at
//! least `max(min_q, avgcq)` packets queued; above `max_th` FRED drops every arrival (`forced`).
//!
//! Shared maths: the average and its idle aging are RED's [`Estimator`], the base probability is
//! RED's [`p_base`] and the uniformised test is RED's [`DropTest`] (aqm.md §1.4, §3).

use crate::fifo::Fifo;
use crate::red_math::{p_base, DropTest, Estimator, Region, Thresholds, Variant};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, QueueUnit, Scheme, Time, NS_PER_SEC};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// FRED parameters as written in a scenario (`aqm = { type = "fred", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FredParams {
    /// Lower threshold on `avg`, in the queue unit ([WARD]: 60).
    pub min_th: f64,
    /// Upper threshold on `avg` ([WARD]: 120).
    pub max_th: f64,
    /// Early-drop probability at `avg = max_th` (not given; Lin & Morris: 0.02).
    #[serde(default = "crate::defaults::fred::max_p")]
    pub max_p: f64,
    /// EWMA weight (not given; 0.002).
    #[serde(default = "crate::defaults::fred::w_q")]
    pub w_q: f64,
    /// Minimum per-flow backlog before random drops apply, in the queue unit (not given; 4).
    #[serde(default = "crate::defaults::fred::min_q")]
    pub min_q: f64,
    /// Typical packet size (bytes): the transmission time `s` of the idle aging, and in byte mode
    /// the size of the "packets" in FRED's constants (`maxq = 2`, `avgcq >= 1`).
    #[serde(default = "crate::defaults::fred::mean_pkt_size")]
    pub mean_pkt_size: u32,
    /// When arrivals refresh `avg` (A37): `idle_only` (Lin & Morris: only an arrival to an empty
    /// queue ages it) or `always` (every arrival updates it, as RED does).
    #[serde(default)]
    pub fred_avg_on_arrival: AvgOnArrival,
}

/// A37's switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AvgOnArrival {
    #[default]
    IdleOnly,
    Always,
}

impl FredParams {
    /// Parameters with the given thresholds and the defaults for everything else.
    pub fn with_thresholds(min_th: f64, max_th: f64) -> Self {
        crate::defaults::with(&[("min_th", min_th), ("max_th", max_th)])
    }
}

impl Params for FredParams {
    fn validate(&self) -> Result<(), ParamError> {
        crate::red_math::check_red(self.min_th, self.max_th, self.max_p, self.w_q)?;
        if !(self.min_q.is_finite() && self.min_q >= 0.0) {
            return Err(ParamError::new("min_q", format!("must be a number >= 0, got {}", self.min_q)));
        }
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        Ok(())
    }
}

/// Per-active-flow state (exists only while the flow has packets queued).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct FlowState {
    /// Backlog in the queue unit.
    qlen: u64,
    strike: u32,
}

/// FRED over one FIFO.
pub struct Fred<P> {
    fifo: Fifo<P>,
    limit: Limit,
    th: Thresholds,
    est: Estimator,
    test: DropTest,
    min_q: f64,
    /// One "packet" in the queue unit: 1, or `mean_pkt_size` bytes in byte mode.
    pkt_unit: f64,
    on_arrival: AvgOnArrival,
    flows: HashMap<u32, FlowState>,
    nactive: usize,
    /// Most flows with state at once (for `state_bytes`).
    peak_flows: usize,
    maxq: f64,
    avgcq: f64,
}

impl<P: Pkt> Fred<P> {
    pub fn new(params: &FredParams, link: LinkInfo, limit: Limit) -> Self {
        let s_ns = 8.0 * params.mean_pkt_size as f64 / link.rate_bps * NS_PER_SEC as f64;
        let pkt_unit = match limit.unit {
            QueueUnit::Packets => 1.0,
            QueueUnit::Bytes => params.mean_pkt_size as f64,
        };
        Fred {
            fifo: Fifo::default(),
            limit,
            th: Thresholds { min_th: params.min_th, max_th: params.max_th, max_p: params.max_p, gentle: false },
            est: Estimator::new(params.w_q, s_ns, false),
            test: DropTest::new(Variant::Fj93, true, false, params.mean_pkt_size as f64),
            min_q: params.min_q,
            pkt_unit,
            on_arrival: params.fred_avg_on_arrival,
            flows: HashMap::new(),
            nactive: 0,
            peak_flows: 0,
            maxq: params.min_th,
            avgcq: pkt_unit,
        }
    }

    /// The current average queue length.
    pub fn avg(&self) -> f64 {
        self.est.avg()
    }

    /// `Q` in the queue unit.
    #[inline]
    fn q(&self) -> u64 {
        self.limit.qlen(self.fifo.len(), self.fifo.bytes())
    }

    /// The `avgcq` line of `AVG_UPDATE`: average per active flow, floored at one packet (A32).
    #[inline]
    fn set_avgcq(&mut self) {
        let avg = self.est.avg();
        let per = if self.nactive > 0 { avg / self.nactive as f64 } else { avg };
        self.avgcq = per.max(self.pkt_unit);
    }

    /// `AVG_UPDATE(now, departing = false)` at an arrival that sees `Q = q`.
    #[inline]
    fn avg_update_arrival(&mut self, now: Time, q: u64) {
        if q > 0 {
            self.est.update(now, q as f64);
        } else {
            // (1 - w_q)^m aging over the idle period, no EWMA step
            self.est.age(now);
        }
        self.set_avgcq();
    }

    /// Forget a flow whose backlog is 0 (state exists only for flows with queued packets).
    #[inline]
    fn forget_if_idle(&mut self, flow: u32) {
        if self.flows.get(&flow).is_some_and(|s| s.qlen == 0) {
            self.flows.remove(&flow);
        }
    }
}

impl<P: Pkt> Scheme<P> for Fred<P> {
    type Params = FredParams;
    fn new(params: &FredParams, link: LinkInfo, limit: Limit) -> Self {
        Fred::new(params, link, limit)
    }
}

impl<P: Pkt> Qdisc<P> for Fred<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let flow = pkt.flow();
        let q = self.q();
        // 1. state for flow i
        let st = *self.flows.entry(flow).or_default();
        self.peak_flows = self.peak_flows.max(self.flows.len());
        let qlen_i = st.qlen as f64;
        // 2. refresh avg on arrival: only after idle (Lin & Morris), or always (A37)
        if q == 0 || self.on_arrival == AvgOnArrival::Always {
            self.avg_update_arrival(cx.now, q);
        }
        let avg = self.est.avg();
        // 3. per-flow limit
        self.maxq = if avg >= self.th.max_th { 2.0 * self.pkt_unit } else { self.th.min_th };
        // 4. non-adaptive flow management
        if qlen_i >= self.maxq
            || (avg >= self.th.max_th && qlen_i > 2.0 * self.avgcq)
            || (qlen_i >= self.avgcq && st.strike > 1)
        {
            self.flows.get_mut(&flow).expect("state").strike += 1;
            cx.drop(pkt, DropReason::Forced);
            return false;
        }
        // 5. RED with random drops only for robust flows; drop-tail mode above max_th
        let region = p_base(avg, &self.th);
        let verdict = match region {
            Region::Prob(_) if qlen_i < self.min_q.max(self.avgcq) => {
                self.test.count_untested();
                None
            }
            _ => self.test.decide(region, pkt.size(), self.fifo.len(), cx.rng),
        };
        if let Some(reason) = verdict {
            self.forget_if_idle(flow);
            cx.drop(pkt, reason);
            return false;
        }
        // 6. buffer
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            self.forget_if_idle(flow);
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        // 7. enqueue
        let s = self.flows.get_mut(&flow).expect("state");
        if s.qlen == 0 {
            self.nactive += 1;
        }
        s.qlen += self.limit.size_unit(pkt.size());
        self.fifo.push(pkt, cx.now);
        true
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let (pkt, enq) = self.fifo.pop()?;
        // AVG_UPDATE(now, departing = true) with Q after the departure
        let q = self.q();
        self.est.update(cx.now, q as f64);
        self.set_avgcq();
        let flow = pkt.flow();
        let s = self.flows.get_mut(&flow).expect("a queued packet's flow has state");
        s.qlen -= self.limit.size_unit(pkt.size());
        if s.qlen == 0 {
            self.nactive -= 1;
            self.flows.remove(&flow);
        }
        Some((pkt, enq))
    }

    fn len(&self) -> usize {
        self.fifo.len()
    }
    fn bytes(&self) -> u64 {
        self.fifo.bytes()
    }
    fn on_link_idle(&mut self, now: Time) {
        self.est.set_idle(now);
    }
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        self.fifo.for_each(f)
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["avg", "p", "avgcq", "nactive"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.est.avg();
        out[1] = self.test.last_p();
        out[2] = self.avgcq;
        out[3] = self.nactive as f64;
    }
    /// The per-flow table at its largest (flow id, backlog, strikes per flow with state).
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + self.peak_flows * std::mem::size_of::<(u32, FlowState)>()) as u64
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

    fn fred(p: &FredParams, b: u64) -> Fred<P> {
        Fred::new(p, link(), Limit::packets(b))
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(FredParams::with_thresholds(60.0, 120.0).validate().is_ok());
        assert_eq!(FredParams::with_thresholds(60.0, 60.0).validate().unwrap_err().field, "max_th");
        assert_eq!(FredParams::with_thresholds(-1.0, 60.0).validate().unwrap_err().field, "min_th");
        let mut p = FredParams::with_thresholds(60.0, 120.0);
        p.max_p = 0.0;
        assert_eq!(p.validate().unwrap_err().field, "max_p");
        p = FredParams::with_thresholds(60.0, 120.0);
        p.min_q = f64::NAN;
        assert_eq!(p.validate().unwrap_err().field, "min_q");
        p = FredParams::with_thresholds(60.0, 120.0);
        p.w_q = 0.0;
        assert_eq!(p.validate().unwrap_err().field, "w_q");
    }

    /// Below `min_th` a flow may hold up to `maxq = min_th` packets; the next one is a `forced`
    /// drop and a strike. Per-flow state exists only while the flow has packets queued.
    #[test]
    fn per_flow_limit_maxq_is_min_th_below_max_th() {
        let p = FredParams::with_thresholds(5.0, 10.0);
        let mut q = fred(&p, 100);
        let mut rng = Rng::stream(1, "fred", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..5 {
            assert!(q.enqueue(P::new(1, 1000), &mut cx));
        }
        assert_eq!(q.flows[&1], FlowState { qlen: 5, strike: 0 });
        assert_eq!(q.nactive, 1);
        // avg stays ~0 with w_q = 0.002: qlen_1 = 5 >= maxq = min_th = 5 -> forced
        assert!(!q.enqueue(P::new(1, 1000), &mut cx));
        assert_eq!(cx.drops.last().unwrap().reason, DropReason::Forced);
        assert_eq!(q.flows[&1].strike, 1);
        // another flow is not affected
        assert!(q.enqueue(P::new(2, 1000), &mut cx));
        assert_eq!(q.nactive, 2);
        // departures decrement and finally delete the state
        while q.dequeue(&mut cx).is_some() {}
        assert!(q.flows.is_empty());
        assert_eq!(q.nactive, 0);
    }

    /// Strike rule: a flow struck more than once is limited to `avgcq` packets (step 4, third
    /// clause), while a flow without strikes may go up to `maxq`.
    #[test]
    fn strike_rule_limits_repeat_offenders_to_avgcq() {
        let mut p = FredParams::with_thresholds(5.0, 50.0);
        p.w_q = 1.0; // avg = the queue seen at the last update: placed by hand below
        let mut q = fred(&p, 100);
        let mut rng = Rng::stream(1, "fred", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // flow 1 fills to maxq = 5 and is struck twice
        for _ in 0..5 {
            assert!(q.enqueue(P::new(1, 1000), &mut cx));
        }
        assert!(!q.enqueue(P::new(1, 1000), &mut cx));
        assert!(!q.enqueue(P::new(1, 1000), &mut cx));
        assert_eq!(q.flows[&1].strike, 2);
        // one departure: avg = Q after it = 4 (w_q = 1), nactive = 1 -> avgcq = 4
        q.dequeue(&mut cx);
        assert_eq!(q.avg(), 4.0);
        assert_eq!(q.avgcq, 4.0);
        // flow 1 holds 4 >= avgcq with strike 2 > 1: forced even though 4 < maxq = 5
        assert!(!q.enqueue(P::new(1, 1000), &mut cx));
        assert_eq!(cx.drops.last().unwrap().reason, DropReason::Forced);
        assert_eq!(q.flows[&1].strike, 3);
        // a flow with no strikes and fewer than avgcq packets is admitted
        assert!(q.enqueue(P::new(2, 1000), &mut cx));
        // once flow 1 drains, its state (and strikes) are gone
        while q.dequeue(&mut cx).is_some() {}
        assert!(!q.flows.contains_key(&1));
    }

    /// Above `max_th` FRED is in drop-tail mode: `maxq = 2`, and every arrival that passes the
    /// per-flow test is a `forced` drop with `count = 0`.
    #[test]
    fn above_max_th_drop_tail_mode_and_maxq_two() {
        let mut p = FredParams::with_thresholds(2.0, 4.0);
        p.w_q = 1.0;
        let mut q = fred(&p, 100);
        let mut rng = Rng::stream(1, "fred", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // fill with 6 flows of one packet each by hand, then one departure sets avg = 5
        for f in 0..6 {
            q.fifo.push(P::new(f, 1000), 0);
            q.flows.insert(f, FlowState { qlen: 1, strike: 0 });
            q.nactive += 1;
        }
        q.est.update(0, 6.0);
        q.dequeue(&mut cx);
        assert_eq!(q.avg(), 5.0);
        assert_eq!(q.avgcq, 1.0, "max(5 / 6 active flows, 1)");
        // arrival of flow 1 (1 queued): maxq = 2, 1 < 2, not > 2 avgcq: passes step 4; avg >= max_th
        assert!(!q.enqueue(P::new(1, 1000), &mut cx));
        assert_eq!(cx.drops.last().unwrap().reason, DropReason::Forced);
        assert_eq!(q.maxq, 2.0);
        assert_eq!(q.test.count(), 0);
        assert_eq!(q.flows[&1].strike, 0, "drop-tail mode does not strike");
        // a new flow's state is not kept after its arrival is dropped
        assert!(!q.enqueue(P::new(77, 1000), &mut cx));
        assert!(!q.flows.contains_key(&77));
    }

    /// Between the thresholds, `count` advances for every arrival but only robust flows (at least
    /// `max(min_q, avgcq)` queued) are tested, with RED's uniformised probability.
    #[test]
    fn random_drops_only_for_robust_flows_step_by_step() {
        let mut p = FredParams::with_thresholds(4.0, 8.0);
        p.w_q = 1.0;
        p.max_p = 0.5;
        p.min_q = 2.0;
        let mut q = fred(&p, 100);
        let mut rng = Rng::stream(3, "fred", 0);
        let mut shadow = rng.clone();
        let mut drops = Vec::new();
        // queue: flow 1 x3, flow 2 x1, flow 3 x3 ; after one departure of flow 3: Q = 6,
        // avg = 6, nactive = 3, avgcq = 2
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for f in [3, 1, 1, 1, 2, 3, 3] {
            q.fifo.push(P::new(f, 1000), 0);
            q.flows.entry(f).or_default().qlen += 1;
        }
        q.nactive = 3;
        q.dequeue(&mut cx);
        assert_eq!((q.avg(), q.avgcq), (6.0, 2.0));
        assert_eq!(q.test.count(), -1);
        // flow 2 has 1 < max(2, 2): not tested, count 0, no random number used
        assert!(q.enqueue(P::new(2, 1000), &mut cx));
        assert_eq!(q.test.count(), 0);
        assert_eq!(q.test.last_p(), 0.0);
        // flow 1 has 3 >= 2 (and 3 < maxq = min_th = 4): tested.
        // p_b = 0.5 (6 - 4) / (8 - 4) = 0.25, count = 1 -> p_a = 0.25 / (1 - 0.25) = 1/3
        let u = shadow.uniform();
        let ok = q.enqueue(P::new(1, 1000), &mut cx);
        assert!((q.test.last_p() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(ok, u >= 1.0 / 3.0);
        if !ok {
            assert_eq!(cx.drops.last().unwrap().reason, DropReason::Early);
            assert_eq!(q.test.count(), 0);
        } else {
            assert_eq!(q.test.count(), 1);
        }
    }

    /// A37: with `idle_only` an arrival to a non-empty queue does not move `avg`; with `always`
    /// it does. An arrival to an empty queue after the link went idle only ages `avg`.
    #[test]
    fn average_refresh_switch_and_idle_aging() {
        let mut rng = Rng::stream(1, "fred", 0);
        let mut drops = Vec::new();
        for mode in [AvgOnArrival::IdleOnly, AvgOnArrival::Always] {
            let mut p = FredParams::with_thresholds(50.0, 100.0);
            p.w_q = 0.5;
            p.fred_avg_on_arrival = mode;
            let mut q = fred(&p, 100);
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            q.enqueue(P::new(1, 1000), &mut cx); // Q = 0: aging only (avg stays 0)
            assert_eq!(q.avg(), 0.0);
            q.enqueue(P::new(1, 1000), &mut cx); // Q = 1
            q.enqueue(P::new(1, 1000), &mut cx); // Q = 2
            match mode {
                AvgOnArrival::IdleOnly => assert_eq!(q.avg(), 0.0),
                AvgOnArrival::Always => assert_eq!(q.avg(), 0.5 * (0.5 * 1.0) + 0.5 * 2.0),
            }
            // departures always update with Q after the departure
            let before = q.avg();
            q.dequeue(&mut cx);
            assert_eq!(q.avg(), 0.5 * before + 0.5 * 2.0);
            while q.dequeue(&mut cx).is_some() {}
            let a = q.avg();
            // link idle at 10 ms, arrival at 13 ms: 3 packet times of aging, no EWMA step
            q.on_link_idle(10_000_000);
            cx.now = 13_000_000;
            q.enqueue(P::new(1, 1000), &mut cx);
            assert!((q.avg() - a * 0.5f64.powi(3)).abs() < 1e-12);
        }
    }

    #[test]
    fn overflow_when_buffer_full() {
        let p = FredParams::with_thresholds(60.0, 120.0);
        let mut q = fred(&p, 3);
        let mut rng = Rng::stream(1, "fred", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for f in 0..5 {
            q.enqueue(P::new(f, 1000), &mut cx);
        }
        assert_eq!(q.len(), 3);
        assert_eq!(cx.drops.len(), 2);
        assert!(cx.drops.iter().all(|d| d.reason == DropReason::Overflow));
        assert_eq!(q.flows.len(), 3, "refused flows keep no state");
    }
}
