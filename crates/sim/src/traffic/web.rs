//! Web sessions (experiments.md §1.4, the recommended model for [CHOKeD] §4.7 and [WARD] §3.6):
//! each session repeats { a request of `request_size` bytes from the client to the server on the
//! reverse path; a response of `S` bytes over a new TCP connection from the server; a think time
//! `Z` after the response is fully acknowledged }, with `S` Pareto (shape 1.2, mean 12 000 B,
//! capped at 2 MB by default) and `Z` exponential (mean 1 s by default).
//!
//! Each session has its own host pair (client = receiver host, server = sender host) and its own
//! random stream; sessions start at the group's start time (by default uniform in [0, 1] s). Each
//! response is a new connection with its own flow id, so per-connection metrics (completion time,
//! drops) are in the flows table. A lost request is sent again after the connection's initial RTO
//! (3 s by default), as a lost SYN would be.

use super::dist::Dist;
use aqm::rng::Rng;
use aqm::Time;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WebSpec {
    /// Response size (bytes).
    pub response: Dist,
    /// Think time (seconds).
    pub think: Dist,
    /// Request size on the wire (bytes).
    pub request_size: u16,
}

/// One session's state.
#[derive(Debug, Clone)]
pub struct Session {
    pub host: u32,
    pub group: u32,
    rng: Rng,
}

impl Session {
    pub fn new(host: u32, group: u32, rng: Rng) -> Self {
        Session { host, group, rng }
    }
    /// Bytes of the next response.
    pub fn response(&mut self, spec: &WebSpec) -> u64 {
        spec.response.sample(&mut self.rng).round().max(1.0) as u64
    }
    /// The think time after a response.
    pub fn think(&mut self, spec: &WebSpec) -> Time {
        (spec.think.sample(&mut self.rng) * 1e9).round() as Time
    }
}
