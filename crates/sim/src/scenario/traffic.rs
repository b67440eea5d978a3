//! Flow groups (`[[flows]]`): transport, application, start and stop, validated.

use super::dist::{parse_dist, quantity, Quantity};
use super::error::{typed, ScenarioError, R};
use super::raw::{RawGroup, RawTcp, TransportName};
use super::tcp::merge_tcp;
use super::topology::Endpoints;
use crate::tcp::TcpConfig;
use crate::traffic::cbr::Cbr;
use crate::traffic::dist::Dist;
use crate::traffic::onoff::OnOffSpec;
use crate::traffic::short::ShortSpec;
use crate::traffic::web::WebSpec;
use crate::units::{Bytes, Dur, OneOrMany, Rate};
use aqm::{Time, NS_PER_SEC};
use serde::Deserialize;

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
    /// UDP constant bit rate, or ON/OFF with CBR at the peak rate while ON (traffic::cbr, onoff),
    /// or a probe: sparse packets at a constant interval whose delays are recorded (`probe`).
    Udp {
        cbr: Cbr,
        onoff: Option<OnOffSpec>,
        probe: Option<Probe>,
    },
}

/// A probe flow (`app = "probe"`): a packet every `Cbr::interval`, like a VoIP call or a ping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// The receiver sends each probe back on the ACK path (a ping: round-trip times too).
    pub echo: bool,
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
    /// Where each flow runs: flow `i` uses entry `i % endpoints.len()` (scenario::topology).
    pub endpoints: Vec<Endpoints>,
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
            Transport::Udp { probe: Some(_), .. } => "probe",
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
    /// A probe group (`app = "probe"`): its delays are always recorded, and it is not counted as
    /// traffic in the fairness indices.
    pub fn is_probe(&self) -> bool {
        matches!(self.transport, Transport::Udp { probe: Some(_), .. })
    }
    /// Flows that exist from the start (dynamic connections of short/web groups are not counted).
    pub fn static_flows(&self) -> u32 {
        match &self.transport {
            Transport::Tcp { app: TcpApp::Short(_) | TcpApp::Web(_), .. } => 0,
            _ => self.count,
        }
    }
}

pub(super) fn parse_start(v: toml::Value, path: &str) -> R<StartSpec> {
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
        ("interval", g.interval.is_some()),
        ("echo", g.echo.is_some()),
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

pub(super) fn parse_transport(g: &RawGroup, global_tcp: &RawTcp, p: &str) -> R<Transport> {
    match g.transport {
        TransportName::Tcp => {
            let cfg = merge_tcp(global_tcp, g.tcp.as_ref(), &format!("{p}.tcp"))?;
            let app = match g.app.as_deref().unwrap_or("bulk") {
                "bulk" => bulk_app(g, p)?,
                "short" => short_app(g, p)?,
                "web" => web_app(g, p)?,
                other => {
                    return Err(ScenarioError::new(
                        format!("{p}.app"),
                        format!("unknown TCP application \"{other}\"; available: bulk, short, web"),
                    ))
                }
            };
            Ok(Transport::Tcp { cfg, app })
        }
        TransportName::Udp => udp_transport(g, p),
    }
}

/// `app = "bulk"`: an unlimited transfer, or `size` bytes.
fn bulk_app(g: &RawGroup, p: &str) -> R<TcpApp> {
    only_for(g, p, "bulk", &["size", "tcp"])?;
    let size = g.size.clone().map(|v| typed::<Bytes>(v, &format!("{p}.size"))).transpose()?;
    if let Some(Bytes(0)) = size {
        return Err(ScenarioError::new(
            format!("{p}.size"),
            "must be at least 1 byte (omit it for an unlimited transfer)",
        ));
    }
    Ok(TcpApp::Bulk { size: size.map(|b| b.0) })
}

/// `app = "short"`: Poisson-arriving connections of a size, a duration, or both.
fn short_app(g: &RawGroup, p: &str) -> R<TcpApp> {
    only_for(g, p, "short", &["size", "arrival_rate", "flow_duration", "tcp"])?;
    let Some(rate) = g.arrival_rate else {
        return Err(ScenarioError::new(
            format!("{p}.arrival_rate"),
            "missing; mean connection arrivals per second, e.g. 10",
        ));
    };
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(ScenarioError::new(format!("{p}.arrival_rate"), format!("must be > 0, got {rate}")));
    }
    let size = g.size.clone().map(|v| parse_dist(v, &format!("{p}.size"), Quantity::Bytes)).transpose()?;
    let duration =
        g.flow_duration.clone().map(|v| parse_dist(v, &format!("{p}.flow_duration"), Quantity::Seconds)).transpose()?;
    if size.is_none() && duration.is_none() {
        return Err(ScenarioError::new(
            format!("{p}.size"),
            "a short connection needs a size (bytes) or a flow_duration (seconds), or both",
        ));
    }
    Ok(TcpApp::Short(ShortSpec { arrival_rate: rate, size, duration }))
}

/// `app = "web"`: sessions of requests, responses and think times.
fn web_app(g: &RawGroup, p: &str) -> R<TcpApp> {
    only_for(g, p, "web", &["response_size", "think_time", "request_size", "tcp"])?;
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
        return Err(ScenarioError::new(format!("{p}.request_size"), format!("must be 1..65535 bytes, got {rs}")));
    }
    Ok(TcpApp::Web(WebSpec { response, think, request_size: rs as u16 }))
}

/// A UDP group: CBR at `rate`, or ON/OFF with CBR at that peak rate while ON.
fn udp_transport(g: &RawGroup, p: &str) -> R<Transport> {
    let app = g.app.as_deref().unwrap_or("cbr");
    match app {
        "cbr" => only_for(g, p, app, &["rate", "packet_size"])?,
        "onoff" => only_for(g, p, app, &["rate", "packet_size", "on_time", "off_time", "distribution", "shape"])?,
        "probe" => return probe_transport(g, p),
        other => {
            return Err(ScenarioError::new(
                format!("{p}.app"),
                format!("unknown UDP application \"{other}\"; available: cbr, onoff, probe"),
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
        return Err(ScenarioError::new(format!("{p}.packet_size"), format!("must be 1..65535 bytes, got {ps}")));
    }
    let cbr = Cbr { rate_bps: rate.0.round().max(1.0) as u64, size: ps as u16, interval: 0 };
    let onoff = if app == "onoff" { Some(onoff_spec(g, p)?) } else { None };
    Ok(Transport::Udp { cbr, onoff, probe: None })
}

/// `app = "probe"`: a `packet_size` packet (default 200 B) every `interval` (default 20 ms: a
/// G.711 voice call's 160-byte frames with RTP, UDP and IP headers), echoed back unless
/// `echo = false`.
fn probe_transport(g: &RawGroup, p: &str) -> R<Transport> {
    only_for(g, p, "probe", &["packet_size", "interval", "echo"])?;
    let ps = g.packet_size.unwrap_or(200);
    if !(1..=65535).contains(&ps) {
        return Err(ScenarioError::new(format!("{p}.packet_size"), format!("must be 1..65535 bytes, got {ps}")));
    }
    let interval = g.interval.map_or(NS_PER_SEC / 50, |d| d.0);
    if interval == 0 {
        return Err(ScenarioError::new(format!("{p}.interval"), "must be > 0, e.g. \"20ms\""));
    }
    let rate = (ps as f64 * 8.0 * NS_PER_SEC as f64 / interval as f64).round().max(1.0) as u64;
    let cbr = Cbr { rate_bps: rate, size: ps as u16, interval };
    Ok(Transport::Udp { cbr, onoff: None, probe: Some(Probe { echo: g.echo.unwrap_or(true) }) })
}

/// The ON and OFF periods of an ON/OFF source: exponential or Pareto, of the means given.
fn onoff_spec(g: &RawGroup, p: &str) -> R<OnOffSpec> {
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
            return Err(ScenarioError::new(format!("{p}.{k}"), "missing; the mean period such as \"0.5s\""));
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
    Ok(OnOffSpec { on: mk(on)?, off: mk(off)? })
}
