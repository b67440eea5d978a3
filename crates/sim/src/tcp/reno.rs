//! TCP Reno's congestion control (RFC 5681): slow start, congestion avoidance, halving on loss,
//! one segment after a timeout.
//!
//! It is the congestion-control interface's defaults (AIMD: `cwnd += 1/cwnd` per ACK in
//! congestion avoidance, `ssthresh = flight / 2` on loss; [`super::cc`]), and it is also the
//! congestion control of NewReno and SACK, which differ from Reno in loss recovery only. Reno's
//! fast recovery is [`super::recovery::reno`].

use super::cc::CongestionControl;

/// Standard (AIMD) congestion control; also used by NewReno and SACK.
#[derive(Debug, Clone, Default)]
pub struct Reno;

impl CongestionControl for Reno {}
