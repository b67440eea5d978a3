//! What `benches/qdisc.rs` and `examples/ops.rs` share: a packet of 1000 bytes, parameters read from
//! JSON, and each scheme configured so that its mechanism is active at a queue length `l`.

use aqm::{AqmConfig, ParamSource, Pkt};

#[derive(Clone, Copy)]
pub struct P {
    pub flow: u32,
}
impl Pkt for P {
    fn flow(&self) -> u32 {
        self.flow
    }
    fn size(&self) -> u32 {
        1000
    }
}

struct J(serde_json::Value);
impl ParamSource for J {
    type Error = String;
    fn get<T: serde::de::DeserializeOwned>(self) -> Result<T, String> {
        serde_json::from_value(self.0).map_err(|e| e.to_string())
    }
}

/// The scheme's parameters at queue length `l`: thresholds around it where the scheme has them.
pub fn config(kind: &str, l: f64) -> AqmConfig {
    let red = format!(r#"{{"min_th": {}, "max_th": {}, "max_p": 0.02}}"#, l / 2.0, 2.0 * l);
    let json = match kind {
        "chokew" => format!(
            r#"{{"l_th": {}, "l_minus": {}, "l_plus": {}, "p0_init": 1.0, "p_plus": 0.0, "p_minus": 0.0}}"#,
            l / 4.0,
            l / 2.0,
            2.0 * l
        ),
        "choked" => format!(r#"{{"t_min": {}, "t_max": {}}}"#, l / 2.0, 2.0 * l),
        "wfq" => r#"{"weights": [1.0]}"#.to_string(),
        _ => "{}".to_string(),
    };
    let parse = |json: &str| AqmConfig::parse(kind, J(serde_json::from_str(json).unwrap())).ok().flatten();
    let cfg = parse(&json).or_else(|| parse(&red)).unwrap_or_else(|| panic!("{kind}: no configuration"));
    cfg.validate().unwrap_or_else(|e| panic!("{kind}: {e}"));
    cfg
}
