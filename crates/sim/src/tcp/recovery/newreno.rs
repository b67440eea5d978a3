//! NewReno's fast recovery (RFC 6582): Reno's, with a better answer to a second loss in a window.
//!
//! At fast retransmit the sender records `recover` = the highest sequence number sent. An ACK
//! that acknowledges new data but not `recover` (a *partial* ACK) means another segment of the same
//! window was lost: retransmit the first unacknowledged segment at once, deflate `cwnd` by the
//! amount acknowledged and add back one segment, and stay in fast recovery. A *full* ACK (beyond
//! `recover`) ends recovery with `cwnd = ssthresh`. So `n` losses in one window take about `n`
//! round trips — unless the retransmission timer expires first. Two ns-2 defaults changed on
//! 2003/05/06 (ns-2's CHANGES.html: "to reflect RFC 2582"), and both are options here:
//!
//! * `newreno_impatient` (ns-2's `newreno_changes1_`): the timer is restarted at the first partial
//!   ACK of a recovery only, RFC 6582 §3.2's "Impatient" variant (RFC 3782 §4 names both). ns-2.35's
//!   agent calls `newtimer` in `partialnewack_helper` only while `firstpartial_` is 0, and the
//!   retransmission goes through `TcpAgent::output`, which leaves a pending timer alone. A window
//!   that lost many segments is then repaired by the timeout's go-back-N within about one RTO,
//!   not one segment per round trip. With `false` ("Slow-but-Steady": ns-2 before 2003, and the
//!   `modern` preset, as Linux re-arms the timer on every ACK of new data) every partial ACK
//!   restarts it.
//! * `partial_window_deflation` (ns-2's `partial_window_deflation_`): a partial ACK deflates the
//!   window by the amount acknowledged and adds one segment back; with `false` it removes the
//!   whole inflation (`cwnd = ssthresh`; ns-2 before 2003 sets `dupwnd_ = 0`).
//!
//! Fast retransmit itself restarts the timer with `rto_restart_on_retransmit` (as ns-2's
//! `reset_rtx_timer` and Linux do); the Impatient variant's later partial-ACK retransmissions do
//! not, whatever that option says. Duplicate ACKs do not start a second fast retransmit until
//! `recover` is acknowledged (the "Careful" variant, RFC 6582 §3.2 step 2).
//!
//! Congestion control is [`crate::tcp::reno::Reno`]'s.

use super::{InRecovery, LossRecovery};
use crate::tcp::meter::{Cx, TcpMeter};
use crate::tcp::sender_core::SenderCore;

/// NewReno's fast recovery and its one piece of state.
#[derive(Debug, Clone, Default)]
pub struct NewReno {
    /// A partial ACK arrived in this recovery (the Impatient variant restarts the timer only at the
    /// first one).
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
        // partial acknowledgement (RFC 6582 §3.2): retransmit the first unacknowledged segment;
        // the Impatient variant restarts the timer at the first one only
        let s = c.snd_una;
        let restart = !self.partial_seen || !c.cfg.newreno_impatient;
        if restart {
            c.retransmit(s, cx);
        } else {
            c.retransmit_on_timer(s, cx);
        }
        c.cwnd = if c.cfg.partial_window_deflation { deflate(c.cwnd, newly) } else { c.ssthresh };
        self.partial_seen = true;
        InRecovery::Stay { restart_timer: restart }
    }
}

/// The partial-ACK window deflation of RFC 6582 §3.2 step 4: `cwnd - acked + 1`, at least one
/// segment.
pub fn deflate(cwnd: f64, acked: u32) -> f64 {
    (cwnd - acked as f64 + 1.0).max(1.0)
}
