//! gCHOKe — geometric CHOKe (aqm.md §7): keep drawing while the drawn packets match the arrival.
//!
//! Reference: A. Eshete, Y. Jiang, "Generalizing the CHOKe flow protection", Computer Networks 57,
//! 2013; as described in [CHOKeD]. Each matching draw drops that queued packet at once (so it
//! cannot be drawn again, A11); the first non-matching draw, or `maxcomp` comparisons, ends the
//! loop; at least one match drops the arrival too. The RED stage is CHOKe's.

use crate::buffer::LeakyBuffer;
use crate::family::{admits, check_buffer_mode, family_params, matches};
use crate::red::RedStage;
use crate::red_math::{p_base, Region};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};

fn default_maxcomp() -> u32 {
    10
}

family_params! {
    /// gCHOKe parameters: RED's, plus the comparison cap.
    pub struct GChokeParams {
        /// Maximum number of comparisons per arrival (not given in [CHOKeD]; 10 recommended, A11).
        #[serde(default = "default_maxcomp")]
        pub maxcomp: u32,
        /// Also draw when the average is above the hard threshold (as CHOKe, A8).
        #[serde(default = "crate::family::default_true")]
        pub choke_draw_above_hard: bool,
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
    buf: LeakyBuffer<P>,
    red: RedStage,
    limit: Limit,
}

impl<P: Pkt> Scheme<P> for GChoke<P> {
    type Params = GChokeParams;
    fn new(p: &GChokeParams, link: LinkInfo, limit: Limit) -> Self {
        GChoke { buf: LeakyBuffer::new(p.buffer_mode(), false), red: p.red().stage(link), limit, p: p.clone() }
    }
}

impl<P: Pkt> Qdisc<P> for GChoke<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let q = self.limit.qlen(self.buf.len(), self.buf.bytes());
        let avg = self.red.est.update(cx.now, q as f64);
        let region = p_base(avg, &self.red.th);
        if region != Region::None && (region != Region::Hard || self.p.choke_draw_above_hard) {
            // step 4: geometric draws
            let mut k = 0;
            while k < self.p.maxcomp {
                let Some(d) = self.buf.draw(cx.rng) else { break };
                if !matches(&self.buf, d.pos, d.live, pkt.flow()) {
                    break;
                }
                if let Some(v) = self.buf.remove(d.pos) {
                    cx.drop(v, DropReason::MatchedVictim);
                }
                k += 1;
            }
            if k >= 1 {
                cx.drop(pkt, DropReason::MatchedArrival);
                return false;
            }
        }
        if let Some(r) = self.red.test.decide(region, pkt.size(), self.buf.len(), cx.rng) {
            cx.drop(pkt, r);
            return false;
        }
        if !admits(&self.buf, &self.limit, pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        self.buf.push(pkt, cx.now);
        true
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let e = self.buf.pop();
        if e.is_some() && self.buf.is_empty() {
            self.red.on_queue_empty(cx.now);
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
        self.red.on_link_idle(now);
    }
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        self.buf.for_each(f)
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["avg", "p"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.red.est.avg();
        out[1] = self.red.test.last_p();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    fn params(maxcomp: u32) -> GChokeParams {
        serde_json::from_str(&format!(r#"{{"min_th": 0, "max_th": 1000, "w_q": 1.0, "max_p": 1e-9, "maxcomp": {maxcomp}}}"#)).unwrap()
    }

    #[test]
    fn keeps_drawing_while_matching_up_to_maxcomp() {
        // a queue entirely of flow 5: every draw matches, so exactly maxcomp victims
        for maxcomp in [1, 3, 10] {
            let mut g: GChoke<P> = GChoke::new(&params(maxcomp), LinkInfo { rate_bps: 8e6 }, Limit::packets(100));
            for _ in 0..20 {
                g.buf.push(P::new(5, 1000), 0);
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
                g.buf.push(P::new(if i % 2 == 0 { 5 } else { 6 }, 1000), 0);
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
