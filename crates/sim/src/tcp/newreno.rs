//! TCP NewReno (RFC 6582): Reno's congestion control with a better fast recovery.
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
//! The logic lives in the sender core (`Recovery::NewReno` in `super`); congestion control is
//! [`super::reno::Reno`].

/// The partial-ACK window deflation of RFC 6582 §3.2 step 4: `cwnd - acked + 1`, at least one
/// segment.
pub fn deflate(cwnd: f64, acked: u32) -> f64 {
    (cwnd - acked as f64 + 1.0).max(1.0)
}
