//! `[[pcap]]`: packet traces of chosen links, written as pcap files (`crate::pcap`).
//!
//! ```toml
//! [[pcap]]
//! link = "bottleneck"                       # a link of the network, by name
//! at = ["arrival", "departure", "drop"]     # default ["departure"]
//! start = "10s"                             # optional window (default: the whole run)
//! stop = "20s"
//! ```
//!
//! The window must start before the run ends, and each point is named once.
//!
//! Each point gives one file, `<link>.<point>.pcap`: *arrival* is a packet offered to the link's
//! queue (after the link's random loss), *departure* the start of its transmission, *drop* a
//! packet the link lost or its queue dropped (arrivals refused and queued packets removed alike).

use super::error::{typed, ScenarioError, R};
use super::topology::Topology;
use crate::units::{Dur, OneOrMany};
use aqm::Time;
use serde::Deserialize;

/// One traced link.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureSpec {
    /// The link's index in the topology.
    pub link: u32,
    pub arrivals: bool,
    pub departures: bool,
    pub drops: bool,
    /// Packets seen in `[start, stop)` are written.
    pub start: Time,
    pub stop: Time,
}

/// The points of a link that can be traced, as `at` names them (and the files' suffixes).
pub const POINTS: [&str; 3] = ["arrival", "departure", "drop"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCapture {
    link: String,
    at: Option<OneOrMany<String>>,
    start: Option<Dur>,
    stop: Option<Dur>,
}

/// Read `[[pcap]]` (`value`, if present) against the network.
pub(super) fn parse_captures(value: Option<toml::Value>, topo: &Topology, duration: Time) -> R<Vec<CaptureSpec>> {
    let Some(value) = value else { return Ok(Vec::new()) };
    let toml::Value::Array(items) = value else {
        return Err(ScenarioError::new("pcap", "expected [[pcap]] tables, each with a link (and at, start, stop)"));
    };
    let mut out: Vec<CaptureSpec> = Vec::with_capacity(items.len());
    for (i, v) in items.into_iter().enumerate() {
        let p = format!("pcap[{i}]");
        let r: RawCapture = typed(v, &p)?;
        let Some(link) = topo.links.iter().position(|l| l.name == r.link) else {
            let names: Vec<&str> = topo.links.iter().map(|l| l.name.as_str()).collect();
            let shown = if names.len() > 12 {
                format!("{}, ... ({} in all)", names[..12].join(", "), names.len())
            } else {
                names.join(", ")
            };
            return Err(ScenarioError::new(
                format!("{p}.link"),
                format!("unknown link \"{}\"; links are: {shown}", r.link),
            ));
        };
        if out.iter().any(|c| c.link == link as u32) {
            return Err(ScenarioError::new(
                format!("{p}.link"),
                format!("link \"{}\" is traced twice; give one [[pcap]] per link with all its points in `at`", r.link),
            ));
        }
        let at: Vec<String> = match r.at {
            None => vec!["departure".into()],
            Some(OneOrMany::One(s)) => vec![s],
            Some(OneOrMany::Many(v)) => v,
        };
        if at.is_empty() {
            return Err(ScenarioError::new(
                format!("{p}.at"),
                "an empty list; give one or more of: arrival, departure, drop",
            ));
        }
        let mut seen = [false; 3];
        for (j, a) in at.iter().enumerate() {
            let Some(k) = POINTS.iter().position(|x| x == a) else {
                let key = if at.len() == 1 { format!("{p}.at") } else { format!("{p}.at[{j}]") };
                return Err(ScenarioError::new(
                    key,
                    format!("unknown point \"{a}\"; one of: arrival, departure, drop"),
                ));
            };
            if seen[k] {
                return Err(ScenarioError::new(
                    format!("{p}.at[{j}]"),
                    format!("\"{a}\" is listed twice; give each point once (arrival, departure, drop)"),
                ));
            }
            seen[k] = true;
        }
        let start = r.start.map(|d| d.0).unwrap_or(0);
        let stop = r.stop.map(|d| d.0).unwrap_or(duration);
        if start >= duration {
            return Err(ScenarioError::new(
                format!("{p}.start"),
                format!(
                    "must be before the end of the run (simulation.duration = {} s): the trace would be empty",
                    duration as f64 / aqm::NS_PER_SEC as f64
                ),
            ));
        }
        if stop <= start {
            return Err(ScenarioError::new(format!("{p}.stop"), "must be later than start"));
        }
        out.push(CaptureSpec {
            link: link as u32,
            arrivals: seen[0],
            departures: seen[1],
            drops: seen[2],
            start,
            stop,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    fn err(pcap: &str) -> String {
        let text = format!(
            "[simulation]\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mb/s\"\ndelay = \"10ms\"\nlimit = 10\n\
             [[flows]]\ntransport = \"tcp\"\n[[pcap]]\nlink = \"bottleneck\"\n{pcap}\n"
        );
        crate::load(&text, &[], "t").map(|_| String::new()).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn a_window_after_the_run_and_a_point_twice_are_refused() {
        assert_eq!(
            err("start = \"20s\""),
            "pcap[0].start: must be before the end of the run (simulation.duration = 10 s): the trace would be empty"
        );
        assert!(err("start = \"10s\"\nstop = \"30s\"").starts_with("pcap[0].start: must be before the end"));
        assert_eq!(
            err("at = [\"drop\", \"arrival\", \"drop\"]"),
            "pcap[0].at[2]: \"drop\" is listed twice; give each point once (arrival, departure, drop)"
        );
        // inside the run, or ending after it (the end cuts it): fine
        assert_eq!(err("start = \"9s\"\nstop = \"100s\""), "");
        assert_eq!(err("at = [\"drop\", \"arrival\"]"), "");
    }
}
