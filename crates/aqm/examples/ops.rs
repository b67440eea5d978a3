//! A fixed number of arrivals, departures and timer firings per discipline, for instruction counts
//! (`valgrind --tool=callgrind`), which unlike wall-clock time do not move with the machine's load:
//!
//! `cargo build --release -p aqm --example ops && valgrind --tool=callgrind target/release/examples/ops [SCHEME ...]`
//!
//! Every discipline of the registry (or those named) runs at queue lengths 10, 1000 and 5000 packets (8 µs, 8 ms and 40 ms of queueing),
//! configured as in `benches/qdisc.rs` where it has thresholds; one arrival every 8 µs and the
//! departures that keep the queue at its length, with the discipline's timer fired on its period.
//! It prints a checksum of what left and what was dropped, so that two builds can be compared for
//! identical behaviour as well as cost.

use aqm::rng::Rng;
use aqm::{AqmConfig, Limit, LinkInfo, ParamSource, Pkt, Qdisc, Queue, AQM_NAMES};

#[derive(Clone, Copy)]
struct P {
    flow: u32,
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
fn config(kind: &str, l: f64) -> AqmConfig {
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

fn main() {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = 200_000;
    for (kind, _) in AQM_NAMES {
        if !names.is_empty() && !names.iter().any(|x| x == kind) {
            continue;
        }
        for l in [10usize, 1000, 5000] {
            let cfg = config(kind, l as f64);
            let limit = Limit::packets(if *kind == "ward" { (l as u64 * 5) / 4 + 1 } else { 4 * l as u64 });
            let mut q = Queue::new(cfg.build::<P>(LinkInfo { rate_bps: 1e9 }, limit), Rng::stream(1, "ops", 0));
            let period = q.disc.timer_period();
            let mut next_timer = period.unwrap_or(u64::MAX);
            let (mut t, mut sum, mut sent) = (0u64, 0u64, 0u64);
            for i in 0..n {
                t += 8000;
                while t >= next_timer {
                    q.on_timer(next_timer);
                    next_timer += period.unwrap_or(u64::MAX);
                }
                q.enqueue(P { flow: (i % 1000) as u32 }, t);
                while q.len() > l {
                    match q.dequeue(t) {
                        Some((p, enq)) => {
                            sent += 1;
                            sum = sum.wrapping_mul(31).wrapping_add(p.flow as u64 ^ enq);
                        }
                        None => break,
                    }
                }
                if q.is_empty() {
                    q.on_link_idle(t);
                }
            }
            println!("{kind:>14} q{l:<5} sent {sent:>7} dropped {:>7} checksum {sum:016x}", n - sent - q.len() as u64);
        }
    }
}
