//! RACK-TLP (RFC 8985): loss detection by time, and the tail loss probe, as Linux runs them
//! (`net/ipv4/tcp_recovery.c`; `tcp_schedule_loss_probe` and `tcp_send_loss_probe` in
//! `tcp_output.c`). The recovery that acts on what it finds is [`super::recovery::rack`]; the
//! segments it reads are [`super::board`]'s.
//!
//! * **RACK** (§6): remember the send time `xmit` of the most recently *sent* segment that has
//!   been delivered (SACKed or cumulatively acknowledged; §6.1, Linux `tcp_rack_advance`), with
//!   the RTT measured on the last delivered segment. A segment sent before it and not delivered
//!   is lost once `now − its send time ≥ RACK.rtt + reo_wnd` (§6.2, `tcp_rack_detect_loss`);
//!   until then a timer fires at that moment (the reordering timer, §6.3). Because the test is
//!   on send times, a *retransmission* sent before a delivered segment is found lost the same way:
//!   the lost retransmission that RFC 6675 leaves to the retransmission timer. A delivered segment
//!   that was retransmitted does not advance RACK if its RTT is below the minimum RTT (the ACK may
//!   be for the original, §6.1 step 2).
//! * **Reordering window** (§6.2, Linux `tcp_rack_reo_wnd`): `min_rtt/4` times a step count,
//!   at most SRTT; but zero — a loss as soon as a later segment is delivered — when no
//!   reordering has been seen and the sender is already in recovery or has `dupack_threshold`
//!   segments SACKed (Linux keeps the duplicate-threshold rule inside RACK this way). Reordering
//!   is seen when a segment that was never retransmitted is delivered below the highest SACKed
//!   one (Linux `tcp_check_sack_reordering`). The step count grows by one per round trip in
//!   which a D-SACK reports a spurious retransmission and falls back to one after 16 recoveries
//!   without (Linux `tcp_rack_update_reo_wnd`); this model's receivers send no D-SACK, so it
//!   stays at one (its paths do not reorder).
//! * **TLP** (§7, Linux `tcp_schedule_loss_probe`): when new data is sent or an ACK arrives
//!   with no loss being recovered, a probe timeout `PTO = 2·SRTT` (+ 200 ms with one segment
//!   outstanding, for a delayed ACK; + 2 ms otherwise, Linux's `TCP_TIMEOUT_MIN`; 1 s before any
//!   RTT sample), no later than the RTO, replaces the RTO. When it fires, one segment is sent —
//!   new data if the window allows, else the last segment again — so that a tail loss is
//!   repaired by RACK and fast recovery, not by a timeout (`tcp_send_loss_probe`). One probe per
//!   episode (`tlp_high_seq`); if the ACK of the probe shows that a retransmitted probe repaired
//!   a loss, the window is reduced as for any loss (`tcp_process_tlp_ack`).

use super::board::{Board, Seg, EVER_RETRANS, LOST, RETRANS, SACKED};
use aqm::Time;

const MS: Time = 1_000_000;
/// Linux's `TCP_TIMEOUT_MIN`: two jiffies (HZ = 1000), added to timers so they do not fire early.
pub const TIMEOUT_MIN: Time = 2 * MS;
/// RFC 8985 §7.2's worst-case delayed-ACK time when one segment is outstanding (Linux: `TCP_RTO_MIN`).
pub const WC_DEL_ACK: Time = 200 * MS;
/// The PTO before any RTT sample (Linux `TCP_TIMEOUT_INIT`, RFC 8985 §7.2).
pub const PTO_INIT: Time = 1_000 * MS;
/// Recoveries a widened reordering window persists (Linux `TCP_RACK_RECOVERY_THRESH`).
const RECOVERY_THRESH: u8 = 16;

/// RACK's state for one connection.
#[derive(Debug, Clone, Default)]
pub struct Rack {
    /// Send time and sequence number + 1 of the most recently sent delivered segment.
    pub xmit: Time,
    pub end_seq: u32,
    /// The RTT measured on the last delivered segment (`RACK.rtt`).
    pub rtt: Time,
    /// A delivery advanced RACK since the last loss detection (`rack.advanced`).
    pub advanced: bool,
    /// Reordering has been seen on this connection (Linux `reord_seen`).
    pub reord_seen: bool,
    /// The reordering window in units of `min_rtt/4` (`reo_wnd_steps`) and for how many more
    /// recoveries a widened window persists.
    pub reo_wnd_steps: u8,
    pub reo_wnd_persist: u8,
}

/// `t1, s1` was sent after `t2, s2` (by time, then by sequence: Linux `tcp_skb_sent_after`).
#[inline]
pub fn sent_after(t1: Time, t2: Time, s1: u32, s2: u32) -> bool {
    t1 > t2 || (t1 == t2 && s1 > s2)
}

impl Rack {
    pub fn new() -> Self {
        Rack { reo_wnd_steps: 1, ..Rack::default() }
    }

    /// Segment `seq` sent at `s.xmit` was delivered at `now` (RFC 8985 §6.1).
    pub fn advance(&mut self, seq: u32, s: &Seg, now: Time, min_rtt: Time) {
        let rtt = now.saturating_sub(s.xmit);
        if s.has(EVER_RETRANS) && rtt < min_rtt {
            return; // ambiguous: the ACK may be for the original
        }
        self.advanced = true;
        self.rtt = rtt;
        if sent_after(s.xmit, self.xmit, seq + 1, self.end_seq) {
            self.xmit = s.xmit;
            self.end_seq = seq + 1;
        }
    }

    /// The reordering window (RFC 8985 §6.2, Linux `tcp_rack_reo_wnd`): `in_recovery` when the
    /// sender is in fast recovery or after a timeout, `dupthresh_reached` when at least
    /// `dupack_threshold` segments are SACKed.
    pub fn reo_wnd(&self, in_recovery: bool, dupthresh_reached: bool, min_rtt: Time, srtt: Time) -> Time {
        if !self.reord_seen && (in_recovery || dupthresh_reached) {
            return 0;
        }
        if min_rtt == Time::MAX {
            return 0;
        }
        ((min_rtt / 4) * self.reo_wnd_steps as Time).min(srtt)
    }

    /// A recovery ended without a D-SACK widening the window: count it down (Linux
    /// `tcp_try_undo_recovery`'s `reo_wnd_persist--`), and back to one step at zero.
    pub fn recovery_done(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
        if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }

    /// A D-SACK reported a spurious retransmission after reordering was seen: widen the window by
    /// a step (at most once per round trip, which the caller checks), for 16 recoveries.
    pub fn dsack(&mut self) {
        if self.reord_seen {
            self.reo_wnd_steps = self.reo_wnd_steps.saturating_add(1);
            self.reo_wnd_persist = RECOVERY_THRESH;
        }
    }

    /// RFC 8985 §6.2 (Linux `tcp_rack_detect_loss`): mark lost every outstanding segment sent
    /// before the most recently sent delivered one whose time is up; returns the segments newly
    /// marked (lost retransmissions included) and, if some are not yet due, how long until the
    /// last of them is (0: none).
    pub fn detect_loss(&mut self, b: &mut Board, now: Time, reo_wnd: Time) -> (u32, Time) {
        self.advanced = false;
        let (mut lost, mut wait) = (0, 0);
        // originals were sent in sequence order, retransmissions later: past the first original
        // sent after RACK.xmit only retransmissions can still qualify
        let mut originals_done = false;
        let mut retrans_left = b.retrans;
        for seq in b.una..b.nxt {
            if originals_done && retrans_left == 0 {
                break;
            }
            let s = *b.get(seq);
            if s.has(RETRANS) {
                retrans_left -= 1;
            } else if originals_done {
                continue;
            }
            if s.has(SACKED) || (s.has(LOST) && !s.has(RETRANS)) {
                continue; // delivered, or lost and not yet retransmitted
            }
            if !sent_after(self.xmit, s.xmit, self.end_seq, seq + 1) {
                if !s.has(EVER_RETRANS) {
                    originals_done = true;
                }
                continue;
            }
            let due = s.xmit.saturating_add(self.rtt).saturating_add(reo_wnd);
            if due <= now {
                if b.mark_lost(seq) {
                    lost += 1;
                }
            } else {
                wait = wait.max(due - now);
            }
        }
        (lost, wait)
    }
}

/// RFC 8985 §7.2's probe timeout, as Linux computes it: `2·SRTT` plus 200 ms with one segment
/// outstanding (else `TIMEOUT_MIN`), 1 s without an RTT sample, and no later than `until_rto`.
pub fn pto(srtt: Option<f64>, packets_out: u32, until_rto: Time) -> Time {
    let t = match srtt {
        Some(s) => (2.0 * s) as Time + if packets_out == 1 { WC_DEL_ACK } else { TIMEOUT_MIN },
        None => PTO_INIT,
    };
    if until_rto > 0 {
        t.min(until_rto)
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u32) -> Board {
        let mut b = Board::new();
        for t in 0..n {
            b.push(Seg { xmit: t as Time * MS, ..Seg::default() });
        }
        b
    }

    #[test]
    fn a_segment_sent_before_a_delivered_one_is_lost_after_rtt_plus_the_window() {
        // 10 segments sent 1 ms apart; segment 5 (sent at 5 ms) delivered at 105 ms
        let mut b = board(10);
        let mut r = Rack::new();
        let s = b.sack(5);
        r.advance(5, &s, 105 * MS, 50 * MS);
        assert_eq!((r.xmit, r.rtt, r.end_seq), (5 * MS, 100 * MS, 6));
        // with a 25 ms window (min_rtt/4) nothing is due yet: 0 sent at 0 ms is due at 125 ms
        let reo = r.reo_wnd(false, false, 100 * MS, 100 * MS);
        assert_eq!(reo, 25 * MS);
        let (lost, wait) = r.detect_loss(&mut b, 105 * MS, reo);
        // (the timer waits for the last of them: segment 4, due at 129 ms)
        assert_eq!((lost, wait), (0, 24 * MS));
        // at 125 ms segments 0..=1 are due (sent at 0 and 1 ms ... 125 ms ≥ 0 + 125)
        let (lost, _) = r.detect_loss(&mut b, 126 * MS, reo);
        assert_eq!(lost, 2);
        assert_eq!(b.lost, 2);
        // segments sent after the delivered one are never lost by it
        let (lost, _) = r.detect_loss(&mut b, 1_000 * MS, reo);
        assert_eq!(lost, 3, "2, 3 and 4; not 6..10");
    }

    #[test]
    fn a_lost_retransmission_is_found_by_a_later_delivery() {
        let mut b = board(10);
        let mut r = Rack::new();
        // segment 0 lost and retransmitted at 200 ms
        let s = b.sack(1);
        r.advance(1, &s, 101 * MS, 100 * MS);
        assert_eq!(r.detect_loss(&mut b, 101 * MS, 0).0, 1);
        b.retransmitted(0, Seg { xmit: 200 * MS, ..Seg::default() });
        // new data sent after it (segment 10 at 201 ms) is SACKed at 301 ms: the retransmission,
        // sent before it and not delivered, is lost
        b.push(Seg { xmit: 201 * MS, ..Seg::default() });
        let s = b.sack(10);
        r.advance(10, &s, 301 * MS, 100 * MS);
        let (lost, _) = r.detect_loss(&mut b, 301 * MS, 0);
        assert_eq!(lost, 1 + 8, "the retransmission of 0, and 2..=9");
        assert_eq!(b.retrans, 0);
        assert!(b.get(0).has(LOST) && !b.get(0).has(RETRANS));
    }

    #[test]
    fn reordering_window_is_zero_in_recovery_and_capped_by_srtt() {
        let mut r = Rack::new();
        assert_eq!(r.reo_wnd(true, false, 40 * MS, 50 * MS), 0);
        assert_eq!(r.reo_wnd(false, true, 40 * MS, 50 * MS), 0);
        assert_eq!(r.reo_wnd(false, false, 40 * MS, 50 * MS), 10 * MS);
        r.reord_seen = true;
        assert_eq!(r.reo_wnd(true, true, 40 * MS, 50 * MS), 10 * MS, "after reordering: min_rtt/4 always");
        for _ in 0..10 {
            r.dsack();
        }
        assert_eq!(r.reo_wnd(false, false, 40 * MS, 50 * MS), 50 * MS, "at most SRTT");
        for _ in 0..RECOVERY_THRESH {
            r.recovery_done();
        }
        assert_eq!(r.reo_wnd_steps, 1);
    }

    #[test]
    fn the_probe_timeout_is_two_srtt_plus_a_delayed_ack_allowance() {
        assert_eq!(pto(Some(50e6), 10, 0), 102 * MS);
        assert_eq!(pto(Some(50e6), 1, 0), 300 * MS);
        assert_eq!(pto(Some(50e6), 1, 250 * MS), 250 * MS, "no later than the RTO");
        assert_eq!(pto(None, 3, 0), 1_000 * MS);
    }
}
