//! AFD — Approximate Fair Dropping.
//!
//! Reference: R. Pan, L. Breslau, B. Prabhakar, S. Shenker, "Approximate Fairness through
//! Differential Dropping", ACM SIGCOMM Computer Communication Review 33(2), April 2003 ([AFD]).
//!
//! AFD estimates each flow's arrival rate from a *shadow buffer*: a fixed-size sample of the
//! recent arrivals' flow ids. With probability `sample` an arrival's id is copied into it,
//! replacing a randomly chosen entry (or the oldest, `replacement = "fifo"`); `m_i`, the number
//! of entries of flow `i`, is proportional to the flow's share of the arrivals. The fair share
//! is a number of entries, `m_fair`, and an arrival of flow `i` is dropped with probability
//!
//! ```text
//! d_i = (1 − m_fair / m_i)^+
//! ```
//!
//! so that every flow's admitted rate, `r_i (1 − d_i) ∝ min(m_i, m_fair)`, is capped at the same
//! value. `m_fair` is not computed from the number of flows; a proportional-integral controller
//! moves it so that the queue stays near `q_target`:
//!
//! ```text
//! m_fair(t) = m_fair(t − T) + α (q(t − T) − q_target) − β (q(t) − q_target)
//! ```
//!
//! every `T = 1 / update_rate` ([AFD]: α = 1.7, β = 1.8 per packet of queue, 160 updates per
//! second). The loop's speed grows with the link's packet rate (a queue error of one packet is
//! 8 ms at 1 Mb/s, 80 µs at 100 Mb/s), so α and β are taken as per packet at `gains_at`
//! (1 Mb/s) and scaled by `gains_at / C` on a link of rate `C`: the same loop in queueing delay on
//! every link (with the paper's values unscaled, the controller swings between no drops and
//! dropping everything on a 100 Mb/s link). Flows with
//! no entry in the shadow buffer (the many slow flows) are never dropped early. State: the
//! shadow buffer (4 bytes per entry) and a table of the flows in it (8 bytes per flow).

use crate::control::{check_range, early_drop, period_ns};
use crate::fifo::Fifo;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, QueueUnit, Scheme, Time};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// AFD parameters as written in a scenario (`aqm = { type = "afd", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AfdParams {
    /// Entries of the shadow buffer `b`.
    #[serde(default = "crate::defaults::afd::shadow_size")]
    pub shadow_size: u32,
    /// Probability that an arrival is copied into the shadow buffer (`1/s`).
    #[serde(default = "crate::defaults::afd::sample")]
    pub sample: f64,
    /// Which entry a sampled arrival replaces: `random` ([AFD]) or `fifo` (the oldest).
    #[serde(default)]
    pub replacement: Replacement,
    /// Queue the controller aims at, in the queue unit. Absent = a fifth of the buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q_target: Option<f64>,
    /// Gain on the previous queue error (per packet).
    #[serde(default = "crate::defaults::afd::alpha")]
    pub alpha: f64,
    /// Gain on the current queue error (per packet).
    #[serde(default = "crate::defaults::afd::beta")]
    pub beta: f64,
    /// Updates of `m_fair` per second.
    #[serde(default = "crate::defaults::afd::update_rate")]
    pub update_rate: f64,
    /// The link rate (bits per second) at which `alpha` and `beta` are per packet of queue; on a
    /// link of rate C they are scaled by `gains_at / C`, so that the loop reacts to the queue's
    /// delay, the same on every link.
    #[serde(default = "crate::defaults::afd::gains_at")]
    pub gains_at: f64,
    /// Bytes per "packet" of the controller's queue in byte mode.
    #[serde(default = "crate::defaults::afd::mean_pkt_size")]
    pub mean_pkt_size: u32,
    /// Where `m_fair` starts (the paper leaves it open).
    #[serde(default)]
    pub m_fair_start: MfairStart,
}

/// Where AFD's controller starts `m_fair`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MfairStart {
    /// At `b` (nothing dropped) until the first update that sees the queue above its target, then
    /// at the equal share of the shadow buffer, `b / (flows in it)`; the controller from there.
    #[default]
    EqualShare,
    /// At `b`, the controller from the top (on a fast link, with the gains scaled to it, it takes
    /// tens of seconds to come down to the few entries a flow's fair share is).
    ShadowSize,
}

/// Shadow-buffer replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Replacement {
    #[default]
    Random,
    Fifo,
}

impl Default for AfdParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for AfdParams {
    fn validate(&self) -> Result<(), ParamError> {
        if !(1..=1 << 24).contains(&self.shadow_size) {
            return Err(ParamError::new("shadow_size", format!("must be 1..16777216, got {}", self.shadow_size)));
        }
        if !(self.sample > 0.0 && self.sample <= 1.0) {
            return Err(ParamError::new("sample", format!("must be in (0, 1], got {}", self.sample)));
        }
        if let Some(q) = self.q_target {
            check_range("q_target", q, 0.0, 1e15)?;
        }
        check_range("alpha", self.alpha, 0.0, 1e9)?;
        check_range("beta", self.beta, 0.0, 1e9)?;
        if !(self.update_rate.is_finite() && self.update_rate >= 1e-3 && self.update_rate <= 1e9) {
            return Err(ParamError::new(
                "update_rate",
                format!("must be in [0.001, 1e9] per second, got {}", self.update_rate),
            ));
        }
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        check_range("gains_at", self.gains_at, 1.0, 1e15)?;
        Ok(())
    }
}

/// AFD over one FIFO.
pub struct Afd<P> {
    fifo: Fifo<P>,
    limit: Limit,
    /// Flow ids of the sampled arrivals.
    shadow: Vec<u32>,
    size: usize,
    /// Next slot to overwrite (fifo replacement).
    next: usize,
    /// Entries per flow in the shadow buffer (`m_i`); only flows with entries are kept.
    m: FxHashMap<u32, u32>,
    peak_flows: usize,
    sample: f64,
    replacement: Replacement,
    q_target: f64,
    alpha: f64,
    beta: f64,
    period: Time,
    /// Queue unit per controller packet (1, or `mean_pkt_size` bytes).
    unit: f64,
    m_fair: f64,
    /// The queue at the last update (in controller packets).
    q_old: f64,
    last_p: f64,
    /// `m_fair` is still at its start value `b` and jumps to the equal share at the first update
    /// with the queue above target (`m_fair_start = "equal_share"`).
    pending_start: bool,
}

impl<P: Pkt> Afd<P> {
    pub fn new(p: &AfdParams, link: LinkInfo, limit: Limit) -> Self {
        let scale = p.gains_at / link.rate_bps;
        let unit = match limit.unit {
            QueueUnit::Packets => 1.0,
            QueueUnit::Bytes => p.mean_pkt_size as f64,
        };
        let q_target = p.q_target.unwrap_or(limit.value as f64 / 5.0);
        Afd {
            fifo: Fifo::default(),
            limit,
            shadow: Vec::with_capacity(p.shadow_size as usize),
            size: p.shadow_size as usize,
            next: 0,
            m: FxHashMap::default(),
            peak_flows: 0,
            sample: p.sample,
            replacement: p.replacement,
            q_target: q_target / unit,
            alpha: p.alpha * scale,
            beta: p.beta * scale,
            period: period_ns(1.0 / p.update_rate).max(1),
            unit,
            // no flow is dropped until the controller has seen a queue above its target
            m_fair: p.shadow_size as f64,
            q_old: 0.0,
            last_p: 0.0,
            pending_start: p.m_fair_start == MfairStart::EqualShare,
        }
    }

    /// `m_fair`, in shadow-buffer entries.
    pub fn m_fair(&self) -> f64 {
        self.m_fair
    }

    /// `m_i` of `flow`.
    pub fn m_of(&self, flow: u32) -> u32 {
        self.m.get(&flow).copied().unwrap_or(0)
    }

    fn q_now(&self) -> f64 {
        self.limit.qlen(self.fifo.len(), self.fifo.bytes()) as f64 / self.unit
    }

    /// Copy `flow` into the shadow buffer.
    #[inline]
    fn insert(&mut self, flow: u32, cx: &mut Cx<'_, P>) {
        if self.shadow.len() < self.size {
            self.shadow.push(flow);
        } else {
            let i = match self.replacement {
                Replacement::Random => cx.rng.below(self.size as u64) as usize,
                Replacement::Fifo => {
                    let i = self.next;
                    self.next = (i + 1) % self.size;
                    i
                }
            };
            let old = std::mem::replace(&mut self.shadow[i], flow);
            if let Some(c) = self.m.get_mut(&old) {
                *c -= 1;
                if *c == 0 {
                    self.m.remove(&old);
                }
            }
        }
        *self.m.entry(flow).or_insert(0) += 1;
        self.peak_flows = self.peak_flows.max(self.m.len());
    }
}

impl<P: Pkt> Scheme<P> for Afd<P> {
    type Params = AfdParams;
    fn new(params: &AfdParams, link: LinkInfo, limit: Limit) -> Self {
        Afd::new(params, link, limit)
    }
}

crate::hint::hint_from!(Afd, fifo.get);

impl<P: Pkt> Qdisc<P> for Afd<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let flow = pkt.flow();
        // 1. sample the arrival into the shadow buffer
        if self.sample >= 1.0 || cx.rng.uniform() < self.sample {
            self.insert(flow, cx);
        }
        // 2. d_i = (1 - m_fair / m_i)^+
        let m_i = self.m_of(flow) as f64;
        let d = if m_i > self.m_fair { 1.0 - self.m_fair / m_i } else { 0.0 };
        self.last_p = d;
        if early_drop(cx.rng, d) {
            cx.drop(pkt, DropReason::Early);
            return false;
        }
        // 3. the buffer
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        self.fifo.push(pkt, cx.now);
        true
    }

    crate::fifo::fifo_views!(fifo, pop);

    fn timer_period(&self) -> Option<Time> {
        Some(self.period)
    }
    /// The `m_fair` controller.
    fn on_timer(&mut self, _cx: &mut Cx<'_, P>) {
        let q = self.q_now();
        if self.pending_start && q > self.q_target && !self.m.is_empty() {
            // the first congestion: every flow in the shadow buffer at its equal share
            self.pending_start = false;
            self.m_fair = self.size.min(self.shadow.len()) as f64 / self.m.len() as f64;
            self.q_old = q;
            return;
        }
        let m = self.m_fair + self.alpha * (self.q_old - self.q_target) - self.beta * (q - self.q_target);
        self.m_fair = m.clamp(0.0, self.size as f64);
        self.q_old = q;
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["m_fair", "flows", "p"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.m_fair;
        out[1] = self.m.len() as f64;
        out[2] = self.last_p;
    }
    /// The shadow buffer and the flow table at its largest.
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + 4 * self.size + 8 * self.peak_flows) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;
    use crate::NS_PER_SEC;

    #[test]
    fn defaults_and_validation() {
        let p = AfdParams::default();
        assert!(p.validate().is_ok());
        assert_eq!((p.alpha, p.beta, p.update_rate), (1.7, 1.8, 160.0));
        assert_eq!(AfdParams { shadow_size: 0, ..p.clone() }.validate().unwrap_err().field, "shadow_size");
        assert_eq!(AfdParams { sample: 0.0, ..p.clone() }.validate().unwrap_err().field, "sample");
        assert_eq!(AfdParams { update_rate: 0.0, ..p.clone() }.validate().unwrap_err().field, "update_rate");
        let q: Afd<P> = Afd::new(&p, LinkInfo { rate_bps: 1e6 }, Limit::packets(100));
        assert_eq!(q.q_target, 20.0);
        assert_eq!(q.period, 6_250_000);
    }

    /// The shadow buffer's counts are the flows' entries, and the drop probability is
    /// `(1 − m_fair / m_i)^+` exactly (checked against a copy of the random stream).
    #[test]
    fn shadow_counts_and_drop_probability() {
        let p = AfdParams { shadow_size: 10, replacement: Replacement::Fifo, ..Default::default() };
        let mut q: Afd<P> = Afd::new(&p, LinkInfo { rate_bps: 1e6 }, Limit::packets(1000));
        let mut rng = Rng::stream(1, "afd", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // m_fair = b = 10 at the start: nothing is dropped; 6 of flow 1, 4 of flow 2
        for f in [1, 1, 2, 1, 2, 1, 2, 1, 2, 1] {
            assert!(q.enqueue(P::new(f, 1000), &mut cx));
        }
        assert_eq!((q.m_of(1), q.m_of(2)), (6, 4));
        q.m_fair = 3.0;
        // fifo replacement: the next arrival of flow 1 replaces the oldest entry (flow 1): m_1 = 6
        let mut shadow = cx.rng.clone();
        let u = shadow.uniform();
        let ok = q.enqueue(P::new(1, 1000), &mut cx);
        assert_eq!(q.m_of(1), 6);
        assert!((q.last_p - 0.5).abs() < 1e-12);
        assert_eq!(ok, u >= 0.5);
        // flow 3 has one entry < m_fair: never dropped, no draw
        let mut shadow = cx.rng.clone();
        assert!(q.enqueue(P::new(3, 1000), &mut cx));
        assert_eq!(q.last_p, 0.0);
        assert_eq!(shadow.next_u64(), cx.rng.next_u64());
        assert_eq!(q.m.values().sum::<u32>(), 10);
    }

    /// [AFD]'s claim: the drops equalise the admitted rates. Four constant-rate flows offer 10,
    /// 20, 40 and 80 packets per unit time to a link that serves 60; the max-min fair share is
    /// 50/3 (10 + 3 · 50/3 = 60). AFD's controller settles `m_fair` where the admitted rates are
    /// about min(r_i, fair): the three faster flows are admitted at about the same rate, the
    /// slowest flow keeps all of its traffic.
    #[test]
    fn drops_equalise_admitted_rates() {
        let p = AfdParams::default();
        // the link: 9000 packets/s of 1000 bytes (the controller's gains scaled to it)
        let mut q: Afd<P> = Afd::new(&p, LinkInfo { rate_bps: 72e6 }, Limit::packets(200));
        let mut rng = Rng::stream(7, "afd", 0);
        let mut drops = Vec::new();
        let rates = [10u64, 20, 40, 80];
        let total: u64 = rates.iter().sum();
        // one "unit" = 1/150 s, so the offered load is 150 x 150 = 22500 packets/s; link 9000/s
        let per_sec = 150u64;
        let link = 60 * per_sec;
        let mut admitted = [0u64; 4];
        let mut t = 0u64;
        let mut served = 0u64;
        let mut next_timer = q.period;
        // 90 s (the controller, scaled to this 72 Mb/s link, is slow to settle), measured over
        // the last half
        let n = 2_000_000u64;
        for k in 0..n {
            t = k * NS_PER_SEC / (total * per_sec);
            let mut cx = Cx { now: t, rng: &mut rng, drops: &mut drops };
            while next_timer <= t {
                q.on_timer(&mut cx);
                next_timer += q.period;
            }
            while served < t * link / NS_PER_SEC {
                q.dequeue(&mut cx);
                served += 1;
            }
            // interleave arrivals in proportion to the rates
            let mut r = (k * 7919) % total;
            let mut f = 0;
            while r >= rates[f] {
                r -= rates[f];
                f += 1;
            }
            let ok = q.enqueue(P::new(f as u32, 1000), &mut cx);
            if k > n / 2 {
                admitted[f] += ok as u64;
            }
        }
        let secs = (t as f64 - (n / 2) as f64 * NS_PER_SEC as f64 / (total * per_sec) as f64) / 1e9;
        let a: Vec<f64> = admitted.iter().map(|&x| x as f64 / secs / per_sec as f64).collect();
        eprintln!("AFD admitted {a:?} (fair 16.7), m_fair {:.1}, queue {}", q.m_fair, q.fifo.len());
        // the slow flow keeps (nearly) all, the two fast ones are equalised near the fair share
        assert!(a[0] > 9.0, "{a:?}");
        assert!((a[2] - a[3]).abs() < 0.15 * a[3], "fast flows not equalised: {a:?}");
        assert!((a[1] - a[3]).abs() < 0.2 * a[3], "fast flows not equalised: {a:?}");
        assert!(a[3] < 25.0 && a[3] > 10.0, "{a:?}");
        // and the queue is held near its target
        assert!(q.fifo.len() < 120, "queue {}", q.fifo.len());
    }

    /// The controller: a queue above target lowers `m_fair` by α·e_old − β·e (here from the
    /// initial b), and `m_fair` stays within [0, b].
    #[test]
    fn controller_step_and_bounds() {
        let p = AfdParams {
            shadow_size: 100,
            q_target: Some(10.0),
            m_fair_start: MfairStart::ShadowSize,
            ..Default::default()
        };
        let mut q: Afd<P> = Afd::new(&p, LinkInfo { rate_bps: 1e6 }, Limit::packets(1000));
        let mut rng = Rng::stream(1, "afd", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..30 {
            q.fifo.push(P::new(1, 1000), 0);
        }
        q.on_timer(&mut cx);
        // q_old = 0: 100 + 1.7 (0 - 10) - 1.8 (30 - 10) = 100 - 17 - 36 = 47
        assert!((q.m_fair - 47.0).abs() < 1e-9);
        q.on_timer(&mut cx);
        // 47 + 1.7 (20) - 1.8 (20) = 45
        assert!((q.m_fair - 45.0).abs() < 1e-9);
        for _ in 0..1000 {
            q.on_timer(&mut cx);
        }
        assert_eq!(q.m_fair, 0.0);
        while q.fifo.pop().is_some() {}
        for _ in 0..100_000 {
            q.on_timer(&mut cx);
        }
        assert_eq!(q.m_fair, 100.0);
    }

    /// `m_fair_start = "equal_share"`: `b` until the queue is first above target, then
    /// `b / (flows in the shadow buffer)`, and the controller from there.
    #[test]
    fn equal_share_start() {
        let p = AfdParams { shadow_size: 100, q_target: Some(10.0), ..Default::default() };
        let mut q: Afd<P> = Afd::new(&p, LinkInfo { rate_bps: 1e6 }, Limit::packets(1000));
        let mut rng = Rng::stream(1, "afd", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // 8 packets of 4 flows: below target, no jump (the controller steps)
        for k in 0..8 {
            assert!(q.enqueue(P::new(k % 4, 1000), &mut cx));
        }
        q.on_timer(&mut cx);
        assert!(q.pending_start);
        // 20 packets, above target: the equal share of the 20 entries among 4 flows
        for k in 8..20 {
            assert!(q.enqueue(P::new(k % 4, 1000), &mut cx));
        }
        q.on_timer(&mut cx);
        assert!(!q.pending_start);
        assert_eq!(q.m_fair, 20.0 / 4.0);
        // then the PI step: 5 + 1.7 (20 - 10) - 1.8 (20 - 10) = 4
        q.on_timer(&mut cx);
        assert!((q.m_fair - 4.0).abs() < 1e-9, "{}", q.m_fair);
    }
}
