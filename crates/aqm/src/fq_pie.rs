//! FQ-PIE — PIE per flow queue, as Linux's `fq_pie`. **Modern baseline, not from the papers.**
//!
//! References: Linux `net/sched/sch_fq_pie.c` (M. P. Tahiliani et al., 2019) over the PIE
//! functions of `net/sched/sch_pie.c` (`pie_drop_early`, `pie_process_dequeue`,
//! `pie_calculate_probability`); PIE itself is RFC 8033 (R. Pan et al., 2017), the flow queueing
//! and its DRR those of FQ-CoDel, RFC 8290 §4. Documentation: docs/aqm/fq_pie.md.
//!
//! Packets are hashed by flow into `flows` buckets, served by a deficit round robin with a *new*
//! list before an *old* one. Each bucket has its own PIE state: its delay estimate is the sojourn
//! time of the last packet it sent (timestamps, Linux's default without the departure-rate
//! estimator; 0 once it is empty), its drop probability is moved by the PI law every `t_update`
//! (RFC 8033 §4.2 with the auto-tuning of its gains, the 2 % cap, the extra 2 % above 250 ms
//! and the decay after two idle updates, as Linux), and arrivals are dropped or marked at enqueue
//! by Linux's de-randomised test (`pie_drop_early`: the accumulated probability must reach 0.85,
//! and drops for certain from 8.5), except during the bucket's burst allowance, while its delay
//! and probability are small, or while it holds less than two MTUs. This is unlike this
//! library's [`crate::pie`], which follows RFC 8033's pseudo-code for one queue.

use crate::control::{check_range, period_ns};
use crate::flow_queue::{EmptyNew, FlowHash, FlowQueues};
use crate::pi_law::{self, pi_law_params, BOOST_ABOVE};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};

pi_law_params! {
    defaults = fq_pie;
    /// FQ-PIE parameters as written in a scenario (`aqm = { type = "fq_pie", ... }`); Linux's
    /// defaults (`fq_pie_init`, `pie_params_init`: RFC 8033's controller values, `alpha = 2` and
    /// `beta = 20` in Linux's sixteenths being 0.125 and 1.25).
    pub struct FqPieParams {
        /// Mark ECN-capable packets instead of dropping them while the bucket's probability is at
        /// most `ecn_prob` (Linux: off).
        #[serde(default)]
        pub ecn: bool,
        /// With `ecn`: the largest probability at which packets are marked (Linux: 10 %).
        #[serde(default = "crate::defaults::fq_pie::ecn_prob")]
        pub ecn_prob: f64,
        /// Number of hash buckets (1024).
        #[serde(default = "crate::defaults::fq_pie::flows")]
        pub flows: u32,
        /// DRR quantum in bytes (Linux: the device's MTU with its link header, 1514).
        #[serde(default = "crate::defaults::fq_pie::quantum")]
        pub quantum: u32,
        /// Burst allowance of a bucket after it was reset, seconds (150 ms).
        #[serde(with = "crate::units::secs", default = "crate::defaults::fq_pie::max_burst")]
        pub max_burst: f64,
        /// Bytes: no early drop while the bucket holds less than two of these (Linux's `psched_mtu`).
        #[serde(default = "crate::defaults::fq_pie::mtu")]
        pub mtu: u32,
        /// Scale the probability by `size / mtu` for packets up to an MTU (Linux `bytemode`, off).
        #[serde(default)]
        pub bytemode: bool,
        /// Flow-to-bucket mapping, as FQ-CoDel's (`mod` or `mix`).
        #[serde(default)]
        pub hash: FlowHash,
    }
}

impl Params for FqPieParams {
    fn validate(&self) -> Result<(), ParamError> {
        check_range("ecn_prob", self.ecn_prob, 0.0, 1.0)?;
        crate::flow_queue::check(self.flows, 65536, self.quantum)?;
        self.law().check()?;
        check_range("max_burst", self.max_burst, 0.0, 1e6)?;
        crate::control::check_bytes("mtu", self.mtu)?;
        Ok(())
    }
}

/// One bucket's PIE state (Linux `pie_vars` in timestamp mode), times in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PieFlowVars {
    pub prob: f64,
    pub qdelay: Time,
    pub qdelay_old: Time,
    pub burst_time: Time,
    /// Time of the bucket's last departure, `None` after a reset.
    pub dq_tstamp: Option<Time>,
    pub accu_prob: f64,
}

impl PieFlowVars {
    fn reset(&mut self, burst: Time) {
        // Linux `pie_vars_init`: burst allowance, departure stamp and accumulator only
        self.burst_time = burst;
        self.dq_tstamp = None;
        self.accu_prob = 0.0;
    }
}

/// FQ-PIE: the flow queues of [`crate::flow_queue`], PIE's controller per bucket.
pub struct FqPie<P> {
    p: FqPieParams,
    fq: FlowQueues<P, PieFlowVars>,
    limit: Limit,
    target_ns: Time,
    t_update_ns: Time,
    burst_ns: Time,
}

impl<P: Pkt> FqPie<P> {
    pub fn new(params: &FqPieParams, limit: Limit) -> Self {
        let burst_ns = period_ns(params.max_burst);
        let mut vars = PieFlowVars::default();
        vars.reset(burst_ns);
        FqPie {
            fq: FlowQueues::new(params.flows, vars),
            limit,
            target_ns: period_ns(params.target),
            t_update_ns: params.law().period_ns(),
            burst_ns,
            p: params.clone(),
        }
    }

    /// A bucket's PIE state (for tests and traces).
    pub fn flow_vars(&self, flow: u32) -> &PieFlowVars {
        &self.fq.bucket(self.bucket_of(flow)).vars
    }

    #[inline]
    fn bucket_of(&self, flow: u32) -> usize {
        self.fq.bucket_of(flow, self.p.hash)
    }

    /// Linux `pie_drop_early` for bucket `i`, whose backlog is `backlog` bytes, and an arrival of
    /// `size` bytes.
    fn drop_early(&mut self, i: usize, size: u32, cx: &mut Cx<'_, P>) -> bool {
        let (target, mtu) = (self.target_ns, self.p.mtu);
        let b = self.fq.bucket_mut(i);
        let backlog = b.fifo.bytes();
        let v = &mut b.vars;
        if v.burst_time > 0 {
            return false;
        }
        // a short delay with a small probability, or less than two MTUs queued: no early drop
        if pi_law::uncongested(v.qdelay, target / 2, v.prob) {
            return false;
        }
        if backlog < 2 * mtu as u64 {
            return false;
        }
        let local = if self.p.bytemode && size <= mtu { v.prob * size as f64 / mtu as f64 } else { v.prob };
        match pi_law::derandomised(&mut v.accu_prob, local) {
            Some(drop) => drop,
            None if cx.rng.uniform() < local => {
                v.accu_prob = 0.0;
                true
            }
            None => false,
        }
    }

    /// Linux `pie_calculate_probability` for one bucket (timestamp mode).
    fn calculate(&mut self, i: usize) {
        let (target, burst) = (self.target_ns, self.burst_ns);
        let law = self.p.law();
        let b = self.fq.bucket_mut(i);
        let backlog = b.fifo.bytes();
        let v = &mut b.vars;
        let (qdelay, qdelay_old) = (v.qdelay, v.qdelay_old);
        let secs = |t: Time| t as f64 / NS_PER_SEC as f64;
        // a delay of 0 with a backlog means too little is queued to measure: no decay
        let measured = !(qdelay == 0 && backlog != 0);
        let boost = qdelay > period_ns(BOOST_ABOVE);
        let delta = law.autotuned_step(secs(qdelay), secs(target), secs(qdelay_old), v.prob, boost);
        let saturated;
        (v.prob, saturated) = pi_law::apply(v.prob, delta);
        if qdelay == 0 && qdelay_old == 0 && measured && !saturated {
            v.prob -= v.prob / 64.0;
        }
        v.qdelay = qdelay;
        if pi_law::calm(v.prob, qdelay, qdelay_old, target / 2) {
            v.reset(burst);
        }
        v.qdelay_old = qdelay;
    }

    /// Linux `pie_process_dequeue` in timestamp mode, after bucket `i` sent a packet that was
    /// enqueued at `enq`.
    fn on_departure(&mut self, i: usize, now: Time, enq: Time) {
        let b = self.fq.bucket_mut(i);
        let empty = b.fifo.is_empty();
        let v = &mut b.vars;
        v.qdelay = if empty { 0 } else { now.saturating_sub(enq) };
        let dtime = v.dq_tstamp.map_or(0, |t| now.saturating_sub(t));
        v.dq_tstamp = Some(now);
        if dtime > 0 {
            v.burst_time = v.burst_time.saturating_sub(dtime);
        }
    }
}

impl<P: Pkt> Scheme<P> for FqPie<P> {
    type Params = FqPieParams;
    fn new(params: &FqPieParams, _link: LinkInfo, limit: Limit) -> Self {
        FqPie::new(params, limit)
    }
}

impl<P: Pkt> Qdisc<P> for FqPie<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        self.fq.salt_from(cx.rng);
        let i = self.bucket_of(pkt.flow());
        if !self.limit.admits(self.fq.pkts, self.fq.bytes, pkt.size()) {
            self.fq.bucket_mut(i).vars.accu_prob = 0.0;
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        let mut pkt = pkt;
        if self.drop_early(i, pkt.size(), cx) {
            let v = &mut self.fq.bucket_mut(i).vars;
            let ecn = self.p.ecn && v.prob <= self.p.ecn_prob;
            match cx.signal(pkt, ecn) {
                Some(marked) => pkt = marked,
                None => {
                    v.accu_prob = 0.0;
                    return false;
                }
            }
        }
        self.fq.push(i, pkt, cx.now, self.p.quantum as i64);
        true
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        loop {
            let (i, from_new) = self.fq.next_bucket(self.p.quantum as i64)?;
            match self.fq.pop(i) {
                Some((p, enq)) => {
                    self.fq.bucket_mut(i).deficit -= p.size() as i64;
                    self.on_departure(i, cx.now, enq);
                    return Some((p, enq));
                }
                // empty: from the new list it passes through the old list once if that is not
                // empty (so that it cannot starve it), else it leaves
                None => self.fq.retire(i, from_new, EmptyNew::ToOldIfAny),
            }
        }
    }

    crate::flow_queue::fq_views!(fq);
    fn timer_period(&self) -> Option<Time> {
        Some(self.t_update_ns)
    }
    /// Every bucket's probability, empty or not (Linux's timer walks them all).
    fn on_timer(&mut self, _cx: &mut Cx<'_, P>) {
        for i in 0..self.p.flows as usize {
            self.calculate(i);
        }
    }
    /// Every bucket (PIE state, deficit, list) and the two lists' entries.
    fn state_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64 + self.fq.table_bytes()
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["new_flows", "old_flows", "max_prob"]
    }
    fn state(&self, out: &mut [f64]) {
        let (new, old) = self.fq.active();
        out[0] = new as f64;
        out[1] = old as f64;
        out[2] = self.fq.buckets().map(|b| b.vars.prob).fold(0.0, f64::max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    const MS: Time = 1_000_000;

    fn fq(limit: u64) -> FqPie<P> {
        let mut q = FqPie::new(&FqPieParams::default(), Limit::packets(limit));
        q.fq.set_salt(0);
        q
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(FqPieParams::default().validate().is_ok());
        let bad = |f: fn(&mut FqPieParams)| {
            let mut p = FqPieParams::default();
            f(&mut p);
            p.validate().unwrap_err().field
        };
        assert_eq!(bad(|p| p.flows = 0), "flows");
        assert_eq!(bad(|p| p.ecn_prob = 2.0), "ecn_prob");
        assert_eq!(bad(|p| p.quantum = 0), "quantum");
        assert_eq!(bad(|p| p.target = 0.0), "target");
        assert_eq!(bad(|p| p.mtu = 0), "mtu");
    }

    #[test]
    fn probability_law_per_bucket_as_linux() {
        let mut q = fq(1000);
        let p = FqPieParams::default();
        // bucket 3 saw a 40 ms sojourn; bucket 4 nothing
        q.fq.bucket_mut(3).vars.qdelay = 40 * MS;
        q.calculate(3);
        let want = (p.alpha * (0.040 - 0.015) + p.beta * 0.040) / 2048.0;
        assert!((q.fq.bucket_mut(3).vars.prob - want).abs() < 1e-15);
        assert_eq!(q.fq.bucket_mut(3).vars.qdelay_old, 40 * MS);
        q.calculate(4);
        assert_eq!(q.fq.bucket_mut(4).vars.prob, 0.0);
        // above 250 ms: +2 % on top, and the increase is capped at 2 % from 10 % on
        q.fq.bucket_mut(3).vars.prob = 0.3;
        q.fq.bucket_mut(3).vars.qdelay = 300 * MS;
        q.calculate(3);
        assert!((q.fq.bucket_mut(3).vars.prob - 0.34).abs() < 1e-12);
        // two idle updates: decay by 1/64
        q.fq.bucket_mut(3).vars.prob = 0.5;
        q.fq.bucket_mut(3).vars.qdelay = 0;
        q.fq.bucket_mut(3).vars.qdelay_old = 0;
        q.calculate(3);
        let want = (0.5 + p.alpha * (0.0 - 0.015)) * (1.0 - 1.0 / 64.0);
        assert!((q.fq.bucket_mut(3).vars.prob - want).abs() < 1e-12);
    }

    #[test]
    fn burst_allowance_then_derandomised_drops_of_the_congested_bucket_only() {
        let mut q = fq(10_000);
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // flow 1 is congested, flow 2 is not
        for _ in 0..10 {
            q.enqueue(P::new(1, 1000), &mut cx);
        }
        q.enqueue(P::new(2, 1000), &mut cx);
        let b1 = q.bucket_of(1);
        q.fq.bucket_mut(b1).vars.prob = 0.5;
        q.fq.bucket_mut(b1).vars.qdelay = 100 * MS;
        // the burst allowance protects it
        assert!(q.enqueue(P::new(1, 1000), &mut cx));
        q.fq.bucket_mut(b1).vars.burst_time = 0;
        // accumulated probability below 0.85: no drop; the second arrival brings it to 1.0
        assert!(q.enqueue(P::new(1, 1000), &mut cx));
        let mut dropped = 0;
        for _ in 0..1000 {
            if !q.enqueue(P::new(1, 1000), &mut cx) {
                dropped += 1;
            }
        }
        // after each drop the accumulator restarts at 0: one arrival at 0.5 passes, then each
        // arrival is dropped with 0.5 — one drop per 1 + 2 arrivals on average
        assert!((300..=370).contains(&dropped), "{dropped}");
        // flow 2's bucket has probability 0
        for _ in 0..100 {
            assert!(q.enqueue(P::new(2, 1000), &mut cx));
        }
    }

    #[test]
    fn departures_measure_the_sojourn_and_spend_the_burst_allowance() {
        let mut q = fq(100);
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        q.enqueue(P::new(1, 1000), &mut cx);
        q.enqueue(P::new(1, 1000), &mut cx);
        cx.now = 5 * MS;
        q.dequeue(&mut cx).unwrap();
        let b = q.bucket_of(1);
        assert_eq!(q.fq.bucket_mut(b).vars.qdelay, 5 * MS);
        assert_eq!(q.fq.bucket_mut(b).vars.burst_time, 150 * MS); // first departure: no interval yet
        cx.now = 25 * MS;
        q.dequeue(&mut cx).unwrap();
        assert_eq!(q.fq.bucket_mut(b).vars.qdelay, 0, "empty after it: 0");
        assert_eq!(q.fq.bucket_mut(b).vars.burst_time, 130 * MS);
    }

    #[test]
    fn drr_serves_flows_in_turn() {
        let mut q = fq(1000);
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..4 {
            q.enqueue(P::new(1, 1000), &mut cx);
            q.enqueue(P::new(2, 1000), &mut cx);
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(&mut cx).map(|(p, _)| p.flow)).collect();
        // quantum 1514: two 1000-byte packets per turn, then the other flow
        assert_eq!(order, vec![1, 1, 2, 2, 1, 1, 2, 2]);
    }
}
