//! Durations as scenario files write them, shared with the simulator: a number in seconds, or a
//! string with a unit, `"100ms"`, `"1.5s"`, `"200us"`, `"10ns"`, `"2min"`. Disciplines keep their
//! time parameters in seconds (`f64`); [`secs`] is their serde reader.

use serde::de::{self, Deserializer, Visitor};
use std::fmt;

/// Split `"12.5ms"` into `(12.5, "ms")`; `None` if there is no leading number.
pub fn split_number(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == 'e' || *c == 'E' || *c == '+' || *c == '-'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    Some((v, unit.trim().to_string()))
}

/// Parse a duration string into seconds (finite, >= 0).
pub fn parse_secs(s: &str) -> Result<f64, String> {
    let err = || format!("expected a duration such as \"10ms\" or a number in seconds, got \"{s}\"");
    let (v, unit) = split_number(s).ok_or_else(err)?;
    // divide by exact powers of ten, so that "15us" is the double nearest to 15e-6
    let secs = match unit.as_str() {
        "" | "s" => v,
        "ms" => v / 1e3,
        "us" | "µs" => v / 1e6,
        "ns" => v / 1e9,
        "min" => v * 60.0,
        _ => return Err(err()),
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(format!("must be a finite duration >= 0, got \"{s}\""));
    }
    Ok(secs)
}

struct SecsV;
impl Visitor<'_> for SecsV {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration such as \"10ms\" or a number in seconds")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<f64, E> {
        parse_secs(s).map_err(E::custom)
    }
}

/// serde reader for a time parameter in seconds: a number, or a duration string.
/// (Range checks stay with each scheme's `validate`.)
pub fn secs<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_any(SecsV)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_seconds() {
        assert_eq!(parse_secs("100ms").unwrap(), 0.1);
        assert_eq!(parse_secs("2").unwrap(), 2.0);
        assert_eq!(parse_secs("15 us").unwrap(), 15e-6);
        assert!(parse_secs("-1s").is_err());
        assert!(parse_secs("3 fortnights").is_err());
        #[derive(serde::Deserialize)]
        struct T {
            #[serde(deserialize_with = "secs")]
            t: f64,
        }
        let a: T = serde_json::from_str(r#"{"t": "5ms"}"#).unwrap();
        let b: T = serde_json::from_str(r#"{"t": 0.005}"#).unwrap();
        assert_eq!(a.t, b.t);
    }
}
