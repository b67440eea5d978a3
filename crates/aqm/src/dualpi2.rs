//! DualPI2 — the Coupled Dual-Queue AQM of L4S. **Modern baseline, not from the papers.**
//!
//! References: K. De Schepper, B. Briscoe, G. White, "Dual-Queue Coupled Active Queue Management
//! (AQM) for Low Latency, Low Loss, and Scalable Throughput (L4S)", RFC 9332, January 2023
//! (§2.1 the coupling, §2.4 the scheduler, Appendix A the DualPI2 example); defaults and
//! structure as Linux's `net/sched/sch_dualpi2.c` (6.17). Documentation: docs/aqm/dualpi2.md.
//!
//! Two FIFOs share the buffer: the L queue for packets carrying the L4S identifier (ECT(1) or
//! CE, RFC 9331 §5.1: [`Pkt::l4s`]), the C queue for everything else. One PI controller, updated
//! every `t_update` from the larger of the two queues' head sojourn times, drives a base
//! probability `p'`: the C queue drops or marks with `p_C = p'²` (two independent rolls), the L
//! queue marks with `p_CL = k·p'` (the coupling, RFC 9332 §2.1, `k = coupling`), and on
//! top of that with a step at `step_thresh` of its own sojourn time (the native L4S AQM,
//! RFC 9332 §2.5.1.1). A weighted round robin in bytes (`c_protection`% for the C queue) keeps
//! either queue from starving the other (RFC 9332 §4.2.2); the L queue is served first while the
//! credit allows. Decisions happen at dequeue (Linux's `drop_early = false`); with fewer than two
//! MTUs queued nothing is marked or dropped. Above `p_CL = 1` the AQM is *overloaded*: L4S
//! packets also see the classic drop `p'²` (`drop_overload`, Linux's default) and are marked
//! otherwise.

use crate::control::{check_period, check_range, period_ns};
use crate::fifo::Fifo;
use crate::pi_law::{self, pi_law_params};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};

pi_law_params! {
    defaults = dualpi2;
    /// DualPI2 parameters as written in a scenario (`aqm = { type = "dualpi2", ... }`); Linux's
    /// defaults (`dualpi2_reset_default`: `target` 15 ms, `t_update` 16 ms, `alpha` 41/256 ≈ 0.16
    /// Hz, `beta` 819/256 ≈ 3.2 Hz).
    pub struct DualPi2Params {
        /// Coupling factor `k` of `p_CL = k·p'` (RFC 9332 §2.1: 2).
        #[serde(default = "crate::defaults::dualpi2::coupling")]
        pub coupling: f64,
        /// Sojourn time in the L queue above which every L4S packet is marked, seconds (1 ms).
        #[serde(with = "crate::units::secs", default = "crate::defaults::dualpi2::step_thresh")]
        pub step_thresh: f64,
        /// The step applies only while the L queue holds at least this many packets (0).
        #[serde(default)]
        pub min_qlen_step: u32,
        /// Weight of the C queue in the scheduler, percent (10; the L queue gets the rest).
        #[serde(default = "crate::defaults::dualpi2::c_protection")]
        pub c_protection: u32,
        /// On overload, drop L4S packets with the classic probability (true) or only mark them.
        #[serde(default = "crate::defaults::dualpi2::drop_overload")]
        pub drop_overload: bool,
        /// Decide at enqueue (true) instead of at dequeue (false, Linux's default).
        #[serde(default)]
        pub drop_early: bool,
        /// MTU in bytes: no mark or drop with less than two queued, and the scheduler's credit unit
        /// (Linux's `psched_mtu`: 1500 + 14).
        #[serde(default = "crate::defaults::dualpi2::mtu")]
        pub mtu: u32,
    }
}

impl Params for DualPi2Params {
    fn validate(&self) -> Result<(), ParamError> {
        self.law().check()?;
        check_range("coupling", self.coupling, 1.0, 255.0)?;
        check_period("step_thresh", self.step_thresh)?;
        if self.c_protection > 100 {
            return Err(ParamError::new(
                "c_protection",
                format!("must be a percentage 0..100, got {}", self.c_protection),
            ));
        }
        crate::control::check_bytes("mtu", self.mtu)?;
        Ok(())
    }
}

/// A packet in the L queue, with whether the step applies to it (decided at enqueue, as Linux).
#[derive(Clone, Copy)]
struct LPkt<P> {
    pkt: P,
    step: bool,
}

/// The controller and scheduler state.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DualPi2Vars {
    /// The base probability `p'` in [0, 1].
    pub p: f64,
    /// The delay of the last update (s).
    pub last_qdelay: f64,
    /// WRR credit in bytes·percent: ≤ 0 serves the L queue first.
    pub credit: i64,
}

/// DualPI2 over an L queue and a C queue.
pub struct DualPi2<P> {
    p: DualPi2Params,
    l: std::collections::VecDeque<(LPkt<P>, Time)>,
    l_bytes: u64,
    c: Fifo<P>,
    limit: Limit,
    t_update_ns: Time,
    credit_init: i64,
    vars: DualPi2Vars,
}

impl<P: Pkt> DualPi2<P> {
    pub fn new(params: &DualPi2Params, limit: Limit) -> Self {
        let wc = params.c_protection as i64;
        let credit_init = params.mtu as i64 * (wc - (100 - wc));
        DualPi2 {
            p: params.clone(),
            l: Default::default(),
            l_bytes: 0,
            c: Fifo::default(),
            limit,
            t_update_ns: params.law().period_ns(),
            credit_init,
            vars: DualPi2Vars { credit: credit_init, ..Default::default() },
        }
    }

    pub fn vars(&self) -> &DualPi2Vars {
        &self.vars
    }

    /// Packets in the L and C queues.
    pub fn lens(&self) -> (usize, usize) {
        (self.l.len(), self.c.len())
    }

    fn pkts(&self) -> usize {
        self.l.len() + self.c.len()
    }

    fn backlog(&self) -> u64 {
        self.l_bytes + self.c.bytes()
    }

    /// The PI update (RFC 9332 Appendix A.2 `dualpi2_update`, Linux `calculate_probability`):
    /// `p' += alpha·(qdelay − target) + beta·(qdelay − qdelay_old)`, clamped to [0, 1], with
    /// `qdelay` the larger of the two queues' head sojourn times at `now`.
    pub fn update(&mut self, now: Time) {
        let head = |t: Option<Time>| t.map_or(0.0, |t| now.saturating_sub(t) as f64 / NS_PER_SEC as f64);
        let qdelay = head(self.l.front().map(|e| e.1)).max(head(self.c.iter().next().map(|e| e.1)));
        let v = &mut self.vars;
        let delta = self.p.law().step(qdelay, self.p.target, v.last_qdelay);
        v.last_qdelay = qdelay;
        v.p = pi_law::apply(v.p, delta).0;
        if !self.p.drop_overload {
            // keep p_CL at most 1 (window fairness on overflow)
            v.p = v.p.min(1.0 / self.p.coupling);
        }
    }

    /// "Must this packet be dropped?" — marking it instead where ECN allows (Linux `must_drop`).
    /// `backlog` is the qdisc's backlog without the packet.
    fn must_drop(&mut self, pkt: &mut P, l4s: bool, backlog: u64, cx: &mut Cx<'_, P>) -> bool {
        if backlog < 2 * self.p.mtu as u64 {
            return false;
        }
        let p = self.vars.p;
        let pl = p * self.p.coupling;
        let overload = pl > 1.0;
        let mut roll = |q: f64| cx.rng.uniform() < q;
        if !l4s {
            // the square of p', as two independent rolls (RFC 9332 §2.1 "think once to mark")
            if roll(p) && roll(p) {
                if overload || !pkt.ecn_capable() {
                    return true;
                }
                pkt.mark_ce();
            }
            return false;
        }
        if overload {
            if self.p.drop_overload && roll(p) && roll(p) {
                return true;
            }
            pkt.mark_ce();
            return false;
        }
        if roll(pl) {
            if !pkt.ecn_capable() {
                return true;
            }
            pkt.mark_ce();
        }
        false
    }

    /// The next packet by the weighted round robin, with its queue and the credit change.
    fn pick(&mut self) -> Option<(P, Time, bool, bool, i64)> {
        let (wc, wl) = (self.p.c_protection as i64, 100 - self.p.c_protection as i64);
        let c_len = self.c.len();
        if !self.l.is_empty() && (c_len == 0 || self.vars.credit <= 0) {
            let (lp, t) = self.l.pop_front().expect("L queue holds packets");
            self.l_bytes -= lp.pkt.size() as u64;
            let change = if c_len > 0 { wc * lp.pkt.size() as i64 } else { 0 };
            Some((lp.pkt, t, true, lp.step, change))
        } else if let Some((pkt, t)) = self.c.pop() {
            let change = if !self.l.is_empty() { -wl * pkt.size() as i64 } else { 0 };
            Some((pkt, t, false, false, change))
        } else {
            self.vars.credit = self.credit_init;
            None
        }
    }
}

impl<P: Pkt> Scheme<P> for DualPi2<P> {
    type Params = DualPi2Params;
    fn new(params: &DualPi2Params, _link: LinkInfo, limit: Limit) -> Self {
        DualPi2::new(params, limit)
    }
}

impl<P: Pkt> Qdisc<P> for DualPi2<P> {
    fn enqueue(&mut self, mut pkt: P, cx: &mut Cx<'_, P>) -> bool {
        if !self.limit.admits(self.pkts(), self.backlog(), pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        let l4s = pkt.l4s();
        if self.p.drop_early {
            let backlog = self.backlog();
            if self.must_drop(&mut pkt, l4s, backlog, cx) {
                cx.drop(pkt, DropReason::Early);
                return false;
            }
        }
        if l4s {
            let step = self.l.len() as u32 >= self.p.min_qlen_step;
            self.l_bytes += pkt.size() as u64;
            self.l.push_back((LPkt { pkt, step }, cx.now));
        } else {
            self.c.push(pkt, cx.now);
        }
        true
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let step_ns = period_ns(self.p.step_thresh);
        while let Some((mut pkt, enq, from_l, step, change)) = self.pick() {
            if !self.p.drop_early {
                let backlog = self.backlog();
                if self.must_drop(&mut pkt, from_l, backlog, cx) {
                    cx.drop(pkt, DropReason::Early);
                    continue;
                }
            }
            if from_l && step && cx.now.saturating_sub(enq) > step_ns {
                // the L queue's native step AQM: mark, or drop a packet that cannot be marked
                if !pkt.ecn_capable() {
                    cx.drop(pkt, DropReason::Early);
                    continue;
                }
                pkt.mark_ce();
            }
            self.vars.credit += change;
            return Some((pkt, enq));
        }
        None
    }

    fn len(&self) -> usize {
        self.pkts()
    }
    fn bytes(&self) -> u64 {
        self.backlog()
    }
    /// Order: the L queue, then the C queue, each from head to tail.
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        for (lp, t) in &self.l {
            f(&lp.pkt, *t);
        }
        self.c.for_each(f);
    }
    fn timer_period(&self) -> Option<Time> {
        Some(self.t_update_ns)
    }
    fn on_timer(&mut self, cx: &mut Cx<'_, P>) {
        self.update(cx.now);
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["p", "p_c", "p_l", "qdelay_s", "l_len", "c_len"]
    }
    fn state(&self, out: &mut [f64]) {
        let p = self.vars.p;
        out[0] = p;
        out[1] = p * p;
        out[2] = (p * self.p.coupling).min(1.0);
        out[3] = self.vars.last_qdelay;
        out[4] = self.l.len() as f64;
        out[5] = self.c.len() as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    const MS: Time = 1_000_000;

    fn l4s(flow: u32) -> P {
        P { ect: true, ect1: true, ..P::new(flow, 1000) }
    }
    fn classic(flow: u32) -> P {
        P::new(flow, 1000)
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(DualPi2Params::default().validate().is_ok());
        let bad = |f: fn(&mut DualPi2Params)| {
            let mut p = DualPi2Params::default();
            f(&mut p);
            p.validate().unwrap_err().field
        };
        assert_eq!(bad(|p| p.target = 0.0), "target");
        assert_eq!(bad(|p| p.coupling = 0.5), "coupling");
        assert_eq!(bad(|p| p.c_protection = 101), "c_protection");
        assert_eq!(bad(|p| p.mtu = 0), "mtu");
    }

    #[test]
    fn l4s_packets_take_the_l_queue_and_are_served_first() {
        let mut q = DualPi2::new(&DualPi2Params::default(), Limit::packets(100));
        let (mut rng, mut drops) = (Rng::stream(1, "t", 0), Vec::new());
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..3 {
            assert!(q.enqueue(classic(i), &mut cx));
            assert!(q.enqueue(l4s(10 + i), &mut cx));
        }
        assert_eq!(q.lens(), (3, 3));
        // credit starts at mtu·(10 − 90) < 0: L first; each L departure while C waits adds
        // 10·1000, so the L queue keeps priority for its three packets
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(&mut cx).map(|(p, _)| p.flow)).collect();
        assert_eq!(order, vec![10, 11, 12, 0, 1, 2]);
    }

    #[test]
    fn wrr_gives_the_classic_queue_its_weight_under_contention() {
        let mut q = DualPi2::new(&DualPi2Params::default(), Limit::packets(10_000));
        let (mut rng, mut drops) = (Rng::stream(1, "t", 0), Vec::new());
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..2000 {
            q.enqueue(classic(i), &mut cx);
            q.enqueue(l4s(i), &mut cx);
        }
        let mut c = 0;
        for _ in 0..1000 {
            let (p, _) = q.dequeue(&mut cx).unwrap();
            if !p.ect1 {
                c += 1;
            }
        }
        // 10 % of the bytes for the C queue while both are backlogged
        assert!((95..=105).contains(&c), "{c}");
    }

    #[test]
    fn pi_update_follows_the_formula_and_clamps() {
        let params = DualPi2Params::default();
        let mut q = DualPi2::new(&params, Limit::packets(100));
        let (mut rng, mut drops) = (Rng::stream(1, "t", 0), Vec::new());
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        q.enqueue(classic(1), &mut cx);
        q.update(40 * MS); // head has waited 40 ms
        let want = params.alpha * (0.040 - 0.015) + params.beta * 0.040;
        assert!((q.vars.p - want).abs() < 1e-12);
        q.update(41 * MS);
        let want2 = want + params.alpha * (0.041 - 0.015) + params.beta * 0.001;
        assert!((q.vars.p - want2).abs() < 1e-12);
        // empty queues pull it down, to zero at most
        q.dequeue(&mut cx);
        for k in 0..100 {
            q.update((42 + k) * MS);
        }
        assert_eq!(q.vars.p, 0.0);
    }

    #[test]
    fn coupled_probabilities_classic_squared_l4s_linear() {
        let mut q = DualPi2::new(&DualPi2Params::default(), Limit::packets(100_000));
        q.vars.p = 0.2;
        let (mut rng, mut drops) = (Rng::stream(7, "t", 0), Vec::new());
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        let n = 20_000u32;
        let (mut c_sig, mut l_sig) = (0, 0);
        for i in 0..n {
            // ECN-capable classic packets (ECT(0)) are marked with p'^2, L4S ones with k p'
            let mut c = classic(i);
            c.ect = true;
            q.enqueue(c, &mut cx);
            q.enqueue(l4s(i), &mut cx);
        }
        while let Some((p, _)) = q.dequeue(&mut cx) {
            if p.ce && p.ect1 {
                l_sig += 1;
            } else if p.ce {
                c_sig += 1;
            }
        }
        let (pc, pl) = (c_sig as f64 / n as f64, l_sig as f64 / n as f64);
        assert!((pc - 0.04).abs() < 0.006, "p_C {pc}");
        // (no packet waits: the step never marks here)
        assert!((pl - 0.4).abs() < 0.02, "p_L {pl}");
        assert!(cx.drops.is_empty());
    }

    #[test]
    fn step_marks_l4s_packets_that_waited_over_the_threshold() {
        let mut q = DualPi2::new(&DualPi2Params::default(), Limit::packets(100));
        let (mut rng, mut drops) = (Rng::stream(1, "t", 0), Vec::new());
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        q.enqueue(l4s(1), &mut cx);
        q.enqueue(l4s(2), &mut cx);
        cx.now = MS / 2;
        assert!(!q.dequeue(&mut cx).unwrap().0.ce);
        cx.now = 2 * MS;
        assert!(q.dequeue(&mut cx).unwrap().0.ce);
        // a non-ECN packet in the L queue (not possible by classification, but by the contract)
        // would be dropped instead: the C queue has no step
        q.enqueue(classic(3), &mut cx);
        cx.now = 10 * MS;
        assert!(!q.dequeue(&mut cx).unwrap().0.ce);
    }

    #[test]
    fn overload_drops_l4s_with_the_classic_probability() {
        let mut q = DualPi2::new(&DualPi2Params::default(), Limit::packets(100_000));
        q.vars.p = 0.9; // k·p' = 1.8 > 1
        let (mut rng, mut drops) = (Rng::stream(3, "t", 0), Vec::new());
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..10_000 {
            q.enqueue(l4s(i), &mut cx);
        }
        while q.dequeue(&mut cx).is_some() {}
        let frac = cx.drops.len() as f64 / 10_000.0;
        assert!((frac - 0.81).abs() < 0.02, "{frac}");
    }
}
