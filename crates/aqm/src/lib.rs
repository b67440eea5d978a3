//! # aqm — active queue management disciplines
//!
//! One output queue, one algorithm, no simulator: every discipline in this crate is a plain value that
//! is handed packets (`enqueue`), asked for the next one to transmit (`dequeue`) and told about the
//! link (`on_link_idle`). Time is passed in (integer nanoseconds, [`Time`]), never read from a clock,
//! and every random draw comes from a [`rng::Rng`] stream owned by the caller, so a discipline is
//! deterministic given its inputs.
//!
//! The layering follows Linux's `net/sched` and ns-3's traffic-control module:
//!
//! * [`qdisc::Qdisc`] is the one small trait every algorithm implements (the "ops table").
//!   An algorithm never counts its own statistics; it *reports* each drop with a [`DropReason`]
//!   into the caller's drop buffer.
//! * [`queue::Queue`] wraps any discipline and owns the accounting (arrivals, enqueued, transmitted,
//!   drops by reason) and checks the identities of the specification (aqm.md §1.3).
//! * Shared maths lives in one place: [`red_math`] holds the RED average estimator (aqm.md §1.4)
//!   and the RED drop-probability stage used by RED and by every CHOKe-family scheme.
//! * One algorithm per file: [`droptail`], [`red`].
//! * [`AnyQdisc`] is an enum over all disciplines, giving static dispatch on the hot path, and
//!   [`AqmConfig`] is the validated configuration that builds one.
//!
//! The specification these files implement is `shared/spec/aqm.md`; each file cites its sections.

pub mod droptail;
pub mod fifo;
pub mod packet;
pub mod qdisc;
pub mod queue;
pub mod reason;
pub mod red;
pub mod red_math;
pub mod rng;

pub use packet::Pkt;
pub use qdisc::{Cx, Dropped, Limit, LinkInfo, Qdisc, QueueUnit};
pub use queue::{Queue, QueueStats};
pub use reason::DropReason;

/// Simulation time in integer nanoseconds.
pub type Time = u64;

/// Nanoseconds per second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// An error in a discipline's parameters: which parameter, and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamError {
    /// Name of the offending parameter as it appears in a scenario file.
    pub field: &'static str,
    /// What is wrong and what is allowed.
    pub msg: String,
}

impl ParamError {
    pub fn new(field: &'static str, msg: impl Into<String>) -> Self {
        ParamError { field, msg: msg.into() }
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.msg)
    }
}

/// Validated configuration of a discipline: what a scenario file's `aqm = { type = ... }` becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum AqmConfig {
    DropTail,
    Red(red::RedParams),
}

/// Names accepted by `type = "..."`, with a one-line description, in the order `aqmlab list aqm` prints.
pub const AQM_NAMES: &[(&str, &str)] = &[
    ("droptail", "tail drop when the buffer is full (aqm.md §2)"),
    ("red", "Random Early Detection, Floyd & Jacobson 1993, with gentle, byte mode, ns-2 variant (aqm.md §3)"),
];

impl AqmConfig {
    /// The `type` name of this configuration.
    pub fn name(&self) -> &'static str {
        match self {
            AqmConfig::DropTail => "droptail",
            AqmConfig::Red(_) => "red",
        }
    }

    /// Build the discipline for a link of the given rate with buffer limit `limit`.
    pub fn build<P: Pkt>(&self, link: LinkInfo, limit: Limit) -> AnyQdisc<P> {
        match self {
            AqmConfig::DropTail => AnyQdisc::DropTail(droptail::DropTail::new(limit)),
            AqmConfig::Red(p) => AnyQdisc::Red(red::Red::new(p.clone(), link, limit)),
        }
    }
}

/// Every discipline behind one enum: static dispatch, no boxing on the per-packet path.
pub enum AnyQdisc<P: Pkt> {
    DropTail(droptail::DropTail<P>),
    Red(red::Red<P>),
}

macro_rules! dispatch {
    ($self:expr, $q:ident => $e:expr) => {
        match $self {
            AnyQdisc::DropTail($q) => $e,
            AnyQdisc::Red($q) => $e,
        }
    };
}

impl<P: Pkt> Qdisc<P> for AnyQdisc<P> {
    #[inline]
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        dispatch!(self, q => q.enqueue(pkt, cx))
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        dispatch!(self, q => q.dequeue(cx))
    }
    #[inline]
    fn len(&self) -> usize {
        dispatch!(self, q => q.len())
    }
    #[inline]
    fn bytes(&self) -> u64 {
        dispatch!(self, q => q.bytes())
    }
    #[inline]
    fn on_link_idle(&mut self, now: Time) {
        dispatch!(self, q => q.on_link_idle(now))
    }
    fn state_names(&self) -> &'static [&'static str] {
        dispatch!(self, q => q.state_names())
    }
    fn state(&self, out: &mut [f64]) {
        dispatch!(self, q => q.state(out))
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    /// A minimal packet for unit tests.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct P {
        pub flow: u32,
        pub size: u32,
    }
    impl P {
        pub fn new(flow: u32, size: u32) -> Self {
            P { flow, size }
        }
    }
    impl crate::Pkt for P {
        fn flow(&self) -> u32 {
            self.flow
        }
        fn size(&self) -> u32 {
            self.size
        }
    }
}
