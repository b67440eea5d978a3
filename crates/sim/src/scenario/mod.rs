//! Scenario files: TOML in, a validated [`Scenario`] out, or one [`ScenarioError`] naming the key
//! path, what is wrong and what is allowed. The format is documented in docs/scenarios.md.
//!
//! Loading is two steps: the text is parsed into a TOML table (to which `--set key.path=value`
//! overrides are applied, [`overrides`]), then deserialised with serde into raw structs ([`raw`])
//! that reject unknown keys and wrong types (with the key path tracked by `serde_path_to_error`),
//! and finally checked for ranges and consistency. Tagged sections (`aqm = { type = "red", ... }`)
//! are resolved by hand so that errors inside them still carry the full key path.
//!
//! Modules, each importing only those listed before it: [`error`] (the error type and the serde
//! bridge), [`overrides`], [`raw`], [`dist`], [`tcp`], [`link`], [`topology`] (the network and the routes), [`traffic`] (flow groups), [`load`](mod@load).

pub mod capture;
pub mod dist;
pub mod error;
pub mod link;
pub mod load;
pub mod overrides;
pub mod raw;
pub mod tcp;
pub mod topology;
pub mod traffic;

pub use crate::traffic::TRAFFIC_NAMES;
pub use capture::CaptureSpec;
pub use error::ScenarioError;
pub use link::{parse_aqm, LinkSpec};
pub use load::{load, Scenario};
pub use tcp::TCP_NAMES;
pub use topology::{Endpoints, NodeKind, Shape, TopoLink, Topology};
pub use traffic::{GroupSpec, Probe, StartSpec, TcpApp, Transport};
