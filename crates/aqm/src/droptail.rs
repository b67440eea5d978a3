//! DropTail (aqm.md §2): drop an arrival only when the buffer is full.

use crate::fifo::Fifo;
use crate::{Cx, DropReason, Limit, LinkInfo, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// DropTail has no parameters beyond the link's buffer limit.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DropTailParams {}

impl Params for DropTailParams {}

pub struct DropTail<P> {
    fifo: Fifo<P>,
    limit: Limit,
}

impl<P: Pkt> DropTail<P> {
    pub fn new(limit: Limit) -> Self {
        DropTail { fifo: Fifo::default(), limit }
    }
}

impl<P: Pkt> Scheme<P> for DropTail<P> {
    type Params = DropTailParams;
    fn new(_: &DropTailParams, _link: LinkInfo, limit: Limit) -> Self {
        DropTail::new(limit)
    }
}

crate::hint::hint_from!(DropTail, fifo.get);

impl<P: Pkt> Qdisc<P> for DropTail<P> {
    #[inline]
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // §2 step 1: if qlen + size_unit(pkt) > B: Drop(OVERFLOW)
        if !self.limit.admits(self.fifo.len(), self.fifo.bytes(), pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        self.fifo.push(pkt, cx.now);
        true
    }
    crate::fifo::fifo_views!(fifo, pop);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hint::Upcoming;
    use crate::rng::Rng;
    use crate::test_util::P;

    #[test]
    fn drops_only_when_full_packets_and_bytes() {
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut q = DropTail::new(Limit::packets(3));
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..5 {
            let ok = q.enqueue(P::new(i, 100), &mut cx);
            assert_eq!(ok, i < 3);
        }
        assert_eq!(q.len(), 3);
        assert!(drops.iter().all(|d| d.reason == DropReason::Overflow));
        assert_eq!(drops.len(), 2);

        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        let mut q = DropTail::new(Limit::bytes(250));
        assert!(q.enqueue(P::new(0, 100), &mut cx));
        assert!(q.enqueue(P::new(0, 100), &mut cx));
        assert!(!q.enqueue(P::new(0, 100), &mut cx));
        assert!(q.enqueue(P::new(0, 50), &mut cx));
        assert_eq!(q.bytes(), 250);
        // FIFO order
        assert_eq!(q.dequeue(&mut cx).unwrap().0.size, 100);
    }

    #[test]
    fn the_upcoming_packets_are_those_that_leave_next() {
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        let mut q = DropTail::new(Limit::packets(10));
        for i in 0..6 {
            assert!(q.enqueue(P::new(i, 100 + i), &mut cx));
        }
        let ahead: Vec<Option<u32>> = (0..7).map(|k| q.upcoming(k).map(|p| p.size)).collect();
        let mut left = Vec::new();
        while let Some((p, _)) = q.dequeue(&mut cx) {
            left.push(Some(p.size));
        }
        left.push(None);
        assert_eq!(ahead, left);
    }
}
