//! Every discipline acts with its defaults on a small and on a large buffer (issue 40: no scheme
//! that silently runs as a DropTail). For each scheme of the registry, `{ type = NAME }` (with the
//! parameters a scheme requires given inside the buffer: RED's and its family's `min_th = B/4`,
//! `max_th = 3B/4`; WFQ's two weights) runs on a congested dumbbell with a 100-packet buffer at
//! 1 Mb/s and a 1000-packet buffer at 10 Mb/s: 20 TCP flows and a UDP flow at a fifth of the
//! link's rate (priority 2, so that WFQ has two levels to serve), 30 s. (With a UDP flow at the
//! whole link's rate SRED sees one dominant flow and, as designed, its estimate of the number of
//! flows scales its drops down to almost none: it is a scheme for many flows.)
//!
//! "Acts": a dropper's bottleneck drops or marks packets for a reason other than a full buffer
//! (early, forced, matched drops, CE marks). The schedulers that drop only when the buffer is full
//! ([`SCHEDULERS`]: per-flow DRR, aggregate WFQ, HHF) act by their order of service instead, which
//! is measured against DropTail on the same scenario and seed: a discipline that neither drops
//! early nor reorders sends exactly the packets DropTail does, and its results are DropTail's bit
//! for bit (each component draws from its own random stream), so a scheduler acts when the flows'
//! delivered packets differ from DropTail's.

use serde_json::Value;

fn scenario(aqm: &str, limit: u64, rate: &str, udp: &str) -> String {
    format!(
        r#"
        [simulation]
        duration = "30s"
        warmup = "5s"
        [bottleneck]
        rate = "{rate}"
        delay = "10ms"
        limit = {limit}
        aqm = {aqm}
        [[flows]]
        name = "tcp"
        transport = "tcp"
        count = 20
        start = {{ uniform = ["0s", "1s"] }}
        [[flows]]
        name = "udp"
        transport = "udp"
        rate = "{udp}"
        priority = 2
        "#
    )
}

/// `{ type = NAME }` with what the scheme requires, for a buffer of `b` packets.
fn defaults(kind: &str, b: u64) -> String {
    let (lo, hi) = (b / 4, 3 * b / 4);
    match kind {
        "red" | "choke" | "gchoke" | "perfect_choke" | "fred" => {
            format!(r#"{{ type = "{kind}", min_th = {lo}, max_th = {hi} }}"#)
        }
        "wfq" => r#"{ type = "wfq", weights = [1, 1] }"#.to_string(),
        _ => format!(r#"{{ type = "{kind}" }}"#),
    }
}

/// The disciplines that never drop but at a full buffer: they act by their order of service.
const SCHEDULERS: [&str; 3] = ["drr", "wfq", "hhf"];

fn run(text: &str) -> Result<sim::Results, String> {
    sim::run_text(text, &[], Some(1)).map_err(|e| e.to_string())
}

/// Drops for reasons other than a full buffer, and CE marks, at the bottleneck.
fn signals(r: &sim::Results) -> f64 {
    let b = &r.summary["bottleneck"];
    let drops: f64 = ["early", "forced", "matched_arrival", "matched_victim"]
        .iter()
        .map(|k| b["drops"][k].as_f64().unwrap_or(0.0))
        .sum();
    drops + b["ce_marks"].as_f64().unwrap_or(0.0)
}

fn delivered(r: &sim::Results) -> Vec<f64> {
    r.flows.f64s("delivered_pkts").to_vec()
}

#[test]
fn every_discipline_acts_with_its_defaults_on_small_and_large_buffers() {
    let mut failures = Vec::new();
    for (b, rate, udp) in [(100u64, "1Mb/s", "200kb/s"), (1000, "10Mb/s", "2Mb/s")] {
        let droptail = run(&scenario(r#"{ type = "droptail" }"#, b, rate, udp)).expect("DropTail runs");
        for (kind, _) in aqm::AQM_NAMES.iter().filter(|(k, _)| *k != "droptail") {
            let text = scenario(&defaults(kind, b), b, rate, udp);
            match run(&text) {
                Err(e) => failures.push(format!("{kind}, buffer {b}: refused: {e}")),
                Ok(r) => {
                    let s = signals(&r);
                    let differs = delivered(&r) != delivered(&droptail);
                    println!("{kind:>14} buffer {b:>4}: early/forced/matched drops and marks {s:>6}, flows differ from DropTail: {differs}");
                    if SCHEDULERS.contains(kind) {
                        if !differs {
                            failures.push(format!("{kind}, buffer {b}: serves the flows as DropTail does"));
                        }
                    } else if s == 0.0 {
                        failures.push(format!("{kind}, buffer {b}: never drops early nor marks"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The README's scenario (a 100-packet buffer) with `{ type = "chokew" }`: CHOKeW's thresholds
/// follow the buffer (a fifth, a quarter, 7/20 of it), so its drawing factor grows and its matched
/// drops protect TCP; the thresholds written back are those of the paper's 500-packet buffer
/// scaled to this one.
#[test]
fn chokew_defaults_follow_the_buffer() {
    let text = std::fs::read_to_string(common_root().join("examples/dumbbell-red.toml")).unwrap();
    let ov = [r#"bottleneck.aqm={type="chokew"}"#.to_string()];
    let sc = sim::load(&text, &ov, "x").unwrap();
    let aqm::AqmConfig::Chokew(p) = &sc.bottleneck().unwrap().aqm else { panic!("chokew") };
    assert_eq!((p.l_th, p.l_minus, p.l_plus), (Some(20.0), Some(25.0), Some(35.0)));
    let r = sim::run_text(&text, &ov, Some(1)).unwrap();
    let b: &Value = &r.summary["bottleneck"];
    assert!(b["drops"]["matched_arrival"].as_f64().unwrap() > 0.0, "{}", b["drops"]);
    // the thresholds of a 500-packet buffer are the paper's exactly
    let sc = sim::load(&text, &[ov[0].clone(), "bottleneck.limit=500".into()], "x").unwrap();
    let aqm::AqmConfig::Chokew(p) = &sc.bottleneck().unwrap().aqm else { panic!("chokew") };
    assert_eq!((p.l_th, p.l_minus, p.l_plus), (Some(100.0), Some(125.0), Some(175.0)));
    // a given l_plus the buffer cannot reach, with p0 starting at 0: refused in one line naming it
    let e = sim::load(&text, &[r#"bottleneck.aqm={type="chokew", l_th=100, l_minus=125, l_plus=175}"#.into()], "x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("bottleneck.aqm.l") && e.contains("DropTail") && !e.contains('\n'), "{e}");
}

fn common_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
