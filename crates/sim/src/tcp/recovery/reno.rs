//! Reno's fast recovery (RFC 5681 §3.2): on the third duplicate ACK retransmit the first
//! unacknowledged segment, set `ssthresh = flight / 2` and `cwnd = ssthresh + 3`, add one segment
//! per further duplicate ACK, and leave recovery on the first ACK of new data with
//! `cwnd = ssthresh` — even a partial ACK, so a second loss in the same window needs three new
//! duplicate ACKs (another halving) or a timeout. That is the behaviour the papers' Reno flows
//! have and what NewReno and SACK improve on.
//!
//! As in ns-2's Reno agent (whose `bug_fix_` is on by default) and RFC 6582's "careful" rule, no
//! second fast retransmit is started by duplicate ACKs below `recover` (the highest segment sent at
//! the last fast retransmit or timeout; the sender keeps that guard for every algorithm): after a
//! partial ACK ends Reno's recovery, the remaining losses of that window are repaired by a
//! timeout. RFC 5681 itself has no such guard and may halve the window again instead; this is the
//! behaviour the papers' ns-2 Reno flows had.
//!
//! Congestion control is [`crate::tcp::reno::Reno`]'s (the trait's defaults).

use super::{InRecovery, LossRecovery};
use crate::tcp::meter::{Cx, TcpMeter};
use crate::tcp::sender_core::SenderCore;

/// Reno's fast recovery: the interface's defaults, and recovery ends on any new ACK.
#[derive(Debug, Clone, Default)]
pub struct Reno;

impl LossRecovery for Reno {
    fn on_new_ack<M: TcpMeter>(
        &mut self,
        _c: &mut SenderCore,
        _newly: u32,
        _full: bool,
        _cx: &mut Cx<'_, M>,
    ) -> InRecovery {
        InRecovery::Exit
    }
}

/// Fast retransmit and the start of fast recovery (RFC 5681 §3.2 steps 2–3), for Reno and
/// NewReno: retransmit the first unacknowledged segment, inflate the window by the duplicate
/// ACKs received (the threshold, or fewer when the fine-grained timeout started the
/// retransmission), and send what it allows.
pub(super) fn enter<M: TcpMeter>(c: &mut SenderCore, cx: &mut Cx<'_, M>) {
    let s = c.snd_una;
    c.retransmit(s, cx);
    c.cwnd = c.ssthresh + c.dupacks as f64;
    c.send_window(cx);
}
