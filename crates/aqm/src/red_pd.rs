//! RED-PD — RED with Preferential Dropping.
//!
//! Reference: R. Mahajan, S. Floyd, D. Wetherall, "Controlling High-Bandwidth Flows at the
//! Congested Router", Proc. IEEE ICNP 2001 ([RED-PD]); the longer ICSI report TR-01-001 (Mahajan
//! and Floyd, 2001); ns-2's `queue/red-pd.cc` (the pre-filter in front of RED), learned from,
//! not copied.
//!
//! RED-PD is RED plus state for the few high-bandwidth flows only. Its *identification engine*
//! reads RED's own drops: they are a sample of the arrivals that were told to slow down. The drop
//! history is cut into lists, each as long as the time in which a reference TCP flow — round-trip
//! time `R` (the target RTT), the router's current drop rate `p` — gets one drop on average: a
//! flow of the response function `f(R, p) = sqrt(1.5) / (R sqrt(p))` packets per second sees a
//! drop every `1 / (p f) = R sqrt(2 / (3p))` seconds. A flow with drops in at least `K` of the
//! last `M` lists sends faster than the reference flow and is *monitored*. A monitored flow passes
//! a *pre-filter* before RED's queue that drops its packets with probability `P_i`, set so that
//! what reaches RED is the reference rate, `P_i = (1 − f(R, p) / r_i)^+` (`r_i` the flow's arrival
//! rate, measured over the last list; ns-2's `getP_monFlow` of the current and target bandwidths),
//! with each change bounded by `max_p_change` per list (the paper bounds the changes to avoid
//! oscillation). A flow whose `P_i` returns to 0 is no longer monitored. Pre-filtering is
//! suspended while RED's average is below `min_th` (ns-2: the link is not congested). The
//! pre-filter's drops use RED's uniformisation with a per-flow count (ns-2's `modify_p`).

use crate::control::{check_period, check_range};
use crate::fifo::Fifo;
use crate::red::{RedMode, RedParams, RedStage, RedVariant};
use crate::red_math::p_base;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, QueueUnit, Scheme, Time, NS_PER_SEC};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

/// RED-PD parameters as written in a scenario (`aqm = { type = "red_pd", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedPdParams {
    /// RED's lower threshold (queue unit). Absent = a quarter of the buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_th: Option<f64>,
    /// RED's upper threshold. Absent = three quarters of the buffer (`3 min_th`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_th: Option<f64>,
    #[serde(default = "crate::defaults::red_pd::max_p")]
    pub max_p: f64,
    #[serde(default = "crate::defaults::red_pd::w_q")]
    pub w_q: f64,
    /// RED's gentle ramp above `max_th` (ns-2's default since 2001).
    #[serde(default = "crate::defaults::red_pd::gentle")]
    pub gentle: bool,
    /// Typical packet size (bytes): RED's idle aging, and the size of the reference flow's packets.
    #[serde(default = "crate::defaults::red_pd::mean_pkt_size")]
    pub mean_pkt_size: u32,
    /// The target RTT `R` of the reference TCP flow, seconds.
    #[serde(with = "crate::units::secs", default = "crate::defaults::red_pd::target_rtt")]
    pub target_rtt: f64,
    /// Add this queue's average queueing delay to `R`: the reference flow crosses this queue
    /// too (`false` = `R` alone, the paper's literal reading).
    #[serde(default = "crate::defaults::red_pd::rtt_with_queue")]
    pub rtt_with_queue: bool,
    /// Lists of drop history `M`.
    #[serde(default = "crate::defaults::red_pd::lists")]
    pub lists: u32,
    /// A flow is identified with drops in at least `K` of the `M` lists.
    #[serde(default = "crate::defaults::red_pd::identify")]
    pub identify: u32,
    /// Largest change of a flow's `P_i` at one list boundary.
    #[serde(default = "crate::defaults::red_pd::max_p_change")]
    pub max_p_change: f64,
    /// Mark ECN-capable packets instead of RED's early drops (the pre-filter always drops).
    #[serde(default)]
    pub ecn: bool,
}

impl Default for RedPdParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

/// RED thresholds given or derived from the buffer: `B / 4` and `3 B / 4` (Floyd's
/// `max_th = 3 min_th`, inside the buffer), shared by RED-PD and xCHOKe.
pub(crate) fn thresholds(min_th: Option<f64>, max_th: Option<f64>, limit: &Limit) -> (f64, f64) {
    let b = limit.value as f64;
    let lo = min_th.unwrap_or(b / 4.0);
    let hi = max_th.unwrap_or(if min_th.is_some() { 3.0 * lo } else { 3.0 * b / 4.0 });
    (lo, hi)
}

/// Check optional RED thresholds (the rest as RED).
pub(crate) fn check_optional_red(
    min_th: Option<f64>,
    max_th: Option<f64>,
    max_p: f64,
    w_q: f64,
) -> Result<(), ParamError> {
    let lo = min_th.unwrap_or(0.0);
    let hi = max_th.unwrap_or(f64::MAX);
    crate::red_math::check_red(lo, hi, max_p, w_q)
}

impl Params for RedPdParams {
    fn validate(&self) -> Result<(), ParamError> {
        check_optional_red(self.min_th, self.max_th, self.max_p, self.w_q)?;
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        check_period("target_rtt", self.target_rtt)?;
        if !(1..=64).contains(&self.lists) {
            return Err(ParamError::new("lists", format!("must be 1..64, got {}", self.lists)));
        }
        if !(1..=self.lists).contains(&self.identify) {
            return Err(ParamError::new(
                "identify",
                format!("must be 1..lists ({}), got {}", self.lists, self.identify),
            ));
        }
        check_range("max_p_change", self.max_p_change, 0.0, 1.0)?;
        if self.max_p_change == 0.0 {
            return Err(ParamError::new("max_p_change", "must be > 0"));
        }
        Ok(())
    }
}

/// One list of the drop history.
#[derive(Debug, Default, Clone)]
struct DropList {
    /// The flows RED dropped during the list (each once: identification needs only whether a
    /// flow had drops in a list).
    flows: FxHashSet<u32>,
    arrivals: u64,
    drops: u64,
}

/// A monitored flow.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Monitored {
    /// The pre-filter's drop probability `P_i`.
    p: f64,
    /// Arrivals at the pre-filter during the current list.
    arrivals: u64,
    /// Uniformisation count of the pre-filter's drops.
    count: i64,
}

/// RED-PD over one FIFO.
pub struct RedPd<P> {
    fifo: Fifo<P>,
    limit: Limit,
    red: RedStage,
    min_th: f64,
    /// One packet in the queue unit (for `rtt_with_queue`).
    pkt_unit: f64,
    /// Seconds to transmit a typical packet.
    pkt_time: f64,
    r: f64,
    rtt_with_queue: bool,
    k: u32,
    max_change: f64,
    /// The last `M` lists, the current one at `cur`.
    lists: Vec<DropList>,
    cur: usize,
    list_start: Time,
    list_end: Time,
    monitored: FxHashMap<u32, Monitored>,
    /// Scratch: lists in which each flow has drops (reused).
    seen: FxHashMap<u32, (u32, u32)>,
    peak_history: usize,
    peak_monitored: usize,
    p_ambient: f64,
}

impl<P: Pkt> RedPd<P> {
    pub fn new(p: &RedPdParams, link: LinkInfo, limit: Limit) -> Self {
        let (min_th, max_th) = thresholds(p.min_th, p.max_th, &limit);
        let mut red = RedParams::with_thresholds(min_th, max_th, p.max_p);
        red.w_q = p.w_q;
        red.gentle = p.gentle;
        red.mean_pkt_size = p.mean_pkt_size;
        red.max_pkt_size = p.mean_pkt_size;
        red.mode = RedMode::Packet;
        red.variant = RedVariant::Fj93;
        red.ecn = p.ecn;
        let pkt_unit = match limit.unit {
            QueueUnit::Packets => 1.0,
            QueueUnit::Bytes => p.mean_pkt_size as f64,
        };
        let r = p.target_rtt;
        RedPd {
            fifo: Fifo::default(),
            limit,
            red: red.stage(link),
            min_th,
            pkt_unit,
            pkt_time: 8.0 * p.mean_pkt_size as f64 / link.rate_bps,
            r,
            rtt_with_queue: p.rtt_with_queue,
            k: p.identify,
            max_change: p.max_p_change,
            lists: vec![DropList::default(); p.lists as usize],
            cur: 0,
            list_start: 0,
            list_end: (r * NS_PER_SEC as f64) as Time,
            monitored: FxHashMap::default(),
            seen: FxHashMap::default(),
            peak_history: 0,
            peak_monitored: 0,
            p_ambient: 0.0,
        }
    }

    /// The reference flow's RTT: `R`, plus this queue's average delay with `rtt_with_queue`.
    fn rtt(&self) -> f64 {
        if self.rtt_with_queue {
            self.r + self.red.est.avg() / self.pkt_unit * self.pkt_time
        } else {
            self.r
        }
    }

    /// `f(R, p)` in packets per second.
    fn reference_rate(&self, p: f64) -> f64 {
        1.5f64.sqrt() / (self.rtt() * p.sqrt())
    }

    /// The pre-filter probability of `flow` (0 if it is not monitored).
    pub fn p_of(&self, flow: u32) -> f64 {
        self.monitored.get(&flow).map_or(0.0, |m| m.p)
    }

    /// Close the current list at `now`: identify, update the monitored flows, open the next list.
    fn end_list(&mut self, now: Time) {
        // the ambient drop rate over the history
        let (a, d) = self.lists.iter().fold((0u64, 0u64), |(a, d), l| (a + l.arrivals, d + l.drops));
        self.p_ambient = if a > 0 { d as f64 / a as f64 } else { 0.0 };
        // identification: flows with drops in at least K of the M lists
        self.seen.clear();
        for (i, l) in self.lists.iter().enumerate() {
            for &f in &l.flows {
                let e = self.seen.entry(f).or_insert((0, u32::MAX));
                if e.1 != i as u32 {
                    *e = (e.0 + 1, i as u32);
                }
            }
        }
        for (&f, &(n, _)) in &self.seen {
            if n >= self.k {
                self.monitored.entry(f).or_default();
            }
        }
        // monitored flows: P_i towards (1 - f(R, p) / r_i)^+, bounded; release at 0
        let secs = now.saturating_sub(self.list_start).max(1) as f64 / NS_PER_SEC as f64;
        let f_ref = if self.p_ambient > 0.0 { self.reference_rate(self.p_ambient) } else { f64::INFINITY };
        let max_change = self.max_change;
        let seen = &self.seen;
        let k = self.k;
        self.monitored.retain(|flow, m| {
            let r_i = m.arrivals as f64 / secs;
            let want = if r_i > f_ref { 1.0 - f_ref / r_i } else { 0.0 };
            m.p = (m.p + (want - m.p).clamp(-max_change, max_change)).clamp(0.0, 1.0);
            m.arrivals = 0;
            m.p > 0.0 || seen.get(flow).is_some_and(|&(n, _)| n >= k)
        });
        self.peak_monitored = self.peak_monitored.max(self.monitored.len());
        // the next list: as long as a reference flow takes to see one drop, R sqrt(2 / (3p)),
        // within [R, 100 R] (100 R while there are no drops)
        let r = self.rtt();
        let len = if self.p_ambient > 0.0 {
            (r * (2.0 / (3.0 * self.p_ambient)).sqrt()).clamp(r, 100.0 * r)
        } else {
            100.0 * r
        };
        self.cur = (self.cur + 1) % self.lists.len();
        let l = &mut self.lists[self.cur];
        l.flows.clear();
        l.arrivals = 0;
        l.drops = 0;
        self.list_start = now;
        self.list_end = now + (len * NS_PER_SEC as f64) as Time;
    }

    /// Record a drop by RED (or the buffer) in the current list.
    #[inline]
    fn record_drop(&mut self, flow: u32) {
        let l = &mut self.lists[self.cur];
        l.flows.insert(flow);
        l.drops += 1;
        let entries: usize = self.lists.iter().map(|l| l.flows.len()).sum();
        self.peak_history = self.peak_history.max(entries);
    }
}

impl<P: Pkt> Scheme<P> for RedPd<P> {
    type Params = RedPdParams;
    fn new(params: &RedPdParams, link: LinkInfo, limit: Limit) -> Self {
        RedPd::new(params, link, limit)
    }
}

crate::hint::hint_from!(RedPd, fifo.get);

impl<P: Pkt> Qdisc<P> for RedPd<P> {
    fn enqueue(&mut self, mut pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let now = cx.now;
        while now >= self.list_end {
            let at = self.list_end;
            self.end_list(at.max(self.list_start + 1));
        }
        let flow = pkt.flow();
        let q = self.limit.qlen(self.fifo.len(), self.fifo.bytes());
        // the pre-filter for monitored flows (suspended below min_th and with at most one packet
        // queued, as ns-2 does for responsive flows)
        if let Some(m) = self.monitored.get_mut(&flow) {
            m.arrivals += 1;
            if m.p > 0.0 && self.red.est.avg() >= self.min_th && self.fifo.len() > 1 {
                // RED's uniformisation with the count of survivors since the flow's last drop
                let c = m.count as f64;
                let pa = if c * m.p < 1.0 { m.p / (1.0 - c * m.p) } else { 1.0 };
                if cx.rng.uniform() < pa {
                    m.count = 0;
                    cx.drop(pkt, DropReason::Forced);
                    return false;
                }
                m.count += 1;
            }
        }
        // RED's output queue: its drops are the history
        self.lists[self.cur].arrivals += 1;
        let avg = self.red.est.update(now, q as f64);
        let region = p_base(avg, &self.red.th);
        if let Some(reason) = self.red.test.decide(region, pkt.size(), self.fifo.len(), cx.rng) {
            let ecn = self.red.ecn;
            let Some(marked) = cx.verdict(pkt, reason, ecn) else {
                self.record_drop(flow);
                if self.fifo.is_empty() {
                    self.red.on_queue_empty(now);
                }
                return false;
            };
            pkt = marked;
        }
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            self.record_drop(flow);
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        self.fifo.push(pkt, now);
        true
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let e = self.fifo.pop();
        if e.is_some() && self.fifo.is_empty() {
            self.red.on_queue_empty(cx.now);
        }
        e
    }

    crate::fifo::fifo_views!(fifo);

    fn on_link_idle(&mut self, now: Time) {
        self.red.on_link_idle(now);
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["avg", "p", "monitored", "p_ambient"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.red.est.avg();
        out[1] = self.red.test.last_p();
        out[2] = self.monitored.len() as f64;
        out[3] = self.p_ambient;
    }
    /// The drop history (4 bytes per flow and list with drops) and the monitored flows, at their
    /// largest.
    fn state_bytes(&self) -> u64 {
        let mon = std::mem::size_of::<(u32, Monitored)>();
        let lists = self.lists.len() * std::mem::size_of::<DropList>();
        (std::mem::size_of::<Self>() + lists + 4 * self.peak_history + mon * self.peak_monitored) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    #[test]
    fn defaults_and_validation() {
        let p = RedPdParams::default();
        assert!(p.validate().is_ok());
        assert_eq!((p.target_rtt, p.lists, p.identify), (0.04, 5, 3));
        assert_eq!(RedPdParams { identify: 6, ..p.clone() }.validate().unwrap_err().field, "identify");
        assert_eq!(RedPdParams { lists: 0, ..p.clone() }.validate().unwrap_err().field, "lists");
        assert_eq!(
            RedPdParams { min_th: Some(50.0), max_th: Some(40.0), ..p.clone() }.validate().unwrap_err().field,
            "max_th"
        );
        assert_eq!(RedPdParams { target_rtt: 0.0, ..p.clone() }.validate().unwrap_err().field, "target_rtt");
        assert_eq!(thresholds(None, None, &Limit::packets(100)), (25.0, 75.0));
        assert_eq!(thresholds(Some(10.0), None, &Limit::packets(100)), (10.0, 30.0));
    }

    /// The list length is the time in which the reference flow gets one drop: R sqrt(2 / (3p)).
    #[test]
    fn list_length_follows_the_drop_rate() {
        let mut q: RedPd<P> = RedPd::new(&RedPdParams::default(), LinkInfo { rate_bps: 1e7 }, Limit::packets(100));
        q.lists[q.cur].arrivals = 1000;
        q.lists[q.cur].drops = 24; // p = 0.024: length 0.04 sqrt(2 / 0.072) = 0.2108 s
        q.end_list(1_000_000_000);
        let len = (q.list_end - q.list_start) as f64 / 1e9;
        assert!((len - 0.04 * (2.0f64 / 0.072).sqrt()).abs() < 1e-6, "{len}");
        // f(R, p) = sqrt(1.5) / (0.04 sqrt(0.024)) = 197.6 packets/s
        assert!((q.reference_rate(0.024) - 1.5f64.sqrt() / (0.04 * 0.024f64.sqrt())).abs() < 1e-9);
    }

    /// Identification: a flow with drops in at least K = 3 of the M = 5 lists is monitored; one
    /// with drops in two is not.
    #[test]
    fn identification_k_of_m_lists() {
        let mut q: RedPd<P> = RedPd::new(&RedPdParams::default(), LinkInfo { rate_bps: 1e7 }, Limit::packets(100));
        let mut t = 0;
        for i in 0..5 {
            q.lists[q.cur].arrivals = 100;
            q.record_drop(7); // flow 7 in every list
            if i < 2 {
                q.record_drop(8); // flow 8 in two lists only
                q.record_drop(8);
            }
            t += 100_000_000;
            q.end_list(t);
        }
        assert!(q.monitored.contains_key(&7));
        assert!(!q.monitored.contains_key(&8));
    }

    /// [RED-PD]'s claim: a high-bandwidth flow is identified from RED's drops and pre-filtered
    /// down towards the reference rate f(R, p), and the other flows are not monitored. A
    /// 2000-packet/s constant flow meets 20 flows of 20 packets/s each on a 1000-packet/s link;
    /// RED alone would give it about 2000/2400 of the link.
    #[test]
    fn a_high_bandwidth_flow_is_identified_and_prefiltered() {
        let p = RedPdParams { min_th: Some(20.0), max_th: Some(60.0), rtt_with_queue: false, ..Default::default() };
        let mut q: RedPd<P> = RedPd::new(&p, LinkInfo { rate_bps: 8e6 }, Limit::packets(100));
        let mut rng = Rng::stream(5, "redpd", 0);
        let mut drops = Vec::new();
        let (mut served, mut out) = (0u64, [0u64; 2]);
        let from = 20 * NS_PER_SEC;
        for step in 0..(2400 * 40) as u64 {
            let t = step * NS_PER_SEC / 2400;
            let mut cx = Cx { now: t, rng: &mut rng, drops: &mut drops };
            while served < t * 1000 / NS_PER_SEC {
                if let Some((pk, _)) = q.dequeue(&mut cx) {
                    if t > from {
                        out[(pk.flow != 0) as usize] += 1;
                    }
                }
                served += 1;
            }
            let flow = if step % 6 < 5 { 0 } else { 1 + (step / 6 % 20) as u32 };
            q.enqueue(P::new(flow, 1000), &mut cx);
        }
        let share = out[0] as f64 / (out[0] + out[1]) as f64;
        eprintln!(
            "RED-PD: flow 0's share {share:.3}, P_0 {:.3}, p {:.4}, monitored {:?}",
            q.p_of(0),
            q.p_ambient,
            q.monitored.keys().collect::<Vec<_>>()
        );
        assert!(q.p_of(0) > 0.5, "P_0 = {}", q.p_of(0));
        assert!(share < 0.75, "the fast flow kept {share} of the link");
        assert!(
            q.monitored.keys().all(|&f| f == 0),
            "slow flows monitored: {:?}",
            q.monitored.keys().collect::<Vec<_>>()
        );
    }
}
