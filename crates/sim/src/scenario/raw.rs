//! The scenario as written: serde structs that reject unknown keys and wrong types. Validation
//! (ranges, consistency, defaults that depend on other keys) happens in the sibling modules.

use crate::units::{Dur, OneOrMany, Rate};
use aqm::NS_PER_SEC;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    /// `"dumbbell"` or a `[topology]` table (scenario::topology).
    pub(super) topology: Option<toml::Value>,
    #[serde(default)]
    pub(super) simulation: RawSimulation,
    pub(super) bottleneck: Option<RawLink>,
    pub(super) reverse: Option<RawLink>,
    #[serde(default)]
    pub(super) access: RawAccess,
    pub(super) tcp: Option<RawTcp>,
    #[serde(default)]
    pub(super) flows: Vec<RawGroup>,
    /// `[[pcap]]`: packet traces of chosen links (scenario::capture).
    pub(super) pcap: Option<toml::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSimulation {
    pub(super) duration: Option<Dur>,
    pub(super) warmup: Option<Dur>,
    pub(super) seed: Option<u64>,
    pub(super) sample_interval: Option<Dur>,
    pub(super) queue_snapshots: Option<bool>,
    pub(super) snapshot_times: Option<SnapshotTimes>,
    pub(super) flow_series_interval: Option<Dur>,
    /// Record every flow's one-way delay and RTT distributions (crate::latency).
    pub(super) latency: Option<bool>,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(super) enum SnapshotTimes {
    Poisson,
    Periodic,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLink {
    pub(super) rate: Option<Rate>,
    pub(super) delay: Option<Dur>,
    pub(super) limit: Option<u64>,
    pub(super) queue_unit: Option<UnitName>,
    pub(super) loss_rate: Option<f64>,
    pub(super) aqm: Option<toml::Value>,
    pub(super) monitor: Option<bool>,
}

impl RawLink {
    /// Keys of `self`, and those of `base` where `self` has none.
    pub(super) fn over(self, base: &RawLink) -> RawLink {
        RawLink {
            rate: self.rate.or(base.rate),
            delay: self.delay.or(base.delay),
            limit: self.limit.or(base.limit),
            queue_unit: self.queue_unit.or(base.queue_unit),
            loss_rate: self.loss_rate.or(base.loss_rate),
            aqm: self.aqm.or_else(|| base.aqm.clone()),
            monitor: self.monitor.or(base.monitor),
        }
    }
}

/// `[topology]`: a builder (`type = "dumbbell" | "parking_lot" | "star"`) or, without `type`, a
/// network given by its routers, hosts and links.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTopology {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) routing: Option<RoutingName>,
    pub(super) routers: Option<Vec<String>>,
    pub(super) hosts: Option<Vec<String>>,
    /// `[[topology.links]]`: the keys of a link (`RawLink`) with `from`, `to`, `name`, `duplex`
    /// and `reverse`, taken apart by hand (scenario::topology) so that errors keep their paths.
    pub(super) links: Option<Vec<toml::Value>>,
    pub(super) hops: Option<i64>,
    pub(super) leaves: Option<i64>,
    pub(super) link: Option<RawLink>,
    pub(super) reverse: Option<RawLink>,
    pub(super) hop: Option<Vec<RawLink>>,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(super) enum RoutingName {
    Hops,
    Delay,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(super) enum UnitName {
    Packets,
    Bytes,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAccess {
    #[serde(default = "default_access_rate")]
    pub(super) rate: Rate,
    #[serde(default = "default_access_delay")]
    pub(super) delay: Dur,
    #[serde(default = "default_access_limit")]
    pub(super) limit: u64,
}

impl Default for RawAccess {
    fn default() -> Self {
        RawAccess { rate: default_access_rate(), delay: default_access_delay(), limit: default_access_limit() }
    }
}

fn default_access_rate() -> Rate {
    Rate(10e6)
}
fn default_access_delay() -> Dur {
    Dur(NS_PER_SEC / 1000)
}
fn default_access_limit() -> u64 {
    10_000
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTcp {
    pub(super) preset: Option<String>,
    pub(super) variant: Option<TcpVariantName>,
    pub(super) recovery: Option<RecoveryName>,
    pub(super) rto_restart_on_retransmit: Option<bool>,
    pub(super) newreno_impatient: Option<bool>,
    pub(super) partial_window_deflation: Option<bool>,
    pub(super) mss: Option<u32>,
    pub(super) ack_size: Option<u32>,
    pub(super) initial_window: Option<f64>,
    pub(super) max_window: Option<u32>,
    pub(super) min_rto: Option<Dur>,
    pub(super) initial_rto: Option<Dur>,
    pub(super) max_rto: Option<Dur>,
    pub(super) max_backoff: Option<u32>,
    pub(super) clock_granularity: Option<Dur>,
    pub(super) dupack_threshold: Option<u32>,
    pub(super) limited_transmit: Option<bool>,
    pub(super) delayed_ack: Option<bool>,
    pub(super) delack_count: Option<u32>,
    pub(super) delack_timeout: Option<Dur>,
    pub(super) byte_counting: Option<bool>,
    pub(super) ecn: Option<bool>,
    pub(super) pacing: Option<bool>,
    pub(super) l4s: Option<bool>,
    pub(super) dctcp_g: Option<f64>,
    pub(super) vegas_alpha: Option<f64>,
    pub(super) vegas_beta: Option<f64>,
    pub(super) vegas_gamma: Option<f64>,
    pub(super) cubic_c: Option<f64>,
    pub(super) cubic_beta: Option<f64>,
    pub(super) cubic_fast_convergence: Option<bool>,
    pub(super) cubic_tcp_friendly: Option<bool>,
    pub(super) rack: Option<bool>,
    pub(super) tlp: Option<bool>,
    pub(super) prr: Option<bool>,
    pub(super) hystart: Option<HystartName>,
    pub(super) rto_estimator: Option<RtoEstimatorName>,
    pub(super) min_rtt_window: Option<Dur>,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) enum HystartName {
    #[serde(rename = "off")]
    Off,
    #[serde(rename = "linux")]
    Linux,
    #[serde(rename = "hystart++")]
    HystartPp,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum RtoEstimatorName {
    Rfc6298,
    Linux,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum TcpVariantName {
    Reno,
    Newreno,
    Sack,
    Vegas,
    Cubic,
    Bbr,
    Dctcp,
    Prague,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum RecoveryName {
    Reno,
    Newreno,
    Sack,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(super) enum TransportName {
    Tcp,
    Udp,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGroup {
    pub(super) name: Option<String>,
    pub(super) count: Option<i64>,
    pub(super) transport: TransportName,
    pub(super) app: Option<String>,
    pub(super) start: Option<toml::Value>,
    pub(super) stop: Option<Dur>,
    pub(super) size: Option<toml::Value>,
    pub(super) rate: Option<Rate>,
    pub(super) packet_size: Option<u32>,
    pub(super) on_time: Option<toml::Value>,
    pub(super) off_time: Option<toml::Value>,
    pub(super) distribution: Option<String>,
    pub(super) shape: Option<f64>,
    pub(super) arrival_rate: Option<f64>,
    pub(super) flow_duration: Option<toml::Value>,
    pub(super) response_size: Option<toml::Value>,
    pub(super) think_time: Option<toml::Value>,
    pub(super) request_size: Option<u32>,
    /// `app = "probe"`: the gap between probes, and whether the receiver echoes each one.
    pub(super) interval: Option<Dur>,
    pub(super) echo: Option<bool>,
    pub(super) priority: Option<i64>,
    pub(super) in_profile: Option<bool>,
    pub(super) sender_rate: Option<OneOrMany<Rate>>,
    pub(super) sender_delay: Option<OneOrMany<Dur>>,
    pub(super) receiver_rate: Option<OneOrMany<Rate>>,
    pub(super) receiver_delay: Option<OneOrMany<Dur>>,
    pub(super) tcp: Option<RawTcp>,
    pub(super) from: Option<OneOrMany<String>>,
    pub(super) to: Option<OneOrMany<String>>,
    pub(super) path: Option<Vec<String>>,
    pub(super) ack_path: Option<Vec<String>>,
    pub(super) per_hop: Option<bool>,
}
