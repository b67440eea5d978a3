//! A link's pipe: the FIFO of the packets whose transmission is decided ([`Entry`]: a packet and
//! its arrival time at the far end, or the place of one that has already left), with room for
//! [`INLINE`] entry inside the link itself.
//!
//! At core-router scale most links are a host pair's access links, and most of the time each holds
//! no packet or one (a flow's window at its fair share is about one bandwidth-delay product of its
//! own, a few packets, spread over a round trip). Keeping that entry in the `Link` puts a packet's
//! arrival and its link's state on the same cache line (a link is 64 bytes), instead of one more
//! memory access to a separately allocated ring buffer per hop; a second inline entry made every
//! link 32 bytes larger for the few moments it was used (issue 28: 128 bytes a host pair). A burst (an initial window, a recovery) moves the entries to a ring on the
//! heap; when the pipe is back to `INLINE` entries they move back inside and the ring goes back to
//! the network's [`Rings`], where the next burst on any link takes it. So nothing is allocated per
//! packet, and the rings in memory are those of the most pipes spilled *at once* (a few percent of
//! the access links when flows start at different times), not one per link that ever held a burst
//! (at a million flows that was about 900 MiB). The order of entries, and therefore every result,
//! is that of a plain FIFO.

use crate::packet::Packet;
use aqm::Time;

/// One pipe entry, in the FIFO order of the link's transmitter.
///
/// An entry is a packet on its way ([`Entry::InFlight`]) or the place of one that has already
/// left the link ([`Entry::Left`]): a packet the engine handed on at once when it entered the
/// link (early delivery to its host, or passing through into its next link, `sim::shortcut`) and
/// whose transmission may not have started yet. Such a place counts for the buffer test of a
/// simple link while it waits (`Link::simple_arrive`), and is removed once its transmission has
/// started; it is never forwarded and never counted in flight. (32 bytes, as the time and packet
/// alone: the variant is told by a value of `Packet::kind` no packet has.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// `pkt` reaches the far end at `arrive`, where the link's event forwards it.
    InFlight { arrive: Time, pkt: Packet },
    /// A packet that left early, whose transmission starts at `start` (it keeps its place in the
    /// FIFO until then).
    Left { start: Time },
}

/// Entries held inside the link (a power of two).
pub const INLINE: usize = 1;

/// First heap ring size when a pipe outgrows its inline room.
const FIRST_SPILL: usize = 8;

const EMPTY: Entry = Entry::Left { start: 0 };

pub struct Pipe {
    head: u32,
    len: u32,
    inline: [Entry; INLINE],
    /// While the entries are on the heap: their ring (of power-of-two size). A thin pointer to
    /// the ring's own box, so that a pipe is 80 bytes, not 96; only a spilled pipe follows it.
    spill: Option<Ring>,
}

/// Heap rings not in use, by size (`free[k]` holds rings of `FIRST_SPILL << k` entries), shared by
/// every pipe of a network.
#[derive(Default)]
pub struct Rings {
    free: Vec<Vec<Ring>>,
}

/// A heap ring.
#[allow(clippy::redundant_allocation)]
type Ring = Box<Box<[Entry]>>;

impl Rings {
    fn class(size: usize) -> usize {
        (size / FIRST_SPILL).trailing_zeros() as usize
    }

    /// A ring of `size` entries (a power of two, at least `FIRST_SPILL`): a free one, or a new one.
    fn take(&mut self, size: usize) -> Ring {
        match self.free.get_mut(Self::class(size)).and_then(|f| f.pop()) {
            Some(r) => r,
            None => Box::new(vec![EMPTY; size].into_boxed_slice()),
        }
    }

    fn put(&mut self, ring: Ring) {
        let k = Self::class(ring.len());
        if self.free.len() <= k {
            self.free.resize_with(k + 1, Vec::new);
        }
        self.free[k].push(ring);
    }

    /// Entries held by free rings (for tests and the memory account).
    pub fn free_entries(&self) -> usize {
        self.free.iter().flatten().map(|r| r.len()).sum()
    }
}

impl Default for Pipe {
    fn default() -> Self {
        Pipe { head: 0, len: 0, inline: [EMPTY; INLINE], spill: None }
    }
}

impl Pipe {
    #[inline(always)]
    fn buf(&self) -> &[Entry] {
        match &self.spill {
            Some(r) => r,
            None => &self.inline,
        }
    }

    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        (self.head as usize + i) & (self.buf().len() - 1)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `i`-th entry from the front.
    #[inline]
    pub fn get(&self, i: usize) -> Entry {
        debug_assert!(i < self.len());
        self.buf()[self.slot(i)]
    }

    #[inline]
    pub fn front(&self) -> Option<&Entry> {
        if self.len == 0 {
            None
        } else {
            Some(&self.buf()[self.head as usize])
        }
    }

    #[inline]
    pub fn back(&self) -> Option<&Entry> {
        if self.len == 0 {
            None
        } else {
            Some(&self.buf()[self.slot(self.len() - 1)])
        }
    }

    /// The arrival time of the first packet in flight (the first entry that has not left), if
    /// any: when the link needs its event.
    #[inline]
    pub fn first_in_flight(&self) -> Option<Time> {
        match self.front() {
            None => None,
            Some(&Entry::InFlight { arrive, .. }) => Some(arrive),
            Some(Entry::Left { .. }) => (1..self.len()).find_map(|i| match self.get(i) {
                Entry::InFlight { arrive, .. } => Some(arrive),
                Entry::Left { .. } => None,
            }),
        }
    }

    /// Packets in flight (entries that have not left).
    pub fn in_flight(&self) -> usize {
        (0..self.len()).filter(|&i| matches!(self.get(i), Entry::InFlight { .. })).count()
    }

    /// The last entry's packet has left early ([`Entry::Left`]); its transmission starts at
    /// `start`.
    #[inline]
    pub fn mark_back_left(&mut self, start: Time) {
        debug_assert!(self.len > 0);
        let i = self.slot(self.len() - 1);
        let e = match &mut self.spill {
            Some(r) => &mut r[i],
            None => &mut self.inline[i],
        };
        *e = Entry::Left { start };
    }

    /// Append `e`; a full pipe takes a larger ring from `rings`.
    #[inline]
    pub fn push_back(&mut self, e: Entry, rings: &mut Rings) {
        if self.len() == self.buf().len() {
            self.grow(rings);
        }
        let i = self.slot(self.len());
        match &mut self.spill {
            Some(r) => r[i] = e,
            None => self.inline[i] = e,
        }
        self.len += 1;
    }

    /// Remove the front entry; a pipe back to its inline room returns its ring to `rings`.
    #[inline]
    pub fn pop_front(&mut self, rings: &mut Rings) -> Option<Entry> {
        if self.len == 0 {
            return None;
        }
        let h = self.head as usize;
        let e = self.buf()[h];
        self.head = ((h + 1) & (self.buf().len() - 1)) as u32;
        self.len -= 1;
        if self.spill.is_some() && self.len() <= INLINE {
            self.unspill(rings);
        }
        Some(e)
    }

    /// The number of entries from the front for which `pred` holds (`pred` must hold for a
    /// prefix of the pipe), by binary search.
    pub fn partition_point(&self, mut pred: impl FnMut(&Entry) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(&self.get(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Full: move the entries, in order, to a ring twice the size (the old ring, if any, goes
    /// back to `rings`).
    #[cold]
    fn grow(&mut self, rings: &mut Rings) {
        let n = self.len();
        let mut ring = rings.take((2 * n).max(FIRST_SPILL));
        for (i, e) in ring.iter_mut().enumerate().take(n) {
            *e = self.get(i);
        }
        if let Some(old) = self.spill.replace(ring) {
            rings.put(old);
        }
        self.head = 0;
    }

    /// Back to the inline room; the ring goes back to `rings`.
    #[cold]
    fn unspill(&mut self, rings: &mut Rings) {
        for i in 0..self.len() {
            self.inline[i] = self.get(i);
        }
        self.head = 0;
        if let Some(r) = self.spill.take() {
            rings.put(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn an_entry_is_a_time_and_a_packet() {
        // the variant lives in a value of `Packet::kind` that no packet has: no extra word
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn behaves_as_a_fifo_through_spills_and_returns() {
        // against VecDeque, with the length going up and down across the inline room many times
        let mut p = Pipe::default();
        let mut rings = Rings::default();
        let mut r: VecDeque<Entry> = VecDeque::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for t in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let grow_bias = if (t / 2000) % 2 == 0 { 3 } else { 6 };
            if x % 10 < grow_bias && !r.is_empty() {
                assert_eq!(p.pop_front(&mut rings), r.pop_front());
            } else {
                let e = Entry::InFlight { arrive: t, pkt: Packet { seq: t as u32, ..Packet::EMPTY } };
                p.push_back(e, &mut rings);
                r.push_back(e);
            }
            assert_eq!(p.len(), r.len());
            assert_eq!(p.front(), r.front());
            assert_eq!(p.back(), r.back());
            let early = |e: &Entry| matches!(*e, Entry::InFlight { arrive, .. } if arrive < t / 2);
            assert_eq!(p.partition_point(early), r.partition_point(early));
        }
        while let Some(e) = r.pop_front() {
            assert_eq!(p.pop_front(&mut rings), Some(e));
        }
        assert_eq!(p.pop_front(&mut rings), None);
        // every ring is back, and a second pipe reuses them instead of allocating
        let free = rings.free_entries();
        assert!(free >= FIRST_SPILL);
        let mut q = Pipe::default();
        for t in 0..FIRST_SPILL as u64 {
            q.push_back(Entry::Left { start: t }, &mut rings);
        }
        assert_eq!(rings.free_entries(), free - FIRST_SPILL);
    }
}
