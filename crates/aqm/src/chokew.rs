//! CHOKeW — CHOKe with priority Weights (aqm.md §8): differentiated bandwidth allocation with TCP
//! protection for DiffServ core routers, with no per-flow state.
//!
//! Reference: S. Wen, Y. Fang, H. Sun, "Differentiated Bandwidth Allocation with TCP Protection in
//! Core Routers", IEEE Trans. Parallel and Distributed Systems, 2008 (Figs. 1, 2, 15; Table 1; §4.6,
//! §5).
//!
//! A basic drawing factor `p0` follows the queue length `L` (which includes the arrival): it grows
//! by `p_plus` per arrival while `L > L_plus` and shrinks by `p_minus` while `L < L_minus`. An
//! arrival of priority weight `w` makes up to `p0 / w` draws (the fractional part is the
//! probability of one extra draw) while `L > L_th`; the first draw of its own flow drops both the
//! arrival and the drawn packet. Variants: CHOKeW-RED (`red = { ... }`: a RED stage after the draws,
//! §8.4), CHOKeW-avg (`w_avg`: an EWMA replaces `L` in the `p0` update and/or the activation test,
//! §8.5), a flow-ID history buffer of recently forwarded packets (`id_buffer`, §8.6) and the
//! hardware-style parallel draw (`parallel`, §8.7).

use crate::buffer::LeakyBuffer;
use crate::family::{check_buffer_mode, family_params, matches};
use crate::red::{RedParams, RedStage};
use crate::red_math::{p_base, Estimator};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Which comparisons CHOKeW-avg makes with the average instead of `L` (A15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AvgFor {
    /// Both the `p0` update and the activation test (default).
    #[default]
    Both,
    P0Update,
    Activation,
}

/// The queue length in the ID-buffer probability `L_ID / (L_ID + x)` (A13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdbRatioUses {
    /// `L` including the arrival (paper-faithful, default).
    #[default]
    L,
    /// The packets already queued.
    Q,
}

family_params! {
    /// CHOKeW parameters ([CHOKeW] §4's values as defaults; `L_lim` is the link's buffer limit). The
    /// thresholds `l_th`, `l_minus` and `l_plus` the paper gives in packets for its 500-packet
    /// buffer (100, 125, 175): one left out is the same fraction of the link's buffer (a fifth, a
    /// quarter, 7/20), so that `p0` can grow and matched drops start on any buffer.
    pub struct ChokewParams {
        /// Matched drops are active only when `L > l_th` (packets; default a fifth of the buffer, [CHOKeW] §4's 100 of 500).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub l_th: Option<f64>,
        /// `p0` decreases when `L < l_minus` (packets; default a quarter of the buffer, the paper's 125 of 500).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub l_minus: Option<f64>,
        /// `p0` increases when `L > l_plus` (packets; default 7/20 of the buffer, the paper's 175 of 500).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub l_plus: Option<f64>,
        /// Increment of `p0`.
        #[serde(default = "crate::defaults::chokew::p_plus")]
        pub p_plus: f64,
        /// Decrement of `p0`.
        #[serde(default = "crate::defaults::chokew::p_minus")]
        pub p_minus: f64,
        /// Priority weight of each level, `weights[k-1]` for level k (each >= 1). Levels beyond the
        /// list get weight 1.
        #[serde(default = "crate::defaults::chokew::weights")]
        pub weights: Vec<f64>,
        /// Initial `p0`.
        #[serde(default)]
        pub p0_init: f64,
        /// Optional safety cap on `p0` (not in the paper; A17).
        #[serde(default)]
        pub p0_max: Option<f64>,
        /// CHOKeW-RED: a RED stage after the draws (§8.4, A14).
        #[serde(default)]
        pub red: Option<RedParams>,
        /// CHOKeW-avg: EWMA weight of the average that replaces `L` (§8.5; 0.002 recommended).
        #[serde(default)]
        pub w_avg: Option<f64>,
        /// CHOKeW-avg: which comparisons use the average (`chokew_avg_for` is accepted too).
        #[serde(default, alias = "chokew_avg_for")]
        pub avg_for: AvgFor,
        /// The flow-ID history buffer extension (§8.6).
        #[serde(default)]
        pub id_buffer: bool,
        /// Capacity of the ID buffer (default: the buffer limit, A13).
        #[serde(default)]
        pub id_buf_cap: Option<u32>,
        /// `l` (default) or `q`, A13.
        #[serde(default)]
        pub idb_ratio_uses: IdbRatioUses,
        /// Draw all candidates at once and take the lowest matching index (§8.7; `chokew_parallel`
        /// is accepted too).
        #[serde(default, alias = "chokew_parallel")]
        pub parallel: bool,
        /// Packet size that converts the thresholds to bytes in byte mode (A1).
        #[serde(default = "crate::defaults::chokew::mean_pkt_size")]
        pub mean_pkt_size: u32,
    }
}

impl ChokewParams {
    /// `(l_th, l_minus, l_plus)` in packets on a link with buffer `limit`: as given, or the
    /// paper's scaled to the buffer ([`crate::defaults::chokew::scaled`]; a byte buffer counts in
    /// packets of `mean_pkt_size`).
    pub fn thresholds(&self, limit: Limit) -> (f64, f64, f64) {
        use crate::defaults::chokew::{scaled, L_MINUS, L_PLUS, L_TH};
        let b = match limit.unit {
            crate::QueueUnit::Packets => limit.value as f64,
            crate::QueueUnit::Bytes => limit.value as f64 / self.mean_pkt_size as f64,
        };
        let or_scaled = |v: Option<f64>, paper: f64| v.unwrap_or_else(|| scaled(paper, b));
        (or_scaled(self.l_th, L_TH), or_scaled(self.l_minus, L_MINUS), or_scaled(self.l_plus, L_PLUS))
    }

    /// The thresholds in force on `limit` are in order (`0 <= l_th < l_minus < l_plus`): a given
    /// one may not fit the defaults that follow the buffer. The error names a given threshold.
    pub fn order(&self, limit: Limit) -> Result<(), ParamError> {
        let (th, minus, plus) = self.thresholds(limit);
        let shown = |v: f64, given: Option<f64>| {
            if given.is_some() {
                format!("{v}")
            } else {
                format!("{v}, from the buffer")
            }
        };
        if th >= minus {
            let field = if self.l_th.is_some() { "l_th" } else { "l_minus" };
            return Err(ParamError::new(
                field,
                format!(
                    "need l_th ({}) < l_minus ({}) with this buffer; give both, or neither",
                    shown(th, self.l_th),
                    shown(minus, self.l_minus)
                ),
            ));
        }
        if minus >= plus {
            let field = if self.l_plus.is_some() { "l_plus" } else { "l_minus" };
            return Err(ParamError::new(
                field,
                format!(
                    "need l_minus ({}) < l_plus ({}) with this buffer; give both, or neither",
                    shown(minus, self.l_minus),
                    shown(plus, self.l_plus)
                ),
            ));
        }
        Ok(())
    }
}

impl ChokewParams {
    /// Set the thresholds left out to the paper's scaled to `limit` ([`ChokewParams::thresholds`]),
    /// after checking their order with those given ([`ChokewParams::order`]).
    pub fn fill(&mut self, limit: Limit) -> Result<(), ParamError> {
        self.order(limit)?;
        let (th, minus, plus) = self.thresholds(limit);
        (self.l_th, self.l_minus, self.l_plus) = (Some(th), Some(minus), Some(plus));
        Ok(())
    }
}

impl Params for ChokewParams {
    fn validate(&self) -> Result<(), ParamError> {
        // the thresholds given (the others follow the buffer: checked with it, `order`)
        for (field, v) in [("l_th", self.l_th), ("l_minus", self.l_minus), ("l_plus", self.l_plus)] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(ParamError::new(field, format!("must be a number of packets >= 0, got {v}")));
            }
        }
        if let (Some(th), Some(minus)) = (self.l_th, self.l_minus) {
            if th >= minus {
                return Err(ParamError::new("l_th", format!("need 0 <= l_th < l_minus ({minus}), got {th}")));
            }
        }
        if let (Some(minus), Some(plus)) = (self.l_minus, self.l_plus) {
            if plus <= minus {
                return Err(ParamError::new("l_plus", format!("need l_minus ({minus}) < l_plus, got {plus}")));
            }
        }
        if !(self.p_plus >= 0.0 && self.p_plus.is_finite()) {
            return Err(ParamError::new("p_plus", "must be a number >= 0"));
        }
        if !(self.p_minus >= 0.0 && self.p_minus.is_finite()) {
            return Err(ParamError::new("p_minus", "must be a number >= 0"));
        }
        if self.weights.is_empty() || self.weights.iter().any(|w| !(w.is_finite() && *w >= 1.0)) {
            return Err(ParamError::new(
                "weights",
                "a non-empty list of weights, each >= 1 (level k uses weights[k-1])",
            ));
        }
        if !(self.p0_init >= 0.0 && self.p0_init.is_finite()) {
            return Err(ParamError::new("p0_init", "must be >= 0"));
        }
        if let Some(m) = self.p0_max {
            if !(m > 0.0 && m.is_finite()) {
                return Err(ParamError::new("p0_max", "must be > 0"));
            }
        }
        if let Some(r) = &self.red {
            r.check().map_err(|e| ParamError::new("red", format!("{}: {}", e.field, e.msg)))?;
        }
        if let Some(w) = self.w_avg {
            if !(w > 0.0 && w <= 1.0) {
                return Err(ParamError::new("w_avg", format!("must be in (0, 1], got {w}")));
            }
        }
        if self.id_buf_cap == Some(0) {
            return Err(ParamError::new("id_buf_cap", "must be at least 1"));
        }
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        check_buffer_mode(&self.buffer_mode())
    }
}

pub struct Chokew<P> {
    /// The parameters, with `l_th`, `l_minus` and `l_plus` set in the queue unit (one copy of
    /// the thresholds: [`Chokew::thresholds`]).
    p: ChokewParams,
    buf: LeakyBuffer<P>,
    limit: Limit,
    p0: f64,
    red: Option<RedStage>,
    avg: Option<Estimator>,
    idb: VecDeque<u32>,
    idb_cap: usize,
    /// Most flow ids held at once (for `state_bytes`).
    idb_peak: usize,
    /// Scratch for the parallel draw.
    cand: Vec<(u64, bool)>,
}

impl<P: Pkt> Scheme<P> for Chokew<P> {
    type Params = ChokewParams;
    fn new(p: &ChokewParams, link: LinkInfo, limit: Limit) -> Self {
        let scale = match limit.unit {
            crate::QueueUnit::Packets => 1.0,
            crate::QueueUnit::Bytes => p.mean_pkt_size as f64,
        };
        let s_ns = 8.0 * p.mean_pkt_size as f64 / link.rate_bps * NS_PER_SEC as f64;
        let (l_th, l_minus, l_plus) = p.thresholds(limit);
        let mut own = p.clone();
        (own.l_th, own.l_minus, own.l_plus) = (Some(l_th * scale), Some(l_minus * scale), Some(l_plus * scale));
        Chokew {
            buf: LeakyBuffer::new(p.buffer_mode(), false),
            limit,
            p0: p.p0_init,
            red: p.red.as_ref().map(|r| r.stage(link)),
            avg: p.w_avg.map(|w| Estimator::new(w, s_ns, false)),
            idb: VecDeque::new(),
            // default capacity: L_lim in packets (A13)
            idb_cap: p
                .id_buf_cap
                .map(|c| c as usize)
                .unwrap_or(((limit.value as f64 / scale) as u64).clamp(1, 1 << 24) as usize),
            cand: Vec::new(),
            idb_peak: 0,
            p: own,
        }
    }
}

/// `x.floor()`, by a conversion to an integer and back where that is exact and the same value
/// (`0 <= x < 2^53`, where truncation is the floor), so that the usual case needs no call to
/// `floor`; `x.floor()` itself elsewhere. Every `x` gives the same value as `x.floor()` (`-0.0`
/// gives `0.0`, which compares equal, and is not reached: `p0 >= 0` and the weights are `>= 1`).
#[inline]
fn floor_nonneg(x: f64) -> f64 {
    if (0.0..9_007_199_254_740_992.0).contains(&x) {
        (x as u64) as f64
    } else {
        x.floor()
    }
}

impl<P: Pkt> Chokew<P> {
    /// The basic drawing factor.
    pub fn p0(&self) -> f64 {
        self.p0
    }

    /// `(l_th, l_minus, l_plus)` in the queue unit, as [`Scheme::new`] set them.
    #[inline]
    fn thresholds(&self) -> (f64, f64, f64) {
        let set = |v: Option<f64>| v.expect("thresholds set at construction");
        (set(self.p.l_th), set(self.p.l_minus), set(self.p.l_plus))
    }

    fn weight(&self, prio: u8) -> f64 {
        self.p.weights.get((prio.max(1) - 1) as usize).copied().unwrap_or(1.0)
    }

    /// Step 5: up to `m` draws; returns the position of the matching packet, if any.
    fn draw_match(&mut self, m: u64, flow: u32, cx: &mut Cx<'_, P>) -> Option<u64> {
        if self.p.parallel {
            self.cand.clear();
            for _ in 0..m {
                match self.buf.draw(cx.rng) {
                    Some(d) => self.cand.push((d.pos, d.live)),
                    None => break,
                }
            }
            // a match exists iff AND_i (flow XOR cand_i) is false; take the lowest index
            let buf = &self.buf;
            return self.cand.iter().find(|(pos, live)| matches(buf, *pos, *live, flow)).map(|(pos, _)| *pos);
        }
        // the same draws as `draw` then `matches`, one after the other (tested in buffer.rs)
        self.buf.first_match(cx.rng, m, flow)
    }
}

impl<P: Pkt> Qdisc<P> for Chokew<P> {
    fn enqueue(&mut self, mut pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let qlen = self.limit.qlen(self.buf.len(), self.buf.bytes()) as f64;
        // step 0 (CHOKeW-RED) and the CHOKeW-avg average: updated at every arrival
        if let Some(r) = &mut self.red {
            r.est.update(cx.now, qlen);
        }
        let avg = self.avg.as_mut().map(|e| e.update(cx.now, qlen));
        // step 1: L includes the arrival
        let l = qlen + self.limit.size_unit(pkt.size()) as f64;
        let (x_p0, x_act) = match avg {
            None => (l, l),
            Some(a) => match self.p.avg_for {
                AvgFor::Both => (a, a),
                AvgFor::P0Update => (a, l),
                AvgFor::Activation => (l, a),
            },
        };
        // step 2: p0 update (Fig. 2), on every arrival
        let (l_th, l_minus, l_plus) = self.thresholds();
        if x_p0 < l_minus {
            self.p0 = (self.p0 - self.p.p_minus).max(0.0);
        }
        if x_p0 > l_plus {
            self.p0 += self.p.p_plus;
            if let Some(cap) = self.p.p0_max {
                self.p0 = self.p0.min(cap);
            }
        }
        // steps 3-4: m = floor(p0 / w), plus one with probability of the fractional part
        let pw = self.p0 / self.weight(pkt.prio());
        let fl = floor_nonneg(pw);
        let mut m = fl as u64;
        if cx.rng.uniform() < pw - fl {
            m += 1;
        }
        let active = x_act > l_th;
        // step 4a: the flow-ID history buffer
        let mut skip_packet_draws = false;
        if self.p.id_buffer && active && !self.idb.is_empty() {
            // L_ID / (L_ID + L) with L in packets (A13)
            let lid = self.idb.len() as f64;
            let q_pkts = self.buf.len() as f64;
            let x = match self.p.idb_ratio_uses {
                IdbRatioUses::L => q_pkts + 1.0,
                IdbRatioUses::Q => q_pkts,
            };
            if cx.rng.uniform() < lid / (lid + x) {
                skip_packet_draws = true;
                for _ in 0..2 * m {
                    let id = self.idb[cx.rng.below(self.idb.len() as u64) as usize];
                    if id == pkt.flow() {
                        cx.drop(pkt, DropReason::MatchedArrival); // ID match: no victim
                        return false;
                    }
                }
            }
        }
        // step 5: matched drops
        if active && !skip_packet_draws && m > 0 {
            if let Some(pos) = self.draw_match(m, pkt.flow(), cx) {
                if let Some(v) = self.buf.remove(pos) {
                    cx.drop(v, DropReason::MatchedVictim);
                }
                cx.drop(pkt, DropReason::MatchedArrival);
                return false;
            }
        }
        // step 5a: CHOKeW-RED
        if !skip_packet_draws {
            if let Some(r) = &mut self.red {
                let region = p_base(r.est.avg(), &r.th);
                if let Some(reason) = r.test.decide(region, pkt.size(), self.buf.len(), cx.rng) {
                    let Some(marked) = cx.verdict(pkt, reason, r.ecn) else { return false };
                    pkt = marked;
                }
            }
        }
        // step 6: L > L_lim (physical occupancy in lazy mode, A12)
        crate::family::enqueue_or_overflow(&mut self.buf, &self.limit, pkt, cx)
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let e = self.buf.pop();
        if let Some((p, _)) = &e {
            if self.p.id_buffer {
                // forwarded packets enter the ID history (A16: live packets only)
                self.idb.push_back(p.flow());
                self.idb_peak = self.idb_peak.max(self.idb.len());
                if self.idb.len() > self.idb_cap {
                    self.idb.pop_front();
                }
            }
            if self.buf.is_empty() {
                if let Some(r) = &mut self.red {
                    r.on_queue_empty(cx.now);
                }
            }
        }
        e
    }
    fn len(&self) -> usize {
        self.buf.len()
    }
    fn bytes(&self) -> u64 {
        self.buf.bytes()
    }
    fn on_link_idle(&mut self, now: Time) {
        if let Some(r) = &mut self.red {
            r.on_link_idle(now);
        }
        if let Some(a) = &mut self.avg {
            a.set_idle(now);
        }
    }
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        self.buf.for_each(f)
    }
    fn state_names(&self) -> &'static [&'static str] {
        match (self.red.is_some(), self.avg.is_some()) {
            (false, false) => &["p0"],
            (true, false) => &["p0", "red_avg", "red_p"],
            (false, true) => &["p0", "avg"],
            (true, true) => &["p0", "red_avg", "red_p", "avg"],
        }
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.p0;
        let mut i = 1;
        if let Some(r) = &self.red {
            out[1] = r.est.avg();
            out[2] = r.test.last_p();
            i = 3;
        }
        if let Some(a) = &self.avg {
            out[i] = a.avg();
        }
    }
    /// The scalars and, with the flow-ID buffer, its ids at their most (4 bytes each).
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + 4 * self.idb_peak) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    #[test]
    fn floor_without_a_call_is_floor() {
        let mut rng = Rng::stream(3, "floor", 0);
        let edges = [
            0.0,
            -0.0,
            0.5,
            1.0,
            1.0 - f64::EPSILON,
            2.5,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740991.0,
            9007199254740992.0,
            9007199254740993.0,
            1e300,
            -0.5,
            -1.0,
            -1e300,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
        ];
        let xs = edges
            .into_iter()
            .chain((0..200_000).map(|_| (rng.uniform() - 0.05) * 10f64.powi(rng.below(36) as i32 - 18)));
        for x in xs {
            let (a, b) = (floor_nonneg(x), x.floor());
            assert!(a == b && (a.to_bits() == b.to_bits() || x == 0.0), "{x}: {a} vs {b}");
            assert_eq!(a as u64, b as u64, "{x}");
            assert!((x - a).to_bits() == (x - b).to_bits() || x == 0.0, "{x}");
        }
        assert!(floor_nonneg(f64::NAN).is_nan());
    }

    /// Test parameters: small thresholds, then the `extra` JSON fields override.
    fn params(extra: &str) -> ChokewParams {
        let mut v: serde_json::Value = serde_json::from_str(
            r#"{"l_th": 2, "l_minus": 3, "l_plus": 4, "p_plus": 0.5, "p_minus": 0.25, "weights": [1, 2]}"#,
        )
        .unwrap();
        let e: serde_json::Value = serde_json::from_str(&format!("{{{extra}}}")).unwrap();
        for (k, x) in e.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    fn mk(p: &ChokewParams, limit: u64) -> Chokew<P> {
        Chokew::new(p, LinkInfo { rate_bps: 8e6 }, Limit::packets(limit))
    }

    #[test]
    fn p0_follows_table_1() {
        let p = params("");
        let mut c = mk(&p, 100);
        let mut rng = Rng::stream(1, "w", 0);
        let mut drops = Vec::new();
        // distinct flows: no matches; L = 1, 2 < L- = 3: p0 stays at 0 (floored)
        let mut expect = Vec::new();
        for i in 0..8u32 {
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            c.enqueue(P::new(i, 1000), &mut cx);
            expect.push(c.p0());
        }
        // L = 1..8: p0 = 0,0,0(L=3 unchanged),0(L=4 unchanged),0.5,1.0,1.5,2.0
        assert_eq!(expect, vec![0.0, 0.0, 0.0, 0.0, 0.5, 1.0, 1.5, 2.0]);
        assert!(drops.is_empty());
        // drain to one packet: the next arrival sees L = 2 < 3 -> p0 decreases by 0.25
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        while c.len() > 1 {
            c.dequeue(&mut cx);
        }
        c.enqueue(P::new(99, 1000), &mut cx);
        assert_eq!(c.p0(), 1.75);
    }

    #[test]
    fn draws_scale_with_weight_and_match_drops_one_victim() {
        // p0 = 2: a weight-1 arrival makes 2 draws, a weight-2 arrival 1 draw
        let p = params(r#""p0_init": 2.0, "p_plus": 0.0, "p_minus": 0.0"#);
        let mut rng = Rng::stream(2, "w", 0);
        let trials = 4000;
        let mut dropped = [0u32; 2];
        for t in 0..trials {
            for level in 1..=2u8 {
                let mut c = mk(&p, 100);
                // queue: 5 packets, 1 of flow 7 (share 1/5)
                for i in 0..5 {
                    c.buf.push(P::new(if i == 2 { 7 } else { 100 + i }, 1000), 0);
                }
                let mut drops = Vec::new();
                let mut cx = Cx { now: t, rng: &mut rng, drops: &mut drops };
                let mut pk = P::new(7, 1000);
                pk.prio = level;
                if !c.enqueue(pk, &mut cx) {
                    dropped[level as usize - 1] += 1;
                    assert_eq!(drops.len(), 2);
                    assert_eq!(drops[0].reason, DropReason::MatchedVictim);
                    assert_eq!(drops[0].pkt.flow, 7);
                    assert_eq!(drops[1].reason, DropReason::MatchedArrival);
                }
            }
        }
        // P(match) with d draws = 1 - (4/5)^d: 0.36 for weight 1, 0.2 for weight 2
        let f1 = dropped[0] as f64 / trials as f64;
        let f2 = dropped[1] as f64 / trials as f64;
        assert!((f1 - 0.36).abs() < 0.025, "{f1}");
        assert!((f2 - 0.20).abs() < 0.025, "{f2}");
    }

    #[test]
    fn inactive_at_or_below_l_th_and_overflow_above_l_lim() {
        let p = params(r#""p0_init": 50.0, "p_plus": 0.0, "p_minus": 0.0"#);
        let mut c = mk(&p, 4);
        let mut rng = Rng::stream(3, "w", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // same flow: L = 1, 2 <= l_th = 2: no draws, admitted
        assert!(c.enqueue(P::new(1, 1000), &mut cx));
        assert!(c.enqueue(P::new(1, 1000), &mut cx));
        // L = 3 > l_th: 50 draws over a queue of flow 1: matched
        assert!(!c.enqueue(P::new(1, 1000), &mut cx));
        // with L_lim = 3, a fourth arrival makes L = 4 > L_lim: overflow
        let mut c = mk(&params(""), 3);
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..3 {
            assert!(c.enqueue(P::new(10 + i, 1000), &mut cx));
        }
        assert!(!c.enqueue(P::new(20, 1000), &mut cx));
        assert_eq!(drops.last().unwrap().reason, DropReason::Overflow);
    }

    #[test]
    fn parallel_draw_has_the_same_statistics_as_serial() {
        let mut rng = Rng::stream(4, "w", 0);
        let mut rate = [0.0; 2];
        for (i, parallel) in [false, true].into_iter().enumerate() {
            let p = params(&format!(r#""p0_init": 1.5, "p_plus": 0.0, "p_minus": 0.0, "parallel": {parallel}"#));
            let n = 6000;
            let mut hits = 0;
            for t in 0..n {
                let mut c = mk(&p, 100);
                for k in 0..4 {
                    c.buf.push(P::new(if k == 0 { 7 } else { 50 + k }, 1000), 0);
                }
                let mut drops = Vec::new();
                let mut cx = Cx { now: t, rng: &mut rng, drops: &mut drops };
                if !c.enqueue(P::new(7, 1000), &mut cx) {
                    hits += 1;
                    assert_eq!(drops.len(), 2, "one victim only");
                }
            }
            rate[i] = hits as f64 / n as f64;
        }
        // 1 draw w.p. 0.5, 2 draws w.p. 0.5: 0.5*0.25 + 0.5*(1-0.75^2) = 0.34375
        for r in rate {
            assert!((r - 0.34375).abs() < 0.025, "{rate:?}");
        }
    }

    #[test]
    fn id_buffer_matches_recently_forwarded_flows_without_victims() {
        let p = params(r#""p0_init": 3.0, "p_plus": 0.0, "p_minus": 0.0, "id_buffer": true"#);
        let mut c = mk(&p, 100);
        let mut rng = Rng::stream(5, "w", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // forward 50 packets of flow 9: the ID buffer holds 50 times flow 9
        for _ in 0..50 {
            c.buf.push(P::new(9, 1000), 0);
            c.dequeue(&mut cx);
        }
        // queue 3 packets of other flows so L = 4 > l_th; ratio 50/(50+4): nearly always the IDs
        for k in 0..3 {
            c.buf.push(P::new(100 + k, 1000), 0);
        }
        let mut id_drops = 0;
        for _ in 0..200 {
            let mut drops = Vec::new();
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            if !c.enqueue(P::new(9, 1000), &mut cx) {
                assert_eq!(drops.len(), 1, "an ID match drops only the arrival");
                assert_eq!(drops[0].reason, DropReason::MatchedArrival);
                id_drops += 1;
            } else {
                // admitted: take it out again to keep the queue as it was
                let mut tmp = Vec::new();
                c.buf.for_each(&mut |p, t| tmp.push((*p, t)));
                tmp.pop();
                c.buf = LeakyBuffer::new(p.buffer_mode(), false);
                for (p, t) in tmp {
                    c.buf.push(p, t);
                }
            }
        }
        // P(ID path) = 50/54 and then a certain match: about 93 %
        assert!(id_drops > 170, "{id_drops}");
    }

    #[test]
    fn validation_names_fields() {
        let mut p = params("");
        p.l_th = Some(5.0);
        assert_eq!(p.validate().unwrap_err().field, "l_th");
        let mut p = params("");
        p.weights = vec![0.5];
        assert_eq!(p.validate().unwrap_err().field, "weights");
        let mut p = params("");
        p.w_avg = Some(2.0);
        assert_eq!(p.validate().unwrap_err().field, "w_avg");
        assert!(params("").validate().is_ok());
    }
}
