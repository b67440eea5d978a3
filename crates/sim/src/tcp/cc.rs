//! The congestion-control interface: how a variant grows and shrinks the window.
//!
//! The sender core (`super::TcpSender`) owns sequence numbers, the retransmission timer, RTT
//! estimation and loss recovery (Reno, NewReno or SACK, see `super::Recovery`); it calls these
//! hooks at the points where congestion-control algorithms differ. Every hook has a default, which
//! is standard Reno congestion control (RFC 5681): slow start, additive increase of one segment per
//! window, halving on loss, one segment after a timeout. A variant overrides only what it changes,
//! the way a Linux `tcp_congestion_ops` fills only some of its slots.

use aqm::Time;

/// The window a hook may change, in segments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub cwnd: f64,
    pub ssthresh: f64,
}

/// What the sender knows when an ACK arrives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AckInfo {
    pub now: Time,
    /// Segments newly acknowledged by this ACK (0 for a duplicate).
    pub acked: u32,
    /// Segments outstanding before this ACK (`snd_max - snd_una`).
    pub flight: f64,
    /// Round-trip time measured on this ACK from the echoed send time of the segment that triggered
    /// it (a timestamp echo), if the ACK acknowledges new data.
    pub rtt: Option<Time>,
    /// The RFC 6298 smoothed RTT (ns), once there is one.
    pub srtt: Option<f64>,
    /// The cumulative ACK (next sequence number the receiver expects) and the highest sent + 1.
    pub snd_una: u32,
    pub snd_max: u32,
}

/// A congestion-control algorithm. Hooks run outside loss recovery unless stated.
pub trait CongestionControl {
    /// New data was acknowledged (not during loss recovery): grow the window.
    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        reno_increase(w, a.acked);
    }

    /// A duplicate ACK arrived before loss recovery started.
    fn on_dup_ack(&mut self, _w: &mut Window, _a: &AckInfo) {}

    /// Loss detected by duplicate ACKs (or an ECN echo): return the new `ssthresh`. The recovery
    /// algorithm then sets `cwnd` from it (e.g. `ssthresh + 3` for Reno's fast recovery).
    fn on_loss(&mut self, _w: &mut Window, a: &AckInfo) -> f64 {
        (a.flight / 2.0).max(2.0)
    }

    /// The retransmission timer expired with `flight` segments outstanding: return the new
    /// `ssthresh` (the core then sets `cwnd` to one segment).
    fn on_rto(&mut self, _w: &mut Window, flight: f64, _now: Time) -> f64 {
        (flight / 2.0).max(2.0)
    }

    /// Loss recovery ended (the core has set `cwnd = ssthresh`).
    fn on_recovery_exit(&mut self, _w: &mut Window, _now: Time) {}
}

/// RFC 5681 growth: slow start below `ssthresh` (one segment per segment acknowledged, at most
/// `ssthresh` — RFC 5681 §3.1 leaves the crossing ACK to either phase; one segment per ACK as in
/// ns-2 is used), then one segment per window (`cwnd += 1/cwnd` per ACK).
pub fn reno_increase(w: &mut Window, acked: u32) {
    if acked == 0 {
        return;
    }
    if w.cwnd < w.ssthresh {
        w.cwnd += 1.0;
    } else {
        w.cwnd += 1.0 / w.cwnd;
    }
}
