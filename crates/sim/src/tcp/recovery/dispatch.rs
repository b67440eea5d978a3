//! The enum over the loss-recovery algorithms, [`AnyRecovery`], for static dispatch: each hook of
//! [`super::LossRecovery`] is a `match` on the algorithm, a direct call the compiler can inline.
//! It imports every algorithm and none imports it (as [`crate::tcp::dispatch`] for congestion
//! control); the sender holds one.
//!
//! RACK-TLP recovery ([`rack::RackRecovery`]) is Linux's whole ACK processing rather than the
//! hooks of [`LossRecovery`], which are shaped around duplicate-ACK counting: the sender hands it
//! its ACKs, timer and sending directly ([`crate::tcp::TcpSender`]), and the hooks below never
//! reach it.

use super::{newreno, rack, reno, sack, InRecovery, LossRecovery};
use crate::tcp::meter::{Cx, TcpMeter};
use crate::tcp::sack::Block;
use crate::tcp::sender_core::SenderCore;
use crate::tcp::{Recovery, TcpConfig};

/// The loss recovery of one connection (enum dispatch; one arm per algorithm). SACK's scoreboard
/// is on the heap, so that it does not make every other connection its size.
#[derive(Debug, Clone)]
pub enum AnyRecovery {
    Reno(reno::Reno),
    NewReno(newreno::NewReno),
    Sack(Box<sack::Sack>),
    Rack(Box<rack::RackRecovery>),
}

impl AnyRecovery {
    pub fn new(cfg: &TcpConfig) -> Self {
        match cfg.recovery {
            Recovery::Reno => AnyRecovery::Reno(reno::Reno),
            Recovery::NewReno => AnyRecovery::NewReno(newreno::NewReno::default()),
            Recovery::Sack if cfg.rack_on() => AnyRecovery::Rack(Box::default()),
            Recovery::Sack => AnyRecovery::Sack(Box::new(sack::Sack::new(cfg.max_window))),
        }
    }
}

/// Each hook by a `match` on the algorithm: a direct call the compiler can inline.
macro_rules! dispatch_recovery {
    ($r:expr, $a:ident => $call:expr) => {
        match $r {
            AnyRecovery::Reno($a) => $call,
            AnyRecovery::NewReno($a) => $call,
            AnyRecovery::Sack($a) => $call,
            AnyRecovery::Rack(_) => unreachable!("RACK-TLP recovery takes the sender's ACKs and timer itself"),
        }
    };
}

impl LossRecovery for AnyRecovery {
    #[inline]
    fn on_blocks(&mut self, una: u32, blocks: &[Block], snd_max: u32) -> bool {
        dispatch_recovery!(self, a => a.on_blocks(una, blocks, snd_max))
    }
    #[inline]
    fn is_duplicate(&self, new_sack: bool, blocks: &[Block]) -> bool {
        dispatch_recovery!(self, a => a.is_duplicate(new_sack, blocks))
    }
    fn detects_loss(&self, c: &SenderCore, ack: u32) -> bool {
        dispatch_recovery!(self, a => a.detects_loss(c, ack))
    }
    fn enter<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        dispatch_recovery!(self, a => a.enter(c, cx))
    }
    fn on_dup_ack(&mut self, c: &mut SenderCore) {
        dispatch_recovery!(self, a => a.on_dup_ack(c))
    }
    fn on_new_ack<M: TcpMeter>(
        &mut self,
        c: &mut SenderCore,
        newly: u32,
        full: bool,
        cx: &mut Cx<'_, M>,
    ) -> InRecovery {
        dispatch_recovery!(self, a => a.on_new_ack(c, newly, full, cx))
    }
    fn send<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        dispatch_recovery!(self, a => a.send(c, cx))
    }
    fn on_timeout(&mut self) {
        dispatch_recovery!(self, a => a.on_timeout())
    }
    fn release(&mut self, una: u32) {
        match self {
            AnyRecovery::Rack(r) => r.release(),
            _ => dispatch_recovery!(self, a => a.release(una)),
        }
    }
}
