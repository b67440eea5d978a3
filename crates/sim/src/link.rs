//! A point-to-point link: an output queue (any AQM), a transmitter and a propagation pipe.
//!
//! Speed comes from keeping at most **one pending event per link**: packets whose transmission
//! has started sit in `pipe`, a FIFO of `(arrival time at the far end, packet)`, and only its head
//! is scheduled. The transmitter is advanced *lazily*: whenever anything touches the link (an
//! arrival, its pipe event, a measurement sample), [`Link::advance`] first starts, in time order,
//! every transmission that began since the last visit, calling the AQM's `dequeue` with the exact
//! start time. Because only arrivals, departures and samples read or change a link's state, and
//! each of them advances the link first, this is exact, not an approximation: it gives the same
//! result as one event per transmission end, with a fraction of the events. Invariant: while the
//! queue holds a packet, the packet in service is in the pipe, so the link has an event pending.

use crate::packet::Packet;
use aqm::rng::Rng;
use aqm::{Queue, Time, NS_PER_SEC};
use std::collections::VecDeque;

pub struct Link {
    pub rate_bps: u64,
    pub delay: Time,
    pub queue: Queue<Packet>,
    /// When the transmitter becomes free (end of the current or last transmission).
    pub free_at: Time,
    /// The AQM was told that the link went idle at `free_at`.
    pub idle_reported: bool,
    /// Packets in transmission or propagation: (arrival at the far end, packet).
    pub pipe: VecDeque<(Time, Packet)>,
    /// An event for the pipe head is in the event set.
    pub pending: bool,
    /// Random loss applied to arriving packets before the queue (0 = none).
    pub loss_rate: f64,
    pub loss_rng: Option<Rng>,
}

/// What happened to a packet offered to a link's queue or taken from it (for measurement).
pub struct Departure {
    pub start: Time,
    pub enqueued: Time,
    pub pkt: Packet,
}

impl Link {
    pub fn new(rate_bps: f64, delay: Time, queue: Queue<Packet>, loss_rate: f64, loss_rng: Option<Rng>) -> Self {
        Link {
            rate_bps: rate_bps.round().max(1.0) as u64,
            delay,
            queue,
            free_at: 0,
            idle_reported: true,
            pipe: VecDeque::new(),
            pending: false,
            loss_rate,
            loss_rng,
        }
    }

    /// Serialisation time of `size` bytes, rounded up to whole nanoseconds.
    #[inline]
    pub fn tx_time(&self, size: u16) -> Time {
        (size as u64 * 8 * NS_PER_SEC).div_ceil(self.rate_bps)
    }

    /// Packets held by the link (waiting or in flight).
    pub fn in_flight(&self) -> usize {
        self.queue.len() + self.pipe.len()
    }
}
