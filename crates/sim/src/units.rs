//! Quantities with units as they are written in scenario files.
//!
//! A rate is a string such as `"10Mb/s"`, `"10Mbps"`, `"2.5 Gb/s"`; a duration a string such as
//! `"10ms"`, `"1.5s"`, `"200us"`, `"2min"`, `"1h"`; a size a string such as `"1500B"`, `"10KB"`,
//! `"2MB"`, `"64KiB"`. Prefixes are decimal (1 Mb/s = 10^6 b/s, 1 KB = 1000 B) except the binary
//! KiB/MiB/GiB. A scenario value without its unit (`delay = 5`: seconds to ns-2, milliseconds to a
//! tc user) is refused with the units to give ([`Rate`], [`Dur`], [`Bytes`]); the string parsers
//! here still read a bare number (b/s, seconds, bytes) for callers that say so themselves.

use aqm::{Time, NS_PER_SEC};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// A link or sending rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(pub f64);

/// A duration in integer nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Time);

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub u64);

use aqm::units::split_number;

/// Parse a rate string into bits per second.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let err = || {
        format!(
            "expected a rate such as \"10Mb/s\" (units b/s, kb/s, Mb/s, Gb/s, Tb/s, or bps, kbps, Mbps, Gbps, \
             Tbps), got \"{s}\""
        )
    };
    let (v, unit) = split_number(s).ok_or_else(err)?;
    let mult = match unit.as_str() {
        "" | "b/s" | "bps" => 1.0,
        "kb/s" | "kbps" | "Kb/s" | "Kbps" => 1e3,
        "Mb/s" | "Mbps" | "mbps" => 1e6,
        "Gb/s" | "Gbps" | "gbps" => 1e9,
        "Tb/s" | "Tbps" => 1e12,
        _ => return Err(err()),
    };
    Ok(v * mult)
}

/// Parse a duration string into nanoseconds (the unit table is `aqm::units`, shared with the
/// disciplines' time parameters).
pub fn parse_duration(s: &str) -> Result<Time, String> {
    let secs = aqm::units::parse_secs(s).map_err(|e| {
        if e.starts_with("must be") {
            duration_range_error(&format!("\"{s}\""))
        } else {
            e
        }
    })?;
    secs_like_to_ns(secs).ok_or_else(|| duration_range_error(&format!("\"{s}\"")))
}

/// Parse a size string into bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let err =
        || format!("expected a size such as \"1500B\" or \"10KB\" (units B, KB, MB, GB, KiB, MiB, GiB), got \"{s}\"");
    let (v, unit) = split_number(s).ok_or_else(err)?;
    let mult = match unit.as_str() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(err()),
    };
    let b = v * mult;
    if !(b.is_finite() && b >= 0.0) {
        return Err(format!("must be a size >= 0, got \"{s}\""));
    }
    Ok(b.round() as u64)
}

/// What a duration out of range is told: the allowed range (the clock's, `crate::time`).
fn duration_range_error(got: &str) -> String {
    format!(
        "must be a duration from 0 to {:e} s (the simulation clock's range, about 570 years), got {got}",
        crate::time::MAX_SECS
    )
}

/// Seconds to integer nanoseconds (rounded to nearest), rejecting negative or non-finite values.
pub fn secs_like_to_ns(secs: f64) -> Option<Time> {
    if !(secs.is_finite() && (0.0..crate::time::MAX_SECS).contains(&secs)) {
        return None;
    }
    Some((secs * NS_PER_SEC as f64).round() as Time)
}

/// What a value without its unit is told (`what`: "5ms or 5s").
fn no_unit<E: de::Error>(v: impl fmt::Display, examples: &str) -> E {
    E::custom(format!("{v}: give a unit, e.g. {examples} (a number alone is not read)"))
}

/// Whether a string value is a bare number (no unit).
fn bare(s: &str) -> bool {
    split_number(s).is_some_and(|(_, u)| u.is_empty())
}

const RATE_UNITS: &str = "10Mb/s or 64kb/s";
const TIME_UNITS: &str = "5ms or 5s";
const SIZE_UNITS: &str = "1500B or 10KB";

struct RateV;
impl<'de> Visitor<'de> for RateV {
    type Value = Rate;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a rate with a unit, such as \"10Mb/s\"")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Rate, E> {
        Err(no_unit(v, RATE_UNITS))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Rate, E> {
        Err(no_unit(v, RATE_UNITS))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Rate, E> {
        Err(no_unit(v, RATE_UNITS))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Rate, E> {
        if bare(s) {
            return Err(no_unit(format!("\"{s}\""), RATE_UNITS));
        }
        let v = parse_rate(s).map_err(E::custom)?;
        if !(v.is_finite() && v >= 1.0) {
            return Err(E::custom(format!("a rate must be positive (at least 1 b/s), got \"{s}\"")));
        }
        Ok(Rate(v))
    }
}
impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RateV)
    }
}

struct DurV;
impl<'de> Visitor<'de> for DurV {
    type Value = Dur;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration with a unit, such as \"10ms\"")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
        Err(no_unit(v, TIME_UNITS))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dur, E> {
        Err(no_unit(v, TIME_UNITS))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
        Err(no_unit(v, TIME_UNITS))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Dur, E> {
        if bare(s) {
            return Err(no_unit(format!("\"{s}\""), TIME_UNITS));
        }
        parse_duration(s).map(Dur).map_err(E::custom)
    }
}
impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DurV)
    }
}

struct BytesV;
impl<'de> Visitor<'de> for BytesV {
    type Value = Bytes;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a size with a unit, such as \"1500B\"")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bytes, E> {
        Err(no_unit(v, SIZE_UNITS))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bytes, E> {
        Err(no_unit(v, SIZE_UNITS))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Bytes, E> {
        Err(no_unit(v, SIZE_UNITS))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Bytes, E> {
        if bare(s) {
            return Err(no_unit(format!("\"{s}\""), SIZE_UNITS));
        }
        parse_size(s).map(Bytes).map_err(E::custom)
    }
}
impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BytesV)
    }
}

/// One value, or a list of values assigned round-robin over a group's flows.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    /// The value for the `i`-th flow of a group.
    pub fn get(&self, i: usize) -> T {
        match self {
            OneOrMany::One(v) => v.clone(),
            OneOrMany::Many(v) => v[i % v.len()].clone(),
        }
    }
    pub fn is_empty_list(&self) -> bool {
        matches!(self, OneOrMany::Many(v) if v.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Mb/s").unwrap(), 10e6);
        assert_eq!(parse_rate("2.5 Gbps").unwrap(), 2.5e9);
        assert_eq!(parse_rate("64kb/s").unwrap(), 64e3);
        assert_eq!(parse_rate("1e6").unwrap(), 1e6);
        assert!(parse_rate("10MB/s").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10ms").unwrap(), 10_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration("200us").unwrap(), 200_000);
        assert_eq!(parse_duration("3").unwrap(), 3_000_000_000);
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("10 parsecs").is_err());
    }

    #[test]
    fn scenario_values_need_their_unit() {
        #[derive(Deserialize)]
        struct T {
            #[allow(dead_code)]
            d: Option<Dur>,
            #[allow(dead_code)]
            r: Option<Rate>,
            #[allow(dead_code)]
            b: Option<Bytes>,
        }
        for (text, unit) in [
            ("d = 5", "5ms or 5s"),
            ("d = \"5\"", "5ms or 5s"),
            ("d = 0.1", "5ms"),
            ("r = 1000000", "10Mb/s"),
            ("b = 1500", "1500B"),
        ] {
            let e = toml::from_str::<T>(text).err().unwrap().to_string();
            assert!(e.contains(&format!("give a unit, e.g. {unit}")), "{text}: {e}");
        }
        let ok: T = toml::from_str("d = \"1h\"\nr = \"1Mb/s\"\nb = \"1KB\"").unwrap();
        assert_eq!(ok.d.unwrap().0, 3_600_000_000_000);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1500B").unwrap(), 1500);
        assert_eq!(parse_size("10KB").unwrap(), 10_000);
        assert_eq!(parse_size("2MiB").unwrap(), 2 * 1024 * 1024);
        assert!(parse_size("2Mb").is_err());
    }
}
