//! A plain FIFO of waiting packets with byte accounting, shared by the FIFO disciplines.

use crate::{Pkt, Time};
use std::collections::VecDeque;

/// FIFO of `(packet, enqueue time)`.
pub struct Fifo<P> {
    q: VecDeque<(P, Time)>,
    bytes: u64,
}

impl<P: Pkt> Default for Fifo<P> {
    fn default() -> Self {
        Fifo { q: VecDeque::new(), bytes: 0 }
    }
}

impl<P: Pkt> Fifo<P> {
    #[inline]
    pub fn push(&mut self, pkt: P, now: Time) {
        self.bytes += pkt.size() as u64;
        self.q.push_back((pkt, now));
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(P, Time)> {
        let e = self.q.pop_front()?;
        self.bytes -= e.0.size() as u64;
        Some(e)
    }
    /// Take the packet at the tail (push-out from the back of a queue).
    #[inline]
    pub fn pop_back(&mut self) -> Option<(P, Time)> {
        let e = self.q.pop_back()?;
        self.bytes -= e.0.size() as u64;
        Some(e)
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// The packet `k` places behind the head.
    #[inline]
    pub fn get(&self, k: usize) -> Option<&P> {
        self.q.get(k).map(|(p, _)| p)
    }
    /// Packets from head (index 0) to tail.
    pub fn iter(&self) -> impl Iterator<Item = &(P, Time)> {
        self.q.iter()
    }
    /// Visit packets from head to tail.
    pub fn for_each(&self, f: &mut dyn FnMut(&P, Time)) {
        for (p, t) in &self.q {
            f(p, *t);
        }
    }
}

/// The `Qdisc` methods that a discipline over a [`Fifo`] field only delegates: `len`, `bytes`,
/// `for_each_waiting`, and with `pop` also a plain `dequeue` (head of the FIFO).
macro_rules! fifo_views {
    ($f:ident) => {
        fn len(&self) -> usize {
            self.$f.len()
        }
        fn bytes(&self) -> u64 {
            self.$f.bytes()
        }
        fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
            self.$f.for_each(f)
        }
    };
    ($f:ident, pop) => {
        fn dequeue(&mut self, _cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
            self.$f.pop()
        }
        crate::fifo::fifo_views!($f);
    };
}
pub(crate) use fifo_views;
