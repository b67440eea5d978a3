//! A link's pipe: the FIFO of the packets whose transmission is decided ([`Entry`]: a packet and
//! its arrival time at the far end, or the place of one that has already left), kept in the
//! network's [`Store`].
//!
//! At core-router scale most links are a host pair's access links, and most of the time each holds
//! no packet or one. Until issue 28's eighth round a link held one entry inside itself (a 64-byte
//! link, a cache line, 256 bytes a host pair) and moved a burst to a ring on the heap. Now a link
//! holds only where its entries are, so it is 32 bytes: while its pipe holds one entry, that entry
//! is in a *slot* of the store (one array of entries, the slot freed last taken first, so likely
//! still in cache); during a burst, in a ring from the store's pool (as before); while it is empty,
//! nowhere. The entries in memory are those of the packets on links at once, not one per link.
//! Rings come in sizes 8, 12, 16, 24, 32, … (powers of two and one and a half times them: a
//! burst of ten packets takes 12 places, not 16); a pipe back to one entry moves it to a slot and
//! returns its ring to the pool, where the next burst on any link takes it, so the rings in memory
//! are those of the most pipes in a burst at once. Nothing is allocated per packet: the store
//! grows only while more entries are held at once than ever before. The order of entries, and
//! therefore every result, is that of a plain FIFO.
//!
//! The cost is one more memory access per packet on a link (the link, then its slot).

use crate::packet::Packet;
use aqm::Time;

/// One pipe entry, in the FIFO order of the link's transmitter.
///
/// An entry is a packet on its way ([`Entry::InFlight`]) or the place of one that has already
/// left the link ([`Entry::Left`]): a packet the engine handed on at once when it entered the
/// link (early delivery to its host, or passing through into its next link, `sim::shortcut`) and
/// whose transmission has not started yet. Such a place counts for the buffer test of a simple
/// link while it waits (`Link::simple_arrive`), and is removed once its transmission has started;
/// it is never forwarded and never counted in flight. (32 bytes, as the time and packet alone: the
/// variant is told by a value of `Packet::kind` no packet has.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// `pkt` reaches the far end at `arrive`, where the link's event forwards it.
    InFlight { arrive: Time, pkt: Packet },
    /// A packet that left early, whose transmission starts at `start` (it keeps its place in the
    /// FIFO until then).
    Left { start: Time },
}

const EMPTY: Entry = Entry::Left { start: 0 };

/// Entries a ring of size class `k` holds: 8, 12, 16, 24, 32, … (a power of two, then one and
/// a half times it). (Starting at 4 made point `a` of the bench run 7 % more instructions, in
/// the growth from 4 to 6 to 8 of pipes that hold a few packets.)
#[inline]
const fn ring_capacity(k: usize) -> usize {
    let base = 8usize << (k / 2);
    if k % 2 == 1 {
        base + base / 2
    } else {
        base
    }
}

/// The size class of a ring of `cap` entries (one of [`ring_capacity`]'s values).
#[inline]
fn ring_class(cap: usize) -> usize {
    let k = if cap.is_power_of_two() {
        2 * (cap.trailing_zeros() as usize - 3)
    } else {
        2 * ((cap / 3).trailing_zeros() as usize - 2) + 1
    };
    debug_assert_eq!(ring_capacity(k), cap);
    k
}

/// The largest ring kept for reuse once free, in entries (128 KiB).
const POOLED: usize = 4096;

/// A ring on the heap: a thin pointer (to the slice's own box), so that a pipe is 16 bytes.
#[allow(clippy::redundant_allocation)]
type Ring = Box<Box<[Entry]>>;

/// The entries of every pipe of a network: the slots of pipes holding one entry, and the rings
/// not in use, by size.
#[derive(Default)]
pub struct Store {
    slots: Vec<Entry>,
    free_slots: Vec<u32>,
    /// `rings[k]`: rings of [`ring_capacity`]`(k)` entries not in use.
    rings: Vec<Vec<Ring>>,
}

impl Store {
    /// A slot: the last freed, or a new one.
    #[inline(always)]
    fn take_slot(&mut self) -> u32 {
        match self.free_slots.pop() {
            Some(i) => i,
            None => self.new_slot(),
        }
    }

    #[cold]
    fn new_slot(&mut self) -> u32 {
        let i = self.slots.len();
        assert!(i < u32::MAX as usize, "more than 2^32 links holding a packet at once");
        if i == self.slots.capacity() {
            // grow by doubling, the new room advised onto huge pages before it is written
            self.slots.reserve_exact(i.max(4096));
            crate::mem::advise_spare(&self.slots);
        }
        self.slots.push(EMPTY);
        i as u32
    }

    /// A ring of size class `k`: a free one, or a new one. A new one is made when more rings of
    /// this size are in use than ever before; smaller free rings as large in all are then given
    /// back to the allocator (from the smallest up), whose memory the new one can take: the free
    /// rings of the sizes a burst grew through would otherwise stay as they were at their own
    /// peaks, where the pipes' bursts (slow-start windows that double) now need larger rings.
    fn take_ring(&mut self, k: usize) -> Ring {
        if let Some(r) = self.rings.get_mut(k).and_then(|f| f.pop()) {
            return r;
        }
        let mut need = ring_capacity(k);
        for free in self.rings.iter_mut().take(k) {
            while need > 0 {
                match free.pop() {
                    Some(r) => need = need.saturating_sub(r.len()),
                    None => break,
                }
            }
        }
        Box::new(vec![EMPTY; ring_capacity(k)].into_boxed_slice())
    }

    /// A ring no longer in use: kept for the next burst, unless it is larger than [`POOLED`]
    /// (the rings a shared link's pipe grew through: rare, and each of them megabytes).
    fn put_ring(&mut self, ring: Ring) {
        if ring.len() > POOLED {
            return;
        }
        let k = ring_class(ring.len());
        if self.rings.len() <= k {
            self.rings.resize_with(k + 1, Vec::new);
        }
        self.rings[k].push(ring);
    }

    /// Slots, in use or free (for tests and the memory account).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Entries held by free rings and free slots.
    pub fn free_entries(&self) -> usize {
        self.free_slots.len() + self.rings.iter().flatten().map(|r| r.len()).sum::<usize>()
    }
}

/// Where a link's entries are: nowhere (`len` 0), in slot `head` of the network's [`Store`]
/// (`len` 1 and no ring), or `len` entries from `head` in `ring`. 16 bytes.
#[derive(Debug, Default)]
pub struct Pipe {
    len: u32,
    head: u32,
    ring: Option<Ring>,
}

impl Pipe {
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ring's index of its `i`-th entry from the front.
    #[inline(always)]
    fn ring_index(r: &[Entry], head: u32, i: usize) -> usize {
        let s = head as usize + i;
        if s >= r.len() {
            s - r.len()
        } else {
            s
        }
    }

    /// Start loading the ring's own header (where its entries are), if the pipe has a ring (a
    /// hint; nothing changes).
    #[inline(always)]
    pub fn prefetch_ring(&self) {
        if let Some(r) = &self.ring {
            crate::mem::prefetch::<Box<[Entry]>>(r);
        }
    }

    /// Start loading where the pipe's entries are: its ring's header, or its one entry (a hint;
    /// nothing changes).
    #[inline(always)]
    pub fn prefetch_where(&self, s: &Store) {
        if self.ring.is_none() && self.len == 1 {
            crate::mem::prefetch(&s.slots[self.head as usize]);
        }
        self.prefetch_ring();
    }

    /// Start loading the front entry into the cache (a hint; nothing changes).
    #[inline(always)]
    pub fn prefetch_front(&self, s: &Store) {
        if !self.is_empty() {
            crate::mem::prefetch(self.entry(s, 0));
        }
    }

    /// The `i`-th entry from the front.
    #[inline(always)]
    pub fn get(&self, s: &Store, i: usize) -> Entry {
        *self.entry(s, i)
    }

    #[inline(always)]
    fn entry<'a>(&'a self, s: &'a Store, i: usize) -> &'a Entry {
        debug_assert!(i < self.len());
        match &self.ring {
            None => &s.slots[self.head as usize],
            Some(r) => &r[Self::ring_index(r, self.head, i)],
        }
    }

    #[inline]
    fn get_mut<'a>(&'a mut self, s: &'a mut Store, i: usize) -> &'a mut Entry {
        match &mut self.ring {
            None => &mut s.slots[self.head as usize],
            Some(r) => &mut r[Self::ring_index(r, self.head, i)],
        }
    }

    #[inline(always)]
    pub fn front(&self, s: &Store) -> Option<Entry> {
        if self.len == 0 {
            None
        } else {
            Some(self.get(s, 0))
        }
    }

    #[inline(always)]
    pub fn back(&self, s: &Store) -> Option<Entry> {
        if self.len == 0 {
            None
        } else {
            Some(self.get(s, self.len() - 1))
        }
    }

    /// The arrival time of the first packet in flight (the first entry that has not left), if
    /// any: when the link needs its event.
    #[inline]
    pub fn first_in_flight(&self, s: &Store) -> Option<Time> {
        (0..self.len()).find_map(|i| match self.get(s, i) {
            Entry::InFlight { arrive, .. } => Some(arrive),
            Entry::Left { .. } => None,
        })
    }

    /// Packets in flight (entries that have not left).
    pub fn in_flight(&self, s: &Store) -> usize {
        (0..self.len()).filter(|&i| matches!(self.get(s, i), Entry::InFlight { .. })).count()
    }

    /// The last entry's packet has left early; its transmission starts at `start`. If that is
    /// after `now`, the entry becomes [`Entry::Left`] and holds its place in the FIFO; if not,
    /// nothing can read the entry any more (the buffer test counts only packets whose
    /// transmission starts after its own time, and the link's event and next arrival drop such a
    /// place unread), so it goes at once.
    #[inline]
    pub fn back_left(&mut self, s: &mut Store, start: Time, now: Time) {
        debug_assert!(self.len > 0);
        if start > now {
            *self.get_mut(s, self.len() - 1) = Entry::Left { start };
            return;
        }
        self.len -= 1;
        match self.ring {
            None => s.free_slots.push(self.head),
            Some(_) if self.len <= 1 => self.unspill(s),
            Some(_) => {}
        }
    }

    /// Append `e`: into a slot if the pipe was empty, else into its ring (a larger one if full,
    /// or a first one).
    #[inline(always)]
    pub fn push_back(&mut self, e: Entry, s: &mut Store) {
        if self.len == 0 {
            self.head = s.take_slot();
            s.slots[self.head as usize] = e;
            self.len = 1;
        } else {
            self.push_to_ring(e, s);
        }
    }

    fn push_to_ring(&mut self, e: Entry, s: &mut Store) {
        match &self.ring {
            Some(r) if self.len() < r.len() => {}
            _ => self.grow(s),
        }
        let r = self.ring.as_mut().expect("a ring");
        let i = Self::ring_index(r, self.head, self.len as usize);
        r[i] = e;
        self.len += 1;
    }

    /// Remove the front entry; a pipe left with one entry moves it to a slot and returns its
    /// ring to the store.
    #[inline(always)]
    pub fn pop_front(&mut self, s: &mut Store) -> Option<Entry> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        match &self.ring {
            None => {
                s.free_slots.push(self.head);
                Some(s.slots[self.head as usize])
            }
            Some(r) => {
                let e = r[self.head as usize];
                self.head = Self::ring_index(r, self.head, 1) as u32;
                if self.len <= 1 {
                    self.unspill(s);
                }
                Some(e)
            }
        }
    }

    /// The number of entries from the front for which `pred` holds (`pred` must hold for a
    /// prefix of the pipe), by binary search.
    pub fn partition_point(&self, s: &Store, mut pred: impl FnMut(&Entry) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(&self.get(s, mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Full (or one entry, in its slot): move the entries, in order, to a ring of the next size
    /// (the old ring, or the slot, goes back to the store).
    #[cold]
    fn grow(&mut self, s: &mut Store) {
        let n = self.len();
        let k = self.ring.as_ref().map_or(0, |r| ring_class(r.len()) + 1);
        let mut ring = s.take_ring(k);
        for (i, e) in ring.iter_mut().enumerate().take(n) {
            *e = self.get(s, i);
        }
        match self.ring.replace(ring) {
            Some(old) => s.put_ring(old),
            None => s.free_slots.push(self.head),
        }
        self.head = 0;
    }

    /// One entry or none left in the ring: the entry to a slot, the ring back to the store.
    #[cold]
    fn unspill(&mut self, s: &mut Store) {
        let ring = self.ring.take().expect("a ring");
        if self.len == 1 {
            let e = ring[self.head as usize];
            self.head = s.take_slot();
            s.slots[self.head as usize] = e;
        } else {
            self.head = 0;
        }
        s.put_ring(ring);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn an_entry_is_a_time_and_a_packet_and_a_pipe_two_words() {
        // the variant lives in a value of `Packet::kind` that no packet has: no extra word
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        assert_eq!(std::mem::size_of::<Pipe>(), 16);
    }

    #[test]
    fn ring_sizes_grow_by_a_half_or_a_third() {
        let caps: Vec<usize> = (0..10).map(ring_capacity).collect();
        assert_eq!(caps, [8, 12, 16, 24, 32, 48, 64, 96, 128, 192]);
        for k in 0..50 {
            assert_eq!(ring_class(ring_capacity(k)), k);
        }
    }

    #[test]
    fn behaves_as_a_fifo_through_bursts_and_returns() {
        // against VecDeque, for three pipes sharing one store, their lengths going up and down
        // across the ring sizes many times, with entries leaving early at the back
        let mut s = Store::default();
        let mut p: [Pipe; 3] = Default::default();
        let mut r: [VecDeque<Entry>; 3] = Default::default();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for t in 0..30_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x >> 40) as usize % 3;
            let grow_bias = if (t / 2000) % 2 == 0 { 3 } else { 6 };
            if x % 10 < grow_bias && !r[k].is_empty() {
                assert_eq!(p[k].pop_front(&mut s), r[k].pop_front());
            } else if x % 17 == 0 && !r[k].is_empty() {
                // the last packet left early, its transmission starting (at its entry's time)
                // before, at or after now
                let start = match r[k].back() {
                    Some(&Entry::InFlight { arrive, .. }) => arrive,
                    Some(&Entry::Left { start }) => start,
                    None => unreachable!(),
                };
                let now = (start + 1).saturating_sub((x >> 20) % 3);
                p[k].back_left(&mut s, start, now);
                r[k].pop_back();
                if start > now {
                    r[k].push_back(Entry::Left { start });
                }
            } else {
                let e = Entry::InFlight { arrive: t, pkt: Packet { seq: t as u32, ..Packet::EMPTY } };
                p[k].push_back(e, &mut s);
                r[k].push_back(e);
            }
            for k in 0..3 {
                assert_eq!(p[k].len(), r[k].len());
                assert_eq!(p[k].front(&s), r[k].front().copied());
                assert_eq!(p[k].back(&s), r[k].back().copied());
                // (entries are in the order of their times)
                let early = |e: &Entry| match *e {
                    Entry::InFlight { arrive, .. } => arrive < t / 2,
                    Entry::Left { start } => start < t / 2,
                };
                assert_eq!(p[k].partition_point(&s, early), r[k].partition_point(early));
                // a pipe of one entry holds it in a slot, without a ring
                assert_eq!(p[k].ring.is_some(), p[k].len() > 1);
            }
        }
        for k in 0..3 {
            while let Some(e) = r[k].pop_front() {
                assert_eq!(p[k].pop_front(&mut s), Some(e));
            }
            assert_eq!(p[k].pop_front(&mut s), None);
        }
        assert!(s.slots() <= 3);
    }

    #[test]
    fn bursts_reuse_the_free_rings_and_slots() {
        let mut s = Store::default();
        let burst = |p: &mut Pipe, s: &mut Store| {
            for t in 0..12 {
                p.push_back(Entry::Left { start: t }, s);
            }
        };
        let (mut a, mut b) = (Pipe::default(), Pipe::default());
        burst(&mut a, &mut s);
        while a.pop_front(&mut s).is_some() {}
        // a grew through a slot, a ring of 8 and one of 12; all are free now
        assert_eq!((s.slots(), s.free_entries()), (1, 1 + 8 + 12));
        burst(&mut b, &mut s);
        // b took the slot, then both rings in turn: nothing new, the ring of 8 and the slot free
        assert_eq!((s.slots(), s.free_entries()), (1, 1 + 8));
        assert_eq!(b.len(), 12);
        // a ring larger than the pool keeps is given back, not kept
        let mut c = Pipe::default();
        for t in 0..(POOLED as u64 + 1) {
            c.push_back(Entry::Left { start: t }, &mut s);
        }
        while c.pop_front(&mut s).is_some() {}
        assert!(s.rings.iter().flatten().all(|r| r.len() <= POOLED));
    }
}
