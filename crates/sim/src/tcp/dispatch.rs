//! The enum over the congestion-control algorithms, [`Cc`], for static dispatch: each hook of
//! [`super::cc::CongestionControl`] is a `match` on the variant, a direct call the compiler can
//! inline (Reno's per-ACK growth is a few instructions), where a `dyn` call could not be.
//!
//! This module imports every algorithm and no algorithm imports it: an algorithm sees only the
//! interface it implements (issue 41: the enum used to live beside the trait in `cc`, so `cc` and
//! the algorithms' files imported each other). The sender core holds one. The loss recoveries have
//! the same arrangement (`super::recovery::dispatch`).

use super::cc::{AckInfo, CongestionControl, Window};
use super::{bbr, cubic, dctcp, reno, vegas, CcConfig, TcpConfig};
use aqm::Time;

/// The congestion-control state of one connection (enum dispatch; one arm per algorithm). Every
/// algorithm with state is on the heap (Vegas's RTT measurement and fine-grained timeout, about
/// 140 bytes; CUBIC's epoch, 88; BBR's model; DCTCP's estimate, 32), so that a Reno or NewReno
/// connection, which has none, carries 16 bytes here instead of the largest of them (issue 28: a
/// million flows' senders were 72 MB larger with CUBIC's state inline).
#[derive(Debug, Clone)]
pub enum Cc {
    Reno(reno::Reno),
    Vegas(Box<vegas::Vegas>),
    Cubic(Box<cubic::Cubic>),
    Bbr(Box<bbr::Bbr>),
    Dctcp(Box<dctcp::Dctcp>),
}

impl Cc {
    pub fn new(tcp: &TcpConfig) -> Cc {
        let (cfg, mss) = (&tcp.cc, tcp.mss);
        match cfg {
            CcConfig::Reno => Cc::Reno(reno::Reno),
            CcConfig::Vegas { alpha, beta, gamma } => Cc::Vegas(Box::new(vegas::Vegas::new(*alpha, *beta, *gamma))),
            CcConfig::Cubic { c, beta, fast_convergence, tcp_friendly } => {
                let cubic = cubic::Cubic::new(*c, *beta, *fast_convergence, *tcp_friendly);
                Cc::Cubic(Box::new(cubic.with_hystart(tcp.hystart)))
            }
            CcConfig::Bbr => Cc::Bbr(Box::new(bbr::Bbr::new(mss))),
            CcConfig::Dctcp { g } | CcConfig::Prague { g } => Cc::Dctcp(Box::new(dctcp::Dctcp::new(*g))),
        }
    }
}

/// Each hook of a connection's algorithm, by a `match` on the variant.
macro_rules! dispatch_cc {
    ($cc:expr, $c:ident => $call:expr) => {
        match $cc {
            Cc::Reno($c) => $call,
            Cc::Vegas($c) => $call,
            Cc::Cubic($c) => $call,
            Cc::Bbr($c) => $call,
            Cc::Dctcp($c) => $call,
        }
    };
}

impl CongestionControl for Cc {
    #[inline(always)]
    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        dispatch_cc!(self, c => c.on_ack(w, a))
    }
    #[inline]
    fn on_dup_ack(&mut self, w: &mut Window, a: &AckInfo) {
        dispatch_cc!(self, c => c.on_dup_ack(w, a))
    }
    fn on_loss(&mut self, w: &mut Window, a: &AckInfo) -> f64 {
        dispatch_cc!(self, c => c.on_loss(w, a))
    }
    fn on_rto(&mut self, w: &mut Window, flight: f64, now: Time) -> f64 {
        dispatch_cc!(self, c => c.on_rto(w, flight, now))
    }
    fn on_recovery_exit(&mut self, w: &mut Window, now: Time) {
        dispatch_cc!(self, c => c.on_recovery_exit(w, now))
    }
    fn on_enter_loss(&mut self, w: &mut Window, now: Time) {
        dispatch_cc!(self, c => c.on_enter_loss(w, now))
    }
    #[inline]
    fn controls_window(&self) -> bool {
        dispatch_cc!(self, c => c.controls_window())
    }
    fn on_ecn(&mut self, w: &mut Window, a: &AckInfo) -> f64 {
        dispatch_cc!(self, c => c.on_ecn(w, a))
    }
    #[inline]
    fn on_any_ack(&mut self, w: &mut Window, a: &AckInfo) {
        dispatch_cc!(self, c => c.on_any_ack(w, a))
    }
    #[inline]
    fn fine_timeout(&self) -> Option<Time> {
        dispatch_cc!(self, c => c.fine_timeout())
    }
    fn on_fine_retransmit(&mut self, transmits: u32) {
        dispatch_cc!(self, c => c.on_fine_retransmit(transmits))
    }
}
