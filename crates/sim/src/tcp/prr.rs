//! Proportional Rate Reduction (PRR, RFC 6937): how much a sender may send on each ACK while its
//! window comes down from `RecoverFS` to `ssthresh` in loss recovery (or after an ECN echo).
//!
//! While more than `ssthresh` segments are in flight, the sends are spread over the round trip in
//! proportion to what the receiver reports delivered: in all `ceil(prr_delivered · ssthresh /
//! RecoverFS)` (RFC 6937 §3, "proportional" part), so the window reaches `ssthresh` at the end of
//! recovery instead of half a window of silence first (RFC 6675) and a burst after. Once in
//! flight is at or below `ssthresh` (heavy losses), the reduction bound applies: PRR-SSRB sends what
//! was delivered and one more, a slow start back up to `ssthresh` (§3, "slow start reduction
//! bound"). As Linux's `tcp_cwnd_reduction` (net/ipv4/tcp_input.c), which PRR's authors wrote:
//! `RecoverFS` is the window when the reduction began (`prior_cwnd`), the extra segment of SSRB
//! is given only on an ACK that advances `snd_una` and marks no new loss (Linux 5.x's refinement,
//! RFC 9937 §6's `SafeACK`), and the first ACK always allows one segment (the fast
//! retransmission). The result is expressed as a window, `cwnd = in_flight + sndcnt`, which the
//! send loop then fills.

/// PRR's state for one reduction: `RecoverFS`, and the segments delivered and sent since it began.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prr {
    /// `RecoverFS`: the window when the reduction began (segments).
    pub recover_fs: u32,
    /// `prr_delivered`: segments the receiver reported delivered since (cumulatively or SACKed).
    pub delivered: u32,
    /// `prr_out`: segments sent since (new or retransmitted).
    pub out: u32,
}

impl Prr {
    /// A reduction begins with `cwnd` segments in the window.
    pub fn start(cwnd: u32) -> Self {
        Prr { recover_fs: cwnd.max(1), delivered: 0, out: 0 }
    }

    /// An ACK reports `delivered` more segments delivered; `in_flight` are in flight after it,
    /// `ssthresh` is the target. `safe` when it advanced `snd_una` and marked no new loss. Returns
    /// `sndcnt`, the segments that may now be sent (the window becomes `in_flight + sndcnt`), or
    /// `None` when the ACK delivered nothing (the window stays).
    pub fn on_ack(&mut self, delivered: u32, in_flight: u32, ssthresh: u32, safe: bool) -> Option<u32> {
        if delivered == 0 {
            return None;
        }
        self.delivered += delivered;
        let sndcnt = if in_flight > ssthresh {
            // proportional: ceil(prr_delivered · ssthresh / RecoverFS) − prr_out
            let allowed = (self.delivered as u64 * ssthresh as u64).div_ceil(self.recover_fs as u64);
            allowed.saturating_sub(self.out as u64) as u32
        } else {
            // PRR-SSRB: catch up by what was delivered, plus one on a safe ACK, up to ssthresh
            let limit = self.delivered.saturating_sub(self.out).max(delivered) + safe as u32;
            limit.min(ssthresh - in_flight)
        };
        // the ACK that starts recovery always allows the fast retransmission
        Some(if self.out == 0 { sndcnt.max(1) } else { sndcnt })
    }

    /// `n` segments were sent during the reduction.
    #[inline]
    pub fn sent(&mut self, n: u32) {
        self.out += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 6937 §3.1, the single loss: cwnd = FlightSize = pipe = 20, ssthresh = 10, segment 0
    /// lost, Limited Transmit sending a new segment on each of the first two duplicate ACKs, and
    /// recovery starting on the third. `pipe` is counted as RFC 6675 does (originals neither
    /// SACKed nor lost, plus retransmissions), before each ACK's sending.
    #[test]
    fn single_loss_follows_rfc6937s_example() {
        let (ssthresh, mut outstanding, mut sacked) = (10u32, 20u32, 0u32);
        let mut prr = Prr::start(20);
        let mut retx = 0;
        let mut sent_at = Vec::new();
        for ack in 1..=19u32 {
            sacked += 1; // each ACK SACKs one more original segment
            if ack <= 2 {
                outstanding += 1; // Limited Transmit (RFC 3042)
                sent_at.push(ack);
                continue;
            }
            // segment 0 is lost from the third duplicate ACK on
            let pipe = outstanding - sacked - 1 + retx;
            let n = prr.on_ack(1, pipe, ssthresh, false).unwrap();
            if n > 0 {
                sent_at.push(ack);
            }
            for _ in 0..n {
                if retx == 0 {
                    retx = 1; // the fast retransmission of segment 0
                } else {
                    outstanding += 1;
                }
            }
            prr.sent(n);
        }
        // the table's "sent" row: N N R, then one segment every other ACK
        assert_eq!(&sent_at[..9], &[1, 2, 3, 5, 7, 9, 11, 13, 15]);
        // RFC 6937 §4: the window converges to ssthresh: at the end of the round trip exactly
        // ssthresh segments are in flight. (The RFC's table has its last send on ACKs 18 and 19
        // where this accounting, which counts the retransmission in pipe as RFC 6675 defines it,
        // has it on ACK 17: the same proportional bound, one ACK apart.)
        let pipe = outstanding - sacked - 1 + retx;
        assert_eq!(pipe, ssthresh);
        assert_eq!(prr.out, 8);
    }

    /// RFC 6937 §3.1, the burst: segments 0–14 lost, only ACKs for 15–19 come back (SACKs: none
    /// advances `snd_una`). After Limited Transmit (N N) on ACKs 15 and 16, recovery starts on 17
    /// with pipe 4. PRR-SSRB as RFC 6937 states it (the extra segment on every ACK) gives its
    /// table's SSRB row: two retransmissions per ACK, pipe 4, 5, 6. Linux (and RFC 9937) gives
    /// the extra segment only on an ACK that advances `snd_una` without a new loss; on these SACKs
    /// it is the table's PRR-CRB row: one retransmission per ACK, pipe 4, 4, 4.
    #[test]
    fn burst_loss_follows_rfc6937s_reduction_bound_rows() {
        for (safe, want) in [(true, vec![(4, 2), (5, 2), (6, 2)]), (false, vec![(4, 1), (4, 1), (4, 1)])] {
            let mut prr = Prr::start(20);
            let mut pipe = 4; // 18, 19, 20, 21 in flight; 0–14 lost; 15–17 SACKed
            let mut sends = Vec::new();
            for _ack in 17..=19 {
                let n = prr.on_ack(1, pipe, 10, safe).unwrap();
                sends.push((pipe, n));
                prr.sent(n);
                pipe = pipe - 1 + n; // one more segment delivered, n retransmitted
            }
            assert_eq!(sends, want, "SafeACK {safe}");
        }
    }

    #[test]
    fn nothing_delivered_changes_nothing() {
        let mut prr = Prr::start(10);
        assert_eq!(prr.on_ack(0, 8, 5, true), None);
        assert_eq!(prr.delivered, 0);
    }

    proptest! {
        /// Over a reduction in the proportional region, what PRR lets out never exceeds
        /// ceil(delivered · ssthresh / RecoverFS), and with the forced first segment it is at least
        /// one (RFC 6937 §4's properties).
        #[test]
        fn proportional_sends_are_bounded(recover_fs in 2u32..500, frac in 0.1f64..0.95,
                                          acks in prop::collection::vec(1u32..4, 1..100)) {
            let ssthresh = ((recover_fs as f64 * frac) as u32).max(1);
            let mut prr = Prr::start(recover_fs);
            let mut total_out = 0u64;
            for d in acks {
                // far above ssthresh: the proportional part applies
                let n = prr.on_ack(d, ssthresh + 1000, ssthresh, true).unwrap();
                prr.sent(n);
                total_out += n as u64;
                let bound = (prr.delivered as u64 * ssthresh as u64).div_ceil(recover_fs as u64).max(1);
                prop_assert!(total_out <= bound, "{total_out} > {bound}");
            }
            prop_assert!(total_out >= 1);
        }

        /// In the reduction-bound region PRR-SSRB never takes in flight above ssthresh.
        #[test]
        fn ssrb_never_exceeds_ssthresh(ssthresh in 1u32..200, start in 0u32..200, d in 1u32..10, safe: bool) {
            let in_flight = start.min(ssthresh);
            let mut prr = Prr::start(2 * ssthresh);
            prr.sent(1); // past the forced first segment
            let n = prr.on_ack(d, in_flight, ssthresh, safe).unwrap();
            prop_assert!(in_flight + n <= ssthresh);
        }
    }
}
