//! NewReno's fast recovery (RFC 6582): Reno's, with a better answer to a second loss in a window.
//!
//! At fast retransmit the sender records `recover` = the highest sequence number sent. An ACK
//! that acknowledges new data but not `recover` (a *partial* ACK) means another segment of the same
//! window was lost: retransmit the first unacknowledged segment at once, deflate `cwnd` by the
//! amount acknowledged and add back one segment, and stay in fast recovery. A *full* ACK (beyond
//! `recover`) ends recovery with `cwnd = ssthresh`. So `n` losses in one window take about `n`
//! round trips and no timeout. The retransmission timer is re-armed on every partial ACK with the
//! `ns2` and `modern` presets (`rto_restart_on_retransmit`: ns-2 and Linux re-arm it when they
//! retransmit, the "Slow-but-Steady" variant of RFC 3782 §4); with that option off, only on the
//! first partial ACK (the "Impatient" variant). Duplicate ACKs do not start a second
//! fast retransmit until `recover` is acknowledged (the "Careful" variant, RFC 6582 §3.2 step 2).
//!
//! Congestion control is [`crate::tcp::reno::Reno`]'s.

use super::{InRecovery, LossRecovery};
use crate::tcp::meter::{Cx, TcpMeter};
use crate::tcp::sender_core::SenderCore;

/// NewReno's fast recovery and its one piece of state.
#[derive(Debug, Clone, Default)]
pub struct NewReno {
    /// A partial ACK arrived in this recovery (the timer is restarted only on the first one,
    /// unless every retransmission restarts it).
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
        // partial acknowledgement (RFC 6582 §3.2 step 4)
        let s = c.snd_una;
        c.retransmit(s, cx);
        c.cwnd = deflate(c.cwnd, newly);
        let restart_timer = !self.partial_seen;
        self.partial_seen = true;
        InRecovery::Stay { restart_timer }
    }
}

/// The partial-ACK window deflation of RFC 6582 §3.2 step 4: `cwnd - acked + 1`, at least one
/// segment.
pub fn deflate(cwnd: f64, acked: u32) -> f64 {
    (cwnd - acked as f64 + 1.0).max(1.0)
}
