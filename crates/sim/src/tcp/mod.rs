//! TCP: a sender and a receiver, with pluggable congestion control and loss recovery.
//!
//! Read first: RFC 5681 (congestion control: slow start, congestion avoidance, fast retransmit and
//! fast recovery), RFC 6582 (NewReno's partial-ACK handling, the `recover` variable and its guard
//! against a second fast retransmit after a timeout), RFC 6298 (RTO computation, Karn's rule,
//! exponential back-off), RFC 2018 and RFC 6675 (SACK and its loss recovery), RFC 3168 (ECN).
//!
//! A *variant* (`tcp.variant` in a scenario) is a congestion-control algorithm plus a
//! loss-recovery algorithm. The files, bottom up:
//!
//! * [`config`] — the options ([`TcpConfig`], [`CcConfig`], [`Recovery`]); [`presets`] — the
//!   ns-2 releases' and Linux-like defaults;
//! * [`meter`] — how a TCP end reaches its host: [`Cx`] (the time, where sent packets go, the
//!   host's counters) and [`TcpMeter`], the one interface measurement reaches the transport by;
//! * [`cc`] — the congestion-control interface ([`cc::CongestionControl`], with Reno's behaviour
//!   as its defaults); one file per algorithm: [`reno`], [`vegas`], [`cubic`], [`bbr`], [`dctcp`];
//! * [`sack`] — the SACK option: the blocks the receiver reports, the sender's scoreboard;
//! * `rto` — RFC 6298's retransmission timeout; `sender_core` — what a sender's loss recovery and
//!   congestion control work on (sequence numbers, the window, the send loop, the timer);
//! * [`recovery`] — the loss-recovery interface ([`recovery::LossRecovery`]) and one file per
//!   algorithm: [`recovery::reno`], [`recovery::newreno`], [`recovery::sack`];
//! * [`dispatch`] — the enum over the congestion controls ([`Cc`]) and
//!   [`recovery::dispatch`] the one over the recoveries, for static dispatch; no algorithm imports
//!   them;
//! * [`sender`] — [`TcpSender`]: a connection's opening, ACKs and timeouts, driving the above;
//! * [`receiver`] — [`TcpReceiver`]: cumulative ACKs, delayed ACKs, the ECN echo, SACK blocks.
//!
//! Modelling choices (documented in docs/tcp.md):
//! * Sequence numbers count segments; every data segment has the flow's `mss` bytes on the wire
//!   and carries `mss` bytes of payload (the spec ignores TCP/IP header bytes, experiments.md §1.2).
//! * One segment at a time is timed for the RTO estimator (no timestamps option), and no segment
//!   that was retransmitted is timed (Karn). The back-off is cleared by the next valid sample.
//!   Congestion control additionally sees a per-ACK RTT from the echoed send time of the segment
//!   that triggered the ACK (what Vegas and ns-2's timestamp echo use).
//! * The receiver ACKs every segment (ns-2 default sink) unless delayed ACKs are on: then every
//!   `delack_count`-th in-order segment, or when `delack_timeout` expires, and at once on
//!   out-of-order or duplicate segments and on segments that fill a hole (RFC 5681 §4.2).

pub mod bbr;
pub mod board;
pub mod cc;
pub mod config;
pub mod cubic;
pub mod dctcp;
pub mod dispatch;
pub mod hystart;
pub mod meter;
pub mod minmax;
pub mod presets;
pub mod prr;
pub mod rack;
pub mod receiver;
pub mod recovery;
pub mod reno;
mod rto;
pub mod sack;
pub mod sender;
mod sender_core;
pub mod vegas;

pub use config::{CcConfig, Hystart, Recovery, RtoEstimator, TcpConfig};
pub use dispatch::Cc;
pub use meter::{Cx, TcpMeter};
pub use receiver::TcpReceiver;
pub use sender::{Ack, TcpSender};
