//! What a scheme's parameters are, for people: `aqmlab list aqm NAME`.
//!
//! Nothing here is written by hand. The names, descriptions, the values an option field takes and
//! each scheme's reference come from the sources (`build.rs` reads the `*Params` structs' `///`
//! comments, serde attributes and the `pub enum`s, and each file's "Reference:" paragraph); the
//! defaults come from serde itself: the parameters are read from a table holding only the required
//! ones and written back, so a default is what a scenario gets when it leaves the key out. The tests
//! below check that the two agree, key for key, for every scheme of the registry.

use crate::{AqmConfig, ParamSource, AQM_NAMES, AQM_PARAMS};

pub(crate) struct RawField {
    pub name: &'static str,
    pub alias: &'static str,
    pub doc: &'static str,
    pub ty: &'static str,
    pub default: bool,
    pub secs: bool,
}

pub(crate) struct RawStruct {
    pub name: &'static str,
    #[allow(dead_code)]
    pub file: &'static str,
    pub reference: &'static str,
    pub fields: &'static [RawField],
}

pub(crate) struct RawEnum {
    pub name: &'static str,
    pub doc: &'static str,
    pub variants: &'static [(&'static str, &'static str)],
}

include!(concat!(env!("OUT_DIR"), "/param_docs.rs"));

/// One parameter of a scheme.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamInfo {
    /// The key in `aqm = { ... }`.
    pub name: String,
    /// Other names the key is read under.
    pub alias: Option<String>,
    /// The unit, when the parameter has one: `duration` (written with a unit, `5ms`), `packets`,
    /// `bytes`, `queue unit` (packets, or bytes in byte mode), `packets/s`; else empty.
    pub unit: String,
    /// The default as a scenario writes it (`"5ms"`, `0.002`, `"packet"`, `true`), or `None` for a
    /// parameter that must be given.
    pub default: Option<String>,
    /// What it is (the source's comment).
    pub doc: String,
    /// The values an option takes, with what each means.
    pub choices: Vec<(String, String)>,
}

/// A scheme: its `type` name, one-line summary, reference and parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemeInfo {
    pub name: String,
    pub summary: String,
    pub reference: String,
    pub params: Vec<ParamInfo>,
}

/// serde reads the parameters from a JSON table (in this crate only here; the simulator reads TOML).
struct Json(serde_json::Value);

impl ParamSource for Json {
    type Error = String;
    fn get<T: serde::de::DeserializeOwned>(self) -> Result<T, String> {
        serde_json::from_value(self.0).map_err(|e| e.to_string())
    }
}

/// A value of the right type for a required field (its value does not matter: only the other
/// fields' defaults are read).
fn placeholder(f: &RawField) -> serde_json::Value {
    use serde_json::json;
    if f.secs {
        return json!("1s");
    }
    match f.ty {
        "f64" | "f32" => json!(1.0),
        "u8" | "u16" | "u32" | "u64" | "usize" | "i32" | "i64" => json!(1),
        "bool" => json!(false),
        t if t.starts_with("Vec<") => json!([1.0]),
        _ => json!("x"),
    }
}

fn unit_of(f: &RawField, doc: &str) -> String {
    if f.secs {
        return "duration".into();
    }
    let d = doc.to_lowercase();
    if (f.name.ends_with("_th") || f.name.contains("_th_") || ["t_min", "t_max", "l_minus", "l_plus"].contains(&f.name))
        && !d.contains("(packets)")
        && !d.contains("probability")
    {
        return "queue unit".into();
    }
    let unit = if d.contains("pkt/s") || d.contains("packets/s") || d.contains("packets per second") {
        "packets/s"
    } else if d.contains("queue unit") {
        "queue unit"
    } else if d.contains("(packets)") || d.contains("in packets") {
        "packets"
    } else if d.contains("(bytes)") || d.contains("in bytes") || d.contains("bytes)") {
        "bytes"
    } else {
        ""
    };
    unit.into()
}

/// A default as a scenario file writes it: durations with a unit, strings quoted.
fn shown(f: &RawField, v: &serde_json::Value) -> String {
    if f.secs {
        if let Some(s) = v.as_f64() {
            return format!("\"{}\"", crate::units::fmt_secs(s));
        }
    }
    match v {
        serde_json::Value::Null => "none".into(),
        serde_json::Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

fn raw_of(kind: &str) -> Option<&'static RawStruct> {
    let ty = AQM_PARAMS.iter().find(|(n, _)| *n == kind)?.1;
    STRUCTS.iter().find(|s| s.name == ty)
}

/// The description of scheme `kind` (a `type = "..."` name), or `None` for an unknown name.
pub fn describe(kind: &str) -> Option<SchemeInfo> {
    let summary = AQM_NAMES.iter().find(|(n, _)| *n == kind)?.1;
    let raw = raw_of(kind)?;
    let mut table = serde_json::Map::new();
    for f in raw.fields.iter().filter(|f| !f.default) {
        table.insert(f.name.to_string(), placeholder(f));
    }
    let written = AqmConfig::parse(kind, Json(serde_json::Value::Object(table)))
        .ok()
        .flatten()
        .and_then(|c| serde_json::to_value(&c).ok())
        .unwrap_or(serde_json::Value::Null);
    let params = raw
        .fields
        .iter()
        .map(|f| {
            let base = f.ty.trim_start_matches("crate::").rsplit("::").next().unwrap_or(f.ty);
            let base = base.trim_start_matches("Option<").trim_end_matches('>');
            let en = ENUMS.iter().find(|e| e.name == base);
            let mut doc = f.doc.to_string();
            if doc.is_empty() {
                // a field of the CHOKe family's RED stage has RED's own description
                doc = STRUCTS
                    .iter()
                    .find(|s| s.name == "RedParams")
                    .and_then(|s| s.fields.iter().find(|r| r.name == f.name))
                    .map(|r| format!("RED stage: {}", r.doc))
                    .unwrap_or_default();
            }
            if doc.is_empty() {
                if let Some(e) = en {
                    doc = e.doc.to_string();
                }
            }
            ParamInfo {
                name: f.name.to_string(),
                alias: (!f.alias.is_empty()).then(|| f.alias.to_string()),
                unit: unit_of(f, &doc),
                default: if f.default {
                    let from_buffer = crate::defaults::FROM_BUFFER.iter().find(|(k, n, _)| *k == kind && *n == f.name);
                    Some(match (written.get(f.name), from_buffer) {
                        (None, Some((_, _, rule))) => rule.to_string(),
                        (v, _) => v.map(|v| shown(f, v)).unwrap_or_else(|| "none".into()),
                    })
                } else {
                    None
                },
                doc,
                choices: en
                    .map(|e| e.variants.iter().map(|(v, d)| (v.to_string(), d.to_string())).collect())
                    .unwrap_or_default(),
            }
        })
        .collect();
    Some(SchemeInfo {
        name: kind.to_string(),
        summary: summary.to_string(),
        reference: raw.reference.to_string(),
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_is_described_key_for_key() {
        for (kind, _) in AQM_NAMES {
            let info = describe(kind).unwrap_or_else(|| panic!("{kind}: no description"));
            let raw = raw_of(kind).unwrap();
            // what serde writes back for the scheme is exactly the documented keys
            let mut table = serde_json::Map::new();
            for f in raw.fields.iter().filter(|f| !f.default) {
                table.insert(f.name.to_string(), placeholder(f));
            }
            let cfg = AqmConfig::parse(kind, Json(serde_json::Value::Object(table)))
                .unwrap_or_else(|e| panic!("{kind}: the required keys alone do not read: {e}"))
                .unwrap();
            let written = serde_json::to_value(&cfg).unwrap();
            let mut keys: Vec<&str> = written.as_object().unwrap().keys().map(|s| s.as_str()).collect();
            // (an optional field left out is not written, nor one that follows the buffer)
            let mut documented: Vec<&str> = info
                .params
                .iter()
                .filter(|p| {
                    let from_buffer = crate::defaults::FROM_BUFFER.iter().any(|(k, n, _)| k == kind && *n == p.name);
                    (p.default.as_deref() != Some("none") && !from_buffer) || written.get(&p.name).is_some()
                })
                .map(|p| p.name.as_str())
                .collect();
            keys.sort();
            documented.sort();
            assert_eq!(keys, documented, "{kind}: documented keys differ from serde's");
            assert!(!info.reference.is_empty() || *kind == "droptail", "{kind}: no Reference: paragraph");
            for p in &info.params {
                assert!(!p.doc.is_empty(), "{kind}.{}: no description (a /// comment on the field)", p.name);
                if p.default.is_none() {
                    assert!(raw.fields.iter().any(|f| f.name == p.name && !f.default), "{kind}.{}", p.name);
                }
            }
        }
    }

    #[test]
    fn defaults_are_what_a_scenario_gets() {
        let codel = describe("codel").unwrap();
        let target = codel.params.iter().find(|p| p.name == "target").unwrap();
        assert_eq!(target.default.as_deref(), Some("\"5ms\""));
        assert_eq!(target.unit, "duration");
        let red = describe("red").unwrap();
        let min_th = red.params.iter().find(|p| p.name == "min_th").unwrap();
        assert_eq!(min_th.default, None); // required
        let w_q = red.params.iter().find(|p| p.name == "w_q").unwrap();
        assert_eq!(w_q.default.as_deref(), Some("0.002"));
        let mode = red.params.iter().find(|p| p.name == "mode").unwrap();
        assert_eq!(mode.choices.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(), ["packet", "byte"]);
        assert!(red.reference.contains("Floyd"));
        assert!(describe("nope").is_none());
        // a default that follows the link's buffer says how
        let chokew = describe("chokew").unwrap();
        let l_plus = chokew.params.iter().find(|p| p.name == "l_plus").unwrap();
        assert_eq!(l_plus.default.as_deref(), Some("limit × 175/500"));
    }
}
