//! CSFQ — Core-Stateless Fair Queueing.
//!
//! Reference: I. Stoica, S. Shenker, H. Zhang, "Core-Stateless Fair Queueing: Achieving
//! Approximately Fair Bandwidth Allocations in High Speed Networks", Proc. ACM SIGCOMM 1998
//! ([CSFQ]). Details the paper leaves to its simulator (the guards below) are compared with the
//! port of the authors' ns-2 code in the INET framework (`CSFQVLANQueue`), learned from, not
//! copied.
//!
//! Two kinds of router. An **edge** router, where a flow enters the network, keeps the flow's
//! rate `r_i` by exponential averaging over its packets ([CSFQ] §2.3, Eq. (3)):
//!
//! ```text
//! r_i ← (1 − e^(−T/K)) · l / T + e^(−T/K) · r_i
//! ```
//!
//! (`l` the packet's length, `T` the time since the flow's previous packet) and writes it into
//! each packet as its *label* ([`EdgeRate`]; the simulator runs it where each flow enters the
//! network). A **core** router keeps no per-flow state: an arriving packet with label `r` is
//! dropped with probability `max(0, 1 − α / r)` (Eq. (2)), where `α` is the fair share — the rate
//! such that `Σ min(r_i, α) = C` (Eq. (1)) — and an admitted packet whose label exceeds `α` is
//! relabelled `α`, the flow's rate after this link. `α` is estimated from the aggregate arrival
//! rate `A` and the accepted rate `F` (both by the same exponential averaging, constant
//! `K_α`): while the link is congested (`A ≥ C`) `α ← α · C / F` once every `K_c`; while it is
//! not, `α` becomes the largest label seen during the last `K_c`. A buffer overflow lowers `α` by
//! 1 %, at most 29 times per `K_c` (0.99^29 ≈ 0.75; the authors' code).
//!
//! With `labels = "local"` this router is its own edge: it estimates every flow's rate itself
//! (per-flow state, for a network without labelling edges).

use crate::control::{check_period, check_range, early_drop, period_ns};
use crate::fifo::Fifo;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// CSFQ parameters as written in a scenario (`aqm = { type = "csfq", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CsfqParams {
    /// The edge's averaging constant `K` for flow rates, seconds.
    #[serde(with = "crate::units::secs", default = "crate::defaults::csfq::k")]
    pub k: f64,
    /// The core's averaging constant `K_α` for the aggregate rates `A` and `F`, seconds.
    #[serde(with = "crate::units::secs", default = "crate::defaults::csfq::k_alpha")]
    pub k_alpha: f64,
    /// The window `K_c` of `α`'s updates, seconds.
    #[serde(with = "crate::units::secs", default = "crate::defaults::csfq::k_c")]
    pub k_c: f64,
    /// Where labels come from: `packet` (set where each flow entered the network) or `local`
    /// (this router estimates every flow's rate itself).
    #[serde(default)]
    pub labels: Labels,
    /// Relabel admitted packets with `min(label, α)`.
    #[serde(default = "crate::defaults::csfq::relabel")]
    pub relabel: bool,
    /// Relative decrease of `α` on a buffer overflow.
    #[serde(default = "crate::defaults::csfq::overflow_decrease")]
    pub overflow_decrease: f64,
    /// At most this many overflow decreases per `K_c`.
    #[serde(default = "crate::defaults::csfq::max_decreases")]
    pub max_decreases: u32,
}

/// The source of the labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Labels {
    #[default]
    Packet,
    Local,
}

impl Default for CsfqParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for CsfqParams {
    fn validate(&self) -> Result<(), ParamError> {
        check_period("k", self.k)?;
        check_period("k_alpha", self.k_alpha)?;
        check_period("k_c", self.k_c)?;
        check_range("overflow_decrease", self.overflow_decrease, 0.0, 1.0)?;
        Ok(())
    }
}

/// A rate by [CSFQ]'s exponential averaging (Eq. (3)): an edge's estimate of one flow's rate,
/// and the core's aggregate rates. Packets of the same instant are summed into the next update
/// (the averaging needs `T > 0`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EdgeRate {
    /// Bits per second.
    rate: f64,
    last: Time,
    /// Bits of earlier packets of the same instant.
    pending: f64,
}

impl EdgeRate {
    /// Account `bytes` arriving at `now` with averaging constant `k_ns`; returns the rate in
    /// bits per second. The state starts at rate 0 at time 0 (the simulators' zeroed state).
    #[inline]
    pub fn update(&mut self, now: Time, bytes: u32, k_ns: f64) -> f64 {
        let bits = 8.0 * bytes as f64 + self.pending;
        let dt = now.saturating_sub(self.last);
        if dt == 0 {
            self.pending = bits;
            return self.rate;
        }
        let t = dt as f64;
        let w = libm::exp(-t / k_ns);
        self.rate = (1.0 - w) * bits / (t / NS_PER_SEC as f64) + w * self.rate;
        self.last = now;
        self.pending = 0.0;
        self.rate
    }

    /// The current estimate (bits per second).
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

/// CSFQ's core over one FIFO.
pub struct Csfq<P> {
    fifo: Fifo<P>,
    limit: Limit,
    capacity: f64,
    k_ns: f64,
    k_alpha_ns: f64,
    k_c: Time,
    labels: Labels,
    relabel: bool,
    overflow_decrease: f64,
    max_decreases: u32,
    /// The fair share estimate (bits per second).
    alpha: f64,
    /// Aggregate arrival rate `A` and accepted rate `F` (bits per second).
    a: f64,
    f: f64,
    last_arrival: Option<Time>,
    pending_a: f64,
    pending_f: f64,
    congested: bool,
    start: Time,
    tmp_alpha: f64,
    decreases_left: u32,
    /// Per-flow rates (`labels = "local"` only).
    local: FxHashMap<u32, EdgeRate>,
    last_p: f64,
}

impl<P: Pkt> Csfq<P> {
    pub fn new(p: &CsfqParams, link: LinkInfo, limit: Limit) -> Self {
        Csfq {
            fifo: Fifo::default(),
            limit,
            capacity: link.rate_bps,
            k_ns: p.k * NS_PER_SEC as f64,
            k_alpha_ns: p.k_alpha * NS_PER_SEC as f64,
            k_c: period_ns(p.k_c),
            labels: p.labels,
            relabel: p.relabel,
            overflow_decrease: p.overflow_decrease,
            max_decreases: p.max_decreases,
            // no flow is limited before the link has been congested
            alpha: link.rate_bps,
            a: 0.0,
            f: 0.0,
            last_arrival: None,
            pending_a: 0.0,
            pending_f: 0.0,
            congested: false,
            start: 0,
            tmp_alpha: 0.0,
            decreases_left: p.max_decreases,
            local: FxHashMap::default(),
            last_p: 0.0,
        }
    }

    /// The fair share estimate `α` (bits per second).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// `estimate_α` of [CSFQ]'s pseudo-code (§2.3): update `A` (and `F` for an accepted packet)
    /// and then `α`.
    fn estimate_alpha(&mut self, now: Time, bytes: u32, accepted: bool, label: Option<f64>) {
        let bits = 8.0 * bytes as f64;
        self.pending_a += bits;
        if accepted {
            self.pending_f += bits;
        }
        let Some(last) = self.last_arrival else {
            self.last_arrival = Some(now);
            self.start = now;
            return;
        };
        let dt = now.saturating_sub(last);
        if dt == 0 {
            return;
        }
        let w = libm::exp(-(dt as f64) / self.k_alpha_ns);
        let secs = dt as f64 / NS_PER_SEC as f64;
        self.a = (1.0 - w) * self.pending_a / secs + w * self.a;
        self.f = (1.0 - w) * self.pending_f / secs + w * self.f;
        self.pending_a = 0.0;
        self.pending_f = 0.0;
        self.last_arrival = Some(now);
        let c = self.capacity;
        if self.a >= c {
            if !self.congested {
                self.congested = true;
                self.start = now;
                self.decreases_left = self.max_decreases;
                if self.alpha <= 0.0 {
                    // guard (no labelled packet in the last window): start from the largest
                    // label seen, or the link
                    self.alpha = if self.tmp_alpha > 0.0 { self.tmp_alpha } else { c };
                }
            } else if now > self.start + self.k_c {
                if self.f > 0.0 {
                    self.alpha = (self.alpha * c / self.f).min(c);
                }
                self.start = now;
                self.decreases_left = self.max_decreases;
            }
        } else if self.congested {
            self.congested = false;
            self.start = now;
            self.tmp_alpha = 0.0;
        } else if now < self.start + self.k_c {
            if let Some(r) = label {
                self.tmp_alpha = self.tmp_alpha.max(r);
            }
        } else {
            // guard: a window without labelled packets leaves α as it was
            if self.tmp_alpha > 0.0 {
                self.alpha = self.tmp_alpha.min(c);
            }
            self.start = now;
            self.tmp_alpha = 0.0;
        }
    }
}

impl<P: Pkt> Scheme<P> for Csfq<P> {
    type Params = CsfqParams;
    fn new(params: &CsfqParams, link: LinkInfo, limit: Limit) -> Self {
        Csfq::new(params, link, limit)
    }
}

crate::hint::hint_from!(Csfq, fifo.get);

impl<P: Pkt> Qdisc<P> for Csfq<P> {
    fn enqueue(&mut self, mut pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let now = cx.now;
        let label = match self.labels {
            Labels::Packet => pkt.rate_label(),
            Labels::Local => {
                let k = self.k_ns;
                Some(self.local.entry(pkt.flow()).or_default().update(now, pkt.size(), k))
            }
        };
        // Eq. (2): drop with max(0, 1 − α / label)
        let p = match label {
            Some(r) if r > self.alpha => 1.0 - self.alpha / r,
            _ => 0.0,
        };
        self.last_p = p;
        if early_drop(cx.rng, p) {
            self.estimate_alpha(now, pkt.size(), false, label);
            cx.drop(pkt, DropReason::Early);
            return false;
        }
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            self.estimate_alpha(now, pkt.size(), false, label);
            if self.decreases_left > 0 {
                self.alpha *= 1.0 - self.overflow_decrease;
                self.decreases_left -= 1;
            }
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        self.estimate_alpha(now, pkt.size(), true, label);
        if self.relabel {
            if let Some(r) = label {
                if r > self.alpha {
                    pkt.set_rate_label(self.alpha);
                }
            }
        }
        self.fifo.push(pkt, now);
        true
    }

    crate::fifo::fifo_views!(fifo, pop);

    fn state_names(&self) -> &'static [&'static str] {
        &["alpha", "a_rate", "f_rate", "p"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.alpha;
        out[1] = self.a;
        out[2] = self.f;
        out[3] = self.last_p;
    }
    /// The core's scalars; with local labels also the per-flow rates at their largest.
    fn state_bytes(&self) -> u64 {
        let per_flow = std::mem::size_of::<(u32, EdgeRate)>();
        (std::mem::size_of::<Self>() + per_flow * self.local.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    #[test]
    fn defaults_and_validation() {
        let p = CsfqParams::default();
        assert!(p.validate().is_ok());
        assert_eq!((p.k, p.k_alpha, p.k_c), (0.1, 0.2, 0.2));
        assert_eq!(CsfqParams { k: 0.0, ..p.clone() }.validate().unwrap_err().field, "k");
        assert_eq!(
            CsfqParams { overflow_decrease: 1.5, ..p.clone() }.validate().unwrap_err().field,
            "overflow_decrease"
        );
    }

    /// [CSFQ] Eq. (3): the edge's label converges to the flow's rate — exactly for constant
    /// spacing, within a few per cent for Poisson arrivals — and packets of one instant are
    /// counted together.
    #[test]
    fn labels_converge_to_the_flow_rate() {
        let k = 0.1 * NS_PER_SEC as f64;
        // 1000-byte packets every 4 ms: 2 Mb/s
        let mut e = EdgeRate::default();
        let mut r = 0.0;
        for i in 1..=500u64 {
            r = e.update(i * 4_000_000, 1000, k);
        }
        assert!((r - 2e6).abs() < 1e-6 * 2e6, "{r}");
        // Poisson arrivals at 250 packets/s of 500 bytes: 1 Mb/s
        let mut rng = Rng::stream(9, "csfq", 0);
        let mut e = EdgeRate::default();
        let (mut t, mut sum, mut n) = (0.0f64, 0.0, 0);
        for i in 0..200_000 {
            t += -libm::log(1.0 - rng.uniform()) / 250.0;
            let r = e.update((t * 1e9) as Time, 500, k);
            if i > 1000 {
                sum += r;
                n += 1;
            }
        }
        let mean = sum / n as f64;
        assert!((mean - 1e6).abs() < 0.05e6, "mean label {mean}");
        // of two packets at one instant, the second is counted with the next update
        let mut e = EdgeRate::default();
        e.update(1_000_000_000, 1000, k);
        let before = e.rate();
        assert_eq!(e.update(2_000_000_000, 1000, k), e.update(2_000_000_000, 1000, k));
        let after = e.update(3_000_000_000, 1000, k);
        let w = libm::exp(-10.0);
        assert!((e.rate() - after).abs() < 1e-9);
        let mid = (1.0 - w) * 8000.0 + w * before; // the update at t = 2 s (first of the burst)
        let want = (1.0 - w) * (8000.0 * 2.0) + w * mid;
        assert!((after - want).abs() < 1e-6, "{after} vs {want}");
    }

    /// Eq. (2) and relabelling: with `α` fixed, a packet labelled `2α` is dropped with
    /// probability 1/2 (one draw, checked against a copy of the stream) and relabelled `α` when
    /// admitted; a packet below `α` is never dropped and keeps its label.
    #[test]
    fn drop_probability_and_relabel() {
        let mut q: Csfq<P> = Csfq::new(&CsfqParams::default(), LinkInfo { rate_bps: 1e7 }, Limit::packets(100));
        q.alpha = 1e6;
        let mut rng = Rng::stream(2, "csfq", 0);
        let mut drops = Vec::new();
        for i in 0..50 {
            let mut shadow = rng.clone();
            let mut cx = Cx { now: i * 1000, rng: &mut rng, drops: &mut drops };
            q.alpha = 1e6;
            let mut p = P::new(1, 1000);
            p.label = Some(2e6);
            let u = shadow.uniform();
            let ok = q.enqueue(p, &mut cx);
            assert_eq!(ok, u >= 0.5);
            assert!((q.last_p - 0.5).abs() < 1e-12);
            if ok {
                let (last, _) = q.fifo.iter().last().unwrap();
                assert_eq!(last.label, Some(1e6));
            }
        }
        let mut cx = Cx { now: 1_000_000, rng: &mut rng, drops: &mut drops };
        let mut p = P::new(2, 1000);
        p.label = Some(0.5e6);
        assert!(q.enqueue(p, &mut cx));
        assert_eq!(q.fifo.iter().last().unwrap().0.label, Some(0.5e6));
        // an unlabelled packet is never dropped early
        assert!(q.enqueue(P::new(3, 1000), &mut cx));
    }

    /// Run constant-rate flows (rates in Mb/s, 1000-byte packets) through a CSFQ core on a
    /// 10 Mb/s link; returns each flow's admitted rate over the second half and the final α.
    fn fair_share_run(rates: &[f64], labels: Labels) -> (Vec<f64>, f64) {
        let params = CsfqParams { labels, ..Default::default() };
        let mut q: Csfq<P> = Csfq::new(&params, LinkInfo { rate_bps: 1e7 }, Limit::packets(200));
        let mut rng = Rng::stream(4, "csfq", 0);
        let mut drops = Vec::new();
        let mut edges = vec![EdgeRate::default(); rates.len()];
        // next arrival time of each flow (ns), spaced exactly
        let gaps: Vec<u64> = rates.iter().map(|r| (8000.0 / (r * 1e6) * 1e9) as u64).collect();
        let mut next: Vec<u64> = gaps.iter().enumerate().map(|(i, g)| g * (i as u64 + 1) / 7).collect();
        let (end, half) = (40 * NS_PER_SEC, 20 * NS_PER_SEC);
        let mut served = 0u64;
        let mut admitted = vec![0u64; rates.len()];
        loop {
            let (f, &t) = next.iter().enumerate().min_by_key(|(_, t)| **t).unwrap();
            if t > end {
                break;
            }
            let mut cx = Cx { now: t, rng: &mut rng, drops: &mut drops };
            // the link serves 1250 packets/s
            while served < t / 800_000 {
                q.dequeue(&mut cx);
                served += 1;
            }
            let mut p = P::new(f as u32, 1000);
            if labels == Labels::Packet {
                p.label = Some(edges[f].update(t, 1000, 0.1e9));
            }
            if q.enqueue(p, &mut cx) && t > half {
                admitted[f] += 1;
            }
            next[f] += gaps[f];
        }
        let secs = (end - half) as f64 / 1e9;
        (admitted.iter().map(|&a| a as f64 * 8000.0 / secs / 1e6).collect(), q.alpha)
    }

    /// [CSFQ] §2.1: admitted rates approach `min(r_i, α)` with `α` the max-min fair share. Flows
    /// of 1, 2, 4, 8 and 16 Mb/s on a 10 Mb/s link: α = 7/3 Mb/s (1 + 2 + 3 · 7/3 = 10) — the
    /// three fast flows get about the same rate, the two slow ones all of theirs; with labels
    /// from the edges and with local labels.
    #[test]
    fn admitted_rates_approach_the_fair_share() {
        for labels in [Labels::Packet, Labels::Local] {
            let (a, alpha) = fair_share_run(&[1.0, 2.0, 4.0, 8.0, 16.0], labels);
            let fair = 7.0 / 3.0;
            eprintln!("CSFQ {labels:?}: admitted {a:?} Mb/s, alpha {:.3} Mb/s (fair {fair:.3})", alpha / 1e6);
            assert!(a[0] > 0.9 && a[1] > 1.8, "{labels:?}: slow flows lost traffic: {a:?}");
            for &x in &a[2..] {
                assert!((x - fair).abs() < 0.25 * fair, "{labels:?}: {a:?} (alpha {alpha})");
            }
            assert!((alpha / 1e6 - fair).abs() < 0.35 * fair, "{labels:?}: alpha {alpha}");
            let total: f64 = a.iter().sum();
            assert!(total > 9.0, "{labels:?}: link under-used: {a:?}");
        }
    }
}
