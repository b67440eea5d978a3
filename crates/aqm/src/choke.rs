//! CHOKe — "CHOose and Keep for responsive flows, CHOose and Kill for unresponsive flows"
//! (aqm.md §6, §6.1): a matched-drop filter in front of RED.
//!
//! Reference: R. Pan, B. Prabhakar, K. Psounis, "CHOKe: a stateless active queue management scheme
//! for approximating fair bandwidth allocation", IEEE INFOCOM 2000; as analysed by A. Tang,
//! J. Wang, S. H. Low, "Understanding CHOKe", INFOCOM 2003.
//!
//! When RED's average says the link is congested, `n_cand` queued packets are drawn uniformly at
//! random (independently, with replacement); if any belongs to the arrival's flow, the arrival and
//! every distinct matching candidate are dropped. Otherwise RED decides. With `region = "rear"`
//! the single candidate is drawn from the rear half of the queue (the [CHOKeD] §3.1 experiment).

use crate::family::{check_buffer_mode, drop_victims, family_params, matches, red_leaky_delegate, RedLeaky};
use crate::red_math::Region;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// Where CHOKe draws its candidates from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DrawRegion {
    /// The whole queue (CHOKe).
    #[default]
    Whole,
    /// The `ceil(Q/2)` live packets nearest the tail (rear-region CHOKe, §6.1, A36).
    Rear,
}

/// What a matched drop does to RED's uniformisation counter (A9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CountMatched {
    /// Leave it unchanged: only arrivals that reach the RED test advance it (default).
    #[default]
    Unchanged,
    /// Reset it to 0, as after an early drop.
    Reset,
}

family_params! {
    /// CHOKe parameters: RED's, plus the candidates.
    pub struct ChokeParams {
        /// Number of drop candidates drawn per congested arrival.
        #[serde(default = "crate::defaults::choke::n_cand")]
        pub n_cand: u32,
        /// `whole` (default) or `rear` (rear-region CHOKe).
        #[serde(default)]
        pub region: DrawRegion,
        /// Also draw when the average is above the hard threshold (Pan's flow chart; A8).
        #[serde(default = "crate::defaults::choke::choke_draw_above_hard")]
        pub choke_draw_above_hard: bool,
        /// `unchanged` (default) or `reset` (A9).
        #[serde(default)]
        pub count_matched: CountMatched,
    } red
}

impl Params for ChokeParams {
    fn validate(&self) -> Result<(), ParamError> {
        self.red().check()?;
        if !(1..=10_000).contains(&self.n_cand) {
            return Err(ParamError::new("n_cand", format!("must be 1..10000, got {}", self.n_cand)));
        }
        if self.region == DrawRegion::Rear && self.n_cand != 1 {
            return Err(ParamError::new("n_cand", "rear-region CHOKe draws one candidate (n_cand = 1)"));
        }
        if self.region == DrawRegion::Rear && self.draw_population == crate::buffer::DrawPopulation::Physical {
            return Err(ParamError::new("draw_population", "the rear region is a rank range of live packets, so rear-region draws are over live packets only (\"live\")"));
        }
        check_buffer_mode(&self.buffer_mode())
    }
}

/// CHOKe over a leaky buffer.
pub struct Choke<P> {
    p: ChokeParams,
    q: RedLeaky<P>,
    /// Scratch: positions of matching candidates (no allocation per packet).
    hits: Vec<u64>,
}

impl<P: Pkt> Scheme<P> for Choke<P> {
    type Params = ChokeParams;
    fn new(p: &ChokeParams, link: LinkInfo, limit: Limit) -> Self {
        Choke {
            q: RedLeaky::new(p.red().stage(link), p.buffer_mode(), p.region == DrawRegion::Rear, limit),
            hits: Vec::with_capacity(p.n_cand as usize),
            p: p.clone(),
        }
    }
}

impl<P: Pkt> Choke<P> {
    /// Step 4: the matched-drop test. Fills `hits` with the distinct matching candidates.
    fn draw_matches(&mut self, flow: u32, cx: &mut Cx<'_, P>) {
        self.hits.clear();
        match self.p.region {
            DrawRegion::Whole => {
                for _ in 0..self.p.n_cand {
                    let Some(d) = self.q.buf.draw(cx.rng) else { return };
                    if matches(&self.q.buf, d.pos, d.live, flow) && !self.hits.contains(&d.pos) {
                        self.hits.push(d.pos);
                    }
                }
            }
            DrawRegion::Rear => {
                let q = self.q.buf.len();
                if q == 0 {
                    return;
                }
                let front = q / 2; // floor(Q/2) nearest the head; the rear holds ceil(Q/2)
                let k = front + cx.rng.below((q - front) as u64) as usize;
                let pos = self.q.buf.nth_live(k);
                if matches(&self.q.buf, pos, true, flow) {
                    self.hits.push(pos);
                }
            }
        }
    }
}

crate::hint::hint_from!(Choke, q.buf.upcoming);

impl<P: Pkt> Qdisc<P> for Choke<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // 1-2: RED average and region
        let region = self.q.region(cx.now);
        if region != Region::None && (region != Region::Hard || self.p.choke_draw_above_hard) {
            // 4: matched-drop test
            self.draw_matches(pkt.flow(), cx);
            if !self.hits.is_empty() {
                drop_victims(&mut self.q.buf, &self.hits, cx);
                if self.p.count_matched == CountMatched::Reset {
                    self.q.red.test.reset_count();
                }
                cx.drop(pkt, DropReason::MatchedArrival);
                return false;
            }
        }
        // 3, 5-8: RED's decision and the buffer test
        self.q.admit(pkt, region, cx)
    }

    red_leaky_delegate!(q);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    pub(crate) fn params(min_th: f64, max_th: f64) -> ChokeParams {
        let t = format!("min_th = {min_th}\nmax_th = {max_th}\nw_q = 1.0\nmax_p = 0.000001");
        toml_like(&t)
    }

    /// Minimal parser for tests: `key = number` lines into a ChokeParams via serde_json.
    pub(crate) fn toml_like(t: &str) -> ChokeParams {
        let mut m = String::from("{");
        for (i, line) in t.lines().enumerate() {
            let (k, v) = line.split_once('=').unwrap();
            if i > 0 {
                m.push(',');
            }
            m.push_str(&format!("\"{}\": {}", k.trim(), v.trim()));
        }
        m.push('}');
        serde_json::from_str(&m).unwrap()
    }

    fn q(p: &ChokeParams, limit: u64) -> Choke<P> {
        Choke::new(p, LinkInfo { rate_bps: 8e6 }, Limit::packets(limit))
    }

    #[test]
    fn no_draws_below_min_th_then_matched_drop_of_both() {
        // w_q = 1: avg = queue length seen by the arrival; max_p tiny: RED almost never drops
        let p = params(3.0, 100.0);
        let mut c = q(&p, 50);
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // three packets of flow 7 while avg < 3: admitted without draws
        for _ in 0..3 {
            assert!(c.enqueue(P::new(7, 1000), &mut cx));
        }
        // the fourth sees avg = 3 >= min_th: one draw, every queued packet is flow 7 -> match
        assert!(!c.enqueue(P::new(7, 1000), &mut cx));
        assert_eq!(drops.len(), 2);
        assert_eq!(drops[0].reason, DropReason::MatchedVictim);
        assert_eq!(drops[1].reason, DropReason::MatchedArrival);
        assert_eq!(c.len(), 2);
        // another flow never matches flow 7's packets; it is admitted
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(c.enqueue(P::new(8, 1000), &mut cx));
    }

    #[test]
    fn multi_candidate_drops_every_distinct_matching_candidate() {
        let mut p = params(0.0, 1000.0);
        p.n_cand = 300;
        let mut c = q(&p, 100);
        let mut rng = Rng::stream(2, "t", 0);
        let mut drops = Vec::new();
        for i in 0..10 {
            // admit 10 packets: first one sees an empty queue (no draw); later ones must differ in flow
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            assert!(c.enqueue(P::new(100 + i, 1000), &mut cx));
        }
        for _ in 0..5 {
            c.q.buf.push(P::new(9, 1000), 0);
        }
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(!c.enqueue(P::new(9, 1000), &mut cx));
        let victims = drops.iter().filter(|d| d.reason == DropReason::MatchedVictim).count();
        // 300 draws over 15 packets miss one of the 5 packets of flow 9 with probability
        // 5 (14/15)^300 < 1e-8; each is dropped once
        assert_eq!(victims, 5);
        assert!(drops.iter().all(|d| d.pkt.flow == 9));
        assert_eq!(c.len(), 10);
    }

    #[test]
    fn rear_region_never_picks_the_front_half() {
        let mut p = params(0.0, 1000.0);
        p.region = DrawRegion::Rear;
        let mut rng = Rng::stream(3, "t", 0);
        // Q = 21: front = floor(21/2) = 10 packets of flow 1, rear = 11 packets of flow 2
        let fresh = || {
            let mut c = q(&p, 1000);
            for i in 0..21 {
                c.q.buf.push(P::new(if i < 10 { 1 } else { 2 }, 1000), 0);
            }
            c
        };
        for _ in 0..300 {
            let mut drops = Vec::new();
            // flow 1 can only match the front: never a matched drop
            let mut c = fresh();
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            assert!(c.enqueue(P::new(1, 1000), &mut cx));
            // flow 2 fills the rear: always matched
            let mut c = fresh();
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            assert!(!c.enqueue(P::new(2, 1000), &mut cx));
            assert_eq!(drops.len(), 2);
        }
    }

    #[test]
    fn hard_region_draws_first_unless_disabled() {
        let p = params(1.0, 2.0);
        let mut c = q(&p, 50);
        for _ in 0..5 {
            c.q.buf.push(P::new(4, 1000), 0);
        }
        let mut rng = Rng::stream(4, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // avg = 5 > max_th: Pan's chart still draws: matched, not forced
        assert!(!c.enqueue(P::new(4, 1000), &mut cx));
        assert_eq!(drops.last().unwrap().reason, DropReason::MatchedArrival);
        let mut p2 = p.clone();
        p2.choke_draw_above_hard = false;
        let mut c = q(&p2, 50);
        for _ in 0..5 {
            c.q.buf.push(P::new(4, 1000), 0);
        }
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(!c.enqueue(P::new(4, 1000), &mut cx));
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].reason, DropReason::Forced);
    }

    #[test]
    fn validation() {
        let mut p = params(10.0, 5.0);
        assert_eq!(p.validate().unwrap_err().field, "max_th");
        p = params(5.0, 10.0);
        p.n_cand = 0;
        assert_eq!(p.validate().unwrap_err().field, "n_cand");
        p.n_cand = 1;
        p.draw_population = crate::buffer::DrawPopulation::Physical;
        assert_eq!(p.validate().unwrap_err().field, "draw_population");
    }
}
