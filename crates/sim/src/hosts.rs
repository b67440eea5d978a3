//! The hosts' side of a simulation: flows and their applications (a TCP sender and receiver, or a
//! UDP source), as the engine keeps them. The events that drive them are in `sim::apps`.

use crate::scenario::StartSpec;
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::traffic::onoff::UdpSource;
use aqm::rng::Rng;
use aqm::Time;
use std::sync::Arc;

/// A flow's transport endpoints.
pub enum App {
    /// (kept inline, not boxed: the flow's hot state is one place in the flows array)
    Tcp {
        tx: TcpSender,
        rx: TcpReceiver,
    },
    Udp(UdpSource),
}

/// One flow (a bulk transfer, a UDP source, a short connection or a web response).
pub struct Flow {
    pub group: u32,
    /// Host pair the flow runs between.
    pub host: u32,
    pub start: Time,
    pub stop: Time,
    pub prio: u8,
    pub flags: u8,
    /// Web response connection: its session ([`NO_SESSION`] otherwise).
    pub session: u32,
    /// Web response connection whose request has not reached the server yet.
    pub awaiting_request: bool,
    pub app: App,
}

impl Flow {
    /// The size of every data packet the flow sends: its TCP sender's MSS, or its UDP source's
    /// packet size (bytes).
    #[inline]
    pub fn packet_size(&self) -> u32 {
        match &self.app {
            App::Tcp { tx, .. } => tx.cfg().mss as u32,
            App::Udp(src) => src.cbr.size as u32,
        }
    }

    /// No timer of the flow's sender (`sender`) or receiver falls due before `t`: its
    /// retransmission or delayed-ACK deadline is off or at `t` or later (a timer at the same
    /// nanosecond as a link event runs after it).
    #[inline]
    pub fn due_by(&self, t: Time, sender: bool) -> bool {
        let deadline = match &self.app {
            App::Tcp { tx, .. } if sender => tx.timer_deadline(),
            App::Tcp { rx, .. } => rx.delack_deadline,
            App::Udp(_) => 0,
        };
        deadline == 0 || deadline >= t
    }
}

/// `Flow::session` of a flow that is not a web response.
pub const NO_SESSION: u32 = u32::MAX;

/// `Sim::timers` slot with no event scheduled.
pub const NO_TIMER: Time = Time::MAX;

/// A flow's TCP timers, numbered as `Sim::timers`' slots and as the index of their `Timer`
/// events: flow `f`'s timer `slot` is [`TimerKey::new`]`(f, slot)` = `TIMER_SLOTS · f + slot`.
pub const TIMER_SLOTS: usize = 2;
/// The retransmission timer's slot.
pub const RTO_SLOT: usize = 0;
/// The delayed-ACK timer's slot.
pub const DELACK_SLOT: usize = 1;

/// A flow's timer as one number (see [`TIMER_SLOTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerKey(pub usize);

impl TimerKey {
    #[inline(always)]
    pub fn new(flow: usize, slot: usize) -> TimerKey {
        TimerKey(TIMER_SLOTS * flow + slot)
    }
    #[inline(always)]
    pub fn flow(self) -> usize {
        self.0 / TIMER_SLOTS
    }
    #[inline(always)]
    pub fn slot(self) -> usize {
        self.0 % TIMER_SLOTS
    }
    /// The most flows whose timers an event index below `max_index` can name.
    pub const fn flows_below(max_index: usize) -> usize {
        max_index / TIMER_SLOTS
    }
}

/// When a flow (or session) starts: fixed, or drawn from its own stream.
pub fn start_time(spec: StartSpec, rng: &mut Rng) -> Time {
    match spec {
        StartSpec::At(t) => t,
        StartSpec::Uniform(lo, hi) => lo + ((hi - lo) as f64 * rng.uniform()).round() as Time,
    }
}

/// A TCP flow's sender and receiver, with its group's shared options (the flow's number, priority
/// and flags are its `Flow`'s, which its segments get as they leave, `Sim::inject_sent`).
pub fn tcp_app(cfg: &Arc<TcpConfig>, prio: u8, limit: u32) -> App {
    App::Tcp { tx: TcpSender::new(Arc::clone(cfg), limit), rx: TcpReceiver::new(cfg, prio) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tcp_flow_is_four_cache_lines() {
        // the flows are one array on huge pages: at 256 bytes each starts a cache line (issue 28)
        assert_eq!(std::mem::size_of::<super::Flow>(), 256);
        assert!(std::mem::size_of::<crate::tcp::TcpSender>() <= 168);
    }
}
