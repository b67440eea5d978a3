//! SRED — Stabilized RED.
//!
//! Reference: T. J. Ott, T. V. Lakshman, L. H. Wong, "SRED: Stabilized RED", Proc. IEEE INFOCOM
//! 1999 ([SRED]).
//!
//! SRED estimates the number of active flows without per-flow state. It keeps a *zombie list* of
//! `M` recently seen flow ids. Each arrival is compared with a zombie drawn at random: a *hit* if
//! it is the same flow (the zombie's count goes up), otherwise, with probability `p_overwrite`, the
//! arrival's flow replaces the zombie. The hit frequency
//!
//! ```text
//! P(t) = (1 − α) P(t − 1) + α Hit(t),   α = p_overwrite / M
//! ```
//!
//! estimates `Σ_i π_i²` (π_i the flows' shares of the arrivals), so `1 / P(t)` estimates the number
//! of active flows. The drop probability stabilises the queue around a third of the buffer `B`
//! whatever the number of flows — TCP needs a drop rate that grows with the square of the number
//! of flows to keep its windows, and the `256` below is the number of flows from which SRED drops
//! at full rate:
//!
//! ```text
//! p_sred(q) = p_max        if B/3 ≤ q
//!           = p_max / 4    if B/6 ≤ q < B/3
//!           = 0            if q < B/6
//! p_zap = p_sred(q) · min(1, 1 / (256 · P(t))²)                      (simple SRED)
//! p_zap = p_sred(q) · min(1, 1 / (256 · P(t))²) · (1 + Hit(t) / P(t))   (full SRED)
//! ```
//!
//! `q` is the instantaneous queue (SRED keeps no average). The full form drops flows that hit
//! more often — a flow with share π hits with probability π and `1 / P ≈ N` — harder, in
//! proportion to their share: SRED's way of holding misbehaving flows back. The zombies' counts
//! identify them ([SRED]'s misbehaving-flow identification) and are exposed, not acted on.
//! State: the zombie list, 16 bytes per zombie (flow id, count, time of the last hit).

use crate::control::{check_range, early_drop, early_signal};
use crate::fifo::Fifo;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// SRED parameters as written in a scenario (`aqm = { type = "sred", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SredParams {
    /// Zombies `M`.
    #[serde(default = "crate::defaults::sred::zombies")]
    pub zombies: u32,
    /// Probability that a non-hit arrival replaces the drawn zombie.
    #[serde(default = "crate::defaults::sred::p_overwrite")]
    pub p_overwrite: f64,
    /// Weight of the hit-frequency average. Absent = `p_overwrite / M`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Drop probability at a queue of at least B/3.
    #[serde(default = "crate::defaults::sred::p_max")]
    pub p_max: f64,
    /// The number of flows from which SRED drops at the full `p_sred` (256).
    #[serde(default = "crate::defaults::sred::n_full")]
    pub n_full: f64,
    /// `full` SRED (the hit term) or `simple` SRED.
    #[serde(default)]
    pub variant: SredVariant,
    /// Mark ECN-capable packets instead of dropping them early.
    #[serde(default)]
    pub ecn: bool,
}

/// Simple or full SRED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SredVariant {
    #[default]
    Full,
    Simple,
}

impl Default for SredParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for SredParams {
    fn validate(&self) -> Result<(), ParamError> {
        if !(1..=1 << 24).contains(&self.zombies) {
            return Err(ParamError::new("zombies", format!("must be 1..16777216, got {}", self.zombies)));
        }
        check_range("p_overwrite", self.p_overwrite, 0.0, 1.0)?;
        if let Some(a) = self.alpha {
            check_range("alpha", a, 0.0, 1.0)?;
        }
        check_range("p_max", self.p_max, 0.0, 1.0)?;
        if !(self.n_full.is_finite() && self.n_full >= 1.0) {
            return Err(ParamError::new("n_full", format!("must be a number >= 1, got {}", self.n_full)));
        }
        Ok(())
    }
}

/// A zombie.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Zombie {
    flow: u32,
    count: u32,
    /// Time of the last hit or of the insertion.
    stamp: Time,
}

/// SRED over one FIFO.
pub struct Sred<P> {
    fifo: Fifo<P>,
    limit: Limit,
    zombies: Vec<Zombie>,
    size: usize,
    p_overwrite: f64,
    alpha: f64,
    p_max: f64,
    n_full: f64,
    full: bool,
    ecn: bool,
    /// The hit frequency `P(t)`.
    p_hit: f64,
    last_p: f64,
}

impl<P: Pkt> Sred<P> {
    pub fn new(p: &SredParams, limit: Limit) -> Self {
        Sred {
            fifo: Fifo::default(),
            limit,
            zombies: Vec::with_capacity(p.zombies as usize),
            size: p.zombies as usize,
            p_overwrite: p.p_overwrite,
            alpha: p.alpha.unwrap_or(p.p_overwrite / p.zombies as f64),
            p_max: p.p_max,
            n_full: p.n_full,
            full: p.variant == SredVariant::Full,
            ecn: p.ecn,
            p_hit: 0.0,
            last_p: 0.0,
        }
    }

    /// `P(t)`.
    pub fn hit_frequency(&self) -> f64 {
        self.p_hit
    }

    /// The largest zombie count: SRED's candidate misbehaving flow and its count.
    pub fn top_zombie(&self) -> Option<(u32, u32)> {
        self.zombies.iter().max_by_key(|z| (z.count, std::cmp::Reverse(z.flow))).map(|z| (z.flow, z.count))
    }

    /// `p_sred(q)`.
    #[inline]
    fn p_sred(&self, q: f64) -> f64 {
        let b = self.limit.value as f64;
        if q >= b / 3.0 {
            self.p_max
        } else if q >= b / 6.0 {
            self.p_max / 4.0
        } else {
            0.0
        }
    }

    /// Compare the arrival with a random zombie; returns `Hit(t)`.
    #[inline]
    fn zombie_step(&mut self, flow: u32, cx: &mut Cx<'_, P>) -> bool {
        if self.zombies.len() < self.size {
            // the list fills with the first arrivals (no comparison yet)
            self.zombies.push(Zombie { flow, count: 0, stamp: cx.now });
            return false;
        }
        let i = cx.rng.below(self.size as u64) as usize;
        let z = &mut self.zombies[i];
        if z.flow == flow {
            z.count += 1;
            z.stamp = cx.now;
            true
        } else {
            if early_drop(cx.rng, self.p_overwrite) {
                *z = Zombie { flow, count: 0, stamp: cx.now };
            }
            false
        }
    }
}

impl<P: Pkt> Scheme<P> for Sred<P> {
    type Params = SredParams;
    fn new(params: &SredParams, _link: LinkInfo, limit: Limit) -> Self {
        Sred::new(params, limit)
    }
}

crate::hint::hint_from!(Sred, fifo.get);

impl<P: Pkt> Qdisc<P> for Sred<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let hit = self.zombie_step(pkt.flow(), cx);
        self.p_hit = (1.0 - self.alpha) * self.p_hit + if hit { self.alpha } else { 0.0 };
        let q = self.limit.qlen(self.fifo.len(), self.fifo.bytes()) as f64;
        let ps = self.p_sred(q);
        let p = if ps > 0.0 && self.p_hit > 0.0 {
            let scale = (1.0 / (self.n_full * self.p_hit)).powi(2).min(1.0);
            let boost = if self.full && hit { 1.0 + 1.0 / self.p_hit } else { 1.0 };
            (ps * scale * boost).min(1.0)
        } else {
            // P(t) = 0: no estimate of the flows yet; p_sred alone
            ps
        };
        self.last_p = p;
        let Some(pkt) = early_signal(p, pkt, self.ecn, cx) else { return false };
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        self.fifo.push(pkt, cx.now);
        true
    }

    crate::fifo::fifo_views!(fifo, pop);

    fn state_names(&self) -> &'static [&'static str] {
        &["p_hit", "flows_est", "p", "top_count"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.p_hit;
        out[1] = if self.p_hit > 0.0 { 1.0 / self.p_hit } else { 0.0 };
        out[2] = self.last_p;
        out[3] = self.top_zombie().map_or(0.0, |z| z.1 as f64);
    }
    /// The zombie list.
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + self.size * std::mem::size_of::<Zombie>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    #[test]
    fn defaults_and_validation() {
        let p = SredParams::default();
        assert!(p.validate().is_ok());
        let q: Sred<P> = Sred::new(&p, Limit::packets(600));
        assert_eq!(q.alpha, 0.25 / 1000.0);
        assert_eq!(
            (q.p_sred(50.0), q.p_sred(100.0), q.p_sred(199.0), q.p_sred(200.0)),
            (0.0, 0.15 / 4.0, 0.15 / 4.0, 0.15)
        );
        assert_eq!(SredParams { zombies: 0, ..p.clone() }.validate().unwrap_err().field, "zombies");
        assert_eq!(SredParams { n_full: 0.5, ..p.clone() }.validate().unwrap_err().field, "n_full");
    }

    /// [SRED]'s estimator: with N equally active flows, `P(t)` approaches `1/N` (so `1/P`
    /// counts the flows); with one flow taking half the arrivals, `P` approaches `Σ π_i²`.
    #[test]
    fn hit_frequency_estimates_the_number_of_flows() {
        for n in [10u32, 50, 200] {
            let mut q: Sred<P> = Sred::new(&SredParams::default(), Limit::packets(1_000_000));
            let mut rng = Rng::stream(u64::from(n), "sred", 0);
            let mut drops = Vec::new();
            for step in 0..400_000u32 {
                let mut cx = Cx { now: u64::from(step), rng: &mut rng, drops: &mut drops };
                let f = cx.rng.below(u64::from(n)) as u32;
                q.enqueue(P::new(f, 1000), &mut cx);
                q.dequeue(&mut cx);
            }
            let est = 1.0 / q.hit_frequency();
            assert!((est - f64::from(n)).abs() < 0.25 * f64::from(n), "N = {n}: 1/P = {est}");
        }
        // one flow with half of the arrivals, 50 others share the rest: Σ π² = 0.25 + 50 (0.01)²
        let mut q: Sred<P> = Sred::new(&SredParams::default(), Limit::packets(1_000_000));
        let mut rng = Rng::stream(3, "sred", 0);
        let mut drops = Vec::new();
        for step in 0..400_000u32 {
            let mut cx = Cx { now: u64::from(step), rng: &mut rng, drops: &mut drops };
            let f = if step % 2 == 0 { 0 } else { 1 + cx.rng.below(50) as u32 };
            q.enqueue(P::new(f, 1000), &mut cx);
            q.dequeue(&mut cx);
        }
        let want = 0.25 + 50.0 * 0.01f64.powi(2);
        assert!((q.hit_frequency() - want).abs() < 0.2 * want, "P = {}", q.hit_frequency());
        assert_eq!(q.top_zombie().unwrap().0, 0, "the heavy flow has the largest zombie count");
    }

    /// The drop probability: `p_sred(q) · min(1, (256 P)^-2)`, times `1 + 1/P` on a hit (full
    /// SRED), checked against the formula with the state the arrival sees.
    #[test]
    fn drop_probability_formula() {
        let p = SredParams { zombies: 4, ..Default::default() };
        let mut q: Sred<P> = Sred::new(&p, Limit::packets(60));
        let mut rng = Rng::stream(1, "sred", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // fill the zombie list with flow 1 and the queue to 30 >= B/3 = 20
        for _ in 0..4 {
            q.enqueue(P::new(1, 1000), &mut cx);
        }
        while q.fifo.len() < 30 {
            q.fifo.push(P::new(2, 1000), 0);
        }
        q.p_hit = 0.001;
        // flow 1 always hits: P = (1 − α) 0.001 + α, α = 0.25 / 4
        q.enqueue(P::new(1, 1000), &mut cx);
        let want = (0.15 * (1.0 / (256.0 * q.p_hit)).powi(2).min(1.0) * (1.0 + 1.0 / q.p_hit)).min(1.0);
        assert!((q.last_p - want).abs() < 1e-12, "{} vs {want}", q.last_p);
        assert!((q.p_hit - ((1.0 - 0.0625) * 0.001 + 0.0625)).abs() < 1e-15);
        // simple SRED has no hit term
        let mut s: Sred<P> = Sred::new(&SredParams { variant: SredVariant::Simple, ..p }, Limit::packets(60));
        s.zombies = q.zombies.clone();
        s.fifo = Fifo::default();
        while s.fifo.len() < 30 {
            s.fifo.push(P::new(2, 1000), 0);
        }
        s.p_hit = 0.001;
        s.enqueue(P::new(1, 1000), &mut cx);
        let want = 0.15 * (1.0 / (256.0 * s.p_hit)).powi(2).min(1.0);
        assert!((s.last_p - want).abs() < 1e-12);
    }
}
