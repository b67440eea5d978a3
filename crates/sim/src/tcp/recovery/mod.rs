//! Loss recovery: what a sender does from a loss detected by duplicate ACKs (fast retransmit)
//! until the ACK that ends recovery. One algorithm per file — [`reno`] (RFC 5681), [`newreno`]
//! (RFC 6582), [`sack`] (RFC 6675) — behind the small interface [`LossRecovery`]; the enum over
//! them ([`dispatch::AnyRecovery`]), for static dispatch, is in its own file, which none of them
//! imports (as for congestion control, [`crate::tcp::dispatch`]).
//!
//! The sender ([`super::TcpSender`]) owns the rest: it counts duplicate ACKs, sets `ssthresh`
//! through congestion control and records `recover` when recovery begins, and leaves recovery
//! (`cwnd = ssthresh`) when the algorithm says so. Each hook acts on the sender's shared state,
//! [`SenderCore`](super::sender_core::SenderCore). The defaults are Reno's.

pub mod dispatch;
pub mod newreno;
pub mod rack;
pub mod reno;
pub mod sack;

use super::meter::{Cx, TcpMeter};
use super::sack::Block;
use super::sender_core::SenderCore;

/// What a new ACK during recovery leads to ([`LossRecovery::on_new_ack`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InRecovery {
    /// Recovery ends (the sender sets `cwnd = ssthresh`).
    Exit,
    /// Recovery goes on; the retransmission timer is restarted (as on any new ACK that leaves
    /// data outstanding) or left as it is.
    Stay { restart_timer: bool },
}

/// A loss-recovery algorithm: the points where Reno, NewReno and SACK differ.
pub trait LossRecovery {
    /// An ACK arrived carrying `blocks` (SACK), after which `una` is the cumulative ACK: record
    /// them; true if a segment was newly SACKed. Without SACK there is nothing to record.
    fn on_blocks(&mut self, _una: u32, _blocks: &[Block], _snd_max: u32) -> bool {
        false
    }

    /// An ACK that acknowledges nothing new (with data outstanding) counts as a duplicate ACK.
    /// Without SACK, always.
    fn is_duplicate(&self, _new_sack: bool, _blocks: &[Block]) -> bool {
        true
    }

    /// The duplicate ACKs so far (`c.dupacks`, the cumulative ACK `ack`) detect a loss: the
    /// `dupack_threshold`-th one does (RFC 5681 §3.2).
    fn detects_loss(&self, c: &SenderCore, _ack: u32) -> bool {
        c.dupacks == c.cfg.dupack_threshold
    }

    /// Fast retransmit: recovery begins (the sender has set `ssthresh` and `recover`).
    /// Retransmit, set the window, and send what it allows.
    fn enter<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        reno::enter(c, cx);
    }

    /// A duplicate ACK during recovery: inflate the window by one segment (the sender then sends
    /// what it allows).
    fn on_dup_ack(&mut self, c: &mut SenderCore) {
        c.cwnd += 1.0;
    }

    /// An ACK of `newly` new segments during recovery; `full` if it covers `recover`.
    fn on_new_ack<M: TcpMeter>(&mut self, c: &mut SenderCore, newly: u32, full: bool, cx: &mut Cx<'_, M>)
        -> InRecovery;

    /// Send what the window allows during recovery: new data, as outside it.
    fn send<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        c.send_window(cx);
    }

    /// The retransmission timer expired.
    fn on_timeout(&mut self) {}

    /// The connection is over (everything up to `una` acknowledged): give back memory.
    fn release(&mut self, _una: u32) {}
}
