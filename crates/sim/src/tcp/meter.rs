//! How a TCP end reaches the rest of the simulation: [`Cx`], the context of one call (the time,
//! where the packets it sends go, and its host's counters), and [`TcpMeter`], the one narrow
//! interface through which measurement reaches the transport.
//!
//! The counters belong to the host (`crate::measure::FlowCounters` implements [`TcpMeter`]); the
//! transport only says what happened — a segment sent, an RTT sample, a fast retransmit — and
//! never reads them back, so nothing it does depends on measurement.

use crate::packet::Packet;
use aqm::Time;

/// What a TCP sender or receiver reports to its host's measurement.
pub trait TcpMeter {
    /// A data segment left the sender, for the first time or again (`retransmission`). (Every
    /// segment is the connection's MSS, so the host counts bytes as segments times that.)
    fn segment_sent(&mut self, retransmission: bool);
    /// The retransmission-timer estimator took an RTT sample of `ns` (RFC 6298).
    fn rtt_sample(&mut self, ns: f64);
    /// Loss recovery began with a fast retransmit.
    fn fast_retransmit(&mut self);
    /// The retransmission timer expired with data outstanding, at `now`: a recovery from
    /// timeouts is under way until [`TcpMeter::rto_recovered`].
    fn timeout(&mut self, now: Time);
    /// The data outstanding at the last timeout is all acknowledged (`now`): the recovery from
    /// timeouts that began at the first of them is over.
    fn rto_recovered(&mut self, now: Time);
    /// The sender halved its window on an ECN-Echo (RFC 3168).
    fn ecn_reduction(&mut self);
    /// A data segment reached the receiver (duplicates included), with the CE mark or not.
    fn segment_received(&mut self, ce: bool);
    /// ... and it was new: segment `seq` had not been received before.
    fn new_segment_received(&mut self, seq: u32);
}

/// The context of one call into a TCP end: the time, where the packets it sends go (in order),
/// and its host's counters.
pub struct Cx<'a, M: TcpMeter> {
    pub now: Time,
    pub out: &'a mut Vec<Packet>,
    pub meter: &'a mut M,
}

impl<'a, M: TcpMeter> Cx<'a, M> {
    pub fn new(now: Time, out: &'a mut Vec<Packet>, meter: &'a mut M) -> Self {
        Cx { now, out, meter }
    }
}
