//! Distributions of sizes and durations: a plain value, `{ exponential = .. }`, `{ pareto = .. }`,
//! `{ uniform = [.., ..] }`.

use super::error::{typed, ScenarioError, R};
use crate::traffic::dist::Dist;
use crate::units::{Bytes, Dur};
use aqm::NS_PER_SEC;

/// Which quantity a distribution describes.
#[derive(Clone, Copy)]
pub(super) enum Quantity {
    Seconds,
    Bytes,
}

pub(super) fn quantity(v: toml::Value, path: &str, q: Quantity) -> R<f64> {
    Ok(match q {
        Quantity::Seconds => typed::<Dur>(v, path)?.0 as f64 / NS_PER_SEC as f64,
        Quantity::Bytes => typed::<Bytes>(v, path)?.0 as f64,
    })
}

/// A distribution: a plain value (constant), `{ exponential = mean }`,
/// `{ pareto = { mean = m, shape = a, max = x } }` or `{ uniform = [lo, hi] }`.
pub(super) fn parse_dist(v: toml::Value, path: &str, q: Quantity) -> R<Dist> {
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
