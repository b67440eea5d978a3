//! Perfect CHOKe (aqm.md §6.2): an oracle variant used by [TWL] to show that the leaky buffer,
//! not the drop probability alone, is what makes CHOKe work.
//!
//! Reference: A. Tang, J. Wang, S. H. Low, "Understanding CHOKe", IEEE INFOCOM 2003, §IV.
//!
//! Instead of drawing a packet, the oracle knows each flow's backlog `b_i` and drops a congested
//! arrival with probability `min(1, 2 b_i / Q)` — the probability with which CHOKe's two-packet
//! match would hit it — without removing any queued packet. RED's stage follows, as in CHOKe (A10);
//! the drop is recorded as `MATCHED_ARRIVAL` (A35). Keeps per-flow state (a backlog counter per
//! flow), unlike CHOKe.

use crate::family::family_params;
use crate::fifo::Fifo;
use crate::red::RedStage;
use crate::red_math::{p_base, Region};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use rustc_hash::FxHashMap;

family_params! {
    /// Perfect CHOKe parameters: RED's, plus whether the RED stage runs after the oracle.
    pub struct PerfectChokeParams {
        /// Keep the RED stage after the oracle test (A10).
        #[serde(default = "crate::defaults::perfect_choke::red_stage")]
        pub red_stage: bool,
    } red
}

impl Params for PerfectChokeParams {
    fn validate(&self) -> Result<(), ParamError> {
        self.red().check()?;
        let d = crate::buffer::BufferMode::default();
        let m = self.buffer_mode();
        for (field, differs) in [
            ("victim_removal", m.removal != d.removal),
            ("doomed_occupy_buffer", m.doomed_occupy != d.doomed_occupy),
            ("draw_population", m.population != d.population),
            ("doomed_draw", m.doomed_draw != d.doomed_draw),
        ] {
            if differs {
                return Err(ParamError::new(field, "does not apply: Perfect CHOKe drops no queued packets"));
            }
        }
        Ok(())
    }
}

pub struct PerfectChoke<P> {
    p: PerfectChokeParams,
    fifo: Fifo<P>,
    red: RedStage,
    limit: Limit,
    backlog: FxHashMap<u32, u32>,
    peak_flows: usize,
}

impl<P: Pkt> Scheme<P> for PerfectChoke<P> {
    type Params = PerfectChokeParams;
    fn new(p: &PerfectChokeParams, link: LinkInfo, limit: Limit) -> Self {
        PerfectChoke {
            fifo: Fifo::default(),
            red: p.red().stage(link),
            limit,
            backlog: FxHashMap::default(),
            peak_flows: 0,
            p: p.clone(),
        }
    }
}

impl<P: Pkt> Qdisc<P> for PerfectChoke<P> {
    fn enqueue(&mut self, mut pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let q = self.limit.qlen(self.fifo.len(), self.fifo.bytes());
        let avg = self.red.est.update(cx.now, q as f64);
        let region = p_base(avg, &self.red.th);
        // 4': the oracle test
        let n = self.fifo.len();
        if region != Region::None && n > 0 {
            let b_i = self.backlog.get(&pkt.flow()).copied().unwrap_or(0) as f64;
            if cx.rng.uniform() < (2.0 * b_i / n as f64).min(1.0) {
                cx.drop(pkt, DropReason::MatchedArrival);
                return false;
            }
        }
        if self.p.red_stage {
            if let Some(r) = self.red.test.decide(region, pkt.size(), n, cx.rng) {
                let Some(marked) = cx.verdict(pkt, r, self.red.ecn) else { return false };
                pkt = marked;
            }
        }
        if !self.limit.admits(n, self.fifo.bytes(), pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        *self.backlog.entry(pkt.flow()).or_insert(0) += 1;
        self.peak_flows = self.peak_flows.max(self.backlog.len());
        self.fifo.push(pkt, cx.now);
        true
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let e = self.fifo.pop()?;
        let f = e.0.flow();
        if let Some(b) = self.backlog.get_mut(&f) {
            *b -= 1;
            if *b == 0 {
                self.backlog.remove(&f);
            }
        }
        if self.fifo.is_empty() {
            self.red.on_queue_empty(cx.now);
        }
        Some(e)
    }
    fn len(&self) -> usize {
        self.fifo.len()
    }
    fn bytes(&self) -> u64 {
        self.fifo.bytes()
    }
    fn on_link_idle(&mut self, now: Time) {
        self.red.on_link_idle(now);
    }
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        self.fifo.for_each(f)
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["avg", "p"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.red.est.avg();
        out[1] = self.red.test.last_p();
    }
    /// The oracle's per-flow backlogs at their largest (8 bytes per flow with packets queued).
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + 8 * self.peak_flows) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    #[test]
    fn oracle_drops_with_twice_the_backlog_share() {
        let p: PerfectChokeParams =
            serde_json::from_str(r#"{"min_th": 0, "max_th": 1000, "w_q": 1.0, "max_p": 1e-9, "red_stage": false}"#)
                .unwrap();
        let mut rng = Rng::stream(1, "pc", 0);
        for (mine, want) in [(0usize, 0.0), (1, 0.2), (3, 0.6), (6, 1.0)] {
            let n = 4000;
            let mut dropped = 0;
            for _ in 0..n {
                let mut c: PerfectChoke<P> = PerfectChoke::new(&p, LinkInfo { rate_bps: 8e6 }, Limit::packets(100));
                let mut drops = Vec::new();
                let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
                // 10 queued packets, `mine` of them flow 1; admit them through the oracle-free path
                for k in 0..10 {
                    c.fifo.push(P::new(if k < mine { 1 } else { 100 + k as u32 }, 1000), 0);
                    *c.backlog.entry(if k < mine { 1 } else { 100 + k as u32 }).or_insert(0) += 1;
                }
                if !c.enqueue(P::new(1, 1000), &mut cx) {
                    dropped += 1;
                    assert_eq!(drops.len(), 1, "no victim");
                    assert_eq!(drops[0].reason, DropReason::MatchedArrival);
                }
            }
            let f = dropped as f64 / n as f64;
            assert!((f - want).abs() < 0.03, "b_i = {mine}: {f} vs {want}");
        }
    }
}
