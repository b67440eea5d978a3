//! The pending-event set.
//!
//! An event is a time and a small payload (a kind and an entity index) packed into one `u128`
//! key: `time << 32 | kind << 28 | index`. Events at equal times are ordered by kind, then index —
//! a fixed, documented order, so runs are deterministic. The set stays small by construction: a
//! link holds one event (its earliest in-flight packet), a flow at most one per timer.
//!
//! The set is a *radix heap* (Ahuja, Mehlhorn, Orlin, Tarjan 1990): it relies on the fact that a
//! discrete-event simulation never schedules into the past, so every pushed key is at least the
//! last popped one. A key goes into bucket `b` = the position of the highest bit in which it
//! differs from the last popped key; popping refills bucket 0 from the lowest non-empty bucket.
//! Each key moves down at most 128 times in its life and usually only a few, pushes are appends
//! to a vector, and there is no sifting through a large array: faster than a binary heap at the
//! 10^4-10^6 pending events of large runs.

use aqm::Time;

/// Event kinds, in the order they are processed when several fall on the same nanosecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Start of the measurement window (snapshot of counters).
    Warmup = 0,
    /// Periodic time-series sample.
    Sample = 1,
    /// An AQM's periodic timer (PI, REM, RAQM, PIE; index = link).
    AqmTimer = 2,
    /// A link's earliest in-flight packet reaches the far end.
    Link = 3,
    /// A flow timer (RTO or delayed ACK; index = flow * 2 + slot).
    Timer = 4,
    /// A flow starts.
    Start = 5,
    /// A UDP source emits its next packet.
    Send = 6,
    /// A flow's application stops.
    Stop = 7,
    /// A short-connection group's next arrival (index = generator).
    Arrive = 8,
    /// A web session sends its next request (index = session).
    Session = 9,
    /// Periodic per-flow time-series sample.
    FlowSample = 10,
    /// A queue snapshot at a random (Poisson) instant (M10).
    Snapshot = 11,
}

const KINDS: [Kind; 12] = [
    Kind::Warmup,
    Kind::Sample,
    Kind::AqmTimer,
    Kind::Link,
    Kind::Timer,
    Kind::Start,
    Kind::Send,
    Kind::Stop,
    Kind::Arrive,
    Kind::Session,
    Kind::FlowSample,
    Kind::Snapshot,
];

/// Largest entity index an event can carry.
pub const MAX_INDEX: u32 = (1 << 28) - 1;

const BUCKETS: usize = 129;

/// A refill that moves at most this many events reports them as coming soon (a larger one
/// reaches too far ahead: their state would be evicted again before it is used).
const NEAR: usize = 64;

/// Monotone min-priority queue of pending events (a radix heap).
pub struct EventQueue {
    buckets: Vec<Vec<u128>>,
    /// Bit i set when bucket i is non-empty (buckets 0..=128 in three words).
    nonempty: [u64; 3],
    last: u128,
    len: usize,
    pushed: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::with_capacity(0)
    }
}

#[inline]
fn bucket_of(key: u128, last: u128) -> usize {
    if key == last {
        0
    } else {
        128 - (key ^ last).leading_zeros() as usize
    }
}

impl EventQueue {
    pub fn with_capacity(_n: usize) -> Self {
        EventQueue { buckets: vec![Vec::new(); BUCKETS], nonempty: [0; 3], last: 0, len: 0, pushed: 0 }
    }

    #[inline]
    fn insert(&mut self, key: u128) {
        let b = bucket_of(key, self.last);
        self.buckets[b].push(key);
        self.nonempty[b >> 6] |= 1 << (b & 63);
    }

    /// Schedule an event. `t` must not be earlier than the last popped event (time, then kind
    /// and index). An event that would be (an engine bug: debug builds stop on it) is moved to
    /// 1 ns after the last popped one instead of corrupting the set, so a release build never
    /// panics here.
    #[inline]
    pub fn push(&mut self, t: Time, kind: Kind, index: u32) {
        debug_assert!(index <= MAX_INDEX);
        let mut key = ((t as u128) << 32) | ((kind as u128) << 28) | index as u128;
        if key < self.last {
            debug_assert!(false, "event scheduled in the past (t = {t} ns)");
            let next = ((self.last >> 32) as Time).saturating_add(1);
            key = ((next as u128) << 32) | ((kind as u128) << 28) | index as u128;
        }
        self.pushed += 1;
        self.len += 1;
        self.insert(key);
    }

    /// Make bucket 0 hold the minimum; returns false if the set is empty.
    #[inline]
    fn refill(&mut self) -> bool {
        self.refill_with(&mut |_, _| {})
    }

    /// [`Self::refill`], telling `soon` the kind and index of every event it moves down: those are
    /// the next events in time order (all before any event left in a higher bucket), so the
    /// engine can start loading their state from memory before it needs it.
    #[inline]
    fn refill_with(&mut self, soon: &mut impl FnMut(Kind, u32)) -> bool {
        if self.nonempty[0] & 1 != 0 {
            return true;
        }
        if self.len == 0 {
            return false;
        }
        let b = if self.nonempty[0] != 0 {
            self.nonempty[0].trailing_zeros() as usize
        } else if self.nonempty[1] != 0 {
            64 + self.nonempty[1].trailing_zeros() as usize
        } else {
            128
        };
        let mut keys = std::mem::take(&mut self.buckets[b]);
        self.nonempty[b >> 6] &= !(1 << (b & 63));
        self.last = *keys.iter().min().expect("non-empty bucket");
        let near = keys.len() <= NEAR;
        for k in keys.drain(..) {
            if near {
                let low = k as u32;
                soon(KINDS[(low >> 28) as usize], low & MAX_INDEX);
            }
            self.insert(k);
        }
        self.buckets[b] = keys; // keep the allocation
        true
    }

    /// [`Self::peek_time`], telling `soon` about the events a refill brings near (see
    /// [`Self::refill_with`]).
    #[inline]
    pub fn peek_time_with(&mut self, mut soon: impl FnMut(Kind, u32)) -> Option<Time> {
        if !self.refill_with(&mut soon) {
            return None;
        }
        Some((self.last >> 32) as Time)
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        if !self.refill() {
            return None;
        }
        Some((self.last >> 32) as Time)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Kind, u32)> {
        if !self.refill() {
            return None;
        }
        let k = self.buckets[0].pop().expect("refilled");
        if self.buckets[0].is_empty() {
            self.nonempty[0] &= !1;
        }
        self.len -= 1;
        let t = (k >> 32) as Time;
        let low = k as u32;
        Some((t, KINDS[(low >> 28) as usize], low & MAX_INDEX))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
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

    #[test]
    fn matches_a_sorted_reference_under_monotone_use() {
        // interleave pushes (never into the past) and pops; compare with a sorted list
        let mut q = EventQueue::default();
        let mut reference: Vec<(Time, u32)> = Vec::new();
        let mut rng = aqm::rng::Rng::stream(9, "heap", 0);
        let mut now = 0;
        for step in 0..20_000u32 {
            if rng.uniform() < 0.55 || reference.is_empty() {
                let span = if rng.uniform() < 0.1 { 1 << 40 } else { 1000 };
                let t = now + rng.below(span);
                q.push(t, Kind::Link, step);
                reference.push((t, step));
                reference.sort();
            } else {
                let (t, _, i) = q.pop().unwrap();
                let want = reference.remove(0);
                assert_eq!((t, i), want);
                now = t;
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    #[test]
    #[cfg(debug_assertions)] // release builds move such an event to 1 ns after the last instead
    #[should_panic(expected = "in the past")]
    fn refuses_the_past() {
        let mut q = EventQueue::default();
        q.push(10, Kind::Link, 0);
        q.pop();
        q.push(5, Kind::Link, 0);
    }
}
