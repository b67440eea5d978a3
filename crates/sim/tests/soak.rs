//! Soak test (not in the default run): long runs of a mixed load over many schemes, with packet
//! conservation checked at intervals and the process's memory watched throughout.
//!
//! ```sh
//! cargo test --release -p sim --test soak -- --ignored --nocapture
//! AQMLAB_SOAK_SECS=20000 cargo test --release -p sim --test soak -- --ignored --nocapture
//! ```
//!
//! Each scheme runs the same scenario (bulk TCP of three variants, short connections, web
//! sessions, UDP CBR and ON/OFF) for `AQMLAB_SOAK_SECS` simulated seconds (default 4000), and
//! for a quarter and a half of that: the engine checks conservation at the end of every run, so
//! the three runs check it at three points of one trajectory (a run is deterministic, so the
//! shorter runs are prefixes of the longer one). During the longest run the resident memory is
//! read every 65,536 events; after the first tenth of the run it may grow only by what the
//! flows table of the connections opened since needs, never with the number of packets.

use std::time::Instant;

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    pages * 4096
}

fn scenario(aqm: &str, secs: f64) -> String {
    format!(
        r#"
[simulation]
duration = "{secs}s"
sample_interval = "10s"
[bottleneck]
rate = "10Mb/s"
delay = "20ms"
limit = 200
aqm = {aqm}
[[flows]]
name = "reno"
transport = "tcp"
count = 20
tcp = {{ variant = "newreno" }}
[[flows]]
name = "sack"
transport = "tcp"
count = 10
tcp = {{ variant = "sack", preset = "modern" }}
[[flows]]
name = "cubic"
transport = "tcp"
count = 10
tcp = {{ variant = "cubic", preset = "modern" }}
[[flows]]
name = "short"
transport = "tcp"
app = "short"
arrival_rate = 2
size = {{ pareto = {{ mean = "20KB", shape = 1.5, max = "2MB" }} }}
count = 5
[[flows]]
name = "web"
transport = "tcp"
app = "web"
count = 5
[[flows]]
name = "cbr"
transport = "udp"
rate = "2Mb/s"
priority = 2
[[flows]]
name = "onoff"
transport = "udp"
app = "onoff"
rate = "4Mb/s"
on_time = "0.5s"
off_time = "1s"
distribution = "pareto"
"#
    )
}

#[test]
#[ignore = "long: run with --ignored (docs/testing.md)"]
fn soak_many_schemes() {
    let secs: f64 = std::env::var("AQMLAB_SOAK_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(4000.0);
    let schemes = [
        r#"{ type = "droptail" }"#,
        r#"{ type = "red", min_th = 20, max_th = 60 }"#,
        r#"{ type = "choke", min_th = 20, max_th = 60 }"#,
        r#"{ type = "chokew", weights = [1, 2] }"#,
        r#"{ type = "raqm", q0 = 50 }"#,
        r#"{ type = "ward" }"#,
        r#"{ type = "fred", min_th = 20, max_th = 60 }"#,
        r#"{ type = "pie" }"#,
        r#"{ type = "fq_codel" }"#,
    ];
    for aqm in schemes {
        for frac in [0.25, 0.5] {
            let r = sim::run_text(&scenario(aqm, secs * frac), &[], None)
                .unwrap_or_else(|e| panic!("{aqm} at {frac} of {secs} s: {e}"));
            assert_eq!(r.summary["engine"]["conservation"], "ok");
        }
        let sc = sim::load(&scenario(aqm, secs), &[], "soak").expect("valid");
        let est = sim::budget::Estimate::of(&sc);
        let started = Instant::now();
        let (mut settled, mut peak) = (None::<u64>, 0u64);
        let mut cb = |t: f64| {
            let rss = resident_bytes();
            peak = peak.max(rss);
            if t > secs / 10.0 && settled.is_none() {
                settled = Some(rss);
            }
            true
        };
        let r = sim::Sim::new(sc, None).expect("build").run(&mut cb).unwrap_or_else(|e| panic!("{aqm}: {e}"));
        assert_eq!(r.summary["engine"]["conservation"], "ok");
        let events = r.summary["engine"]["events"].as_f64().unwrap_or(0.0);
        let flows = r.flows.columns.first().map_or(0, |(_, c)| c.len());
        let settled = settled.unwrap_or(peak);
        // what may grow after the first tenth: the connections opened since (engine state and
        // their rows), with room for the allocator's slack
        let allowance = 4 * flows as u64 * 2048 + (64 << 20);
        println!(
            "{aqm}: {secs} s, {events:.3e} events in {:.1} s, {flows} flows; memory {} MB after a tenth, peak {} MB (budget estimate for a run through Python: {} MB)",
            started.elapsed().as_secs_f64(),
            settled >> 20,
            peak >> 20,
            est.total >> 20,
        );
        assert!(peak <= settled + allowance, "{aqm}: memory grew from {settled} to {peak} bytes");
    }
}
