//! The record of every outstanding segment that RACK-TLP recovery keeps ([`super::recovery::rack`]),
//! as Linux keeps one per segment in its retransmission queue (`struct tcp_skb_cb`): when it was
//! last sent, whether the receiver has SACKed it, whether it is deemed lost and whether a
//! retransmission of it is in flight, and the delivery-rate fields of the moment it was sent
//! (Linux `tcp_rate.c`; the same fields as the sender core's rate log for the other recoveries).
//!
//! The records live in a ring over `[snd_una, snd_max)` that doubles when the window outgrows it
//! (a rare copy, never an allocation per packet); the counts of SACKed, lost and retransmitted
//! segments are kept as the flags change, so that "in flight" (Linux's
//! `tcp_packets_in_flight`: outstanding − SACKed − lost + retransmitted) costs nothing to read.

use aqm::Time;

/// The receiver has SACKed the segment.
pub const SACKED: u8 = 1;
/// Deemed lost (by RACK, or at a timeout) and not SACKed since.
pub const LOST: u8 = 2;
/// A retransmission of it is in flight (Linux `TCPCB_SACKED_RETRANS`).
pub const RETRANS: u8 = 4;
/// It has been retransmitted at least once (Linux `TCPCB_EVER_RETRANS`).
pub const EVER_RETRANS: u8 = 8;
/// Sent while the application had nothing more to send (its rate sample is application-limited).
pub const APP_LIMITED: u8 = 16;
/// Its delivery was already counted in a rate sample (Linux clears `delivered_mstamp`).
pub const RATED: u8 = 32;

/// One outstanding segment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seg {
    /// When it was last (re)transmitted.
    pub xmit: Time,
    /// The connection's delivered count, the time of its last delivery and the first send time of
    /// the flight, when it was last sent (Linux `tx.delivered`, `tx.delivered_mstamp`,
    /// `tx.first_tx_mstamp`).
    pub delivered: u64,
    pub delivered_time: Time,
    pub first_sent: Time,
    pub flags: u8,
}

impl Seg {
    #[inline]
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// The records of the outstanding segments and the counts of their states.
#[derive(Debug, Clone)]
pub struct Board {
    ring: Vec<Seg>,
    /// The outstanding range `[una, nxt)`.
    pub una: u32,
    pub nxt: u32,
    /// Segments SACKed, deemed lost, and with a retransmission in flight.
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    /// One past the highest SACKed segment (`una` when none is).
    pub high_sacked: u32,
}

impl Board {
    pub fn new() -> Self {
        Board { ring: vec![Seg::default(); 16], una: 0, nxt: 0, sacked: 0, lost: 0, retrans: 0, high_sacked: 0 }
    }

    #[inline]
    fn slot(&self, seq: u32) -> usize {
        seq as usize & (self.ring.len() - 1)
    }

    /// Segments outstanding.
    #[inline]
    pub fn packets_out(&self) -> u32 {
        self.nxt - self.una
    }

    /// Segments in flight (Linux `tcp_packets_in_flight`).
    #[inline]
    pub fn in_flight(&self) -> u32 {
        (self.nxt - self.una) - (self.sacked + self.lost) + self.retrans
    }

    #[inline]
    pub fn get(&self, seq: u32) -> &Seg {
        debug_assert!(seq >= self.una && seq < self.nxt, "{seq} outside [{}, {})", self.una, self.nxt);
        &self.ring[self.slot(seq)]
    }

    #[inline]
    pub fn get_mut(&mut self, seq: u32) -> &mut Seg {
        let i = self.slot(seq);
        &mut self.ring[i]
    }

    /// A new segment `seq` (= `nxt`) was sent with record `s`.
    pub fn push(&mut self, s: Seg) {
        if (self.nxt - self.una) as usize >= self.ring.len() {
            let n = self.ring.len() * 2;
            let mut ring = vec![Seg::default(); n];
            for q in self.una..self.nxt {
                ring[q as usize & (n - 1)] = self.ring[self.slot(q)];
            }
            self.ring = ring;
        }
        let i = self.slot(self.nxt);
        self.ring[i] = s;
        self.nxt += 1;
        if self.high_sacked < self.una {
            self.high_sacked = self.una;
        }
    }

    /// Segment `seq` is SACKed (not already): the counts follow. Returns its record as it was.
    pub fn sack(&mut self, seq: u32) -> Seg {
        let s = *self.get(seq);
        self.clear_loss_and_retrans(s.flags);
        self.get_mut(seq).flags = (s.flags & !(LOST | RETRANS)) | SACKED;
        self.sacked += 1;
        self.high_sacked = self.high_sacked.max(seq + 1);
        s
    }

    /// Segment `una` is cumulatively acknowledged: it leaves the board. Returns its record.
    pub fn ack_head(&mut self) -> Seg {
        let s = *self.get(self.una);
        if s.has(SACKED) {
            self.sacked -= 1;
        }
        self.clear_loss_and_retrans(s.flags);
        self.una += 1;
        self.high_sacked = self.high_sacked.max(self.una);
        s
    }

    fn clear_loss_and_retrans(&mut self, flags: u8) {
        if flags & LOST != 0 {
            self.lost -= 1;
        }
        if flags & RETRANS != 0 {
            self.retrans -= 1;
        }
    }

    /// Mark `seq` lost (Linux `tcp_mark_skb_lost`): a SACKed segment is not; a lost segment whose
    /// retransmission is in flight has lost that retransmission. Returns whether it was newly
    /// marked (or its retransmission newly found lost).
    pub fn mark_lost(&mut self, seq: u32) -> bool {
        let f = self.get(seq).flags;
        if f & SACKED != 0 {
            return false;
        }
        if f & LOST != 0 {
            if f & RETRANS == 0 {
                return false;
            }
            self.retrans -= 1;
            self.get_mut(seq).flags &= !RETRANS;
        } else {
            self.lost += 1;
            self.get_mut(seq).flags |= LOST;
        }
        true
    }

    /// `seq` was retransmitted at `now` with the rate fields of `s`.
    pub fn retransmitted(&mut self, seq: u32, s: Seg) {
        let f = self.get(seq).flags;
        if f & RETRANS == 0 {
            self.retrans += 1;
        }
        *self.get_mut(seq) =
            Seg { flags: (f & (LOST | SACKED)) | RETRANS | EVER_RETRANS | (s.flags & APP_LIMITED), ..s };
        debug_assert!(f & SACKED == 0, "a SACKed segment is not retransmitted");
    }

    /// `seq` was sent again at `s.xmit` as a tail loss probe: its send time and rate fields are
    /// the probe's, it counts as retransmitted, but not as a retransmission in flight (Linux's
    /// probe goes through `__tcp_retransmit_skb`, which leaves `retrans_out` alone).
    pub fn probed(&mut self, seq: u32, s: Seg) {
        let f = self.get(seq).flags;
        *self.get_mut(seq) = Seg { flags: (f & !(APP_LIMITED | RATED)) | EVER_RETRANS | (s.flags & APP_LIMITED), ..s };
    }

    /// Segments deemed lost whose retransmission has not been sent (or was lost too).
    #[inline]
    pub fn lost_unsent(&self) -> u32 {
        self.lost.saturating_sub(self.retrans)
    }

    /// Forget every record (the connection is over).
    pub fn release(&mut self) {
        self.ring = vec![Seg::default(); 1];
        self.una = self.nxt;
        self.high_sacked = self.nxt;
        (self.sacked, self.lost, self.retrans) = (0, 0, 0);
    }
}

impl Default for Board {
    fn default() -> Self {
        Board::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_follow_the_flags() {
        let mut b = Board::new();
        for t in 0..40 {
            b.push(Seg { xmit: t, ..Seg::default() });
        }
        assert_eq!((b.packets_out(), b.in_flight()), (40, 40));
        b.sack(5);
        b.sack(6);
        assert!(b.mark_lost(3));
        assert!(!b.mark_lost(5), "a SACKed segment is not lost");
        assert_eq!((b.sacked, b.lost, b.in_flight()), (2, 1, 37));
        b.retransmitted(3, Seg { xmit: 100, ..Seg::default() });
        assert_eq!(b.in_flight(), 38);
        assert!(b.mark_lost(3), "its retransmission is lost");
        assert_eq!((b.retrans, b.in_flight()), (0, 37));
        for _ in 0..7 {
            b.ack_head();
        }
        assert_eq!((b.una, b.sacked, b.lost, b.retrans, b.in_flight()), (7, 0, 0, 0, 33));
        assert_eq!(b.get(39).xmit, 39, "the records survive the ring's doubling");
    }

    proptest! {
        /// Whatever happens to the segments, in flight = outstanding − SACKed − lost + retransmitted
        /// with each count equal to its flags' (Linux's `tcp_verify_left_out`).
        #[test]
        fn counts_match_the_records(ops in prop::collection::vec((0u8..5, 0u32..64), 1..300)) {
            let mut b = Board::new();
            for (op, k) in ops {
                match op {
                    0 => b.push(Seg::default()),
                    _ if b.packets_out() == 0 => {}
                    1 => { let q = b.una + k % b.packets_out(); if !b.get(q).has(SACKED) { b.sack(q); } }
                    2 => { let q = b.una + k % b.packets_out(); b.mark_lost(q); }
                    3 => { let q = b.una + k % b.packets_out(); if !b.get(q).has(SACKED) { b.retransmitted(q, Seg::default()); } }
                    _ => { b.ack_head(); }
                }
                let (mut s, mut l, mut r) = (0, 0, 0);
                for q in b.una..b.nxt {
                    let f = b.get(q).flags;
                    s += (f & SACKED != 0) as u32;
                    l += (f & LOST != 0) as u32;
                    r += (f & RETRANS != 0) as u32;
                    prop_assert!(!(f & SACKED != 0 && f & (LOST | RETRANS) != 0));
                }
                prop_assert_eq!((s, l, r), (b.sacked, b.lost, b.retrans));
                prop_assert!(b.in_flight() <= b.packets_out() + b.retrans);
            }
        }
    }
}
