//! gCHOKe — geometric CHOKe (aqm.md §7): keep drawing while the drawn packets match the arrival.
//!
//! Reference: A. Eshete, Y. Jiang, "Generalizing the CHOKe flow protection", Computer Networks 57,
//! 2013; as described in [CHOKeD]. Each matching draw drops that queued packet at once (so it
//! cannot be drawn again, A11); the first non-matching draw, or `maxcomp` comparisons, ends the
//! loop; at least one match drops the arrival too. The RED stage is CHOKe's.

use crate::family::{check_buffer_mode, family_params, matches, red_leaky_delegate, RedLeaky};
use crate::red_math::Region;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};

family_params! {
    /// gCHOKe parameters: RED's, plus the comparison cap.
    pub struct GChokeParams {
        /// Maximum number of comparisons per arrival (not given in [CHOKeD]; 10 recommended, A11).
        #[serde(default = "crate::defaults::gchoke::maxcomp")]
        pub maxcomp: u32,
        /// Also draw when the average is above the hard threshold (as CHOKe, A8).
        #[serde(default = "crate::defaults::gchoke::choke_draw_above_hard")]
        pub choke_draw_above_hard: bool,
        /// `unchanged` (default) or `reset`: what a matched drop does to RED's count (A9).
        #[serde(default)]
        pub count_matched: crate::choke::CountMatched,
    } red
}

impl Params for GChokeParams {
    fn validate(&self) -> Result<(), ParamError> {
        self.red().check()?;
        if !(1..=10_000).contains(&self.maxcomp) {
            return Err(ParamError::new("maxcomp", format!("must be 1..10000, got {}", self.maxcomp)));
        }
        check_buffer_mode(&self.buffer_mode())
    }
}

pub struct GChoke<P> {
    p: GChokeParams,
    q: RedLeaky<P>,
}

impl<P: Pkt> Scheme<P> for GChoke<P> {
    type Params = GChokeParams;
    fn new(p: &GChokeParams, link: LinkInfo, limit: Limit) -> Self {
        GChoke { q: RedLeaky::new(p.red().stage(link), p.buffer_mode(), false, limit), p: p.clone() }
    }
}

crate::hint::hint_from!(GChoke, q.buf.upcoming);

impl<P: Pkt> Qdisc<P> for GChoke<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let region = self.q.region(cx.now);
        if region != Region::None && (region != Region::Hard || self.p.choke_draw_above_hard) {
            // step 4: geometric draws; this arrival's victims cannot be drawn again (A11: removed
            // at once, or, when doomed packets stay drawable, skipped by redrawing)
            let buf = &mut self.q.buf;
            let mut chosen: [u64; 16] = [0; 16];
            let mut k = 0usize;
            while (k as u32) < self.p.maxcomp {
                let Some(mut d) = buf.draw(cx.rng) else { break };
                if buf.mode().population == crate::buffer::DrawPopulation::Physical {
                    if k >= buf.len() + buf.doomed() {
                        break;
                    }
                    while chosen[..k.min(16)].contains(&d.pos) {
                        d = buf.draw(cx.rng).expect("non-empty");
                    }
                }
                if !matches(buf, d.pos, d.live, pkt.flow()) {
                    break;
                }
                if let Some(v) = buf.remove(d.pos) {
                    cx.drop(v, DropReason::MatchedVictim);
                }
                if k < 16 {
                    chosen[k] = d.pos;
                }
                k += 1;
            }
            if k >= 1 {
                if self.p.count_matched == crate::choke::CountMatched::Reset {
                    self.q.red.test.reset_count();
                }
                cx.drop(pkt, DropReason::MatchedArrival);
                return false;
            }
        }
        self.q.admit(pkt, region, cx)
    }

    red_leaky_delegate!(q);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    fn params(maxcomp: u32) -> GChokeParams {
        serde_json::from_str(&format!(
            r#"{{"min_th": 0, "max_th": 1000, "w_q": 1.0, "max_p": 1e-9, "maxcomp": {maxcomp}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn keeps_drawing_while_matching_up_to_maxcomp() {
        // a queue entirely of flow 5: every draw matches, so exactly maxcomp victims
        for maxcomp in [1, 3, 10] {
            let mut g: GChoke<P> = GChoke::new(&params(maxcomp), LinkInfo { rate_bps: 8e6 }, Limit::packets(100));
            for _ in 0..20 {
                g.q.buf.push(P::new(5, 1000), 0);
            }
            let mut rng = Rng::stream(1, "g", 0);
            let mut drops = Vec::new();
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            assert!(!g.enqueue(P::new(5, 1000), &mut cx));
            let v = drops.iter().filter(|d| d.reason == DropReason::MatchedVictim).count();
            assert_eq!(v as u32, maxcomp);
            assert_eq!(g.len(), 20 - maxcomp as usize);
        }
    }

    #[test]
    fn matches_are_geometric_in_the_flow_share() {
        // half the queue is flow 5: the number of victims per matched arrival is geometric with
        // success probability 1/2 (decreasing as victims leave), mean > 1
        let mut rng = Rng::stream(2, "g", 0);
        let (mut arrivals_dropped, mut victims, mut trials) = (0, 0, 0);
        for _ in 0..2000 {
            let mut g: GChoke<P> = GChoke::new(&params(10), LinkInfo { rate_bps: 8e6 }, Limit::packets(100));
            for i in 0..40 {
                g.q.buf.push(P::new(if i % 2 == 0 { 5 } else { 6 }, 1000), 0);
            }
            let mut drops = Vec::new();
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            trials += 1;
            if !g.enqueue(P::new(5, 1000), &mut cx) {
                arrivals_dropped += 1;
                victims += drops.iter().filter(|d| d.reason == DropReason::MatchedVictim).count();
            }
        }
        let p_match = arrivals_dropped as f64 / trials as f64;
        assert!((p_match - 0.5).abs() < 0.04, "{p_match}");
        let mean_victims = victims as f64 / arrivals_dropped as f64;
        // P(k >= 2 | k >= 1) = 19/39: mean about 1 + 19/39 + ... ~ 1.9
        assert!(mean_victims > 1.6 && mean_victims < 2.2, "{mean_victims}");
    }
}
