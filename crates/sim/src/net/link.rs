//! A point-to-point link: an output queue, a transmitter and a propagation pipe.
//!
//! Speed comes from keeping at most **one pending event per link**: packets whose transmission
//! has started sit in `pipe`, a FIFO of `(arrival time at the far end, packet)`, and only its head
//! is scheduled. Two kinds of link share that design:
//!
//! A link is split in two: what changes as packets pass ([`Link`]: the transmitter's `free_at` and
//! where its pipe's entries are, 32 bytes) and what it is ([`LinkClass`]: rate, delay, buffer, the queue of an AQM
//! link), which the access links of a group share.
//!
//! * **AQM links** ([`LinkClass::aqm`] present: every measured link, and any link with a non-DropTail
//!   queue, a byte limit or random loss). The transmitter is advanced *lazily*: whenever anything touches the link (an
//!   arrival, its pipe event, a measurement sample), `Sim::advance` first starts, in time order,
//!   every transmission that began since the last visit, calling the AQM's `dequeue` with the exact
//!   start time. Only arrivals, departures and samples read or change a link's state, and each of
//!   them advances the link first, so this is exact, not an approximation: it gives the same result
//!   as one event per transmission end, with a fraction of the events. Invariant: while the queue
//!   holds a packet, the packet in service is in the pipe, so the link has an event pending.
//! * **Simple links** (DropTail in packets, no loss: the per-flow access links and, by default, the
//!   reverse path). For a FIFO that only drops on arrival, a packet's transmission start is known
//!   when it arrives (`max(now, free_at)`), so waiting and in-flight packets share the one `pipe`
//!   buffer and no queue object is needed. The number of packets still waiting at time `now` (for
//!   the buffer test) is the number of pipe entries whose transmission starts after `now`.

use super::pipe::{Entry, Pipe, Store};
use crate::packet::Packet;
use aqm::rng::Rng;
use aqm::{Queue, Time, NS_PER_SEC};

/// The queue of an AQM link.
pub struct AqmPart {
    pub queue: Queue<Packet>,
    /// The AQM was told that the link went idle at `free_at`.
    pub idle_reported: bool,
    /// Random loss applied to arriving packets before the queue (0 = none).
    pub loss_rate: f64,
    pub loss_rng: Option<Rng>,
    /// Index of the link's monitor ([`NO_MONITOR`] if the link is not measured; a measured
    /// link always has a queue object).
    pub monitor: u32,
}

/// What a link is, apart from the packets on it: its rate, propagation delay and buffer, and, for
/// an AQM link, its queue. Links that are alike share one ([`super::Network::classes`]): a
/// million host pairs' access links have a handful of classes, so a [`Link`] keeps only what
/// changes as packets pass (half a cache line).
pub struct LinkClass {
    pub delay: Time,
    pub rate_bps: u64,
    /// Nanoseconds per byte when the rate makes that a whole number (the usual rates: 800 at
    /// 10 Mb/s), so that a transmission time is a multiplication, exactly the same as the
    /// division it replaces; 0 otherwise.
    ns_per_byte: u32,
    /// Simple links: buffer limit in waiting packets.
    pub limit: u32,
    /// `None` for a simple link; an AQM link has a class of its own.
    pub aqm: Option<Box<AqmPart>>,
}

impl LinkClass {
    /// A DropTail link holding at most `limit` waiting packets.
    pub fn simple(rate_bps: f64, delay: Time, limit: u32) -> Self {
        let rate_bps = rate_bps.round().max(1.0) as u64;
        let per_byte = 8 * NS_PER_SEC / rate_bps;
        let exact = (8 * NS_PER_SEC) % rate_bps == 0 && per_byte <= u32::MAX as u64;
        LinkClass { rate_bps, ns_per_byte: if exact { per_byte as u32 } else { 0 }, delay, limit, aqm: None }
    }

    /// An AQM link.
    pub fn with_aqm(rate_bps: f64, delay: Time, queue: Queue<Packet>, loss_rate: f64, loss_rng: Option<Rng>) -> Self {
        let mut c = LinkClass::simple(rate_bps, delay, 0);
        c.aqm = Some(Box::new(AqmPart { queue, idle_reported: true, loss_rate, loss_rng, monitor: NO_MONITOR }));
        c
    }

    /// Index of the link's monitor ([`NO_MONITOR`] if it is not measured).
    #[inline]
    pub fn monitor(&self) -> u32 {
        self.aqm.as_ref().map_or(NO_MONITOR, |a| a.monitor)
    }

    /// Serialisation time of `size` bytes, rounded up to whole nanoseconds.
    #[inline]
    pub fn tx_time(&self, size: u16) -> Time {
        if self.ns_per_byte != 0 {
            size as u64 * self.ns_per_byte as u64
        } else {
            (size as u64 * 8 * NS_PER_SEC).div_ceil(self.rate_bps)
        }
    }

    /// When the transmission of a pipe entry starts (an entry left early holds it: `left_early`).
    #[inline]
    fn start_of(&self, e: &Entry) -> Time {
        match *e {
            Entry::InFlight { arrive, pkt } => arrive - self.delay - self.tx_time(pkt.size),
            Entry::Left { start } => start,
        }
    }

    /// The key under which simple links share a class.
    pub(super) fn key(&self) -> Option<(u64, Time, u32)> {
        self.aqm.is_none().then_some((self.rate_bps, self.delay, self.limit))
    }
}

/// A link's changing state: its transmitter and its pipe (32 bytes, half a cache line; the pipe's
/// entries are in the network's [`Store`]), and which [`LinkClass`] it is.
pub struct Link {
    /// When the transmitter becomes free (end of the current or last transmission).
    pub free_at: Time,
    /// Packets in transmission or propagation (and, on simple links, waiting):
    /// (arrival at the far end, packet), in a block of the network's [`Store`].
    pub pipe: Pipe,
    /// Where every packet leaving this link goes next: a link index, [`NEXT_HOST`] (its host),
    /// or [`NEXT_SHARED`] (it depends on the packet's path: look it up).
    pub next: u32,
    /// The class (`Network::classes`), and in the top bit [`PENDING`]: an event for the pipe
    /// head is in the event set.
    meta: u32,
}

/// `Link::meta`'s flag: the link's event is pending.
const PENDING: u32 = 1 << 31;

/// The most classes a network can have.
pub const MAX_CLASSES: usize = PENDING as usize;

/// `Link::monitor()` (`AqmPart::monitor`) of a link that is not measured.
pub const NO_MONITOR: u32 = u32::MAX;
/// `Link::next`: the packet's next hop depends on its path.
pub const NEXT_SHARED: u32 = u32::MAX;
/// `Link::next`: every path through the link ends there (the packet reaches its host).
pub const NEXT_HOST: u32 = u32::MAX - 1;

impl Link {
    /// An idle link of class `class`.
    pub fn new(class: u32) -> Self {
        debug_assert!((class as usize) < MAX_CLASSES);
        Link { free_at: 0, pipe: Pipe::default(), next: NEXT_SHARED, meta: class }
    }

    /// Its class's index in `Network::classes`.
    #[inline(always)]
    pub fn class(&self) -> usize {
        (self.meta & !PENDING) as usize
    }

    /// An event for the pipe head is in the event set.
    #[inline(always)]
    pub fn pending(&self) -> bool {
        self.meta & PENDING != 0
    }

    #[inline(always)]
    pub fn set_pending(&mut self, on: bool) {
        self.meta = if on { self.meta | PENDING } else { self.meta & !PENDING };
    }

    /// Simple link of class `c`: offer `pkt` at `now`. Returns when its transmission starts and
    /// when it reaches the far end, or `None` (and keeps nothing) if the buffer is full.
    #[inline]
    pub fn simple_arrive(&mut self, c: &LinkClass, pkt: Packet, now: Time, s: &mut Store) -> Option<(Time, Time)> {
        // packets that left early and whose transmission has started have no more place in the
        // FIFO (only waiting packets count against the buffer, and `free_at` is kept apart); only
        // a path's last link, or a shared link before one, can hold any (`sim::shortcut`)
        if self.next == NEXT_HOST || self.next == NEXT_SHARED {
            while let Some(Entry::Left { start }) = self.pipe.front(s) {
                if start > now {
                    break;
                }
                self.pipe.pop_front(s);
            }
        }
        // Entries whose transmission starts after `now` are waiting; they are at the back. None
        // is if the transmitter is free by `now` (every entry's transmission starts before
        // `free_at`): then the back entry, often not in the cache, is not read.
        let last = if self.free_at > now { self.pipe.back(s) } else { None };
        let waiting = match last {
            Some(last) if c.start_of(&last) > now => {
                let first_waiting = self.pipe.partition_point(s, |e| c.start_of(e) <= now);
                self.pipe.len() - first_waiting
            }
            _ => 0,
        };
        if waiting as u64 + 1 > c.limit as u64 {
            return None;
        }
        let start = self.free_at.max(now);
        let tx = c.tx_time(pkt.size);
        self.free_at = start.saturating_add(tx);
        let arrive = self.free_at.saturating_add(c.delay);
        self.pipe.push_back(Entry::InFlight { arrive, pkt }, s);
        // (as `start_of` reads it back: equal to `start` unless the clock saturated)
        Some((arrive - c.delay - tx, arrive))
    }

    /// The last packet put into the pipe, whose transmission starts at `start` (as
    /// `simple_arrive` returned it), has left early (handed to its host or passed on into the
    /// next link, `sim::shortcut`) at `now`: its entry becomes [`Entry::Left`], which only holds
    /// its place in the FIFO until `start` (`simple_arrive` reads `start` without recomputing
    /// it), or goes at once if its transmission has started ([`Pipe::back_left`]).
    #[inline]
    pub fn left_early(&mut self, start: Time, now: Time, s: &mut Store) {
        self.pipe.back_left(s, start, now);
    }

    /// Packets held by the link of class `c` (waiting or in flight), not counting those that
    /// left early.
    pub fn in_flight(&self, c: &LinkClass, s: &Store) -> usize {
        self.pipe.in_flight(s) + c.aqm.as_ref().map_or(0, |a| a.queue.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PktKind;
    use proptest::prelude::*;

    proptest! {
        /// The multiplication by whole nanoseconds per byte gives exactly the rounded-up division.
        #[test]
        fn transmission_time_is_the_rounded_up_division(
            rate in prop_oneof![1u64..100_000, (1u64..100_000).prop_map(|k| k * 1000), Just(8 * NS_PER_SEC), Just(100_000_000_000)],
            size in 1u16..,
        ) {
            let l = LinkClass::simple(rate as f64, 0, 1);
            prop_assert_eq!(l.tx_time(size), (size as u64 * 8 * NS_PER_SEC).div_ceil(rate));
        }
    }

    proptest! {
        /// Whether a packet fits is decided by the entries still waiting to be transmitted,
        /// whichever way they are found: the same answers as counting them all, at any load, with
        /// or without early departures (`simple_arrive` reads no entry while the transmitter is
        /// free, and the back entry at most while it is busy).
        #[test]
        fn admission_counts_the_waiting_entries(
            steps in proptest::collection::vec((0u64..3_000_000, 0u8..4), 1..60),
            limit in 1u32..5,
        ) {
            let r = &mut Store::default();
            let c = LinkClass::simple(8e6, 2_000_000, limit); // 1 ms a packet, 2 ms away
            let mut l = Link::new(0);
            l.next = NEXT_HOST;
            let mut now = 0;
            for (i, (gap, early)) in steps.into_iter().enumerate() {
                now += gap;
                // the plain count: entries whose transmission starts after `now`, less those
                // whose transmission started (and that left early) as the link drops them
                let waiting = (0..l.pipe.len()).filter(|&k| c.start_of(&l.pipe.get(r, k)) > now).count();
                let got = l.simple_arrive(&c, pkt(i as u32), now, r);
                prop_assert_eq!(got.is_some(), waiting < limit as usize);
                if let (Some((start, _)), 0) = (got, early) {
                    l.left_early(start, now, r);
                }
            }
        }
    }

    #[test]
    fn a_link_is_half_a_cache_line() {
        // what a link keeps per packet-carrying instance; the rest is its class's and the store's
        assert_eq!(std::mem::size_of::<Link>(), 32);
    }

    fn arrival(e: Entry) -> Time {
        match e {
            Entry::InFlight { arrive, .. } => arrive,
            Entry::Left { .. } => panic!("an entry that left early has no arrival"),
        }
    }

    fn pkt(seq: u32) -> Packet {
        Packet { sent: 0, flow: 0, seq, size: 1000, kind: PktKind::Data, hop: 0, prio: 1, flags: 0, aux: 0 }
    }

    #[test]
    fn simple_link_serialises_and_drops_when_full() {
        // 8 Mb/s: 1 ms per 1000-byte packet; 5 ms propagation; 2 waiting packets at most
        let r = &mut Store::default();
        let c = LinkClass::simple(8e6, 5_000_000, 2);
        let mut l = Link::new(0);
        assert!(l.simple_arrive(&c, pkt(0), 0, r).is_some()); // in service at once
        assert!(l.simple_arrive(&c, pkt(1), 0, r).is_some()); // waiting 1
        assert!(l.simple_arrive(&c, pkt(2), 0, r).is_some()); // waiting 2
        assert!(l.simple_arrive(&c, pkt(3), 0, r).is_none()); // full
        let arrivals: Vec<Time> = (0..l.pipe.len()).map(|i| arrival(l.pipe.get(r, i))).collect();
        assert_eq!(arrivals, vec![6_000_000, 7_000_000, 8_000_000]);
        // at 1 ms packet 1 has started: one waiting, so one more fits
        assert!(l.simple_arrive(&c, pkt(4), 1_000_000, r).is_some());
        assert!(l.simple_arrive(&c, pkt(5), 1_000_000, r).is_none());
        // an idle link starts at the arrival time
        let c = LinkClass::simple(8e6, 0, 2);
        let mut l = Link::new(0);
        assert!(l.simple_arrive(&c, pkt(0), 10_000_000, r).is_some());
        assert_eq!(arrival(l.pipe.get(r, 0)), 11_000_000);
    }

    #[test]
    fn entries_that_left_early_hold_their_place_until_their_transmission_starts() {
        // 8 Mb/s: 1 ms per packet; 5 ms propagation; 1 waiting packet at most
        let r = &mut Store::default();
        let c = LinkClass::simple(8e6, 5_000_000, 1);
        let mut l = Link::new(0);
        for seq in 0..2 {
            let (start, _) = l.simple_arrive(&c, pkt(seq), 0, r).expect("room");
            l.left_early(start, 0, r); // handed to the host early
        }
        // packet 0's transmission started when it arrived: its place went at once
        // at 0.5 ms packet 0 is on the wire (its entry goes); packet 1 waits until 1 ms and still
        // fills the buffer; no live packet is in the pipe
        assert!(l.simple_arrive(&c, pkt(2), 500_000, r).is_none(), "a delivered packet still waiting counts");
        assert_eq!((l.pipe.len(), l.in_flight(&c, r)), (1, 0));
        // at 1 ms packet 1 starts: its entry goes, and the next packet fits behind it
        assert!(l.simple_arrive(&c, pkt(3), 1_000_000, r).is_some());
        assert_eq!((l.pipe.len(), l.in_flight(&c, r)), (1, 1));
        assert_eq!(arrival(l.pipe.get(r, 0)), 8_000_000, "queued behind packet 1's transmission");
        assert_eq!(l.pipe.first_in_flight(r), Some(8_000_000));
    }
}
