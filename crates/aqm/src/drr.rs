//! DRR — per-flow Deficit Round Robin, the fair queue the stateless schemes approximate.
//!
//! Reference: M. Shreedhar, G. Varghese, "Efficient Fair Queuing Using Deficit Round-Robin",
//! IEEE/ACM Transactions on Networking 4(3):375–385, June 1996 (first in Proc. ACM SIGCOMM 1995)
//! ([DRR]).
//!
//! Every flow with packets waiting has its own FIFO (exact: one queue per flow id, no hashing),
//! and the active queues are served in round robin: at its turn a queue's *deficit* grows by
//! `quantum` bytes and it sends packets while their size fits in the deficit ([DRR] §3, Fig. 3);
//! a queue that empties leaves the round with its deficit reset to 0. With `quantum` at least the
//! largest packet, each turn sends at least one packet and every backlogged flow gets the same
//! bytes per round: max-min fairness within one packet per round. The buffer is shared; when it
//! overflows, a packet is pushed out of the longest queue (in the queue unit): its head (as
//! FQ-CoDel does) or its tail ([DRR] §5 drops from the longest queue), or the arrival is refused
//! (`overflow_drop`). State: per active flow a queue header, its deficit and a table entry.

use crate::fifo::Fifo;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, QueueUnit, Scheme, Time};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// DRR parameters as written in a scenario (`aqm = { type = "drr", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DrrParams {
    /// Bytes added to a queue's deficit at each turn (at least the largest packet).
    #[serde(default = "crate::defaults::drr::quantum")]
    pub quantum: u32,
    /// On overflow: `longest_head` (the head of the longest queue), `longest_tail` (its tail) or
    /// `arrival` (refuse the arrival, DropTail on the shared buffer).
    #[serde(default)]
    pub overflow_drop: OverflowDrop,
}

/// What an overflow drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OverflowDrop {
    #[default]
    LongestHead,
    LongestTail,
    Arrival,
}

impl Default for DrrParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for DrrParams {
    fn validate(&self) -> Result<(), ParamError> {
        crate::control::check_bytes("quantum", self.quantum)?;
        Ok(())
    }
}

/// One flow's queue.
struct FlowQ<P> {
    flow: u32,
    fifo: Fifo<P>,
    deficit: u64,
    /// Neighbours in the list of queues of the same length (packet mode; `NONE` at the ends).
    prev: u32,
    next: u32,
}

const NONE: u32 = u32::MAX;

/// The queues by length in packets, for finding a longest queue in O(1): one doubly linked list
/// per length (`heads[L]`), and the largest length with a non-empty list. Lengths change by one
/// packet at a time, so the maximum moves by at most one per change.
#[derive(Default)]
struct ByLength {
    heads: Vec<u32>,
    max: usize,
}

impl ByLength {
    fn unlink<P>(&mut self, qs: &mut [FlowQ<P>], s: u32, len: usize) {
        let (p, n) = (qs[s as usize].prev, qs[s as usize].next);
        if p == NONE {
            self.heads[len] = n;
        } else {
            qs[p as usize].next = n;
        }
        if n != NONE {
            qs[n as usize].prev = p;
        }
    }

    fn link<P>(&mut self, qs: &mut [FlowQ<P>], s: u32, len: usize) {
        if self.heads.len() <= len {
            self.heads.resize(len + 1, NONE);
        }
        let h = self.heads[len];
        qs[s as usize].prev = NONE;
        qs[s as usize].next = h;
        if h != NONE {
            qs[h as usize].prev = s;
        }
        self.heads[len] = s;
    }

    /// Queue `s` went from `from` to `to` packets (`to = from ± 1`; length 0 is not listed).
    fn moved<P>(&mut self, qs: &mut [FlowQ<P>], s: u32, from: usize, to: usize) {
        if from > 0 {
            self.unlink(qs, s, from);
        }
        if to > 0 {
            self.link(qs, s, to);
        }
        if to > self.max {
            self.max = to;
        }
        while self.max > 0 && self.heads[self.max] == NONE {
            self.max -= 1;
        }
    }

    /// A longest queue: the last to reach the largest length.
    fn longest(&self) -> Option<u32> {
        (self.max > 0).then(|| self.heads[self.max])
    }
}

/// Per-flow DRR.
pub struct Drr<P> {
    /// Queues by slot; free slots are reused (no allocation once the pool has grown).
    queues: Vec<FlowQ<P>>,
    free: Vec<u32>,
    /// Flow id -> slot of its queue (only flows with packets waiting).
    slot: FxHashMap<u32, u32>,
    /// The round: slots of the active queues.
    active: VecDeque<u32>,
    /// The head of `active` has received its quantum for the current turn.
    turn_started: bool,
    pkts: usize,
    bytes: u64,
    limit: Limit,
    quantum: u64,
    overflow: OverflowDrop,
    peak_active: usize,
    /// Packet mode: the queues by length.
    by_len: Option<ByLength>,
}

impl<P: Pkt> Drr<P> {
    pub fn new(p: &DrrParams, limit: Limit) -> Self {
        Drr {
            queues: Vec::new(),
            free: Vec::new(),
            slot: FxHashMap::default(),
            active: VecDeque::new(),
            turn_started: false,
            pkts: 0,
            bytes: 0,
            limit,
            quantum: p.quantum as u64,
            overflow: p.overflow_drop,
            peak_active: 0,
            by_len: (limit.unit == QueueUnit::Packets).then(ByLength::default),
        }
    }

    /// Flows with packets waiting.
    pub fn active_flows(&self) -> usize {
        self.active.len()
    }

    fn qlen_of(&self, s: u32) -> u64 {
        let f = &self.queues[s as usize].fifo;
        self.limit.qlen(f.len(), f.bytes())
    }

    /// The slot of a longest queue: in packet mode the last to reach the largest length (O(1));
    /// in byte mode the longest in bytes, the lowest flow id among equals (a scan of the active
    /// queues).
    fn longest(&self) -> u32 {
        if let Some(b) = &self.by_len {
            return b.longest().expect("overflow with no active queue");
        }
        *self
            .active
            .iter()
            .max_by_key(|&&s| (self.qlen_of(s), std::cmp::Reverse(self.queues[s as usize].flow)))
            .expect("overflow with no active queue")
    }

    /// Push `pkt` at the tail of queue `s`, keeping the length lists.
    #[inline]
    fn push(&mut self, s: u32, pkt: P, now: Time) {
        let q = &mut self.queues[s as usize];
        let from = q.fifo.len();
        q.fifo.push(pkt, now);
        self.pkts += 1;
        self.bytes += pkt.size() as u64;
        if let Some(b) = &mut self.by_len {
            b.moved(&mut self.queues, s, from, from + 1);
        }
    }

    /// Take the head (or with `tail`, the tail) packet of queue `s`, keeping the length lists.
    #[inline]
    fn take(&mut self, s: u32, tail: bool) -> (P, Time) {
        let q = &mut self.queues[s as usize];
        let from = q.fifo.len();
        let e = if tail { q.fifo.pop_back() } else { q.fifo.pop() }.expect("the queue holds packets");
        self.pkts -= 1;
        self.bytes -= e.0.size() as u64;
        if let Some(b) = &mut self.by_len {
            b.moved(&mut self.queues, s, from, from - 1);
        }
        e
    }

    /// Remove an emptied queue from the round (its deficit is reset, [DRR] Fig. 3).
    fn retire(&mut self, s: u32) {
        let q = &mut self.queues[s as usize];
        debug_assert!(q.fifo.is_empty());
        q.deficit = 0;
        self.slot.remove(&q.flow);
        if self.active.front() == Some(&s) {
            self.active.pop_front();
            self.turn_started = false;
        } else if let Some(i) = self.active.iter().position(|&x| x == s) {
            self.active.remove(i);
        }
        self.free.push(s);
    }
}

impl<P: Pkt> Scheme<P> for Drr<P> {
    type Params = DrrParams;
    fn new(params: &DrrParams, _link: LinkInfo, limit: Limit) -> Self {
        Drr::new(params, limit)
    }
}

impl<P: Pkt> Qdisc<P> for Drr<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        if self.overflow == OverflowDrop::Arrival && !self.limit.admits(self.pkts, self.bytes, pkt.size()) {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        let flow = pkt.flow();
        let s = match self.slot.get(&flow) {
            Some(&s) => s,
            None => {
                let s = match self.free.pop() {
                    Some(s) => {
                        self.queues[s as usize].flow = flow;
                        s
                    }
                    None => {
                        self.queues.push(FlowQ { flow, fifo: Fifo::default(), deficit: 0, prev: NONE, next: NONE });
                        (self.queues.len() - 1) as u32
                    }
                };
                self.slot.insert(flow, s);
                self.active.push_back(s);
                self.peak_active = self.peak_active.max(self.active.len());
                s
            }
        };
        self.push(s, pkt, cx.now);
        let mut admitted = true;
        while self.limit.qlen(self.pkts, self.bytes) > self.limit.value {
            let l = self.longest();
            let (p, _) = self.take(l, self.overflow == OverflowDrop::LongestTail);
            let emptied = self.queues[l as usize].fifo.is_empty();
            let own_tail = l == s && (emptied || self.overflow == OverflowDrop::LongestTail);
            if own_tail && admitted {
                // the arrival itself left (it was the tail of its queue)
                admitted = false;
            }
            cx.drop(p, DropReason::Overflow);
            if emptied {
                self.retire(l);
            }
        }
        admitted
    }

    fn dequeue(&mut self, _cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        loop {
            let &s = self.active.front()?;
            let q = &mut self.queues[s as usize];
            if !self.turn_started {
                q.deficit += self.quantum;
                self.turn_started = true;
            }
            let head = q.fifo.iter().next().map(|(p, _)| p.size() as u64).expect("active queues hold packets");
            if head <= q.deficit {
                q.deficit -= head;
                let (p, enq) = self.take(s, false);
                if self.queues[s as usize].fifo.is_empty() {
                    self.retire(s);
                }
                return Some((p, enq));
            }
            // the head does not fit: the turn passes to the next queue, the deficit is kept
            self.active.rotate_left(1);
            self.turn_started = false;
        }
    }

    fn len(&self) -> usize {
        self.pkts
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Order: the queues in round order, each from head to tail.
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        for &s in &self.active {
            self.queues[s as usize].fifo.for_each(f);
        }
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["active_flows"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.active.len() as f64;
    }
    /// Per active flow (at most at once): its queue's header and deficit, its table entry and its
    /// place in the round.
    fn state_bytes(&self) -> u64 {
        let per = std::mem::size_of::<FlowQ<P>>() + 8 + 4;
        (std::mem::size_of::<Self>() + per * self.peak_active) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    fn cx_parts() -> (Rng, Vec<crate::Dropped<P>>) {
        (Rng::stream(1, "drr", 0), Vec::new())
    }

    #[test]
    fn validation() {
        assert!(DrrParams::default().validate().is_ok());
        assert_eq!(DrrParams { quantum: 0, ..Default::default() }.validate().unwrap_err().field, "quantum");
    }

    /// [DRR]'s guarantee: backlogged flows get equal bytes per round whatever their packet
    /// sizes (a flow of 1500-byte packets and one of 300-byte packets: 1500 bytes each per round).
    #[test]
    fn equal_bytes_per_round_with_different_packet_sizes() {
        let mut q: Drr<P> = Drr::new(&DrrParams::default(), Limit::packets(10_000));
        let (mut rng, mut drops) = cx_parts();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..100 {
            q.enqueue(P::new(1, 1500), &mut cx);
            for _ in 0..5 {
                q.enqueue(P::new(2, 300), &mut cx);
            }
        }
        let mut bytes = [0u64; 3];
        for _ in 0..300 {
            let (p, _) = q.dequeue(&mut cx).unwrap();
            bytes[p.flow as usize] += p.size as u64;
        }
        // 300 departures = 50 rounds of 1 + 5 packets: 75 000 bytes each
        assert_eq!(bytes[1], bytes[2], "{bytes:?}");
    }

    /// A flow that sends little is served at once (it is never behind more than one quantum of
    /// each other flow), and per-flow FIFO order holds.
    #[test]
    fn a_light_flow_is_not_starved_and_order_is_kept() {
        let mut q: Drr<P> = Drr::new(&DrrParams::default(), Limit::packets(10_000));
        let (mut rng, mut drops) = cx_parts();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for i in 0..500u32 {
            let mut p = P::new(1, 1000);
            p.seq = i;
            q.enqueue(p, &mut cx);
        }
        let mut p = P::new(2, 1000);
        p.seq = 1000;
        q.enqueue(p, &mut cx);
        let mut out = Vec::new();
        for _ in 0..3 {
            out.push(q.dequeue(&mut cx).unwrap().0);
        }
        assert!(out.iter().any(|p| p.flow == 2), "{:?}", out.iter().map(|p| p.flow).collect::<Vec<_>>());
        let seqs: Vec<u32> = out.iter().filter(|p| p.flow == 1).map(|p| p.seq).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    }

    /// The length lists find a longest queue: after every operation of a random sequence, the
    /// queue they name is as long as the longest found by a scan.
    #[test]
    fn length_lists_track_the_longest_queue() {
        let mut q: Drr<P> = Drr::new(&DrrParams { quantum: 500, ..Default::default() }, Limit::packets(40));
        let (mut rng, mut drops) = cx_parts();
        for step in 0..20_000u32 {
            let mut cx = Cx { now: u64::from(step), rng: &mut rng, drops: &mut drops };
            let r = cx.rng.below(10);
            if r < 6 {
                let f = cx.rng.below(7) as u32;
                q.enqueue(P::new(f, 100 + 100 * f), &mut cx);
            } else {
                q.dequeue(&mut cx);
            }
            if q.pkts > 0 {
                let scan = q.active.iter().map(|&s| q.queues[s as usize].fifo.len()).max().unwrap();
                assert_eq!(q.queues[q.longest() as usize].fifo.len(), scan, "step {step}");
            }
            assert_eq!(
                q.by_len.as_ref().unwrap().max,
                q.active.iter().map(|&s| q.queues[s as usize].fifo.len()).max().unwrap_or(0)
            );
        }
    }

    /// On overflow the longest queue loses a packet: its head, its tail, or (with `arrival`) the
    /// arrival is refused; an unresponsive flow cannot push a short flow out.
    #[test]
    fn overflow_drops_from_the_longest_queue() {
        for mode in [OverflowDrop::LongestHead, OverflowDrop::LongestTail, OverflowDrop::Arrival] {
            let mut q: Drr<P> = Drr::new(&DrrParams { overflow_drop: mode, ..Default::default() }, Limit::packets(10));
            let (mut rng, mut drops) = cx_parts();
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            for i in 0..8u32 {
                let mut p = P::new(1, 1000);
                p.seq = i;
                q.enqueue(p, &mut cx);
            }
            q.enqueue(P::new(2, 1000), &mut cx);
            q.enqueue(P::new(2, 1000), &mut cx);
            // full: a third packet of flow 2
            let ok = q.enqueue(P::new(2, 1000), &mut cx);
            let d = cx.drops.last().unwrap();
            match mode {
                OverflowDrop::LongestHead => assert!(ok && d.pkt.flow == 1 && d.pkt.seq == 0),
                OverflowDrop::LongestTail => assert!(ok && d.pkt.flow == 1 && d.pkt.seq == 7),
                OverflowDrop::Arrival => assert!(!ok && d.pkt.flow == 2),
            }
            assert_eq!(q.len(), 10);
        }
    }
}
