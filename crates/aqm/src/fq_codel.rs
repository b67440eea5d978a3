//! FQ-CoDel — Flow Queue CoDel (aqm.md §17.3). **Modern baseline, not from the papers.**
//!
//! Reference: T. Hoeiland-Joergensen, P. McKenney, D. Taht, J. Gettys, E. Dumazet, "The Flow
//! Queue CoDel Packet Scheduler and Active Queue Management Algorithm", RFC 8290, January 2018.
//!
//! Packets are hashed by flow id into `flows` buckets, each a FIFO controlled by its own instance
//! of CoDel's law ([`crate::codel_law`]). A deficit round robin with quantum `quantum` bytes
//! serves a *new-flows* list before an *old-flows* list (RFC 8290 §4.2). When the shared buffer
//! overflows, packets are dropped from the head of the bucket with the largest byte backlog
//! (§4.1; the specification recommends one packet per excess, reason `overflow`).
//!
//! Departures from the RFC's defaults forced by the simulator: the buffer is the link's `limit`
//! (RFC default 10240 packets: set `limit = 10240` on the link to get it); ECN is absent.

use crate::codel_law::{codel_law_params, CodelQueue, CodelVars, LawParams};
use crate::fifo::Fifo;
pub use crate::flow_queue::FlowHash;
use crate::flow_queue::{EmptyNew, FlowQueues};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};

codel_law_params! {
    defaults = fq_codel;
    /// FQ-CoDel parameters as written in a scenario (`aqm = { type = "fq_codel", ... }`): CoDel's law
    /// with RFC 8289's defaults in every bucket.
    pub struct FqCodelParams {
        /// Mark ECN-capable packets (Congestion Experienced) instead of dropping them early (RFC 3168).
        #[serde(default)]
        pub ecn: bool,
        /// Number of hash buckets (RFC 8290 §5.2.1: 1024).
        #[serde(default = "crate::defaults::fq_codel::flows")]
        pub flows: u32,
        /// DRR quantum in bytes (RFC 8290 §5.2.2: MTU + 14 = 1514).
        #[serde(default = "crate::defaults::fq_codel::quantum")]
        pub quantum: u32,
        /// CoDel `maxpacket` in bytes, compared with the whole FQ-CoDel backlog (as Linux does).
        #[serde(default = "crate::defaults::fq_codel::maxpacket")]
        pub maxpacket: u32,
        /// Flow-to-bucket mapping: `mod` = `(flow_id + salt) mod flows` (aqm.md §17.3; no collisions
        /// among fewer than `flows` consecutive flow ids) or `mix` = a 64-bit mixing hash of
        /// `flow_id` and the salt, then `mod flows` (collides like a real 5-tuple hash). The salt is
        /// drawn from the AQM's random stream at the first arrival.
        #[serde(default)]
        pub hash: FlowHash,
    }
}

impl Params for FqCodelParams {
    fn validate(&self) -> Result<(), ParamError> {
        crate::flow_queue::check(self.flows, 1 << 20, self.quantum)?;
        LawParams::check(self.target, self.interval)
    }
}

/// One bucket seen by the CoDel law: pops keep the qdisc's totals right, and the backlog it
/// reports is the whole qdisc's (Linux `sch_fq_codel.c` passes `sch->qstats.backlog`).
struct BucketQ<'a, P> {
    fifo: &'a mut Fifo<P>,
    pkts: &'a mut usize,
    bytes: &'a mut u64,
}

impl<P: Pkt> CodelQueue<P> for BucketQ<'_, P> {
    #[inline]
    fn pop_head(&mut self) -> Option<(P, Time)> {
        let (p, t) = self.fifo.pop()?;
        *self.pkts -= 1;
        *self.bytes -= p.size() as u64;
        Some((p, t))
    }
    #[inline]
    fn backlog_bytes(&self) -> u64 {
        *self.bytes
    }
}

/// FQ-CoDel: the flow queues of [`crate::flow_queue`], CoDel's law per bucket.
pub struct FqCodel<P> {
    ecn: bool,
    fq: FlowQueues<P, CodelVars>,
    limit: Limit,
    law: LawParams,
    quantum: i64,
    hash: FlowHash,
}

impl<P: Pkt> FqCodel<P> {
    pub fn new(params: &FqCodelParams, limit: Limit) -> Self {
        FqCodel {
            ecn: params.ecn,
            fq: FlowQueues::new(params.flows, CodelVars::default()),
            limit,
            law: LawParams::from_secs(params.target, params.interval, params.maxpacket),
            quantum: params.quantum as i64,
            hash: params.hash,
        }
    }

    /// The bucket of a flow (the salt must be set).
    #[inline]
    fn bucket_of(&self, flow: u32) -> usize {
        self.fq.bucket_of(flow, self.hash)
    }

    fn over_limit(&self) -> bool {
        self.limit.qlen(self.fq.pkts, self.fq.bytes) > self.limit.value
    }

    /// Buckets on the new and old lists.
    pub fn active_flows(&self) -> (usize, usize) {
        self.fq.active()
    }
}

impl<P: Pkt> Scheme<P> for FqCodel<P> {
    type Params = FqCodelParams;
    fn new(params: &FqCodelParams, _link: LinkInfo, limit: Limit) -> Self {
        FqCodel::new(params, limit)
    }
}

impl<P: Pkt> Qdisc<P> for FqCodel<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        self.fq.salt_from(cx.rng);
        // RFC 8290 §4.1: classify, timestamp, add to the bucket's queue
        let i = self.bucket_of(pkt.flow());
        self.fq.push(i, pkt, cx.now, self.quantum);
        // over the limit: drop from the head of the fattest bucket until the buffer fits
        let mut admitted = true;
        while self.over_limit() {
            let j = self.fq.fattest();
            let (p, _) = self.fq.pop(j).expect("fattest bucket holds packets");
            if j == i && self.fq.bucket(j).fifo.is_empty() {
                // the arrival sits at the tail: it left last
                admitted = false;
            }
            cx.drop(p, DropReason::Overflow);
        }
        admitted
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        // RFC 8290 §4.2
        loop {
            let (i, from_new) = self.fq.next_bucket(self.quantum)?;
            let (b, pkts, bytes) = self.fq.split(i);
            let mut q = BucketQ { fifo: &mut b.fifo, pkts, bytes };
            let ecn = self.ecn;
            match b.vars.dequeue(&self.law, cx.now, &mut q, &mut |p| cx.signal(p, ecn)) {
                Some((p, enq)) => {
                    b.deficit -= p.size() as i64;
                    return Some((p, enq));
                }
                None => self.fq.retire(i, from_new, EmptyNew::ToOld),
            }
        }
    }

    crate::flow_queue::fq_views!(fq);
    fn state_names(&self) -> &'static [&'static str] {
        &["new_flows", "old_flows", "dropping_flows"]
    }
    /// Every bucket (queue header, deficit, CoDel's variables, list) and the two lists' slots.
    fn state_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64 + self.fq.table_bytes()
    }
    fn state(&self, out: &mut [f64]) {
        let (new, old) = self.fq.active();
        out[0] = new as f64;
        out[1] = old as f64;
        out[2] = self.fq.active_buckets().filter(|&i| self.fq.bucket(i).vars.dropping).count() as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    const MS: Time = 1_000_000;

    fn fq(params: &FqCodelParams, limit: Limit) -> FqCodel<P> {
        let mut q = FqCodel::new(params, limit);
        q.fq.set_salt(0);
        q
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(FqCodelParams::default().validate().is_ok());
        let p = FqCodelParams { flows: 0, ..Default::default() };
        assert_eq!(p.validate().unwrap_err().field, "flows");
        let p = FqCodelParams { quantum: 0, ..Default::default() };
        assert_eq!(p.validate().unwrap_err().field, "quantum");
        let p = FqCodelParams { target: 0.0, ..Default::default() };
        assert_eq!(p.validate().unwrap_err().field, "target");
    }

    #[test]
    fn hashing_is_deterministic_and_mod_does_not_collide() {
        let mut q = fq(&FqCodelParams::default(), Limit::packets(100));
        let mut seen = std::collections::HashSet::new();
        q.fq.set_salt(12345);
        for f in 0..1024 {
            assert!(seen.insert(q.bucket_of(f)), "flows below 1024 never share a bucket");
        }
        assert_eq!(q.bucket_of(0), 12345 % 1024);
        assert_eq!(q.bucket_of(1024), q.bucket_of(0));
        q.hash = FlowHash::Mix;
        let a: Vec<usize> = (0..100).map(|f| q.bucket_of(f)).collect();
        let b: Vec<usize> = (0..100).map(|f| q.bucket_of(f)).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|&x| x < 1024));
        // the salt comes from the AQM stream at the first arrival
        let mut q: FqCodel<P> = FqCodel::new(&FqCodelParams::default(), Limit::packets(10));
        let mut rng = Rng::stream(9, "aqm", 0);
        let want = rng.clone().next_u64();
        let mut drops = Vec::new();
        q.enqueue(P::new(1, 100), &mut Cx { now: 0, rng: &mut rng, drops: &mut drops });
        assert_eq!(q.fq.salt(), Some(want));
    }

    /// Two flows kept backlogged, one with 1000-byte and one with 300-byte packets: DRR gives
    /// them equal bytes (within one quantum plus one packet), not equal packets. Dequeues happen
    /// at the enqueue instant so the CoDel law never acts.
    #[test]
    fn drr_gives_backlogged_flows_equal_bytes() {
        let mut q = fq(&FqCodelParams::default(), Limit::packets(10_000));
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        let mut served = [0u64; 2];
        for round in 0..3000 {
            while q.fq.bucket(q.bucket_of(0)).fifo.len() < 5 {
                q.enqueue(P::new(0, 1000), &mut cx);
            }
            while q.fq.bucket(q.bucket_of(1)).fifo.len() < 5 {
                q.enqueue(P::new(1, 300), &mut cx);
            }
            let (p, _) = q.dequeue(&mut cx).expect("backlogged");
            served[p.flow as usize] += p.size as u64;
            if round > 100 {
                let diff = (served[0] as i64 - served[1] as i64).abs();
                assert!(diff <= 1514 + 1000, "round {round}: bytes {served:?}");
            }
        }
        assert!(cx.drops.is_empty());
        let ratio = served[0] as f64 / served[1] as f64;
        assert!((ratio - 1.0).abs() < 0.01, "byte ratio {ratio}");
    }

    /// A flow that becomes active is served before the backlogged flows of the old list, and
    /// only for one quantum; a flow on the old list that empties is removed.
    #[test]
    fn new_flows_are_served_first() {
        let mut q = fq(&FqCodelParams::default(), Limit::packets(1000));
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..20 {
            q.enqueue(P::new(7, 1000), &mut cx);
        }
        assert_eq!(q.active_flows(), (1, 0));
        // flow 7 spends its quantum (1514 B: two packets), then moves to the old list
        assert_eq!(q.dequeue(&mut cx).unwrap().0.flow, 7);
        assert_eq!(q.dequeue(&mut cx).unwrap().0.flow, 7);
        assert_eq!(q.dequeue(&mut cx).unwrap().0.flow, 7);
        assert_eq!(q.active_flows(), (0, 1));
        // a new flow arrives: served next, ahead of the 17 waiting packets of flow 7
        q.enqueue(P::new(8, 1000), &mut cx);
        q.enqueue(P::new(8, 1000), &mut cx);
        q.enqueue(P::new(8, 1000), &mut cx);
        assert_eq!(q.active_flows(), (1, 1));
        assert_eq!(q.dequeue(&mut cx).unwrap().0.flow, 8);
        assert_eq!(q.dequeue(&mut cx).unwrap().0.flow, 8);
        // its quantum is used up: it joins the old list behind flow 7
        assert_eq!(q.dequeue(&mut cx).unwrap().0.flow, 7);
        assert_eq!(q.active_flows(), (0, 2));
        // drain: both served from the old list; emptied old buckets leave the lists
        while q.dequeue(&mut cx).is_some() {}
        assert_eq!(q.active_flows(), (0, 0));
        assert_eq!(q.len(), 0);
        assert_eq!(q.bytes(), 0);
        // a sparse flow that empties from the new list goes to the old list, not away
        q.enqueue(P::new(9, 100), &mut cx);
        assert_eq!(q.dequeue(&mut cx).unwrap().0.flow, 9);
        assert!(q.dequeue(&mut cx).is_none());
        assert_eq!(q.active_flows(), (0, 0), "moved to old, then found empty there and removed");
    }

    #[test]
    fn overflow_drops_from_the_fattest_bucket() {
        let mut q = fq(&FqCodelParams::default(), Limit::packets(10));
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..8 {
            assert!(q.enqueue(P::new(1, 1000), &mut cx), "packet {i}");
        }
        assert!(q.enqueue(P::new(2, 1000), &mut cx));
        assert!(q.enqueue(P::new(2, 1000), &mut cx));
        assert!(cx.drops.is_empty());
        // the 11th packet (flow 2) is admitted; the head of flow 1 (the fattest) is dropped
        assert!(q.enqueue(P::new(2, 1000), &mut cx));
        assert_eq!(cx.drops.len(), 1);
        assert_eq!(cx.drops[0].reason, DropReason::Overflow);
        assert_eq!((cx.drops[0].pkt.flow, cx.drops[0].pkt.size), (1, 1000));
        assert_eq!(q.len(), 10);
        // when the arrival's own bucket is the fattest and holds only it, the arrival is refused
        let mut q = fq(&FqCodelParams::default(), Limit::packets(1));
        assert!(q.enqueue(P::new(1, 100), &mut cx));
        assert!(!q.enqueue(P::new(2, 1500), &mut cx));
        assert_eq!(cx.drops.last().unwrap().pkt.flow, 2);
        // byte mode: drops continue until the buffer fits
        let mut q = fq(&FqCodelParams::default(), Limit::bytes(3000));
        let n = cx.drops.len();
        for _ in 0..3 {
            q.enqueue(P::new(1, 800), &mut cx);
        }
        q.enqueue(P::new(2, 500), &mut cx);
        assert!(q.enqueue(P::new(3, 1000), &mut cx));
        assert_eq!(cx.drops.len() - n, 2, "two packets of the fattest flow go");
        assert!(cx.drops[n..].iter().all(|d| d.pkt.flow == 1));
        assert_eq!(q.bytes(), 2300);
    }

    /// Each bucket runs its own CoDel: a flow whose packets wait long is dropped from, while a
    /// sparse flow sharing the link is not.
    #[test]
    fn codel_acts_per_bucket() {
        let mut q = fq(&FqCodelParams::default(), Limit::packets(100_000));
        let mut rng = Rng::stream(1, "t", 0);
        let mut early = [0u32; 2];
        let mut sent = [0u32; 2];
        // flow 0: 3 packets per ms; flow 1: one packet every 10 ms; the link serves 2 per ms
        for ms in 0..2000u64 {
            let mut drops = Vec::new();
            let mut cx = Cx { now: ms * MS, rng: &mut rng, drops: &mut drops };
            for _ in 0..3 {
                q.enqueue(P::new(0, 1000), &mut cx);
            }
            if ms % 10 == 0 {
                q.enqueue(P::new(1, 1000), &mut cx);
            }
            for _ in 0..2 {
                if let Some((p, _)) = q.dequeue(&mut cx) {
                    sent[p.flow as usize] += 1;
                }
            }
            for d in &drops {
                assert_eq!(d.reason, DropReason::Early);
                early[d.pkt.flow as usize] += 1;
            }
        }
        assert!(early[0] > 50, "the backlogged flow is controlled: {early:?}");
        assert_eq!(early[1], 0, "the sparse flow never waits: {early:?}");
        assert_eq!(sent[1], 200);
    }
}
