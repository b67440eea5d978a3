//! WARD (aqm.md §10): a TCP-friendly stateless AQM embedded in DropTail.
//!
//! Reference: C.-Y. Ho, Y.-C. Chan, Y.-C. Chen, "WARD: a transmission control protocol-friendly
//! stateless active queue management scheme", IET Communications 1(6), 2007 (§2.1, Fig. 1).
//!
//! Each buffer position `P` has a weight (0 near the head, 1 at the end of a buffer of `F`
//! packets). An arrival heading for position `P` is compared, with probability `weight(P)`, with two
//! distinct randomly drawn queued packets: if both belong to its flow, all three are dropped (rule
//! 1); if one does, that one and the arrival (rule 2); if the two drawn packets share a flow other
//! than the arrival's, both are dropped and the arrival may stay (rule 3). A full buffer drops the
//! arrival (as DropTail) after the comparison.

use crate::buffer::LeakyBuffer;
use crate::family::{admits, check_buffer_mode, family_params, matches};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// Position weight rule (A23).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightRule {
    /// `min(1, floor(10 P / F) / 10)` (default).
    #[default]
    Decile,
    /// `min(1, P / F)`.
    Exact,
}

/// Which position an arrival is weighed at (A23).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PositionRule {
    /// `P = Q + 1`, the position it would take (default).
    #[default]
    Next,
    /// `P = Q`.
    Current,
}

/// The random number compared with the weight (A24).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum URule {
    /// `U ~ Uniform[0, 1)` (default).
    #[default]
    Continuous,
    /// `U` uniform on {0.0, 0.1, ..., 1.0}.
    Tenths,
}

family_params! {
    /// WARD parameters; `F` is the link's buffer limit (packets).
    pub struct WardParams {
        #[serde(default)]
        pub weight_rule: WeightRule,
        #[serde(default)]
        pub position_rule: PositionRule,
        #[serde(default)]
        pub u_rule: URule,
        /// Admit an arrival to a full buffer when rule 3 freed space (A25).
        #[serde(default)]
        pub ward_full_rule3_admit: bool,
    }
    doomed_free
}

impl Params for WardParams {
    fn validate(&self) -> Result<(), ParamError> {
        check_buffer_mode(&self.buffer_mode())
    }
}

pub struct Ward<P> {
    p: WardParams,
    buf: LeakyBuffer<P>,
    limit: Limit,
    f: f64,
}

impl<P: Pkt> Scheme<P> for Ward<P> {
    type Params = WardParams;
    fn new(p: &WardParams, _link: LinkInfo, limit: Limit) -> Self {
        Ward { buf: LeakyBuffer::new(p.buffer_mode(), false), limit, f: limit.value as f64, p: p.clone() }
    }
}

impl<P: Pkt> Ward<P> {
    /// Position weight (§10.2).
    pub fn weight(&self, pos: f64) -> f64 {
        match self.p.weight_rule {
            WeightRule::Decile => ((10.0 * pos / self.f).floor() / 10.0).min(1.0),
            WeightRule::Exact => (pos / self.f).min(1.0),
        }
    }
}

crate::hint::hint_from!(Ward, buf.upcoming);

impl<P: Pkt> Qdisc<P> for Ward<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // 1: logical length (live packets, A27) and the position weight
        let q0 = self.limit.qlen(self.buf.len(), self.buf.bytes()) as f64;
        let full_at_arrival = !admits(&self.buf, &self.limit, pkt.size());
        // P in the queue unit: packets, or bytes in byte mode (where F is the byte limit)
        let pos = match self.p.position_rule {
            PositionRule::Next => q0 + self.limit.size_unit(pkt.size()) as f64,
            PositionRule::Current => q0,
        };
        let w = self.weight(pos);
        // 2: compare with probability w
        let u = match self.p.u_rule {
            URule::Continuous => cx.rng.uniform(),
            URule::Tenths => cx.rng.below(11) as f64 / 10.0,
        };
        let mut rule3 = false;
        if u <= w && !self.buf.is_empty() {
            // 3: two distinct packets (one if only one is queued, A26)
            let i = self.buf.draw(cx.rng).expect("non-empty");
            let j = if self.buf.len() + self.buf_physical_extra() >= 2 {
                let mut j = self.buf.draw(cx.rng).expect("non-empty");
                while j.pos == i.pos {
                    j = self.buf.draw(cx.rng).expect("non-empty");
                }
                Some(j)
            } else {
                None
            };
            // 4: rules
            let a = matches(&self.buf, i.pos, i.live, pkt.flow());
            let b = j.is_some_and(|j| matches(&self.buf, j.pos, j.live, pkt.flow()));
            if a || b {
                for (hit, d) in [(a, Some(i)), (b, j)] {
                    if let (true, Some(d)) = (hit, d) {
                        if let Some(v) = self.buf.remove(d.pos) {
                            cx.drop(v, DropReason::MatchedVictim);
                        }
                    }
                }
                cx.drop(pkt, DropReason::MatchedArrival);
                return false;
            }
            if let Some(j) = j {
                if i.live && j.live && self.buf.get(i.pos).flow() == self.buf.get(j.pos).flow() {
                    // rule 3: the two drawn packets share a flow; the arrival is not dropped by it
                    for d in [i, j] {
                        if let Some(v) = self.buf.remove(d.pos) {
                            cx.drop(v, DropReason::MatchedVictim);
                        }
                    }
                    rule3 = true;
                }
            }
        }
        // 5: the "sensitive case": the buffer was full when the packet arrived (A25)
        if full_at_arrival && !(self.p.ward_full_rule3_admit && rule3) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        // 6-7
        crate::family::enqueue_or_overflow(&mut self.buf, &self.limit, pkt, cx)
    }

    crate::family::leaky_views!(buf);
}

impl<P: Pkt> Ward<P> {
    /// Doomed packets that can be drawn (draw_population = physical) count towards "two packets".
    fn buf_physical_extra(&self) -> usize {
        match self.p.draw_population {
            crate::buffer::DrawPopulation::Physical => self.buf.doomed(),
            crate::buffer::DrawPopulation::Live => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    fn mk(limit: u64, extra: &str) -> Ward<P> {
        let p: WardParams = serde_json::from_str(&format!("{{{extra}}}")).unwrap();
        Ward::new(&p, LinkInfo { rate_bps: 8e6 }, Limit::packets(limit))
    }

    #[test]
    fn flagged_victims_free_their_space_by_default_decision_d3() {
        let p: WardParams = serde_json::from_str(r#"{"victim_removal": "lazy"}"#).unwrap();
        assert!(!p.buffer_mode().doomed_occupy);
        let p: WardParams =
            serde_json::from_str(r#"{"victim_removal": "lazy", "doomed_occupy_buffer": true}"#).unwrap();
        assert!(p.buffer_mode().doomed_occupy);
        // the other schemes keep the hardware-realistic default
        let c: crate::choke::ChokeParams =
            serde_json::from_str(r#"{"min_th": 5, "max_th": 10, "victim_removal": "lazy"}"#).unwrap();
        assert!(c.buffer_mode().doomed_occupy);
    }

    #[test]
    fn decile_weights_reproduce_the_papers_example() {
        let w = mk(100, "");
        for pos in 1..=9 {
            assert_eq!(w.weight(pos as f64), 0.0);
        }
        assert_eq!(w.weight(10.0), 0.1);
        assert_eq!(w.weight(19.0), 0.1);
        assert_eq!(w.weight(95.0), 0.9);
        assert_eq!(w.weight(100.0), 1.0);
        let e = mk(200, r#""weight_rule": "exact""#);
        assert_eq!(e.weight(50.0), 0.25);
    }

    fn full_of(limit: u64, flows: &[u32]) -> Ward<P> {
        let mut w = mk(limit, "");
        for &f in flows {
            w.buf.push(P::new(f, 1000), 0);
        }
        w
    }

    #[test]
    fn rules_one_two_three_on_a_full_buffer() {
        // full buffer (w = 1): every arrival is compared
        let mut rng = Rng::stream(1, "ward", 0);
        // rule 1: all queued packets are the arrival's flow: 2 victims + arrival
        let mut w = full_of(10, &[5; 10]);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(!w.enqueue(P::new(5, 1000), &mut cx));
        assert_eq!(drops.iter().filter(|d| d.reason == DropReason::MatchedVictim).count(), 2);
        assert_eq!(drops.last().unwrap().reason, DropReason::MatchedArrival);
        // rule 3: all queued packets share one other flow: 2 victims, and the arrival — the buffer
        // was full when it arrived — is dropped as overflow (A25 default)
        let mut w = full_of(10, &[7; 10]);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(!w.enqueue(P::new(5, 1000), &mut cx));
        assert_eq!(drops.iter().filter(|d| d.reason == DropReason::MatchedVictim).count(), 2);
        assert_eq!(drops.last().unwrap().reason, DropReason::Overflow);
        assert_eq!(w.len(), 8);
        // ... unless ward_full_rule3_admit
        let mut w = mk(10, r#""ward_full_rule3_admit": true"#);
        for _ in 0..10 {
            w.buf.push(P::new(7, 1000), 0);
        }
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(w.enqueue(P::new(5, 1000), &mut cx));
        assert_eq!(w.len(), 9);
        // rule 2: exactly one of two drawn matches. Queue of 2: flows 5 and 6
        let mut w = full_of(2, &[5, 6]);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(!w.enqueue(P::new(5, 1000), &mut cx));
        assert_eq!(drops.len(), 2);
        assert_eq!(drops[0].pkt.flow, 5);
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn no_comparison_near_the_head() {
        // positions 1..9 of F = 100 have weight 0: never compared, always admitted
        let mut w = mk(100, "");
        let mut rng = Rng::stream(2, "ward", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..9 {
            assert!(w.enqueue(P::new(5, 1000), &mut cx));
        }
        assert!(drops.is_empty());
    }
}
