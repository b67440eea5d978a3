//! The pending-event set.
//!
//! An event is a time and a small payload (a kind and an entity index) packed into one `u128`
//! key: `time << 32 | kind << 28 | index`. A binary min-heap of these keys keeps entries at
//! 16 bytes and makes comparisons single integer compares. Events at equal times are ordered by
//! kind, then index — a fixed, documented order, so runs are deterministic. The set stays small by
//! construction: a link holds one event (its earliest in-flight packet), a flow at most one per timer.

use aqm::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Event kinds, in the order they are processed when several fall on the same nanosecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Start of the measurement window (snapshot of counters).
    Warmup = 0,
    /// Periodic time-series sample.
    Sample = 1,
    /// A link's earliest in-flight packet reaches the far end.
    Link = 2,
    /// A flow timer (RTO or delayed ACK; index = flow * 2 + slot).
    Timer = 3,
    /// A flow starts.
    Start = 4,
    /// A UDP source emits its next packet.
    Send = 5,
    /// A flow's application stops.
    Stop = 6,
}

const KINDS: [Kind; 7] = [Kind::Warmup, Kind::Sample, Kind::Link, Kind::Timer, Kind::Start, Kind::Send, Kind::Stop];

/// Largest entity index an event can carry.
pub const MAX_INDEX: u32 = (1 << 28) - 1;

/// Min-heap of pending events.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<u128>>,
    pushed: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(n), pushed: 0 }
    }

    #[inline]
    pub fn push(&mut self, t: Time, kind: Kind, index: u32) {
        debug_assert!(index <= MAX_INDEX);
        self.pushed += 1;
        let key = ((t as u128) << 32) | ((kind as u128) << 28) | index as u128;
        self.heap.push(Reverse(key));
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse(k)| (k >> 32) as Time)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Kind, u32)> {
        let Reverse(k) = self.heap.pop()?;
        let t = (k >> 32) as Time;
        let low = k as u32;
        Some((t, KINDS[(low >> 28) as usize], low & MAX_INDEX))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Total number of events ever pushed.
    pub fn pushed(&self) -> u64 {
        self.pushed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_kind_then_index_order() {
        let mut q = EventQueue::default();
        q.push(5, Kind::Link, 3);
        q.push(1, Kind::Send, 9);
        q.push(5, Kind::Warmup, 0);
        q.push(5, Kind::Link, 1);
        q.push(u64::MAX >> 1, Kind::Stop, MAX_INDEX);
        assert_eq!(q.pop(), Some((1, Kind::Send, 9)));
        assert_eq!(q.pop(), Some((5, Kind::Warmup, 0)));
        assert_eq!(q.pop(), Some((5, Kind::Link, 1)));
        assert_eq!(q.pop(), Some((5, Kind::Link, 3)));
        assert_eq!(q.pop(), Some((u64::MAX >> 1, Kind::Stop, MAX_INDEX)));
        assert_eq!(q.pop(), None);
    }
}
