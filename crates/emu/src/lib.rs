//! # emu — real packets through aqmlab's queues
//!
//! The forwarder behind `aqmlab emulate`: IPv4 packets read from TUN devices (one per network
//! namespace of the emulated hosts) cross the scenario's dumbbell — per-host-pair access links,
//! the bottleneck with its queue discipline from `crates/aqm`, the reverse link — and are written
//! to the TUN device of their destination. Links are modelled exactly as in the simulator
//! (serialisation at the link rate, propagation delay, buffer limit), in virtual time driven by
//! the monotonic clock, and the bottleneck is measured by the simulator's own link monitor.
//!
//! Layers, bottom up (each module uses only those above it):
//!
//! * [`packet`] — real IPv4 packets: the header fields read, the packet the disciplines are
//!   handed (`EPkt`), the ECN mark written;
//! * [`link`] — one emulated link: a queue (`aqm::Queue`, which keeps the accounting), a
//!   transmitter and a delay line; the pool of packet buffers;
//! * [`report`] — what a run reports, made from the counters and the bottleneck's monitor
//!   (`sim::monitor::LinkMonitor`, the simulator's);
//! * [`core`] — routing, flows and the packet's path through the links, in virtual time without
//!   I/O;
//! * [`io`] — the I/O loop: file descriptors, the monotonic clock, lateness; [`tun`] — TUN
//!   devices in network namespaces; [`bench`] — the core's speed without I/O.
//!
//! The scenario is resolved by the caller (the Python bindings) into a [`core::Config`]; from the
//! simulator this crate takes only its measurement (`sim::monitor`).

pub mod bench;
pub mod core;
pub mod io;
pub mod link;
pub mod packet;
pub mod report;
pub mod tun;

pub use crate::core::{Config, Core, PairConfig, Report};
pub use crate::io::{monotonic_ns, run, RunError, Timing};
pub use crate::link::LinkConfig;
