//! SACK-based loss recovery (RFC 6675), conservative and pipe-based. The SACK option itself —
//! the blocks the receiver reports and the sender's scoreboard of them — is in
//! [`crate::tcp::sack`], which also describes the algorithm as a whole.
//!
//! A duplicate ACK is one that SACKs new data (or carries no blocks, RFC 6675 §2). Recovery
//! starts on the `DupThresh`-th duplicate ACK or as soon as the first unacknowledged segment is
//! lost (`IsLost`), with `cwnd = ssthresh`; on every ACK during recovery the sender computes
//! `pipe` and sends while `cwnd − pipe ≥ 1`, each segment chosen by `NextSeg` (§5 step C). It
//! ends when the cumulative ACK passes `recover`. After a timeout the scoreboard is cleared.
//!
//! Congestion control is [`crate::tcp::reno::Reno`]'s.

use super::{InRecovery, LossRecovery};
use crate::tcp::meter::{Cx, TcpMeter};
use crate::tcp::sack::{Block, Scoreboard};
use crate::tcp::sender_core::SenderCore;

/// SACK recovery: the scoreboard of what the receiver holds.
#[derive(Debug, Clone)]
pub struct Sack {
    sb: Scoreboard,
}

impl Sack {
    pub fn new(max_window: u32) -> Self {
        Sack { sb: Scoreboard::new(max_window) }
    }

    /// RFC 6675 §5 step (C): send while `cwnd - pipe >= 1`, each segment chosen by NextSeg.
    fn send_pipe<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        let dupthresh = c.cfg.dupack_threshold;
        loop {
            let sc = self.sb.scan(c.snd_max, dupthresh);
            if c.cwnd - (sc.pipe as f64) < 1.0 {
                break;
            }
            let rwnd_end = c.snd_una.saturating_add(c.cfg.max_window);
            let seg = if let Some(s) = sc.lost_rxt {
                s
            } else if c.snd_max < c.limit && c.snd_max < rwnd_end {
                c.snd_max
            } else if let Some(s) = sc.hole_rxt {
                s
            } else {
                break;
            };
            if seg < c.snd_max {
                self.sb.high_rxt = self.sb.high_rxt.max(seg + 1);
                c.retransmit(seg, cx);
            } else {
                c.send_seg(seg, cx);
                c.snd_nxt = c.snd_max;
            }
        }
    }
}

impl LossRecovery for Sack {
    fn on_blocks(&mut self, una: u32, blocks: &[Block], snd_max: u32) -> bool {
        self.sb.advance(una);
        self.sb.mark(blocks, snd_max)
    }

    /// RFC 6675 §2: with SACK, a duplicate ACK is one that SACKs new data.
    fn is_duplicate(&self, new_sack: bool, blocks: &[Block]) -> bool {
        new_sack || blocks.is_empty()
    }

    /// `DupThresh` duplicate ACKs or more, or the first unacknowledged segment is lost.
    fn detects_loss(&self, c: &SenderCore, ack: u32) -> bool {
        let t = c.cfg.dupack_threshold;
        c.dupacks >= t || self.sb.is_lost(ack, t)
    }

    /// RFC 6675 §5 step (4): `cwnd = ssthresh`, retransmit NextSeg, then step (C).
    fn enter<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        c.cwnd = c.ssthresh.max(1.0);
        let s = c.snd_una;
        self.sb.high_rxt = s + 1;
        c.retransmit(s, cx);
        self.send_pipe(c, cx);
    }

    /// The window is not inflated: `pipe` already counts what left the network.
    fn on_dup_ack(&mut self, _c: &mut SenderCore) {}

    fn on_new_ack<M: TcpMeter>(
        &mut self,
        _c: &mut SenderCore,
        _newly: u32,
        full: bool,
        _cx: &mut Cx<'_, M>,
    ) -> InRecovery {
        if full {
            InRecovery::Exit
        } else {
            InRecovery::Stay { restart_timer: true } // pipe-based sending follows
        }
    }

    fn send<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        self.send_pipe(c, cx);
    }

    /// RFC 2018 §8: the receiver may have discarded what it SACKed.
    fn on_timeout(&mut self) {
        self.sb.clear();
    }

    fn release(&mut self, una: u32) {
        self.sb = Scoreboard::new(1);
        self.sb.advance(una);
    }
}
