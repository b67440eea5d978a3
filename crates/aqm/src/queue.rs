//! A discipline plus its accounting (the ns-3 `QueueDisc` base-class pattern).
//!
//! The wrapper calls the discipline and counts what happened, so no algorithm counts its own
//! statistics. Identities (aqm.md §1.3), checked by [`QueueStats::check`]:
//! `arrivals = enqueued + dropped_on_arrival` and
//! `enqueued = transmitted + victims + queued`.

use crate::qdisc::Dropped;
use crate::rng::Rng;
use crate::{AnyQdisc, Cx, DropReason, Pkt, Qdisc, Time};

/// Counters of one queue, in packets and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub arrivals: u64,
    pub arrival_bytes: u64,
    pub enqueued: u64,
    pub transmitted: u64,
    pub transmitted_bytes: u64,
    /// Drops by reason (index [`DropReason::index`]).
    pub drops: [u64; DropReason::COUNT],
    pub drop_bytes: [u64; DropReason::COUNT],
}

impl QueueStats {
    /// Drops of arriving packets (every reason but victims).
    pub fn dropped_on_arrival(&self) -> u64 {
        DropReason::ALL.iter().filter(|r| r.is_arrival_drop()).map(|r| self.drops[r.index()]).sum()
    }
    /// Check the accounting identities given the number of packets still queued.
    pub fn check(&self, queued: u64) -> Result<(), String> {
        if self.arrivals != self.enqueued + self.dropped_on_arrival() {
            return Err(format!(
                "arrivals {} != enqueued {} + dropped on arrival {}",
                self.arrivals,
                self.enqueued,
                self.dropped_on_arrival()
            ));
        }
        let victims = self.drops[DropReason::MatchedVictim.index()];
        if self.enqueued != self.transmitted + victims + queued {
            return Err(format!(
                "enqueued {} != transmitted {} + victims {} + queued {}",
                self.enqueued, self.transmitted, victims, queued
            ));
        }
        Ok(())
    }
}

/// A discipline with its statistics, random stream and drop buffer.
pub struct Queue<P: Pkt> {
    pub disc: AnyQdisc<P>,
    pub stats: QueueStats,
    rng: Rng,
    drops: Vec<Dropped<P>>,
}

impl<P: Pkt> Queue<P> {
    pub fn new(disc: AnyQdisc<P>, rng: Rng) -> Self {
        Queue { disc, stats: QueueStats::default(), rng, drops: Vec::with_capacity(8) }
    }

    /// Offer a packet at `now`. Returns whether it was enqueued; the packets dropped by this call
    /// (the arrival and/or victims) are then available from [`Queue::drops`] until the next call.
    #[inline]
    pub fn enqueue(&mut self, pkt: P, now: Time) -> bool {
        self.drops.clear();
        self.stats.arrivals += 1;
        self.stats.arrival_bytes += pkt.size() as u64;
        let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops };
        let ok = self.disc.enqueue(pkt, &mut cx);
        if ok {
            self.stats.enqueued += 1;
        }
        for d in &self.drops {
            self.stats.drops[d.reason.index()] += 1;
            self.stats.drop_bytes[d.reason.index()] += d.pkt.size() as u64;
        }
        ok
    }

    /// Take the next packet to transmit at `now` (the packets a discipline drops at dequeue are in
    /// [`Queue::drops`] afterwards).
    #[inline]
    pub fn dequeue(&mut self, now: Time) -> Option<(P, Time)> {
        self.drops.clear();
        let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops };
        let out = self.disc.dequeue(&mut cx);
        for d in &self.drops {
            self.stats.drops[d.reason.index()] += 1;
            self.stats.drop_bytes[d.reason.index()] += d.pkt.size() as u64;
        }
        if let Some((p, _)) = &out {
            self.stats.transmitted += 1;
            self.stats.transmitted_bytes += p.size() as u64;
        }
        out
    }

    /// Packets dropped by the last `enqueue`/`dequeue` call.
    #[inline]
    pub fn drops(&self) -> &[Dropped<P>] {
        &self.drops
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.disc.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.disc.len() == 0
    }
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.disc.bytes()
    }
    #[inline]
    pub fn on_link_idle(&mut self, now: Time) {
        self.disc.on_link_idle(now)
    }

    /// Run the discipline's periodic timer at `now` (drops it reports are counted and available
    /// from [`Queue::drops`]).
    pub fn on_timer(&mut self, now: Time) {
        self.drops.clear();
        let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops };
        self.disc.on_timer(&mut cx);
        for d in &self.drops {
            self.stats.drops[d.reason.index()] += 1;
            self.stats.drop_bytes[d.reason.index()] += d.pkt.size() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::red::RedParams;
    use crate::test_util::P;
    use crate::{AqmConfig, Limit, LinkInfo};
    use proptest::prelude::{any, prop_assert, proptest};
    use crate::rng::Rng;

    fn configs() -> Vec<AqmConfig> {
        let mut gentle = RedParams::with_thresholds(3.0, 8.0, 0.3);
        gentle.gentle = true;
        gentle.w_q = 0.2;
        let mut ns2 = gentle.clone();
        ns2.variant = crate::red::RedVariant::Ns2;
        vec![AqmConfig::DropTail(Default::default()), AqmConfig::Red(RedParams::with_thresholds(2.0, 6.0, 0.5)), AqmConfig::Red(gentle), AqmConfig::Red(ns2)]
    }

    proptest! {
        /// Conservation, FIFO order of survivors, limit never exceeded, probability in [0, 1],
        /// for every discipline under any interleaving of arrivals and departures.
        #[test]
        fn invariants_hold(ops in proptest::collection::vec((any::<bool>(), 0u32..4, 1u32..1500), 1..400), seed in 0u64..1000) {
            for cfg in configs() {
                for limit in [Limit::packets(12), Limit::bytes(9000)] {
                    let disc = cfg.build::<P>(LinkInfo { rate_bps: 1e7 }, limit);
                    let mut q = Queue::new(disc, Rng::stream(seed, "prop", 0));
                    let mut next_id = 0u32; // flow field carries a unique id here, to check order
                    let mut last_out: Option<u32> = None;
                    let mut t = 0;
                    let mut names = [0.0f64; 4];
                    for (arrive, _f, size) in &ops {
                        t += 1000;
                        if *arrive {
                            q.enqueue(P::new(next_id, *size), t);
                            next_id += 1;
                        } else if let Some((p, enq)) = q.dequeue(t) {
                            prop_assert!(enq <= t);
                            if let Some(l) = last_out { prop_assert!(p.flow > l, "FIFO order"); }
                            last_out = Some(p.flow);
                            if q.is_empty() { q.on_link_idle(t); }
                        }
                        prop_assert!(limit.qlen(q.len(), q.bytes()) <= limit.value);
                        let n = q.disc.state_names().len();
                        q.disc.state(&mut names[..n]);
                        if n >= 2 { prop_assert!((0.0..=1.0).contains(&names[1])); }
                    }
                    prop_assert!(q.stats.check(q.len() as u64).is_ok(), "{:?}", q.stats.check(q.len() as u64));
                }
            }
        }
    }
}
