//! # sim — aqmlab's packet-level simulator
//!
//! A deterministic discrete-event simulator built for AQM research. Layers, bottom up (each
//! module uses only those above it; docs/architecture.md ("Engine (Rust)") draws them and a packet's path):
//!
//! * **Vocabulary**: [`time`] (the clock's range; sums of times that saturate), [`units`] (rates,
//!   durations and sizes as written in scenario files), [`mem`] (large per-flow arrays on huge
//!   pages), [`diag`] (how a scenario error reads), [`event`] (the pending-event set:
//!   integer-nanosecond time, one `u128` key per event), [`packet`] (the 24-byte `Copy` packet),
//!   [`pcap`] (a packet as a pcap record), [`topology`] (graphs of nodes and one-way links; routes
//!   by hops or delay, explicit paths);
//! * **Transport and traffic**: [`tcp`] (senders and receivers: Reno, NewReno, SACK, Vegas,
//!   CUBIC; its `mod.rs` lists its files), [`traffic`] (bulk, CBR, ON/OFF, short connections, web
//!   sessions);
//! * **The scenario**: [`scenario`] (TOML scenarios, validated, with `--set` overrides: the
//!   network in its general form — dumbbell, parking lot, star, or written out — and every
//!   group's routes), [`resolved`] (a validated scenario written back as a file);
//! * **What the loop runs**: [`net`] (links — an AQM queue from the `aqm` crate, a lazily
//!   advanced transmitter and a propagation pipe, one pending event per link — and the paths of
//!   every host pair, built from the scenario), [`hosts`] (flows and their applications);
//! * **Measurement**: [`monitor`] (a monitor per measured link: queue integral, delay histogram,
//!   per-flow counts, time series, snapshots; the emulator uses it too), [`measure`] (per-flow
//!   counters, which the transport reports to through `tcp::TcpMeter`, drops by hop, Jain's
//!   index), [`latency`] (per-flow one-way delay and RTT histograms), [`results`] (the summary and the tables, computed once at the end);
//! * **The simulation**: [`sim`] (the value that owns a run: the event loop and the packet's path,
//!   the engine's exact shortcuts, the hosts' events, sampling, packet conservation);
//! * **Before a run**: [`budget`] (the memory a scenario will need, from the engine's sizes).
//!
//! Time is integer nanoseconds. Every random draw comes from a stream derived from the seed and
//! the component (`aqm::rng`), so a scenario and a seed determine the results bit for bit.

pub mod budget;
pub mod diag;
pub mod event;
pub mod hosts;
pub mod latency;
pub mod measure;
pub mod mem;
pub mod monitor;
pub mod net;
pub mod packet;
pub mod pcap;
pub mod resolved;
pub mod results;
pub mod scenario;
pub mod sim;
pub mod tcp;
pub mod time;
pub mod topology;
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
