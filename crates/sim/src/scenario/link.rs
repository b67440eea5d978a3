//! Links as written in a scenario (`[bottleneck]`, `[reverse]`): rate, delay, buffer, loss and the
//! queue discipline (`aqm = { type = "...", ... }`, any scheme of the `aqm` crate).

use super::error::{typed, ScenarioError, R};
use super::raw::{RawLink, UnitName};
use aqm::{AqmConfig, Limit, Time};
use serde::de::DeserializeOwned;

/// A validated link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    pub rate_bps: f64,
    pub delay: Time,
    pub limit: Limit,
    pub aqm: AqmConfig,
    pub loss_rate: f64,
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
    let Some(cfg) = AqmConfig::parse(&kind, src).map_err(|e| with_required(e, &kind))? else {
        return Err(ScenarioError::new(
            format!("{path}.type"),
            format!("unknown AQM \"{kind}\"; available: {} (see `aqmlab list aqm`)", names.join(", ")),
        ));
    };
    cfg.validate().map_err(|e| ScenarioError::new(format!("{path}.{}", e.field), e.msg))?;
    Ok(cfg)
}

/// A missing parameter's error names every parameter the discipline requires, so that one
/// correction is enough (`missing field `max_th``: RED requires min_th and max_th).
fn with_required(mut e: ScenarioError, kind: &str) -> ScenarioError {
    if e.msg.starts_with("missing field") {
        let required: Vec<String> = aqm::describe::describe(kind)
            .map(|d| d.params.into_iter().filter(|p| p.default.is_none()).map(|p| p.name).collect())
            .unwrap_or_default();
        if !required.is_empty() {
            e.msg = format!(
                "{}; type = \"{kind}\" requires {} (`aqmlab list aqm {kind}` lists its parameters)",
                e.msg,
                required.join(", ")
            );
        }
    }
    e
}

pub(super) fn link_spec(
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
    let mut aqm = match raw.aqm {
        Some(v) => parse_aqm(v, &format!("{path}.aqm"))?,
        None => AqmConfig::DropTail(Default::default()),
    };
    let limit = match unit {
        UnitName::Packets => Limit::packets(limit),
        UnitName::Bytes => Limit::bytes(limit),
    };
    // parameters that follow the buffer where left out (CHOKeW's and RIO's thresholds), set now
    // that the buffer is known
    aqm.fill_for_buffer(limit).map_err(|e| ScenarioError::new(format!("{path}.aqm.{}", e.field), e.msg))?;
    // a discipline that can never act with this buffer is a DropTail in disguise: refused
    if let Some(e) = aqm.inert(limit, rate_bps) {
        return Err(ScenarioError::new(format!("{path}.aqm.{}", e.field), e.msg));
    }
    Ok(LinkSpec { rate_bps, delay, limit, aqm, loss_rate })
}
