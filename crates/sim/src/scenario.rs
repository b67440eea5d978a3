//! Scenario files: TOML in, a validated [`Scenario`] out, or one [`ScenarioError`] naming the key
//! path, what is wrong and what is allowed. The format is documented in docs/scenarios.md.
//!
//! Loading is two steps: the text is parsed into a TOML table (to which `--set key.path=value`
//! overrides are applied), then deserialised with serde into raw structs that reject unknown keys
//! and wrong types (with the key path tracked by `serde_path_to_error`), and finally checked for
//! ranges and consistency. Tagged sections (`aqm = { type = "red", ... }`) are resolved by hand so
//! that errors inside them still carry the full key path.

use crate::tcp::{CcConfig, Recovery, TcpConfig};
use crate::traffic::cbr::Cbr;
use crate::traffic::dist::Dist;
use crate::traffic::onoff::OnOffSpec;
use crate::traffic::short::ShortSpec;
use crate::traffic::web::WebSpec;
use crate::units::{Bytes, Dur, OneOrMany, Rate};
use aqm::{AqmConfig, Limit, Time, NS_PER_SEC};
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// A user's mistake in a scenario: where (`path`, e.g. `bottleneck.aqm.min_th`) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    pub path: String,
    pub msg: String,
}

impl ScenarioError {
    pub fn new(path: impl Into<String>, msg: impl Into<String>) -> Self {
        ScenarioError { path: path.into(), msg: msg.into() }
    }
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // one line, a key path always (crate::diag)
        let path = if self.path.is_empty() { crate::diag::TOP_LEVEL } else { &self.path };
        write!(f, "{}: {}", crate::diag::escape(path), crate::diag::escape(&self.msg))
    }
}

type R<T> = Result<T, ScenarioError>;

/// What the application of a TCP group does.
#[derive(Debug, Clone, PartialEq)]
pub enum TcpApp {
    /// Bulk transfer (FTP-like): unlimited, or `size` bytes (traffic::bulk).
    Bulk { size: Option<u64> },
    /// Poisson-arriving short connections (traffic::short).
    Short(ShortSpec),
    /// Request/response web sessions (traffic::web).
    Web(WebSpec),
}

/// Transport of a flow group.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Tcp {
        cfg: TcpConfig,
        app: TcpApp,
    },
    /// UDP constant bit rate, or ON/OFF with CBR at the peak rate while ON (traffic::cbr, onoff).
    Udp {
        cbr: Cbr,
        onoff: Option<OnOffSpec>,
    },
}

/// When a flow starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StartSpec {
    At(Time),
    /// Independently uniform in `[lo, hi]` (drawn from the flow's own random stream).
    Uniform(Time, Time),
}

/// A validated flow group: `count` flows with the same settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSpec {
    pub name: String,
    pub count: u32,
    pub transport: Transport,
    pub start: StartSpec,
    pub stop: Option<Time>,
    pub priority: u8,
    pub in_profile: bool,
    pub sender_rate: OneOrMany<Rate>,
    pub sender_delay: OneOrMany<Dur>,
    pub receiver_rate: OneOrMany<Rate>,
    pub receiver_delay: OneOrMany<Dur>,
}

impl GroupSpec {
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Tcp { .. } => "tcp",
            Transport::Udp { .. } => "udp",
        }
    }
    pub fn app_name(&self) -> &'static str {
        match &self.transport {
            Transport::Tcp { app: TcpApp::Bulk { .. }, .. } => "bulk",
            Transport::Tcp { app: TcpApp::Short(_), .. } => "short",
            Transport::Tcp { app: TcpApp::Web(_), .. } => "web",
            Transport::Udp { onoff: None, .. } => "cbr",
            Transport::Udp { onoff: Some(_), .. } => "onoff",
        }
    }
    /// The TCP variant's name, or "none" for UDP.
    pub fn variant_name(&self) -> &'static str {
        match &self.transport {
            Transport::Tcp { cfg, .. } => cfg.variant,
            Transport::Udp { .. } => "none",
        }
    }
    /// Flows that exist from the start (dynamic connections of short/web groups are not counted).
    pub fn static_flows(&self) -> u32 {
        match &self.transport {
            Transport::Tcp { app: TcpApp::Short(_) | TcpApp::Web(_), .. } => 0,
            _ => self.count,
        }
    }
}

/// A validated link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    pub rate_bps: f64,
    pub delay: Time,
    pub limit: Limit,
    pub aqm: AqmConfig,
    pub loss_rate: f64,
}

/// A validated scenario: a dumbbell with one bottleneck R1→R2.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub duration: Time,
    pub warmup: Time,
    pub seed: u64,
    pub sample_interval: Time,
    /// Record the bottleneck queue's composition in the window (M10).
    pub queue_snapshots: bool,
    /// Snapshots at the instants of a Poisson process of rate 1 / `sample_interval` (default; time
    /// averages unbiased, no phase lock with periodic sources) instead of at every sample.
    pub snapshot_poisson: bool,
    /// Period of the per-flow time series (throughput, goodput, cwnd), if requested.
    pub flow_series_interval: Option<Time>,
    pub bottleneck: LinkSpec,
    pub reverse: LinkSpec,
    pub access_limit: u64,
    pub groups: Vec<GroupSpec>,
}

impl Scenario {
    /// Host pairs (each with four access links): one per flow, session or connection slot.
    pub fn n_hosts(&self) -> usize {
        self.groups.iter().map(|g| g.count as usize).sum()
    }
    /// Flows that exist from the start of the run.
    pub fn n_static_flows(&self) -> usize {
        self.groups.iter().map(|g| g.static_flows() as usize).sum()
    }
}

// ---------------------------------------------------------------------------------------------
// raw (as written) structures

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    description: Option<String>,
    topology: Option<String>,
    #[serde(default)]
    simulation: RawSimulation,
    bottleneck: Option<RawLink>,
    reverse: Option<RawLink>,
    #[serde(default)]
    access: RawAccess,
    tcp: Option<RawTcp>,
    #[serde(default)]
    flows: Vec<RawGroup>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSimulation {
    duration: Option<Dur>,
    warmup: Option<Dur>,
    seed: Option<u64>,
    sample_interval: Option<Dur>,
    queue_snapshots: Option<bool>,
    snapshot_times: Option<SnapshotTimes>,
    flow_series_interval: Option<Dur>,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum SnapshotTimes {
    Poisson,
    Periodic,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLink {
    rate: Option<Rate>,
    delay: Option<Dur>,
    limit: Option<u64>,
    queue_unit: Option<UnitName>,
    loss_rate: Option<f64>,
    aqm: Option<toml::Value>,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum UnitName {
    Packets,
    Bytes,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAccess {
    #[serde(default = "default_access_rate")]
    rate: Rate,
    #[serde(default = "default_access_delay")]
    delay: Dur,
    #[serde(default = "default_access_limit")]
    limit: u64,
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
struct RawTcp {
    preset: Option<String>,
    variant: Option<TcpVariantName>,
    recovery: Option<RecoveryName>,
    rto_restart_on_retransmit: Option<bool>,
    mss: Option<u32>,
    ack_size: Option<u32>,
    initial_window: Option<f64>,
    max_window: Option<u32>,
    min_rto: Option<Dur>,
    initial_rto: Option<Dur>,
    max_rto: Option<Dur>,
    max_backoff: Option<u32>,
    clock_granularity: Option<Dur>,
    dupack_threshold: Option<u32>,
    limited_transmit: Option<bool>,
    delayed_ack: Option<bool>,
    delack_count: Option<u32>,
    delack_timeout: Option<Dur>,
    byte_counting: Option<bool>,
    ecn: Option<bool>,
    vegas_alpha: Option<f64>,
    vegas_beta: Option<f64>,
    vegas_gamma: Option<f64>,
    cubic_c: Option<f64>,
    cubic_beta: Option<f64>,
    cubic_fast_convergence: Option<bool>,
    cubic_tcp_friendly: Option<bool>,
}

/// TCP variants this build provides (`aqmlab list tcp`).
pub const TCP_NAMES: &[(&str, &str)] = &[
    ("reno", "TCP Reno: RFC 5681 slow start, congestion avoidance, fast retransmit and fast recovery"),
    ("newreno", "TCP NewReno: Reno with RFC 6582 partial-ACK recovery"),
    ("sack", "TCP SACK: RFC 2018 selective ACKs with RFC 6675 pipe-based loss recovery, Reno congestion control"),
    (
        "vegas",
        "TCP Vegas (Brakmo & Peterson 1995, as ns-2's agent): keeps alpha..beta packets queued, judged from RTTs once per round trip; Reno loss recovery",
    ),
    (
        "cubic",
        "TCP CUBIC (RFC 9438): cubic window growth around the last congestion point, Reno-friendly region, fast convergence; SACK loss recovery",
    ),
];

pub use crate::traffic::TRAFFIC_NAMES;

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum TcpVariantName {
    Reno,
    Newreno,
    Sack,
    Vegas,
    Cubic,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RecoveryName {
    Reno,
    Newreno,
    Sack,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum TransportName {
    Tcp,
    Udp,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: Option<String>,
    count: Option<i64>,
    transport: TransportName,
    app: Option<String>,
    start: Option<toml::Value>,
    stop: Option<Dur>,
    size: Option<toml::Value>,
    rate: Option<Rate>,
    packet_size: Option<u32>,
    on_time: Option<toml::Value>,
    off_time: Option<toml::Value>,
    distribution: Option<String>,
    shape: Option<f64>,
    arrival_rate: Option<f64>,
    flow_duration: Option<toml::Value>,
    response_size: Option<toml::Value>,
    think_time: Option<toml::Value>,
    request_size: Option<u32>,
    priority: Option<i64>,
    in_profile: Option<bool>,
    sender_rate: Option<OneOrMany<Rate>>,
    sender_delay: Option<OneOrMany<Dur>>,
    receiver_rate: Option<OneOrMany<Rate>>,
    receiver_delay: Option<OneOrMany<Dur>>,
    tcp: Option<RawTcp>,
}

// ---------------------------------------------------------------------------------------------

/// Deserialize `value` as `T`, reporting errors with the key path prefixed by `prefix`.
fn typed<T: DeserializeOwned>(value: toml::Value, prefix: &str) -> R<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        ScenarioError::new(crate::diag::error_path(prefix, e.path()), clean_serde_msg(&e.inner().to_string()))
    })
}

fn clean_serde_msg(m: &str) -> String {
    // toml's messages may carry a "TOML parse error" preamble and a trailing "in `key`" line,
    // which repeats the path we print anyway: keep the first line only.
    crate::diag::serde_message(m)
}

/// Reads a discipline's parameters from the rest of its TOML table, with key paths in errors.
struct TomlParams<'a> {
    value: toml::Value,
    path: &'a str,
}

impl aqm::ParamSource for TomlParams<'_> {
    type Error = ScenarioError;
    fn get<T: DeserializeOwned>(self) -> R<T> {
        typed(self.value, self.path)
    }
}

/// Parse an `aqm = { type = "...", ... }` value at `path`.
pub fn parse_aqm(value: toml::Value, path: &str) -> R<AqmConfig> {
    let toml::Value::Table(mut t) = value else {
        return Err(ScenarioError::new(path, "expected a table such as { type = \"red\", min_th = 40, max_th = 80 }"));
    };
    let names: Vec<&str> = aqm::AQM_NAMES.iter().map(|(n, _)| *n).collect();
    let kind = match t.remove("type") {
        Some(toml::Value::String(s)) => s,
        Some(_) => {
            return Err(ScenarioError::new(
                format!("{path}.type"),
                format!("expected a string, one of: {}", names.join(", ")),
            ))
        }
        None => {
            return Err(ScenarioError::new(format!("{path}.type"), format!("missing; one of: {}", names.join(", "))))
        }
    };
    let src = TomlParams { value: toml::Value::Table(t), path };
    let Some(cfg) = AqmConfig::parse(&kind, src)? else {
        return Err(ScenarioError::new(
            format!("{path}.type"),
            format!("unknown AQM \"{kind}\"; available: {} (see `aqmlab list aqm`)", names.join(", ")),
        ));
    };
    cfg.validate().map_err(|e| ScenarioError::new(format!("{path}.{}", e.field), e.msg))?;
    Ok(cfg)
}

fn parse_start(v: toml::Value, path: &str) -> R<StartSpec> {
    if let toml::Value::Table(t) = &v {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct U {
            uniform: [Dur; 2],
        }
        let _ = t;
        let u: U = typed(v, path)?;
        if u.uniform[1] < u.uniform[0] {
            return Err(ScenarioError::new(
                format!("{path}.uniform"),
                "the interval must be [low, high] with low <= high",
            ));
        }
        return Ok(StartSpec::Uniform(u.uniform[0].0, u.uniform[1].0));
    }
    let d: Dur = typed(v, path)
        .map_err(|e| ScenarioError::new(e.path, format!("{}; or a table {{ uniform = [\"0s\", \"1s\"] }}", e.msg)))?;
    Ok(StartSpec::At(d.0))
}

fn merge_tcp(global: &RawTcp, local: Option<&RawTcp>, path: &str) -> R<TcpConfig> {
    let l = local.cloned().unwrap_or_default();
    macro_rules! pick {
        ($f:ident) => {
            l.$f.clone().or(global.$f.clone())
        };
    }
    // the preset gives every default; the variant its congestion control and loss recovery
    let preset = pick!(preset).unwrap_or_else(|| "ns2".to_string());
    let Some(mut d) = crate::tcp::presets::preset(&preset) else {
        let at = if l.preset.is_some() { format!("{path}.preset") } else { "tcp.preset".to_string() };
        let names = crate::tcp::presets::preset_names().join(", ");
        return Err(ScenarioError::new(at, format!("unknown preset \"{preset}\"; one of: {names}")));
    };
    let (name, cc, recovery) = match pick!(variant) {
        None => (d.variant, d.cc, d.recovery),
        Some(TcpVariantName::Reno) => ("reno", CcConfig::Reno, Recovery::Reno),
        Some(TcpVariantName::Newreno) => ("newreno", CcConfig::Reno, Recovery::NewReno),
        Some(TcpVariantName::Sack) => ("sack", CcConfig::Reno, Recovery::Sack),
        // ns-2's Vegas is Reno-based; Linux runs CUBIC with SACK
        Some(TcpVariantName::Vegas) => ("vegas", CcConfig::vegas(), Recovery::Reno),
        Some(TcpVariantName::Cubic) => ("cubic", CcConfig::cubic(), Recovery::Sack),
    };
    d.variant = name;
    d.cc = variant_params(cc, name, global, &l, path)?;
    d.recovery = match pick!(recovery) {
        None => recovery,
        Some(RecoveryName::Reno) => Recovery::Reno,
        Some(RecoveryName::Newreno) => Recovery::NewReno,
        Some(RecoveryName::Sack) => Recovery::Sack,
    };
    let mss = pick!(mss).unwrap_or(d.mss as u32);
    if !(1..=65535).contains(&mss) {
        return Err(ScenarioError::new(format!("{path}.mss"), format!("must be 1..65535 bytes, got {mss}")));
    }
    let ack_size = pick!(ack_size).unwrap_or(d.ack_size as u32);
    if !(1..=65535).contains(&ack_size) {
        return Err(ScenarioError::new(format!("{path}.ack_size"), format!("must be 1..65535 bytes, got {ack_size}")));
    }
    let iw = pick!(initial_window).unwrap_or(d.initial_window);
    if !(iw.is_finite() && iw >= 1.0) {
        return Err(ScenarioError::new(format!("{path}.initial_window"), format!("must be >= 1 segment, got {iw}")));
    }
    let max_window = pick!(max_window).unwrap_or(d.max_window);
    if !(1..=1_000_000).contains(&max_window) {
        return Err(ScenarioError::new(
            format!("{path}.max_window"),
            format!("must be 1..1000000 segments, got {max_window}"),
        ));
    }
    let min_rto = pick!(min_rto).map(|x| x.0).unwrap_or(d.min_rto);
    let initial_rto = pick!(initial_rto).map(|x| x.0).unwrap_or(d.initial_rto);
    let max_rto = pick!(max_rto).map(|x| x.0).unwrap_or(d.max_rto);
    if initial_rto == 0 {
        return Err(ScenarioError::new(format!("{path}.initial_rto"), "must be > 0"));
    }
    if max_rto < min_rto || max_rto == 0 {
        return Err(ScenarioError::new(format!("{path}.max_rto"), "must be > 0 and >= min_rto"));
    }
    let max_backoff_exp = match pick!(max_backoff) {
        None => d.max_backoff_exp,
        Some(b) if b.is_power_of_two() && b.trailing_zeros() <= crate::tcp::presets::MAX_BACKOFF_EXP => {
            b.trailing_zeros()
        }
        Some(b) => {
            return Err(ScenarioError::new(
                format!("{path}.max_backoff"),
                format!("must be a power of two from 1 to 1048576, got {b}"),
            ))
        }
    };
    let granularity = pick!(clock_granularity).map(|x| x.0).unwrap_or(d.granularity);
    let dupthresh = pick!(dupack_threshold).unwrap_or(d.dupack_threshold);
    if dupthresh == 0 {
        return Err(ScenarioError::new(format!("{path}.dupack_threshold"), "must be >= 1"));
    }
    let delack_count = pick!(delack_count).unwrap_or(d.delack_count);
    if delack_count == 0 {
        return Err(ScenarioError::new(format!("{path}.delack_count"), "must be >= 1"));
    }
    let delack_timeout = pick!(delack_timeout).map(|x| x.0).unwrap_or(d.delack_timeout);
    if delack_timeout == 0 {
        return Err(ScenarioError::new(format!("{path}.delack_timeout"), "must be > 0"));
    }
    Ok(TcpConfig {
        variant: d.variant,
        cc: d.cc,
        recovery: d.recovery,
        rto_restart_on_retransmit: pick!(rto_restart_on_retransmit).unwrap_or(d.rto_restart_on_retransmit),
        mss: mss as u16,
        ack_size: ack_size as u16,
        initial_window: iw,
        max_window,
        min_rto,
        initial_rto,
        max_rto,
        max_backoff_exp,
        granularity,
        dupack_threshold: dupthresh,
        // ns-2's Vegas agent has its own ACK processing, without Limited Transmit
        limited_transmit: pick!(limited_transmit).unwrap_or(d.limited_transmit && d.variant != "vegas"),
        delayed_ack: pick!(delayed_ack).unwrap_or(d.delayed_ack),
        delack_count,
        delack_timeout,
        byte_counting: pick!(byte_counting).unwrap_or(d.byte_counting),
        ecn: pick!(ecn).unwrap_or(d.ecn),
    })
}

/// The variant's own parameters (`vegas_*`, `cubic_*`): validated, and an error for a key of
/// another variant. An inherited key (from `[tcp]`) is reported at `tcp.<key>`.
fn variant_params(cc: CcConfig, name: &str, global: &RawTcp, l: &RawTcp, path: &str) -> R<CcConfig> {
    macro_rules! pick {
        ($f:ident) => {
            l.$f.or(global.$f)
        };
    }
    let key_path = |key: &str, local: bool| if local { format!("{path}.{key}") } else { format!("tcp.{key}") };
    let foreign = |key: &str, local: bool, owner: &str| {
        let whose = if local || path == "tcp" { String::new() } else { format!(" (inherited by {path})") };
        ScenarioError::new(
            key_path(key, local),
            format!("applies to tcp.variant = \"{owner}\" only; the variant here is \"{name}\"{whose}"),
        )
    };
    let vegas_keys = [
        ("vegas_alpha", l.vegas_alpha.is_some(), pick!(vegas_alpha).is_some()),
        ("vegas_beta", l.vegas_beta.is_some(), pick!(vegas_beta).is_some()),
        ("vegas_gamma", l.vegas_gamma.is_some(), pick!(vegas_gamma).is_some()),
    ];
    let cubic_keys = [
        ("cubic_c", l.cubic_c.is_some(), pick!(cubic_c).is_some()),
        ("cubic_beta", l.cubic_beta.is_some(), pick!(cubic_beta).is_some()),
        ("cubic_fast_convergence", l.cubic_fast_convergence.is_some(), pick!(cubic_fast_convergence).is_some()),
        ("cubic_tcp_friendly", l.cubic_tcp_friendly.is_some(), pick!(cubic_tcp_friendly).is_some()),
    ];
    let check_foreign = |keys: &[(&str, bool, bool)], owner: &str| -> R<()> {
        for &(key, local, set) in keys {
            if set {
                return Err(foreign(key, local, owner));
            }
        }
        Ok(())
    };
    match cc {
        CcConfig::Reno => {
            check_foreign(&vegas_keys, "vegas")?;
            check_foreign(&cubic_keys, "cubic")?;
            Ok(cc)
        }
        CcConfig::Vegas { alpha, beta, gamma } => {
            check_foreign(&cubic_keys, "cubic")?;
            let alpha = pick!(vegas_alpha).unwrap_or(alpha);
            let beta = pick!(vegas_beta).unwrap_or(beta);
            let gamma = pick!(vegas_gamma).unwrap_or(gamma);
            if !(alpha.is_finite() && alpha >= 0.0) {
                return Err(ScenarioError::new(
                    key_path("vegas_alpha", l.vegas_alpha.is_some()),
                    format!("must be >= 0 packets, got {alpha}"),
                ));
            }
            if !(beta.is_finite() && beta >= alpha) {
                // blame the key the user wrote
                return Err(if pick!(vegas_beta).is_some() {
                    ScenarioError::new(
                        key_path("vegas_beta", l.vegas_beta.is_some()),
                        format!("must be >= vegas_alpha ({alpha}) packets, got {beta}"),
                    )
                } else {
                    ScenarioError::new(
                        key_path("vegas_alpha", l.vegas_alpha.is_some()),
                        format!("must be <= vegas_beta (default {beta}) packets, got {alpha}"),
                    )
                });
            }
            if !(gamma.is_finite() && gamma >= 0.0) {
                return Err(ScenarioError::new(
                    key_path("vegas_gamma", l.vegas_gamma.is_some()),
                    format!("must be >= 0 packets, got {gamma}"),
                ));
            }
            Ok(CcConfig::Vegas { alpha, beta, gamma })
        }
        CcConfig::Cubic { c, beta, fast_convergence, tcp_friendly } => {
            check_foreign(&vegas_keys, "vegas")?;
            let c = pick!(cubic_c).unwrap_or(c);
            let beta = pick!(cubic_beta).unwrap_or(beta);
            if !(c.is_finite() && c > 0.0) {
                return Err(ScenarioError::new(
                    key_path("cubic_c", l.cubic_c.is_some()),
                    format!("must be > 0 segments/s^3, got {c}"),
                ));
            }
            if !(beta > 0.0 && beta < 1.0) {
                return Err(ScenarioError::new(
                    key_path("cubic_beta", l.cubic_beta.is_some()),
                    format!("must be in (0, 1), got {beta}"),
                ));
            }
            Ok(CcConfig::Cubic {
                c,
                beta,
                fast_convergence: pick!(cubic_fast_convergence).unwrap_or(fast_convergence),
                tcp_friendly: pick!(cubic_tcp_friendly).unwrap_or(tcp_friendly),
            })
        }
    }
}

fn link_spec(
    raw: RawLink,
    path: &str,
    default_rate: Option<f64>,
    default_delay: Option<Time>,
    default_limit: Option<u64>,
) -> R<LinkSpec> {
    let rate_bps = match (raw.rate, default_rate) {
        (Some(r), _) => r.0,
        (None, Some(r)) => r,
        (None, None) => return Err(ScenarioError::new(format!("{path}.rate"), "missing; a rate such as \"1Mb/s\"")),
    };
    if rate_bps < 1.0 {
        return Err(ScenarioError::new(format!("{path}.rate"), "must be at least 1 b/s"));
    }
    let delay = match (raw.delay, default_delay) {
        (Some(d), _) => d.0,
        (None, Some(d)) => d,
        (None, None) => {
            return Err(ScenarioError::new(
                format!("{path}.delay"),
                "missing; a one-way propagation delay such as \"10ms\"",
            ))
        }
    };
    let unit = raw.queue_unit.unwrap_or(UnitName::Packets);
    let limit = match (raw.limit, default_limit) {
        (Some(l), _) => l,
        (None, Some(l)) => l,
        (None, None) => {
            return Err(ScenarioError::new(
                format!("{path}.limit"),
                "missing; the buffer size in packets (or bytes with queue_unit = \"bytes\")",
            ))
        }
    };
    if limit == 0 {
        return Err(ScenarioError::new(format!("{path}.limit"), "must be at least 1 (a buffer of 0 holds nothing)"));
    }
    if unit == UnitName::Bytes && limit < 40 {
        return Err(ScenarioError::new(format!("{path}.limit"), format!("{limit} bytes cannot hold a single packet")));
    }
    let loss_rate = raw.loss_rate.unwrap_or(0.0);
    if !(0.0..1.0).contains(&loss_rate) {
        return Err(ScenarioError::new(format!("{path}.loss_rate"), format!("must be in [0, 1), got {loss_rate}")));
    }
    let aqm = match raw.aqm {
        Some(v) => parse_aqm(v, &format!("{path}.aqm"))?,
        None => AqmConfig::DropTail(Default::default()),
    };
    let limit = match unit {
        UnitName::Packets => Limit::packets(limit),
        UnitName::Bytes => Limit::bytes(limit),
    };
    Ok(LinkSpec { rate_bps, delay, limit, aqm, loss_rate })
}

fn check_list<T>(v: &Option<OneOrMany<T>>, path: String) -> R<()>
where
    T: Clone,
{
    if let Some(x) = v {
        if x.is_empty_list() {
            return Err(ScenarioError::new(path, "an empty list; give one value or a non-empty list"));
        }
    }
    Ok(())
}

/// Which quantity a distribution describes.
#[derive(Clone, Copy)]
enum Quantity {
    Seconds,
    Bytes,
}

fn quantity(v: toml::Value, path: &str, q: Quantity) -> R<f64> {
    Ok(match q {
        Quantity::Seconds => typed::<Dur>(v, path)?.0 as f64 / NS_PER_SEC as f64,
        Quantity::Bytes => typed::<Bytes>(v, path)?.0 as f64,
    })
}

/// A distribution: a plain value (constant), `{ exponential = mean }`,
/// `{ pareto = { mean = m, shape = a, max = x } }` or `{ uniform = [lo, hi] }`.
fn parse_dist(v: toml::Value, path: &str, q: Quantity) -> R<Dist> {
    let forms = "a value, { exponential = MEAN }, { pareto = { mean = MEAN, shape = A, max = MAX } } or { uniform = [LOW, HIGH] }";
    let toml::Value::Table(t) = v else {
        let x = quantity(v, path, q).map_err(|e| ScenarioError::new(e.path, format!("{}; or {forms}", e.msg)))?;
        return Ok(Dist::Const(x));
    };
    if t.len() != 1 {
        return Err(ScenarioError::new(path, format!("expected {forms}")));
    }
    let (k, v) = t.into_iter().next().expect("one entry");
    let kp = format!("{path}.{k}");
    let d = match k.as_str() {
        "exponential" => Dist::Exponential { mean: quantity(v, &kp, q)? },
        "uniform" => {
            let toml::Value::Array(a) = v else {
                return Err(ScenarioError::new(kp, "expected [LOW, HIGH]"));
            };
            if a.len() != 2 {
                return Err(ScenarioError::new(kp, "expected [LOW, HIGH]"));
            }
            let mut it = a.into_iter();
            let lo = quantity(it.next().expect("2"), &format!("{kp}[0]"), q)?;
            let hi = quantity(it.next().expect("2"), &format!("{kp}[1]"), q)?;
            if hi < lo {
                return Err(ScenarioError::new(kp, "the interval must be [LOW, HIGH] with LOW <= HIGH"));
            }
            Dist::Uniform { lo, hi }
        }
        "pareto" => {
            let toml::Value::Table(mut pt) = v else {
                return Err(ScenarioError::new(kp, "expected { mean = MEAN, shape = A } (and optionally max = MAX)"));
            };
            let Some(mean) = pt.remove("mean") else {
                return Err(ScenarioError::new(format!("{kp}.mean"), "missing"));
            };
            let mean = quantity(mean, &format!("{kp}.mean"), q)?;
            let shape = match pt.remove("shape") {
                Some(x) => typed::<f64>(x, &format!("{kp}.shape"))?,
                None => return Err(ScenarioError::new(format!("{kp}.shape"), "missing; the tail index, e.g. 1.5")),
            };
            if !(shape > 1.0 && shape.is_finite()) {
                return Err(ScenarioError::new(
                    format!("{kp}.shape"),
                    format!("must be > 1 (a Pareto distribution with shape <= 1 has no mean), got {shape}"),
                ));
            }
            let max = pt.remove("max").map(|x| quantity(x, &format!("{kp}.max"), q)).transpose()?;
            if let Some(extra) = pt.keys().next() {
                return Err(ScenarioError::new(format!("{kp}.{extra}"), "unknown key; expected mean, shape, max"));
            }
            if let Some(m) = max {
                if m < mean * (shape - 1.0) / shape {
                    return Err(ScenarioError::new(format!("{kp}.max"), "is below the distribution's minimum"));
                }
            }
            Dist::Pareto { mean, shape, max }
        }
        _ => return Err(ScenarioError::new(kp, format!("unknown distribution \"{k}\"; expected {forms}"))),
    };
    if d.mean() <= 0.0 {
        return Err(ScenarioError::new(path, "the mean must be > 0"));
    }
    Ok(d)
}

/// Keys that only some applications take: reject the ones `app` does not.
fn only_for(g: &RawGroup, p: &str, app: &str, allowed: &[&str]) -> R<()> {
    let present = [
        ("size", g.size.is_some()),
        ("rate", g.rate.is_some()),
        ("packet_size", g.packet_size.is_some()),
        ("on_time", g.on_time.is_some()),
        ("off_time", g.off_time.is_some()),
        ("distribution", g.distribution.is_some()),
        ("shape", g.shape.is_some()),
        ("arrival_rate", g.arrival_rate.is_some()),
        ("flow_duration", g.flow_duration.is_some()),
        ("response_size", g.response_size.is_some()),
        ("think_time", g.think_time.is_some()),
        ("request_size", g.request_size.is_some()),
        ("tcp", g.tcp.is_some()),
    ];
    for (k, there) in present {
        if there && !allowed.contains(&k) {
            let why = match (k, g.transport) {
                ("tcp", TransportName::Udp) => "TCP options do not apply to a UDP group".to_string(),
                ("rate", TransportName::Tcp) => {
                    "applies to UDP flows; a TCP flow's rate is set by congestion control".into()
                }
                ("packet_size", TransportName::Tcp) => {
                    "applies to UDP flows; a TCP flow's segment size is set by tcp.mss".into()
                }
                ("size", TransportName::Udp) => "applies to TCP transfers; a UDP source runs from start to stop".into(),
                _ => format!("does not apply to app \"{app}\" (it takes: {})", allowed.join(", ")),
            };
            return Err(ScenarioError::new(format!("{p}.{k}"), why));
        }
    }
    Ok(())
}

fn parse_transport(g: &RawGroup, global_tcp: &RawTcp, p: &str) -> R<Transport> {
    match g.transport {
        TransportName::Tcp => {
            let app = g.app.as_deref().unwrap_or("bulk");
            let cfg = merge_tcp(global_tcp, g.tcp.as_ref(), &format!("{p}.tcp"))?;
            let app = match app {
                "bulk" => {
                    only_for(g, p, app, &["size", "tcp"])?;
                    let size = g.size.clone().map(|v| typed::<Bytes>(v, &format!("{p}.size"))).transpose()?;
                    if let Some(Bytes(0)) = size {
                        return Err(ScenarioError::new(
                            format!("{p}.size"),
                            "must be at least 1 byte (omit it for an unlimited transfer)",
                        ));
                    }
                    TcpApp::Bulk { size: size.map(|b| b.0) }
                }
                "short" => {
                    only_for(g, p, app, &["size", "arrival_rate", "flow_duration", "tcp"])?;
                    let Some(rate) = g.arrival_rate else {
                        return Err(ScenarioError::new(
                            format!("{p}.arrival_rate"),
                            "missing; mean connection arrivals per second, e.g. 10",
                        ));
                    };
                    if !(rate > 0.0 && rate.is_finite()) {
                        return Err(ScenarioError::new(
                            format!("{p}.arrival_rate"),
                            format!("must be > 0, got {rate}"),
                        ));
                    }
                    let size =
                        g.size.clone().map(|v| parse_dist(v, &format!("{p}.size"), Quantity::Bytes)).transpose()?;
                    let duration = g
                        .flow_duration
                        .clone()
                        .map(|v| parse_dist(v, &format!("{p}.flow_duration"), Quantity::Seconds))
                        .transpose()?;
                    if size.is_none() && duration.is_none() {
                        return Err(ScenarioError::new(
                            format!("{p}.size"),
                            "a short connection needs a size (bytes) or a flow_duration (seconds), or both",
                        ));
                    }
                    TcpApp::Short(ShortSpec { arrival_rate: rate, size, duration })
                }
                "web" => {
                    only_for(g, p, app, &["response_size", "think_time", "request_size", "tcp"])?;
                    let response = match g.response_size.clone() {
                        Some(v) => parse_dist(v, &format!("{p}.response_size"), Quantity::Bytes)?,
                        None => Dist::Pareto { mean: 12_000.0, shape: 1.2, max: Some(2e6) },
                    };
                    let think = match g.think_time.clone() {
                        Some(v) => parse_dist(v, &format!("{p}.think_time"), Quantity::Seconds)?,
                        None => Dist::Exponential { mean: 1.0 },
                    };
                    let rs = g.request_size.unwrap_or(40);
                    if !(1..=65535).contains(&rs) {
                        return Err(ScenarioError::new(
                            format!("{p}.request_size"),
                            format!("must be 1..65535 bytes, got {rs}"),
                        ));
                    }
                    TcpApp::Web(WebSpec { response, think, request_size: rs as u16 })
                }
                other => {
                    return Err(ScenarioError::new(
                        format!("{p}.app"),
                        format!("unknown TCP application \"{other}\"; available: bulk, short, web"),
                    ))
                }
            };
            Ok(Transport::Tcp { cfg, app })
        }
        TransportName::Udp => {
            let app = g.app.as_deref().unwrap_or("cbr");
            match app {
                "cbr" => only_for(g, p, app, &["rate", "packet_size"])?,
                "onoff" => {
                    only_for(g, p, app, &["rate", "packet_size", "on_time", "off_time", "distribution", "shape"])?
                }
                other => {
                    return Err(ScenarioError::new(
                        format!("{p}.app"),
                        format!("unknown UDP application \"{other}\"; available: cbr, onoff"),
                    ))
                }
            }
            let Some(rate) = g.rate else {
                return Err(ScenarioError::new(
                    format!("{p}.rate"),
                    if app == "cbr" {
                        "missing; a UDP CBR flow needs a sending rate such as \"2Mb/s\""
                    } else {
                        "missing; the peak (ON) rate such as \"2Mb/s\""
                    },
                ));
            };
            let ps = g.packet_size.unwrap_or(1000);
            if !(1..=65535).contains(&ps) {
                return Err(ScenarioError::new(
                    format!("{p}.packet_size"),
                    format!("must be 1..65535 bytes, got {ps}"),
                ));
            }
            let cbr = Cbr { rate_bps: rate.0.round().max(1.0) as u64, size: ps as u16 };
            let onoff = if app == "onoff" {
                let dist = g.distribution.as_deref().unwrap_or("exponential");
                let shape = g.shape.unwrap_or(1.5);
                if dist == "exponential" && g.shape.is_some() {
                    return Err(ScenarioError::new(format!("{p}.shape"), "applies to distribution = \"pareto\""));
                }
                if !(shape > 1.0 && shape.is_finite()) {
                    return Err(ScenarioError::new(
                        format!("{p}.shape"),
                        format!("must be > 1 (a Pareto distribution with shape <= 1 has no mean), got {shape}"),
                    ));
                }
                let mean = |v: &Option<toml::Value>, k: &str| -> R<f64> {
                    let Some(v) = v.clone() else {
                        return Err(ScenarioError::new(
                            format!("{p}.{k}"),
                            "missing; the mean period such as \"0.5s\"",
                        ));
                    };
                    let m = quantity(v, &format!("{p}.{k}"), Quantity::Seconds)?;
                    if m <= 0.0 {
                        return Err(ScenarioError::new(format!("{p}.{k}"), "must be > 0"));
                    }
                    Ok(m)
                };
                let (on, off) = (mean(&g.on_time, "on_time")?, mean(&g.off_time, "off_time")?);
                let mk = |m: f64| match dist {
                    "exponential" => Ok(Dist::Exponential { mean: m }),
                    "pareto" => Ok(Dist::Pareto { mean: m, shape, max: None }),
                    other => Err(ScenarioError::new(
                        format!("{p}.distribution"),
                        format!("unknown distribution \"{other}\"; available: exponential, pareto"),
                    )),
                };
                Some(OnOffSpec { on: mk(on)?, off: mk(off)? })
            } else {
                None
            };
            Ok(Transport::Udp { cbr, onoff })
        }
    }
}

/// Parse TOML text (a scenario file's contents), apply `overrides` (`key.path=value`), validate.
/// `default_name` is used when the file gives no `name` (the file's stem).
pub fn load(text: &str, overrides: &[String], default_name: &str) -> R<Scenario> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let msg = e.message().to_string();
        let loc =
            e.span().map(|s| line_col(text, s.start)).map(|(l, c)| format!("line {l}, column {c}")).unwrap_or_default();
        ScenarioError::new(loc, format!("invalid TOML: {msg}"))
    })?;
    for o in overrides {
        crate::overrides::apply(&mut table, o)?;
    }
    from_table(table, default_name)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|s| s.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

fn from_table(table: toml::Table, default_name: &str) -> R<Scenario> {
    let raw: RawScenario = typed(toml::Value::Table(table), "")?;
    if let Some(t) = &raw.topology {
        if t != "dumbbell" {
            return Err(ScenarioError::new("topology", format!("unknown topology \"{t}\"; available: dumbbell")));
        }
    }
    let sim = raw.simulation;
    let duration = sim.duration.map(|d| d.0).unwrap_or(200 * NS_PER_SEC);
    if duration == 0 {
        return Err(ScenarioError::new("simulation.duration", "must be > 0"));
    }
    let warmup = sim.warmup.map(|d| d.0).unwrap_or(0);
    if warmup >= duration {
        return Err(ScenarioError::new("simulation.warmup", "must be shorter than simulation.duration"));
    }
    let sample_interval = sim.sample_interval.map(|d| d.0).unwrap_or(NS_PER_SEC / 10);
    if sample_interval == 0 {
        return Err(ScenarioError::new("simulation.sample_interval", "must be > 0"));
    }
    if duration / sample_interval > 10_000_000 {
        return Err(ScenarioError::new(
            "simulation.sample_interval",
            "would record more than 10 million samples; use a longer interval",
        ));
    }
    let Some(braw) = raw.bottleneck else {
        return Err(ScenarioError::new("bottleneck", "missing; a table with rate, delay, limit and aqm"));
    };
    let bottleneck = link_spec(braw, "bottleneck", None, None, None)?;
    let reverse = link_spec(
        raw.reverse.unwrap_or_default(),
        "reverse",
        Some(bottleneck.rate_bps),
        Some(bottleneck.delay),
        Some(10_000),
    )?;
    let access = raw.access;
    if access.limit == 0 {
        return Err(ScenarioError::new("access.limit", "must be at least 1"));
    }
    let global_tcp = raw.tcp.unwrap_or_default();
    merge_tcp(&global_tcp, None, "tcp")?;

    if raw.flows.is_empty() {
        return Err(ScenarioError::new("flows", "no flows; add at least one [[flows]] group"));
    }
    let mut groups = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (i, g) in raw.flows.into_iter().enumerate() {
        let p = format!("flows[{i}]");
        let tname = if g.transport == TransportName::Tcp { "tcp" } else { "udp" };
        let name = g.name.clone().unwrap_or_else(|| format!("{tname}{i}"));
        if name.is_empty() {
            return Err(ScenarioError::new(format!("{p}.name"), "must not be empty"));
        }
        if !names.insert(name.clone()) {
            return Err(ScenarioError::new(
                format!("{p}.name"),
                format!("\"{name}\" is used by another group; names must be unique"),
            ));
        }
        let count = g.count.unwrap_or(1);
        if !(1..=10_000_000).contains(&count) {
            return Err(ScenarioError::new(format!("{p}.count"), format!("must be 1..10000000, got {count}")));
        }
        let priority = g.priority.unwrap_or(1);
        if !(1..=255).contains(&priority) {
            return Err(ScenarioError::new(format!("{p}.priority"), format!("must be 1..255, got {priority}")));
        }
        check_list(&g.sender_rate, format!("{p}.sender_rate"))?;
        check_list(&g.sender_delay, format!("{p}.sender_delay"))?;
        check_list(&g.receiver_rate, format!("{p}.receiver_rate"))?;
        check_list(&g.receiver_delay, format!("{p}.receiver_delay"))?;
        let transport = parse_transport(&g, &global_tcp, &p)?;
        let start = match g.start {
            Some(v) => parse_start(v, &format!("{p}.start"))?,
            None => match transport {
                // experiments.md §1.2: TCP flows start uniformly in [0, 1] s, UDP at 0
                Transport::Tcp { .. } => StartSpec::Uniform(0, NS_PER_SEC),
                Transport::Udp { .. } => StartSpec::At(0),
            },
        };
        let latest_start = match start {
            StartSpec::At(t) => t,
            StartSpec::Uniform(_, hi) => hi,
        };
        if let Some(stop) = g.stop {
            if stop.0 <= latest_start {
                return Err(ScenarioError::new(format!("{p}.stop"), "must be later than the start time"));
            }
        }
        groups.push(GroupSpec {
            name,
            count: count as u32,
            transport,
            start,
            stop: g.stop.map(|d| d.0),
            priority: priority as u8,
            in_profile: g.in_profile.unwrap_or(false),
            sender_rate: g.sender_rate.unwrap_or(OneOrMany::One(access.rate)),
            sender_delay: g.sender_delay.unwrap_or(OneOrMany::One(access.delay)),
            receiver_rate: g.receiver_rate.unwrap_or(OneOrMany::One(access.rate)),
            receiver_delay: g.receiver_delay.unwrap_or(OneOrMany::One(access.delay)),
        });
    }
    let total: u64 = groups.iter().map(|g| g.count as u64).sum();
    if total > 10_000_000 {
        return Err(ScenarioError::new("flows", format!("{total} flows in all; at most 10000000 are supported")));
    }
    Ok(Scenario {
        name: raw.name.unwrap_or_else(|| default_name.to_string()),
        description: raw.description.unwrap_or_default(),
        duration,
        warmup,
        seed: sim.seed.unwrap_or(1),
        sample_interval,
        queue_snapshots: sim.queue_snapshots.unwrap_or(false),
        snapshot_poisson: sim.snapshot_times != Some(SnapshotTimes::Periodic),
        flow_series_interval: match sim.flow_series_interval {
            Some(Dur(0)) => return Err(ScenarioError::new("simulation.flow_series_interval", "must be > 0")),
            Some(Dur(d)) if duration / d > 1_000_000 => {
                return Err(ScenarioError::new(
                    "simulation.flow_series_interval",
                    "would record more than a million samples per flow; use a longer interval",
                ))
            }
            Some(Dur(d)) => Some(d),
            None => None,
        },
        bottleneck,
        reverse,
        access_limit: access.limit,
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
        [simulation]
        duration = "10s"
        [bottleneck]
        rate = "1Mb/s"
        delay = "10ms"
        limit = 100
        aqm = { type = "red", min_th = 40, max_th = 80 }
        [[flows]]
        name = "tcp"
        transport = "tcp"
        count = 3
        [[flows]]
        transport = "udp"
        rate = "2Mb/s"
    "#;

    fn err(text: &str) -> ScenarioError {
        load(text, &[], "t").unwrap_err()
    }

    #[test]
    fn loads_a_valid_scenario_with_defaults() {
        let s = load(OK, &[], "t").unwrap();
        assert_eq!(s.duration, 10 * NS_PER_SEC);
        assert_eq!(s.n_hosts(), 4);
        assert_eq!(s.groups[1].name, "udp1");
        assert_eq!(s.reverse.rate_bps, 1e6);
        assert_eq!(s.groups[0].start, StartSpec::Uniform(0, NS_PER_SEC));
        assert!(matches!(s.bottleneck.aqm, AqmConfig::Red(_)));
    }

    #[test]
    fn errors_name_the_key_path() {
        let e = err(&OK.replace("min_th = 40, max_th = 80", "min_th = 80, max_th = 40"));
        assert_eq!(e.path, "bottleneck.aqm.max_th");
        let e = err(&OK.replace("limit = 100", "limit = 0"));
        assert_eq!(e.path, "bottleneck.limit");
        let e = err(&OK.replace("rate = \"1Mb/s\"", "rate = -5"));
        assert_eq!(e.path, "bottleneck.rate");
        assert!(e.msg.contains("positive"), "{}", e.msg);
        let e = err(&OK.replace("count = 3", "count = 3\nbogus = 1"));
        assert_eq!(e.path, "flows[0].bogus");
        assert!(e.msg.contains("unknown field"), "{}", e.msg);
        let e = err(&OK.replace("count = 3", "count = \"three\""));
        assert_eq!(e.path, "flows[0].count");
        let e = err(&OK.replace("min_th = 40,", "min_th = 40, colour = 1,"));
        assert_eq!(e.path, "bottleneck.aqm.colour");
        let e = err(&OK.replace("type = \"red\"", "type = \"purple\""));
        assert_eq!(e.path, "bottleneck.aqm.type");
        let e = err(&OK.replace("rate = \"2Mb/s\"", ""));
        assert_eq!(e.path, "flows[1].rate");
        let e = err(&OK.replace("delay = \"10ms\"", "delay = \"10 parsecs\""));
        assert_eq!(e.path, "bottleneck.delay");
        let e = err("[bottleneck\n");
        assert!(e.to_string().starts_with("line 1, column"), "{e}");
    }

    #[test]
    fn overrides_apply_before_validation() {
        let s = load(OK, &["bottleneck.aqm.max_p=0.25".into(), "flows[0].count=7".into()], "t").unwrap();
        let AqmConfig::Red(p) = &s.bottleneck.aqm else { panic!() };
        assert_eq!(p.max_p, 0.25);
        assert_eq!(s.groups[0].count, 7);
        let e = load(OK, &["bottleneck.aqm.max_p=2".into()], "t").unwrap_err();
        assert_eq!(e.path, "bottleneck.aqm.max_p");
    }
}
