//! TCP SACK: selective acknowledgements (RFC 2018) with conservative, pipe-based loss recovery
//! (RFC 6675). Congestion control is Reno's ([`super::reno::Reno`]); what changes is which segments
//! are retransmitted and when.
//!
//! **Receiver** ([`SackBlocks`]): every ACK carries up to three blocks of segments received above
//! the cumulative ACK. The first block contains the segment that triggered the ACK; the others
//! repeat the most recently reported blocks (RFC 2018 §4), so a block is reported in at least three
//! ACKs. Sequence numbers count segments; a block `(l, r)` covers `l..r`.
//!
//! **Sender** ([`Scoreboard`]): records which outstanding segments have been SACKed. A segment is
//! *lost* when at least `DupThresh` segments above it are SACKed (`IsLost`, RFC 6675 §4 — with
//! whole segments, "more than (DupThresh − 1) · SMSS bytes"). Recovery starts on the `DupThresh`-th
//! duplicate ACK or when the first unacknowledged segment is lost, with `cwnd = ssthresh =
//! FlightSize / 2`. During recovery, on every ACK the sender computes `pipe` (segments it believes
//! are in the network: every un-SACKed segment not deemed lost, plus every segment retransmitted in
//! this recovery) and sends while `cwnd − pipe ≥ 1`, choosing each segment with `NextSeg`: (1) the
//! lowest lost segment not yet retransmitted, else (2) new data, else (3) the lowest un-SACKed
//! segment not yet retransmitted below the highest SACKed one. (The optional rescue retransmission,
//! rule 4, is not implemented.) Recovery ends when the cumulative ACK passes the recovery point (the
//! highest segment sent when it began). After a timeout the scoreboard is cleared (RFC 2018 §8: the
//! receiver may have discarded SACKed data) and the sender goes back to the first unacknowledged
//! segment, as in RFC 6675 §5.1's conservative choice.
//!
//! **On the wire**: an ACK packet is a 24-byte `Copy` value with no room for blocks, so the
//! receiver writes each ACK's blocks into a ring indexed by an ACK serial number and the packet
//! carries the serial (`Packet::aux`). The sender reads the blocks when the ACK arrives — exactly
//! the blocks that ACK would carry; a lost ACK's blocks are never read. The ring starts with 8
//! entries and doubles whenever an entry not yet read would be overwritten, so it holds every ACK
//! in flight (memory follows the window, not `max_window`); an entry that was nevertheless
//! overwritten (only possible at its 65 536-entry bound) is detected by its serial and read as an
//! ACK without blocks.

/// A SACK block: segments `l..r` were received (`r` exclusive).
pub type Block = (u32, u32);

/// At most this many blocks per ACK (RFC 2018 with the timestamp option; ns-2's default).
pub const MAX_BLOCKS: usize = 3;

/// The blocks carried by one ACK.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckBlocks {
    pub n: u8,
    pub b: [Block; MAX_BLOCKS],
}

impl AckBlocks {
    pub fn as_slice(&self) -> &[Block] {
        &self.b[..self.n as usize]
    }
}

/// Receiver side: the blocks to report, most recent first, and the ring the ACKs' blocks travel in.
#[derive(Debug, Clone)]
pub struct SackBlocks {
    recent: AckBlocks,
    /// (serial, read by the sender, blocks); grows when an unread entry would be overwritten.
    ring: Vec<(u32, bool, AckBlocks)>,
    serial: u32,
    max_len: usize,
}

impl SackBlocks {
    /// The ring starts small and doubles whenever an entry the sender has not read yet would be
    /// overwritten (i.e. more ACKs are in flight than it holds), up to a bound well above the
    /// `max_window` ACKs that can be in flight. Memory follows the connection's actual window.
    pub fn new(max_window: u32) -> Self {
        let max_len = ((max_window as usize) * 2 + 16).next_power_of_two().min(1 << 16);
        SackBlocks {
            recent: AckBlocks::default(),
            ring: vec![(u32::MAX, true, AckBlocks::default()); 8],
            serial: 0,
            max_len,
        }
    }

    /// A segment arrived that is now inside the received block `blk` above `rcv_nxt` (or was
    /// in order, `blk = None`): update the reported blocks (RFC 2018 §4).
    pub fn update(&mut self, blk: Option<Block>, rcv_nxt: u32) {
        let mut next = AckBlocks::default();
        if let Some(b) = blk {
            next.b[0] = b;
            next.n = 1;
        }
        for &(l, r) in self.recent.as_slice() {
            if next.n as usize == MAX_BLOCKS {
                break;
            }
            if r <= rcv_nxt {
                continue; // now covered by the cumulative ACK
            }
            if let Some(b) = blk {
                if l < b.1 && b.0 < r {
                    continue; // merged into the new first block
                }
            }
            next.b[next.n as usize] = (l.max(rcv_nxt), r);
            next.n += 1;
        }
        self.recent = next;
    }

    fn grow(&mut self) {
        let n = self.ring.len() * 2;
        let mut ring = vec![(u32::MAX, true, AckBlocks::default()); n];
        for e in &self.ring {
            if e.0 != u32::MAX {
                ring[e.0 as usize & (n - 1)] = *e;
            }
        }
        self.ring = ring;
    }

    /// Record the blocks of the ACK about to be sent; returns its serial (low 16 bits go on the
    /// wire).
    pub fn stamp(&mut self) -> u16 {
        let s = self.serial;
        self.serial = self.serial.wrapping_add(1);
        while !self.ring[s as usize & (self.ring.len() - 1)].1 && self.ring.len() < self.max_len {
            self.grow();
        }
        let i = s as usize & (self.ring.len() - 1);
        self.ring[i] = (s, false, self.recent);
        s as u16
    }

    /// The blocks of the ACK with serial `aux` (marking them read), if its entry is still there.
    pub fn read(&mut self, aux: u16) -> Option<AckBlocks> {
        let i = aux as usize & (self.ring.len() - 1);
        let e = &mut self.ring[i];
        if e.0 != u32::MAX && e.0 as u16 == aux {
            e.1 = true;
            Some(e.2)
        } else {
            None
        }
    }

    /// Entries in the ring (for tests and memory accounting).
    pub fn capacity(&self) -> usize {
        self.ring.len()
    }
}

/// Sender side: which outstanding segments the receiver has SACKed, plus RFC 6675's `HighRxt`.
#[derive(Debug, Clone)]
pub struct Scoreboard {
    bits: Vec<u64>,
    /// The bitmap doubles (from one word) up to this many words, enough for `max_window`.
    max_words: usize,
    /// Segments `[una, high_sacked)` may hold SACKed ones; all above are un-SACKed.
    una: u32,
    high_sacked: u32,
    sacked: u32,
    /// One past the highest segment retransmitted in this recovery (RFC 6675 HighRxt + 1).
    pub high_rxt: u32,
}

impl Scoreboard {
    pub fn new(max_window: u32) -> Self {
        let max_words = ((max_window as usize + 64) / 64 + 1).next_power_of_two();
        Scoreboard { bits: vec![0; 1], max_words, una: 0, high_sacked: 0, sacked: 0, high_rxt: 0 }
    }

    /// Grow the ring (doubling, moving the SACKed segments) until it covers `[una, upto)`.
    fn ensure(&mut self, upto: u32) {
        while upto.saturating_sub(self.una) >= self.cap() && self.bits.len() < self.max_words {
            let held: Vec<u32> = (self.una..self.high_sacked).filter(|&t| self.is_sacked(t)).collect();
            self.bits = vec![0; self.bits.len() * 2];
            for t in held {
                self.set(t, true);
            }
        }
    }

    #[inline]
    fn cap(&self) -> u32 {
        (self.bits.len() * 64) as u32
    }
    #[inline]
    pub fn is_sacked(&self, s: u32) -> bool {
        if s < self.una || s >= self.high_sacked {
            return false;
        }
        let i = (s % self.cap()) as usize;
        self.bits[i / 64] >> (i % 64) & 1 == 1
    }
    #[inline]
    fn set(&mut self, s: u32, v: bool) {
        let i = (s % self.cap()) as usize;
        if v {
            self.bits[i / 64] |= 1 << (i % 64);
        } else {
            self.bits[i / 64] &= !(1 << (i % 64));
        }
    }

    /// Segments SACKed above the cumulative ACK.
    pub fn sacked(&self) -> u32 {
        self.sacked
    }
    pub fn high_sacked(&self) -> u32 {
        self.high_sacked
    }

    /// The cumulative ACK moved to `una`: forget what it covers.
    pub fn advance(&mut self, una: u32) {
        if una <= self.una {
            return;
        }
        let top = una.min(self.high_sacked);
        for s in self.una..top {
            if self.is_sacked(s) {
                self.set(s, false);
                self.sacked -= 1;
            }
        }
        self.una = una;
        self.high_sacked = self.high_sacked.max(una);
        self.high_rxt = self.high_rxt.max(una);
    }

    /// Mark the blocks of one ACK (clipped to `[una, snd_max)` and to the board's capacity).
    /// Returns true if any segment was newly SACKed.
    pub fn mark(&mut self, blocks: &[Block], snd_max: u32) -> bool {
        if !blocks.is_empty() {
            self.ensure(snd_max);
        }
        let mut new = false;
        let limit = snd_max.min(self.una.saturating_add(self.cap() - 1));
        for &(l, r) in blocks {
            let (l, r) = (l.max(self.una), r.min(limit));
            for s in l..r {
                if !self.is_sacked(s) {
                    if s >= self.high_sacked {
                        // clear stale bits between the old and the new top
                        for t in self.high_sacked..s {
                            self.set(t, false);
                        }
                        self.high_sacked = s + 1;
                    }
                    self.set(s, true);
                    self.sacked += 1;
                    new = true;
                }
            }
        }
        new
    }

    /// After a timeout: forget every SACK (RFC 2018 §8).
    pub fn clear(&mut self) {
        for s in self.una..self.high_sacked {
            self.set(s, false);
        }
        self.sacked = 0;
        self.high_sacked = self.una;
        self.high_rxt = self.una;
    }

    /// RFC 6675 IsLost: at least `dupthresh` SACKed segments above `s`.
    pub fn is_lost(&self, s: u32, dupthresh: u32) -> bool {
        if self.sacked < dupthresh || s + 1 >= self.high_sacked {
            return false;
        }
        let mut n = 0;
        for t in (s + 1..self.high_sacked).rev() {
            if self.is_sacked(t) {
                n += 1;
                if n >= dupthresh {
                    return true;
                }
            }
        }
        false
    }

    /// One pass over the outstanding segments `[una, snd_max)`: RFC 6675 `pipe`, and the first
    /// segment `NextSeg` rules (1) and (3) would retransmit.
    pub fn scan(&self, snd_max: u32, dupthresh: u32) -> Scan {
        let mut pipe = 0u32;
        let mut lost_rxt = None; // rule 1: lowest lost, un-SACKed, not yet retransmitted
        let mut hole_rxt = None; // rule 3: lowest un-SACKed below high_sacked, not retransmitted
        let mut above = 0u32; // SACKed segments above the current one
        let mut s = snd_max;
        while s > self.una {
            s -= 1;
            if self.is_sacked(s) {
                above += 1;
                continue;
            }
            let lost = above >= dupthresh;
            if !lost {
                pipe += 1;
            }
            if s < self.high_rxt {
                pipe += 1; // retransmitted in this recovery
            } else if s < self.high_sacked {
                if lost {
                    lost_rxt = Some(s);
                }
                hole_rxt = Some(s);
            }
        }
        Scan { pipe, lost_rxt, hole_rxt }
    }
}

/// The result of [`Scoreboard::scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scan {
    pub pipe: u32,
    pub lost_rxt: Option<u32>,
    pub hole_rxt: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_reports_the_newest_block_first_and_repeats_older_ones() {
        let mut r = SackBlocks::new(100);
        r.update(Some((5, 6)), 3);
        r.update(Some((8, 9)), 3);
        r.update(Some((8, 10)), 3);
        assert_eq!(r.recent.as_slice(), &[(8, 10), (5, 6)]);
        r.update(Some((12, 13)), 3);
        r.update(Some((15, 16)), 3);
        assert_eq!(r.recent.as_slice(), &[(15, 16), (12, 13), (8, 10)], "at most three, newest first");
        // the hole below 5 fills: blocks at or below rcv_nxt disappear
        r.update(None, 11);
        assert_eq!(r.recent.as_slice(), &[(15, 16), (12, 13)]);
        let s = r.stamp();
        assert_eq!(r.read(s).unwrap().as_slice(), &[(15, 16), (12, 13)]);
    }

    #[test]
    fn ring_grows_with_acks_in_flight_and_stays_small_otherwise() {
        let mut r = SackBlocks::new(1000);
        // ACKs read as soon as they are sent: the ring never grows
        for _ in 0..10_000 {
            let s = r.stamp();
            assert!(r.read(s).is_some());
        }
        assert_eq!(r.capacity(), 8);
        // 100 ACKs in flight: it grows to hold them all, and each is read back intact
        r.update(Some((5, 7)), 3);
        let serials: Vec<u16> = (0..100).map(|_| r.stamp()).collect();
        assert_eq!(r.capacity(), 128);
        for s in serials {
            assert_eq!(r.read(s).unwrap().as_slice(), &[(5, 7)]);
        }
    }

    #[test]
    fn ring_detects_overwritten_entries_at_its_bound() {
        let mut r = SackBlocks::new(1); // bound: 32 entries
        let first = r.stamp();
        for _ in 0..64 {
            r.stamp();
        }
        assert_eq!(r.capacity(), 32);
        assert!(r.read(first).is_none());
    }

    #[test]
    fn scoreboard_is_lost_pipe_and_nextseg() {
        // 10 outstanding (0..10); 0, 2 and 4 lost; the rest SACKed
        let mut sb = Scoreboard::new(64);
        assert!(sb.mark(&[(1, 2), (3, 4), (5, 10)], 10));
        assert_eq!(sb.sacked(), 7);
        assert!(sb.is_lost(0, 3) && sb.is_lost(2, 3) && sb.is_lost(4, 3));
        let sc = sb.scan(10, 3);
        // all three holes have >= 3 SACKed above: none counts in pipe
        assert_eq!(sc.pipe, 0);
        assert_eq!(sc.lost_rxt, Some(0));
        sb.high_rxt = 1; // 0 retransmitted
        let sc = sb.scan(10, 3);
        assert_eq!(sc.pipe, 1);
        assert_eq!(sc.lost_rxt, Some(2));
        sb.advance(2);
        assert_eq!(sb.sacked(), 6);
        assert!(!sb.is_sacked(1));
        sb.clear();
        assert_eq!(sb.sacked(), 0);
        assert!(!sb.is_lost(4, 3));
    }

    #[test]
    fn a_hole_with_fewer_than_dupthresh_sacked_above_is_not_lost() {
        let mut sb = Scoreboard::new(64);
        sb.mark(&[(1, 3)], 10);
        assert!(!sb.is_lost(0, 3));
        let sc = sb.scan(10, 3);
        // 0 not lost -> in pipe; 3..10 un-SACKed above high_sacked -> in pipe
        assert_eq!(sc.pipe, 8);
        assert_eq!(sc.lost_rxt, None);
        assert_eq!(sc.hole_rxt, Some(0));
    }
}
