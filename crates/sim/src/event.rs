//! The pending-event set.
//!
//! An event is a time and a small payload (a kind and an entity index) packed into one `u128`
//! key: `time << 32 | kind << 28 | index`. Events at equal times are ordered by kind, then index —
//! a fixed, documented order, so runs are deterministic. The set stays small by construction: a
//! link holds one event (its earliest in-flight packet), a flow at most one per timer.
//!
//! The set is a *radix heap* (Ahuja, Mehlhorn, Orlin, Tarjan 1990) over granules of time, with the
//! current granule sorted: it relies on the fact that a discrete-event simulation never schedules
//! into the past, so every pushed key is at least the last popped one. A key goes into bucket `b` =
//! the position of the highest bit in which its granule (time >> shift) differs from the current
//! one; when the current granule is used up, the lowest non-empty bucket is emptied, its first
//! granule becomes current (sorted, a handful of keys) and its other keys move to lower buckets.
//! Pushes are appends, a key moves a few times in its life, and a pop is usually the end of a
//! short sorted vector. See docs/engine.md, "The event set".

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

/// A refill that brings at most this many events into the current granule reports them as coming
/// soon (a larger one reaches too far ahead: their state would be evicted again before it is used).
const NEAR: usize = 64;

/// First granule: 2^20 ns (1.05 ms); narrowed while the run shows more events per granule.
const FIRST_SHIFT: u32 = 20;

/// A granule that holds more events than this at a refill is narrowed (see [`EventQueue::narrow`]).
const WIDE: usize = 128;

/// Keys per chunk of a bucket (8 KiB): buckets hold their keys in fixed chunks taken from one
/// shared pool, so the set's memory is that of the keys pending at its fullest, plus at most one
/// partly filled chunk per bucket.
const CHUNK: usize = 512;

/// A chunk of bucket keys: a vector with room for [`CHUNK`] keys, never more.
type Chunk = Vec<u128>;

/// One bucket of the radix heap: its keys in push order, in full chunks and the one being filled
/// (`head`, a plain vector, so that a push is a vector's push). An empty bucket's `head` has no
/// allocation.
#[derive(Default)]
struct Bucket {
    full: Vec<Chunk>,
    head: Chunk,
}

impl Bucket {
    #[cfg(test)]
    fn len(&self) -> usize {
        self.full.len() * CHUNK + self.head.len()
    }

    fn chunks(&self) -> impl Iterator<Item = &Chunk> {
        self.full.iter().chain(std::iter::once(&self.head))
    }

    fn keys(&self) -> impl Iterator<Item = u128> + '_ {
        self.chunks().flat_map(|c| c.iter().copied())
    }
}

/// Events per granule aimed at when narrowing.
const AIM: u64 = 32;

/// Monotone min-priority queue of pending events: a radix heap over *granules* of time with the
/// current granule kept sorted.
///
/// A key's granule is its time shifted right by `shift` bits. `cur` holds every key whose granule
/// is at most `last_g` (the current granule), sorted in descending order so that the minimum is at
/// the end; every other key is in bucket `b` = the position of the highest bit in which its
/// granule differs from `last_g` (0..=63). When `cur` is empty, the lowest non-empty bucket is
/// emptied: its smallest granule becomes `last_g`, the keys of that granule go to `cur` (then
/// sorted), the others land in lower buckets. A key moves down at most 64 times and in practice a
/// few; within a granule, order is by the whole key (time, kind, index), so the sequence of popped
/// events is exactly ascending — the same a binary heap would give: the data structure (and the
/// granule width, which adapts) cannot change results. Keys in `cur` are 64-bit: their time as
/// an offset from the current granule's start (less than a granule, at most 2^20 ns), then kind and
/// index, which orders them as their full keys.
pub struct EventQueue {
    cur: Vec<u64>,
    buckets: [Bucket; 64],
    /// Chunks not in use by any bucket.
    spare: Vec<Chunk>,
    /// Bit b set when bucket b is non-empty.
    nonempty: u64,
    shift: u32,
    last_g: u64,
    /// The current granule's start (`last_g << shift`).
    base: Time,
    /// The last key popped (nothing may be pushed before it).
    last: u128,
    len: usize,
    pushed: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::with_capacity(0)
    }
}

#[inline(always)]
fn time_of(key: u128) -> Time {
    (key >> 32) as Time
}

/// The kind and index of a key's low 32 bits.
#[inline(always)]
fn kind_index(low: u32) -> (Kind, u32) {
    (KINDS[(low >> 28) as usize], low & MAX_INDEX)
}

impl EventQueue {
    pub fn with_capacity(_n: usize) -> Self {
        EventQueue {
            cur: Vec::new(),
            buckets: std::array::from_fn(|_| Bucket::default()),
            spare: Vec::new(),
            nonempty: 0,
            shift: FIRST_SHIFT,
            last_g: 0,
            base: 0,
            last: 0,
            len: 0,
            pushed: 0,
        }
    }

    #[inline(always)]
    fn granule(&self, key: u128) -> u64 {
        time_of(key) >> self.shift
    }

    /// A key of the current granule as kept in `cur`.
    #[inline(always)]
    fn local(&self, key: u128) -> u64 {
        ((time_of(key) - self.base) << 32) | key as u32 as u64
    }

    /// The full key of an entry of `cur`.
    #[inline(always)]
    fn full(&self, local: u64) -> u128 {
        (((self.base + (local >> 32)) as u128) << 32) | local as u32 as u128
    }

    #[inline]
    fn insert(&mut self, key: u128) {
        let g = self.granule(key);
        if g <= self.last_g {
            // descending order: the new key goes after every larger one
            let key = self.local(key);
            let at = self.cur.partition_point(|&k| k > key);
            self.cur.insert(at, key);
        } else {
            let b = 63 - (g ^ self.last_g).leading_zeros() as usize;
            self.push_to(b, key);
        }
    }

    /// Append `key` to bucket `b`.
    #[inline(always)]
    fn push_to(&mut self, b: usize, key: u128) {
        self.nonempty |= 1 << b;
        let head = &mut self.buckets[b & 63].head;
        if head.len() < head.capacity() {
            head.push(key);
        } else {
            self.new_head(b, key);
        }
    }

    /// Bucket `b`'s head chunk is full (or has no room yet): file it, take an empty one and
    /// append `key` there.
    #[cold]
    fn new_head(&mut self, b: usize, key: u128) {
        let chunk = self.spare.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK));
        let bucket = &mut self.buckets[b];
        let full = std::mem::replace(&mut bucket.head, chunk);
        if full.capacity() > 0 {
            bucket.full.push(full);
        }
        bucket.head.push(key);
    }

    /// A chunk whose keys have been read goes back to the pool (an unallocated head has nothing to
    /// give).
    fn recycle(&mut self, mut chunk: Chunk) {
        if chunk.capacity() > 0 {
            chunk.clear();
            self.spare.push(chunk);
        }
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
            let next = time_of(self.last).saturating_add(1);
            key = ((next as u128) << 32) | ((kind as u128) << 28) | index as u128;
        }
        self.pushed += 1;
        self.len += 1;
        self.insert(key);
    }

    /// Make `cur` hold the minimum; returns false if the set is empty. Tells `soon` the kind and
    /// index of every event it brings into the current granule: those are the next events in time
    /// order (all before any event left in a bucket), so the engine can start loading their state
    /// from memory before it needs it.
    #[inline]
    fn refill_with(&mut self, soon: &mut impl FnMut(Kind, u32)) -> bool {
        if !self.cur.is_empty() {
            return true;
        }
        if self.len == 0 {
            return false;
        }
        let b = self.nonempty.trailing_zeros() as usize;
        let mut bucket = std::mem::take(&mut self.buckets[b]);
        self.nonempty &= !(1 << b);
        let shift = self.shift;
        let g = bucket.keys().map(|k| time_of(k) >> shift).min().expect("non-empty bucket");
        self.last_g = g;
        self.base = g << shift;
        // the keys move to `cur` or to lower buckets, and each chunk, once read, goes back to
        // the pool, where those buckets take their chunks: a refill needs almost no new memory
        let head = std::mem::take(&mut bucket.head);
        for chunk in bucket.full.drain(..).chain(std::iter::once(head)) {
            for &k in &chunk {
                if time_of(k) >> shift == g {
                    self.cur.push(((time_of(k) - self.base) << 32) | k as u32 as u64);
                } else {
                    let b = 63 - ((time_of(k) >> shift) ^ g).leading_zeros() as usize;
                    self.push_to(b, k);
                }
            }
            self.recycle(chunk);
        }
        self.buckets[b].full = bucket.full; // (its allocation, empty)
        let n = self.cur.len();
        if n <= 16 {
            // descending insertion sort: a granule holds a handful of keys
            for i in 1..n {
                let k = self.cur[i];
                let mut j = i;
                while j > 0 && self.cur[j - 1] < k {
                    self.cur[j] = self.cur[j - 1];
                    j -= 1;
                }
                self.cur[j] = k;
            }
        } else {
            self.cur.sort_unstable_by(|a, b| b.cmp(a));
            if n > WIDE {
                self.narrow();
            }
        }
        if self.cur.len() <= NEAR {
            for &k in &self.cur {
                let (kind, index) = kind_index(k as u32);
                soon(kind, index);
            }
        }
        true
    }

    /// The current granule holds many events spread over time: make granules narrower, aiming at
    /// about [`AIM`] events per granule, and place every key again (a pass over the set, done a
    /// few times per run at most: the width only ever shrinks). Events at one same time cannot be
    /// told apart by any width; they leave the width as it is.
    #[cold]
    fn narrow(&mut self) {
        let n = self.cur.len() as u64;
        let span = (self.cur[0] >> 32) - (self.cur[self.cur.len() - 1] >> 32);
        let want = 64 - (span.saturating_mul(AIM) / n).max(1).leading_zeros(); // bits of the aimed width
        let shift = want.saturating_sub(1).min(self.shift);
        if shift == self.shift {
            return;
        }
        let cur = std::mem::take(&mut self.cur);
        let mut all: Vec<u128> = cur.iter().map(|&k| self.full(k)).collect();
        for b in 0..64 {
            let bucket = std::mem::take(&mut self.buckets[b]);
            all.extend(bucket.keys());
            for chunk in bucket.full.into_iter().chain(std::iter::once(bucket.head)) {
                self.recycle(chunk);
            }
        }
        self.nonempty = 0;
        self.shift = shift;
        let min = all.iter().copied().min().expect("non-empty");
        self.last_g = self.granule(min);
        self.base = self.last_g << shift;
        let (now, later): (Vec<u128>, Vec<u128>) = all.into_iter().partition(|&k| self.granule(k) == self.last_g);
        let mut now: Vec<u64> = now.into_iter().map(|k| self.local(k)).collect();
        now.sort_unstable_by(|a, b| b.cmp(a));
        self.cur = now;
        for k in later {
            self.insert(k);
        }
    }

    /// Take the earliest event if it is before `end` (telling `soon` about the events a refill
    /// brings near, see [`Self::refill_with`]); `None` if there is none before `end`.
    #[inline]
    pub fn pop_before(&mut self, end: Time, mut soon: impl FnMut(Kind, u32)) -> Option<(Time, Kind, u32)> {
        if !self.refill_with(&mut soon) {
            return None;
        }
        let k = *self.cur.last().expect("refilled");
        if self.base + (k >> 32) >= end {
            return None;
        }
        Some(self.take_next())
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Kind, u32)> {
        if !self.refill_with(&mut |_, _| {}) {
            return None;
        }
        Some(self.take_next())
    }

    /// Remove the next event (`cur`'s last key, after a refill) and decode it.
    #[inline(always)]
    fn take_next(&mut self) -> (Time, Kind, u32) {
        let k = self.cur.pop().expect("refilled");
        self.last = self.full(k);
        self.len -= 1;
        let (kind, index) = kind_index(k as u32);
        (self.base + (k >> 32), kind, index)
    }

    /// The kind and index of the `i`-th event after the one just taken (0: the next), if it is in
    /// the current granule (a hint for prefetching: an event pushed before it is taken may come
    /// first).
    #[inline(always)]
    pub fn peek_next(&self, i: usize) -> Option<(Kind, u32)> {
        let n = self.cur.len();
        (i < n).then(|| kind_index(self.cur[n - 1 - i] as u32))
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
    fn pop_before_stops_at_the_end_and_keeps_the_event() {
        let mut q = EventQueue::default();
        let (a, b) = (3 << FIRST_SHIFT, 1 << FIRST_SHIFT); // past the first granule: a refill
        q.push(a, Kind::Link, 1);
        q.push(b, Kind::Timer, 2);
        q.push(1 << 40, Kind::Stop, 3);
        let mut soon = Vec::new();
        assert_eq!(q.pop_before(a + 1, |k, i| soon.push((k, i))), Some((b, Kind::Timer, 2)));
        assert_eq!(soon, vec![(Kind::Timer, 2)], "the refill reported the next event");
        assert_eq!(q.pop_before(a, |_, _| {}), None, "an event at the end is not taken");
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop_before(a + 1, |_, _| {}), Some((a, Kind::Link, 1)));
        assert_eq!(q.pop_before(u64::MAX, |_, _| {}), Some((1 << 40, Kind::Stop, 3)));
        assert_eq!(q.pop_before(u64::MAX, |_, _| {}), None);
    }

    fn decode(key: u128) -> (Time, Kind, u32) {
        let (kind, index) = kind_index(key as u32);
        (time_of(key), kind, index)
    }

    #[test]
    fn dense_times_and_ties_match_a_sorted_reference() {
        // many events per granule (the width narrows), equal times with every kind, pushes into
        // the current granule while it is drained
        let mut q = EventQueue::default();
        let mut reference: Vec<u128> = Vec::new();
        let mut rng = aqm::rng::Rng::stream(3, "heap", 1);
        let (mut now, mut last) = (0, 0u128);
        for step in 0..30_000u32 {
            if rng.uniform() < 0.6 || reference.is_empty() {
                let span = [1u64, 50, 5_000, 1 << 20, 1 << 34][rng.below(5) as usize];
                let mut t = now + rng.below(span);
                let kind = KINDS[rng.below(KINDS.len() as u64) as usize];
                let index = (step * 7919) % 5000;
                let mut key = ((t as u128) << 32) | ((kind as u128) << 28) | index as u128;
                if key < last {
                    // never into the past: same time, earlier kind or index -> 1 ns later
                    t += 1;
                    key += 1 << 32;
                }
                q.push(t, kind, index);
                reference.push(key);
                reference.sort_unstable_by(|a, b| b.cmp(a));
            } else {
                let got = q.pop().unwrap();
                last = reference.pop().unwrap();
                assert_eq!(got, decode(last));
                now = got.0;
            }
            assert_eq!(q.len(), reference.len());
        }
        while let Some(got) = q.pop() {
            assert_eq!(got, decode(reference.pop().unwrap()));
        }
        assert!(reference.is_empty());
        assert!(q.shift < FIRST_SHIFT, "the granule narrowed");
    }

    #[test]
    fn holds_the_pending_keys_and_a_chunk_per_bucket_at_most() {
        // a run's shape: a large set of far timers and many near events, moved down bucket by
        // bucket; the chunks allocated never exceed those needed by the most keys pending at once,
        // plus one partly filled chunk per bucket and one chunk for the refill in progress
        let mut q = EventQueue::default();
        let mut rng = aqm::rng::Rng::stream(5, "heap", 2);
        let (mut now, mut most) = (0, 0);
        for step in 0..200_000u32 {
            if rng.uniform() < 0.5 || q.is_empty() {
                let span = if rng.uniform() < 0.3 { 1 << 30 } else { 1 << 22 };
                q.push(now + rng.below(span), Kind::Timer, step % 1000);
            } else {
                now = q.pop().unwrap().0;
            }
            most = most.max(q.len());
            if step % 1000 != 999 {
                continue; // (the chunks allocated only ever grow: checking now and then suffices)
            }
            let chunks = q.spare.len()
                + q.buckets.iter().map(|b| b.full.len() + (b.head.capacity() > 0) as usize).sum::<usize>();
            assert!(chunks <= most.div_ceil(CHUNK) + 65, "{chunks} chunks for at most {most} keys");
        }
        assert_eq!(q.buckets.iter().map(Bucket::len).sum::<usize>() + q.cur.len(), q.len());
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
