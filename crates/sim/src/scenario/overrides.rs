//! `--set key.path=value` overrides, applied to the parsed TOML table before validation.
//!
//! The path is dot-separated; array elements are addressed as `flows[1]` or `flows.1`. The value is
//! read as a TOML value (`0.25`, `true`, `"10ms"`, `[1, 2]`, `{ type = "red", ... }`); anything
//! that is not valid TOML is taken as a bare string, so `--set bottleneck.delay=10ms` works.

use super::error::ScenarioError;

enum Seg {
    Key(String),
    Index(usize),
}

fn parse_path(path: &str) -> Option<Vec<Seg>> {
    let mut segs = Vec::new();
    for part in path.split('.') {
        if part.is_empty() {
            return None;
        }
        let (key, rest) = match part.find('[') {
            Some(i) => part.split_at(i),
            None => (part, ""),
        };
        if !key.is_empty() {
            if key.chars().all(|c| c.is_ascii_digit()) {
                segs.push(Seg::Index(key.parse().ok()?));
            } else {
                segs.push(Seg::Key(key.to_string()));
            }
        }
        let mut rest = rest;
        while !rest.is_empty() {
            let close = rest.find(']')?;
            let idx: usize = rest[1..close].parse().ok()?;
            segs.push(Seg::Index(idx));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return None;
            }
        }
    }
    if segs.is_empty() {
        None
    } else {
        Some(segs)
    }
}

fn parse_value(s: &str) -> toml::Value {
    let doc = format!("v = {s}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| toml::Value::String(s.to_string())),
        Err(_) => toml::Value::String(s.to_string()),
    }
}

/// Apply one `key.path=value` override.
pub fn apply(table: &mut toml::Table, spec: &str) -> Result<(), ScenarioError> {
    let mut root = toml::Value::Table(std::mem::take(table));
    let r = apply_value(&mut root, spec);
    if let toml::Value::Table(t) = root {
        *table = t;
    }
    r
}

fn apply_value(root: &mut toml::Value, spec: &str) -> Result<(), ScenarioError> {
    let err = |m: String| ScenarioError::new(format!("--set {spec}"), m);
    let Some((path, value)) = spec.split_once('=') else {
        return Err(err("expected key.path=value".into()));
    };
    let segs = parse_path(path.trim())
        .ok_or_else(|| err(format!("\"{path}\" is not a key path such as bottleneck.aqm.max_p or flows[0].count")))?;
    let value = parse_value(value.trim());
    let mut cur = root;
    let n = segs.len();
    let mut value = Some(value);
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == n;
        match seg {
            Seg::Key(k) => {
                let toml::Value::Table(t) = cur else {
                    return Err(err(format!("cannot set \"{k}\": the enclosing value is not a table")));
                };
                if last {
                    t.insert(k.clone(), value.take().unwrap());
                    return Ok(());
                }
                let next_is_index = matches!(segs[i + 1], Seg::Index(_));
                cur = t.entry(k.clone()).or_insert_with(|| {
                    if next_is_index {
                        toml::Value::Array(Vec::new())
                    } else {
                        toml::Value::Table(toml::Table::new())
                    }
                });
            }
            Seg::Index(ix) => {
                let toml::Value::Array(a) = cur else {
                    return Err(err(format!("cannot index [{ix}]: the value is not a list")));
                };
                if *ix >= a.len() {
                    return Err(err(format!("index [{ix}] is out of range; the list has {} element(s)", a.len())));
                }
                if last {
                    a[*ix] = value.take().unwrap();
                    return Ok(());
                }
                cur = &mut a[*ix];
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_nested_keys_array_elements_and_bare_strings() {
        let mut t: toml::Table = "[a]\nb = 1\n[[f]]\nx = 1\n[[f]]\nx = 2\n".parse().unwrap();
        apply(&mut t, "a.b=2.5").unwrap();
        apply(&mut t, "a.c.d=true").unwrap();
        apply(&mut t, "f[1].x=7").unwrap();
        apply(&mut t, "f.0.y=10ms").unwrap();
        assert_eq!(t["a"]["b"].as_float(), Some(2.5));
        assert_eq!(t["a"]["c"]["d"].as_bool(), Some(true));
        assert_eq!(t["f"][1]["x"].as_integer(), Some(7));
        assert_eq!(t["f"][0]["y"].as_str(), Some("10ms"));
        assert!(apply(&mut t, "f[5].x=1").is_err());
        assert!(apply(&mut t, "a.b.c=1").is_err());
        assert!(apply(&mut t, "novalue").is_err());
        assert!(apply(&mut t, "a..b=1").is_err());
    }
}
