//! # sim — aqmlab's packet-level simulator
//!
//! A deterministic discrete-event simulator built for AQM research. Layers, bottom up:
//!
//! * [`units`] — rates, durations and sizes as written in scenario files;
//! * [`event`] — the pending-event set (integer-nanosecond time, one `u128` key per event);
//! * [`packet`] — the 24-byte `Copy` packet;
//! * [`link`] — a link: an AQM queue from the `aqm` crate, a lazily advanced transmitter and a
//!   propagation pipe, with one pending event per link;
//! * [`tcp`] — TCP NewReno sender and receiver;
//! * [`measure`] — per-flow counters, bottleneck queue/delay statistics, Jain's index;
//! * [`scenario`] + [`overrides`] — TOML scenarios, validated, with `--set` overrides;
//! * [`sim`] — the simulation value: builds the dumbbell, runs the event loop, checks packet
//!   conservation, and produces [`results::Results`].
//!
//! Time is integer nanoseconds. Every random draw comes from a stream derived from the seed and
//! the component (`aqm::rng`), so a scenario and a seed determine the results bit for bit.

pub mod budget;
pub mod diag;
pub mod event;
pub mod link;
pub mod measure;
pub mod overrides;
pub mod packet;
pub mod pcap;
pub mod resolved;
pub mod results;
pub mod scenario;
pub mod sim;
pub mod tcp;
pub mod time;
pub mod traffic;
pub mod units;

pub use results::{Column, Results, Table};
pub use scenario::{load, Scenario, ScenarioError};
pub use sim::{Sim, SimError};

/// Load, build and run a scenario in one call (no progress reporting).
pub fn run_text(text: &str, overrides: &[String], seed: Option<u64>) -> Result<Results, String> {
    let sc = load(text, overrides, "scenario").map_err(|e| e.to_string())?;
    let sim = Sim::new(sc, seed).map_err(|e| e.to_string())?;
    sim.run(&mut |_| true).map_err(|e| e.to_string())
}
