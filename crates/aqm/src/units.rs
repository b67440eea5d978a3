//! Durations as scenario files write them, shared with the simulator: a string with a unit,
//! `"100ms"`, `"1.5s"`, `"200us"`, `"10ns"`, `"2min"`, `"1h"`. Disciplines keep their time
//! parameters in seconds (`f64`); [`secs`] is their serde reader and [`secs_out`] their writer.
//! A scenario's time parameter must carry its unit: a bare number (`target = 5`) is refused, since
//! a tc or ns-3 user means milliseconds where ns-2 means seconds ([`NO_UNIT`]).

use serde::de::{self, Visitor};
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
    let err = || format!("expected a duration such as \"10ms\" (units ns, us, ms, s, min, h), got \"{s}\"");
    let (v, unit) = split_number(s).ok_or_else(err)?;
    // divide by exact powers of ten, so that "15us" is the double nearest to 15e-6
    let secs = match unit.as_str() {
        "" | "s" => v,
        "ms" => v / 1e3,
        "us" | "µs" => v / 1e6,
        "ns" => v / 1e9,
        "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(err()),
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(format!("must be a finite duration >= 0, got \"{s}\""));
    }
    Ok(secs)
}

/// What a time parameter given as a bare number is told.
pub const NO_UNIT: &str = "give a unit, e.g. 5ms or 5s (a number alone is not read)";

struct SecsV;
impl Visitor<'_> for SecsV {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration with a unit, such as \"10ms\"")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Err(E::custom(format!("{v}: {NO_UNIT}")))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Err(E::custom(format!("{v}: {NO_UNIT}")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Err(E::custom(format!("{v}: {NO_UNIT}")))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<f64, E> {
        if split_number(s).is_some_and(|(_, u)| u.is_empty()) {
            return Err(E::custom(format!("\"{s}\": {NO_UNIT}")));
        }
        parse_secs(s).map_err(E::custom)
    }
}

/// serde's `with` module for a time parameter in seconds (`#[serde(with = "crate::units::secs")]`):
/// read as a duration string with a unit (range checks stay with each scheme's `validate`), written
/// back with a unit (`0.005` -> `"5ms"`) so that a resolved scenario reads back.
pub mod secs {
    use serde::Deserializer;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(super::SecsV)
    }

    pub fn serialize<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::fmt_secs(*v))
    }
}

/// serde's `with` module for an optional time parameter (absent = `None`, given = a duration with a
/// unit; written with `skip_serializing_if = "Option::is_none"`).
pub mod opt_secs {
    use serde::Deserializer;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        super::secs::deserialize(d).map(Some)
    }

    pub fn serialize<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => super::secs::serialize(v, s),
            None => s.serialize_none(),
        }
    }
}

/// `0.005` -> `5ms`, `1.5` -> `1.5s`, `2e-4` -> `200us`: the largest unit the value reaches, and
/// the shortest decimal that reads back as the same number.
pub fn fmt_secs(secs: f64) -> String {
    for (unit, f) in [("s", 1.0), ("ms", 1e3), ("us", 1e6)] {
        let v = secs * f;
        if secs == 0.0 || v.abs() >= 1.0 {
            let text = format!("{v}{unit}");
            if parse_secs(&text) == Ok(secs) {
                return text;
            }
        }
    }
    format!("{}ns", secs * 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_seconds() {
        assert_eq!(parse_secs("100ms").unwrap(), 0.1);
        assert_eq!(parse_secs("2").unwrap(), 2.0);
        assert_eq!(parse_secs("1h").unwrap(), 3600.0);
        assert_eq!(parse_secs("15 us").unwrap(), 15e-6);
        assert!(parse_secs("-1s").is_err());
        assert!(parse_secs("3 fortnights").is_err());
        #[derive(serde::Deserialize)]
        struct T {
            #[serde(with = "secs")]
            t: f64,
        }
        let a: T = serde_json::from_str(r#"{"t": "5ms"}"#).unwrap();
        assert_eq!(a.t, 0.005);
        // a bare number is refused with the units to give, as a number and as a string
        for bare in [r#"{"t": 5}"#, r#"{"t": 0.005}"#, r#"{"t": "5"}"#] {
            let e = serde_json::from_str::<T>(bare).err().unwrap().to_string();
            assert!(e.contains("give a unit, e.g. 5ms or 5s"), "{e}");
        }
        for v in [0.005, 0.1, 1.5, 2e-4, 3e-9, 0.0, 0.03, 7200.0] {
            assert_eq!(parse_secs(&fmt_secs(v)).unwrap(), v, "{}", fmt_secs(v));
        }
        assert_eq!(fmt_secs(0.005), "5ms");
        assert_eq!(fmt_secs(1.5), "1.5s");
    }
}
