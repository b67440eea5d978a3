//! RIO — RED with In and Out (aqm.md §4, ambiguity A7).
//!
//! Reference: D. D. Clark, W. Fang, "Explicit Allocation of Best-Effort Packet Delivery Service",
//! IEEE/ACM Transactions on Networking 6(4):362–373, 1998. Used as a baseline by [CHOKeW].
//!
//! One FIFO, two RED parameter sets. In-profile packets ([`Pkt::in_profile`]) are judged by
//! `avg_in`, the average of the number of waiting in-packets `Q_in`, refreshed only when an
//! in-packet arrives; out-of-profile packets are judged by `avg_total`, the average of the whole
//! queue, refreshed at every arrival. Everything RED-like (the average with idle-time aging, the
//! base probability, the uniformised test) is [`crate::red_math`], used twice.

use crate::fifo::Fifo;
use crate::red::{RedMode, RedParams, RedVariant};
use crate::red_math::{p_base, DropTest, Estimator, Thresholds, Variant};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};
use serde::{Deserialize, Serialize};

/// RIO parameters as written in a scenario (`aqm = { type = "rio", ... }`).
///
/// The defaults are the [CHOKeW] values (aqm.md §4, §18), the only paper that uses RIO:
/// out `100/200/0.02`, in `110/210/0.01`, both gentle, `w_q = 0.002`. The thresholds are the
/// paper's for its 500-packet buffer: one left out is the same fraction of the link's buffer.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RioParams {
    /// Mark ECN-capable packets (Congestion Experienced) instead of dropping them early (RFC 3168).
    #[serde(default)]
    pub ecn: bool,
    /// Lower threshold on `avg_in` for in-profile packets (queue unit; default 110/500 of the buffer, [CHOKeW] §4's 110 packets of 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_th_in: Option<f64>,
    /// Upper threshold on `avg_in` (default 210/500 of the buffer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_th_in: Option<f64>,
    /// In-profile drop probability at `avg_in = max_th_in`.
    #[serde(default = "crate::defaults::rio::max_p_in")]
    pub max_p_in: f64,
    /// Gentle ramp for in-profile packets on `[max_th_in, 2 max_th_in)`.
    #[serde(default = "crate::defaults::rio::gentle_in")]
    pub gentle_in: bool,
    /// Lower threshold on `avg_total` for out-of-profile packets (queue unit; default a fifth of the buffer, the paper's 100 of 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_th_out: Option<f64>,
    /// Upper threshold on `avg_total` (default two fifths of the buffer, the paper's 200 of 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_th_out: Option<f64>,
    /// Out-of-profile drop probability at `avg_total = max_th_out`.
    #[serde(default = "crate::defaults::rio::max_p_out")]
    pub max_p_out: f64,
    /// Gentle ramp for out-of-profile packets on `[max_th_out, 2 max_th_out)`.
    #[serde(default = "crate::defaults::rio::gentle_out")]
    pub gentle_out: bool,
    /// EWMA weight, shared by both averages.
    #[serde(default = "crate::defaults::rio::w_q")]
    pub w_q: f64,
    /// `packet` or `byte` (RED step 5: `p_b` scaled by `size / max_pkt_size`).
    #[serde(default)]
    pub mode: RedMode,
    /// Normaliser for byte mode (bytes).
    #[serde(default = "crate::defaults::rio::max_pkt_size")]
    pub max_pkt_size: u32,
    /// Typical packet size for the idle-time aging `s = 8 mean_pkt_size / C` (bytes).
    #[serde(default = "crate::defaults::rio::mean_pkt_size")]
    pub mean_pkt_size: u32,
    /// RED variant of both tests: `fj93` (default) or `ns2` (A5).
    #[serde(default)]
    pub variant: RedVariant,
    /// Count-based spreading of early drops in both tests.
    #[serde(default = "crate::defaults::rio::uniformise")]
    pub uniformise: bool,
    /// Mimic ns-2.35 `Queue/RED/RIO`: `avg_total` refreshed only at in-packet arrivals, and the
    /// out-profile probability computed with `max_p_in` instead of `max_p_out` (aqm.md §4).
    #[serde(default)]
    pub rio_ns2_compat: bool,
}

impl Default for RioParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

/// Which RED parameter set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    In,
    Out,
}

impl RioParams {
    /// The thresholds of one class as given (`None` where left out).
    fn given(&self, class: Class) -> (Option<f64>, Option<f64>) {
        match class {
            Class::In => (self.min_th_in, self.max_th_in),
            Class::Out => (self.min_th_out, self.max_th_out),
        }
    }

    /// The `(min_th, max_th)` of one class on a buffer of `limit` (queue unit): as given, or the
    /// paper's as the same fraction of the buffer.
    fn thresholds_on(&self, class: Class, limit: Limit) -> (f64, f64) {
        use crate::defaults::chokew::scaled;
        use crate::defaults::rio::{MAX_TH_IN, MAX_TH_OUT, MIN_TH_IN, MIN_TH_OUT};
        let (lo, hi) = self.given(class);
        let (plo, phi) = match class {
            Class::In => (MIN_TH_IN, MAX_TH_IN),
            Class::Out => (MIN_TH_OUT, MAX_TH_OUT),
        };
        let b = limit.value as f64;
        (lo.unwrap_or_else(|| scaled(plo, b)), hi.unwrap_or_else(|| scaled(phi, b)))
    }

    /// `((min_th_in, max_th_in), (min_th_out, max_th_out))` on a buffer of `limit`.
    pub fn thresholds(&self, limit: Limit) -> ((f64, f64), (f64, f64)) {
        (self.thresholds_on(Class::In, limit), self.thresholds_on(Class::Out, limit))
    }

    /// Set the thresholds left out to the paper's, scaled to `limit`, after checking that each
    /// class's are in order (a given one may not fit one that follows the buffer).
    pub fn fill(&mut self, limit: Limit) -> Result<(), ParamError> {
        for class in [Class::In, Class::Out] {
            let (lo, hi) = self.thresholds_on(class, limit);
            let (glo, ghi) = self.given(class);
            if lo >= hi {
                let (min_f, max_f) = (class_field("min_th", class), class_field("max_th", class));
                let from = |g: Option<f64>| if g.is_some() { "" } else { ", from the buffer" };
                return Err(ParamError::new(
                    if ghi.is_some() { max_f } else { min_f },
                    format!(
                        "need {min_f} ({lo}{}) < {max_f} ({hi}{}) with this buffer; give both, or neither",
                        from(glo),
                        from(ghi)
                    ),
                ));
            }
            match class {
                Class::In => (self.min_th_in, self.max_th_in) = (Some(lo), Some(hi)),
                Class::Out => (self.min_th_out, self.max_th_out) = (Some(lo), Some(hi)),
            }
        }
        Ok(())
    }

    /// The RED parameters of one class on a buffer of `limit`.
    fn red(&self, class: Class, limit: Limit) -> RedParams {
        let (min_th, max_th) = self.thresholds_on(class, limit);
        self.red_with(class, min_th, max_th)
    }

    /// The RED parameters of one class with these thresholds, so RED's own checks validate them.
    fn red_with(&self, class: Class, min_th: f64, max_th: f64) -> RedParams {
        let (max_p, gentle) = match class {
            Class::In => (self.max_p_in, self.gentle_in),
            Class::Out => (self.max_p_out, self.gentle_out),
        };
        let mut r = RedParams::with_thresholds(min_th, max_th, max_p);
        r.gentle = gentle;
        r.w_q = self.w_q;
        r.mode = self.mode;
        r.max_pkt_size = self.max_pkt_size;
        r.mean_pkt_size = self.mean_pkt_size;
        r.variant = self.variant;
        r.uniformise = self.uniformise;
        r
    }

    /// Thresholds used for out-of-profile packets: with `rio_ns2_compat` ns-2's generic `max_p`
    /// (the in-profile one) replaces `max_p_out`.
    fn out_thresholds(&self, limit: Limit) -> Thresholds {
        let mut th = self.red(Class::Out, limit).thresholds();
        if self.rio_ns2_compat {
            th.max_p = self.max_p_in;
        }
        th
    }
}

/// Rename RED's parameter name to the RIO key of `class`.
fn class_field(field: &'static str, class: Class) -> &'static str {
    match (field, class) {
        ("min_th", Class::In) => "min_th_in",
        ("max_th", Class::In) => "max_th_in",
        ("max_p", Class::In) => "max_p_in",
        ("min_th", Class::Out) => "min_th_out",
        ("max_th", Class::Out) => "max_th_out",
        ("max_p", Class::Out) => "max_p_out",
        (f, _) => f,
    }
}

impl Params for RioParams {
    fn validate(&self) -> Result<(), ParamError> {
        for (class, suffix) in [(Class::In, "_in"), (Class::Out, "_out")] {
            // the thresholds given (those left out follow the buffer: `fill` checks them with it)
            let (lo, hi) = self.given(class);
            let lo_v = lo.unwrap_or(0.0);
            let hi_v = hi.unwrap_or(if lo_v.is_finite() { lo_v.max(0.0) + 1.0 } else { 1.0 });
            self.red_with(class, lo_v, hi_v).check().map_err(|e| {
                let field = class_field(e.field, class);
                let msg = if field == e.field { e.msg } else { e.msg.replace("min_th", &format!("min_th{suffix}")) };
                ParamError::new(field, msg)
            })?;
        }
        Ok(())
    }
}

/// RIO over one FIFO.
pub struct Rio<P> {
    ecn: bool,
    fifo: Fifo<P>,
    limit: Limit,
    /// `avg_total`: EWMA of the whole queue.
    est_total: Estimator,
    /// `avg_in`: EWMA of the in-profile part of the queue.
    est_in: Estimator,
    th_in: Thresholds,
    th_out: Thresholds,
    /// RED test with `count_in`.
    test_in: DropTest,
    /// RED test with `count_out`.
    test_out: DropTest,
    /// `Q_in`: waiting in-profile packets, and their bytes (for `queue_unit = bytes`).
    q_in: usize,
    q_in_bytes: u64,
    ns2_compat: bool,
}

impl<P: Pkt> Rio<P> {
    pub fn new(params: &RioParams, link: LinkInfo, limit: Limit) -> Self {
        let variant = match params.variant {
            RedVariant::Fj93 => Variant::Fj93,
            RedVariant::Ns2 => Variant::Ns2,
        };
        let s_ns = 8.0 * params.mean_pkt_size as f64 / link.rate_bps * NS_PER_SEC as f64;
        let integer_m = variant == Variant::Ns2;
        let test =
            || DropTest::new(variant, params.uniformise, params.mode == RedMode::Byte, params.max_pkt_size as f64);
        Rio {
            ecn: params.ecn,
            fifo: Fifo::default(),
            limit,
            est_total: Estimator::new(params.w_q, s_ns, integer_m),
            est_in: Estimator::new(params.w_q, s_ns, integer_m),
            th_in: params.red(Class::In, limit).thresholds(),
            th_out: params.out_thresholds(limit),
            test_in: test(),
            test_out: test(),
            q_in: 0,
            q_in_bytes: 0,
            ns2_compat: params.rio_ns2_compat,
        }
    }

    /// `avg_in` as of the last in-profile arrival.
    pub fn avg_in(&self) -> f64 {
        self.est_in.avg()
    }

    /// `avg_total` as of its last refresh.
    pub fn avg_total(&self) -> f64 {
        self.est_total.avg()
    }

    /// `Q_in`, the number of waiting in-profile packets.
    pub fn q_in(&self) -> usize {
        self.q_in
    }
}

impl<P: Pkt> Scheme<P> for Rio<P> {
    type Params = RioParams;
    fn new(params: &RioParams, link: LinkInfo, limit: Limit) -> Self {
        Rio::new(params, link, limit)
    }
}

crate::hint::hint_from!(Rio, fifo.get);

impl<P: Pkt> Qdisc<P> for Rio<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let inp = pkt.in_profile();
        let q = self.limit.qlen(self.fifo.len(), self.fifo.bytes()) as f64;
        // step 1: ESTIMATE_total(now, Q) — at every arrival (ns-2: at in-arrivals only)
        if inp || !self.ns2_compat {
            self.est_total.update(cx.now, q);
        }
        // step 2: the class's RED steps 2-6
        let verdict = if inp {
            let q_in = self.limit.qlen(self.q_in, self.q_in_bytes) as f64;
            let avg_in = self.est_in.update(cx.now, q_in);
            self.test_in.decide(p_base(avg_in, &self.th_in), pkt.size(), self.fifo.len(), cx.rng)
        } else {
            let avg = self.est_total.avg();
            self.test_out.decide(p_base(avg, &self.th_out), pkt.size(), self.fifo.len(), cx.rng)
        };
        let mut pkt = pkt;
        if let Some(reason) = verdict {
            let Some(marked) = cx.verdict(pkt, reason, self.ecn) else { return false };
            pkt = marked;
        }
        // step 3
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        // step 4
        if inp {
            self.q_in += 1;
            self.q_in_bytes += pkt.size() as u64;
        }
        self.fifo.push(pkt, cx.now);
        true
    }

    fn dequeue(&mut self, _cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let e = self.fifo.pop()?;
        // a packet leaving the queue: Q_in -= 1 if it is in-profile
        if e.0.in_profile() {
            self.q_in -= 1;
            self.q_in_bytes -= e.0.size() as u64;
        }
        Some(e)
    }

    crate::fifo::fifo_views!(fifo);
    /// A7: both averages get an idle period starting now (one common `idle_since`); each closes
    /// its own at its next refresh.
    fn on_link_idle(&mut self, now: Time) {
        self.est_total.restart_idle(now);
        self.est_in.restart_idle(now);
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["avg_in", "p_in", "avg_total", "p_out"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.est_in.avg();
        out[1] = self.test_in.last_p();
        out[2] = self.est_total.avg();
        out[3] = self.test_out.last_p();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// A packet with an explicit in-profile mark.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Rp {
        flow: u32,
        inp: bool,
    }
    impl Pkt for Rp {
        fn flow(&self) -> u32 {
            self.flow
        }
        fn size(&self) -> u32 {
            1000
        }
        fn in_profile(&self) -> bool {
            self.inp
        }
    }
    const IN: Rp = Rp { flow: 1, inp: true };
    const OUT: Rp = Rp { flow: 2, inp: false };

    fn link() -> LinkInfo {
        LinkInfo { rate_bps: 8e6 } // 1 ms per 1000-byte packet
    }

    /// `w_q = 1` makes each average equal to the queue it follows at its last refresh.
    /// In: 4/8, max_p 0.5; out: 2/4, max_p 0.5; no gentle; buffer 20.
    fn params() -> RioParams {
        RioParams {
            min_th_in: Some(4.0),
            max_th_in: Some(8.0),
            max_p_in: 0.5,
            gentle_in: false,
            min_th_out: Some(2.0),
            max_th_out: Some(4.0),
            max_p_out: 0.5,
            gentle_out: false,
            w_q: 1.0,
            ..RioParams::default()
        }
    }

    fn offer(q: &mut Rio<Rp>, p: Rp, now: Time, rng: &mut Rng, drops: &mut Vec<crate::Dropped<Rp>>) -> bool {
        let mut cx = Cx { now, rng, drops };
        q.enqueue(p, &mut cx)
    }

    #[test]
    fn defaults_are_the_chokew_values() {
        let p = RioParams::default();
        let b500 = Limit::packets(500);
        assert_eq!(p.thresholds_on(Class::Out, b500), (100.0, 200.0));
        assert_eq!(p.thresholds_on(Class::In, b500), (110.0, 210.0));
        assert_eq!((p.max_p_out, p.gentle_out, p.max_p_in, p.gentle_in), (0.02, true, 0.01, true));
        // on another buffer, the same fractions of it
        assert_eq!(p.thresholds_on(Class::Out, Limit::packets(100)), (20.0, 40.0));
        let mut f = p.clone();
        f.fill(Limit::packets(100)).unwrap();
        assert_eq!((f.min_th_in, f.max_th_in), (Some(22.0), Some(42.0)));
        // a given threshold that does not fit one following the buffer is named
        let mut g = RioParams { min_th_out: Some(80.0), ..RioParams::default() };
        let e = g.fill(Limit::packets(100)).unwrap_err();
        assert_eq!(e.field, "min_th_out");
        assert!(e.msg.contains("40, from the buffer"), "{}", e.msg);
        assert_eq!(p.w_q, 0.002);
        assert!(!p.rio_ns2_compat);
        assert!(p.validate().is_ok());
    }

    #[test]
    fn validation_names_the_class_parameter() {
        let mut p = RioParams { min_th_in: Some(110.0), max_th_in: Some(100.0), ..RioParams::default() };
        let e = p.validate().unwrap_err();
        assert_eq!(e.field, "max_th_in");
        assert!(e.msg.contains("min_th_in"), "{}", e.msg);
        p = RioParams { max_p_out: 0.0, ..RioParams::default() };
        assert_eq!(p.validate().unwrap_err().field, "max_p_out");
        p = RioParams { min_th_out: Some(-1.0), ..RioParams::default() };
        assert_eq!(p.validate().unwrap_err().field, "min_th_out");
        p = RioParams { w_q: 0.0, ..RioParams::default() };
        assert_eq!(p.validate().unwrap_err().field, "w_q");
    }

    #[test]
    fn step_by_step_in_and_out_use_their_own_average() {
        let mut q: Rio<Rp> = Rio::new(&params(), link(), Limit::packets(20));
        let mut rng = Rng::stream(1, "rio", 0);
        let mut shadow = rng.clone();
        let mut drops = Vec::new();
        // two out-packets at Q = 0, 1: avg_total = 0, 1 < 2 -> admitted untested; avg_in untouched
        assert!(offer(&mut q, OUT, 0, &mut rng, &mut drops));
        assert!(offer(&mut q, OUT, 1, &mut rng, &mut drops));
        assert_eq!((q.avg_total(), q.avg_in(), q.q_in()), (1.0, 0.0, 0));
        // three in-packets at Q = 2, 3, 4 with Q_in = 0, 1, 2: avg_in < 4 -> admitted untested,
        // although avg_total (2, 3, 4) would put an out-packet in the probabilistic/hard region
        for (k, now) in (2..5).enumerate() {
            assert!(offer(&mut q, IN, now, &mut rng, &mut drops));
            assert_eq!(q.avg_in(), k as f64);
            assert_eq!(q.avg_total(), (k + 2) as f64);
        }
        assert_eq!(q.q_in(), 3);
        assert_eq!(q.test_in.count(), -1);
        // an out-packet now sees Q = 5 -> avg_total = 5 >= max_th_out = 4: FORCED
        assert!(!offer(&mut q, OUT, 5, &mut rng, &mut drops));
        assert_eq!(drops.last().unwrap().reason, DropReason::Forced);
        assert_eq!(q.avg_total(), 5.0);
        assert_eq!(q.avg_in(), 2.0, "an out-arrival does not refresh avg_in");
        // serve the two out-packets at the head: Q = 3, Q_in stays 3
        let mut cx = Cx { now: 6, rng: &mut rng, drops: &mut drops };
        assert!(!q.dequeue(&mut cx).unwrap().0.inp);
        assert!(!q.dequeue(&mut cx).unwrap().0.inp);
        assert_eq!((q.len(), q.q_in()), (3, 3));
        // an out-packet sees Q = 3: p_b = 0.5 (3-2)/(4-2) = 0.25; count_out was reset to 0 by
        // the forced drop and becomes 1 -> p_a = 0.25 / (1 - 0.25) = 1/3
        let u = shadow.uniform();
        let admitted = offer(&mut q, OUT, 7, &mut rng, &mut drops);
        assert_eq!(admitted, u >= 1.0 / 3.0);
        assert!((q.test_out.last_p() - 1.0 / 3.0).abs() < 1e-15);
        let q_in_before = q.q_in();
        // an in-packet sees Q_in = 3 -> avg_in = 3 < 4: admitted untested
        assert!(offer(&mut q, IN, 8, &mut rng, &mut drops));
        assert_eq!(q.avg_in(), 3.0);
        assert_eq!(q.q_in(), q_in_before + 1);
        // another in-packet sees Q_in = 4 = min_th_in: tested with p_b = 0 (one draw, count_in 0)
        shadow.uniform();
        assert!(offer(&mut q, IN, 9, &mut rng, &mut drops));
        assert_eq!(q.test_in.count(), 0);
        // Q_in = 5: p_b = 0.5 (5-4)/(8-4) = 0.125, count_in = 1 -> p_a = 0.125 / (1 - 0.125) = 1/7
        let u = shadow.uniform();
        let admitted = offer(&mut q, IN, 10, &mut rng, &mut drops);
        assert_eq!(admitted, u >= 1.0 / 7.0);
        assert!((q.test_in.last_p() - 1.0 / 7.0).abs() < 1e-15);
        // Q_in is maintained on dequeue: drain everything
        let mut cx = Cx { now: 11, rng: &mut rng, drops: &mut drops };
        while q.dequeue(&mut cx).is_some() {}
        assert_eq!((q.q_in(), q.q_in_bytes), (0, 0));
        let mut st = [0.0; 4];
        q.state(&mut st);
        assert_eq!(st[0], q.avg_in());
        assert_eq!(st[2], q.avg_total());
    }

    #[test]
    fn ns2_compat_freezes_avg_total_at_out_arrivals_and_uses_max_p_in() {
        let mut p = params();
        p.max_p_in = 0.2;
        p.rio_ns2_compat = true;
        let mut q: Rio<Rp> = Rio::new(&p, link(), Limit::packets(20));
        let mut rng = Rng::stream(2, "rio", 0);
        let mut drops = Vec::new();
        // three out-arrivals: avg_total is never refreshed (stays 0), so none is tested
        for now in 0..3 {
            assert!(offer(&mut q, OUT, now, &mut rng, &mut drops));
        }
        assert_eq!(q.avg_total(), 0.0);
        // an in-arrival refreshes it: Q = 3
        assert!(offer(&mut q, IN, 3, &mut rng, &mut drops));
        assert_eq!(q.avg_total(), 3.0);
        // out-packet judged by avg_total = 3 with max_p_in = 0.2: p_b = 0.2 * (3-2)/(4-2) = 0.1
        offer(&mut q, OUT, 4, &mut rng, &mut drops);
        assert!((q.test_out.last_p() - 0.1).abs() < 1e-15);
        assert_eq!(q.avg_total(), 3.0, "out-arrivals leave avg_total alone");
        // the same sequence without compat refreshes avg_total at every arrival and uses max_p_out
        let mut q: Rio<Rp> = Rio::new(&params(), link(), Limit::packets(20));
        for now in 0..3 {
            offer(&mut q, OUT, now, &mut rng, &mut drops);
        }
        assert_eq!(q.avg_total(), 2.0);
        offer(&mut q, IN, 3, &mut rng, &mut drops);
        offer(&mut q, OUT, 4, &mut rng, &mut drops);
        assert_eq!(q.avg_total(), 4.0);
        assert_eq!(q.test_out.last_p(), 1.0, "avg_total = 4 = max_th_out is the hard region");
    }

    #[test]
    fn idle_decay_of_avg_in_is_applied_at_its_next_refresh() {
        // w_q = 0.5; 1 ms per packet.
        let mut p = params();
        p.w_q = 0.5;
        let mut q: Rio<Rp> = Rio::new(&p, link(), Limit::packets(20));
        let mut rng = Rng::stream(3, "rio", 0);
        let mut drops = Vec::new();
        let ms = 1_000_000;
        // in-packets at Q_in = 0, 1, 2: avg_in = 0, 0.5, 1.25
        for k in 0..3 {
            offer(&mut q, IN, k, &mut rng, &mut drops);
        }
        assert_eq!(q.avg_in(), 1.25);
        let total_before = q.avg_total();
        let mut cx = Cx { now: 3 * ms, rng: &mut rng, drops: &mut drops };
        while q.dequeue(&mut cx).is_some() {}
        // the link goes idle at 5 ms
        q.on_link_idle(5 * ms);
        // an out-packet at 7 ms: avg_total decays 2 packet times then updates with Q = 0
        offer(&mut q, OUT, 7 * ms, &mut rng, &mut drops);
        assert!((q.avg_total() - total_before * 0.25 * 0.5).abs() < 1e-12);
        assert_eq!(q.avg_in(), 1.25, "avg_in not refreshed by an out-arrival");
        // the in-packet at 9 ms still receives the idle decay, counted from 5 ms (4 packet
        // times), then one update with Q_in = 0
        offer(&mut q, IN, 9 * ms, &mut rng, &mut drops);
        assert!((q.avg_in() - 1.25 * 0.5f64.powi(4) * 0.5).abs() < 1e-12, "{}", q.avg_in());
        // a second idle period while avg_in's is still open: the common clock restarts
        let mut cx = Cx { now: 10 * ms, rng: &mut rng, drops: &mut drops };
        while q.dequeue(&mut cx).is_some() {}
        q.on_link_idle(10 * ms);
        offer(&mut q, OUT, 11 * ms, &mut rng, &mut drops);
        let mut cx = Cx { now: 11 * ms, rng: &mut rng, drops: &mut drops };
        while q.dequeue(&mut cx).is_some() {}
        q.on_link_idle(12 * ms);
        let before = q.avg_in();
        offer(&mut q, IN, 15 * ms, &mut rng, &mut drops);
        assert!((q.avg_in() - before * 0.5f64.powi(3) * 0.5).abs() < 1e-12);
    }

    #[test]
    fn overflow_below_thresholds_and_in_profile_accounting_in_bytes() {
        let mut q: Rio<Rp> = Rio::new(&RioParams::default(), link(), Limit::bytes(3000));
        let mut rng = Rng::stream(4, "rio", 0);
        let mut drops = Vec::new();
        for (k, p) in [IN, OUT, IN, OUT, IN].into_iter().enumerate() {
            let ok = offer(&mut q, p, k as Time, &mut rng, &mut drops);
            assert_eq!(ok, k < 3);
        }
        assert!(drops.iter().all(|d| d.reason == DropReason::Overflow));
        assert_eq!((q.q_in(), q.q_in_bytes), (2, 2000));
    }
}
