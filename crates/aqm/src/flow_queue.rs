//! Flow queueing, written once: packets hashed by flow into buckets, each a FIFO with its own AQM
//! state, served by a deficit round robin with a list of *new* buckets before a list of *old* ones
//! (RFC 8290 §4.1–4.2). FQ-CoDel ([`crate::fq_codel`], CoDel's law per bucket) and FQ-PIE
//! ([`crate::fq_pie`], PIE's controller per bucket) run on it; each keeps what is its own: the
//! AQM state `V` of a bucket, what happens at an arrival and when the buffer is full, and which
//! list a new bucket found empty goes to ([`EmptyNew`]).
//!
//! Reference: T. Hoeiland-Joergensen, P. McKenney, D. Taht, J. Gettys, E. Dumazet, "The Flow
//! Queue CoDel Packet Scheduler and Active Queue Management Algorithm", RFC 8290, January 2018.

use crate::fifo::Fifo;
use crate::rng::{mix64, Rng};
use crate::{ParamError, Pkt, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// How flow ids map to buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowHash {
    /// `(flow_id + salt) mod flows`: no collisions among fewer than `flows` consecutive flow ids.
    #[default]
    Mod,
    /// A 64-bit mixing hash of the flow id and the salt, then `mod flows`: collides like a real
    /// 5-tuple hash.
    Mix,
}

/// Where a bucket taken from the *new* list and found empty goes (RFC 8290 §4.2 and Linux's
/// `fq_codel` differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyNew {
    /// To the old list, always (RFC 8290 §4.2: a flow cannot stay "new" by sending one packet at
    /// a time).
    ToOld,
    /// To the old list only if that list is not empty, else out of both (Linux).
    ToOldIfAny,
}

/// The table's parameters: `flows` buckets in `[1, max_flows]`, a quantum of at least one byte.
pub fn check(flows: u32, max_flows: u32, quantum: u32) -> Result<(), ParamError> {
    if !(1..=max_flows).contains(&flows) {
        return Err(ParamError::new("flows", format!("must be in [1, {max_flows}], got {flows}")));
    }
    crate::control::check_bytes("quantum", quantum)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

/// One bucket: its packets, its DRR deficit and its AQM state.
pub struct Bucket<P, V> {
    pub fifo: Fifo<P>,
    pub deficit: i64,
    pub vars: V,
    list: List,
}

/// The buckets, the two lists and the totals.
pub struct FlowQueues<P, V> {
    buckets: Vec<Bucket<P, V>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// Packets and bytes waiting in all buckets.
    pub pkts: usize,
    pub bytes: u64,
    /// The hash salt, drawn from the discipline's stream at the first arrival (`salted`).
    salt: u64,
    salted: bool,
}

impl<P: Pkt, V: Copy> FlowQueues<P, V> {
    /// `n` buckets, each starting with AQM state `vars`.
    pub fn new(n: u32, vars: V) -> Self {
        FlowQueues {
            buckets: (0..n).map(|_| Bucket { fifo: Fifo::default(), deficit: 0, vars, list: List::None }).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            pkts: 0,
            bytes: 0,
            salt: 0,
            salted: false,
        }
    }
}

impl<P: Pkt, V> FlowQueues<P, V> {
    /// Draw the hash salt from `rng` if it has none yet (the first arrival).
    #[inline]
    pub fn salt_from(&mut self, rng: &mut Rng) {
        if !self.salted {
            self.set_salt(rng.next_u64());
        }
    }

    pub fn set_salt(&mut self, salt: u64) {
        (self.salt, self.salted) = (salt, true);
    }

    pub fn salt(&self) -> Option<u64> {
        self.salted.then_some(self.salt)
    }

    /// The bucket of a flow.
    #[inline]
    pub fn bucket_of(&self, flow: u32, hash: FlowHash) -> usize {
        let n = self.buckets.len() as u64;
        (match hash {
            FlowHash::Mod => (flow as u64 + (self.salt % n)) % n,
            FlowHash::Mix => mix64(flow as u64 ^ self.salt) % n,
        }) as usize
    }

    pub fn bucket(&self, i: usize) -> &Bucket<P, V> {
        &self.buckets[i]
    }

    pub fn bucket_mut(&mut self, i: usize) -> &mut Bucket<P, V> {
        &mut self.buckets[i]
    }

    pub fn buckets(&self) -> impl Iterator<Item = &Bucket<P, V>> {
        self.buckets.iter()
    }

    /// Bucket `i` with the totals, for an AQM that removes packets from it (CoDel's law).
    #[inline]
    pub fn split(&mut self, i: usize) -> (&mut Bucket<P, V>, &mut usize, &mut u64) {
        (&mut self.buckets[i], &mut self.pkts, &mut self.bytes)
    }

    /// Add `pkt` to bucket `i` (RFC 8290 §4.1); a bucket that becomes active joins the new list
    /// with a full `quantum`.
    #[inline]
    pub fn push(&mut self, i: usize, pkt: P, now: Time, quantum: i64) {
        let b = &mut self.buckets[i];
        b.fifo.push(pkt, now);
        self.pkts += 1;
        self.bytes += pkt.size() as u64;
        if b.list == List::None {
            b.list = List::New;
            b.deficit = quantum;
            self.new_flows.push_back(i as u32);
        }
    }

    /// Take bucket `i`'s head packet, keeping the totals.
    #[inline]
    pub fn pop(&mut self, i: usize) -> Option<(P, Time)> {
        let (p, t) = self.buckets[i].fifo.pop()?;
        self.pkts -= 1;
        self.bytes -= p.size() as u64;
        Some((p, t))
    }

    /// The bucket DRR serves next (RFC 8290 §4.2), and whether it is at the head of the new list:
    /// the head of the new list, else of the old one; a bucket whose deficit is spent gets
    /// `quantum` more and goes to the tail of the old list first. `None` when no bucket is active.
    #[inline]
    pub fn next_bucket(&mut self, quantum: i64) -> Option<(usize, bool)> {
        loop {
            let (from_new, i) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i as usize),
                (None, Some(&i)) => (false, i as usize),
                (None, None) => return None,
            };
            let b = &mut self.buckets[i];
            if b.deficit > 0 {
                return Some((i, from_new));
            }
            b.deficit += quantum;
            if from_new {
                self.new_flows.pop_front();
            } else {
                self.old_flows.pop_front();
            }
            b.list = List::Old;
            self.old_flows.push_back(i as u32);
        }
    }

    /// The bucket [`FlowQueues::next_bucket`] returned had nothing to send: from the new list it
    /// goes as `rule` says, from the old list it becomes inactive.
    pub fn retire(&mut self, i: usize, from_new: bool, rule: EmptyNew) {
        let b = &mut self.buckets[i];
        if from_new {
            self.new_flows.pop_front();
            if rule == EmptyNew::ToOld || !self.old_flows.is_empty() {
                b.list = List::Old;
                self.old_flows.push_back(i as u32);
            } else {
                b.list = List::None;
            }
        } else {
            self.old_flows.pop_front();
            b.list = List::None;
        }
    }

    /// Buckets on the new and the old list.
    pub fn active(&self) -> (usize, usize) {
        (self.new_flows.len(), self.old_flows.len())
    }

    /// The active buckets, the new list's then the old list's.
    pub fn active_buckets(&self) -> impl Iterator<Item = usize> + '_ {
        self.new_flows.iter().chain(self.old_flows.iter()).map(|&i| i as usize)
    }

    /// The active bucket with the largest byte backlog (lowest index on ties). Every bucket
    /// holding packets is on one of the two lists.
    pub fn fattest(&self) -> usize {
        let mut best: Option<(u64, usize)> = None;
        for i in self.active_buckets() {
            let b = self.buckets[i].fifo.bytes();
            best = match best {
                Some((bb, bi)) if bb > b || (bb == b && bi < i) => Some((bb, bi)),
                _ => Some((b, i)),
            };
        }
        best.expect("overflow with no active bucket").1
    }

    /// Visit the waiting packets: the buckets of the new list, then those of the old list, each
    /// from head to tail. This is the order of service only as far as DRR would serve each
    /// bucket's whole backlog in one turn; within a flow it is the transmission order.
    pub fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        for i in self.active_buckets() {
            self.buckets[i].fifo.for_each(f);
        }
    }

    /// The bytes of the buckets (queue header, deficit, AQM state, list) and of the two lists'
    /// slots.
    pub fn table_bytes(&self) -> u64 {
        (self.buckets.len() * (std::mem::size_of::<Bucket<P, V>>() + 4)) as u64
    }
}

/// The [`crate::Qdisc`] methods a discipline over [`FlowQueues`] (its field `$f`) only passes on:
/// the totals and the waiting packets.
macro_rules! fq_views {
    ($f:ident) => {
        fn len(&self) -> usize {
            self.$f.pkts
        }
        fn bytes(&self) -> u64 {
            self.$f.bytes
        }
        fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
            self.$f.for_each_waiting(f)
        }
    };
}
pub(crate) use fq_views;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::P;

    fn fq(n: u32) -> FlowQueues<P, ()> {
        let mut q = FlowQueues::new(n, ());
        q.set_salt(0);
        q
    }

    #[test]
    fn mod_hashing_does_not_collide_and_mix_stays_in_range() {
        let mut q = fq(1024);
        q.set_salt(12345);
        let mut seen = std::collections::HashSet::new();
        for f in 0..1024 {
            assert!(seen.insert(q.bucket_of(f, FlowHash::Mod)));
        }
        assert_eq!(q.bucket_of(0, FlowHash::Mod), 12345 % 1024);
        assert!((0..100).all(|f| q.bucket_of(f, FlowHash::Mix) < 1024));
    }

    #[test]
    fn drr_rotates_spent_buckets_and_retires_empty_ones() {
        let mut q = fq(8);
        for _ in 0..3 {
            q.push(1, P::new(1, 1000), 0, 1500);
        }
        q.push(2, P::new(2, 1000), 0, 1500);
        assert_eq!(q.active(), (2, 0));
        assert_eq!(q.next_bucket(1500), Some((1, true)));
        q.pop(1);
        q.bucket_mut(1).deficit -= 1000;
        q.pop(1);
        q.bucket_mut(1).deficit -= 1000;
        // bucket 1's deficit is spent: it moves behind to the old list, bucket 2 is next
        assert_eq!(q.next_bucket(1500), Some((2, true)));
        assert_eq!(q.active(), (1, 1));
        q.pop(2);
        q.bucket_mut(2).deficit -= 1000;
        assert_eq!(q.next_bucket(1500), Some((2, true)));
        // found empty on the new list: to the old list under both rules while it is not empty
        q.retire(2, true, EmptyNew::ToOldIfAny);
        assert_eq!(q.active(), (0, 2));
        assert_eq!((q.pkts, q.bytes), (1, 1000));
        assert_eq!(q.fattest(), 1);
        // with the old list empty, Linux's rule takes a new bucket out of both lists
        let mut q = fq(8);
        q.push(3, P::new(3, 100), 0, 1500);
        q.pop(3);
        assert_eq!(q.next_bucket(1500), Some((3, true)));
        q.retire(3, true, EmptyNew::ToOldIfAny);
        assert_eq!(q.active(), (0, 0));
        q.push(3, P::new(3, 100), 0, 1500);
        q.pop(3);
        q.next_bucket(1500);
        q.retire(3, true, EmptyNew::ToOld);
        assert_eq!(q.active(), (0, 1));
    }
}
