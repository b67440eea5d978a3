//! NewReno's fast recovery (RFC 6582): Reno's, with a better answer to a second loss in a window.
//!
//! At fast retransmit the sender records `recover` = the highest sequence number sent. An ACK
//! that acknowledges new data but not `recover` (a *partial* ACK) means another segment of the same
//! window was lost: retransmit the first unacknowledged segment at once, deflate `cwnd` by the
//! amount acknowledged and add back one segment, and stay in fast recovery. A *full* ACK (beyond
//! `recover`) ends recovery with `cwnd = ssthresh`. So `n` losses in one window take about `n`
//! round trips — unless the retransmission timer expires first: it is restarted at the first
//! partial ACK of a recovery only (RFC 6582 §3.2 step 5; the "Impatient" variant, RFC 6582 §4), as
//! ns-2.35's NewReno agent does (`tcp-newreno.cc` restarts it in `partialnewack_helper` only while
//! `firstpartial_` is 0, with its default `newreno_changes1_ = 1`, and `TcpAgent::output` leaves a
//! pending timer alone). A window that lost many segments is then repaired by the timeout's
//! go-back-N rather than one segment per round trip. Fast retransmit itself restarts the timer
//! (with `rto_restart_on_retransmit`, as ns-2's `reset_rtx_timer` and Linux do); the retransmissions
//! of the later partial ACKs do not, whatever that option says. Duplicate ACKs do not start a
//! second fast retransmit until `recover` is acknowledged (the "Careful" variant, RFC 6582 §3.2
//! step 2).
//!
//! Congestion control is [`crate::tcp::reno::Reno`]'s.

use super::{InRecovery, LossRecovery};
use crate::tcp::meter::{Cx, TcpMeter};
use crate::tcp::sender_core::SenderCore;

/// NewReno's fast recovery and its one piece of state.
#[derive(Debug, Clone, Default)]
pub struct NewReno {
    /// A partial ACK arrived in this recovery (the timer is restarted only on the first one).
    partial_seen: bool,
}

impl LossRecovery for NewReno {
    fn enter<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        self.partial_seen = false;
        super::reno::enter(c, cx);
    }

    fn on_new_ack<M: TcpMeter>(
        &mut self,
        c: &mut SenderCore,
        newly: u32,
        full: bool,
        cx: &mut Cx<'_, M>,
    ) -> InRecovery {
        if full {
            return InRecovery::Exit;
        }
        // partial acknowledgement (RFC 6582 §3.2 step 4): the timer restarts at the first one only
        let s = c.snd_una;
        let first = !self.partial_seen;
        if first {
            c.retransmit(s, cx);
        } else {
            c.retransmit_on_timer(s, cx);
        }
        c.cwnd = deflate(c.cwnd, newly);
        self.partial_seen = true;
        InRecovery::Stay { restart_timer: first }
    }
}

/// The partial-ACK window deflation of RFC 6582 §3.2 step 4: `cwnd - acked + 1`, at least one
/// segment.
pub fn deflate(cwnd: f64, acked: u32) -> f64 {
    (cwnd - acked as f64 + 1.0).max(1.0)
}
