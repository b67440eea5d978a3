//! The "leaky buffer" of the CHOKe family (aqm.md §1.2): a FIFO from which a uniformly random
//! waiting packet can be drawn and removed before it reaches the head.
//!
//! **What it keeps, and how the parts stay in sync.** Packets are addressed by *absolute*
//! position, `head..tail`, which never wraps (slot = position & mask). Four representations
//! describe the same queue, and every operation updates all that it touches before it returns:
//!
//! * the **ring** (`ring[slot]`): each slot in `head..tail` is a live packet, a doomed one (lazy
//!   removal: flagged, still present until it reaches the head) or empty (a removed packet's
//!   tombstone). It is the truth the others are derived from;
//! * the **tags** (`tags[slot]`, beside the ring): the flow of the live packet there, or
//!   `NOT_LIVE` for a tombstone, a doomed packet or a free slot. Draws read these 8 bytes instead
//!   of a whole entry. Every write of a slot in `head..tail`, or of its doomed flag, writes its
//!   tag; slots outside `head..tail` are never read (a pop leaves its slot's tag as it was);
//! * the **counters**: live packets and bytes, doomed packets and bytes (what `len`, `bytes` and
//!   the buffer test read);
//! * the **rank index** (`ranks`, only where ranks or exact draws with holes are needed: CHOKeD's
//!   regions, rear-region CHOKe, lazy removal): which position holds the k-th member of the draw
//!   population. While the holes (positions in `head..tail` outside the population) are at most
//!   64 it is their sorted list, and the k-th member is `head + k + (holes before it)`, found by a
//!   binary search; past 64 it is a Fenwick tree over slot occupancy, and it is a list again once
//!   the holes are few (`Ranks`). A push adds nothing to a list (the new slot is a member); a
//!   removal inserts its position; a pop drops the holes the head passed. Growing the ring,
//!   compacting it and switching representation rebuild the index from the ring.
//!
//! Unit tests check the agreement: `tags_agree_with_ring` after every step of a random walk
//! against a plain vector with holes, and the hole list against a Fenwick search on random hole
//! patterns.
//!
//! **Operations and costs:**
//!
//! * push at the tail, pop at the head: O(1) (pop skips tombstones and discards doomed packets in
//!   zero time, as the spec's lazy mode requires);
//! * uniform draw over live packets: rejection sampling over the physical slots, O(1) expected
//!   because tombstones are compacted away once they outnumber live packets (immediate mode; the
//!   check runs at each push, never between a draw and a removal, so positions drawn for one
//!   arrival stay valid while its victims are removed);
//!   where physical positions must be kept (lazy mode with doomed packets occupying the buffer) or
//!   where a scheme needs ranks (CHOKeD's regions, rear-region CHOKe), the rank index gives draws
//!   and "k-th live packet" in O(log n) — exact, with no fallback to the head (Linux's
//!   `sch_choke` gives up after three misses and takes the head packet, which biases the draw;
//!   this buffer never does);
//! * removal of a drawn packet: O(1) (plus the rank index's update: an insertion into the short
//!   hole list, or O(log n) in the tree).

use crate::rng::Rng;
use crate::{Pkt, Time};
use serde::{Deserialize, Serialize};

/// How victims leave the buffer (aqm.md §1.2, A4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VictimRemoval {
    /// Removed at once (default).
    #[default]
    Immediate,
    /// Flagged ("drop bit") and discarded without transmission when it reaches the head.
    Lazy,
}

/// Which packets a random draw may pick (A3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DrawPopulation {
    /// Live waiting packets only (default).
    #[default]
    Live,
    /// Every physically present packet, doomed ones included (lazy mode only).
    Physical,
}

/// What a drawn doomed packet means (A3; only with `draw_population = physical`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DoomedDraw {
    /// A doomed packet never matches (default).
    #[default]
    NoMatch,
    /// A doomed packet can match the arrival (it is not dropped a second time).
    CanMatch,
}

/// Victim handling of a CHOKe-family scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferMode {
    pub removal: VictimRemoval,
    /// Lazy mode: doomed packets keep occupying buffer space until they reach the head.
    pub doomed_occupy: bool,
    pub population: DrawPopulation,
    pub doomed_draw: DoomedDraw,
}

impl Default for BufferMode {
    fn default() -> Self {
        BufferMode {
            removal: VictimRemoval::Immediate,
            doomed_occupy: true,
            population: DrawPopulation::Live,
            doomed_draw: DoomedDraw::NoMatch,
        }
    }
}

impl BufferMode {
    /// Packets counted against the buffer limit (A4): physical occupancy in lazy mode with
    /// `doomed_occupy_buffer`, live packets otherwise.
    fn counts_doomed(&self) -> bool {
        self.removal == VictimRemoval::Lazy && self.doomed_occupy
    }
}

#[derive(Clone, Copy)]
struct Entry<P> {
    pkt: P,
    enq: Time,
    doomed: bool,
}

/// A drawn packet: its absolute position and whether it is live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drawn {
    pub pos: u64,
    pub live: bool,
}

/// The live packets' flows by position (see [`LeakyBuffer::flows`]).
#[derive(Clone, Copy)]
pub struct Flows<'a, P> {
    tags: &'a [u64],
    mask: u64,
    _pkt: std::marker::PhantomData<&'a P>,
}

impl<P: Pkt> Flows<'_, P> {
    /// The flow of the packet at `pos` if it is live (`None` for a hole or a doomed packet).
    #[inline(always)]
    pub fn live_flow(&self, pos: u64) -> Option<u32> {
        let t = self.tags[(pos & self.mask) as usize];
        (t != NOT_LIVE).then_some(t as u32)
    }
}

/// The tag of a slot that holds no live packet (a hole, a doomed packet or a free slot): above
/// every flow number, which is a `u32`.
const NOT_LIVE: u64 = u64::MAX;

/// Fenwick (binary indexed) tree of slot occupancy over ring positions.
#[derive(Clone, Debug)]
struct Fenwick {
    t: Vec<i32>,
}

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick { t: vec![0; n + 1] }
    }
    fn add(&mut self, i: usize, d: i32) {
        let mut i = i + 1;
        while i < self.t.len() {
            self.t[i] += d;
            i += i & i.wrapping_neg();
        }
    }
    /// Sum over positions [0, i).
    fn prefix(&self, mut i: usize) -> usize {
        let mut s = 0i64;
        while i > 0 {
            s += self.t[i] as i64;
            i &= i - 1;
        }
        s as usize
    }
    /// Smallest position p with prefix(p + 1) > k (the k-th occupied position, 0-based).
    fn find(&self, mut k: usize) -> usize {
        let n = self.t.len() - 1;
        let mut pos = 0;
        let mut step = n.next_power_of_two();
        while step > 0 {
            let nxt = pos + step;
            if nxt <= n && (self.t[nxt] as usize) <= k {
                pos = nxt;
                k -= self.t[nxt] as usize;
            }
            step >>= 1;
        }
        pos
    }
}

/// The leaky FIFO.
pub struct LeakyBuffer<P> {
    ring: Vec<Option<Entry<P>>>,
    /// Beside `ring`, slot for slot, at the positions `head..tail`: the flow of the live packet
    /// there, [`NOT_LIVE`] for a hole or a doomed packet (slots outside `head..tail` are never
    /// read: a pop leaves its slot's tag as it was, and a push writes it). Draws test and compare
    /// flows here: 8 bytes a slot, where a ring entry is a whole packet, so the slots a draw
    /// reads at random stay in the first-level cache (the ring's entries over a few hundred
    /// packets do not). Every write of a slot in `head..tail` or of its `doomed` flag writes
    /// the tag too.
    tags: Vec<u64>,
    mask: u64,
    head: u64,
    tail: u64,
    live: usize,
    live_bytes: u64,
    doomed: usize,
    doomed_bytes: u64,
    mode: BufferMode,
    /// Rank index of the draw population, when ranks or non-compacted draws are needed.
    ranks: Option<Ranks>,
}

/// Holes listed before the rank index switches to its Fenwick tree.
const HOLES_LISTED: usize = 64;

/// The rank index: which absolute position holds the k-th member of the draw population.
///
/// While the buffer has few holes (non-members between head and tail: tombstones, and doomed
/// packets when only live ones are drawn) it keeps their positions in a sorted list; the k-th
/// member is then `head + k + j`, where `j` holes lie before it, found by a binary search of the
/// list (O(log holes)), and pushes and pops cost nothing. Past [`HOLES_LISTED`] holes it keeps a
/// Fenwick tree over the ring slots instead (O(log capacity) per query, push, pop and removal),
/// and lists the holes again once they are few (the list is rebuilt by a scan of the span when
/// it is short enough, and is empty whenever the holes are gone). Both give the same positions.
#[derive(Clone, Debug)]
struct Ranks {
    /// Whether `holes[start..]` is the sorted list of every hole (else `tree` is current).
    listed: bool,
    holes: Vec<u64>,
    start: usize,
    tree: Fenwick,
}

impl Ranks {
    #[inline]
    fn listed_holes(&self) -> &[u64] {
        &self.holes[self.start..]
    }

    /// Position of the k-th member from `head`, given the sorted holes `hs` in `[head, tail)`.
    ///
    /// With `t = head + k`, the member is `t + j` for the number `j` of holes before it, which
    /// is the first index with `hs[j] > t + j` (`hs[i] - i` never decreases, so the predicate
    /// is monotone): every hole before index `j` lies at or before `t + j - 1`, and `hs[j]` after.
    ///
    /// With a `hint` (the `j` of a recent query, updated here) the search walks from it when the
    /// answer is within a few steps: the same `j`, since the predicate is monotone and the walk
    /// stops exactly where it changes.
    #[inline]
    fn nth_listed(hs: &[u64], head: u64, k: usize, hint: Option<&mut usize>) -> u64 {
        let t = head + k as u64;
        if let Some(hint) = hint {
            let below = |i: usize| hs[i] - i as u64 <= t;
            let mut j = (*hint).min(hs.len());
            for _ in 0..4 {
                if j > 0 && !below(j - 1) {
                    j -= 1;
                } else if j < hs.len() && below(j) {
                    j += 1;
                } else {
                    *hint = j;
                    return t + j as u64;
                }
            }
            let pos = Self::nth_listed(hs, head, k, None);
            *hint = (pos - t) as usize;
            return pos;
        }
        let (mut lo, mut hi) = (0usize, hs.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if hs[mid] - mid as u64 <= t {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        t + lo as u64
    }
}

impl<P: Pkt> LeakyBuffer<P> {
    /// A buffer; `ranks` asks for O(log n) rank queries ([`LeakyBuffer::nth_live`]).
    pub fn new(mode: BufferMode, ranks: bool) -> Self {
        let cap = 64usize;
        let needs_tree = ranks || mode.counts_doomed() || mode.removal == VictimRemoval::Lazy;
        LeakyBuffer {
            ring: vec![None; cap],
            tags: vec![NOT_LIVE; cap],
            mask: cap as u64 - 1,
            head: 0,
            tail: 0,
            live: 0,
            live_bytes: 0,
            doomed: 0,
            doomed_bytes: 0,
            mode,
            ranks: needs_tree.then(|| Ranks { listed: true, holes: Vec::new(), start: 0, tree: Fenwick::new(0) }),
        }
    }

    pub fn mode(&self) -> BufferMode {
        self.mode
    }
    /// Live waiting packets.
    #[inline]
    pub fn len(&self) -> usize {
        self.live
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
    /// Bytes of live waiting packets.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.live_bytes
    }
    /// Doomed packets still physically present (lazy mode).
    pub fn doomed(&self) -> usize {
        self.doomed
    }
    /// Packets counted against the buffer limit (live, plus doomed ones where they occupy space).
    #[inline]
    pub fn occupancy(&self) -> usize {
        if self.mode.counts_doomed() {
            self.live + self.doomed
        } else {
            self.live
        }
    }
    /// Bytes counted against a byte limit, likewise.
    #[inline]
    pub fn occupancy_bytes(&self) -> u64 {
        if self.mode.counts_doomed() {
            self.live_bytes + self.doomed_bytes
        } else {
            self.live_bytes
        }
    }

    #[inline]
    fn slot(&self, pos: u64) -> usize {
        (pos & self.mask) as usize
    }

    // out of line: inlined into `push`, it made every push save and restore six registers
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let old_cap = self.ring.len();
        let cap = old_cap * 2;
        let mut ring: Vec<Option<Entry<P>>> = vec![None; cap];
        let mut tags = vec![NOT_LIVE; cap];
        let mask = cap as u64 - 1;
        for pos in self.head..self.tail {
            ring[(pos & mask) as usize] = self.ring[(pos & self.mask) as usize].take();
            tags[(pos & mask) as usize] = self.tags[(pos & self.mask) as usize];
        }
        self.ring = ring;
        self.tags = tags;
        self.mask = mask;
        self.rebuild_tree();
    }

    /// Rebuild the rank index from the ring: the hole list when the holes are few enough (or the
    /// span short enough to list them), the Fenwick tree otherwise.
    fn rebuild_tree(&mut self) {
        let Some(mut r) = self.ranks.take() else { return };
        let holes = (self.tail - self.head) as usize - self.population();
        if holes <= HOLES_LISTED / 2 || (holes <= HOLES_LISTED && r.listed) {
            r.listed = true;
            r.holes.clear();
            r.start = 0;
            if holes > 0 {
                for pos in self.head..self.tail {
                    if !self.in_population(pos) {
                        r.holes.push(pos);
                    }
                }
            }
            r.tree = Fenwick::new(0);
        } else {
            r.listed = false;
            let mut f = Fenwick::new(self.ring.len());
            for pos in self.head..self.tail {
                if self.in_population(pos) {
                    f.add(self.slot(pos), 1);
                }
            }
            r.tree = f;
        }
        self.ranks = Some(r);
    }

    /// The slot at `pos` has just left the draw population (a removal, or a doomed live packet).
    #[inline]
    fn leave_population(&mut self, pos: u64) {
        let s = self.slot(pos);
        let Some(r) = &mut self.ranks else { return };
        if !r.listed {
            r.tree.add(s, -1);
            return;
        }
        if r.holes.len() - r.start >= HOLES_LISTED {
            // too many holes for a list: the tree from here on (it counts this slot as a hole)
            self.rebuild_tree();
            return;
        }
        if r.start > 0 {
            r.holes.drain(..r.start);
            r.start = 0;
        }
        let i = r.holes.partition_point(|&h| h < pos);
        r.holes.insert(i, pos);
    }

    /// Is the slot at `pos` part of the draw population?
    #[inline]
    fn in_population(&self, pos: u64) -> bool {
        match &self.ring[self.slot(pos)] {
            None => false,
            Some(e) => !e.doomed || self.mode.population == DrawPopulation::Physical,
        }
    }

    #[inline]
    fn population(&self) -> usize {
        match self.mode.population {
            DrawPopulation::Live => self.live,
            DrawPopulation::Physical => self.live + self.doomed,
        }
    }

    /// Append a packet at the tail.
    #[inline]
    pub fn push(&mut self, pkt: P, now: Time) {
        self.maybe_compact();
        if (self.tail - self.head) as usize == self.ring.len() {
            self.grow();
        }
        let s = self.slot(self.tail);
        self.ring[s] = Some(Entry { pkt, enq: now, doomed: false });
        self.tags[s] = pkt.flow() as u64;
        if let Some(r) = &mut self.ranks {
            if !r.listed {
                r.tree.add(s, 1);
            }
        }
        self.tail += 1;
        self.live += 1;
        self.live_bytes += pkt.size() as u64;
    }

    /// Take the head packet for transmission, discarding doomed packets and tombstones before it.
    ///
    /// In line, the common case: the head slot holds a live packet and the rank index, if any,
    /// is a hole list. Every listed hole lies at or after the head (`pop_general` drops those
    /// the head passes), and the head slot is not one, so the list stays as it is: the same
    /// state as `pop_general` leaves.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(P, Time)> {
        let s = self.slot(self.head);
        if self.head < self.tail && self.ranks.as_ref().is_none_or(|r| r.listed) {
            if let Some(e) = &self.ring[s] {
                if !e.doomed {
                    let out = (e.pkt, e.enq);
                    self.ring[s] = None;
                    self.head += 1;
                    self.live -= 1;
                    self.live_bytes -= out.0.size() as u64;
                    return Some(out);
                }
            }
        }
        self.pop_general()
    }

    #[inline(never)]
    fn pop_general(&mut self) -> Option<(P, Time)> {
        let out = self.pop_slots();
        if let Some(r) = &mut self.ranks {
            if r.listed {
                // the holes the head has passed leave the list
                let hs = &r.holes[r.start..];
                if hs.first().is_some_and(|&h| h < self.head) {
                    r.start += hs.partition_point(|&h| h < self.head);
                    if r.start == r.holes.len() {
                        r.holes.clear();
                        r.start = 0;
                    }
                }
            } else {
                let holes = (self.tail - self.head) as usize - self.population();
                if holes == 0 || (holes <= HOLES_LISTED / 2 && self.tail - self.head <= 16 * HOLES_LISTED as u64) {
                    self.rebuild_tree();
                }
            }
        }
        out
    }

    #[inline]
    fn pop_slots(&mut self) -> Option<(P, Time)> {
        while self.head < self.tail {
            let s = self.slot(self.head);
            let e = self.ring[s].take();
            self.head += 1;
            let Some(e) = e else { continue };
            if let Some(r) = &mut self.ranks {
                if !r.listed && (!e.doomed || self.mode.population == DrawPopulation::Physical) {
                    r.tree.add(s, -1);
                }
            }
            if e.doomed {
                self.doomed -= 1;
                self.doomed_bytes -= e.pkt.size() as u64;
                continue;
            }
            self.live -= 1;
            self.live_bytes -= e.pkt.size() as u64;
            return Some((e.pkt, e.enq));
        }
        None
    }

    /// The packet `k` places behind the head's position, if that place holds one (live or
    /// doomed): the one likely to leave `k` places after the next, for a prefetch hint
    /// ([`crate::Qdisc::upcoming`]).
    #[inline]
    pub fn upcoming(&self, k: usize) -> Option<&P> {
        let pos = self.head + k as u64;
        if pos < self.tail {
            self.ring[self.slot(pos)].as_ref().map(|e| &e.pkt)
        } else {
            None
        }
    }

    /// The packet at `pos` (live or doomed).
    #[inline]
    pub fn get(&self, pos: u64) -> &P {
        &self.ring[self.slot(pos)].as_ref().expect("drawn slot is occupied").pkt
    }

    /// Draw uniformly from the draw population (live packets, or all physical ones with
    /// `draw_population = physical`). `None` when it is empty.
    #[inline]
    pub fn draw(&self, rng: &mut Rng) -> Option<Drawn> {
        let n = self.population();
        if n == 0 {
            return None;
        }
        let phys = self.tail - self.head;
        if self.ranks.is_none() || (phys as usize) <= 2 * n {
            // rejection over physical slots: expected fewer than 2 tries
            loop {
                let pos = self.head + rng.below(phys);
                if self.in_population(pos) {
                    return Some(self.drawn(pos));
                }
            }
        }
        let pos = self.nth(rng.below(n as u64) as usize, None);
        Some(self.drawn(pos))
    }

    /// Up to `m` draws from the draw population, exactly as `m` calls of [`LeakyBuffer::draw`]
    /// (the same random numbers in the same order), stopping at the first drawn packet of flow
    /// `flow` that matches (a live one, or a doomed one with `doomed_draw = can_match`: the test
    /// of [`crate::family::matches`]); returns its position. The buffer does not change between
    /// the draws, so the population and the way of drawing are decided once, each draw reads its
    /// slot once, and the random stream's state stays in a local across the draws.
    #[inline]
    pub fn first_match(&self, rng: &mut Rng, m: u64, flow: u32) -> Option<u64> {
        let n = self.population();
        if n == 0 || m == 0 {
            return None;
        }
        let phys = self.tail - self.head;
        let physical = self.mode.population == DrawPopulation::Physical;
        let doomed_match = self.mode.doomed_draw == DoomedDraw::CanMatch;
        let mut local = rng.clone();
        let mut found = None;
        if self.ranks.is_none() || (phys as usize) <= 2 * n {
            'draws: for _ in 0..m {
                // rejection over physical slots, as `draw`
                loop {
                    let pos = self.head + local.below(phys);
                    if let Some(e) = &self.ring[self.slot(pos)] {
                        if !e.doomed || physical {
                            if e.pkt.flow() == flow && (!e.doomed || doomed_match) {
                                found = Some(pos);
                                break 'draws;
                            }
                            break;
                        }
                    }
                }
            }
        } else {
            for _ in 0..m {
                let pos = self.nth(local.below(n as u64) as usize, None);
                let e = self.ring[self.slot(pos)].as_ref().expect("drawn slot is occupied");
                if e.pkt.flow() == flow && (!e.doomed || doomed_match) {
                    found = Some(pos);
                    break;
                }
            }
        }
        *rng = local;
        found
    }

    fn drawn(&self, pos: u64) -> Drawn {
        let live = self.ring[self.slot(pos)].as_ref().is_some_and(|e| !e.doomed);
        Drawn { pos, live }
    }

    /// Absolute position of the k-th member of the draw population from the head (0-based).
    #[inline]
    fn nth(&self, k: usize, hint: Option<&mut usize>) -> u64 {
        // Exact short cuts before the rank index (the same position, found cheaper): without
        // holes between head and tail the k-th member is k slots from the head, and the first
        // member is most often the head itself. CHOKeD asks for such ranks at every arrival.
        if (self.tail - self.head) as usize == self.population() {
            return self.head + k as u64;
        }
        if k == 0 && self.in_population(self.head) {
            return self.head;
        }
        let r = self.ranks.as_ref().expect("rank queries need the rank index");
        if r.listed {
            return Ranks::nth_listed(r.listed_holes(), self.head, k, hint);
        }
        self.nth_in_tree(&r.tree, k)
    }

    /// The k-th member by a search of the Fenwick tree `f` (current for this buffer).
    #[inline(never)]
    fn nth_in_tree(&self, f: &Fenwick, k: usize) -> u64 {
        let cap = self.ring.len();
        let h = self.slot(self.head);
        let before = f.prefix(h); // members stored at ring slots [0, h): the wrapped part
        let upper = self.population() - before; // members at ring slots [h, cap)
        let s = if k < upper { f.find(before + k) } else { f.find(k - upper) };
        if s >= h {
            self.head + (s - h) as u64
        } else {
            self.head + (cap - h + s) as u64
        }
    }

    /// The k-th member by a search of a Fenwick tree built afresh from the ring (the reference
    /// the rank index is tested against), and whether the index is a hole list at the moment.
    #[cfg(test)]
    fn nth_reference(&self, k: usize) -> (u64, bool) {
        let mut f = Fenwick::new(self.ring.len());
        for pos in self.head..self.tail {
            if self.in_population(pos) {
                f.add(self.slot(pos), 1);
            }
        }
        (self.nth_in_tree(&f, k), self.ranks.as_ref().is_some_and(|r| r.listed))
    }

    /// One past the absolute position of the tail packet.
    #[inline]
    pub fn end(&self) -> u64 {
        self.tail
    }

    /// The flow of the packet at `pos` if it is live (`None` for a hole or a doomed packet).
    #[inline]
    pub fn live_flow(&self, pos: u64) -> Option<u32> {
        self.flows().live_flow(pos)
    }

    /// [`LeakyBuffer::live_flow`] over a copy of the ring's address and mask, for loops of draws:
    /// held in locals, they stay in registers where the buffer's fields would be loaded again
    /// after every store the loop makes.
    #[inline]
    pub fn flows(&self) -> Flows<'_, P> {
        Flows { tags: &self.tags, mask: self.mask, _pkt: std::marker::PhantomData }
    }

    /// Absolute position of the k-th live packet from the head (0-based; rank queries must have
    /// been requested at construction, and the draw population must be `live`).
    #[inline(always)]
    pub fn nth_live(&self, k: usize) -> u64 {
        assert!(self.mode.population == DrawPopulation::Live, "live ranks need draw_population = live");
        debug_assert!(k < self.live);
        // the head is the first live packet most often (the same answer as `nth`, without a call;
        // its tag says whether it is live)
        if k == 0 && self.tags[self.slot(self.head)] != NOT_LIVE {
            return self.head;
        }
        self.nth(k, None)
    }

    /// [`LeakyBuffer::nth_live`] for a caller whose queries move little from one to the next
    /// (CHOKeD's region bound, the middle rank, at every arrival): `hint` is the caller's state
    /// between queries (start it at 0); the same position, found in a few steps instead of a
    /// binary search when the hole list is used.
    #[inline(always)]
    pub fn nth_live_near(&self, k: usize, hint: &mut usize) -> u64 {
        assert!(self.mode.population == DrawPopulation::Live, "live ranks need draw_population = live");
        debug_assert!(k < self.live);
        // In line, the two common answers (the same as `nth`'s): no holes, or listed holes where
        // the hint is still the number of holes before the packet, which one comparison on
        // each side confirms (see `Ranks::nth_listed`).
        let t = self.head + k as u64;
        if self.tail - self.head == self.live as u64 {
            return t;
        }
        if let Some(r) = &self.ranks {
            if r.listed {
                let hs = r.listed_holes();
                let j = *hint;
                if j < hs.len() && hs[j] - j as u64 > t && (j == 0 || hs[j - 1] - (j - 1) as u64 <= t) {
                    return t + j as u64;
                }
            }
        }
        self.nth(k, Some(hint))
    }

    /// Remove (immediate mode) or doom (lazy mode) the live packet at `pos`; returns it so the
    /// caller can report it as a victim. Doomed packets are never removed twice.
    #[inline]
    pub fn remove(&mut self, pos: u64) -> Option<P> {
        let s = self.slot(pos);
        let e = self.ring[s].as_mut()?;
        if e.doomed {
            return None;
        }
        let pkt = e.pkt;
        self.live -= 1;
        self.live_bytes -= pkt.size() as u64;
        self.tags[s] = NOT_LIVE;
        match self.mode.removal {
            VictimRemoval::Immediate => {
                self.ring[s] = None;
                self.leave_population(pos);
            }
            VictimRemoval::Lazy => {
                e.doomed = true;
                self.doomed += 1;
                self.doomed_bytes += pkt.size() as u64;
                if self.mode.population == DrawPopulation::Live {
                    self.leave_population(pos);
                }
            }
        }
        Some(pkt)
    }

    /// Squeeze out tombstones once they outnumber live packets (immediate mode), keeping order.
    /// Called only from `push`, so positions handed out by `draw` stay valid until the next push.
    #[inline]
    fn maybe_compact(&mut self) {
        let phys = (self.tail - self.head) as usize;
        if self.mode.removal != VictimRemoval::Immediate || phys < 32 || phys <= 2 * self.live {
            return;
        }
        self.compact();
    }

    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        let mut w = self.head;
        for r in self.head..self.tail {
            let rs = self.slot(r);
            if let Some(e) = self.ring[rs].take() {
                let tag = std::mem::replace(&mut self.tags[rs], NOT_LIVE);
                let ws = self.slot(w);
                self.ring[ws] = Some(e);
                self.tags[ws] = tag;
                w += 1;
            }
        }
        self.tail = w;
        self.rebuild_tree();
    }

    /// Whether the tag at every position in `head..tail` is the flow of a live packet there and
    /// [`NOT_LIVE`] otherwise.
    #[cfg(test)]
    fn tags_agree_with_ring(&self) -> bool {
        self.ring.len() == self.tags.len()
            && (self.head..self.tail).all(|pos| match &self.ring[self.slot(pos)] {
                Some(e) if !e.doomed => self.tags[self.slot(pos)] == e.pkt.flow() as u64,
                _ => self.tags[self.slot(pos)] == NOT_LIVE,
            })
    }

    /// Visit live packets from head to tail.
    pub fn for_each(&self, f: &mut dyn FnMut(&P, Time)) {
        for pos in self.head..self.tail {
            if let Some(e) = &self.ring[self.slot(pos)] {
                if !e.doomed {
                    f(&e.pkt, e.enq);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::P;
    use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest};

    fn modes() -> Vec<(BufferMode, bool)> {
        let lazy = BufferMode { removal: VictimRemoval::Lazy, ..Default::default() };
        let lazy_free = BufferMode { removal: VictimRemoval::Lazy, doomed_occupy: false, ..Default::default() };
        let phys =
            BufferMode { removal: VictimRemoval::Lazy, population: DrawPopulation::Physical, ..Default::default() };
        vec![
            (BufferMode::default(), false),
            (BufferMode::default(), true),
            (lazy, false),
            (lazy_free, true),
            (phys, false),
        ]
    }

    proptest! {
        /// Against a reference model (a Vec of live packets): same content and order after any
        /// sequence of pushes, pops, draws and removals, in every mode; ranks agree.
        #[test]
        fn behaves_like_a_vec_with_holes(ops in proptest::collection::vec((0u8..4, any::<u16>()), 1..600), seed in 0u64..500) {
            for (mode, ranks) in modes() {
                let mut b = LeakyBuffer::<P>::new(mode, ranks);
                let mut model: Vec<u32> = Vec::new();
                let mut rng = Rng::stream(seed, "buf", 0);
                let mut id = 0u32;
                for (op, x) in &ops {
                    match op {
                        0 | 1 => { b.push(P::new(id, 100 + (*x as u32 % 1000)), 0); model.push(id); id += 1; }
                        2 => {
                            let got = b.pop().map(|(p, _)| p.flow);
                            let want = if model.is_empty() { None } else { Some(model.remove(0)) };
                            prop_assert_eq!(got, want);
                        }
                        _ => {
                            if let Some(d) = b.draw(&mut rng) {
                                let f = b.get(d.pos).flow;
                                if d.live {
                                    prop_assert!(model.contains(&f));
                                    let removed = b.remove(d.pos).unwrap().flow;
                                    prop_assert_eq!(removed, f);
                                    model.retain(|m| *m != f);
                                } else {
                                    prop_assert!(mode.population == DrawPopulation::Physical);
                                    prop_assert!(b.remove(d.pos).is_none(), "a doomed packet is never removed twice");
                                }
                            } else {
                                prop_assert!(model.is_empty());
                            }
                        }
                    }
                    prop_assert_eq!(b.len(), model.len());
                    prop_assert!(b.tags_agree_with_ring());
                    let mut seen = Vec::new();
                    b.for_each(&mut |p, _| seen.push(p.flow));
                    prop_assert_eq!(&seen, &model);
                    // the prefetch hint: without holes, the packet k places behind the head is
                    // the k-th to leave; with them, a packet the buffer holds, live or doomed
                    let solid = b.tail - b.head == model.len() as u64;
                    for k in 0..model.len() + 2 {
                        match b.upcoming(k) {
                            Some(p) if solid => prop_assert_eq!(Some(&p.flow), model.get(k)),
                            Some(p) => prop_assert!(p.flow < id),
                            None => prop_assert!(!solid || k >= model.len()),
                        }
                    }
                    if ranks && mode.population == DrawPopulation::Live {
                        for (k, m) in model.iter().enumerate() {
                            prop_assert_eq!(b.get(b.nth_live(k)).flow, *m);
                        }
                    }
                    if mode.removal == VictimRemoval::Immediate { prop_assert_eq!(b.occupancy(), model.len()); }
                }
            }
        }
    }

    proptest! {
        /// The rank index (a sorted hole list while holes are few, the Fenwick tree past
        /// HOLES_LISTED of them) gives the same position as a Fenwick search built afresh, for
        /// random hole patterns made by pushes, pops and removals at random ranks, across the
        /// switches between list and tree and around the ring.
        #[test]
        fn listed_ranks_equal_the_fenwick_search(
            ops in proptest::collection::vec((0u8..10, any::<u32>()), 1..1200),
            fill in 0usize..260,
        ) {
            let lazy = BufferMode { removal: VictimRemoval::Lazy, ..Default::default() };
            let lazy_free = BufferMode { removal: VictimRemoval::Lazy, doomed_occupy: false, ..Default::default() };
            for mode in [BufferMode::default(), lazy, lazy_free] {
                let mut b = LeakyBuffer::<P>::new(mode, true);
                let mut hint = 0;
                for i in 0..fill {
                    b.push(P::new(i as u32, 1000), 0);
                }
                for (op, x) in &ops {
                    match op {
                        0..=2 => b.push(P::new(*x, 1000), 0),
                        3..=4 => { b.pop(); }
                        _ => {
                            if !b.is_empty() {
                                let pos = b.nth_reference(*x as usize % b.len()).0;
                                prop_assert!(b.remove(pos).is_some());
                            }
                        }
                    }
                    let n = b.len();
                    if n > 0 {
                        for k in [0, n / 2, n - 1, *x as usize % n, (*x >> 12) as usize % n] {
                            prop_assert_eq!(b.nth_live(k), b.nth_reference(k).0, "k = {} of {}", k, n);
                        }
                        // a hint kept across queries (near ones, then any)
                        prop_assert_eq!(b.nth_live_near(n / 2, &mut hint), b.nth_reference(n / 2).0);
                        let k = *x as usize % n;
                        prop_assert_eq!(b.nth_live_near(k, &mut hint), b.nth_reference(k).0);
                    }
                }
                for k in 0..b.len() {
                    prop_assert_eq!(b.nth_live(k), b.nth_reference(k).0);
                }
            }
        }
    }

    proptest! {
        /// `first_match` is `m` calls of `draw`, each followed by `family::matches`, stopping at
        /// the first match (CHOKeW's draws): the same answer and the same random stream after,
        /// in every mode (holes, doomed packets, physical draws, doomed packets that can match),
        /// by rejection and by rank queries.
        #[test]
        fn first_match_is_draw_then_matches(
            ops in proptest::collection::vec((0u8..6, any::<u32>()), 1..400),
            seed in 0u64..1000,
        ) {
            let mut all = modes();
            all.push((
                BufferMode {
                    removal: VictimRemoval::Lazy,
                    population: DrawPopulation::Physical,
                    doomed_draw: DoomedDraw::CanMatch,
                    ..Default::default()
                },
                true,
            ));
            for (mode, ranks) in all {
                let mut b = LeakyBuffer::<P>::new(mode, ranks);
                let mut rng = Rng::stream(seed, "first_match", 0);
                for (op, x) in &ops {
                    match op {
                        0..=2 => b.push(P::new(*x % 7, 1000), 0),
                        3 => { b.pop(); }
                        _ => {
                            if let Some(d) = b.draw(&mut rng) {
                                b.remove(d.pos);
                            }
                        }
                    }
                    let (m, flow) = ((*x >> 8) as u64 % 12, (*x >> 16) % 7);
                    let mut want_rng = rng.clone();
                    let want = (|| {
                        for _ in 0..m {
                            let d = b.draw(&mut want_rng)?;
                            if crate::family::matches(&b, d.pos, d.live, flow) {
                                return Some(d.pos);
                            }
                        }
                        None
                    })();
                    let got = b.first_match(&mut rng, m, flow);
                    prop_assert_eq!(got, want);
                    prop_assert_eq!(rng.next_u64(), want_rng.next_u64());
                }
            }
        }
    }

    #[test]
    fn rank_index_lists_few_holes_and_uses_the_tree_past_them() {
        for mode in [BufferMode::default(), BufferMode { removal: VictimRemoval::Lazy, ..Default::default() }] {
            let mut b = LeakyBuffer::<P>::new(mode, true);
            for i in 0..300 {
                b.push(P::new(i, 1000), 0);
            }
            let check = |b: &LeakyBuffer<P>| (0..b.len()).all(|k| b.nth_live(k) == b.nth_reference(k).0);
            let mut rng = Rng::stream(4, "holes", 0);
            let mut states = Vec::new();
            for _ in 0..(HOLES_LISTED + 6) {
                let pos = b.nth_live(rng.below(b.len() as u64) as usize);
                b.remove(pos).unwrap();
                assert!(check(&b));
                states.push(b.nth_reference(0).1);
            }
            // a list up to HOLES_LISTED holes, the tree after
            assert!(states[..HOLES_LISTED].iter().all(|l| *l), "{mode:?}");
            assert!(states[HOLES_LISTED..].iter().all(|l| !*l), "{mode:?}");
            // departures take holes away: back to a list at half as many
            while !b.nth_reference(0).1 {
                b.pop().unwrap();
                assert!(check(&b));
            }
            let holes = (b.tail - b.head) as usize - b.len();
            assert!(holes <= HOLES_LISTED / 2 && holes > 0, "{holes}");
            while b.pop().is_some() {
                assert!(check(&b));
            }
        }
    }

    #[test]
    fn draws_are_uniform_over_live_packets_with_holes() {
        // 60 packets, every third removed: the 40 live ones must be drawn equally often.
        for (mode, ranks) in modes() {
            let mut b = LeakyBuffer::<P>::new(mode, ranks);
            for i in 0..60 {
                b.push(P::new(i, 1000), 0);
            }
            let mut rng = Rng::stream(1, "t", 0);
            for i in (0..60u64).step_by(3) {
                b.remove(i).unwrap();
            }
            if mode.population == DrawPopulation::Physical {
                continue; // population includes the doomed ones by design
            }
            let n = 200_000;
            let mut counts = [0u32; 60];
            for _ in 0..n {
                let d = b.draw(&mut rng).unwrap();
                assert!(d.live);
                counts[b.get(d.pos).flow as usize] += 1;
            }
            let expect = n as f64 / 40.0;
            let chi2: f64 = (0..60).filter(|i| i % 3 != 0).map(|i| (counts[i] as f64 - expect).powi(2) / expect).sum();
            // 39 degrees of freedom: the 99.9th percentile is about 72
            assert!(chi2 < 72.0, "chi2 {chi2} in mode {mode:?}");
            assert!((0..60).step_by(3).all(|i| counts[i] == 0));
        }
    }

    #[test]
    fn positions_stay_valid_while_one_arrivals_victims_are_removed() {
        // many tombstones, then several removals at positions drawn before the first removal:
        // every removal must hit exactly the packet that was drawn (no compaction in between)
        let mut b = LeakyBuffer::<P>::new(BufferMode::default(), false);
        for i in 0..34 {
            b.push(P::new(i, 1000), 0);
        }
        for i in 0..17u64 {
            b.remove(2 * i).unwrap(); // 17 tombstones, 17 live
        }
        let targets = [19u64, 21, 29, 33];
        let want: Vec<u32> = targets.iter().map(|p| b.get(*p).flow).collect();
        for (p, w) in targets.iter().zip(&want) {
            assert_eq!(b.remove(*p).map(|x| x.flow), Some(*w));
        }
        // the next push compacts; order is kept
        b.push(P::new(99, 1000), 0);
        let mut seen = Vec::new();
        b.for_each(&mut |p, _| seen.push(p.flow));
        let expect: Vec<u32> = (0..34).filter(|i| i % 2 == 1 && ![19, 21, 29, 33].contains(i)).chain([99]).collect();
        assert_eq!(seen, expect);
    }

    #[test]
    fn lazy_doomed_packets_occupy_until_they_reach_the_head() {
        let mode = BufferMode { removal: VictimRemoval::Lazy, ..Default::default() };
        let mut b = LeakyBuffer::<P>::new(mode, false);
        for i in 0..4 {
            b.push(P::new(i, 1000), 0);
        }
        b.remove(1).unwrap();
        assert_eq!((b.len(), b.occupancy(), b.doomed()), (3, 4, 1));
        assert_eq!(b.pop().unwrap().0.flow, 0);
        // the doomed packet 1 is discarded in zero time on the way to packet 2
        assert_eq!(b.pop().unwrap().0.flow, 2);
        assert_eq!((b.len(), b.occupancy(), b.doomed()), (1, 1, 0));
    }

    #[test]
    fn ring_grows_and_wraps_keeping_order_and_ranks() {
        let mut b = LeakyBuffer::<P>::new(BufferMode::default(), true);
        let mut next = 0;
        let mut first = 0;
        for round in 0..50 {
            for _ in 0..(7 + round % 13) {
                b.push(P::new(next, 1000), 0);
                next += 1;
            }
            for _ in 0..5 {
                assert_eq!(b.pop().unwrap().0.flow, first);
                first += 1;
            }
        }
        for k in 0..b.len() {
            assert_eq!(b.get(b.nth_live(k)).flow, first + k as u32);
        }
    }
}
