//! # emu — real packets through aqmlab's queues
//!
//! The forwarder behind `aqmlab emulate`: IPv4 packets read from TUN devices (one per network
//! namespace of the emulated hosts) cross the scenario's dumbbell — per-host-pair access links,
//! the bottleneck with its queue discipline from `crates/aqm`, the reverse link — and are written
//! to the TUN device of their destination. Links are modelled exactly as in the simulator
//! (serialisation at the link rate, propagation delay, buffer limit; see [`link`]), in virtual
//! time driven by the monotonic clock ([`io`]), and the forwarder measures what the simulator
//! measures at the bottleneck ([`core`]).
//!
//! This crate depends on `aqm` only: the scenario is resolved by the caller (the Python
//! bindings) into a [`core::Config`].

pub mod bench;
pub mod core;
pub mod io;
pub mod link;
pub mod packet;
pub mod tun;

pub use crate::core::{Config, Core, PairConfig, Report};
pub use crate::io::{monotonic_ns, run, RunError, Timing};
pub use crate::link::LinkConfig;
