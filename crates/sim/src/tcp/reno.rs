//! TCP Reno (RFC 5681): slow start, congestion avoidance, fast retransmit and fast recovery.
//!
//! Congestion control is the trait's default (AIMD: `cwnd += 1/cwnd` per ACK, halve on loss).
//! Reno's loss recovery, implemented in the sender core as [`super::Recovery::Reno`]: on the
//! third duplicate ACK retransmit the first unacknowledged segment, set `ssthresh = flight / 2`
//! and `cwnd = ssthresh + 3`, add one segment per further duplicate ACK, and leave recovery on the
//! first ACK of new data with `cwnd = ssthresh` — even a partial ACK, so a second loss in the same
//! window needs three new duplicate ACKs (another halving) or a timeout. That is the behaviour the
//! papers' Reno flows have and what NewReno and SACK improve on.
//!
//! As in ns-2's Reno agent (whose `bug_fix_` is on by default) and RFC 6582's "careful" rule, no
//! second fast retransmit is started by duplicate ACKs below `recover` (the highest segment sent at
//! the last fast retransmit or timeout): after a partial ACK ends Reno's recovery, the remaining
//! losses of that window are repaired by a timeout. RFC 5681 itself has no such guard and may
//! halve the window again instead; this is the behaviour the papers' ns-2 Reno flows had.

use super::cc::CongestionControl;

/// Standard (AIMD) congestion control; also used by NewReno and SACK.
#[derive(Debug, Clone, Default)]
pub struct Reno;

impl CongestionControl for Reno {}
