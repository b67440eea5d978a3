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
//! are, for each size, those of the most pipes in a burst of that size at once. Rings are carved
//! from the store's blocks (on huge pages once large) and named by one word, their block, line and
//! size, so that where an entry is follows from the link alone (issue 28's twelfth round: before,
//! a ring was a heap allocation behind a thin pointer, whose header was one more dependent miss).
//! Nothing is allocated per packet: the store grows only while more entries are held at once than
//! ever before. The order of entries, and therefore every result, is that of a plain FIFO.
//!
//! The cost is one more memory access per packet on a link (the link, then its slot or ring).

use crate::packet::Packet;
use aqm::Time;
use std::num::NonZeroU64;

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

/// The largest ring kept for reuse once free, in entries (128 KiB): smaller rings are carved from
/// the store's blocks and go back to its pool; larger ones (a shared link's pipe growing through
/// its sizes: rare, and each of them megabytes) have a block of their own, freed with them.
const POOLED: usize = 4096;

/// Two entries: the unit in which rings are carved, aligned so that no entry straddles two cache
/// lines.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Line([Entry; 2]);

const EMPTY_LINE: Line = Line([EMPTY; 2]);

/// The first block of the rings' arena, in lines (64 KiB); each next block is twice as large, up
/// to [`BLOCK_LINES`], so that a small run holds little and a large one's rings are on huge pages.
const FIRST_BLOCK_LINES: usize = 1 << 10;
/// The largest block of the rings' arena, in lines (16 MiB).
const BLOCK_LINES: usize = 1 << 18;

/// Where a ring is: a block of the store, its first line there, and its size class, in one word
/// (so that a pipe is 16 bytes). An entry's address follows from the link and the store's short
/// table of blocks alone (a ring on the heap behind a thin pointer needed the slice's header
/// loaded first: a dependent cache miss per packet at core-router scale).
///
/// The word's layout, from the lowest bit: the size class in [`CLASS_BITS`], the first line in
/// [`LINE_BITS`] from [`LINE_SHIFT`], the block in [`BLOCK_BITS`] from [`BLOCK_SHIFT`], and the top
/// bit set ([`PRESENT`]) so that the word is never zero (an `Option<Ring>` is one word too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ring(NonZeroU64);

const CLASS_BITS: u32 = 6;
const LINE_BITS: u32 = 26;
const BLOCK_BITS: u32 = 31;
const LINE_SHIFT: u32 = CLASS_BITS;
const BLOCK_SHIFT: u32 = LINE_SHIFT + LINE_BITS;
const PRESENT: u64 = 1 << (BLOCK_SHIFT + BLOCK_BITS);

/// The `bits` bits of `word` from `shift`.
#[inline(always)]
const fn field(word: u64, shift: u32, bits: u32) -> usize {
    ((word >> shift) & ((1 << bits) - 1)) as usize
}

impl Ring {
    fn new(block: usize, line: usize, class: usize) -> Ring {
        assert!(
            block < 1 << BLOCK_BITS && line < 1 << LINE_BITS && class < 1 << CLASS_BITS,
            "a ring's place fits in 64 bits"
        );
        let word = PRESENT | (block as u64) << BLOCK_SHIFT | (line as u64) << LINE_SHIFT | class as u64;
        Ring(NonZeroU64::new(word).expect("the top bit is set"))
    }

    #[inline(always)]
    fn class(self) -> usize {
        field(self.0.get(), 0, CLASS_BITS)
    }

    /// Entries it holds.
    #[inline(always)]
    fn len(self) -> usize {
        ring_capacity(self.class())
    }

    #[inline(always)]
    fn block(self) -> usize {
        field(self.0.get(), BLOCK_SHIFT, BLOCK_BITS)
    }

    #[inline(always)]
    fn line(self) -> usize {
        field(self.0.get(), LINE_SHIFT, LINE_BITS)
    }
}

/// The entries of every pipe of a network: the slots of pipes holding one entry, and the rings of
/// pipes holding more, carved from blocks (on huge pages when large: rings are read at random, one
/// touch per packet, so at core-router scale small pages made most of those touches miss the TLB
/// too), with the rings not in use by size.
#[derive(Default)]
pub struct Store {
    slots: Vec<Entry>,
    free_slots: Vec<u32>,
    /// `rings[k]`: rings of [`ring_capacity`]`(k)` entries not in use.
    rings: Vec<Vec<Ring>>,
    /// The rings' memory: blocks from which rings are carved (the last one being carved), and
    /// the blocks of rings larger than [`POOLED`] (empty once such a ring is freed).
    blocks: Vec<Vec<Line>>,
    /// The block rings are carved from now (`blocks.len()` if none yet).
    carving: usize,
    /// Blocks of freed large rings, for the next large ring.
    free_blocks: Vec<usize>,
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

    /// A ring of size class `k`: a free one, or a new one (carved from the current block, or a
    /// block of its own if it is larger than [`POOLED`]).
    fn take_ring(&mut self, k: usize) -> Ring {
        if let Some(r) = self.rings.get_mut(k).and_then(|f| f.pop()) {
            return r;
        }
        let lines = ring_capacity(k) / 2;
        if ring_capacity(k) > POOLED {
            let v = crate::mem::huge_filled(lines, EMPTY_LINE);
            let b = match self.free_blocks.pop() {
                Some(b) => {
                    self.blocks[b] = v;
                    b
                }
                None => {
                    self.blocks.push(v);
                    self.blocks.len() - 1
                }
            };
            return Ring::new(b, 0, k);
        }
        let room = |v: &Vec<Line>| v.capacity() - v.len();
        if self.blocks.get(self.carving).is_none_or(|v| room(v) < lines) {
            let last = self.blocks.get(self.carving).map_or(0, Vec::capacity);
            let size = (2 * last).clamp(FIRST_BLOCK_LINES, BLOCK_LINES);
            self.blocks.push(crate::mem::huge_vec(size));
            self.carving = self.blocks.len() - 1;
        }
        let block = &mut self.blocks[self.carving];
        let line = block.len();
        block.resize(line + lines, EMPTY_LINE);
        Ring::new(self.carving, line, k)
    }

    /// A ring no longer in use: kept for the next burst if carved, its block freed if not.
    fn put_ring(&mut self, ring: Ring) {
        if ring.len() > POOLED {
            self.blocks[ring.block()] = Vec::new();
            self.free_blocks.push(ring.block());
            return;
        }
        let k = ring.class();
        if self.rings.len() <= k {
            self.rings.resize_with(k + 1, Vec::new);
        }
        self.rings[k].push(ring);
    }

    /// Ring `r`'s `i`-th entry (from its start, not its pipe's head).
    #[inline(always)]
    fn at(&self, r: Ring, i: usize) -> &Entry {
        &self.blocks[r.block()][r.line() + i / 2].0[i % 2]
    }

    #[inline(always)]
    fn at_mut(&mut self, r: Ring, i: usize) -> &mut Entry {
        &mut self.blocks[r.block()][r.line() + i / 2].0[i % 2]
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
    fn ring_index(r: Ring, head: u32, i: usize) -> usize {
        let s = head as usize + i;
        if s >= r.len() {
            s - r.len()
        } else {
            s
        }
    }

    /// Start loading where the pipe's next entry goes and its last entry is (what an arrival at
    /// its link reads and writes): its ring's place after the back, and the back entry's, or its
    /// one entry's slot (a hint; nothing changes).
    #[inline(always)]
    pub fn prefetch_where(&self, s: &Store) {
        match self.ring {
            None if self.len == 1 => crate::mem::prefetch(&s.slots[self.head as usize]),
            None => {}
            Some(r) => {
                let back = Self::ring_index(r, self.head, self.len() - 1);
                crate::mem::prefetch(s.at(r, back));
                // (a line holds two entries: the next place is on the next line after an odd one)
                if back % 2 == 1 && back + 1 < r.len() {
                    crate::mem::prefetch(s.at(r, back + 1));
                }
            }
        }
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
        match self.ring {
            None => &s.slots[self.head as usize],
            Some(r) => s.at(r, Self::ring_index(r, self.head, i)),
        }
    }

    #[inline]
    fn get_mut<'a>(&'a mut self, s: &'a mut Store, i: usize) -> &'a mut Entry {
        match self.ring {
            None => &mut s.slots[self.head as usize],
            Some(r) => s.at_mut(r, Self::ring_index(r, self.head, i)),
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
        match self.ring {
            Some(r) if self.len() < r.len() => {}
            _ => self.grow(s),
        }
        let r = self.ring.expect("a ring");
        *s.at_mut(r, Self::ring_index(r, self.head, self.len as usize)) = e;
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
        match self.ring {
            None => {
                s.free_slots.push(self.head);
                Some(s.slots[self.head as usize])
            }
            Some(r) => {
                let e = *s.at(r, self.head as usize);
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
        let k = self.ring.map_or(0, |r| r.class() + 1);
        let ring = s.take_ring(k);
        for i in 0..n {
            *s.at_mut(ring, i) = self.get(s, i);
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
            let e = *s.at(ring, self.head as usize);
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
        // a ring's place and size class round-trip through its one word
        for (block, line, class) in [(0, 0, 0), (5, 1000, 7), ((1 << BLOCK_BITS) - 1, (1 << LINE_BITS) - 1, 63)] {
            let r = Ring::new(block, line, class);
            assert_eq!((r.block(), r.line(), r.class(), r.len()), (block, line, class, ring_capacity(class)));
        }
    }

    #[test]
    fn rings_are_carved_from_blocks_and_large_ones_have_their_own() {
        let mut s = Store::default();
        let a = s.take_ring(0);
        let b = s.take_ring(3);
        // carved one after the other from the first block, cache-line aligned
        assert_eq!((a.block(), a.line(), b.block(), b.line()), (0, 0, 0, 4));
        assert_eq!(s.blocks[0].as_ptr() as usize % 64, 0);
        // a ring larger than the pool keeps has a block of its own, freed with it and reused
        let k = (0..).find(|&k| ring_capacity(k) > POOLED).unwrap();
        let big = s.take_ring(k);
        assert_eq!((big.line(), s.blocks[big.block()].len() * 2), (0, big.len()));
        s.put_ring(big);
        assert_eq!(s.blocks[big.block()].capacity(), 0);
        assert_eq!(s.take_ring(k).block(), big.block());
        // enough small rings fill the first block and carve a second, twice as large
        let n = FIRST_BLOCK_LINES / 4;
        let rings: Vec<Ring> = (0..n).map(|_| s.take_ring(0)).collect();
        let last = rings.last().unwrap();
        assert_ne!(last.block(), 0);
        assert_eq!(s.blocks[last.block()].capacity(), 2 * FIRST_BLOCK_LINES);
        // every entry written through one ring is read back through it alone
        for (j, r) in rings.iter().enumerate() {
            for i in 0..r.len() {
                *s.at_mut(*r, i) = Entry::Left { start: (j * 100 + i) as u64 };
            }
        }
        for (j, r) in rings.iter().enumerate() {
            for i in 0..r.len() {
                assert_eq!(*s.at(*r, i), Entry::Left { start: (j * 100 + i) as u64 });
            }
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
